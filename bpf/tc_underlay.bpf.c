// SPDX-License-Identifier: MIT
/* Ingress of the underlay (tc): the overlay packets the XDP prefilter passed on. Those for a local
 * endpoint (XDP's finding in the packet's metadata, lib/handoff.h) are decapsulated and go
 * straight into their endpoint's tenant; those for this node's NAT are decapsulated, translated
 * and sent out of the uplink when the NAT installed their flow (lib/nat.h), and go to the
 * pipeline through the underlay's punt pair otherwise. Everything else is the host's (and any
 * other tc program's on the device). Stages:
 *   take (this node's overlay packet, its MAC header restored) -> classify ->
 *   decap and deliver / decap, NAT and send out / punt */
#include <linux/bpf.h>
#include <linux/in.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "lib/config.h"
#include "lib/decap.h"
#include "lib/eth.h"
#include "lib/fabric.h"
#include "lib/handoff.h"
#include "lib/ipv4.h"
#include "lib/nat.h"
#include "lib/overlay.h"
#include "lib/punt.h"
#include "lib/stats.h"

/* Debian 12's UAPI headers (6.1) predate them: kernels from 6.3 have DECAP_L3_IPV4, kernels after
 * 6.18 DECAP_L4_UDP. */
#ifndef BPF_F_ADJ_ROOM_DECAP_L3_IPV4
#define BPF_F_ADJ_ROOM_DECAP_L3_IPV4 (1ULL << 7)
#endif
#ifndef BPF_F_ADJ_ROOM_DECAP_L3_IPV6
#define BPF_F_ADJ_ROOM_DECAP_L3_IPV6 (1ULL << 8)
#endif
#ifndef BPF_F_ADJ_ROOM_DECAP_L4_UDP
#define BPF_F_ADJ_ROOM_DECAP_L4_UDP (1ULL << 10)
#endif

/* How the outer headers come off: the MSS kept (FIXED_GSO), skb->protocol the inner IPv4's or
 * IPv6's (DECAP_L3_*: a veth peer's bpf_redirect_peer delivers the skb with the protocol it has,
 * so inner IPv6 under an outer IPv4 header must say so), and,
 * where the kernel has it, DECAP_L4_UDP. A packet from a peer's fast path arrives with the
 * tunnel's offload state (skb->encapsulation, and a GSO packet's SKB_GSO_UDP_TUNNEL); that flag
 * clears it, so that the tenant gets a plain packet. Without it the state stays with the packet:
 * the tenant's own stack does not mind, but a packet the tenant forwards on carries it further,
 * where a fast path's encap refuses it (punted: punt_tenant_tunnel) and a NIC's tunnel offload
 * may misread it. */
static __always_inline __u64 decap_adjust_flags(int inner_ipv6)
{
	return BPF_F_ADJ_ROOM_FIXED_GSO | (inner_ipv6 ? BPF_F_ADJ_ROOM_DECAP_L3_IPV6 : BPF_F_ADJ_ROOM_DECAP_L3_IPV4) |
	       (decap_l4_udp ? BPF_F_ADJ_ROOM_DECAP_L4_UDP : 0);
}

/* The outer headers (over an IPv6 underlay, the larger) and the inner ones the decap checks and
 * the NAT read (up to a TCP header behind an inner IPv6 header). */
#define UNDERLAY_HEADER_BYTES (OVERLAY_INNER_OFFSET6 + ETH_HLEN + 40 + 20)

/* Generic XDP runs a program on a copy when it cannot run it on the skb in place (a cloned or
 * non-linear skb, one with less than XDP_PACKET_HEADROOM in front: every GSO packet), and for an
 * xdp.frags program that copy (skb_pp_cow_data) leaves mac_len at 0. tc then shows the packet
 * from its network header rather than its Ethernet header. Such a packet is put right here: the
 * Ethernet header is pushed back (bpf_skb_change_head sets mac_len again) and its bytes, still
 * where the MAC header offset says, copied into it. Only packets to this node's own unicast MAC
 * are considered, and the packet starts at its Ethernet header exactly when its first 14 bytes
 * are that header's (an outer IPv4 header starts with 0x45, which no unicast MAC does, and an
 * outer IPv6 header spelling this node's MAC, its own source MAC and ethertype in its version,
 * flow label, lengths and source address is not an overlay packet from a peer). 0: the packet
 * starts at its Ethernet header (as it was or as restored, and then *restored is set: a packet
 * generic XDP had copied); -1: not for this node, or it could not be restored (the caller passes
 * it on untouched). */
static __always_inline int underlay_restore_mac(struct __sk_buff *skb, const struct andromeda_fp_config *cfg,
						int *restored)
{
	struct ethhdr eth, first;

	if (bpf_skb_load_bytes_relative(skb, 0, &eth, sizeof(eth), BPF_HDR_START_MAC))
		return -1;
	if (!mac_equal(eth.h_dest, cfg->underlay_mac))
		return -1;
	if (bpf_skb_load_bytes(skb, 0, &first, sizeof(first)))
		return -1;
	if (mac_equal(first.h_dest, eth.h_dest) && mac_equal(first.h_source, eth.h_source) && first.h_proto == eth.h_proto)
		return 0;
	if (bpf_skb_change_head(skb, ETH_HLEN, 0) || bpf_skb_store_bytes(skb, 0, &eth, sizeof(eth), 0))
		return -1;
	*restored = 1;
	return 0;
}

/* Whether the packet is an overlay packet for this node at all (else TC_ACT_UNSPEC: the next tc
 * program on the device, if any, has its say, and at the end the host stack gets it). Leaves its
 * outer headers in the linear part and pulled into `p` where it is. */
static __always_inline int underlay_take(struct __sk_buff *skb, const struct andromeda_fp_config *cfg,
					 struct overlay_packet *p, int *restored)
{
	__be16 family = underlay_is_ipv6(cfg) ? bpf_htons(ETH_P_IPV6) : bpf_htons(ETH_P_IP);
	__u32 len;
	struct cursor c;

	if (skb->vlan_present || skb->protocol != family || underlay_restore_mac(skb, cfg, restored) != 0)
		return TC_ACT_UNSPEC;
	len = skb->len;
	bpf_skb_pull_data(skb, len < UNDERLAY_HEADER_BYTES ? len : UNDERLAY_HEADER_BYTES);
	c = cursor_of_skb(skb);
	if (underlay_is_ipv6(cfg)) {
		if (overlay_packet_pull6(&c, p) || p->ip6->nexthdr != IPPROTO_UDP ||
		    p->udp->dest != bpf_htons(overlay_port))
			return TC_ACT_UNSPEC;
		return STAGE_CONTINUE;
	}
	p->eth = cursor_pull(&c, sizeof(*p->eth));
	p->ip = ipv4_pull(&c);
	p->udp = cursor_pull(&c, sizeof(*p->udp));
	if (!p->eth || !p->ip || !p->udp || p->ip->ihl != 5 || p->ip->protocol != IPPROTO_UDP ||
	    p->udp->dest != bpf_htons(overlay_port))
		return TC_ACT_UNSPEC;
	return STAGE_CONTINUE;
}

/* underlay_classify's check that the packet is one overlay packet as XDP saw it, and its pull,
 * over either underlay. 0, or -1. */
static __always_inline int underlay_same_packet(struct __sk_buff *skb, const struct andromeda_fp_config *cfg,
						struct overlay_packet *p)
{
	struct cursor c = cursor_of_skb(skb);
	__u32 len = skb->len;

	if (underlay_is_ipv6(cfg)) {
		if (overlay_packet_pull6(&c, p))
			return -1;
		if (len - ETH_HLEN - sizeof(struct ipv6hdr) > 0xffff)
			return skb->gso_size && p->ip6->payload_len == bpf_htons(0xffff) ? 0 : -1;
		return p->ip6->payload_len == bpf_htons(len - ETH_HLEN - sizeof(struct ipv6hdr)) ? 0 : -1;
	}
	if (overlay_packet_pull(&c, p))
		return -1;
	if (len - ETH_HLEN > 0xffff)
		return skb->gso_size && p->ip->tot_len == bpf_htons(0xffff) ? 0 : -1;
	return p->ip->tot_len == bpf_htons(len - ETH_HLEN) ? 0 : -1;
}

/* What tc does with the packet: DECAP_LOCAL with the tenant port and the inner Ethernet header of
 * its target, from XDP's hand-over or checked here for a packet that comes without one (metadata
 * unsupported by a native driver, or dropped on the way); DECAP_NAT with the VPC; or a drop. The
 * packet must be one overlay packet as XDP saw it: its outer length is the skb's (0xffff for a
 * GSO packet of over 64 KiB), which also refuses what GRO might have merged since XDP ran (UDP
 * GRO forwarding on a NIC), which the metadata of the first packet would not describe. */
static __always_inline int underlay_classify(struct __sk_buff *skb, const struct andromeda_fp_config *cfg,
					     struct andromeda_fp_stats *s, struct overlay_packet *p,
					     struct decap_target *t, struct ethhdr *inner, __u32 *ifindex, __u32 *flags)
{
	const struct andromeda_fp_handoff *h;
	__u32 len = skb->len;

	if (underlay_same_packet(skb, cfg, p))
		return DROP(s, decap_mismatch);
	/* The inner ethertype as it came (XDP or decap_classify checked it is IPv4 or IPv6). */
	inner->h_proto = p->inner_eth->h_proto;
	h = handoff_read(skb, cfg);
	/* Over IPv6, XDP took a packet above the MTU whose outer checksum failed for GSO: one that is
	 * not GSO after all (a NIC's jumbo frame) is checked here. */
	if (h && underlay_is_ipv6(cfg) && !skb->gso_size && len - ETH_HLEN > cfg->underlay_mtu)
		h = NULL;
	if (h) {
		/* Checked by the XDP program moments ago (decap_classify_vni). */
		__builtin_memcpy(inner->h_dest, h->mac, ETH_ALEN);
		__builtin_memcpy(inner->h_source, h->gateway_mac, ETH_ALEN);
		*ifindex = h->ifindex;
		*flags = h->flags;
		COUNT(s, decap_handed_over);
		return DECAP_LOCAL;
	}
	switch (underlay_is_ipv6(cfg) ? decap_classify6_outer(p, len, cfg, skb->gso_size != 0, t)
				      : decap_classify(p, len, cfg, t)) {
	case DECAP_LOCAL:
		__builtin_memcpy(inner->h_dest, t->endpoint->mac, ETH_ALEN);
		__builtin_memcpy(inner->h_source, t->vni->gateway_mac, ETH_ALEN);
		*ifindex = t->endpoint->ifindex;
		*flags = t->endpoint->flags;
		return DECAP_LOCAL;
	case DECAP_NAT:
		return DECAP_NAT;
	case DECAP_BAD_CSUM:
		return DROP(s, decap_bad_outer_csum);
	default:
		return DROP(s, decap_mismatch);
	}
}

/* An overlay packet for this node's NAT that the kernel does not translate, still encapsulated,
 * out of the underlay's punt device: the kernel finishes its checksums and segments it on the
 * way, and the pair's far end steers it to the pipeline. */
static __always_inline int underlay_punt(struct __sk_buff *skb, struct andromeda_fp_stats *s, __u64 *reason)
{
	const struct andromeda_port *port = port_with_role(skb->ifindex, ANDROMEDA_PORT_UNDERLAY);

	if (!port || !port->link)
		return DROP(s, no_port);
	return punt_to_pipeline(skb, port, s, reason);
}

/* Out through this node's NAT: decapsulated, translated, and out of the uplink to its router, when
 * the NAT installed the flow and the packet is a plain continuation of it; else the pipeline's. */
static __always_inline int underlay_nat(struct __sk_buff *skb, const struct andromeda_fp_config *cfg,
					struct andromeda_fp_stats *s, const struct overlay_packet *p)
{
	struct cursor c = { .pos = (void *)(p->inner_ip + 1), .end = (void *)(long)skb->data_end };
	__u32 vni = andromeda_overlay_vni(p->overlay), len = skb->len - ANDROMEDA_ENCAP_OVERHEAD;
	struct andromeda_nat_entry *e;
	__u8 protocol = p->inner_ip->protocol;
	struct nat_l4 l4;
	struct ethhdr eth;

	if (nat_l4_pull(&c, p->inner_ip, 1, &l4))
		return underlay_punt(skb, s, &s->punt_nat_control);
	e = nat_flow_lookup(p->inner_ip, &l4, ANDROMEDA_NAT_OUTBOUND, vni);
	if (!e)
		return underlay_punt(skb, s, &s->punt_nat_no_flow);
	if (!cfg->uplink_ifindex || !cfg->uplink_next_hop_known)
		return underlay_punt(skb, s, &s->punt_nat_no_uplink);
	if (bpf_skb_adjust_room(skb, -ANDROMEDA_ENCAP_OVERHEAD, BPF_ADJ_ROOM_MAC, decap_adjust_flags(0)))
		return DROP(s, adjust_failed);
	if (nat_rewrite(skb, ETH_HLEN, protocol, &l4, e, 1))
		return DROP(s, nat_rewrite_failed);
	__builtin_memcpy(eth.h_dest, cfg->uplink_next_hop_mac, ETH_ALEN);
	__builtin_memcpy(eth.h_source, cfg->uplink_mac, ETH_ALEN);
	eth.h_proto = bpf_htons(ETH_P_IP);
	if (bpf_skb_store_bytes(skb, 0, &eth, sizeof(eth), 0))
		return DROP(s, nat_rewrite_failed);
	nat_flow_used(e, len);
	COUNT_BYTES(s, nat_out, len);
	bpf_redirect(cfg->uplink_ifindex, 0);
	return TC_ACT_REDIRECT;
}

/* The outer headers off, the inner Ethernet header rewritten as the gateway routed it (`inner`:
 * its ethertype, IPv4 or IPv6, as it came, which classify read), and into the tenant. */
static __always_inline int underlay_decap_deliver(struct __sk_buff *skb, struct andromeda_fp_stats *s,
						  struct ethhdr *inner, __u32 ifindex, __u32 flags, int restored,
						  int overhead)
{
	__u32 len = skb->len;
	struct cursor c;
	void *eth;
	int ipv6;

	ipv6 = inner->h_proto == bpf_htons(ETH_P_IPV6);
	if (!ipv6 && inner->h_proto != bpf_htons(ETH_P_IP))
		return DROP(s, decap_mismatch);
	if (bpf_skb_adjust_room(skb, -overhead, BPF_ADJ_ROOM_MAC, decap_adjust_flags(ipv6)))
		return DROP(s, adjust_failed);
	/* The Ethernet header in place: the pull made it linear. */
	c = cursor_of_skb(skb);
	eth = cursor_pull(&c, sizeof(*inner));
	if (!eth)
		return DROP(s, adjust_failed);
	__builtin_memcpy(eth, inner, sizeof(*inner));
	COUNT_BYTES(s, decap, len - overhead);
	if (ipv6)
		COUNT(s, ipv6_packets);
	if (restored)
		COUNT(s, decap_xdp_copied);
	return redirect_to_tenant(ifindex, flags);
}

SEC("tc")
int andromeda_tc_underlay(struct __sk_buff *skb)
{
	const struct andromeda_fp_config *cfg = fp_config();
	struct andromeda_fp_stats *s;
	struct overlay_packet p;
	struct decap_target t;
	struct ethhdr inner;
	__u32 ifindex = 0, flags = 0;
	int restored = 0, verdict;

	if (!cfg)
		return TC_ACT_UNSPEC;
	verdict = underlay_take(skb, cfg, &p, &restored);
	if (verdict != STAGE_CONTINUE)
		return verdict;
	s = fp_stats();
	if (!s)
		return TC_ACT_SHOT;
	verdict = underlay_classify(skb, cfg, s, &p, &t, &inner, &ifindex, &flags);
	if (verdict == DECAP_NAT && !underlay_is_ipv6(cfg))
		return underlay_nat(skb, cfg, s, &p);
	if (verdict != DECAP_LOCAL)
		return verdict == DECAP_NAT ? DROP(s, decap_mismatch) : verdict;
	return underlay_decap_deliver(skb, s, &inner, ifindex, flags, restored,
				      underlay_is_ipv6(cfg) ? ANDROMEDA_ENCAP_OVERHEAD6 : ANDROMEDA_ENCAP_OVERHEAD);
}
