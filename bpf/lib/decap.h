/* Which overlay packets the decap fast path takes: exactly those the pipeline would deliver (or
 * hand its NAT) without a question, so that both paths give the same result (tests/bpf). The
 * underlay's XDP program asks this and hands tc its finding (handoff.h); tc asks it for a packet
 * that comes without one. */
#ifndef ANDROMEDA_BPF_LIB_DECAP_H
#define ANDROMEDA_BPF_LIB_DECAP_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "andromeda_kern_user.h"
#include "config.h"
#include "eth.h"
#include "fabric.h"
#include "ipv4.h"
#include "ipv6.h"
#include "outer6.h"
#include "overlay.h"
#include "policy.h"

/* The local endpoint an overlay packet is for (DECAP_LOCAL), and its VPC. */
struct decap_target {
	const struct andromeda_fabric_entry *endpoint;
	const struct andromeda_vni *vni;
};

/* The outer headers of an overlay packet as the decap fast path takes them, pulled from the start
 * of [data, data_end), with the inner Ethernet header and, when there is room for one, an inner
 * IPv4 header (NULL otherwise, whatever the ethertype). An inner IPv6 header is pulled from `l3`
 * by decap_classify6 itself: one nullable pointer per path, each tested where it is used, which
 * the verifier follows (it does not relate two pointers set on exclusive paths). */
struct overlay_packet {
	struct ethhdr *eth;
	struct iphdr *ip;    /* the outer IPv4 header (overlay_packet_pull) */
	struct ipv6hdr *ip6; /* the outer IPv6 header (overlay_packet_pull6) */
	struct udphdr *udp;
	__u8 *overlay;
	struct ethhdr *inner_eth;
	struct iphdr *inner_ip;
	void *l3;  /* where the inner IP header starts */
	void *end; /* of the linear part: the inner transport header lies between the inner IP header and it */
};

/* The rest of an overlay packet once its outer IP header is pulled. */
static __always_inline int overlay_packet_pull_rest(struct cursor *c, struct overlay_packet *p)
{
	p->udp = cursor_pull(c, sizeof(*p->udp));
	p->overlay = cursor_pull(c, ANDROMEDA_OVERLAY_HEADER_LEN);
	p->inner_eth = cursor_pull(c, sizeof(*p->inner_eth));
	p->l3 = c->pos;
	p->end = c->end;
	p->inner_ip = ipv4_pull(c);
	return p->udp && p->overlay && p->inner_eth ? 0 : -1;
}

/* An overlay packet over an IPv6 underlay: a fixed outer IPv6 header (p->ip stays NULL). */
static __always_inline int overlay_packet_pull6(struct cursor *c, struct overlay_packet *p)
{
	p->eth = cursor_pull(c, sizeof(*p->eth));
	p->ip = NULL;
	p->ip6 = ipv6_pull(c);
	if (!p->eth || !p->ip6)
		return -1;
	return overlay_packet_pull_rest(c, p);
}

static __always_inline int overlay_packet_pull(struct cursor *c, struct overlay_packet *p)
{
	p->eth = cursor_pull(c, sizeof(*p->eth));
	p->ip6 = NULL;
	p->ip = ipv4_pull(c);
	if (!p->eth || !p->ip)
		return -1;
	return overlay_packet_pull_rest(c, p);
}

/* What the decap fast path does with an overlay packet. The values are none of XDP's or tc's
 * verdicts, so that a stage may return either. */
enum decap_kind {
	DECAP_NONE = 0x100,  /* the pipeline's */
	DECAP_LOCAL = 0x101, /* into a local endpoint's tenant port (decap_target.endpoint) */
	DECAP_NAT = 0x102,   /* out through this node's NAT (lib/nat.h decides whether the kernel may) */
	DECAP_BAD_CSUM = 0x103, /* over IPv6: an outer UDP checksum that does not verify (tc drops it) */
};

/* Whether the sender of an overlay packet (the node of peer key `node`) may speak for its inner
 * source, as the pipeline judges it: an address of the VPC must be an endpoint the fabric places
 * on the sending node; any other address only the VPC's NAT node may send (the outside's
 * replies). */
static __always_inline int decap_sender_valid(const struct overlay_packet *p, __u32 vni_id,
					      const struct andromeda_vni *vni, __be32 node)
{
	const struct andromeda_fabric_entry *sender;

	if (!vpc_contains(vni_id, p->inner_ip->saddr))
		return vni->nat_node_ip != 0 && !(vni->flags & ANDROMEDA_VNI_F_NAT_HERE) && vni->nat_node_ip == node;
	sender = endpoint_lookup(vni_id, p->inner_ip->saddr);
	return sender && !sender->local && sender->node_ip == node;
}

/* decap_classify_vni's ruling on inner IPv6 (a dual-stack VPC's, east-west only: IPv6 has no
 * NAT), as the pipeline's decide_underlay_ipv6 rules: from an endpoint the fabric places on the
 * sending node, to a local endpoint bound to its port (in a VPC with security groups, by a flow
 * the pipeline allowed into it: andromeda_policy_flows6). Stricter than the pipeline where the
 * fast path has no business: extension headers, ICMPv6 other than echo, link-local, multicast or
 * unspecified addresses stay the pipeline's. */
static __always_inline enum decap_kind decap_classify6(const struct overlay_packet *p, int sized, __u32 inner_len,
							__u32 vni_id, const struct andromeda_vni *vni, __be32 node,
							struct decap_target *out)
{
	const struct andromeda_fabric_entry *sender, *target;
	struct cursor c = { .pos = p->l3, .end = p->end };
	struct ipv6hdr *ip6 = ipv6_pull(&c);

	if (!ip6 || ip6->version != 6 || (sized && sizeof(*ip6) + bpf_ntohs(ip6->payload_len) != inner_len))
		return DECAP_NONE;
	if (ipv6_payload_kind(ip6, &c) != IPV6_CARRIED || !ipv6_is_routable(&ip6->saddr) ||
	    !ipv6_is_routable(&ip6->daddr))
		return DECAP_NONE;
	sender = endpoint6_lookup(vni_id, &ip6->saddr);
	if (!sender || sender->local || sender->node_ip != node)
		return DECAP_NONE;
	target = endpoint6_lookup(vni_id, &ip6->daddr);
	if (!target || !target->local || target->ifindex == 0)
		return DECAP_NONE;
	if (policy6_check(vni_id, vni, ip6, c.pos, c.end, ANDROMEDA_POLICY_INGRESS, 0) != POLICY_PASS)
		return DECAP_NONE;
	out->vni = vni;
	out->endpoint = target;
	return DECAP_LOCAL;
}

/* The inner checks of decap_classify_vni (and _vni6), for an overlay packet from the node of peer
 * key `node`: `sized` when the inner frame's length `inner_len` is known (not a GSO packet of over
 * 64 KiB). */
static __always_inline enum decap_kind decap_classify_inner(const struct overlay_packet *p, int sized, __u32 inner_len,
							     const struct andromeda_vni *vni, __be32 node,
							     struct decap_target *out)
{
	const struct andromeda_fabric_entry *target;
	__u32 vni_id;

	if (!(vni->flags & ANDROMEDA_VNI_F_FASTPATH))
		return DECAP_NONE;
	vni_id = andromeda_overlay_vni(p->overlay);
	/* An inner broadcast or multicast frame is flooded or dropped by the pipeline, never NATed. */
	if (p->inner_eth->h_dest[0] & 1)
		return DECAP_NONE;
	if (p->inner_eth->h_proto == bpf_htons(ETH_P_IPV6))
		return decap_classify6(p, sized, inner_len, vni_id, vni, node, out);
	if (p->inner_eth->h_proto != bpf_htons(ETH_P_IP) || !p->inner_ip || !ipv4_is_plain(p->inner_ip) ||
	    (sized && bpf_ntohs(p->inner_ip->tot_len) != inner_len))
		return DECAP_NONE;
	if (!decap_sender_valid(p, vni_id, vni, node))
		return DECAP_NONE;
	out->vni = vni;
	target = endpoint_lookup(vni_id, p->inner_ip->daddr);
	if (target) {
		if (!target->local || target->ifindex == 0)
			return DECAP_NONE;
		/* Security groups: ingress at the receiver, by a flow the pipeline allowed (policy.h). */
		if (policy_check(vni_id, vni, p->inner_ip, (void *)(p->inner_ip + 1), p->end, ANDROMEDA_POLICY_INGRESS, 0) !=
		    POLICY_PASS)
			return DECAP_NONE;
		out->endpoint = target;
		return DECAP_LOCAL;
	}
	/* (Its sender is an endpoint of the VPC: with NAT here, decap_sender_valid took no other.) */
	if ((vni->flags & ANDROMEDA_VNI_F_NAT_HERE) && !vpc_contains(vni_id, p->inner_ip->daddr))
		return DECAP_NAT;
	return DECAP_NONE;
}

/* What the decap fast path does with the overlay packet `p` (`total` bytes in all: more than its
 * linear part for a multi-buffer frame or a GSO packet), exactly as the pipeline would decide it:
 * to this node's own MAC (tc restores and accepts nothing else, so a broadcast, multicast or
 * foreign-unicast overlay packet stays with the pipeline); untagged outer IPv4 without options to
 * this node's address, unfragmented, UDP to the overlay port without a checksum; a plain overlay
 * header; a VNI (`vni`, the caller's lookup) whose VPC runs the fast path here; an inner frame to
 * a unicast MAC (broadcast and multicast are the pipeline's to flood) holding an untagged
 * IPv4 packet without options and with a valid header checksum, from a sender allowed to send it
 * (decap_sender_valid), or an inner IPv6 packet decap_classify6 takes; lengths consistent
 * throughout (no padding). Then DECAP_LOCAL for a local
 * endpoint bound to its port (in a VPC with security groups, by a flow the pipeline allowed into
 * it), DECAP_NAT for an address outside the VPC when this node is its NAT gateway (out->vni set),
 * DECAP_NONE for the rest. A GSO packet of over 64 KiB carries 0xffff as
 * outer total length (the kernel rewrites it per segment) and is taken on its other checks. The
 * caller has checked that the sender is a peer node. */
static __always_inline enum decap_kind decap_classify_vni(const struct overlay_packet *p, __u64 total,
							   const struct andromeda_fp_config *cfg,
							   const struct andromeda_vni *vni, struct decap_target *out)
{
	__u32 outer_len, udp_len, inner_len = 0;
	int sized;

	if (!mac_equal(p->eth->h_dest, cfg->underlay_mac))
		return DECAP_NONE;
	if (p->eth->h_proto != bpf_htons(ETH_P_IP) || p->ip->version != 4 || p->ip->ihl != 5 ||
	    p->ip->protocol != IPPROTO_UDP || ipv4_is_fragment(p->ip) || p->udp->dest != bpf_htons(overlay_port) ||
	    p->udp->check != 0 || p->ip->daddr != cfg->underlay_ip)
		return DECAP_NONE;
	if (!overlay_header_plain(p->overlay))
		return DECAP_NONE;
	outer_len = bpf_ntohs(p->ip->tot_len);
	udp_len = bpf_ntohs(p->udp->len);
	sized = total - ETH_HLEN <= 0xffff;
	if (sized) {
		if (outer_len != total - ETH_HLEN || udp_len != outer_len - sizeof(struct iphdr))
			return DECAP_NONE;
		inner_len = udp_len - sizeof(struct udphdr) - ANDROMEDA_OVERLAY_HEADER_LEN - ETH_HLEN;
	} else if (outer_len != 0xffff) {
		return DECAP_NONE;
	}
	if (ipv4_header_sum(p->ip) != 0xffff)
		return DECAP_NONE;
	return decap_classify_inner(p, sized, inner_len, vni, p->ip->saddr, out);
}

/* The inner packet's part of the outer UDP checksum (lib/outer6.h) of `p`, an overlay packet over
 * IPv6 that is not GSO, whose inner IP packet is `inner_len` bytes long, for an inner IPv6 or
 * IPv4 header whose lengths the caller has found consistent: 0, or -1 when there is no header to
 * read or the inner checksum does not cover the payload. The decap verifies with it, the
 * segmenting pair writes with it (tc_reseg.bpf.c). */
static __always_inline int overlay6_inner_sum(const struct overlay_packet *p, __u32 inner_len, struct inner_sum *in)
{
	struct cursor c = { .pos = p->l3, .end = p->end };

	if (p->inner_eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = ipv6_pull(&c);

		if (!ip6 || inner_len < sizeof(*ip6))
			return -1;
		return inner6_sum(ip6, c, inner_len - sizeof(*ip6), 0, in);
	}
	if (!p->inner_ip || inner_len < sizeof(struct iphdr))
		return -1;
	c.pos = (void *)(p->inner_ip + 1);
	return inner4_sum(p->inner_ip, c, inner_len - sizeof(struct iphdr), 0, in);
}

/* decap_classify_vni's outer checks over an IPv6 underlay, in the same spirit: to this node's
 * MAC and address, a fixed header with UDP right behind it to the overlay port, lengths
 * consistent (0xffff for a GSO packet of over 64 KiB), from a peer node (its peer key and its
 * address), a plain overlay header; then the inner checks, which only DECAP_LOCAL passes (NAT
 * over an IPv6 underlay is the pipeline's). The UDP checksum IPv6 requires must be there and
 * verify from the headers (lib/outer6.h: the inner checksum, which the tenant's stack checks,
 * covers the rest), unless the packet is a GSO packet (`maybe_gso`), built whole by a kernel on
 * this host or merged by GRO from verified segments, whose checksum is one segment's. XDP cannot
 * tell a GSO packet: it says `maybe_gso` for one larger than the underlay's MTU, and tc, which
 * can, checks it again (DECAP_BAD_CSUM: dropped). What fails in XDP goes to the pipeline, which
 * verifies the whole datagram and counts it. */
static __always_inline enum decap_kind decap_classify_vni6(const struct overlay_packet *p, __u64 total,
							    const struct andromeda_fp_config *cfg,
							    const struct andromeda_vni *vni, int maybe_gso,
							    struct decap_target *out)
{
	const struct andromeda_peer *peer;
	__u32 payload, udp_len, inner_len = 0;
	struct inner_sum in;
	__be32 node;
	int sized;

	if (!p->ip6 || !mac_equal(p->eth->h_dest, cfg->underlay_mac))
		return DECAP_NONE;
	if (p->eth->h_proto != bpf_htons(ETH_P_IPV6) || p->ip6->version != 6 || p->ip6->nexthdr != IPPROTO_UDP ||
	    p->udp->dest != bpf_htons(overlay_port) || p->udp->check == 0 ||
	    !ipv6_equal(&p->ip6->daddr, cfg->underlay_ip6))
		return DECAP_NONE;
	if (!overlay_header_plain(p->overlay))
		return DECAP_NONE;
	payload = bpf_ntohs(p->ip6->payload_len);
	udp_len = bpf_ntohs(p->udp->len);
	sized = total - ETH_HLEN - sizeof(struct ipv6hdr) <= 0xffff;
	if (sized) {
		if (payload != total - ETH_HLEN - sizeof(struct ipv6hdr) || udp_len != payload ||
		    udp_len < sizeof(struct udphdr) + ANDROMEDA_OVERLAY_HEADER_LEN + ETH_HLEN)
			return DECAP_NONE;
		inner_len = udp_len - sizeof(struct udphdr) - ANDROMEDA_OVERLAY_HEADER_LEN - ETH_HLEN;
	} else if (payload != 0xffff) {
		return DECAP_NONE;
	}
	node = bpf_htonl(andromeda_peer_key6(p->ip6->saddr.s6_addr));
	peer = peer_lookup(node);
	if (!peer || !ipv6_equal(&p->ip6->saddr, peer->ip6))
		return DECAP_NONE;
	if (decap_classify_inner(p, sized, inner_len, vni, node, out) != DECAP_LOCAL)
		return DECAP_NONE;
	if (!sized)
		return maybe_gso ? DECAP_LOCAL : DECAP_NONE;
	/* What no fast path encapsulates whole (no checksum derivable: not a GSO packet either). */
	if (overlay6_inner_sum(p, inner_len, &in) != 0)
		return DECAP_NONE;
	if (outer6_csum(p->ip6, p->udp, p->overlay, p->inner_eth, &in, 1) == 0xffff)
		return DECAP_LOCAL;
	/* A GSO packet's checksum is one segment's (XDP's guess: tc asks again), and tc has nowhere
	 * to send one it refuses but the drop. */
	return maybe_gso ? DECAP_LOCAL : DECAP_BAD_CSUM;
}

/* decap_classify_vni for a caller that has looked nothing up yet (tc, without a hand-over): the
 * sender must be a peer node and the VNI known. */
static __always_inline enum decap_kind decap_classify(const struct overlay_packet *p, __u64 total,
						       const struct andromeda_fp_config *cfg, struct decap_target *out)
{
	const struct andromeda_vni *vni;

	if (!peer_lookup(p->ip->saddr))
		return DECAP_NONE;
	vni = vni_lookup(andromeda_overlay_vni(p->overlay));
	if (!vni)
		return DECAP_NONE;
	return decap_classify_vni(p, total, cfg, vni, out);
}

/* decap_classify over an IPv6 underlay (decap_classify_vni6 checks the sender). */
static __always_inline enum decap_kind decap_classify6_outer(const struct overlay_packet *p, __u64 total,
							      const struct andromeda_fp_config *cfg, int maybe_gso,
							      struct decap_target *out)
{
	const struct andromeda_vni *vni = vni_lookup(andromeda_overlay_vni(p->overlay));

	if (!vni)
		return DECAP_NONE;
	return decap_classify_vni6(p, total, cfg, vni, maybe_gso, out);
}

#endif /* ANDROMEDA_BPF_LIB_DECAP_H */
