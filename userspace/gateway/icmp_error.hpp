// The ICMP errors of path-MTU discovery, sent by the gateway to a tenant whose packet will not fit
// the overlay: ICMPv4 Destination Unreachable / Fragmentation Needed (type 3 code 4, RFC 792 and
// RFC 1191) and ICMPv6 Packet Too Big (RFC 4443 3.2).
//
// Each quotes as much of the offending packet as the RFCs allow, so the sender can match the
// error to its socket even through NAT or IPsec: ICMPv4 up to a 576-byte error datagram (RFC 1812
// 4.3.2.3; always at least the IP header and 8 bytes, RFC 792), ICMPv6 up to the 1280-byte
// minimum MTU (RFC 4443 2.4 c).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gateway/gateway_address.hpp"
#include "gateway/ipv6_gateway.hpp"
#include "gateway/rate_limiter.hpp"
#include "wire/addresses.hpp"
#include "wire/bytes.hpp"
#include "wire/ipv4.hpp"
#include "wire/ipv6.hpp"

namespace andromeda::gateway {

inline constexpr std::size_t kMaxIcmpv4ErrorDatagram = 576;   // RFC 1812 4.3.2.3
inline constexpr std::size_t kMaxIcmpv6ErrorPacket = 1280;    // RFC 4443 2.4 (c), the IPv6 minimum MTU
inline constexpr std::size_t kMaxIcmpv4Quote = kMaxIcmpv4ErrorDatagram - 20 - 8;
inline constexpr std::size_t kMaxIcmpv6Quote = kMaxIcmpv6ErrorPacket - 40 - 8;

enum class IcmpErrorOutcome : std::uint8_t {
    written,
    malformed,    // the offending frame is not a parseable IPv4 / IPv6 packet
    not_allowed,  // the RFCs forbid an error about this packet (see icmpv4_error_allowed & co.)
    no_room,      // the output buffer is too small
    rate_limited,  // the sender's token bucket is empty (the *_rate_limited builders)
};

[[nodiscard]] std::string_view to_string(IcmpErrorOutcome outcome) noexcept;

struct IcmpErrorFrame {
    IcmpErrorOutcome outcome = IcmpErrorOutcome::malformed;
    std::size_t length = 0;  // at the start of the output

    [[nodiscard]] bool written() const noexcept { return outcome == IcmpErrorOutcome::written; }
};

// RFC 1812 4.3.2.7: no ICMP error about an ICMP error, a non-first fragment, a packet to a
// broadcast or multicast address, or a packet whose source is not one unicast host.
[[nodiscard]] bool icmpv4_error_allowed(const wire::Ipv4View& offending) noexcept;
// RFC 4443 2.4 (e, f): no error about an ICMPv6 error or from an unspecified/multicast source;
// to a multicast destination only Packet Too Big (`packet_too_big`) is allowed.
[[nodiscard]] bool icmpv6_error_allowed(const wire::Ipv6View& offending, bool packet_too_big) noexcept;

// The largest frame write_fragmentation_needed / write_packet_too_big can produce for an
// offending frame with `ethernet_header_length` bytes of Ethernet header: size buffers by it.
[[nodiscard]] constexpr std::size_t max_icmpv4_error_frame(std::size_t ethernet_header_length) noexcept {
    return ethernet_header_length + kMaxIcmpv4ErrorDatagram;
}
[[nodiscard]] constexpr std::size_t max_icmpv6_error_frame(std::size_t ethernet_header_length) noexcept {
    return ethernet_header_length + kMaxIcmpv6ErrorPacket;
}

// Fragmentation Needed for `offending_frame` (a whole Ethernet frame carrying IPv4), from the
// gateway's MAC and IPv4 address to the frame's sender, advertising `next_hop_mtu`. `ip_id` is
// the error datagram's IPv4 identification.
[[nodiscard]] IcmpErrorFrame write_fragmentation_needed(wire::ByteSpan offending_frame, std::uint16_t next_hop_mtu,
                                                        const GatewayAddress& gateway, std::uint16_t ip_id,
                                                        wire::MutableByteSpan out) noexcept;

// Packet Too Big for `offending_frame` (Ethernet carrying IPv6), from the gateway MAC and
// `gateway_ipv6` (see ipv6_link_local) to the sender, advertising `mtu`.
[[nodiscard]] IcmpErrorFrame write_packet_too_big(wire::ByteSpan offending_frame, std::uint32_t mtu,
                                                  const wire::MacAddress& gateway_mac,
                                                  const wire::Ipv6Address& gateway_ipv6,
                                                  wire::MutableByteSpan out) noexcept;

// Packet Too Big from `gateway` (its MAC, and Ipv6Gateway::source_for the sender), rate limited
// per sender: a token is taken from `limiter`'s bucket for (scope, the offending packet's IPv6
// source) only once the packet is known to deserve an error, so malformed or forbidden packets
// spend nothing. `scope` keeps equal addresses of different VPCs apart: the VNI.
[[nodiscard]] IcmpErrorFrame write_packet_too_big_rate_limited(wire::ByteSpan offending_frame, std::uint32_t mtu,
                                                               const Ipv6Gateway& gateway,
                                                               IcmpErrorRateLimiter& limiter, std::uint32_t scope,
                                                               std::uint64_t now_ns,
                                                               wire::MutableByteSpan out) noexcept;

}  // namespace andromeda::gateway
