/* The overlay encapsulation as the programs write and read it: the outer Ethernet/IPv4/UDP
 * headers and the overlay header (shared/andromeda_overlay.h's layout), byte for byte what the
 * pipeline writes (userspace/overlay), and the path MTU a tenant's packet must fit. */
#ifndef ANDROMEDA_BPF_LIB_OVERLAY_H
#define ANDROMEDA_BPF_LIB_OVERLAY_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "andromeda_kern_user.h"
#include "maps.h"
#include "andromeda_overlay.h"
#include "config.h"
#include "csum.h"
#include "ipv4.h"
#include "peer_mtu.h"

#define OUTER_TTL 64
/* Where the inner frame starts in an overlay packet: outer Ethernet, IPv4, UDP, overlay header. */
#define OVERLAY_INNER_OFFSET ANDROMEDA_ENCAP_OVERHEAD

/* The IPv4 ID counter of encapsulated packets, per CPU. */
ANDROMEDA_MAP(andromeda_fp_ip_id, BPF_MAP_TYPE_PERCPU_ARRAY, 1, __u32, __u32);

/* The outer headers and the inner Ethernet header, as written in front of the inner IPv4 packet
 * once bpf_skb_adjust_room made room for them. */
struct outer_headers {
	struct ethhdr eth;
	struct iphdr ip;
	struct udphdr udp;
	__u8 overlay[ANDROMEDA_OVERLAY_HEADER_LEN];
	struct ethhdr inner;
} __attribute__((packed));

_Static_assert(sizeof(struct outer_headers) == ANDROMEDA_ENCAP_OVERHEAD + ETH_HLEN, "outer headers + inner Ethernet");

/* The XDP prefilter's test of an overlay header: the Andromeda version with Ethernet inside, or
 * VXLAN's I flag. Flags and hop limit are the pipeline's to judge. */
static __always_inline int overlay_header_valid(const __u8 *h)
{
	if (encap_kind == ANDROMEDA_ENCAP_VXLAN)
		return (h[ANDROMEDA_VXLAN_HDR_FLAGS] & ANDROMEDA_VXLAN_FLAG_I) != 0;
	return (h[ANDROMEDA_HDR_VERSION_FLAGS] >> 4) == ANDROMEDA_HEADER_VERSION &&
	       h[ANDROMEDA_HDR_INNER_PROTOCOL] == ANDROMEDA_HDR_INNER_ETHERNET;
}

/* The decap fast path's stricter test: what the pipeline would decapsulate without a question
 * (no flags, hop limit left; VXLAN with only the I flag). */
static __always_inline int overlay_header_plain(const __u8 *h)
{
	if (encap_kind == ANDROMEDA_ENCAP_VXLAN)
		return h[ANDROMEDA_VXLAN_HDR_FLAGS] == ANDROMEDA_VXLAN_FLAG_I;
	return h[ANDROMEDA_HDR_VERSION_FLAGS] == ANDROMEDA_HEADER_VERSION << 4 &&
	       h[ANDROMEDA_HDR_INNER_PROTOCOL] == ANDROMEDA_HDR_INNER_ETHERNET && h[ANDROMEDA_HDR_HOP_LIMIT] != 0;
}

/* The largest inner IP packet a tenant of `vni` may send through the overlay to the node of peer
 * key `node_ip` (the pipeline's rule, shared/andromeda_overlay.h), by the path MTU learned towards
 * it if any. */
static __always_inline __u32 overlay_path_mtu(const struct andromeda_fp_config *cfg, const struct andromeda_vni *vni,
					      __be32 node_ip)
{
	__u32 outer = peer_underlay_mtu(cfg, node_ip);

	/* Over an IPv6 underlay the outer IP header is 20 bytes larger: the rule's IPv4 overhead is
	 * reached through an outer MTU as much smaller. */
	if (underlay_is_ipv6(cfg))
		outer = outer > ANDROMEDA_ENCAP_OVERHEAD6 - ANDROMEDA_ENCAP_OVERHEAD
				? outer - (ANDROMEDA_ENCAP_OVERHEAD6 - ANDROMEDA_ENCAP_OVERHEAD)
				: 0;
	return andromeda_inner_ip_mtu(vni->mtu, outer, ETH_HLEN);
}

/* Whether the plain IPv4 packet `ip` of `skb` (its header checked against `end`), or each
 * segment of a GSO packet, fits `mtu`. What does not is the pipeline's (ICMP fragmentation needed,
 * or fragments), and so is a GSO packet whose segments cannot be sized here (neither TCP nor UDP,
 * or its TCP header out of reach), to be segmented first. */
enum mtu_fit { MTU_FITS, MTU_TOO_BIG, MTU_GSO_UNSIZED };

/* Whether each segment of a GSO packet fits `mtu`: `l3_len` bytes of IP header, the transport
 * header (`protocol`'s, at `c`) and gso_size bytes of payload. */
static __always_inline enum mtu_fit gso_segments_fit(const struct __sk_buff *skb, struct cursor *c, __u8 protocol,
						     __u32 l3_len, __u32 mtu)
{
	__u32 l4;

	if (protocol == IPPROTO_TCP) {
		__u8 *tcp = cursor_pull(c, 13);

		if (!tcp)
			return MTU_GSO_UNSIZED;
		l4 = (tcp[12] >> 4) * 4;
	} else if (protocol == IPPROTO_UDP) {
		l4 = sizeof(struct udphdr);
	} else {
		return MTU_GSO_UNSIZED;
	}
	return l3_len + l4 + skb->gso_size > mtu ? MTU_TOO_BIG : MTU_FITS;
}

static __always_inline enum mtu_fit overlay_fits_mtu(const struct __sk_buff *skb, struct iphdr *ip, void *end,
						     __u32 mtu)
{
	struct cursor c = { .pos = (void *)(ip + 1), .end = end };

	if (!skb->gso_size)
		return bpf_ntohs(ip->tot_len) > mtu ? MTU_TOO_BIG : MTU_FITS;
	return gso_segments_fit(skb, &c, ip->protocol, sizeof(*ip), mtu);
}

/* overlay_fits_mtu for an IPv6 packet without extension headers: the whole packet (40 bytes of
 * header and its payload) or each segment of a GSO packet against `mtu`. IPv6 is never
 * fragmented on the way: what does not fit gets Packet Too Big from the pipeline. */
static __always_inline enum mtu_fit overlay_fits_mtu6(const struct __sk_buff *skb, struct ipv6hdr *ip, void *end,
						      __u32 mtu)
{
	struct cursor c = { .pos = (void *)(ip + 1), .end = end };

	if (!skb->gso_size)
		return sizeof(*ip) + bpf_ntohs(ip->payload_len) > mtu ? MTU_TOO_BIG : MTU_FITS;
	return gso_segments_fit(skb, &c, ip->nexthdr, sizeof(*ip), mtu);
}

/* The IPv4 ID of the next encapsulated packet: it increments per packet and wraps, as the
 * pipeline's per-template counter does. */
static __always_inline __u16 overlay_next_ip_id(void)
{
	__u32 zero = 0;
	__u32 *id = bpf_map_lookup_elem(&andromeda_fp_ip_id, &zero);

	if (!id)
		return 1;
	*id += 1;
	return (__u16)*id;
}

/* Fills `o`'s outer headers for an inner frame of `inner_frame_len` bytes to node `node_ip`
 * through next hop `peer`. A GSO packet of over 64 KiB gets 0xffff as its outer length: the
 * kernel writes each segment's own when it segments. The inner Ethernet header is the caller's. */
static __always_inline void overlay_write_outer(struct outer_headers *o, const struct andromeda_fp_config *cfg,
						const struct andromeda_peer *peer, __be32 node_ip, __u32 vni,
						__u16 hash, __u32 inner_frame_len)
{
	__u32 ip_len = inner_frame_len + ANDROMEDA_ENCAP_OVERHEAD - ETH_HLEN;
	struct iphdr ip;

	__builtin_memcpy(o->eth.h_dest, peer->mac, ETH_ALEN);
	__builtin_memcpy(o->eth.h_source, cfg->underlay_mac, ETH_ALEN);
	o->eth.h_proto = bpf_htons(ETH_P_IP);
	ip.version = 4;
	ip.ihl = 5;
	ip.tos = 0;
	ip.tot_len = bpf_htons(ip_len > 0xffff ? 0xffff : ip_len);
	ip.id = bpf_htons(overlay_next_ip_id());
	ip.frag_off = bpf_htons(IPV4_DF);
	ip.ttl = OUTER_TTL;
	ip.protocol = IPPROTO_UDP;
	ip.check = 0;
	ip.saddr = cfg->underlay_ip;
	ip.daddr = node_ip;
	ip.check = (__u16)~ipv4_header_sum(&ip);
	__builtin_memcpy(&o->ip, &ip, sizeof(ip));
	o->udp.source = bpf_htons(andromeda_flow_source_port(hash));
	o->udp.dest = bpf_htons(overlay_port);
	o->udp.len = bpf_htons(ip_len > 0xffff ? 0xffff - sizeof(struct iphdr) : ip_len - sizeof(struct iphdr));
	o->udp.check = 0;
	andromeda_overlay_write(o->overlay, encap_kind, vni, hash);
}

#endif /* ANDROMEDA_BPF_LIB_OVERLAY_H */
