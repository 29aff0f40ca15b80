// SPDX-License-Identifier: MIT
/* Ingress of a NAT gateway's uplink (tc): packets from the outside to a NAT address. Those of a
 * flow the NAT installed (lib/nat.h) are translated back and go to their tenant: into its port
 * when it is on this node, through the overlay to its node otherwise. The rest for a NAT address
 * (first packets, port forwards opening, TCP SYN/FIN/RST, ICMP errors, fragments) go to the
 * pipeline through the uplink's punt pair, which finishes their checksums (an outside sender in
 * the same kernel leaves them to offload), and so do those behind a VLAN tag. Everything else is
 * the host's. Stages:
 *   take (an IPv4 packet to a NAT address) -> flow -> deliver locally / encapsulate / punt */
#include <linux/bpf.h>
#include <linux/in.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "lib/config.h"
#include "lib/encap.h"
#include "lib/eth.h"
#include "lib/fabric.h"
#include "lib/flow_hash.h"
#include "lib/ipv4.h"
#include "lib/nat.h"
#include "lib/overlay.h"
#include "lib/policy.h"
#include "lib/punt.h"
#include "lib/stats.h"

/* Ethernet, IPv4 without options and a TCP header. */
#define UPLINK_HEADER_BYTES (ETH_HLEN + 40)

/* One packet from the outside on its way through the stages. */
struct uplink_packet {
	struct __sk_buff *skb;
	struct andromeda_fp_stats *s;
	const struct andromeda_port *port;
	__u32 len;
	struct cursor c;
	struct iphdr *ip;
};

#define UPLINK_PUNT(u, reason) PUNT((u)->skb, (u)->port, (u)->s, reason)

/* Where the translated packet goes: its endpoint, and that endpoint's VPC. */
struct uplink_target {
	const struct andromeda_fp_config *cfg;
	const struct andromeda_vni *vni;
	const struct andromeda_fabric_entry *endpoint;
	struct andromeda_nat_entry *flow;
	struct nat_l4 l4;
};

/* uplink_take's finding for an IPv4 packet to a NAT address behind a VLAN tag: none of tc's
 * verdicts, nor STAGE_CONTINUE. */
#define UPLINK_TAGGED 0x200

/* Whether an in-band tagged frame (one or two 802.1Q/802.1ad tags) carries IPv4 to a NAT address,
 * read through its own cursor. */
static __always_inline int uplink_tagged_nat(const struct __sk_buff *skb)
{
	struct cursor c = cursor_of_skb(skb);
	struct iphdr *ip;

	if (eth_pull_tagged(&c) != bpf_htons(ETH_P_IP))
		return 0;
	ip = ipv4_pull(&c);
	return ip && is_nat_address(ip->daddr);
}

/* An IPv4 packet to a NAT address is NAT's (STAGE_CONTINUE); anything else is the host's
 * (TC_ACT_UNSPEC). One behind a VLAN tag (or two; the outer one in the frame, or taken out by
 * the device) is NAT's too, and the pipeline's (UPLINK_TAGGED): without the fast path the XDP
 * prefilter steers such a frame to the pipeline, which translates it, so the fast path must not
 * hand it to the host instead (tests/bpf/nat_test.cpp found it doing so). */
static __always_inline int uplink_take(struct uplink_packet *u)
{
	__be16 proto = u->skb->protocol;
	struct ethhdr *eth;

	if (proto != bpf_htons(ETH_P_IP) && proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD))
		return TC_ACT_UNSPEC;
	bpf_skb_pull_data(u->skb, u->len < UPLINK_HEADER_BYTES ? u->len : UPLINK_HEADER_BYTES);
	u->c = cursor_of_skb(u->skb);
	eth = cursor_pull(&u->c, sizeof(*eth));
	if (!eth)
		return TC_ACT_UNSPEC;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return uplink_tagged_nat(u->skb) ? UPLINK_TAGGED : TC_ACT_UNSPEC;
	u->ip = ipv4_pull(&u->c);
	if (!u->ip || !is_nat_address(u->ip->daddr))
		return TC_ACT_UNSPEC;
	return u->skb->vlan_present ? UPLINK_TAGGED : STAGE_CONTINUE;
}

/* The flow the packet belongs to, its endpoint and VPC, when the kernel may translate it: a plain
 * header and a consistent length, a plain continuation of a flow the NAT installed, to an endpoint
 * of a VPC that runs the fast path here. */
static __always_inline int uplink_flow(struct uplink_packet *u, struct uplink_target *t)
{
	t->cfg = fp_config();
	if (!t->cfg)
		return UPLINK_PUNT(u, fastpath_off);
	if (!ipv4_is_plain(u->ip) || (!u->skb->gso_size && bpf_ntohs(u->ip->tot_len) != u->len - ETH_HLEN))
		return UPLINK_PUNT(u, ip_header);
	if (nat_l4_pull(&u->c, u->ip, 0, &t->l4))
		return UPLINK_PUNT(u, nat_control);
	t->flow = nat_flow_lookup(u->ip, &t->l4, ANDROMEDA_NAT_INBOUND, 0);
	if (!t->flow)
		return UPLINK_PUNT(u, nat_no_flow);
	t->vni = vni_lookup(t->flow->vni);
	if (!t->vni || !(t->vni->flags & ANDROMEDA_VNI_F_FASTPATH))
		return UPLINK_PUNT(u, fastpath_off);
	t->endpoint = endpoint_lookup(t->flow->vni, t->flow->tenant_ip);
	if (!t->endpoint || (t->endpoint->local && t->endpoint->ifindex == 0))
		return UPLINK_PUNT(u, no_route);
	return STAGE_CONTINUE;
}

/* Security groups, for a reply delivered into a tenant of this node: ingress at the tenant, by a
 * flow the pipeline allowed (lib/policy.h), keyed as the rules see the packet, after the reverse
 * translation (the outside's address to the tenant's own address and port). A tenant on another
 * node has it checked there, at the decap. */
static __always_inline int uplink_policy(struct uplink_packet *u, const struct uplink_target *t)
{
	if (!(t->vni->flags & ANDROMEDA_VNI_F_POLICY))
		return STAGE_CONTINUE;
	if (u->ip->protocol != IPPROTO_TCP && u->ip->protocol != IPPROTO_UDP)
		return UPLINK_PUNT(u, policy_control);
	if (policy_flow_check(t->flow->vni, t->vni->policy_generation, u->ip->saddr, t->flow->tenant_ip, u->ip->protocol,
			      t->l4.sport, t->flow->tenant_port, ANDROMEDA_POLICY_INGRESS) != POLICY_PASS)
		return UPLINK_PUNT(u, policy_no_flow);
	COUNT(u->s, policy_packets);
	return STAGE_CONTINUE;
}

/* Whether the translated packet (or each segment of a GSO one) fits the overlay to the endpoint's
 * node; what does not is the pipeline's (Fragmentation Needed to the outside, or fragments). */
static __always_inline int uplink_check_mtu(struct uplink_packet *u, const struct uplink_target *t)
{
	switch (overlay_fits_mtu(u->skb, u->ip, u->c.end, overlay_path_mtu(t->cfg, t->vni, t->endpoint->node_ip))) {
	case MTU_FITS:
		return STAGE_CONTINUE;
	case MTU_TOO_BIG:
		return UPLINK_PUNT(u, too_big);
	default:
		return UPLINK_PUNT(u, gso);
	}
}

/* Translated back, and the Ethernet header the gateway routes it in with (to the endpoint, from
 * the VPC's gateway MAC). Packet pointers are invalid afterwards. */
static __always_inline int uplink_translate(struct uplink_packet *u, const struct uplink_target *t)
{
	struct ethhdr eth;

	if (nat_rewrite(u->skb, ETH_HLEN, u->ip->protocol, &t->l4, t->flow, 0))
		return DROP(u->s, nat_rewrite_failed);
	__builtin_memcpy(eth.h_dest, t->endpoint->mac, ETH_ALEN);
	__builtin_memcpy(eth.h_source, t->vni->gateway_mac, ETH_ALEN);
	eth.h_proto = bpf_htons(ETH_P_IP);
	if (bpf_skb_store_bytes(u->skb, 0, &eth, sizeof(eth), 0))
		return DROP(u->s, nat_rewrite_failed);
	nat_flow_used(t->flow, u->len);
	COUNT_BYTES(u->s, nat_in, u->len);
	return STAGE_CONTINUE;
}

/* Translated, then through the overlay to the endpoint's node. */
static __always_inline int uplink_encap(struct uplink_packet *u, const struct uplink_target *t,
					const struct andromeda_peer *peer)
{
	struct outer_headers o __attribute__((aligned(8))); /* copied out in 8-byte words */
	struct cursor c;
	struct iphdr *ip;
	int verdict;

	verdict = uplink_translate(u, t);
	if (verdict != STAGE_CONTINUE)
		return verdict;
	c = cursor_of_skb(u->skb);
	if (!cursor_pull(&c, ETH_HLEN) || !(ip = ipv4_pull(&c)))
		return DROP(u->s, nat_rewrite_failed);
	__builtin_memcpy(o.inner.h_dest, t->endpoint->mac, ETH_ALEN);
	__builtin_memcpy(o.inner.h_source, t->vni->gateway_mac, ETH_ALEN);
	o.inner.h_proto = bpf_htons(ETH_P_IP);
	overlay_write_outer(&o, t->cfg, peer, t->endpoint->node_ip, t->flow->vni, ipv4_flow_hash(ip, c.end), u->len);
	/* Translated already: a packet the kernel will not encapsulate is no longer one the
	 * pipeline could take, and is dropped (adjust_failed). */
	return encap_and_send(u->skb, u->s, t->cfg, &o, u->len, NULL);
}

SEC("tc")
int andromeda_tc_uplink(struct __sk_buff *skb)
{
	struct uplink_packet u = { .skb = skb, .len = skb->len };
	struct uplink_target t = {};
	const struct andromeda_peer *peer;
	int verdict;

	u.port = port_with_role(skb->ifindex, ANDROMEDA_PORT_UPLINK);
	if (!u.port)
		return TC_ACT_UNSPEC;
	verdict = uplink_take(&u);
	if (verdict != STAGE_CONTINUE && verdict != UPLINK_TAGGED)
		return verdict;
	u.s = fp_stats();
	if (!u.s)
		return TC_ACT_SHOT;
	if (!u.port->link)
		return DROP(u.s, no_port);
	if (verdict == UPLINK_TAGGED)
		return UPLINK_PUNT(&u, not_ipv4);
	verdict = uplink_flow(&u, &t);
	if (verdict != STAGE_CONTINUE)
		return verdict;
	if (t.endpoint->local) {
		verdict = uplink_policy(&u, &t);
		if (verdict != STAGE_CONTINUE)
			return verdict;
		verdict = uplink_translate(&u, &t);
		return verdict != STAGE_CONTINUE ? verdict : redirect_to_tenant(t.endpoint->ifindex, t.endpoint->flags);
	}
	peer = peer_lookup(t.endpoint->node_ip);
	if (!peer || !peer->mac_known)
		return UPLINK_PUNT(&u, no_next_hop);
	verdict = uplink_check_mtu(&u, &t);
	if (verdict != STAGE_CONTINUE)
		return verdict;
	return uplink_encap(&u, &t, peer);
}
