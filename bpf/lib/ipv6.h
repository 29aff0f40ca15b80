/* Inner IPv6 as the fast path carries it (a dual-stack VPC's east-west traffic): a fixed header
 * whose next header is the transport, between unicast addresses of the VPC, the endpoints' own.
 * What else a tenant sends over IPv6 (extension headers, Neighbor Discovery, router messages,
 * MLD, ICMPv6 errors, link-local, multicast or unspecified addresses) is the gateway's, in the
 * pipeline, which answers or judges it (docs/ipv6.md). */
#ifndef ANDROMEDA_BPF_LIB_IPV6_H
#define ANDROMEDA_BPF_LIB_IPV6_H

#include <linux/bpf.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "andromeda_kern_user.h"
#include "andromeda_overlay.h"
#include "eth.h"
#include "fabric.h"
#include "maps.h"

#define IPV6_FLOW_LABEL_MASK 0x000fffff
#define ICMPV6_ECHO_REQUEST_TYPE 128
#define ICMPV6_ECHO_REPLY_TYPE 129

ANDROMEDA_MAP(andromeda_fabric6, BPF_MAP_TYPE_HASH, ANDROMEDA_MAX_FABRIC6_ENTRIES, struct andromeda_fabric6_key,
	      struct andromeda_fabric_entry);

/* The fixed 40 bytes of an IPv6 header, or NULL when truncated. */
static __always_inline struct ipv6hdr *ipv6_pull(struct cursor *c)
{
	return cursor_pull(c, sizeof(struct ipv6hdr));
}

/* Where endpoint `ip` (16 bytes) of VNI `vni` lives, or NULL when the VPC has no such endpoint. */
static __always_inline const struct andromeda_fabric_entry *endpoint6_lookup(__u32 vni, const struct in6_addr *ip)
{
	struct andromeda_fabric6_key key = { .vni = vni };

	__builtin_memcpy(key.ip, ip, sizeof(key.ip));
	return bpf_map_lookup_elem(&andromeda_fabric6, &key);
}

static __always_inline int ipv6_equal(const struct in6_addr *a, const __u8 *b)
{
	const __u32 *x = (const __u32 *)a;
	__u32 y[4];

	__builtin_memcpy(y, b, sizeof(y));
	return x[0] == y[0] && x[1] == y[1] && x[2] == y[2] && x[3] == y[3];
}

static __always_inline int ipv6_is_zero(const __u8 *a)
{
	__u32 w[4];

	__builtin_memcpy(w, a, sizeof(w));
	return (w[0] | w[1] | w[2] | w[3]) == 0;
}

/* An address the overlay routes between endpoints: none of multicast (ff00::/8), link-local
 * (fe80::/10, the link's own: RFC 4291 2.5.6) or the unspecified address. Anything else unicast is
 * looked up, and what the fabric does not know stays the pipeline's. */
static __always_inline int ipv6_is_routable(const struct in6_addr *a)
{
	const __u8 *b = a->s6_addr;

	if (b[0] == 0xff || (b[0] == 0xfe && (b[1] & 0xc0) == 0x80))
		return 0;
	return !ipv6_is_zero(b);
}

/* Extension headers (RFC 8200 4, and the IANA list of them, with ESP and AH): the pipeline walks
 * them, the fast path does not. */
static __always_inline int ipv6_is_extension_header(__u8 next)
{
	switch (next) {
	case 0:   /* hop-by-hop options */
	case 43:  /* routing */
	case 44:  /* fragment */
	case 50:  /* ESP */
	case 51:  /* AH */
	case 60:  /* destination options */
	case 135: /* mobility */
	case 139: /* HIP */
	case 140: /* shim6 */
	case 253: /* experimental */
	case 254:
		return 1;
	default:
		return 0;
	}
}

/* What the fast path makes of an IPv6 packet's upper layer, `c` at its payload (left there). */
enum ipv6_payload_kind {
	IPV6_CARRIED,        /* TCP, UDP, ICMPv6 echo, or another transport: the overlay's */
	IPV6_EXTENSION,      /* behind extension headers: the pipeline's */
	IPV6_GATEWAY_ICMPV6, /* ND, router messages, MLD, errors: the gateway's */
};

static __always_inline enum ipv6_payload_kind ipv6_payload_kind(const struct ipv6hdr *ip, struct cursor *c)
{
	struct cursor at = *c;
	__u8 *type;

	if (ipv6_is_extension_header(ip->nexthdr))
		return IPV6_EXTENSION;
	if (ip->nexthdr != IPPROTO_ICMPV6)
		return IPV6_CARRIED;
	type = cursor_pull(&at, 1);
	if (type && (*type == ICMPV6_ECHO_REQUEST_TYPE || *type == ICMPV6_ECHO_REPLY_TYPE))
		return IPV6_CARRIED;
	return IPV6_GATEWAY_ICMPV6;
}

static __always_inline __u32 ipv6_fold(const struct in6_addr *a)
{
	return andromeda_ipv6_address_fold(bpf_ntohl(a->s6_addr32[0]), bpf_ntohl(a->s6_addr32[1]),
					   bpf_ntohl(a->s6_addr32[2]), bpf_ntohl(a->s6_addr32[3]));
}

/* The overlay flow hash of an IPv6 packet without extension headers (shared/andromeda_overlay.h's
 * rule, the pipeline's too): the ports are the 4 bytes after the header, counted when they lie
 * before `end` and inside the payload length. */
static __always_inline __u16 ipv6_flow_hash(const struct ipv6hdr *ip, const void *end)
{
	const __u8 *l4 = (const __u8 *)(ip + 1);
	int ports_present = (const void *)(l4 + 4) <= end && bpf_ntohs(ip->payload_len) >= 4;
	__u32 first_word, ports = 0;

	if ((const void *)(l4 + 4) <= end)
		__builtin_memcpy(&ports, l4, 4);
	__builtin_memcpy(&first_word, ip, 4);
	return andromeda_ipv6_flow_hash(ipv6_fold(&ip->saddr), ipv6_fold(&ip->daddr), ip->nexthdr,
					bpf_ntohl(first_word) & IPV6_FLOW_LABEL_MASK, 0, bpf_ntohl(ports),
					ports_present);
}

#endif /* ANDROMEDA_BPF_LIB_IPV6_H */
