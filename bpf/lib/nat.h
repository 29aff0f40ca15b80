/* NAT in the kernel: the translation of established flows the user-space NAT (the authority) has
 * decided and installed in andromeda_nat_flows, one entry per direction. The kernel translates a
 * packet only when it is a plain continuation of such a flow; the first packets of a flow, TCP
 * SYN/FIN/RST (the NAT's state machine), fragments, ICMP errors and anything else go to the
 * pipeline. Addresses, ports and checksums are rewritten with the kernel's checksum helpers, so
 * a CHECKSUM_PARTIAL or GSO packet keeps its offload state (only the pseudo-header part of a
 * partial checksum changes). */
#ifndef ANDROMEDA_BPF_LIB_NAT_H
#define ANDROMEDA_BPF_LIB_NAT_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "andromeda_kern_user.h"
#include "andromeda_nat_kern_user.h"
#include "eth.h"
#include "ipv4.h"
#include "maps.h"

/* An ICMP echo header (linux/icmp.h pulls in libc headers a BPF build does not have). */
struct icmp_echo_hdr {
	__u8 type;
	__u8 code;
	__sum16 checksum;
	__be16 id;
	__be16 sequence;
};
#define ICMP_ECHO_REPLY 0
#define ICMP_ECHO_REQUEST 8

ANDROMEDA_MAP(andromeda_nat_flows, BPF_MAP_TYPE_HASH, ANDROMEDA_MAX_NAT_FLOWS, struct andromeda_nat_key,
	      struct andromeda_nat_entry);

/* The transport header of a NAT packet, as far as the NAT reads and rewrites it. */
struct nat_l4 {
	__be16 sport; /* ICMP echo: the identifier going out, 0 coming in */
	__be16 dport; /* ICMP echo: 0 going out, the identifier coming in */
	__u32 csum_offset;  /* of the checksum field, from the IPv4 header */
	__u32 port_offset;  /* of the field the translation rewrites, from the IPv4 header */
	/* bpf_skb_store_bytes' flags for that field: BPF_F_RECOMPUTE_CSUM for a UDP packet without a
	 * checksum, where no checksum update offsets the new port in a CHECKSUM_COMPLETE skb's
	 * skb->csum (tests/bpf/nat_test.cpp found it left stale); 0 otherwise. */
	__u64 port_store_flags;
};

/* Reads the ports (or echo id) of the plain, unfragmented IPv4 packet `ip`, whose transport header
 * the cursor is at, and says whether the kernel may translate it: TCP without SYN, FIN or RST
 * (the pipeline's state machine sees those), any UDP, an ICMP echo request going out or an echo
 * reply coming in. 0, or -1: the pipeline's (punt_nat_control).
 * A TCP header longer than the packet (or shorter than 20 bytes) and a UDP length below 8 or past
 * the packet are the pipeline's too: its NAT refuses them as malformed (wire::TcpView and UdpView
 * check them against the IPv4 total length), so the kernel must not translate them either
 * (tests/bpf/nat_test.cpp found it doing so). A GSO packet's total length is its whole. */
static __always_inline int nat_l4_pull(struct cursor *c, const struct iphdr *ip, int outbound, struct nat_l4 *l4)
{
	int room = (int)bpf_ntohs(ip->tot_len) - (int)sizeof(*ip); /* the transport's bytes (no options) */

	l4->port_store_flags = 0;
	if (ipv4_is_fragment(ip))
		return -1;
	if (ip->protocol == IPPROTO_TCP) {
		struct tcphdr *tcp = cursor_pull(c, sizeof(*tcp));

		if (!tcp || tcp->syn || tcp->fin || tcp->rst || tcp->doff < 5 || (int)tcp->doff * 4 > room)
			return -1;
		l4->sport = tcp->source;
		l4->dport = tcp->dest;
		l4->csum_offset = sizeof(*ip) + __builtin_offsetof(struct tcphdr, check);
		l4->port_offset = sizeof(*ip) + (outbound ? __builtin_offsetof(struct tcphdr, source) : __builtin_offsetof(struct tcphdr, dest));
		return 0;
	}
	if (ip->protocol == IPPROTO_UDP) {
		struct udphdr *udp = cursor_pull(c, sizeof(*udp));

		if (!udp || bpf_ntohs(udp->len) < sizeof(*udp) || (int)bpf_ntohs(udp->len) > room)
			return -1;
		l4->sport = udp->source;
		l4->dport = udp->dest;
		l4->port_store_flags = udp->check ? 0 : BPF_F_RECOMPUTE_CSUM;
		l4->csum_offset = sizeof(*ip) + __builtin_offsetof(struct udphdr, check);
		l4->port_offset = sizeof(*ip) + (outbound ? __builtin_offsetof(struct udphdr, source) : __builtin_offsetof(struct udphdr, dest));
		return 0;
	}
	if (ip->protocol == IPPROTO_ICMP) {
		struct icmp_echo_hdr *icmp = cursor_pull(c, sizeof(*icmp));

		if (!icmp || icmp->code != 0 || icmp->type != (outbound ? ICMP_ECHO_REQUEST : ICMP_ECHO_REPLY))
			return -1;
		/* The engine's keys (userspace/nat/offload.hpp): the identifier on the side of the NAT
		 * it belongs to, 0 on the remote's. */
		l4->sport = outbound ? icmp->id : 0;
		l4->dport = outbound ? 0 : icmp->id;
		l4->csum_offset = sizeof(*ip) + __builtin_offsetof(struct icmp_echo_hdr, checksum);
		l4->port_offset = sizeof(*ip) + __builtin_offsetof(struct icmp_echo_hdr, id);
		return 0;
	}
	return -1;
}

/* The flow entry for a packet arriving in direction `direction` (outbound: from a tenant of
 * `vni`; inbound: from the outside, vni 0), or NULL. */
static __always_inline struct andromeda_nat_entry *nat_flow_lookup(const struct iphdr *ip, const struct nat_l4 *l4,
								   __u32 direction, __u32 vni)
{
	struct andromeda_nat_key key = {
		.src = ip->saddr,
		.dst = ip->daddr,
		.sport = l4->sport,
		.dport = l4->dport,
		.vni = direction == ANDROMEDA_NAT_OUTBOUND ? vni : 0,
		.protocol = ip->protocol,
		.direction = direction,
	};

	return bpf_map_lookup_elem(&andromeda_nat_flows, &key);
}

/* Records a translated packet of `len` bytes on the flow's entry for the daemon's sync. */
static __always_inline void nat_flow_used(struct andromeda_nat_entry *e, __u32 len)
{
	e->last_used_ns = bpf_ktime_get_ns();
	__sync_fetch_and_add(&e->packets, 1);
	__sync_fetch_and_add(&e->bytes, len);
}

/* Rewrites the IPv4 packet at offset `l3` of the skb by the flow `e`: outbound, the source address
 * and port (or echo id) from the tenant's to the NAT's; inbound, the destination from the NAT's to
 * the tenant's; the IPv4 header checksum and the transport checksum follow (TCP and UDP cover the
 * addresses through their pseudo-header, ICMP does not; a UDP checksum of 0 stays 0). Every packet
 * pointer is invalid afterwards. 0, or -1 when a helper refused. */
static __always_inline int nat_rewrite(struct __sk_buff *skb, __u32 l3, __u8 protocol, const struct nat_l4 *l4,
				       const struct andromeda_nat_entry *e, int outbound)
{
	__be32 from_ip = outbound ? e->tenant_ip : e->nat_ip, to_ip = outbound ? e->nat_ip : e->tenant_ip;
	__be16 from_port = outbound ? e->tenant_port : e->nat_port, to_port = outbound ? e->nat_port : e->tenant_port;
	__u32 ip_field = l3 + (outbound ? __builtin_offsetof(struct iphdr, saddr) : __builtin_offsetof(struct iphdr, daddr));
	__u64 mangled0 = protocol == IPPROTO_UDP ? BPF_F_MARK_MANGLED_0 : 0;

	if (protocol != IPPROTO_ICMP &&
	    bpf_l4_csum_replace(skb, l3 + l4->csum_offset, from_ip, to_ip, BPF_F_PSEUDO_HDR | mangled0 | sizeof(to_ip)))
		return -1;
	if (bpf_l4_csum_replace(skb, l3 + l4->csum_offset, from_port, to_port, mangled0 | sizeof(to_port)))
		return -1;
	if (bpf_l3_csum_replace(skb, l3 + __builtin_offsetof(struct iphdr, check), from_ip, to_ip, sizeof(to_ip)))
		return -1;
	if (bpf_skb_store_bytes(skb, ip_field, &to_ip, sizeof(to_ip), 0) ||
	    bpf_skb_store_bytes(skb, l3 + l4->port_offset, &to_port, sizeof(to_port), l4->port_store_flags))
		return -1;
	return 0;
}

#endif /* ANDROMEDA_BPF_LIB_NAT_H */
