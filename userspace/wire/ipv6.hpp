// IPv6 (RFC 8200): a zero-copy view that walks the extension-header chain to the upper-layer
// protocol, and builders for the fixed header and the common extension headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <type_traits>

#include "wire/addresses.hpp"
#include "wire/bytes.hpp"
#include "wire/checksum.hpp"
#include "wire/ip_protocol.hpp"
#include "wire/parse_result.hpp"

namespace andromeda::wire {

inline constexpr std::size_t kIpv6HeaderLength = 40;
inline constexpr std::size_t kIpv6FragmentHeaderLength = 8;
// A legitimate packet rarely carries more than three or four extension headers; the bound stops
// a crafted chain of tiny headers from making the walk expensive.
inline constexpr std::size_t kMaxIpv6ExtensionHeaders = 8;

[[nodiscard]] constexpr bool is_ipv6_extension_header(std::uint8_t next_header) noexcept {
    return next_header == ip_protocol::kHopByHop || next_header == ip_protocol::kRouting ||
           next_header == ip_protocol::kFragment || next_header == ip_protocol::kDestinationOptions ||
           next_header == ip_protocol::kAuthentication;
}

// The decoded fixed header; also the input of write_ipv6_header().
struct Ipv6Header {
    std::uint8_t traffic_class = 0;
    std::uint32_t flow_label = 0;        // 20 bits
    std::uint16_t payload_length = 0;    // everything after the fixed header, bytes
    std::uint8_t next_header = 0;
    std::uint8_t hop_limit = 64;
    Ipv6Address source;
    Ipv6Address destination;
    friend constexpr bool operator==(const Ipv6Header&, const Ipv6Header&) = default;
};

// One extension header found by the walk: its type (the next-header value that named it) and
// all its bytes, including its own next-header and length fields.
struct Ipv6ExtensionHeader {
    std::uint8_t type = 0;
    ByteSpan bytes;
};

// Builders. Each writes at the start of `out` and returns the bytes written, or 0 when `out` is
// too small or the arguments cannot form a valid header.
std::size_t write_ipv6_header(MutableByteSpan out, const Ipv6Header& header) noexcept;
// Hop-by-hop or destination options: `options` is padded with Pad1/PadN to a multiple of 8.
std::size_t write_ipv6_options_header(MutableByteSpan out, std::uint8_t next_header, ByteSpan options) noexcept;
// Routing header; `type_data` is everything after segments-left, so 4 + its size must be a
// multiple of 8 (at most 2048 in all).
std::size_t write_ipv6_routing_header(MutableByteSpan out, std::uint8_t next_header, std::uint8_t routing_type,
                                      std::uint8_t segments_left, ByteSpan type_data) noexcept;
// Fragment header; `offset` is in 8-byte units (13 bits).
std::size_t write_ipv6_fragment_header(MutableByteSpan out, std::uint8_t next_header, std::uint16_t offset,
                                       bool more_fragments, std::uint32_t identification) noexcept;

namespace detail {
struct Ipv6Walk {
    std::uint8_t upper_layer_protocol = 0;
    std::uint32_t upper_layer_offset = 0;     // from the start of the fixed header
    std::uint32_t fragment_header_offset = 0; // 0 = none
    std::uint32_t routing_header_offset = 0;  // the first routing header; 0 = none
    std::uint8_t extension_count = 0;
    ParseError error = ParseError::None;
};
// Walks the chain in packet[40..]; packet is already bounded by the payload length.
Ipv6Walk walk_ipv6_extension_headers(ByteSpan packet) noexcept;
}  // namespace detail

// A view over one IPv6 packet. parse() checks the version and payload length against the buffer
// and walks hop-by-hop, routing, fragment, destination-options and AH headers (at most 8) to find
// the upper-layer protocol. Any other next header (TCP, UDP, ICMPv6, ESP, No Next Header...) ends
// the walk. In a non-first fragment the upper-layer header is not present: the walk stops at the
// fragment header and upper_layer_payload() is fragment data. Byte is `const std::uint8_t`
// (Ipv6View) or `std::uint8_t` (MutableIpv6View).
template <class Byte>
class BasicIpv6View {
    static constexpr bool kMutable = !std::is_const_v<Byte>;

public:
    using Span = std::span<Byte>;

    static Parsed<BasicIpv6View> parse(Span bytes) noexcept {
        if (bytes.size() < kIpv6HeaderLength) return ParseError::Truncated;
        if ((bytes[0] >> 4) != 6) return ParseError::BadVersion;
        const std::size_t total = kIpv6HeaderLength + load_be16(&bytes[4]);
        if (bytes.size() < total) return ParseError::Truncated;
        const Span packet = bytes.first(total);
        const detail::Ipv6Walk walk = detail::walk_ipv6_extension_headers(packet);
        if (walk.error != ParseError::None) return walk.error;
        return BasicIpv6View(packet, walk);
    }

    [[nodiscard]] std::uint8_t version() const noexcept { return packet_[0] >> 4; }
    [[nodiscard]] std::uint8_t traffic_class() const noexcept {
        return static_cast<std::uint8_t>(load_be16(&packet_[0]) >> 4);
    }
    [[nodiscard]] std::uint32_t flow_label() const noexcept { return load_be32(&packet_[0]) & 0xfffff; }
    [[nodiscard]] std::uint16_t payload_length() const noexcept { return load_be16(&packet_[4]); }
    [[nodiscard]] std::uint8_t next_header() const noexcept { return packet_[6]; }
    [[nodiscard]] std::uint8_t hop_limit() const noexcept { return packet_[7]; }
    [[nodiscard]] Ipv6Address source() const noexcept { return Ipv6Address::from_bytes(&packet_[8]); }
    [[nodiscard]] Ipv6Address destination() const noexcept { return Ipv6Address::from_bytes(&packet_[24]); }
    [[nodiscard]] Ipv6Header header() const noexcept {
        return Ipv6Header{traffic_class(), flow_label(), payload_length(), next_header(), hop_limit(),
                          source(), destination()};
    }

    [[nodiscard]] Span packet() const noexcept { return packet_; }
    // Everything after the fixed header, ending at the payload length.
    [[nodiscard]] Span payload() const noexcept { return packet_.subspan(kIpv6HeaderLength); }

    [[nodiscard]] std::uint8_t upper_layer_protocol() const noexcept { return walk_.upper_layer_protocol; }
    [[nodiscard]] std::size_t upper_layer_offset() const noexcept { return walk_.upper_layer_offset; }
    [[nodiscard]] Span upper_layer_payload() const noexcept { return packet_.subspan(walk_.upper_layer_offset); }
    // The destination the upper-layer checksum covers (RFC 8200 8.1): with a routing header that
    // still has segments left, the last hop of the route rather than the next one. Type 0/2
    // headers list the final address last; a segment routing header (type 4) lists it first.
    [[nodiscard]] Ipv6Address final_destination() const noexcept {
        if (walk_.routing_header_offset == 0) return destination();
        const Byte* routing = &packet_[walk_.routing_header_offset];
        const std::size_t address_count = routing[1] / 2;  // 8-byte units after the first 8
        if (routing[3] == 0 || address_count == 0) return destination();
        const std::size_t index = routing[2] == 4 ? 0 : address_count - 1;
        return Ipv6Address::from_bytes(routing + 8 + 16 * index);
    }
    // Pseudo-header sum for the upper-layer checksum (UDP, TCP, ICMPv6) of this packet.
    [[nodiscard]] std::uint64_t pseudo_header_sum() const noexcept {
        return wire::pseudo_header_sum(source(), final_destination(), upper_layer_protocol(),
                                       static_cast<std::uint32_t>(upper_layer_payload().size()));
    }

    [[nodiscard]] std::size_t extension_header_count() const noexcept { return walk_.extension_count; }
    // The index-th extension header (0 = first after the fixed header); nullopt past the count.
    [[nodiscard]] std::optional<Ipv6ExtensionHeader> extension_header(std::size_t index) const noexcept {
        if (index >= walk_.extension_count) return std::nullopt;
        std::uint8_t type = next_header();
        std::size_t offset = kIpv6HeaderLength;
        for (std::size_t i = 0;; ++i) {
            const std::size_t length = extension_length(type, &packet_[offset]);
            if (i == index) return Ipv6ExtensionHeader{type, ByteSpan(packet_).subspan(offset, length)};
            type = packet_[offset];
            offset += length;
        }
    }

    [[nodiscard]] bool has_fragment_header() const noexcept { return walk_.fragment_header_offset != 0; }
    // Fragment fields; all zero/false without a fragment header.
    [[nodiscard]] std::uint16_t fragment_offset() const noexcept {
        return has_fragment_header() ? load_be16(&packet_[walk_.fragment_header_offset + 2]) >> 3 : 0;
    }
    [[nodiscard]] bool more_fragments() const noexcept {
        return has_fragment_header() && (packet_[walk_.fragment_header_offset + 3] & 1) != 0;
    }
    [[nodiscard]] std::uint32_t fragment_identification() const noexcept {
        return has_fragment_header() ? load_be32(&packet_[walk_.fragment_header_offset + 4]) : 0;
    }
    [[nodiscard]] bool is_fragment() const noexcept { return fragment_offset() != 0 || more_fragments(); }

    // IPv6 has no header checksum; an address rewrite must patch the upper-layer checksum instead.
    void set_hop_limit(std::uint8_t hop_limit) const noexcept requires kMutable { packet_[7] = hop_limit; }
    void set_traffic_class(std::uint8_t tc) const noexcept requires kMutable {
        const std::uint32_t w = load_be32(&packet_[0]);
        store_be32(&packet_[0], (w & 0xf00fffffu) | static_cast<std::uint32_t>(tc) << 20);
    }
    void set_flow_label(std::uint32_t label) const noexcept requires kMutable {
        const std::uint32_t w = load_be32(&packet_[0]);
        store_be32(&packet_[0], (w & 0xfff00000u) | (label & 0xfffff));
    }
    void set_source(const Ipv6Address& a) const noexcept requires kMutable { a.copy_to(&packet_[8]); }
    void set_destination(const Ipv6Address& a) const noexcept requires kMutable { a.copy_to(&packet_[24]); }

    // The length of the extension header of `type` starting at `p` (AH counts 4-byte units).
    [[nodiscard]] static std::size_t extension_length(std::uint8_t type, const Byte* p) noexcept {
        if (type == ip_protocol::kFragment) return kIpv6FragmentHeaderLength;
        if (type == ip_protocol::kAuthentication) return (static_cast<std::size_t>(p[1]) + 2) * 4;
        return (static_cast<std::size_t>(p[1]) + 1) * 8;
    }

private:
    BasicIpv6View(Span packet, const detail::Ipv6Walk& walk) noexcept : packet_(packet), walk_(walk) {}

    Span packet_;
    detail::Ipv6Walk walk_;
};

using Ipv6View = BasicIpv6View<const std::uint8_t>;
using MutableIpv6View = BasicIpv6View<std::uint8_t>;

}  // namespace andromeda::wire
