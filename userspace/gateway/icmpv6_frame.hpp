// The Ethernet + IPv6 framing every ICMPv6 message the gateway originates shares: the frame
// headers first, the message after them, its checksum over the pseudo-header last.
#pragma once

#include <cstddef>
#include <cstdint>

#include "wire/addresses.hpp"
#include "wire/bytes.hpp"
#include "wire/ethernet.hpp"

namespace andromeda::gateway::detail {

struct Icmpv6FrameAddressing {
    const wire::EthernetView* request = nullptr;  // the frame answered: its VLAN tags are kept; none = untagged
    wire::MacAddress destination_mac;
    wire::MacAddress source_mac;
    wire::Ipv6Address source;
    wire::Ipv6Address destination;
    std::uint8_t hop_limit = 64;
    std::uint8_t traffic_class = 0;
};

// The Ethernet header length the frame will have.
[[nodiscard]] std::size_t icmpv6_frame_header_length(const Icmpv6FrameAddressing& addressing) noexcept;

// Writes the Ethernet and IPv6 headers for an ICMPv6 message of `message_length` bytes at the
// start of `out`; returns where the message goes, or 0 when `out` cannot hold the whole frame.
[[nodiscard]] std::size_t write_icmpv6_frame_headers(wire::MutableByteSpan out, const Icmpv6FrameAddressing& addressing,
                                                     std::size_t message_length) noexcept;

// Fills in the checksum of the message at `message` (written after the headers above).
void finish_icmpv6_checksum(wire::MutableByteSpan message, const Icmpv6FrameAddressing& addressing) noexcept;

}  // namespace andromeda::gateway::detail
