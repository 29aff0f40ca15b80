// TCP (RFC 9293) headers with options: a zero-copy view, checksum verify/compute over the IPv4 or
// IPv6 pseudo-header, incremental patches for NAT rewrites (RFC 1624), and a builder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "wire/addresses.hpp"
#include "wire/bytes.hpp"
#include "wire/checksum.hpp"
#include "wire/ip_protocol.hpp"
#include "wire/parse_result.hpp"

namespace andromeda::wire {

inline constexpr std::size_t kTcpMinHeaderLength = 20;
inline constexpr std::size_t kTcpMaxHeaderLength = 60;

namespace tcp_flag {
inline constexpr std::uint8_t kFin = 0x01;
inline constexpr std::uint8_t kSyn = 0x02;
inline constexpr std::uint8_t kRst = 0x04;
inline constexpr std::uint8_t kPsh = 0x08;
inline constexpr std::uint8_t kAck = 0x10;
inline constexpr std::uint8_t kUrg = 0x20;
inline constexpr std::uint8_t kEce = 0x40;
inline constexpr std::uint8_t kCwr = 0x80;
}  // namespace tcp_flag

// The decoded fields of a TCP header; also the input of write_tcp_header().
struct TcpHeader {
    std::uint16_t source_port = 0;
    std::uint16_t destination_port = 0;
    std::uint32_t sequence = 0;
    std::uint32_t acknowledgment = 0;
    std::uint8_t flags = 0;              // tcp_flag bits
    std::uint16_t window = 0;
    std::uint16_t checksum = 0;          // as on the wire
    std::uint16_t urgent_pointer = 0;
    ByteSpan options;                    // raw option bytes; length a multiple of 4, at most 40

    [[nodiscard]] std::size_t header_length() const noexcept { return kTcpMinHeaderLength + options.size(); }
};

// Writes the header (with options and the given checksum field) at the start of `out`. Returns
// the header length, or 0 when `out` is too small or the options are not a multiple of 4 bytes
// or longer than 40. Fill the checksum in afterwards with MutableTcpView::update_checksum.
std::size_t write_tcp_header(MutableByteSpan out, const TcpHeader& header) noexcept;

// A view over one TCP segment, given the IP payload (which must end where the IP packet ends:
// TCP has no length field of its own, the segment length is the span's size). parse() checks the
// data offset against the segment. Byte is `const std::uint8_t` (TcpView) or `std::uint8_t`.
template <class Byte>
class BasicTcpView {
    static constexpr bool kMutable = !std::is_const_v<Byte>;

public:
    using Span = std::span<Byte>;

    static Parsed<BasicTcpView> parse(Span segment) noexcept {
        if (segment.size() < kTcpMinHeaderLength) return ParseError::Truncated;
        const std::size_t header_length = static_cast<std::size_t>(segment[12] >> 4) * 4;
        if (header_length < kTcpMinHeaderLength) return ParseError::BadHeaderLength;
        if (segment.size() < header_length) return ParseError::Truncated;
        return BasicTcpView(segment);
    }

    [[nodiscard]] std::uint16_t source_port() const noexcept { return load_be16(&segment_[0]); }
    [[nodiscard]] std::uint16_t destination_port() const noexcept { return load_be16(&segment_[2]); }
    [[nodiscard]] std::uint32_t sequence() const noexcept { return load_be32(&segment_[4]); }
    [[nodiscard]] std::uint32_t acknowledgment() const noexcept { return load_be32(&segment_[8]); }
    [[nodiscard]] std::uint8_t data_offset() const noexcept { return segment_[12] >> 4; }
    [[nodiscard]] std::size_t header_length() const noexcept { return static_cast<std::size_t>(data_offset()) * 4; }
    [[nodiscard]] std::uint8_t flags() const noexcept { return segment_[13]; }
    [[nodiscard]] bool has_flags(std::uint8_t mask) const noexcept { return (flags() & mask) == mask; }
    [[nodiscard]] std::uint16_t window() const noexcept { return load_be16(&segment_[14]); }
    [[nodiscard]] std::uint16_t checksum() const noexcept { return load_be16(&segment_[16]); }
    [[nodiscard]] std::uint16_t urgent_pointer() const noexcept { return load_be16(&segment_[18]); }
    [[nodiscard]] Span options() const noexcept {
        return segment_.subspan(kTcpMinHeaderLength, header_length() - kTcpMinHeaderLength);
    }
    [[nodiscard]] Span segment() const noexcept { return segment_; }
    [[nodiscard]] Span payload() const noexcept { return segment_.subspan(header_length()); }
    [[nodiscard]] TcpHeader header() const noexcept {
        return TcpHeader{source_port(), destination_port(), sequence(), acknowledgment(), flags(),
                         window(), checksum(), urgent_pointer(), options()};
    }

    [[nodiscard]] std::uint16_t compute_checksum(Ipv4Address source, Ipv4Address destination) const noexcept {
        return compute_with(pseudo_header_sum(source, destination, ip_protocol::kTcp, segment_length()));
    }
    [[nodiscard]] std::uint16_t compute_checksum(const Ipv6Address& source,
                                                 const Ipv6Address& destination) const noexcept {
        return compute_with(pseudo_header_sum(source, destination, ip_protocol::kTcp, segment_length()));
    }
    [[nodiscard]] bool checksum_valid(Ipv4Address source, Ipv4Address destination) const noexcept {
        return checksum_verifies(segment_, pseudo_header_sum(source, destination, ip_protocol::kTcp, segment_length()));
    }
    [[nodiscard]] bool checksum_valid(const Ipv6Address& source, const Ipv6Address& destination) const noexcept {
        return checksum_verifies(segment_, pseudo_header_sum(source, destination, ip_protocol::kTcp, segment_length()));
    }

    // Setters patch the checksum incrementally (RFC 1624).
    void set_source_port(std::uint16_t port) const noexcept requires kMutable { set_word(0, port); }
    void set_destination_port(std::uint16_t port) const noexcept requires kMutable { set_word(2, port); }
    void set_sequence(std::uint32_t value) const noexcept requires kMutable { set_dword(4, value); }
    void set_acknowledgment(std::uint32_t value) const noexcept requires kMutable { set_dword(8, value); }
    void set_flags(std::uint8_t flags) const noexcept requires kMutable {
        set_word(12, static_cast<std::uint16_t>(segment_[12] << 8 | flags));
    }
    void set_window(std::uint16_t window) const noexcept requires kMutable { set_word(14, window); }
    // Call after rewriting an address in the enclosing IP header: the pseudo-header changed.
    void patch_checksum_for_address(Ipv4Address old_address, Ipv4Address new_address) const noexcept
        requires kMutable {
        store_be16(&segment_[16], checksum_update32(checksum(), old_address.value(), new_address.value()));
    }
    void patch_checksum_for_address(const Ipv6Address& old_address, const Ipv6Address& new_address) const noexcept
        requires kMutable {
        std::uint16_t c = checksum();
        for (std::size_t i = 0; i < 16; i += 2)
            c = checksum_update16(c, load_be16(&old_address.bytes()[i]), load_be16(&new_address.bytes()[i]));
        store_be16(&segment_[16], c);
    }
    void update_checksum(Ipv4Address source, Ipv4Address destination) const noexcept requires kMutable {
        store_be16(&segment_[16], compute_checksum(source, destination));
    }
    void update_checksum(const Ipv6Address& source, const Ipv6Address& destination) const noexcept
        requires kMutable {
        store_be16(&segment_[16], compute_checksum(source, destination));
    }

private:
    explicit BasicTcpView(Span segment) noexcept : segment_(segment) {}

    [[nodiscard]] std::uint32_t segment_length() const noexcept { return static_cast<std::uint32_t>(segment_.size()); }
    [[nodiscard]] std::uint16_t compute_with(std::uint64_t pseudo_sum) const noexcept {
        // Sum around the checksum field (bytes 16-17) so the view need not modify the segment.
        return checksum_finish(checksum_add(segment_.subspan(18), checksum_add(segment_.first(16), pseudo_sum)));
    }
    void set_word(std::size_t offset, std::uint16_t value) const noexcept {
        const std::uint16_t old_value = load_be16(&segment_[offset]);
        store_be16(&segment_[offset], value);
        store_be16(&segment_[16], checksum_update16(checksum(), old_value, value));
    }
    void set_dword(std::size_t offset, std::uint32_t value) const noexcept {
        const std::uint32_t old_value = load_be32(&segment_[offset]);
        store_be32(&segment_[offset], value);
        store_be16(&segment_[16], checksum_update32(checksum(), old_value, value));
    }

    Span segment_;
};

using TcpView = BasicTcpView<const std::uint8_t>;
using MutableTcpView = BasicTcpView<std::uint8_t>;

}  // namespace andromeda::wire
