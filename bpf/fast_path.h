/* The kernel fast path: plain east-west IPv4 between endpoints of one VPC, encapsulated on the
 * tenant port's tc ingress and decapsulated on the underlay's, without crossing into user space.
 * The outer headers, flow hash and checksums are the user-space pipeline's (userspace/overlay,
 * userspace/dataplane/fast_path.hpp); the differential test (tests/bpf/fast_path_test.cpp) runs
 * every input through both. Anything the fast path cannot do exactly as the pipeline would is
 * punted to it, with a named reason. GSO packets stay whole: bpf_skb_adjust_room's ENCAP flags
 * let the kernel segment them later (or never, between veths), with their offloaded checksums. */
#ifndef ANDROMEDA_BPF_FAST_PATH_H
#define ANDROMEDA_BPF_FAST_PATH_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "andromeda_kern_user.h"
#include "maps.h"

/* Debian 12's UAPI headers (6.1) predate it; kernels from 6.3 have it. */
#ifndef BPF_F_ADJ_ROOM_DECAP_L3_IPV4
#define BPF_F_ADJ_ROOM_DECAP_L3_IPV4 (1ULL << 7)
#endif

#define FP_IP_DF 0x4000
#define FP_IP_MF 0x2000
#define FP_IP_OFFSET 0x1fff
#define FP_TTL 64
#define FP_HOP_LIMIT 64
#define FP_OUTER_IP_UDP_HDR (20 + 8 + ANDROMEDA_OVERLAY_HEADER_LEN) /* 36 */
#define FP_INNER_OFFSET (ETH_HLEN + FP_OUTER_IP_UDP_HDR)             /* 50 */
#define FP_ANDROMEDA_VERSION_BYTE (ANDROMEDA_HEADER_VERSION << 4) /* no flags */
#define FP_VXLAN_FLAG_I ANDROMEDA_VXLAN_FLAG_I

#define FP_COUNT(s, field) ((s)->field++)
/* A fast-path drop: counts its reason and is the tc verdict (`return FP_DROP(s, drop_tagged);`). */
#define FP_DROP(s, reason) ((s)->reason++, TC_ACT_SHOT)

static __always_inline struct andromeda_fp_stats *fp_stats(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&andromeda_fp_stats, &zero);
}

static __always_inline const struct andromeda_fp_config *fp_config(void)
{
	__u32 zero = 0;
	const struct andromeda_fp_config *c = bpf_map_lookup_elem(&andromeda_fp_config, &zero);

	return c && c->enabled ? c : NULL;
}

static __always_inline int fp_mac_equal(const __u8 *a, const __u8 *b)
{
	return ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3]) | (a[4] ^ b[4]) | (a[5] ^ b[5])) == 0;
}

/* RFC 1071 over a 20-byte IPv4 header (no options), folded: 0xffff when its checksum verifies. */
static __always_inline __u32 fp_ipv4_header_sum(const struct iphdr *ip)
{
	const __u16 *w = (const __u16 *)ip;
	__u32 sum = 0;

#pragma unroll
	for (int i = 0; i < 10; i++)
		sum += w[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

/* The overlay flow hash (docs/wire-format.md, "The flow hash"): addresses as big-endian values, ports as
 * sport << 16 | dport, all mod 2^32. */
static __always_inline __u16 fp_flow_hash_words(__u32 src, __u32 dst, __u32 ports, __u32 proto)
{
	__u32 h = src * 0x9E3779B1u ^ dst * 0x85EBCA77u ^ ports * 0xC2B2AE3Du ^ proto * 0x27D4EB2Fu;

	h ^= h >> 15;
	h *= 0x2C1B3C6Du;
	h ^= h >> 13;
	return (h >> 16 ^ h) & 0xffff;
}

/* The pipeline's ipv4_flow_hash: ICMP hashes to 0 (as the reference sends it); TCP and UDP count
 * their ports outside non-first fragments, when the packet holds them. `ports_be` are the four
 * bytes after the 20-byte header, read by the caller when the packet has them. */
static __always_inline __u16 fp_flow_hash(const struct iphdr *ip, __u32 ports_be, int have_ports)
{
	__u32 ports = 0;

	if (ip->protocol == IPPROTO_ICMP)
		return 0;
	if ((ip->protocol == IPPROTO_UDP || ip->protocol == IPPROTO_TCP) && !(ip->frag_off & bpf_htons(FP_IP_OFFSET)) &&
	    have_ports && bpf_ntohs(ip->tot_len) >= sizeof(*ip) + 4)
		ports = bpf_ntohl(ports_be);
	return fp_flow_hash_words(bpf_ntohl(ip->saddr), bpf_ntohl(ip->daddr), ports, ip->protocol);
}

/* What the underlay's decap fast path found for one overlay packet. */
struct fp_decap {
	const struct andromeda_fabric_entry *target; /* the local endpoint it is for */
	const struct andromeda_vni *vni;
};

/* fp_decap_check for a caller that has already looked up the sending peer (it exists) and the
 * VNI's record, `vni` (for the VNI in the packet's overlay header): the underlay's XDP program,
 * which needs both for its own drop reasons. Same checks, same answer. */
static __always_inline int fp_decap_check_vni(void *data, void *data_end, __u64 total, __u16 port,
					      const struct andromeda_fp_config *cfg, const struct andromeda_vni *vni,
					      struct fp_decap *out)
{
	struct ethhdr *eth = data;
	struct iphdr *ip = data + ETH_HLEN;
	struct udphdr *udp = data + ETH_HLEN + sizeof(*ip);
	__u8 *h = data + ETH_HLEN + sizeof(*ip) + sizeof(*udp);
	struct ethhdr *ieth = data + FP_INNER_OFFSET;
	struct iphdr *iip = data + FP_INNER_OFFSET + ETH_HLEN;
	struct andromeda_fabric_key key;
	const struct andromeda_fabric_entry *sender, *target;
	__u32 outer_len, udp_len;

	if ((void *)(iip + 1) > data_end)
		return -1;
	/* Only frames to this node's own MAC: tc restores and accepts nothing else (fp_restore_mac),
	 * so a broadcast, multicast or foreign-unicast overlay packet stays with the pipeline. */
	if (!fp_mac_equal(eth->h_dest, cfg->underlay_mac))
		return -1;
	if (eth->h_proto != bpf_htons(ETH_P_IP) || ip->version != 4 || ip->ihl != 5 || ip->protocol != IPPROTO_UDP ||
	    (ip->frag_off & bpf_htons(FP_IP_MF | FP_IP_OFFSET)) || udp->dest != bpf_htons(port) || udp->check != 0 ||
	    ip->daddr != cfg->underlay_ip)
		return -1;
	if (encap_kind == ANDROMEDA_ENCAP_VXLAN) {
		if (h[0] != FP_VXLAN_FLAG_I)
			return -1;
	} else if (h[0] != FP_ANDROMEDA_VERSION_BYTE || h[1] != 0 || h[7] == 0) {
		return -1;
	}
	if (ieth->h_proto != bpf_htons(ETH_P_IP) || iip->version != 4 || iip->ihl != 5 || fp_ipv4_header_sum(iip) != 0xffff)
		return -1;
	outer_len = bpf_ntohs(ip->tot_len);
	udp_len = bpf_ntohs(udp->len);
	if (total - ETH_HLEN <= 0xffff) {
		if (outer_len != total - ETH_HLEN || udp_len != outer_len - sizeof(*ip) ||
		    bpf_ntohs(iip->tot_len) != udp_len - sizeof(*udp) - ANDROMEDA_OVERLAY_HEADER_LEN - ETH_HLEN)
			return -1;
	} else if (outer_len != 0xffff) {
		return -1;
	}
	if (fp_ipv4_header_sum(ip) != 0xffff || !(vni->flags & ANDROMEDA_VNI_F_FASTPATH))
		return -1;
	key.vni = (__u32)h[4] << 16 | (__u32)h[5] << 8 | h[6];
	key.ip = iip->saddr;
	sender = bpf_map_lookup_elem(&andromeda_fabric, &key);
	if (!sender || sender->local || sender->node_ip != ip->saddr)
		return -1;
	key.ip = iip->daddr;
	target = bpf_map_lookup_elem(&andromeda_fabric, &key);
	if (!target || !target->local || target->ifindex == 0)
		return -1;
	out->target = target;
	out->vni = vni;
	return 0;
}

/* Whether the overlay packet in [data, data_end) (`total` bytes in all, more than data_end - data
 * for a multi-buffer frame or a GSO packet) is one the decap fast path delivers exactly as the
 * pipeline would: untagged outer IPv4 without options to this node's address, unfragmented, UDP
 * to the overlay port without a checksum, from a peer node, a valid overlay header without
 * flags and with hop limit left, a VNI whose VPC runs the fast path here, an inner untagged IPv4
 * packet without options and with a valid header checksum, from an endpoint the fabric places on
 * the sending node, to a local endpoint bound to its port; lengths consistent throughout (no
 * padding). A GSO packet of over 64 KiB carries 0xffff as outer total length (the kernel rewrites
 * it per segment) and is taken on its other checks. The underlay's XDP program asks this (as
 * fp_decap_check_vni, with the lookups it made itself) and hands tc its finding; tc asks it for
 * a packet that comes without one. Returns 0 and fills `out`, or -1. */
static __always_inline int fp_decap_check(void *data, void *data_end, __u64 total, __u16 port,
					  const struct andromeda_fp_config *cfg, struct fp_decap *out)
{
	struct iphdr *ip = data + ETH_HLEN;
	__u8 *h = data + ETH_HLEN + sizeof(*ip) + sizeof(struct udphdr);
	const struct andromeda_vni *vni;
	__u32 vni_id;

	if ((void *)(h + ANDROMEDA_OVERLAY_HEADER_LEN) > data_end || !bpf_map_lookup_elem(&andromeda_peers, &ip->saddr))
		return -1;
	vni_id = (__u32)h[4] << 16 | (__u32)h[5] << 8 | h[6];
	vni = bpf_map_lookup_elem(&andromeda_vnis, &vni_id);
	if (!vni)
		return -1;
	return fp_decap_check_vni(data, data_end, total, port, cfg, vni, out);
}

/* struct andromeda_fp_handoff (shared/andromeda_kern_user.h): what the underlay's XDP program
 * hands tc with a packet for the decap fast path, in its XDP metadata. */
_Static_assert(sizeof(struct andromeda_fp_handoff) % 4 == 0, "XDP metadata comes in 4-byte units");

/* The outer headers and the inner Ethernet header, as written in front of the inner IPv4 packet
 * after bpf_skb_adjust_room made room for them. */
struct fp_outer {
	struct ethhdr eth;
	struct iphdr ip;
	struct udphdr udp;
	__u8 overlay[ANDROMEDA_OVERLAY_HEADER_LEN];
	struct ethhdr inner;
} __attribute__((packed));

_Static_assert(sizeof(struct fp_outer) == ANDROMEDA_ENCAP_OVERHEAD + ETH_HLEN, "outer headers + inner Ethernet");

/* The IPv4 ID of the next encapsulated packet, per CPU: it increments per packet and wraps, as
 * the pipeline's per-template counter does. */
static __always_inline __u16 fp_next_ip_id(void)
{
	__u32 zero = 0;
	__u32 *id = bpf_map_lookup_elem(&andromeda_fp_ip_id, &zero);

	if (!id)
		return 1;
	*id += 1;
	return (__u16)*id;
}

static __always_inline void fp_write_outer(struct fp_outer *o, const struct andromeda_fp_config *cfg,
					   const struct andromeda_peer *peer, __be32 node_ip, __u32 vni, __u16 hash,
					   __u32 inner_frame_len)
{
	__u32 ip_len = inner_frame_len + FP_OUTER_IP_UDP_HDR;
	struct iphdr ip;

	__builtin_memcpy(o->eth.h_dest, peer->mac, ETH_ALEN);
	__builtin_memcpy(o->eth.h_source, cfg->underlay_mac, ETH_ALEN);
	o->eth.h_proto = bpf_htons(ETH_P_IP);
	ip.version = 4;
	ip.ihl = 5;
	ip.tos = 0;
	ip.tot_len = bpf_htons(ip_len > 0xffff ? 0xffff : ip_len);
	ip.id = bpf_htons(fp_next_ip_id());
	ip.frag_off = bpf_htons(FP_IP_DF);
	ip.ttl = FP_TTL;
	ip.protocol = IPPROTO_UDP;
	ip.check = 0;
	ip.saddr = cfg->underlay_ip;
	ip.daddr = node_ip;
	ip.check = (__u16)~fp_ipv4_header_sum(&ip);
	__builtin_memcpy(&o->ip, &ip, sizeof(ip));
	o->udp.source = bpf_htons(hash | 0xc000);
	o->udp.dest = bpf_htons(overlay_port);
	o->udp.len = bpf_htons(ip_len > 0xffff ? 0xffff - sizeof(struct iphdr) : ip_len - sizeof(struct iphdr));
	o->udp.check = 0;
	if (encap_kind == ANDROMEDA_ENCAP_VXLAN) {
		o->overlay[0] = FP_VXLAN_FLAG_I;
		o->overlay[1] = 0;
		o->overlay[2] = 0;
		o->overlay[3] = 0;
		o->overlay[7] = 0;
	} else {
		o->overlay[0] = FP_ANDROMEDA_VERSION_BYTE;
		o->overlay[1] = 0; /* inner protocol: Ethernet */
		o->overlay[2] = hash >> 8;
		o->overlay[3] = hash & 0xff;
		o->overlay[7] = FP_HOP_LIMIT;
	}
	o->overlay[4] = vni >> 16;
	o->overlay[5] = vni >> 8;
	o->overlay[6] = vni;
}

#endif /* ANDROMEDA_BPF_FAST_PATH_H */
