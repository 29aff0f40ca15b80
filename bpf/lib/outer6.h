/* The overlay over an IPv6 underlay (docs/wire-format.md, "IPv6 underlay"): outer Ethernet, a
 * fixed IPv6 header, UDP and the overlay header, 70 bytes, byte for byte what the pipeline writes
 * (userspace/overlay/outer_template.cpp, write_ipv6_outer), and the outer UDP checksum IPv6
 * requires (RFC 8200 section 8.1).
 *
 * The checksum is derived from the headers alone, never by reading the payload: an inner TCP,
 * UDP or ICMPv6 segment whose own checksum is right on the wire sums, with its pseudo-header, to
 * 0xffff, so the segment itself sums to the complement of its pseudo-header's sum, whatever it
 * carries (RFC 1071 arithmetic; Linux's Local Checksum Offload rests on the same identity). The
 * outer checksum is then the complement of: the outer pseudo-header, the UDP and overlay headers,
 * the inner Ethernet and IP headers, and that complement. It holds as soon as the inner checksum
 * is finished, whether the tenant's stack finished it or left it to offload (CHECKSUM_PARTIAL:
 * the NIC, or the kernel on a device without offload, finishes it on the way out, after this).
 *
 * A GSO packet is segmented later with the outer headers copied into every segment and only
 * their lengths rewritten: bpf_skb_adjust_room marks it SKB_GSO_UDP_TUNNEL, and BPF cannot ask
 * for SKB_GSO_UDP_TUNNEL_CSUM, which would have the kernel or the NIC sum each segment. So one
 * checksum field serves every segment, and it is right for all of them exactly when they are the
 * same size (an inner IPv4 header's per-segment ID and checksum sum to 0xffff together; TCP's
 * per-segment sequence numbers and flags are covered by its own checksum): the checksum is
 * computed for one gso_size segment. A GSO packet whose payload is not a whole number of them (a
 * shorter last segment) is given a segment size that evens it (even_segment_size), or else goes
 * through the segmenting pair, whose program checksums each segment (bpf/tc_reseg.bpf.c); what
 * carries no checksum over its payload (IPv4 UDP with checksum 0, fragments, other transports) is
 * the pipeline's (punt_outer_csum). */
#ifndef ANDROMEDA_BPF_LIB_OUTER6_H
#define ANDROMEDA_BPF_LIB_OUTER6_H

#include <stddef.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "andromeda_kern_user.h"
#include "andromeda_overlay.h"
#include "config.h"
#include "eth.h"
#include "ipv4.h"

#define OUTER6_HOP_LIMIT 64
/* Where the inner frame starts in an overlay packet over IPv6: outer Ethernet, IPv6, UDP, overlay header. */
#define OVERLAY_INNER_OFFSET6 ANDROMEDA_ENCAP_OVERHEAD6

/* The outer headers over IPv6 and the inner Ethernet header, as written in front of the inner IP
 * packet once bpf_skb_adjust_room made room for them. */
struct outer_headers6 {
	struct ethhdr eth;
	struct ipv6hdr ip;
	struct udphdr udp;
	__u8 overlay[ANDROMEDA_OVERLAY_HEADER_LEN];
	struct ethhdr inner;
} __attribute__((packed));

_Static_assert(sizeof(struct outer_headers6) == ANDROMEDA_ENCAP_OVERHEAD6 + ETH_HLEN, "outer headers + inner Ethernet");

/* The one's-complement sum of `n` 16-bit words as they sit in memory (network order, which the
 * sum does not mind as long as every term is), unfolded. */
static __always_inline __u32 csum_words(const void *p, int n)
{
	const __u16 *w = p;
	__u32 sum = 0;

#pragma unroll
	for (int i = 0; i < n; i++)
		sum += w[i];
	return sum;
}

static __always_inline __u32 csum_fold32(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

/* An inner packet's part of the outer checksum, for one segment: the inner IP header as each
 * segment carries it and the complement of the inner pseudo-header's sum (for ICMPv4, which has
 * none, nothing: its message sums to 0xffff on its own), and the segment's frame length. */
struct inner_sum {
	__u32 sum;
	__u32 frame_len; /* inner Ethernet frame of one segment (of the packet, when not GSO) */
};

/* The transport header's length (TCP's data offset, UDP's 8) when the transport carries a
 * checksum this file can rely on over exactly its `l4_len` bytes; -1 when it does not: no such
 * transport, UDP without a checksum, or a packet (not GSO, `gso_size` 0) too short to hold its
 * header, or whose UDP length is not its transport length (the checksum would not cover the
 * rest). `c` is at the transport header. */
static __always_inline int inner_l4_header_len(struct cursor c, __u8 protocol, __u32 l4_len, __u32 gso_size)
{
	if (protocol == IPPROTO_TCP) {
		__u8 *tcp = cursor_pull(&c, 13);
		__u32 header_len;

		if (!tcp || (tcp[12] >> 4) < 5)
			return -1;
		header_len = (tcp[12] >> 4) * 4;
		return l4_len < header_len ? -1 : (int)header_len;
	}
	if (protocol == IPPROTO_UDP) {
		struct udphdr *udp = cursor_pull(&c, sizeof(*udp));

		/* 0: no checksum (IPv4's option; over IPv6 a malformed packet): nothing covers the payload. */
		if (!udp || udp->check == 0 || l4_len < sizeof(*udp))
			return -1;
		return gso_size || bpf_ntohs(udp->len) == l4_len ? (int)sizeof(*udp) : -1;
	}
	return -1;
}

/* ICMP and ICMPv6 carry their checksum in a header of at least 8 bytes (an echo's), and are
 * never GSO. */
#define INNER_ICMP_MIN_LEN 8

/* The segment's transport length: the whole packet's `l4_len` when not GSO; else one gso_size
 * segment's, when the payload is a whole number of them (-1 otherwise). */
static __always_inline int inner_segment_l4_len(__u32 l4_len, int l4_header_len, __u32 gso_size)
{
	__u32 payload;

	if (!gso_size)
		return l4_len;
	if (l4_len < (__u32)l4_header_len)
		return -1;
	payload = l4_len - l4_header_len;
	if (payload == 0 || payload % gso_size != 0)
		return -1;
	return l4_header_len + gso_size;
}

/* A segment size for a GSO packet of `payload` bytes (past its transport header) whose segments
 * of `gso_size` would not all be the same size: the largest that divides it into equal segments,
 * at most 7 more of them than gso_size gives and at least half of gso_size each; 0 when there is
 * none (the packet is then the pipeline's). The kernel segments by the new size just the same,
 * and the receiver's GRO merges segments of any equal size; what it costs is a few more segments
 * for short bursts. */
static __always_inline __u32 even_segment_size(__u32 payload, __u32 gso_size)
{
	__u32 first;

	if (!gso_size || !payload)
		return 0;
	first = (payload + gso_size - 1) / gso_size;
#pragma unroll
	for (int i = 0; i < 8; i++) {
		__u32 n = first + i, size = payload / n;

		if (payload % n == 0 && size * 2 >= gso_size)
			return size;
	}
	return 0;
}

/* The payload of an inner packet past its transport header, `l4_len` transport bytes in all, `c`
 * at that header; 0 when its header length is unknown (not TCP or UDP with a checksum). */
static __always_inline __u32 inner_payload_len(struct cursor c, __u8 protocol, __u32 l4_len)
{
	int header_len = inner_l4_header_len(c, protocol, l4_len, 1 /* a GSO packet's */);

	return header_len < 0 || l4_len < (__u32)header_len ? 0 : l4_len - header_len;
}

/* inner_sum of an inner IPv4 packet without options whose header checksum verifies (so that it
 * sums to 0xffff, on every segment too, where the kernel rewrites ID and checksum together),
 * `l4_len` transport bytes in all, `c` at its transport header. 0, or -1 when its checksum cannot
 * be derived from its headers. */
static __always_inline int inner4_sum(const struct iphdr *ip, struct cursor c, __u32 l4_len, __u32 gso_size,
				      struct inner_sum *out)
{
	int seg, header_len;
	__u32 pseudo;

	if (ipv4_is_fragment(ip))
		return -1;
	if (ip->protocol == IPPROTO_ICMP) {
		if (gso_size || l4_len < INNER_ICMP_MIN_LEN)
			return -1;
		out->sum = 0;
		out->frame_len = ETH_HLEN + sizeof(*ip) + l4_len;
		return 0;
	}
	header_len = inner_l4_header_len(c, ip->protocol, l4_len, gso_size);
	seg = header_len < 0 ? -1 : inner_segment_l4_len(l4_len, header_len, gso_size);
	if (seg < 0)
		return -1;
	pseudo = csum_words(&ip->saddr, 4) + bpf_htons(ip->protocol) + bpf_htons((__u16)seg);
	out->sum = ~csum_fold32(pseudo) & 0xffff;
	out->frame_len = ETH_HLEN + sizeof(*ip) + seg;
	return 0;
}

/* inner_sum of an inner IPv6 packet without extension headers, `l4_len` transport bytes in all
 * (a GSO packet's whole payload), `c` at its transport header. */
static __always_inline int inner6_sum(const struct ipv6hdr *ip, struct cursor c, __u32 l4_len, __u32 gso_size,
				      struct inner_sum *out)
{
	__u32 pseudo, header;
	int seg;

	if (ip->nexthdr == IPPROTO_ICMPV6) {
		if (gso_size || l4_len < INNER_ICMP_MIN_LEN)
			return -1;
		seg = l4_len;
	} else {
		int header_len = inner_l4_header_len(c, ip->nexthdr, l4_len, gso_size);

		seg = header_len < 0 ? -1 : inner_segment_l4_len(l4_len, header_len, gso_size);
		if (seg < 0)
			return -1;
	}
	/* The header as each segment carries it: its payload length is the segment's. */
	header = csum_words(ip, 2) + bpf_htons((__u16)seg) + csum_words((const __u8 *)ip + 6, 17);
	pseudo = csum_words(&ip->saddr, 16) + bpf_htons((__u16)seg) + bpf_htons(ip->nexthdr);
	out->sum = header + (~csum_fold32(pseudo) & 0xffff);
	out->frame_len = ETH_HLEN + sizeof(*ip) + seg;
	return 0;
}

/* The outer UDP checksum field over IPv6 for the IPv6 header at `ip6` and the UDP header at
 * `udp` (its ports and, when `verify`, its length and checksum as they are; 16-bit words, 2-byte
 * aligned at least), the 8-byte overlay header, the inner Ethernet header and the inner packet's
 * part `in`. Writing (verify = 0): the checksum to put in the UDP header. Verifying: 0xffff when
 * the packet's checksum is right. */
static __always_inline __u16 outer6_csum(const void *ip6, const void *udp, const __u8 *overlay, const void *inner,
					 const struct inner_sum *in, int verify)
{
	const __u16 *u = udp;
	__u16 udp_len = (__u16)(sizeof(struct udphdr) + ANDROMEDA_OVERLAY_HEADER_LEN + in->frame_len);
	__u32 sum = csum_words((const __u8 *)ip6 + offsetof(struct ipv6hdr, saddr), 16) + bpf_htons(udp_len) +
		    bpf_htons(IPPROTO_UDP) + u[0] + u[1] + bpf_htons(udp_len) + csum_words(overlay, 4) +
		    csum_words(inner, 7) + in->sum;
	__u16 folded;

	if (verify)
		return (__u16)csum_fold32(sum + u[3]);
	folded = (__u16)~csum_fold32(sum);
	return folded ? folded : 0xffff;
}

/* Fills `o`'s outer headers over IPv6 for an inner frame of `inner_frame_len` bytes (a GSO
 * packet's whole length: the kernel writes each segment's own lengths when it segments; over 64
 * KiB of payload it gets 0xffff, as over IPv4) to the peer `peer` (its address and next hop),
 * and the UDP checksum for `in`. The inner Ethernet header is the caller's, written before. */
static __always_inline void overlay_write_outer6(struct outer_headers6 *o, const struct andromeda_fp_config *cfg,
						 const struct andromeda_peer *peer, __u32 vni, __u16 hash,
						 __u32 inner_frame_len, const struct inner_sum *in)
{
	__u32 udp_len = inner_frame_len + sizeof(struct udphdr) + ANDROMEDA_OVERLAY_HEADER_LEN;
	__be32 first_word = bpf_htonl(0x60000000u | andromeda_outer_flow_label(hash));

	__builtin_memcpy(o->eth.h_dest, peer->mac, ETH_ALEN);
	__builtin_memcpy(o->eth.h_source, cfg->underlay_mac, ETH_ALEN);
	o->eth.h_proto = bpf_htons(ETH_P_IPV6);
	__builtin_memcpy(&o->ip, &first_word, sizeof(first_word));
	o->ip.payload_len = bpf_htons(udp_len > 0xffff ? 0xffff : udp_len);
	o->ip.nexthdr = IPPROTO_UDP;
	o->ip.hop_limit = OUTER6_HOP_LIMIT;
	__builtin_memcpy(&o->ip.saddr, cfg->underlay_ip6, 16);
	__builtin_memcpy(&o->ip.daddr, peer->ip6, 16);
	o->udp.source = bpf_htons(andromeda_flow_source_port(hash));
	o->udp.dest = bpf_htons(overlay_port);
	o->udp.len = o->ip.payload_len;
	andromeda_overlay_write(o->overlay, encap_kind, vni, hash);
	o->udp.check = 0;
	o->udp.check = outer6_csum((const __u8 *)o + offsetof(struct outer_headers6, ip),
				   (const __u8 *)o + offsetof(struct outer_headers6, udp), o->overlay,
				   (const __u8 *)o + offsetof(struct outer_headers6, inner), in, 0);
}

#endif /* ANDROMEDA_BPF_LIB_OUTER6_H */
