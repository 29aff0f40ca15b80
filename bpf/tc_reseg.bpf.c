// SPDX-License-Identifier: MIT
/* Ingress of the segmenting pair's far end (tc), over an IPv6 underlay: each segment of an
 * encapsulated GSO packet whose segments could not all be made the same size gets its own outer
 * UDP checksum and leaves by the underlay.
 *
 * tc_tenant encapsulates such a packet whole, as any other, and sends it out of the pair's entry
 * ("ans<underlay ifindex>", andromeda_fp_config.reseg_ifindex), whose TX offloads are off: the
 * kernel cuts it there, synchronously and in order, into segments that carry the one checksum
 * field the packet had (lib/outer6.h: BPF cannot ask for SKB_GSO_UDP_TUNNEL_CSUM) and finished
 * inner checksums. Each segment then arrives here, on "anr<underlay ifindex>", not GSO, and its
 * checksum is derived from its own headers, as tc_tenant derives a single frame's. So a burst
 * of a length without a divisor in reach (14,852 = 4 x 47 x 79 bytes at a segment size of 1,428)
 * stays on the kernel's way instead of the pipeline's, and is not overtaken by what follows.
 *
 *   tenant ─(tc: encap whole)─▶ ans<u> ══(kernel segments)══ anr<u> ─(tc: each checksum)─▶ underlay
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "lib/config.h"
#include "lib/decap.h"
#include "lib/eth.h"
#include "lib/ipv4.h"
#include "lib/ipv6.h"
#include "lib/outer6.h"
#include "lib/stats.h"

/* Outer Ethernet, IPv6, UDP, overlay header, inner Ethernet, the longest inner IP header read
 * here (IPv6's) and a TCP header without options: what must be in the linear part. */
#define RESEG_HEADERS (OVERLAY_INNER_OFFSET6 + ETH_HLEN + 40 + 20)

/* The outer checksum field of the segment `skb` (its outer headers this node's, not GSO), or -1
 * when it cannot be derived from its headers: not an overlay packet over IPv6 from this node,
 * lengths that do not add up, or an inner packet whose own checksum does not cover its payload. */
static __always_inline int reseg_checksum(struct __sk_buff *skb, const struct andromeda_fp_config *cfg)
{
	struct cursor c = cursor_of_skb(skb);
	struct overlay_packet p;
	struct inner_sum in;
	__u32 udp_len, inner_len;

	if (overlay_packet_pull6(&c, &p) != 0)
		return -1;
	if (p.eth->h_proto != bpf_htons(ETH_P_IPV6) || p.ip6->version != 6 || p.ip6->nexthdr != IPPROTO_UDP ||
	    !ipv6_equal(&p.ip6->saddr, cfg->underlay_ip6))
		return -1;
	udp_len = bpf_ntohs(p.udp->len);
	if (bpf_ntohs(p.ip6->payload_len) != udp_len || skb->len != ETH_HLEN + sizeof(struct ipv6hdr) + udp_len ||
	    udp_len < sizeof(struct udphdr) + ANDROMEDA_OVERLAY_HEADER_LEN + ETH_HLEN)
		return -1;
	/* The inner packet must be all the datagram carries: the checksum covers what the lengths say. */
	inner_len = udp_len - sizeof(struct udphdr) - ANDROMEDA_OVERLAY_HEADER_LEN - ETH_HLEN;
	if (p.inner_eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct cursor at = { .pos = p.l3, .end = p.end };
		struct ipv6hdr *ip = ipv6_pull(&at);

		if (!ip || ip->version != 6 || sizeof(*ip) + bpf_ntohs(ip->payload_len) != inner_len)
			return -1;
	} else if (p.inner_eth->h_proto != bpf_htons(ETH_P_IP) || !p.inner_ip || !ipv4_is_plain(p.inner_ip) ||
		   bpf_ntohs(p.inner_ip->tot_len) != inner_len) {
		return -1;
	}
	if (overlay6_inner_sum(&p, inner_len, &in) != 0)
		return -1;
	return outer6_csum(p.ip6, p.udp, p.overlay, p.inner_eth, &in, 0);
}

SEC("tc")
int andromeda_tc_reseg(struct __sk_buff *skb)
{
	struct andromeda_fp_stats *s = fp_stats();
	const struct andromeda_fp_config *cfg = fp_config();
	__u16 check;
	int sum;

	if (!s)
		return TC_ACT_SHOT;
	if (!cfg || !underlay_is_ipv6(cfg) || skb->gso_size)
		return DROP(s, reseg_unfit);
	if (skb->len >= RESEG_HEADERS)
		bpf_skb_pull_data(skb, RESEG_HEADERS); /* the kernel's segments have them there already */
	sum = reseg_checksum(skb, cfg);
	if (sum < 0)
		return DROP(s, reseg_unfit);
	check = (__u16)sum;
	if (bpf_skb_store_bytes(skb, ETH_HLEN + sizeof(struct ipv6hdr) + offsetof(struct udphdr, check), &check,
				sizeof(check), 0))
		return DROP(s, reseg_unfit);
	COUNT(s, reseg_packets);
	return bpf_redirect(cfg->underlay_ifindex, 0);
}
