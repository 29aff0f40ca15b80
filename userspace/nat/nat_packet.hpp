// Classifying an IPv4 packet for the NAT and rewriting it in place.
//
// The NAT works on an IPv4 packet (a span starting at the IPv4 header; the pipeline owns the
// Ethernet header). Every rewrite patches the checksums incrementally (RFC 1624): the IPv4
// header checksum, the TCP/UDP checksum for the pseudo-header address and the port, the ICMP
// checksum for the echo identifier and, in ICMP errors, for every byte changed in the quoted
// packet. A UDP checksum of 0 ("none") stays 0. Lengths never change.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nat/counters.hpp"
#include "nat/types.hpp"
#include "wire/bytes.hpp"

namespace andromeda::nat {

enum class PacketKind : std::uint8_t {
    transport,          // TCP or UDP
    icmp_echo_request,
    icmp_echo_reply,
    icmp_error,         // destination unreachable, time exceeded, parameter problem
};

// What the NAT needs from a packet, read once. For ICMP echo, source_port and destination_port
// both hold the identifier. Addresses are host-order numbers. classify() sets the inner_* fields
// for ICMP errors only. No default member initialisers: zeroing the struct per packet (rep stos)
// cost more than classifying it.
struct NatPacket {
    std::uint8_t* ip;              // the IPv4 header
    std::size_t length;            // IPv4 total length (trailing padding excluded)
    std::size_t l4_offset;         // IPv4 header length
    PacketKind kind;
    Protocol protocol;
    std::uint32_t source;
    std::uint32_t destination;
    std::uint16_t source_port;
    std::uint16_t destination_port;
    std::uint8_t tcp_flags;
    // ICMP errors only: the quoted packet (its header at inner_offset, its transport at
    // inner_l4_offset, inner_l4_length bytes of it present; at least 8).
    std::size_t inner_offset;
    std::size_t inner_l4_offset;
    std::size_t inner_l4_length;
    Protocol inner_protocol;
    bool inner_is_echo;
    std::uint32_t inner_source;
    std::uint32_t inner_destination;
    std::uint16_t inner_source_port;       // ICMP echo: the identifier
    std::uint16_t inner_destination_port;  // ICMP echo: the identifier
};

// Fills `out` from the packet at the start of `ipv4`, or says why the NAT cannot take it
// (malformed, fragment, unsupported_protocol, unsupported_icmp).
[[nodiscard]] DropReason classify(wire::MutableByteSpan ipv4, NatPacket& out) noexcept;

// Rewrites the source (outbound SNAT) or destination (inbound) address and port/identifier of
// a transport or echo packet.
void rewrite_source(const NatPacket& p, std::uint32_t address, std::uint16_t port) noexcept;
void rewrite_destination(const NatPacket& p, std::uint32_t address, std::uint16_t port) noexcept;

// ICMP error towards a tenant: outer destination -> `address`, the quoted packet's source ->
// address:port (it is the tenant's own packet as the NAT had translated it).
void rewrite_icmp_error_inbound(const NatPacket& p, std::uint32_t address, std::uint16_t port) noexcept;
// ICMP error from a tenant: outer source -> `address` (the NAT address), the quoted packet's
// destination -> address:port.
void rewrite_icmp_error_outbound(const NatPacket& p, std::uint32_t address, std::uint16_t port) noexcept;

}  // namespace andromeda::nat
