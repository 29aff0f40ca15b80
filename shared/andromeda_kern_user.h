/* Types and constants shared by the XDP programs (bpf/) and the daemon (userspace/).
 * Fixed-width types only: userspace static_asserts every size and offset it relies on.
 * Addresses in map keys and values are in network byte order, as they sit in packets. */
#ifndef ANDROMEDA_KERN_USER_H
#define ANDROMEDA_KERN_USER_H

#include <linux/types.h>

#define ANDROMEDA_OVERLAY_PORT 43481
#define ANDROMEDA_VXLAN_PORT 4789
#define ANDROMEDA_OVERLAY_HEADER_LEN 8
/* outer Ethernet 14 + IPv4 20 + UDP 8 + overlay header 8 */
#define ANDROMEDA_ENCAP_OVERHEAD 50

/* Sizes of the maps. The XSKMAP holds one socket per (port slot, RX queue). */
#define ANDROMEDA_MAX_PORTS 256
#define ANDROMEDA_MAX_QUEUES 64
#define ANDROMEDA_MAX_PEERS 4096
#define ANDROMEDA_MAX_VNIS 4096
#define ANDROMEDA_MAX_FABRIC_ENTRIES 262144
#define ANDROMEDA_MAX_NAT_ADDRESSES 256

enum andromeda_encap_kind {
	ANDROMEDA_ENCAP_ANDROMEDA = 0,
	ANDROMEDA_ENCAP_VXLAN = 1,
};

enum andromeda_port_role {
	ANDROMEDA_PORT_UNDERLAY = 1, /* the physical NIC: host traffic passes, overlay is steered */
	ANDROMEDA_PORT_TENANT = 2,   /* a tenant's veth/tap: everything is steered */
	ANDROMEDA_PORT_UPLINK = 3,   /* a NAT gateway's outside link: traffic to NAT addresses is steered */
};

/* andromeda_ports: ifindex -> port. `slot` selects the port's range of XSKMAP keys
 * (slot * ANDROMEDA_MAX_QUEUES + rx queue). */
struct andromeda_port {
	__u32 role; /* enum andromeda_port_role */
	__u32 slot;
	__u32 vni;    /* tenant ports: the VPC's VNI */
	__be32 ip;    /* tenant ports: the endpoint's address, for anti-spoofing */
	__u8 mac[6];  /* tenant ports: the endpoint's MAC, for anti-spoofing */
	__u8 pad[2];
};

/* andromeda_peers: underlay IPv4 of a peer node -> what we know of it. */
struct andromeda_peer {
	__u32 node_id;
};

/* andromeda_vnis: VNI -> its VPC. */
struct andromeda_vni {
	__u32 vpc_id;
	__u32 mtu; /* inner MTU */
};

/* andromeda_fabric: (VNI, inner IPv4) -> where that endpoint lives. */
struct andromeda_fabric_key {
	__u32 vni;
	__be32 ip;
};

struct andromeda_fabric_entry {
	__be32 node_ip; /* underlay address of its node */
	__u8 mac[6];
	__u8 local; /* 1 when on this node */
	__u8 pad;
};

/* Per-CPU XDP counters: one named field per verdict and drop reason, so that
 * `bpftool map dump` prints them by name. Every field counts packets. */
struct andromeda_xdp_stats {
	__u64 rx_packets;           /* every packet the program saw */
	__u64 pass_host;            /* handed to the kernel untouched: not ours */
	__u64 pass_unknown_port;    /* arrived on an interface missing from the port map */
	__u64 redirect_overlay;     /* overlay packet steered to its AF_XDP socket */
	__u64 redirect_tenant;      /* tenant frame steered to its AF_XDP socket */
	__u64 redirect_uplink;      /* packet to a NAT address steered to its AF_XDP socket */
	__u64 drop_truncated;       /* shorter than the headers it claims */
	__u64 drop_bad_ip_header;   /* IPv4 IHL < 5, version != 4, or total length inconsistent */
	__u64 drop_overlay_fragment;/* fragmented overlay packet: tunnels are never fragmented */
	__u64 drop_unknown_peer;    /* overlay packet from an address that is no peer node */
	__u64 drop_bad_overlay_header; /* wrong Andromeda version / VXLAN I flag clear */
	__u64 drop_unknown_vni;     /* VNI of no VPC */
	__u64 drop_spoofed_mac;     /* tenant frame whose source MAC is not its endpoint's */
	__u64 drop_no_socket;       /* no AF_XDP socket bound for this port and queue */
};

/* The daemon's own counters, written by andromedad into andromeda_daemon_stats so that one
 * `bpftool map dump` shows the whole picture. */
struct andromeda_daemon_stats {
	__u64 fabric_generation;
	__u64 reloads_ok;
	__u64 reloads_failed;
	__u64 rx_frames;          /* frames received on the AF_XDP sockets */
	__u64 tx_frames;          /* frames put on AF_XDP TX rings */
	__u64 drops;              /* frames freed unsent, whoever decided it (pipeline, NAT, rings) */
	__u64 uptime_s;
	__u64 workers;            /* packet worker threads: one per underlay RX queue */
	__u64 ports;              /* ports Andromeda owns: underlay, uplink, tenant ports */
	__u64 map_writes;         /* BPF map entries written or erased by fabric syncs */
	__u64 peers_unresolved;   /* peer nodes whose next-hop MAC is unknown right now */
	__u64 pipeline_forwarded; /* encapsulated towards another node */
	__u64 pipeline_delivered; /* delivered to a local tenant port */
	__u64 pipeline_replied;   /* answered by the distributed gateway (ARP, echo, ICMP errors) */
	__u64 pipeline_to_nat;    /* handed to the NAT */
	__u64 pipeline_dropped;   /* dropped by the pipeline: andromedactl stats names each reason */
	__u64 nat_translated;     /* packets the NAT translated, both directions */
	__u64 nat_flows;          /* live NAT flows */
};

#endif /* ANDROMEDA_KERN_USER_H */
