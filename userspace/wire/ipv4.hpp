// IPv4 headers (RFC 791) including options: a zero-copy view, setters that patch the header
// checksum incrementally (RFC 1624), and a builder.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "wire/addresses.hpp"
#include "wire/bytes.hpp"
#include "wire/checksum.hpp"
#include "wire/parse_result.hpp"

namespace andromeda::wire {

inline constexpr std::size_t kIpv4MinHeaderLength = 20;
inline constexpr std::size_t kIpv4MaxHeaderLength = 60;

// The decoded fields of an IPv4 header; also the input of write_ipv4_header().
struct Ipv4Header {
    std::uint8_t dscp = 0;                // 6 bits
    std::uint8_t ecn = 0;                 // 2 bits
    std::uint16_t total_length = 0;       // header + payload, bytes
    std::uint16_t identification = 0;
    bool dont_fragment = false;
    bool more_fragments = false;
    std::uint16_t fragment_offset = 0;    // in 8-byte units, 13 bits
    std::uint8_t ttl = 64;
    std::uint8_t protocol = 0;
    Ipv4Address source;
    Ipv4Address destination;
    ByteSpan options;                     // raw option bytes; length a multiple of 4, at most 40

    [[nodiscard]] std::size_t header_length() const noexcept { return kIpv4MinHeaderLength + options.size(); }
};

// Writes the header (with options and a computed checksum) at the start of `out`. Returns the
// header length, or 0 when `out` is too small, the options are not a multiple of 4 bytes or
// longer than 40, or total_length is smaller than the header.
std::size_t write_ipv4_header(MutableByteSpan out, const Ipv4Header& header) noexcept;

// A view over one IPv4 packet. parse() checks version, IHL and total length against the buffer;
// it does not check the header checksum (see checksum_valid()) so a caller can count bad
// checksums separately. packet() and payload() end at total_length, so trailing Ethernet padding
// is excluded. Byte is `const std::uint8_t` (Ipv4View) or `std::uint8_t` (MutableIpv4View).
template <class Byte>
class BasicIpv4View {
    static constexpr bool kMutable = !std::is_const_v<Byte>;

public:
    using Span = std::span<Byte>;

    static Parsed<BasicIpv4View> parse(Span bytes) noexcept {
        if (bytes.size() < kIpv4MinHeaderLength) return ParseError::Truncated;
        if ((bytes[0] >> 4) != 4) return ParseError::BadVersion;
        const std::size_t header_length = static_cast<std::size_t>(bytes[0] & 0x0f) * 4;
        if (header_length < kIpv4MinHeaderLength) return ParseError::BadHeaderLength;
        const std::size_t total_length = load_be16(&bytes[2]);
        if (total_length < header_length) return ParseError::BadTotalLength;
        if (bytes.size() < total_length) return ParseError::Truncated;
        return BasicIpv4View(bytes.first(total_length));
    }
    // For the datagram quoted inside an ICMP error (RFC 792/1812): the sender keeps only the
    // header and the first bytes, so total_length may exceed what is present. Same checks as
    // parse() otherwise; packet() and payload() end at the lesser of total_length and the buffer.
    static Parsed<BasicIpv4View> parse_quoted(Span bytes) noexcept {
        if (bytes.size() < kIpv4MinHeaderLength) return ParseError::Truncated;
        if ((bytes[0] >> 4) != 4) return ParseError::BadVersion;
        const std::size_t header_length = static_cast<std::size_t>(bytes[0] & 0x0f) * 4;
        if (header_length < kIpv4MinHeaderLength) return ParseError::BadHeaderLength;
        const std::size_t total_length = load_be16(&bytes[2]);
        if (total_length < header_length) return ParseError::BadTotalLength;
        if (bytes.size() < header_length) return ParseError::Truncated;
        return BasicIpv4View(bytes.first(std::min(total_length, bytes.size())));
    }

    [[nodiscard]] std::uint8_t version() const noexcept { return packet_[0] >> 4; }
    [[nodiscard]] std::uint8_t ihl() const noexcept { return packet_[0] & 0x0f; }
    [[nodiscard]] std::size_t header_length() const noexcept { return static_cast<std::size_t>(ihl()) * 4; }
    [[nodiscard]] std::uint8_t dscp() const noexcept { return packet_[1] >> 2; }
    [[nodiscard]] std::uint8_t ecn() const noexcept { return packet_[1] & 0x03; }
    [[nodiscard]] std::uint16_t total_length() const noexcept { return load_be16(&packet_[2]); }
    [[nodiscard]] std::uint16_t identification() const noexcept { return load_be16(&packet_[4]); }
    [[nodiscard]] bool dont_fragment() const noexcept { return (packet_[6] & 0x40) != 0; }
    [[nodiscard]] bool more_fragments() const noexcept { return (packet_[6] & 0x20) != 0; }
    // In 8-byte units, as on the wire.
    [[nodiscard]] std::uint16_t fragment_offset() const noexcept { return load_be16(&packet_[6]) & 0x1fff; }
    // True for any fragment, first or later: MF set or a non-zero offset.
    [[nodiscard]] bool is_fragment() const noexcept { return more_fragments() || fragment_offset() != 0; }
    [[nodiscard]] std::uint8_t ttl() const noexcept { return packet_[8]; }
    [[nodiscard]] std::uint8_t protocol() const noexcept { return packet_[9]; }
    [[nodiscard]] std::uint16_t checksum() const noexcept { return load_be16(&packet_[10]); }
    [[nodiscard]] Ipv4Address source() const noexcept { return Ipv4Address::from_bytes(&packet_[12]); }
    [[nodiscard]] Ipv4Address destination() const noexcept { return Ipv4Address::from_bytes(&packet_[16]); }

    [[nodiscard]] Span header_bytes() const noexcept { return packet_.first(header_length()); }
    [[nodiscard]] Span options() const noexcept {
        return packet_.subspan(kIpv4MinHeaderLength, header_length() - kIpv4MinHeaderLength);
    }
    [[nodiscard]] Span packet() const noexcept { return packet_; }
    [[nodiscard]] Span payload() const noexcept { return packet_.subspan(header_length()); }

    [[nodiscard]] bool checksum_valid() const noexcept {
        return ipv4_header_checksum_ok(packet_.data(), header_length());
    }
    // The checksum the header should carry, computed as if the checksum field were zero.
    [[nodiscard]] std::uint16_t compute_checksum() const noexcept {
        const auto h = header_bytes();
        return checksum_finish(checksum_add(h.subspan(12), checksum_add(h.first(10))));
    }
    // Pseudo-header sum for the transport checksum of this packet's payload.
    [[nodiscard]] std::uint64_t pseudo_header_sum() const noexcept {
        return wire::pseudo_header_sum(source(), destination(), protocol(),
                                       static_cast<std::uint32_t>(payload().size()));
    }

    [[nodiscard]] Ipv4Header header() const noexcept {
        return Ipv4Header{dscp(), ecn(), total_length(), identification(), dont_fragment(), more_fragments(),
                          fragment_offset(), ttl(), protocol(), source(), destination(), options()};
    }

    // Setters keep the header checksum consistent by patching it (RFC 1624); a header whose
    // checksum was wrong stays wrong, so corruption is never laundered into a valid packet.
    void set_ttl(std::uint8_t ttl) const noexcept requires kMutable {
        set_word(8, static_cast<std::uint16_t>(ttl << 8 | protocol()));
    }
    // Decrements a non-zero TTL and returns the new value (0 stays 0).
    std::uint8_t decrement_ttl() const noexcept requires kMutable {
        if (ttl() != 0) set_ttl(static_cast<std::uint8_t>(ttl() - 1));
        return ttl();
    }
    void set_protocol(std::uint8_t protocol) const noexcept requires kMutable {
        set_word(8, static_cast<std::uint16_t>(ttl() << 8 | protocol));
    }
    void set_dscp(std::uint8_t dscp) const noexcept requires kMutable {
        set_word(0, static_cast<std::uint16_t>(packet_[0] << 8 | (dscp & 0x3f) << 2 | ecn()));
    }
    void set_ecn(std::uint8_t ecn) const noexcept requires kMutable {
        set_word(0, static_cast<std::uint16_t>(packet_[0] << 8 | dscp() << 2 | (ecn & 0x03)));
    }
    void set_identification(std::uint16_t id) const noexcept requires kMutable { set_word(4, id); }
    void set_dont_fragment(bool df) const noexcept requires kMutable {
        const std::uint16_t w = load_be16(&packet_[6]);
        set_word(6, static_cast<std::uint16_t>(df ? (w | 0x4000) : (w & ~0x4000)));
    }
    void set_source(Ipv4Address address) const noexcept requires kMutable { set_address(12, address); }
    void set_destination(Ipv4Address address) const noexcept requires kMutable { set_address(16, address); }
    // Recomputes the checksum from scratch (after editing options or raw bytes).
    void update_checksum() const noexcept requires kMutable { store_be16(&packet_[10], compute_checksum()); }

private:
    explicit BasicIpv4View(Span packet) noexcept : packet_(packet) {}

    void set_word(std::size_t offset, std::uint16_t value) const noexcept {
        const std::uint16_t old_value = load_be16(&packet_[offset]);
        store_be16(&packet_[offset], value);
        store_be16(&packet_[10], checksum_update16(checksum(), old_value, value));
    }
    void set_address(std::size_t offset, Ipv4Address address) const noexcept {
        const std::uint32_t old_value = load_be32(&packet_[offset]);
        address.copy_to(&packet_[offset]);
        store_be16(&packet_[10], checksum_update32(checksum(), old_value, address.value()));
    }

    Span packet_;
};

using Ipv4View = BasicIpv4View<const std::uint8_t>;
using MutableIpv4View = BasicIpv4View<std::uint8_t>;

}  // namespace andromeda::wire
