// Internet checksums: RFC 1071 full computation and RFC 1624 incremental updates.
//
// Convention: every checksum value here is the 16-bit number as it reads on the wire, i.e. what
// load_be16() returns for the checksum field and what store_be16() expects.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "wire/addresses.hpp"
#include "wire/bytes.hpp"

namespace andromeda::wire {

// One's-complement partial sum of `data` added to `sum`. The result is not folded and not
// inverted: chain several calls (pseudo-header, header, payload) and finish with
// checksum_finish(). A chained call must start at an even offset of the checksummed data,
// except that an odd-length piece may only be the last one.
[[nodiscard]] std::uint64_t checksum_add(ByteSpan data, std::uint64_t sum = 0) noexcept;

// Folds a partial sum to 16 bits and returns its one's complement: the value for the field.
[[nodiscard]] std::uint16_t checksum_finish(std::uint64_t sum) noexcept;

// Folds a partial sum to 16 bits without inverting it.
[[nodiscard]] std::uint16_t checksum_fold(std::uint64_t sum) noexcept;

// The RFC 1071 checksum of `data` alone (the IPv4 header checksum, ICMPv4).
[[nodiscard]] inline std::uint16_t internet_checksum(ByteSpan data) noexcept {
    return checksum_finish(checksum_add(data));
}

// Partial sums of the pseudo-headers that UDP/TCP (IPv4, RFC 768/793) and UDP/TCP/ICMPv6
// (RFC 8200 section 8.1) cover. `length` is the transport length (header + payload).
[[nodiscard]] std::uint64_t pseudo_header_sum(Ipv4Address src, Ipv4Address dst, std::uint8_t protocol,
                                              std::uint32_t length) noexcept;
[[nodiscard]] std::uint64_t pseudo_header_sum(const Ipv6Address& src, const Ipv6Address& dst,
                                              std::uint8_t next_header, std::uint32_t length) noexcept;

// True when `data` (including its checksum field) sums to 0xffff, i.e. the checksum verifies.
[[nodiscard]] inline bool checksum_verifies(ByteSpan data, std::uint64_t pseudo_sum = 0) noexcept {
    return checksum_fold(checksum_add(data, pseudo_sum)) == 0xffff;
}

// Whether an IPv4 header (IHL * 4 bytes, 20 to 60: whole 32-bit words) carries a valid checksum, inline
// for the per-packet path. The words are summed in native order (a sum is a multiple of 0xffff
// in either byte order or in neither) into 64 bits; since 2^16 = 1 modulo 0xffff, the
// one's-complement sum folds to 0xffff exactly when the plain sum is a non-zero multiple of
// 0xffff, which one modulo by a constant decides instead of a chain of dependent folds.
[[gnu::always_inline]] [[nodiscard]] inline bool ipv4_header_checksum_ok(const std::uint8_t* header,
                                                                         std::size_t length) noexcept {
    const auto word = [header](std::size_t i) noexcept {
        std::uint32_t w;
        std::memcpy(&w, header + i, sizeof w);
        return std::uint64_t{w};
    };
    // Five words, unrolled by hand for the option-less header the express lanes check (a constant
    // after inlining): the compilers kept the loop, a third of an express-lane checksum's cost.
    std::uint64_t sum = word(0) + word(4) + word(8) + word(12) + word(16);
    for (std::size_t i = 20; i + 4 <= length; i += 4) sum += word(i);
    // sum % 0xffff == 0 as a multiply by the inverse of 0xffff modulo 2^64 and a compare (the
    // multiples of an odd d are exactly the x with x * inverse(d) <= (2^64 - 1) / d). Written out
    // because GCC compiled the `%` to a 64-bit `div` where it judged the code cold, such as the
    // delivering express lane's inner header check.
    constexpr std::uint64_t kInverse = 0xfffefffefffeffffULL;
    static_assert(kInverse * 0xffffULL == 1);
    return sum * kInverse <= ~std::uint64_t{0} / 0xffff && sum != 0;
}

// RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'). Update checksum `old_checksum` after a 16-bit word
// of the covered data changed from `old_word` to `new_word`.
[[nodiscard]] inline std::uint16_t checksum_update16(std::uint16_t old_checksum, std::uint16_t old_word,
                                                     std::uint16_t new_word) noexcept {
    std::uint32_t sum = static_cast<std::uint16_t>(~old_checksum);
    sum += static_cast<std::uint16_t>(~old_word);
    sum += new_word;
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<std::uint16_t>(~sum);
}

// The same for a 32-bit quantity (an IPv4 address) that is 16-bit aligned in the covered data.
[[nodiscard]] inline std::uint16_t checksum_update32(std::uint16_t old_checksum, std::uint32_t old_value,
                                                     std::uint32_t new_value) noexcept {
    std::uint32_t sum = static_cast<std::uint16_t>(~old_checksum);
    sum += static_cast<std::uint16_t>(~old_value >> 16);
    sum += static_cast<std::uint16_t>(~old_value);
    sum += new_value >> 16;
    sum += new_value & 0xffff;
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<std::uint16_t>(~sum);
}

// UDP over IPv4 transmits a computed checksum of 0 as 0xffff (RFC 768); 0 means "no checksum".
// Incremental updates of a UDP checksum must skip a 0 field and map a 0 result to 0xffff.
[[nodiscard]] inline std::uint16_t udp_checksum_update16(std::uint16_t old_checksum, std::uint16_t old_word,
                                                         std::uint16_t new_word) noexcept {
    if (old_checksum == 0) return 0;
    const std::uint16_t c = checksum_update16(old_checksum, old_word, new_word);
    return c == 0 ? 0xffff : c;
}

[[nodiscard]] inline std::uint16_t udp_checksum_update32(std::uint16_t old_checksum, std::uint32_t old_value,
                                                         std::uint32_t new_value) noexcept {
    if (old_checksum == 0) return 0;
    const std::uint16_t c = checksum_update32(old_checksum, old_value, new_value);
    return c == 0 ? 0xffff : c;
}

// A TCP or UDP checksum that checksum offload left unfinished (the kernel's CHECKSUM_PARTIAL):
// the field holds the folded sum of the pseudo-header, which the device was to complete. Such a
// packet reaches the pipeline where a peer's kernel encapsulated it and no device finished it on
// the way: an underlay of veths (containers beside the host, nested setups, the test bed), when
// the receiver's kernel hands the packet to the pipeline (a security group's flow not in its
// kernel yet). Finishes the checksum of the IPv4 or IPv6 packet `ip` in place when its field holds
// exactly that sum and does not verify (a corrupted packet keeps its wrong checksum unless it
// happens to match, one in 65,536); true when it did. Unfragmented TCP and UDP only (IPv6: right
// after the fixed header, no extension headers); a UDP
// checksum of 0 (none) stays.
bool finish_offloaded_checksum(MutableByteSpan ip) noexcept;

}  // namespace andromeda::wire
