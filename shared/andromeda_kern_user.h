/* Types and constants shared by the XDP programs (bpf/) and the daemon (userspace/).
 * Fixed-width types only; userspace/io/plan/kern_user_layout.cpp static_asserts the size and field
 * offsets of every struct here, so a change that moves a field breaks the build, not the maps.
 * Addresses in map keys and values are in network byte order, as they sit in packets. */
#ifndef ANDROMEDA_KERN_USER_H
#define ANDROMEDA_KERN_USER_H

#ifdef __EMSCRIPTEN__
/* The playground's WebAssembly build (web/) has no kernel headers: the same fixed-width types. */
#include <stdint.h>
typedef uint8_t __u8;
typedef uint16_t __u16;
typedef uint32_t __u32;
typedef uint64_t __u64;
typedef uint16_t __be16;
typedef uint32_t __be32;
#else
#include <linux/types.h>
#endif

#include "andromeda_drops.h"

/* The layout of the pinned maps, stamped beside them (<pin dir>/layout) and checked before a
 * restarted daemon adopts them: pins with another stamp, or none (a daemon older than the stamp),
 * are rebuilt, not adopted. Bump it in any change that gives an existing map's key or value a new
 * meaning at the same size (a field or flag bit reused, a unit or byte order changed, entries
 * written differently), here or in andromeda_nat_kern_user.h: libbpf refuses to reuse a pinned map
 * only when its type, sizes or flags differ, so nothing else catches such a change. */
#define ANDROMEDA_MAP_LAYOUT 5

/* The wire constants of both encapsulations (docs/wire-format.md), defined here once for the BPF
 * programs and C++ alike (userspace/overlay/encap_kind.hpp and andromeda_header.hpp take theirs
 * from these). */
#define ANDROMEDA_OVERLAY_PORT 43481
#define ANDROMEDA_VXLAN_PORT 4789
#define ANDROMEDA_OVERLAY_HEADER_LEN 8
/* outer Ethernet 14 + IPv4 20 + UDP 8 + overlay header 8 */
#define ANDROMEDA_ENCAP_OVERHEAD 50
/* ... over an IPv6 underlay: the outer IP header is IPv6's fixed 40 bytes */
#define ANDROMEDA_ENCAP_OVERHEAD6 70
/* What an encapsulated frame should have in front of its outer Ethernet header when it reaches
 * a receiver whose XDP runs on skbs (generic XDP, or native XDP on a veth): XDP_PACKET_HEADROOM,
 * 256, below which the kernel copies the skb before the program runs. The encap makes room for
 * that and its own outer headers at once (andromeda_fp_config.encap_headroom). */
#define ANDROMEDA_XDP_PACKET_HEADROOM 256
#define ANDROMEDA_ENCAP_HEADROOM (ANDROMEDA_XDP_PACKET_HEADROOM + ANDROMEDA_ENCAP_OVERHEAD)
#define ANDROMEDA_ENCAP_HEADROOM6 (ANDROMEDA_XDP_PACKET_HEADROOM + ANDROMEDA_ENCAP_OVERHEAD6)
/* Andromeda header byte 0: version in the high nibble, flags in the low one. */
#define ANDROMEDA_HEADER_VERSION 1
#define ANDROMEDA_HEADER_FLAG_CONTROL 0x8
#define ANDROMEDA_HEADER_FLAG_OAM 0x4
/* VXLAN header byte 0: the I flag, "the VNI is valid" (RFC 7348). */
#define ANDROMEDA_VXLAN_FLAG_I 0x08

/* Sizes of the maps. The XSKMAP holds one socket per (port slot, RX queue). */
#define ANDROMEDA_MAX_PORTS 256
#define ANDROMEDA_MAX_QUEUES 64
#define ANDROMEDA_MAX_PEERS 4096
#define ANDROMEDA_MAX_VNIS 4096
#define ANDROMEDA_MAX_FABRIC_ENTRIES 262144
#define ANDROMEDA_MAX_FABRIC6_ENTRIES 262144
#define ANDROMEDA_MAX_NAT_ADDRESSES 256
#define ANDROMEDA_MAX_VPC_CIDRS 16384

enum andromeda_encap_kind {
	ANDROMEDA_ENCAP_ANDROMEDA = 0,
	ANDROMEDA_ENCAP_VXLAN = 1,
};

enum andromeda_port_role {
	ANDROMEDA_PORT_UNDERLAY = 1, /* the physical NIC: host traffic passes, overlay is steered */
	ANDROMEDA_PORT_TENANT = 2,   /* a tenant's veth/tap: everything is steered */
	ANDROMEDA_PORT_UPLINK = 3,   /* a NAT gateway's outside link: traffic to NAT addresses is steered */
	/* The visible end of a tenant port's punt pair (a veth pair of the daemon's own): the tenant
	 * port's tc program redirects what the fast path does not take into it, the kernel finishes
	 * checksums and segments GSO packets on its way out (TX checksum offload off), and its peer,
	 * which carries the XDP program as a TENANT port, steers it to AF_XDP. Frames the daemon sends
	 * back on the peer arrive here and go into the tenant (`link`). */
	ANDROMEDA_PORT_PUNT = 4,
};
/* The underlay and the uplink of a NAT gateway have punt pairs too, so that what their tc
 * programs leave to the pipeline reaches it with finished checksums: the pair's visible end is a
 * PUNT port (link: the underlay or uplink; ANDROMEDA_PORT_F_EGRESS for the uplink's, whose
 * pipeline frames leave out of the uplink), its far end an UNDERLAY or UPLINK port with
 * ANDROMEDA_PORT_F_PUNTED, where XDP steers to the pipeline's socket. */

/* andromeda_port.flags */
#define ANDROMEDA_PORT_F_FASTPATH 0x1 /* tenant port: its VPC and node run the kernel fast path */
#define ANDROMEDA_PORT_F_EGRESS 0x2   /* punt device: what the pipeline sends leaves out of `link`
                                       * (the uplink's pair, a tap's) instead of going into its peer (a
                                       * veth tenant) */
#define ANDROMEDA_PORT_F_PUNTED 0x4   /* underlay or uplink port that is the far end of a punt pair:
                                       * the tc programs judged its frames already; XDP steers them */
#define ANDROMEDA_PORT_F_TAP 0x8      /* tenant port that is a tap (a VM's): its punt device gets
                                       * ANDROMEDA_PORT_F_EGRESS, so the pipeline's frames leave out of the tap */

/* andromeda_ports: ifindex -> port. `slot` selects the port's range of XSKMAP keys
 * (slot * ANDROMEDA_MAX_QUEUES + rx queue). */
struct andromeda_port {
	__u32 role; /* enum andromeda_port_role */
	__u32 slot;
	__u32 vni;    /* tenant ports: the VPC's VNI */
	__be32 ip;    /* tenant ports: the endpoint's address, for anti-spoofing */
	__u8 mac[6];  /* tenant ports: the endpoint's MAC, for anti-spoofing */
	__u8 flags;   /* ANDROMEDA_PORT_F_* */
	__u8 pad;
	__u32 link;   /* tenant port: its punt device; punt device: its tenant port (ifindexes) */
	__u8 ip6[16]; /* tenant ports: the endpoint's IPv6 address, for anti-spoofing; all zero: none */
};

/* andromeda_punt_limits: tenant port slot -> the token bucket every frame tc punts from that port
 * to the pipeline must pass (bpf/lib/punt.h), so that one tenant cannot fill the worker that
 * serves the others. A GCRA (a token bucket kept as one timestamp): a frame passes when
 * next_ns - now <= tolerance_ns, and then moves next_ns on by interval_ns; `punt_burst` frames
 * pass at once from a full bucket, then one per interval. The daemon writes interval_ns,
 * tolerance_ns and ifindex ([node] punt_rate, punt_burst) and resets the rest when a slot gets a
 * new port; the program writes the rest under the lock. interval_ns = 0 (a slot the daemon never
 * wrote) punts without limit. */
struct andromeda_punt_limit {
#ifdef __bpf__
	struct bpf_spin_lock lock; /* one bucket per port, shared by every CPU the port's frames arrive on */
#else
	__u32 lock; /* the kernel's struct bpf_spin_lock (linux/bpf.h, which clashes with pcap's in C++) */
#endif
	__u32 ifindex;             /* the tenant port (for `bpftool map dump` readers) */
	__u64 interval_ns;         /* 1 s / punt_rate: the time one token is worth */
	__u64 tolerance_ns;        /* (punt_burst - 1) * interval_ns */
	__u64 next_ns;             /* when the bucket is full again (bpf_ktime_get_ns) */
	__u64 punted;              /* frames that took a token */
	__u64 rate_limited;        /* frames dropped: no token (drop_punt_rate_limited, per port) */
};

/* andromeda_peers: the peer key of a peer node -> what we know of it. A node's peer key is its
 * underlay IPv4 address, or over an IPv6 underlay andromeda_peer_key6() of its IPv6 address (a
 * 32-bit stand-in in 240.0.0.0/4, never an IPv4 underlay's address); every map field that names
 * a node (andromeda_fabric_entry.node_ip, andromeda_vni.nat_node_ip, andromeda_peer_mtu's key)
 * holds its peer key, so the fast path finds a node the same way over either underlay. */
struct andromeda_peer {
	__u32 node_id;
	__u8 mac[6];      /* next hop towards it on the underlay, when known */
	__u8 mac_known;   /* 1: `mac` is resolved; 0: the fast path punts traffic to this peer */
	__u8 pad;
	__u8 ip6[16];     /* over an IPv6 underlay: its address (the outer destination); else zero */
};

/* The peer key of a node with IPv6 underlay address `a` (16 bytes), in host order: FNV-1a over
 * the address, its top nibble forced to 0xf. Fabric validation refuses two nodes whose keys
 * collide (a 1-in-2^28 chance per pair). */
#ifdef __cplusplus
[[nodiscard]] static constexpr inline
#else
static inline __attribute__((always_inline))
#endif
__u32 andromeda_peer_key6(const __u8 *a)
{
	__u32 h = 2166136261u;

	for (int i = 0; i < 16; i++) {
		h ^= a[i];
		h *= 16777619u;
	}
	return (h & 0x0fffffffu) | 0xf0000000u;
}

/* andromeda_peer_mtu: the peer key of a peer node -> the path MTU towards it that the daemon
 * learned from an ICMP "fragmentation needed" about one of this node's outer packets, when it is
 * below [node] underlay_mtu. Like the kernel's own PMTU exceptions it ages out: the fast path
 * ignores an entry once bpf_ktime_get_ns() (CLOCK_MONOTONIC, as the daemon's steady_clock) passes
 * `expires_ns`, and the daemon erases it then. No entry: underlay_mtu. */
struct andromeda_peer_mtu {
	__u32 mtu;        /* outer IP packet size the path carries */
	__u32 pad;
	__u64 expires_ns; /* CLOCK_MONOTONIC */
};
/* How long a learned path MTU lasts (the kernel's net.ipv4.route.mtu_expires default, 600 s). */
#define ANDROMEDA_PEER_MTU_LIFETIME_S 600
/* The smallest reported MTU believed (RFC 791's 576, which carries the overlay and 526 inner
 * bytes): a lower one is ignored and counted, so a forged report cannot shrink a path to nothing. */
#define ANDROMEDA_PEER_MTU_MIN 576

/* andromeda_vnis: VNI -> its VPC. */
/* andromeda_vni.flags */
#define ANDROMEDA_VNI_F_FASTPATH 0x1 /* the VPC runs the kernel fast path on this node */
#define ANDROMEDA_VNI_F_NAT_HERE 0x2 /* this node is the VPC's NAT gateway */
#define ANDROMEDA_VNI_F_POLICY 0x4   /* the VPC has security groups: the fast path carries only flows
                                      * the pipeline allowed (andromeda_policy_flows, with the VNI's
                                      * policy_generation) */

struct andromeda_vni {
	__u32 vpc_id;
	__u32 mtu;        /* inner MTU */
	__be32 gateway;   /* the VPC's gateway address (answered by the slow path) */
	__u8 gateway_mac[6];
	__u8 flags;       /* ANDROMEDA_VNI_F_* */
	__u8 pad;
	__be32 nat_node_ip; /* peer key of the VPC's NAT gateway node (its IPv4 address over IPv4); 0: no NAT */
	__u32 policy_generation; /* ANDROMEDA_VNI_F_POLICY: a fingerprint of everything its rules
	                          * depend on (groups, defaults, members); a policy flow of another
	                          * generation is not the VPC's any more */
};

/* andromeda_vpc_cidrs (an LPM trie): (VNI, address) -> inside the VPC. prefixlen counts the VNI's
 * 32 bits and the CIDR's length: a lookup with prefixlen 64 finds the CIDR holding an address. */
struct andromeda_vpc_cidr_key {
	__u32 prefixlen;
	__u32 vni;  /* network byte order, as the trie compares bytes */
	__be32 ip;
};

/* andromeda_fabric: (VNI, inner IPv4) -> where that endpoint lives. */
struct andromeda_fabric_key {
	__u32 vni;
	__be32 ip;
};

/* andromeda_fabric6: (VNI, inner IPv6) -> where that endpoint lives (a dual-stack VPC's endpoints
 * with an IPv6 address; the value is andromeda_fabric_entry, as for IPv4). */
struct andromeda_fabric6_key {
	__u32 vni;
	__u8 ip[16];
};

struct andromeda_fabric_entry {
	__be32 node_ip; /* peer key of its node (its underlay IPv4 address over IPv4) */
	__u8 mac[6];
	__u8 local; /* 1 when on this node */
	__u8 flags; /* ANDROMEDA_FABRIC_F_* */
	__u32 ifindex; /* local endpoints: their tenant port, 0 while unbound */
};

/* The local endpoint's tenant port is a tap: frames for it are sent out of the tap
 * (bpf_redirect, to the VM that reads it) instead of into a veth's peer (bpf_redirect_peer). */
#define ANDROMEDA_FABRIC_F_TAP 0x1

/* andromeda_fp_config[0]: what the kernel fast path needs to know of this node, written by the
 * daemon. enabled = 0 (the default of a fresh map) punts everything to the AF_XDP pipeline. */
struct andromeda_fp_config {
	__u32 enabled;          /* [node] fastpath, and an underlay the fast path can serve */
	__u32 underlay_ifindex;
	__be32 underlay_ip;     /* this node's underlay IPv4 address; 0 over an IPv6 underlay */
	__u32 underlay_mtu;
	__u8 underlay_mac[6];
	__u16 encap_headroom;   /* bytes the encap makes room for in front of a small frame before
	                         * adding its outer headers, so that the receiver's XDP runs on the
	                         * skb instead of a copy (a veth underlay: 306, ANDROMEDA_ENCAP_HEADROOM; 326 over IPv6,
	                         * ANDROMEDA_ENCAP_HEADROOM6); 0: none */
	__u32 handoff_cookie;   /* random per daemon start, nonzero: marks what this node's underlay
	                         * XDP program hands its tc program (0: nothing is handed over) */
	/* A NAT gateway's uplink: where the kernel sends what it translated outbound. */
	__u32 uplink_ifindex;   /* 0: this node has no uplink (or its NAT runs in the pipeline only) */
	__u8 uplink_mac[6];
	__u8 uplink_next_hop_mac[6]; /* the uplink router's MAC */
	__u8 uplink_next_hop_known;  /* 0: unresolved; outbound NAT goes to the pipeline */
	__u8 pad[3];
	/* An IPv6 underlay: this node's address (the outer source), underlay_ip then 0. All zero
	 * over an IPv4 underlay. */
	__u8 underlay_ip6[16];
	/* An IPv6 underlay: the segmenting pair's entry ("ans<underlay ifindex>", TX offloads off),
	 * where an encapsulated GSO packet whose segments cannot all be made the same size goes to be
	 * cut by the kernel; its other end's tc program (andromeda_tc_reseg) gives each segment its
	 * own outer checksum and sends it out of the underlay. 0: no pair, such a packet is punted. */
	__u32 reseg_ifindex;
	__u32 pad2;
};

/* What the underlay's XDP program hands the tc program along with an overlay packet it found
 * fit for the fast path (fp_decap_check, bpf/fast_path.h): written as the packet's XDP metadata,
 * which reaches tc ingress with the skb, so tc delivers without looking the fabric up a second
 * time. tc takes it only with this node's cookie (andromeda_fp_config.handoff_cookie) and from
 * the device it runs on: metadata another node's program wrote (several nodes share a kernel in
 * a test bed, and some kernels keep an skb's metadata past tc) is not this node's finding. tc
 * falls back to the whole check when a packet comes without it (metadata unsupported by a
 * native driver, or dropped by the kernel on the way, e.g. when it reallocates the skb's head). */
struct andromeda_fp_handoff {
	__u32 cookie;          /* andromeda_fp_config.handoff_cookie */
	__u32 ifindex;         /* the target endpoint's tenant port */
	__u8 mac[6];           /* the target endpoint's MAC */
	__u8 gateway_mac[6];   /* its VPC's gateway MAC, the inner source after decap */
	__u32 dev;             /* the underlay device the XDP program ran on */
	__u32 flags;           /* the target's andromeda_fabric_entry.flags (ANDROMEDA_FABRIC_F_TAP) */
};

/* How the counter X-macros below become struct fields: X(name) is a field `name`, and each drop
 * reason D(name, id, description) of andromeda_drops.h a field `drop_<name>`. */
#define ANDROMEDA_STATS_FIELD(name) __u64 name;
#define ANDROMEDA_STATS_DROP_FIELD(name, id, description) __u64 drop_##name;

/* Per-CPU counters of the kernel fast path (tc programs, and the underlay XDP's hand-over),
 * one named field each: packets and bytes per path and every punt and drop reason. Bytes count
 * the frame as the program saw it (a GSO packet counts once, with all its bytes). */
#define ANDROMEDA_FP_STATS(X, D) \
	X(encap_packets)        /* tenant frame encapsulated and sent on the underlay */ \
	X(encap_bytes) \
	X(encap_gso_packets)    /* ... of them GSO packets, kept whole */ \
	X(encap_gso_resized)    /* ... of them, over an IPv6 underlay, given a smaller segment size that makes \
	                         * all their segments the same size (bpf/lib/outer6.h) */ \
	X(encap_gso_resegmented) /* ... of them, over an IPv6 underlay, whose segments cannot be made the same \
	                         * size: sent through the segmenting pair (andromeda_fp_config.reseg_ifindex) */ \
	X(reseg_packets)        /* segments the segmenting pair's tc program gave their own outer checksum and \
	                         * sent out of the underlay */ \
	X(local_packets)        /* tenant frame delivered to another local tenant port */ \
	X(local_bytes) \
	X(decap_packets)        /* overlay packet decapsulated into a local tenant port */ \
	X(decap_bytes) \
	X(decap_handed_over)    /* ... of them checked by the underlay's XDP program, its finding in the metadata */ \
	X(decap_xdp_copied)     /* ... of them generic XDP had copied first (non-linear, or under 256 B of headroom) */ \
	X(punt_packets)         /* tenant frame handed to the AF_XDP pipeline (punt device) */ \
	X(punt_bytes) \
	X(return_packets)       /* the pipeline's frames put into the tenant from the punt device */ \
	X(return_bytes) \
	X(punt_fastpath_off)    /* node, VPC or port has the fast path off */ \
	X(punt_not_ipv4)        /* ARP and other ethertypes than IPv4 and IPv6: the gateway's business (the uplink: a VLAN tag) */ \
	X(punt_not_to_gateway)  /* destination MAC is not the VPC's gateway MAC */ \
	X(punt_ip_header)       /* IPv4 options, bad header checksum, bad or padded length; IPv6 extension headers */ \
	X(punt_to_gateway)      /* to the gateway address, multicast or broadcast */ \
	X(punt_no_route)        /* no endpoint of the VPC at the destination (NAT, unknown) */ \
	X(punt_no_next_hop)     /* peer node's underlay MAC not resolved yet */ \
	X(punt_too_big)         /* larger than the path MTU: PMTUD or fragmentation */ \
	X(punt_gso)             /* a GSO type the fast path does not keep whole (UFO, SCTP, ...) */ \
	X(punt_tenant_tunnel)   /* the tenant's own tunnel's offload state (skb->encapsulation): not nested */ \
	X(nat_out_packets)      /* NAT in the kernel: translated and sent out of the uplink */ \
	X(nat_out_bytes) \
	X(nat_in_packets)       /* NAT in the kernel: translated back and sent to its tenant, here or through the overlay */ \
	X(nat_in_bytes) \
	X(to_nat_node_packets)  /* a tenant frame for the outside, encapsulated towards its VPC's NAT node */ \
	X(punt_nat_no_flow)     /* a NAT frame of a flow the kernel has no translation for (first packets) */ \
	X(punt_nat_control)     /* TCP SYN/FIN/RST, fragments, ICMP other than echo: the pipeline's to track */ \
	X(punt_nat_no_uplink)   /* the uplink, or its router's MAC, is not known to the kernel */ \
	X(policy_packets)       /* a packet of a VPC with security groups passed by a flow the pipeline allowed */ \
	X(punt_policy_no_flow)  /* ... with no flow of the VPC's policy generation here: the pipeline judges it */ \
	X(punt_policy_control)  /* ... TCP SYN/FIN/RST, ICMP, fragments, other protocols: the pipeline's to track */ \
	X(ipv6_packets)         /* IPv6 frames the fast path carried (encapsulated, delivered locally or decapsulated) */ \
	X(punt_outer_csum)      /* over an IPv6 underlay, a frame whose outer UDP checksum the fast path cannot \
	                         * derive from its headers: a GSO packet whose segments cannot be made the same \
	                         * size, a fragment, \
	                         * IPv4 UDP without a checksum, a transport other than TCP, UDP and ICMP */ \
	X(punt_ipv6_control)    /* IPv6 the gateway answers or judges: ND, router messages, MLD, ICMPv6 other than echo, \
	                         * link-local, multicast or unspecified addresses, a port without an IPv6 address */ \
	ANDROMEDA_DROPS_FASTPATH(D)     /* drop_<name>, andromeda_drops.h */

struct andromeda_fp_stats {
	ANDROMEDA_FP_STATS(ANDROMEDA_STATS_FIELD, ANDROMEDA_STATS_DROP_FIELD)
};

/* Per-CPU XDP counters: one named field per verdict and drop reason, so that
 * `bpftool map dump` prints them by name. Every field counts packets. The C++ list of the fields
 * (userspace/io/bpf/xdp_stats.hpp) comes from this X-macro too. */
#define ANDROMEDA_XDP_STATS(X, D) \
	X(rx_packets)              /* every packet the program saw */ \
	X(pass_host)               /* handed to the kernel untouched: not ours */ \
	X(pass_unknown_port)       /* arrived on an interface missing from the port map */ \
	X(redirect_overlay)        /* overlay packet steered to its AF_XDP socket */ \
	X(redirect_tenant)         /* tenant frame steered to its AF_XDP socket */ \
	X(redirect_uplink)         /* packet to a NAT address steered to its AF_XDP socket */ \
	ANDROMEDA_DROPS_XDP(D)     /* drop_<name>, andromeda_drops.h */ \
	X(pass_fastpath)           /* overlay packet for a local endpoint handed to the tc fast path */ \
	X(redirect_icmp)           /* ICMP fragmentation needed or ICMPv6 Packet Too Big about our outer packets, to the daemon */

struct andromeda_xdp_stats {
	ANDROMEDA_XDP_STATS(ANDROMEDA_STATS_FIELD, ANDROMEDA_STATS_DROP_FIELD)
};

/* The daemon's own counters, written by andromedad into andromeda_daemon_stats so that one
 * `bpftool map dump` shows the whole picture; `andromedactl stats` shows the same list as its
 * daemon group (userspace/daemon/daemon_reports.cpp fills both from one struct). */
#define ANDROMEDA_DAEMON_STATS(X) \
	X(fabric_generation) \
	X(reloads_ok) \
	X(reloads_failed) \
	X(rx_frames)          /* frames received on the AF_XDP sockets */ \
	X(tx_frames)          /* frames put on AF_XDP TX rings */ \
	X(drops)              /* frames freed unsent, whoever decided it (pipeline, NAT, rings) */ \
	X(uptime_s) \
	X(workers)            /* packet worker threads: one per underlay RX queue */ \
	X(ports)              /* ports Andromeda owns: underlay, uplink, tenant ports */ \
	X(map_writes)         /* BPF map entries written or erased by fabric syncs */ \
	X(peers_unresolved)   /* peer nodes whose next-hop MAC is unknown right now */ \
	X(pipeline_forwarded) /* encapsulated towards another node */ \
	X(pipeline_delivered) /* delivered to a local tenant port */ \
	X(pipeline_replied)   /* answered by the distributed gateway (ARP, echo, ICMP errors) */ \
	X(pipeline_to_nat)    /* handed to the NAT */ \
	X(pipeline_dropped)   /* dropped by the pipeline: andromedactl stats names each reason */ \
	X(nat_translated)     /* packets the NAT translated, both directions */ \
	X(nat_flows)          /* live NAT flows */ \
	X(map_writes_skipped) /* map entries a sync planned but the map already held */ \
	X(next_hops_resolved) /* peer next-hop MACs learned from the kernel */ \
	X(next_hop_failures)  /* next-hop resolutions that failed */ \
	X(stats_published)    /* writes of this struct into the map (in the map: this one included) */

struct andromeda_daemon_stats {
	ANDROMEDA_DAEMON_STATS(ANDROMEDA_STATS_FIELD)
};

#endif /* ANDROMEDA_KERN_USER_H */
