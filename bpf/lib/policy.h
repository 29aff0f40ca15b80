/* Security groups in the kernel: the flow cache the pipeline programs (shared/
 * andromeda_policy_kern_user.h). The pipeline's firewall judges every new flow by the rules; the
 * fast path of a VPC with groups (ANDROMEDA_VNI_F_POLICY) then carries a packet only where the
 * flow it belongs to is in andromeda_policy_flows (IPv6: andromeda_policy_flows6), installed
 * under the VPC's current policy generation, at each endpoint it concerns: egress at its sender's
 * tenant port (tc_tenant), ingress where it is delivered (tc_tenant's local delivery, the decap
 * check of XDP and tc_underlay, tc_uplink's NAT replies). Whatever else is the pipeline's, so the kernel never forwards a packet
 * the policy denies: it forwards only what the pipeline has allowed (tests/bpf/policy_test.cpp). */
#ifndef ANDROMEDA_BPF_LIB_POLICY_H
#define ANDROMEDA_BPF_LIB_POLICY_H

#include <linux/bpf.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "andromeda_policy_kern_user.h"
#include "eth.h"
#include "ipv4.h"
#include "maps.h"

ANDROMEDA_MAP(andromeda_policy_flows, BPF_MAP_TYPE_LRU_HASH, ANDROMEDA_MAX_POLICY_FLOWS,
	      struct andromeda_policy_flow_key, struct andromeda_policy_flow);
ANDROMEDA_MAP(andromeda_policy_flows6, BPF_MAP_TYPE_LRU_HASH, ANDROMEDA_MAX_POLICY_FLOWS,
	      struct andromeda_policy_flow6_key, struct andromeda_policy_flow);

/* What the kernel may do with a packet of a VPC with security groups. */
enum policy_verdict {
	POLICY_PASS = 0,    /* a flow the pipeline allowed, of the VPC's current generation */
	POLICY_NO_FLOW = 1, /* none here (a first packet, a changed policy, an evicted entry) */
	POLICY_CONTROL = 2, /* not the kernel's to judge: TCP SYN/FIN/RST, ICMP, fragments, other protocols */
};

/* The ports of a transport header of `protocol` at `l4` (before `end`, `room` bytes of it in the
 * packet), when the kernel may judge it by a flow: TCP without SYN, FIN or RST (the firewall's
 * connection tracking sees those), or UDP, with a transport header within the packet. 0, or -1. */
static __always_inline int policy_l4_ports(__u8 protocol, void *l4, void *end, int room, __be16 *sport, __be16 *dport)
{
	struct cursor c = { .pos = l4, .end = end };

	if (protocol == IPPROTO_TCP) {
		struct tcphdr *tcp = cursor_pull(&c, sizeof(*tcp));

		if (!tcp || tcp->syn || tcp->fin || tcp->rst || tcp->doff < 5 || (int)tcp->doff * 4 > room)
			return -1;
		*sport = tcp->source;
		*dport = tcp->dest;
		return 0;
	}
	if (protocol == IPPROTO_UDP) {
		struct udphdr *udp = cursor_pull(&c, sizeof(*udp));

		if (!udp || bpf_ntohs(udp->len) < sizeof(*udp) || (int)bpf_ntohs(udp->len) > room)
			return -1;
		*sport = udp->source;
		*dport = udp->dest;
		return 0;
	}
	return -1;
}

/* policy_l4_ports of the plain IPv4 packet `ip`, unfragmented. */
static __always_inline int policy_ports(const struct iphdr *ip, void *l4, void *end, __be16 *sport, __be16 *dport)
{
	if (ipv4_is_fragment(ip))
		return -1;
	return policy_l4_ports(ip->protocol, l4, end, (int)bpf_ntohs(ip->tot_len) - (int)sizeof(*ip), sport, dport);
}

/* A cached flow's verdict under policy generation `generation`, its last use noted. */
static __always_inline enum policy_verdict policy_flow_seen(struct andromeda_policy_flow *flow, __u32 generation)
{
	__u64 now;

	if (!flow || flow->generation != generation)
		return POLICY_NO_FLOW;
	/* The daemon reads it once a second: the coarse clock (no clock source read) and a write at
	 * most every 100 ms keep the check to a lookup (a write per packet would bounce the entry's
	 * cache line between the CPUs that carry the flow). */
	now = bpf_ktime_get_coarse_ns();
	if (now - flow->last_seen_ns > 100000000ULL)
		flow->last_seen_ns = now;
	return POLICY_PASS;
}

/* Whether the flow of a packet (saddr:sport -> daddr:dport, `protocol`; ports from policy_ports)
 * passes at its endpoint in `direction` (enum andromeda_policy_direction) under policy generation
 * `generation` of VPC `vni` (one look-up per skb: a GSO packet is judged once, whole). */
static __always_inline enum policy_verdict policy_flow_check(__u32 vni, __u32 generation, __be32 saddr, __be32 daddr,
							     __u8 protocol, __be16 sport, __be16 dport, __u8 direction)
{
	struct andromeda_policy_flow_key key = {
		.vni = vni,
		.saddr = saddr,
		.daddr = daddr,
		.sport = sport,
		.dport = dport,
		.protocol = protocol,
		.direction = direction,
	};

	return policy_flow_seen(bpf_map_lookup_elem(&andromeda_policy_flows, &key), generation);
}

/* policy_flow_check of an IPv6 packet without extension headers, in andromeda_policy_flows6. */
static __always_inline enum policy_verdict policy_flow6_check(__u32 vni, __u32 generation, const struct ipv6hdr *ip6,
							      __be16 sport, __be16 dport, __u8 direction)
{
	struct andromeda_policy_flow6_key key = {
		.vni = vni,
		.sport = sport,
		.dport = dport,
		.protocol = ip6->nexthdr,
		.direction = direction,
		.pad = 0,
	};

	__builtin_memcpy(key.saddr, &ip6->saddr, sizeof(key.saddr));
	__builtin_memcpy(key.daddr, &ip6->daddr, sizeof(key.daddr));
	return policy_flow_seen(bpf_map_lookup_elem(&andromeda_policy_flows6, &key), generation);
}

/* The policy's word on a packet of VPC `vni` (its map entry `v`) in `direction`, at the endpoints
 * the caller delivers between: POLICY_PASS at once for a VPC without groups. `also_ingress`: the
 * packet goes from one endpoint of this node to another, so the receiver's ingress is checked as
 * well as the sender's egress. */
static __always_inline enum policy_verdict policy_check(__u32 vni, const struct andromeda_vni *v, const struct iphdr *ip,
							void *l4, void *end, __u8 direction, int also_ingress)
{
	__be16 sport, dport;
	enum policy_verdict verdict;

	if (!(v->flags & ANDROMEDA_VNI_F_POLICY))
		return POLICY_PASS;
	if (policy_ports(ip, l4, end, &sport, &dport))
		return POLICY_CONTROL;
	verdict = policy_flow_check(vni, v->policy_generation, ip->saddr, ip->daddr, ip->protocol, sport, dport,
				    direction);
	if (verdict != POLICY_PASS || !also_ingress)
		return verdict;
	return policy_flow_check(vni, v->policy_generation, ip->saddr, ip->daddr, ip->protocol, sport, dport,
				 ANDROMEDA_POLICY_INGRESS);
}

/* policy_check of an IPv6 packet the fast path carries (no extension headers: the caller checked,
 * so the upper layer is `ip6->nexthdr` at `l4`). */
static __always_inline enum policy_verdict policy6_check(__u32 vni, const struct andromeda_vni *v,
							 const struct ipv6hdr *ip6, void *l4, void *end, __u8 direction,
							 int also_ingress)
{
	__be16 sport, dport;
	enum policy_verdict verdict;

	if (!(v->flags & ANDROMEDA_VNI_F_POLICY))
		return POLICY_PASS;
	if (policy_l4_ports(ip6->nexthdr, l4, end, bpf_ntohs(ip6->payload_len), &sport, &dport))
		return POLICY_CONTROL;
	verdict = policy_flow6_check(vni, v->policy_generation, ip6, sport, dport, direction);
	if (verdict != POLICY_PASS || !also_ingress)
		return verdict;
	return policy_flow6_check(vni, v->policy_generation, ip6, sport, dport, ANDROMEDA_POLICY_INGRESS);
}

#endif /* ANDROMEDA_BPF_LIB_POLICY_H */
