// The Ethernet/IPv4/UDP headers of a datagram the gateway sends to a tenant (DHCP and DNS
// replies). The payload is built in place first, right after the room the headers take, so
// nothing is copied; finish_udp_reply then writes the headers and the UDP checksum around it.
// write_reply_headers is the Ethernet and IPv4 part, which the DNS-over-TCP segments share.
#pragma once

#include <cstddef>
#include <cstdint>

#include "wire/addresses.hpp"
#include "wire/bytes.hpp"
#include "wire/ethernet.hpp"

namespace andromeda::gateway {

struct UdpReplyAddressing {
    wire::EthernetHeader ethernet;  // destination, source and VLAN tags; the ethertype is set to IPv4
    wire::Ipv4Address source;
    wire::Ipv4Address destination;
    std::uint16_t source_port = 0;
    std::uint16_t destination_port = 0;
};

// Where the payload starts in the frame: the Ethernet header, 20 bytes of IPv4 and 8 of UDP.
[[nodiscard]] constexpr std::size_t udp_reply_payload_offset(const wire::EthernetHeader& ethernet) noexcept {
    return ethernet.length() + 20 + 8;
}

// Writes `ethernet` (its ethertype set to IPv4) and an IPv4 header for `transport_length` bytes
// of `protocol`: DF, TTL 64, identification 0 (RFC 6864: an atomic datagram's ID means nothing).
// Returns where the transport header starts, 0 when `out` cannot hold the whole packet or it
// would not fit IPv4's 16-bit length.
std::size_t write_reply_headers(wire::MutableByteSpan out, const wire::EthernetHeader& ethernet,
                                wire::Ipv4Address source, wire::Ipv4Address destination, std::uint8_t protocol,
                                std::size_t transport_length) noexcept;

// Writes the headers in front of the `payload_length` bytes already at
// out[udp_reply_payload_offset(...)]: IPv4 with DF, TTL 64, identification 0 (RFC 6864: an
// atomic datagram's ID means nothing), and the UDP checksum. Returns the frame length, 0 when
// `out` is too small or the datagram would not fit IPv4's 16-bit length.
std::size_t finish_udp_reply(wire::MutableByteSpan out, const UdpReplyAddressing& addressing,
                             std::size_t payload_length) noexcept;

}  // namespace andromeda::gateway
