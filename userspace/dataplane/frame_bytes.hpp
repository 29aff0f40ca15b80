// Byte-level helpers for the per-packet express lanes: fixed-offset loads and compares the general
// path does through the wire views. They must agree with those views exactly; the property tests
// run every input through both paths and compare.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

#include "overlay/flow_hash.hpp"
#include "util/bit_cast.hpp"
#include "wire/addresses.hpp"
#include "wire/bytes.hpp"
#include "wire/ip_protocol.hpp"

namespace andromeda::dataplane::detail {

// 224.0.0.0/4 and 255.255.255.255: the fabric has no group membership to deliver them by.
[[nodiscard]] inline bool is_multicast_or_broadcast(wire::Ipv4Address a) noexcept {
    return (a.value() >> 28) == 0xe || a.value() == 0xffffffff;
}

// A frame's destination and source MAC (its first 12 bytes) as it holds them in memory, in
// two words: one 8-byte and one 4-byte load and compare check both MACs at once.
struct MacPair {
    std::uint64_t low = 0;   // bytes 0-7: the destination MAC and the source MAC's first two bytes
    std::uint32_t high = 0;  // bytes 8-11: the rest of the source MAC

    [[nodiscard]] static MacPair of(const std::uint8_t* frame) noexcept {
        MacPair m;
        std::memcpy(&m.low, frame, sizeof m.low);
        std::memcpy(&m.high, frame + 8, sizeof m.high);
        return m;
    }
    [[nodiscard]] static MacPair of(const wire::MacAddress& destination, const wire::MacAddress& source) noexcept {
        std::uint8_t bytes[12];
        destination.copy_to(bytes);
        source.copy_to(bytes + 6);
        return of(bytes);
    }
    // Whether `frame` starts with these two MACs.
    [[gnu::always_inline]] [[nodiscard]] bool starts(const std::uint8_t* frame) const noexcept {
        const MacPair f = of(frame);
        return ((f.low ^ low) | (f.high ^ high)) == 0;
    }
};

[[gnu::always_inline]] [[nodiscard]] inline std::uint32_t native_word(const std::uint8_t* p) noexcept {
    std::uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// An IPv4 address as native_word() reads it from a header (network byte order in memory), and
// the address such a word holds. The express lanes compare addresses as words and convert only to
// look one up.
[[nodiscard]] inline std::uint32_t word_of(wire::Ipv4Address address) noexcept {
    std::uint8_t bytes[4];
    wire::store_be32(bytes, address.value());
    return native_word(bytes);
}
[[gnu::always_inline]] [[nodiscard]] inline wire::Ipv4Address address_of(std::uint32_t word) noexcept {
    std::uint8_t bytes[4];
    std::memcpy(bytes, &word, sizeof bytes);
    return wire::Ipv4Address(wire::load_be32(bytes));
}

// Four bytes as native_word() reads them from memory, for checking several adjacent header
// fields with one masked compare: (native_word(p) & memory_word(masks...)) == memory_word(values...).
[[nodiscard]] constexpr std::uint32_t memory_word(std::uint8_t b0, std::uint8_t b1, std::uint8_t b2,
                                                  std::uint8_t b3) noexcept {
    if constexpr (std::endian::native == std::endian::little)
        return std::uint32_t{b0} | std::uint32_t{b1} << 8 | std::uint32_t{b2} << 16 | std::uint32_t{b3} << 24;
    else
        return std::uint32_t{b0} << 24 | std::uint32_t{b1} << 16 | std::uint32_t{b2} << 8 | std::uint32_t{b3};
}

// A UDP header read as one native 8-byte word, masked to the destination port and the checksum
// (bytes 2-3 and 6-7): FabricState::overlay_udp_word() is the overlay port with checksum 0.
inline constexpr std::uint64_t kUdpPortAndChecksumMask =
    util::bit_cast<std::uint64_t>(std::array<std::uint8_t, 8>{0, 0, 0xff, 0xff, 0, 0, 0xff, 0xff});

// An untagged IPv4 packet without options: ethertype 0x0800 and version/IHL 0x45, the four bytes
// from offset 12 of the Ethernet header (the fourth is the TOS, any value). One load: for frames
// that start on a cache line (UMEM chunks), not for ones 50 bytes in, where it would split.
[[gnu::always_inline]] [[nodiscard]] inline bool is_ipv4_no_options(const std::uint8_t* ethernet) noexcept {
    return (native_word(ethernet + 12) & memory_word(0xff, 0xff, 0xff, 0)) == memory_word(0x08, 0x00, 0x45, 0);
}

// overlay::flow_hash_of_frame for an IPv4 packet already validated (`header_length` and
// `packet_length` from its header), without parsing the frame again: ICMP hashes to 0 as the
// reference sends it; TCP/UDP ports count outside non-first fragments when present.
// `source_word` and `destination_word` are the addresses as native_word() reads them (the
// express lanes have them loaded already).
[[gnu::always_inline]] [[nodiscard]] inline std::uint16_t ipv4_flow_hash(const std::uint8_t* ip,
                                                                         std::size_t header_length,
                                                                         std::size_t packet_length,
                                                                         std::uint32_t source_word,
                                                                         std::uint32_t destination_word) noexcept {
    // The rule is shared/andromeda_overlay.h's (the BPF fast path's too); the ports are read only
    // when the packet holds them.
    const bool ports_present = packet_length >= header_length + 4;
    return andromeda_ipv4_flow_hash(address_of(source_word).value(), address_of(destination_word).value(), ip[9],
                                    static_cast<std::uint16_t>(wire::load_be16(ip + 6) & 0x1fff),
                                    ports_present ? wire::load_be32(ip + header_length) : 0, ports_present);
}

[[gnu::always_inline]] [[nodiscard]] inline std::uint16_t ipv4_flow_hash(const std::uint8_t* ip,
                                                                         std::size_t header_length,
                                                                         std::size_t packet_length) noexcept {
    return ipv4_flow_hash(ip, header_length, packet_length, native_word(ip + 12), native_word(ip + 16));
}

}  // namespace andromeda::dataplane::detail
