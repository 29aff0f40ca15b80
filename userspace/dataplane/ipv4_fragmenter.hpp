// IPv4 fragmentation (RFC 791 section 3.2, "An Example Fragmentation Procedure") of a tenant packet
// with DF clear that will not fit the overlay: split before encapsulation, so the outer packet is
// never fragmented (docs/wire-format.md) and the receiving tenant reassembles.
//
// Each fragment is a complete valid IPv4 packet: the first carries all of the original options,
// later ones only those with the "copied" flag; every fragment but the last carries a multiple of
// 8 data bytes; offsets and MF compose with an original that was itself a fragment.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "wire/bytes.hpp"
#include "wire/ipv4.hpp"

namespace andromeda::dataplane {

class Ipv4Fragmenter {
public:
    // `frame` is Ethernet (`ethernet_length` bytes, tags included) + the IPv4 packet `ip`, which
    // must lie inside it; `mtu` is the largest IP packet per fragment. valid() is false when the
    // MTU cannot hold the header plus 8 bytes of data, or the original's offset plus its length
    // exceeds the 65535-byte datagram limit.
    Ipv4Fragmenter(wire::ByteSpan frame, std::size_t ethernet_length, const wire::Ipv4View& ip,
                   std::size_t mtu) noexcept;

    [[nodiscard]] bool valid() const noexcept { return count_ != 0; }
    [[nodiscard]] std::size_t count() const noexcept { return count_; }
    // Frame length (Ethernet + IP) of fragment `index`.
    [[nodiscard]] std::size_t frame_length(std::size_t index) const noexcept;
    // Writes fragment `index` as a whole Ethernet frame at the start of `out`; returns its length,
    // or 0 when `out` is too small.
    std::size_t write(std::size_t index, wire::MutableByteSpan out) const noexcept;

private:
    [[nodiscard]] std::size_t data_offset(std::size_t index) const noexcept;
    [[nodiscard]] std::size_t data_length(std::size_t index) const noexcept;
    [[nodiscard]] std::size_t header_length(std::size_t index) const noexcept {
        return index == 0 ? first_header_length_ : later_header_length_;
    }

    wire::ByteSpan ethernet_;
    wire::ByteSpan header_;   // the original IPv4 header, options included
    wire::ByteSpan payload_;  // the original IPv4 payload
    std::uint16_t original_offset_ = 0;  // 8-byte units
    bool original_more_fragments_ = false;
    std::size_t first_header_length_ = 0;
    std::size_t later_header_length_ = 0;
    std::size_t first_data_ = 0;  // data bytes in the first fragment (a multiple of 8)
    std::size_t later_data_ = 0;  // data bytes in each later fragment but the last
    std::size_t count_ = 0;
    std::array<std::uint8_t, 40> later_options_{};  // the copied options, padded to 4 bytes
};

}  // namespace andromeda::dataplane
