/* What the BPF programs and the C++ pipeline compute alike, written once: the overlay header's
 * field layout, the overlay flow hash and the path-MTU rule. bpf/lib/ includes this as C, and
 * userspace/overlay and userspace/dataplane as C++ (where the functions are constexpr, so the
 * test vectors below are checked at compile time). The differential test
 * (tests/bpf/tc_tenant_test.cpp, tc_underlay_test.cpp) runs the same frames through both sides and compares the bytes.
 * Integers only: addresses and ports are passed as the host-order numbers their big-endian bytes
 * spell (10.0.0.10 is 0x0a00000a). */
#ifndef ANDROMEDA_OVERLAY_H
#define ANDROMEDA_OVERLAY_H

#include "andromeda_kern_user.h"

#ifdef __cplusplus
#define ANDROMEDA_SHARED_FN [[nodiscard]] static constexpr inline
#define ANDROMEDA_SHARED_PROC static constexpr inline
#else
#define ANDROMEDA_SHARED_FN static inline __attribute__((always_inline))
#define ANDROMEDA_SHARED_PROC static inline __attribute__((always_inline))
#endif

/* ---- The overlay header (docs/wire-format.md): 8 bytes after the outer UDP header. ---- */

/* Andromeda: version << 4 | flags, inner protocol, flow hash (big-endian), VNI (24-bit
 * big-endian), hop limit. VXLAN (RFC 7348): flags (the I flag), 3 reserved bytes, VNI, 1 reserved. */
#define ANDROMEDA_HDR_VERSION_FLAGS 0
#define ANDROMEDA_HDR_INNER_PROTOCOL 1
#define ANDROMEDA_HDR_FLOW_HASH 2
#define ANDROMEDA_HDR_VNI 4
#define ANDROMEDA_HDR_HOP_LIMIT 7
#define ANDROMEDA_VXLAN_HDR_FLAGS 0
#define ANDROMEDA_HDR_INNER_ETHERNET 0 /* inner protocol: an Ethernet frame */
#define ANDROMEDA_HDR_DEFAULT_HOP_LIMIT 64

/* The VNI of an overlay header (the same bytes in both encapsulations). */
ANDROMEDA_SHARED_FN __u32 andromeda_overlay_vni(const __u8 *h)
{
	return (__u32)h[ANDROMEDA_HDR_VNI] << 16 | (__u32)h[ANDROMEDA_HDR_VNI + 1] << 8 | h[ANDROMEDA_HDR_VNI + 2];
}

/* Writes the 8-byte overlay header of an encapsulation of kind `encap` (enum
 * andromeda_encap_kind): no flags, Ethernet inside, the default hop limit. VXLAN carries no flow
 * hash (its outer UDP source port does). */
ANDROMEDA_SHARED_PROC void andromeda_overlay_write(__u8 *h, __u32 encap, __u32 vni, __u16 flow_hash)
{
	if (encap == ANDROMEDA_ENCAP_VXLAN) {
		h[ANDROMEDA_VXLAN_HDR_FLAGS] = ANDROMEDA_VXLAN_FLAG_I;
		h[1] = 0;
		h[2] = 0;
		h[3] = 0;
		h[ANDROMEDA_HDR_HOP_LIMIT] = 0;
	} else {
		h[ANDROMEDA_HDR_VERSION_FLAGS] = ANDROMEDA_HEADER_VERSION << 4;
		h[ANDROMEDA_HDR_INNER_PROTOCOL] = ANDROMEDA_HDR_INNER_ETHERNET;
		h[ANDROMEDA_HDR_FLOW_HASH] = (__u8)(flow_hash >> 8);
		h[ANDROMEDA_HDR_FLOW_HASH + 1] = (__u8)flow_hash;
		h[ANDROMEDA_HDR_HOP_LIMIT] = ANDROMEDA_HDR_DEFAULT_HOP_LIMIT;
	}
	h[ANDROMEDA_HDR_VNI] = (__u8)(vni >> 16);
	h[ANDROMEDA_HDR_VNI + 1] = (__u8)(vni >> 8);
	h[ANDROMEDA_HDR_VNI + 2] = (__u8)vni;
}

/* ---- The flow hash (docs/wire-format.md, "The flow hash") ---- */

/* The specified hash over its inputs as words, all arithmetic mod 2^32: `ports` is
 * source port << 16 | destination port (the first 4 bytes of a TCP/UDP header, big-endian). */
ANDROMEDA_SHARED_FN __u16 andromeda_flow_hash_words(__u32 src, __u32 dst, __u32 ports, __u32 protocol)
{
	__u32 h = src * 0x9E3779B1u ^ dst * 0x85EBCA77u ^ ports * 0xC2B2AE3Du ^ protocol * 0x27D4EB2Fu;

	h ^= h >> 15;
	h *= 0x2C1B3C6Du;
	h ^= h >> 13;
	return (__u16)((h >> 16 ^ h) & 0xffff);
}

/* The flow hash of an inner IPv4 packet: ICMP hashes to 0 (as the Light-Andromeda reference
 * sends it); TCP and UDP count their ports outside non-first fragments when the packet holds
 * them (`ports_present`: at least 4 bytes after the header, within the packet's total length);
 * every other protocol hashes with ports 0. `fragment_offset` is the header's 13-bit offset. */
ANDROMEDA_SHARED_FN __u16 andromeda_ipv4_flow_hash(__u32 src, __u32 dst, __u8 protocol, __u16 fragment_offset,
						   __u32 ports, int ports_present)
{
	if (protocol == 1 /* ICMP */)
		return 0;
	if (!((protocol == 6 /* TCP */ || protocol == 17 /* UDP */) && fragment_offset == 0 && ports_present))
		ports = 0;
	return andromeda_flow_hash_words(src, dst, ports, protocol);
}

/* An IPv6 address folded to 32 bits for the flow hash: the XOR of its four 32-bit words, each
 * read big-endian (`w0` from the address's first 4 bytes). */
ANDROMEDA_SHARED_FN __u32 andromeda_ipv6_address_fold(__u32 w0, __u32 w1, __u32 w2, __u32 w3)
{
	return w0 ^ w1 ^ w2 ^ w3;
}

/* The flow hash of an inner IPv6 packet: each address folded to 32 bits
 * (andromeda_ipv6_address_fold), the upper-layer protocol with the 20-bit flow label above it in
 * the protocol's word (protocol | flow_label << 8: the label a sender gives each of its flows,
 * RFC 6437, spreads them as the kernel's own tunnels do), and TCP's and UDP's ports outside
 * non-first fragments when the packet holds them. ICMPv6 hashes like any other protocol, ports 0. */
ANDROMEDA_SHARED_FN __u16 andromeda_ipv6_flow_hash(__u32 src_folded, __u32 dst_folded, __u8 protocol,
						   __u32 flow_label, int later_fragment, __u32 ports,
						   int ports_present)
{
	if (!((protocol == 6 /* TCP */ || protocol == 17 /* UDP */) && !later_fragment && ports_present))
		ports = 0;
	return andromeda_flow_hash_words(src_folded, dst_folded, ports,
					 (__u32)protocol | (flow_label & 0xfffff) << 8);
}

/* The outer UDP source port for a flow hash: always in 49152-65535, so underlay ECMP spreads flows
 * and no well-known port on the underlay is ever hit. */
ANDROMEDA_SHARED_FN __u16 andromeda_flow_source_port(__u16 flow_hash)
{
	return (__u16)(flow_hash | 0xC000);
}

/* ---- The path MTU ---- */

/* A VPC's inner MTU, the largest IPv4 packet its tenants may send in an untagged frame: its
 * configured `mtu` (0: none) capped by what the underlay MTU leaves after the encapsulation. */
ANDROMEDA_SHARED_FN __u32 andromeda_vpc_inner_mtu(__u32 vpc_mtu, __u32 underlay_mtu)
{
	__u32 room = underlay_mtu > ANDROMEDA_ENCAP_OVERHEAD ? underlay_mtu - ANDROMEDA_ENCAP_OVERHEAD : 0;

	return vpc_mtu != 0 && vpc_mtu < room ? vpc_mtu : room;
}

/* The outer IPv6 flow label for a flow hash over an IPv6 underlay (docs/wire-format.md; RFC 6438):
 * the hash in the label's top 16 bits, its top nibble repeated in the bottom 4, so one label per
 * hash and 0 ("unlabelled") only for hash 0. */
ANDROMEDA_SHARED_FN __u32 andromeda_outer_flow_label(__u16 hash)
{
	return (__u32)hash << 4 | (__u32)(hash >> 12);
}

/* The largest inner IP packet behind `inner_ethernet_len` bytes of inner Ethernet header (14, or
 * more with VLAN tags) that fits both the VPC's inner MTU and the underlay MTU once encapsulated
 * (outer IPv4, UDP and overlay header around the inner frame; 0 when even the headers do not fit). */
ANDROMEDA_SHARED_FN __u32 andromeda_inner_ip_mtu(__u32 vpc_inner_mtu, __u32 underlay_mtu, __u32 inner_ethernet_len)
{
	__u32 overhead = ANDROMEDA_ENCAP_OVERHEAD - 14 /* outer Ethernet */ + inner_ethernet_len;
	__u32 room = underlay_mtu > overhead ? underlay_mtu - overhead : 0;

	return vpc_inner_mtu < room ? vpc_inner_mtu : room;
}

#ifdef __cplusplus
/* docs/wire-format.md's test vector: 10.0.0.10 -> 10.0.0.20, UDP 40000 -> 4242. */
static_assert(andromeda_ipv4_flow_hash(0x0a00000a, 0x0a000014, 17, 0, 40000u << 16 | 4242u, 1) == 0x60d1);
static_assert(andromeda_flow_source_port(0x60d1) == 57553);
/* docs/wire-format.md's IPv6 vector: fd00:0:0:1::a -> fd00:0:0:1::14 (folded 0xfd00000b and
 * 0xfd000015), flow label 0x12345, UDP 40000 -> 4242. */
static_assert(andromeda_ipv6_address_fold(0xfd000000, 0, 1, 0xa) == 0xfd00000b);
static_assert(andromeda_ipv6_address_fold(0xfd000000, 0, 1, 0x14) == 0xfd000015);
static_assert(andromeda_ipv6_flow_hash(0xfd00000b, 0xfd000015, 17, 0x12345, 0, 40000u << 16 | 4242u, 1) == 0x1a63);
static_assert(andromeda_inner_ip_mtu(andromeda_vpc_inner_mtu(0, 1500), 1500, 14) == 1450);
static_assert(andromeda_outer_flow_label(0x60d1) == 0x60d16 && andromeda_outer_flow_label(0xffff) == 0xfffff);
#endif

#endif /* ANDROMEDA_OVERLAY_H */
