// UDP (RFC 768) over IPv4 and IPv6: a zero-copy view, checksum verify/compute against either
// pseudo-header, incremental patches for port and address rewrites, and a builder.
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

inline constexpr std::size_t kUdpHeaderLength = 8;

struct UdpHeader {
    std::uint16_t source_port = 0;
    std::uint16_t destination_port = 0;
    std::uint16_t length = 0;            // header + payload, bytes
    std::uint16_t checksum = 0;          // as on the wire; 0 = none (IPv4 only)
    friend constexpr bool operator==(const UdpHeader&, const UdpHeader&) = default;
};

// Writes the 8-byte header at the start of `out` with the given checksum field (fill it in later
// with MutableUdpView::update_checksum). Returns 8, or 0 when `out` is too small or length < 8.
std::size_t write_udp_header(MutableByteSpan out, const UdpHeader& header) noexcept;

// A view over one UDP datagram, given the IP payload. parse() checks the length field against
// the buffer; datagram() and payload() end at that length. Byte is `const std::uint8_t`
// (UdpView) or `std::uint8_t` (MutableUdpView).
template <class Byte>
class BasicUdpView {
    static constexpr bool kMutable = !std::is_const_v<Byte>;

public:
    using Span = std::span<Byte>;

    static Parsed<BasicUdpView> parse(Span ip_payload) noexcept {
        if (ip_payload.size() < kUdpHeaderLength) return ParseError::Truncated;
        const std::size_t length = load_be16(&ip_payload[4]);
        if (length < kUdpHeaderLength) return ParseError::BadLength;
        if (ip_payload.size() < length) return ParseError::Truncated;
        return BasicUdpView(ip_payload.first(length));
    }

    [[nodiscard]] std::uint16_t source_port() const noexcept { return load_be16(&datagram_[0]); }
    [[nodiscard]] std::uint16_t destination_port() const noexcept { return load_be16(&datagram_[2]); }
    [[nodiscard]] std::uint16_t length() const noexcept { return load_be16(&datagram_[4]); }
    [[nodiscard]] std::uint16_t checksum() const noexcept { return load_be16(&datagram_[6]); }
    [[nodiscard]] Span datagram() const noexcept { return datagram_; }
    [[nodiscard]] Span payload() const noexcept { return datagram_.subspan(kUdpHeaderLength); }
    [[nodiscard]] UdpHeader header() const noexcept {
        return UdpHeader{source_port(), destination_port(), length(), checksum()};
    }

    // The checksum this datagram should carry (never 0: a computed 0 is sent as 0xffff).
    [[nodiscard]] std::uint16_t compute_checksum(Ipv4Address source, Ipv4Address destination) const noexcept {
        return compute_with(pseudo_header_sum(source, destination, ip_protocol::kUdp, length()));
    }
    [[nodiscard]] std::uint16_t compute_checksum(const Ipv6Address& source,
                                                 const Ipv6Address& destination) const noexcept {
        return compute_with(pseudo_header_sum(source, destination, ip_protocol::kUdp, length()));
    }
    // Over IPv4 a zero checksum means "not computed" and is accepted.
    [[nodiscard]] bool checksum_valid(Ipv4Address source, Ipv4Address destination) const noexcept {
        return checksum() == 0 ||
               checksum_verifies(datagram_, pseudo_header_sum(source, destination, ip_protocol::kUdp, length()));
    }
    // Over IPv6 the checksum is mandatory (RFC 8200 section 8.1), so zero is invalid.
    [[nodiscard]] bool checksum_valid(const Ipv6Address& source, const Ipv6Address& destination) const noexcept {
        return checksum() != 0 &&
               checksum_verifies(datagram_, pseudo_header_sum(source, destination, ip_protocol::kUdp, length()));
    }

    // Port setters patch a present checksum and leave an absent (0) one absent.
    void set_source_port(std::uint16_t port) const noexcept requires kMutable { set_word(0, port); }
    void set_destination_port(std::uint16_t port) const noexcept requires kMutable { set_word(2, port); }
    // Call after rewriting an address in the enclosing IP header: the pseudo-header changed.
    void patch_checksum_for_address(Ipv4Address old_address, Ipv4Address new_address) const noexcept
        requires kMutable {
        store_be16(&datagram_[6], udp_checksum_update32(checksum(), old_address.value(), new_address.value()));
    }
    void patch_checksum_for_address(const Ipv6Address& old_address, const Ipv6Address& new_address) const noexcept
        requires kMutable {
        std::uint16_t c = checksum();
        for (std::size_t i = 0; i < 16; i += 2)
            c = udp_checksum_update16(c, load_be16(&old_address.bytes()[i]), load_be16(&new_address.bytes()[i]));
        store_be16(&datagram_[6], c);
    }
    void update_checksum(Ipv4Address source, Ipv4Address destination) const noexcept requires kMutable {
        store_be16(&datagram_[6], compute_checksum(source, destination));
    }
    void update_checksum(const Ipv6Address& source, const Ipv6Address& destination) const noexcept
        requires kMutable {
        store_be16(&datagram_[6], compute_checksum(source, destination));
    }
    // IPv4 only: send without a checksum (tunnels, RFC 768 / RFC 6935 rationale).
    void clear_checksum() const noexcept requires kMutable { store_be16(&datagram_[6], 0); }

private:
    explicit BasicUdpView(Span datagram) noexcept : datagram_(datagram) {}

    [[nodiscard]] std::uint16_t compute_with(std::uint64_t pseudo_sum) const noexcept {
        // Sum around the checksum field (bytes 6-7) so the view need not modify the datagram.
        const std::uint64_t sum = checksum_add(datagram_.subspan(8), checksum_add(datagram_.first(6), pseudo_sum));
        const std::uint16_t c = checksum_finish(sum);
        return c == 0 ? 0xffff : c;
    }
    void set_word(std::size_t offset, std::uint16_t value) const noexcept {
        const std::uint16_t old_value = load_be16(&datagram_[offset]);
        store_be16(&datagram_[offset], value);
        store_be16(&datagram_[6], udp_checksum_update16(checksum(), old_value, value));
    }

    Span datagram_;
};

using UdpView = BasicUdpView<const std::uint8_t>;
using MutableUdpView = BasicUdpView<std::uint8_t>;

}  // namespace andromeda::wire
