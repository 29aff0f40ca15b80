// Who the distributed gateway is on a tenant's link: the VPC's one virtual MAC and its gateway
// IPv4 address. Every host answers for both, so a tenant never learns where its peers live.
#pragma once

#include <cstddef>
#include <cstdint>

#include "wire/addresses.hpp"
#include "wire/bytes.hpp"
#include "wire/ethernet.hpp"

namespace andromeda::gateway {

struct GatewayAddress {
    wire::MacAddress mac;
    wire::Ipv4Address ipv4;
};

// The IPv6 link-local address (fe80::/64 + modified EUI-64, RFC 4291 appendix A) of `mac`. The
// fabric has no IPv6 gateway address yet, so ICMPv6 errors come from this one: a host accepts a
// Packet Too Big from any source, and a link-local one is what a router on the link would use.
[[nodiscard]] wire::Ipv6Address ipv6_link_local(const wire::MacAddress& mac) noexcept;

// Writes the Ethernet header of a frame answering `request`: to the request's source, from
// `gateway_mac`, with the request's VLAN tags (so a tagged asker gets a tagged answer) and
// `ethertype`. Returns the header length, or 0 when `out` is too small.
std::size_t write_answer_ethernet_header(wire::MutableByteSpan out, const wire::EthernetView& request,
                                         const wire::MacAddress& gateway_mac, std::uint16_t ethertype) noexcept;

}  // namespace andromeda::gateway
