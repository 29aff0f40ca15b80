// The overlay flow hash (docs/wire-format.md, "The flow hash"). It goes into the Andromeda header and, with the
// top two bits set, becomes the outer UDP source port, so underlay ECMP keeps one inner flow on
// one path and spreads different flows.
#pragma once

#include <cstdint>
#include <optional>

#include "andromeda_overlay.h"
#include "wire/bytes.hpp"

namespace andromeda::overlay {

// An inner IPv4 5-tuple. Addresses are host-order numbers (10.0.0.10 == 0x0a00000a), i.e. the
// big-endian u32 read off the wire, which is what the hash is specified over.
struct FlowTuple {
    std::uint32_t src = 0;
    std::uint32_t dst = 0;
    std::uint16_t src_port = 0;
    std::uint16_t dst_port = 0;
    std::uint8_t protocol = 0;

    friend bool operator==(const FlowTuple&, const FlowTuple&) = default;
};

// The specified hash over its inputs as words: the addresses and `ports` (source port << 16 |
// destination port, i.e. the 4 bytes of a TCP/UDP header read as a big-endian u32), all
// arithmetic mod 2^32. Defined once for BPF and C++ in shared/andromeda_overlay.h.
[[gnu::always_inline]] [[nodiscard]] constexpr std::uint16_t flow_hash_words(std::uint32_t src, std::uint32_t dst,
                                                                            std::uint32_t ports,
                                                                            std::uint32_t protocol) noexcept {
    return andromeda_flow_hash_words(src, dst, ports, protocol);
}

// The specified hash, bit for bit. 10.0.0.10 -> 10.0.0.20 UDP 40000 -> 4242 hashes to 0x60d1.
[[gnu::always_inline]] [[nodiscard]] constexpr std::uint16_t flow_hash(const FlowTuple& t) noexcept {
    return flow_hash_words(t.src, t.dst, static_cast<std::uint32_t>(t.src_port) << 16 | t.dst_port, t.protocol);
}

// Outer UDP source port for a flow hash: always in 49152-65535 (the IANA dynamic range), so it
// never collides with a well-known service port on the underlay.
[[nodiscard]] constexpr std::uint16_t flow_source_port(std::uint16_t hash) noexcept {
    return andromeda_flow_source_port(hash);
}

// Outer IPv6 flow label for a flow hash, over an IPv6 underlay. RFC 6438: a tunnel endpoint sets
// the outer label from the inner flow, so that routers hashing the IPv6 3-tuple (addresses and
// label) spread tunnelled flows as 5-tuple hashers do by the UDP source port, and keep each on one
// path. The 16 hash bits fill the label's top 16 and its top nibble is repeated in the bottom 4:
// one label per hash, deterministic, and 0 ("unlabelled", RFC 6437) only for hash 0.
[[nodiscard]] constexpr std::uint32_t outer_flow_label(std::uint16_t hash) noexcept {
    return andromeda_outer_flow_label(hash);
}

static_assert(flow_hash({0x0a00000a, 0x0a000014, 40000, 4242, 17}) == 0x60d1);
static_assert(flow_source_port(0x60d1) == 57553);
static_assert(outer_flow_label(0x60d1) == 0x60d16 && outer_flow_label(0xffff) == 0xfffff);

// The 5-tuple of an inner Ethernet frame carrying IPv4 (up to two VLAN tags): ports are
// those of TCP/UDP in an unfragmented packet or a first fragment, 0 for any other protocol and
// for non-first fragments (which carry no transport header). nullopt for a frame that is not
// IPv4 or whose IPv4 header is malformed or truncated (as wire::Ipv4View::parse judges it).
[[nodiscard]] std::optional<FlowTuple> flow_tuple_of_frame(wire::ByteSpan frame) noexcept;

// The flow hash encap uses for an inner Ethernet frame:
//  - IPv4 TCP/UDP and other protocols: flow_hash(flow_tuple_of_frame(frame)).
//  - IPv4 ICMP: 0. Not what section 3 alone implies (ports 0 would give a nonzero hash), but what
//    the Light-Andromeda reference sends (testdata/light-andromeda/underlay.pcap: ICMP with flow
//    hash 0, source port 49152); we match it so captures and peers agree byte for byte.
//  - IPv6: andromeda_ipv6_flow_hash (shared/andromeda_overlay.h, the kernel fast path's too):
//    the same formula over each address folded to 32 bits (XOR of its four words), the
//    upper-layer protocol past any extension headers with the flow label above it and, for
//    TCP/UDP outside non-first fragments, the ports (ICMPv6 included, ports 0). The reference
//    carries no IPv6, so nothing constrains this; it only needs to be stable per flow and spread
//    flows.
//  - anything else (ARP, malformed, runt frames): 0.
[[nodiscard]] std::uint16_t flow_hash_of_frame(wire::ByteSpan frame) noexcept;

}  // namespace andromeda::overlay
