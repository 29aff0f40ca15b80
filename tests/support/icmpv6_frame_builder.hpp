// Ethernet + IPv6 + ICMPv6 test frames built byte by byte, for the Neighbor Discovery and ICMPv6
// echo tests: any type, code, hop limit and body, the checksum computed here (or broken on
// purpose), an optional fragment header. Like frame_builder.hpp it includes nothing from
// userspace/, so the code under test never makes its own input.
#pragma once

#include <arpa/inet.h>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "support/frame_builder.hpp"

namespace andromeda::test_support {

inline Ipv6Address ipv6(std::string_view text) {
    Ipv6Address a{};
    const std::string s(text);
    if (inet_pton(AF_INET6, s.c_str(), a.data()) != 1) throw std::invalid_argument("not an IPv6 address: " + s);
    return a;
}

// 33:33 + the group's low 32 bits (RFC 2464 7).
inline Mac multicast_mac(const Ipv6Address& group) { return {0x33, 0x33, group[12], group[13], group[14], group[15]}; }
// ff02::1:ffXX:XXXX.
inline Ipv6Address solicited_node(const Ipv6Address& a) {
    return {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff, a[13], a[14], a[15]};
}

namespace icmpv6 {
inline constexpr std::uint8_t kEchoRequest = 128;
inline constexpr std::uint8_t kRouterSolicitation = 133;
inline constexpr std::uint8_t kRouterAdvertisement = 134;
inline constexpr std::uint8_t kNeighborSolicitation = 135;
inline constexpr std::uint8_t kNeighborAdvertisement = 136;
}  // namespace icmpv6

struct Icmpv6Frame {
    Mac src_mac{};
    Mac dst_mac{};
    std::vector<VlanTag> tags;
    Ipv6Address src{};
    Ipv6Address dst{};
    std::uint8_t hop_limit = 255;
    std::uint8_t traffic_class = 0;
    std::uint8_t type = icmpv6::kNeighborSolicitation;
    std::uint8_t code = 0;
    Bytes body;                     // everything after type, code and checksum
    bool fragment_header = false;   // an atomic fragment header (offset 0, M clear) before ICMPv6
    std::uint8_t next_header = 58;  // the upper layer the (last) header names
    bool break_checksum = false;
};

inline Bytes icmpv6_frame(const Icmpv6Frame& s) {
    const std::size_t message_length = 4 + s.body.size();
    const std::size_t extension = s.fragment_header ? 8 : 0;
    Bytes f = ethernet_frame(s.src_mac, s.dst_mac, 0x86dd, 40 + extension + message_length, s.tags);
    std::uint8_t* ip = f.data() + (f.size() - 40 - extension - message_length);
    put32(ip, 0x60000000u | static_cast<std::uint32_t>(s.traffic_class) << 20);
    put16(ip + 4, static_cast<std::uint16_t>(extension + message_length));
    ip[6] = s.fragment_header ? 44 : s.next_header;
    ip[7] = s.hop_limit;
    std::copy(s.src.begin(), s.src.end(), ip + 8);
    std::copy(s.dst.begin(), s.dst.end(), ip + 24);
    if (s.fragment_header) {
        ip[40] = s.next_header;
        put32(ip + 44, 0x12345678);
    }
    std::uint8_t* m = ip + 40 + extension;
    m[0] = s.type;
    m[1] = s.code;
    std::copy(s.body.begin(), s.body.end(), m + 4);
    const std::uint32_t pseudo = ones_sum(ip + 8, 32) + 58 + static_cast<std::uint32_t>(message_length);
    put16(m + 2,
          static_cast<std::uint16_t>(checksum_of(ones_sum(m, message_length, pseudo)) ^ (s.break_checksum ? 1 : 0)));
    return f;
}

// One ND option: type, length in 8-byte units, `data` zero-padded to a whole unit. `length_units`
// overrides the length field (0 for the malformed zero-length option).
inline Bytes nd_option(std::uint8_t type, const Bytes& data, int length_units = -1) {
    Bytes o((2 + data.size() + 7) / 8 * 8, 0);
    o[0] = type;
    o[1] = static_cast<std::uint8_t>(length_units >= 0 ? length_units : static_cast<int>(o.size() / 8));
    std::copy(data.begin(), data.end(), o.begin() + 2);
    return o;
}

inline Bytes link_layer_option(std::uint8_t type, const Mac& mac) {
    return nd_option(type, Bytes(mac.begin(), mac.end()));
}

// The body of a Neighbor Solicitation (reserved word, target) followed by `options`.
inline Bytes ns_body(const Ipv6Address& target, const Bytes& options = {}) {
    // Appended byte by byte: gcc 12 takes both a copy into a vector sized for it and an insert
    // that grows one for out-of-bounds writes (-Warray-bounds at -O3, -Wstringop-overflow at -O2).
    Bytes b(4, 0);
    b.reserve(20 + options.size());
    for (const std::uint8_t byte : target) b.push_back(byte);
    for (const std::uint8_t byte : options) b.push_back(byte);
    return b;
}

// The body of a Router Solicitation (reserved word) followed by `options`.
inline Bytes rs_body(const Bytes& options = {}) {
    Bytes b(4, 0);
    for (const std::uint8_t byte : options) b.push_back(byte);
    return b;
}

inline Bytes concat(std::initializer_list<Bytes> parts) {
    Bytes all;
    for (const Bytes& p : parts) all.insert(all.end(), p.begin(), p.end());
    return all;
}

}  // namespace andromeda::test_support
