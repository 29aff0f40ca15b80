// SPDX-License-Identifier: MIT
/* Ingress of a tenant port (tc): what a tenant sends. Stages, in order:
 *   port security -> classify -> MTU -> deliver locally / encapsulate / NAT / punt
 * for IPv4, and for IPv6 between the endpoints of a dual-stack VPC (lib/ipv6.h: no NAT, and
 * none in a VPC with security groups, which have no IPv6 rules yet):
 *   port security -> classify -> MTU -> deliver locally / encapsulate / punt
 * Each returns STAGE_CONTINUE or the verdict. Traffic of a VPC with the fast path on is delivered
 * to another local tenant, encapsulated towards the endpoint's node (or, for the outside, towards
 * the VPC's NAT node), GSO packets whole (lib/encap.h), or translated here when this node is the
 * VPC's NAT gateway and the flow is one the NAT installed (lib/nat.h); everything else goes to the
 * punt device, which hands it to the AF_XDP pipeline with finished checksums and GSO packets
 * segmented. */
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
#include "lib/ipv6.h"
#include "lib/nat.h"
#include "lib/overlay.h"
#include "lib/policy.h"
#include "lib/port_security.h"
#include "lib/punt.h"
#include "lib/stats.h"

/* The bytes the stages read: Ethernet, IPv4 without options or IPv6, and a TCP header. */
#define TENANT_HEADER_BYTES (ETH_HLEN + 60)

/* One tenant frame on its way through the stages. */
struct tenant_frame {
	struct __sk_buff *skb;
	struct andromeda_fp_stats *s;
	const struct andromeda_port *port;
	__u32 len; /* the frame's length as it came (a GSO packet's whole length) */
	struct cursor c;
	struct ethhdr *eth;
	struct iphdr *ip;    /* IPv4 */
	struct ipv6hdr *ip6; /* IPv6 */
};

enum tenant_route_kind {
	ROUTE_LOCAL,    /* another tenant port of this node */
	ROUTE_REMOTE,   /* an endpoint on another node, through the overlay */
	ROUTE_NAT_NODE, /* the outside, through the overlay to the VPC's NAT node */
	ROUTE_NAT_HERE, /* the outside, through this node's NAT */
};

/* Where classify sends the frame. */
struct tenant_route {
	enum tenant_route_kind kind;
	const struct andromeda_fp_config *cfg;
	const struct andromeda_vni *vni;
	const struct andromeda_fabric_entry *target; /* ROUTE_LOCAL, ROUTE_REMOTE */
	const struct andromeda_peer *peer;           /* ROUTE_REMOTE, ROUTE_NAT_NODE */
	__be32 node_ip;                              /* ROUTE_REMOTE, ROUTE_NAT_NODE */
};

#define TENANT_PUNT(f, reason) PUNT((f)->skb, (f)->port, (f)->s, reason)

/* IPv6 from the endpoint's own address (its link-local and the unspecified address are the
 * gateway's to judge, as is everything from a port without an IPv6 address); any other unicast
 * source is a spoof. Leaves f->ip6 set. */
static __always_inline int tenant_port_security6(struct tenant_frame *f)
{
	f->ip6 = ipv6_pull(&f->c);
	if (!f->ip6 || f->ip6->version != 6)
		return TENANT_PUNT(f, ip_header);
	if (ipv6_is_zero(f->port->ip6) || !ipv6_is_routable(&f->ip6->saddr))
		return TENANT_PUNT(f, ipv6_control);
	if (!ipv6_equal(&f->ip6->saddr, f->port->ip6))
		return DROP(f->s, spoofed_ip);
	return STAGE_CONTINUE;
}

/* The source MAC, the ARP sender and the IPv4 or IPv6 source must be the endpoint's. Leaves f->ip
 * set for an IPv4 packet with a plain header (f->ip6 for IPv6: tenant_port_security6); what port
 * security cannot judge (ARP, other ethertypes, IPv4 with options or a bad header checksum) goes
 * to the pipeline, which checks it again. */
static __always_inline int tenant_port_security(struct tenant_frame *f)
{
	f->eth = cursor_pull(&f->c, sizeof(*f->eth));
	if (!f->eth)
		return TENANT_PUNT(f, not_ipv4);
	if (source_mac_spoofed(f->eth, f->port))
		return DROP(f->s, spoofed_mac);
	if (f->eth->h_proto == bpf_htons(ETH_P_ARP)) {
		if (arp_sender_spoofed(&f->c, f->port))
			return DROP(f->s, spoofed_arp);
		return TENANT_PUNT(f, not_ipv4);
	}
	if (f->eth->h_proto == bpf_htons(ETH_P_IPV6))
		return tenant_port_security6(f);
	if (f->eth->h_proto != bpf_htons(ETH_P_IP))
		return TENANT_PUNT(f, not_ipv4);
	f->ip = ipv4_pull(&f->c);
	if (!f->ip || !ipv4_is_plain(f->ip))
		return TENANT_PUNT(f, ip_header);
	if (source_ip_spoofed(f->ip, f->port)) {
		if (dhcp_client_without_address(&f->c, f->ip))
			return TENANT_PUNT(f, to_gateway);
		return DROP(f->s, spoofed_ip);
	}
	return STAGE_CONTINUE;
}

/* The outside: an address of no VPC CIDR, in a VPC with a NAT gateway (as route_ipv4 in the
 * pipeline: an address inside the VPC without an endpoint is no route). */
static __always_inline int tenant_classify_outside(struct tenant_frame *f, struct tenant_route *r)
{
	if (vpc_contains(f->port->vni, f->ip->daddr) || r->vni->nat_node_ip == 0)
		return TENANT_PUNT(f, no_route);
	if (r->vni->flags & ANDROMEDA_VNI_F_NAT_HERE) {
		r->kind = ROUTE_NAT_HERE;
		return STAGE_CONTINUE;
	}
	r->kind = ROUTE_NAT_NODE;
	r->node_ip = r->vni->nat_node_ip;
	r->peer = peer_lookup(r->node_ip);
	if (!r->peer || !r->peer->mac_known)
		return TENANT_PUNT(f, no_next_hop);
	return STAGE_CONTINUE;
}

/* Inside the VPC or out of it, with the fast path on for this node, port and VPC, sent to the
 * gateway MAC, with a consistent length, to a unicast address other than the gateway's that an
 * endpoint of the VPC has (and, for a remote one, whose node's next hop is known), or to the
 * outside. */
static __always_inline int tenant_fastpath_on(struct tenant_frame *f, struct tenant_route *r)
{
	r->cfg = fp_config();
	if (!r->cfg || !(f->port->flags & ANDROMEDA_PORT_F_FASTPATH))
		return TENANT_PUNT(f, fastpath_off);
	r->vni = vni_lookup(f->port->vni);
	if (!r->vni || !(r->vni->flags & ANDROMEDA_VNI_F_FASTPATH))
		return TENANT_PUNT(f, fastpath_off);
	return STAGE_CONTINUE;
}

/* To r->target, an endpoint of the VPC: here, bound to its port, or on a peer node whose next hop
 * is known. */
static __always_inline int tenant_route_to_endpoint(struct tenant_frame *f, struct tenant_route *r)
{
	if (r->target->local && r->target->ifindex == 0)
		return TENANT_PUNT(f, no_route);
	if (r->target->local) {
		r->kind = ROUTE_LOCAL;
		return STAGE_CONTINUE;
	}
	r->kind = ROUTE_REMOTE;
	r->node_ip = r->target->node_ip;
	r->peer = peer_lookup(r->node_ip);
	if (!r->peer || !r->peer->mac_known)
		return TENANT_PUNT(f, no_next_hop);
	return STAGE_CONTINUE;
}

static __always_inline int tenant_classify(struct tenant_frame *f, struct tenant_route *r)
{
	int verdict = tenant_fastpath_on(f, r);
	__u32 tot;

	if (verdict != STAGE_CONTINUE)
		return verdict;
	if (!mac_equal(f->eth->h_dest, r->vni->gateway_mac))
		return TENANT_PUNT(f, not_to_gateway);
	tot = bpf_ntohs(f->ip->tot_len);
	if (tot < sizeof(struct iphdr) || (!f->skb->gso_size && tot != f->len - ETH_HLEN))
		return TENANT_PUNT(f, ip_header);
	if (ipv4_is_multicast_or_broadcast(f->ip->daddr) || f->ip->daddr == r->vni->gateway)
		return TENANT_PUNT(f, to_gateway);
	r->target = endpoint_lookup(f->port->vni, f->ip->daddr);
	if (!r->target)
		return tenant_classify_outside(f, r);
	return tenant_route_to_endpoint(f, r);
}

/* IPv6 between endpoints of the VPC: with the fast path on, carried (no extension headers; of
 * ICMPv6, echo only), to a routable address, sent to the gateway MAC, with a consistent length,
 * to an endpoint of the VPC (by its IPv6 address) that tenant_route_to_endpoint can reach. The
 * gateway's own addresses are no endpoint's: the pipeline answers them. */
static __always_inline int tenant_classify6(struct tenant_frame *f, struct tenant_route *r)
{
	int verdict = tenant_fastpath_on(f, r);

	if (verdict != STAGE_CONTINUE)
		return verdict;
	switch (ipv6_payload_kind(f->ip6, &f->c)) {
	case IPV6_EXTENSION:
		return TENANT_PUNT(f, ip_header);
	case IPV6_GATEWAY_ICMPV6:
		return TENANT_PUNT(f, ipv6_control);
	default:
		break;
	}
	if (!ipv6_is_routable(&f->ip6->daddr))
		return TENANT_PUNT(f, ipv6_control);
	if (!mac_equal(f->eth->h_dest, r->vni->gateway_mac))
		return TENANT_PUNT(f, not_to_gateway);
	if (!f->skb->gso_size && sizeof(struct ipv6hdr) + bpf_ntohs(f->ip6->payload_len) != f->len - ETH_HLEN)
		return TENANT_PUNT(f, ip_header);
	r->target = endpoint6_lookup(f->port->vni, &f->ip6->daddr);
	if (!r->target)
		return TENANT_PUNT(f, no_route);
	return tenant_route_to_endpoint(f, r);
}

/* In a VPC with security groups, a flow the pipeline's firewall allowed (lib/policy.h): egress at
 * the sender and, for a delivery into another tenant of this node, ingress at the receiver too;
 * what the kernel does not find is the pipeline's to judge. */
static __always_inline int tenant_policy(struct tenant_frame *f, const struct tenant_route *r)
{
	enum policy_verdict verdict;

	if (!(r->vni->flags & ANDROMEDA_VNI_F_POLICY))
		return STAGE_CONTINUE;
	if (f->ip6)
		verdict = policy6_check(f->port->vni, r->vni, f->ip6, f->c.pos, f->c.end, ANDROMEDA_POLICY_EGRESS,
					r->kind == ROUTE_LOCAL);
	else
		verdict = policy_check(f->port->vni, r->vni, f->ip, f->c.pos, f->c.end, ANDROMEDA_POLICY_EGRESS,
				       r->kind == ROUTE_LOCAL);
	switch (verdict) {
	case POLICY_PASS:
		COUNT(f->s, policy_packets);
		return STAGE_CONTINUE;
	case POLICY_NO_FLOW:
		return TENANT_PUNT(f, policy_no_flow);
	default:
		return TENANT_PUNT(f, policy_control);
	}
}

/* Whether the packet, or each segment of a GSO packet, fits the overlay's path MTU; what does not
 * is the pipeline's (ICMP fragmentation needed, or fragmentation). A GSO packet the fast path
 * cannot size (neither TCP nor UDP) is punted to be segmented. */
static __always_inline int tenant_check_mtu(struct tenant_frame *f, const struct tenant_route *r)
{
	__u32 mtu = overlay_path_mtu(r->cfg, r->vni, r->node_ip);
	enum mtu_fit fit = f->ip6 ? overlay_fits_mtu6(f->skb, f->ip6, f->c.end, mtu)
				  : overlay_fits_mtu(f->skb, f->ip, f->c.end, mtu);

	switch (fit) {
	case MTU_FITS:
		return STAGE_CONTINUE;
	case MTU_TOO_BIG:
		return TENANT_PUNT(f, too_big);
	default:
		return TENANT_PUNT(f, gso);
	}
}

/* Into another tenant of this node, as if routed by the gateway. */
static __always_inline int tenant_deliver_local(struct tenant_frame *f, const struct tenant_route *r)
{
	__builtin_memcpy(f->eth->h_dest, r->target->mac, ETH_ALEN);
	__builtin_memcpy(f->eth->h_source, r->vni->gateway_mac, ETH_ALEN);
	COUNT_BYTES(f->s, local, f->len);
	if (f->ip6)
		COUNT(f->s, ipv6_packets);
	return redirect_to_tenant(r->target->ifindex, r->target->flags);
}

/* Outer headers in front of the frame, then out of the underlay towards the target's node: an
 * endpoint's (the inner frame as if routed by the gateway to it) or the NAT node's (the inner
 * frame as the tenant sent it: the NAT node routes it by its address). */
/* The inner packet's part of the outer checksum for segments of `gso_size` (0: not GSO). */
static __always_inline int tenant_inner_sum(const struct tenant_frame *f, __u32 gso_size, struct inner_sum *in)
{
	if (f->ip6)
		return inner6_sum(f->ip6, f->c, f->len - ETH_HLEN - sizeof(struct ipv6hdr), gso_size, in);
	return inner4_sum(f->ip, f->c, f->len - ETH_HLEN - sizeof(struct iphdr), gso_size, in);
}

/* For a GSO packet whose last segment would be shorter: the segment size that makes them all
 * equal (even_segment_size), or 0. */
static __always_inline __u32 tenant_even_gso_size(const struct tenant_frame *f)
{
	__u32 payload = f->ip6 ? inner_payload_len(f->c, f->ip6->nexthdr, f->len - ETH_HLEN - sizeof(struct ipv6hdr))
			       : inner_payload_len(f->c, f->ip->protocol, f->len - ETH_HLEN - sizeof(struct iphdr));

	return even_segment_size(payload, f->skb->gso_size);
}

/* tenant_encap over an IPv6 underlay: the outer UDP checksum is derived from the headers
 * (lib/outer6.h); a GSO packet whose segments would not all be the same size gets a smaller
 * segment size that makes them so when there is one (encap_gso_resized), or else, its segments'
 * checksums derivable one by one, goes out through the segmenting pair, whose program gives each
 * segment its own (encap_gso_resegmented; reseg_ifindex, when the daemon made the pair); a frame
 * the checksum cannot be derived for goes to the pipeline. Everything is read before the frame
 * changes. */
static __always_inline int tenant_encap6(struct tenant_frame *f, const struct tenant_route *r)
{
	struct outer_headers6 o __attribute__((aligned(8))); /* copied out in 8-byte words */
	__u32 gso_size = f->skb->gso_size, even = 0, out_ifindex = r->cfg->underlay_ifindex;
	struct inner_sum in;
	int ok, reseg = 0;

	ok = tenant_inner_sum(f, gso_size, &in);
	if (ok != 0 && gso_size) {
		even = tenant_even_gso_size(f);
		if (even) {
			ok = tenant_inner_sum(f, even, &in);
		} else if (r->cfg->reseg_ifindex && tenant_inner_sum(f, 0, &in) == 0) {
			/* The whole packet's sum, right for no segment: andromeda_tc_reseg writes each one's. */
			out_ifindex = r->cfg->reseg_ifindex;
			reseg = 1;
			ok = 0;
		}
	}
	if (ok != 0)
		return TENANT_PUNT(f, outer_csum);
	__builtin_memcpy(o.inner.h_dest, r->kind == ROUTE_REMOTE ? r->target->mac : f->eth->h_dest, ETH_ALEN);
	__builtin_memcpy(o.inner.h_source, f->eth->h_source, ETH_ALEN);
	o.inner.h_proto = f->eth->h_proto;
	overlay_write_outer6(&o, r->cfg, r->peer, f->port->vni,
			     f->ip6 ? ipv6_flow_hash(f->ip6, f->c.end) : ipv4_flow_hash(f->ip, f->c.end), f->len, &in);
	if (even && even < gso_size) {
		ok = encap_lower_gso_size(f->skb, gso_size - even);
		if (ok > 0)
			return TENANT_PUNT(f, outer_csum);
		if (ok < 0)
			return DROP(f->s, adjust_failed);
		COUNT(f->s, encap_gso_resized);
	}
	if (reseg)
		COUNT(f->s, encap_gso_resegmented);
	if (r->kind == ROUTE_NAT_NODE)
		COUNT(f->s, to_nat_node_packets);
	return encap_and_send6(f->skb, f->s, r->cfg, &o, f->len, f->port, out_ifindex);
}

static __always_inline int tenant_encap(struct tenant_frame *f, const struct tenant_route *r)
{
	struct outer_headers o __attribute__((aligned(8))); /* copied out in 8-byte words */

	if (underlay_is_ipv6(r->cfg))
		return tenant_encap6(f, r);
	__builtin_memcpy(o.inner.h_dest, r->kind == ROUTE_REMOTE ? r->target->mac : f->eth->h_dest, ETH_ALEN);
	__builtin_memcpy(o.inner.h_source, f->eth->h_source, ETH_ALEN);
	o.inner.h_proto = f->eth->h_proto;
	overlay_write_outer(&o, r->cfg, r->peer, r->node_ip, f->port->vni,
			    f->ip6 ? ipv6_flow_hash(f->ip6, f->c.end) : ipv4_flow_hash(f->ip, f->c.end), f->len);
	if (r->kind == ROUTE_NAT_NODE)
		COUNT(f->s, to_nat_node_packets);
	return encap_and_send(f->skb, f->s, r->cfg, &o, f->len, f->port);
}

/* Through this node's NAT, when the flow is one the NAT installed and the packet a plain
 * continuation of it; else to the pipeline, which decides (and installs) flows. */
static __always_inline int tenant_nat(struct tenant_frame *f, const struct tenant_route *r)
{
	struct andromeda_nat_entry *e;
	struct nat_l4 l4;
	struct ethhdr eth;

	if (nat_l4_pull(&f->c, f->ip, 1, &l4))
		return TENANT_PUNT(f, nat_control);
	e = nat_flow_lookup(f->ip, &l4, ANDROMEDA_NAT_OUTBOUND, f->port->vni);
	if (!e)
		return TENANT_PUNT(f, nat_no_flow);
	if (!r->cfg->uplink_ifindex || !r->cfg->uplink_next_hop_known)
		return TENANT_PUNT(f, nat_no_uplink);
	if (nat_rewrite(f->skb, ETH_HLEN, f->ip->protocol, &l4, e, 1))
		return DROP(f->s, nat_rewrite_failed);
	__builtin_memcpy(eth.h_dest, r->cfg->uplink_next_hop_mac, ETH_ALEN);
	__builtin_memcpy(eth.h_source, r->cfg->uplink_mac, ETH_ALEN);
	eth.h_proto = bpf_htons(ETH_P_IP);
	if (bpf_skb_store_bytes(f->skb, 0, &eth, sizeof(eth), 0))
		return DROP(f->s, nat_rewrite_failed);
	nat_flow_used(e, f->len);
	COUNT_BYTES(f->s, nat_out, f->len);
	bpf_redirect(r->cfg->uplink_ifindex, 0);
	return TC_ACT_REDIRECT;
}

SEC("tc")
int andromeda_tc_tenant(struct __sk_buff *skb)
{
	struct tenant_frame f = { .skb = skb, .len = skb->len };
	struct tenant_route r = {};
	int verdict;

	f.s = fp_stats();
	if (!f.s)
		return TC_ACT_SHOT;
	f.port = port_with_role(skb->ifindex, ANDROMEDA_PORT_TENANT);
	if (!f.port)
		return DROP(f.s, no_port);
	if (skb->vlan_present)
		return DROP(f.s, tagged);
	bpf_skb_pull_data(skb, f.len < TENANT_HEADER_BYTES ? f.len : TENANT_HEADER_BYTES);
	f.c = cursor_of_skb(skb);

	verdict = tenant_port_security(&f);
	if (verdict != STAGE_CONTINUE)
		return verdict;
	verdict = f.ip6 ? tenant_classify6(&f, &r) : tenant_classify(&f, &r);
	if (verdict != STAGE_CONTINUE)
		return verdict;
	verdict = tenant_policy(&f, &r);
	if (verdict != STAGE_CONTINUE)
		return verdict;
	if (r.kind == ROUTE_LOCAL)
		return tenant_deliver_local(&f, &r);
	if (r.kind == ROUTE_NAT_HERE)
		return tenant_nat(&f, &r);
	verdict = tenant_check_mtu(&f, &r);
	if (verdict != STAGE_CONTINUE)
		return verdict;
	return tenant_encap(&f, &r);
}
