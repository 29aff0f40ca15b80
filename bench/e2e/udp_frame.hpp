// Prebuilt Ethernet/IPv4/UDP frames for the end-to-end tools: valid IPv4 header and UDP
// checksums, so every hop (the kernel's and Andromeda's) accepts them as a tenant would send them.
#pragma once

#include <arpa/inet.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace andromeda::bench {

using Mac = std::array<std::uint8_t, 6>;

inline std::optional<Mac> parse_mac(const std::string& text) {
    Mac m{};
    unsigned b[6];
    if (std::sscanf(text.c_str(), "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6) return std::nullopt;
    for (int i = 0; i < 6; ++i) {
        if (b[i] > 0xff) return std::nullopt;
        m[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(b[i]);
    }
    return m;
}

// Network byte order; nullopt when not a dotted quad.
inline std::optional<std::uint32_t> parse_ipv4(const std::string& text) {
    in_addr a{};
    if (inet_pton(AF_INET, text.c_str(), &a) != 1) return std::nullopt;
    return a.s_addr;
}

struct UdpFrameSpec {
    Mac src_mac{}, dst_mac{};
    std::uint32_t src_ip = 0, dst_ip = 0;  // network byte order
    std::uint16_t src_port = 0, dst_port = 0;
    std::uint32_t frame_length = 60;  // Ethernet frame without FCS, at least 14 + 20 + 8
};

inline constexpr std::uint32_t kHeadersLength = 14 + 20 + 8;

// RFC 1071 one's-complement sum of 16-bit big-endian words, not yet folded or inverted.
inline std::uint32_t ones_sum(const std::uint8_t* p, std::size_t n, std::uint32_t sum = 0) {
    for (; n > 1; p += 2, n -= 2) sum += static_cast<std::uint32_t>(p[0] << 8 | p[1]);
    if (n == 1) sum += static_cast<std::uint32_t>(p[0] << 8);
    return sum;
}

inline std::uint16_t fold(std::uint32_t sum) {
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<std::uint16_t>(~sum & 0xffff);
}

inline void put16(std::uint8_t* p, std::uint16_t v) {
    p[0] = static_cast<std::uint8_t>(v >> 8);
    p[1] = static_cast<std::uint8_t>(v);
}

// The frame, payload filled with a counting pattern.
inline std::vector<std::uint8_t> build_udp_frame(const UdpFrameSpec& s) {
    const std::uint32_t length = s.frame_length < kHeadersLength ? kHeadersLength : s.frame_length;
    std::vector<std::uint8_t> f(length, 0);
    std::memcpy(&f[0], s.dst_mac.data(), 6);
    std::memcpy(&f[6], s.src_mac.data(), 6);
    put16(&f[12], 0x0800);
    std::uint8_t* ip = &f[14];
    const auto ip_length = static_cast<std::uint16_t>(length - 14);
    ip[0] = 0x45;
    put16(ip + 2, ip_length);
    put16(ip + 6, 0x4000);  // DF
    ip[8] = 64;
    ip[9] = 17;
    std::memcpy(ip + 12, &s.src_ip, 4);
    std::memcpy(ip + 16, &s.dst_ip, 4);
    put16(ip + 10, fold(ones_sum(ip, 20)));
    std::uint8_t* udp = ip + 20;
    const auto udp_length = static_cast<std::uint16_t>(ip_length - 20);
    put16(udp, s.src_port);
    put16(udp + 2, s.dst_port);
    put16(udp + 4, udp_length);
    for (std::uint32_t i = 8; i < udp_length; ++i) udp[i] = static_cast<std::uint8_t>(i);
    // Pseudo-header: source, destination, protocol, UDP length.
    std::uint32_t sum = ones_sum(ip + 12, 8);
    sum += 17 + udp_length;
    sum = ones_sum(udp, udp_length, sum);
    std::uint16_t check = fold(sum);
    put16(udp + 6, check == 0 ? 0xffff : check);
    return f;
}

}  // namespace andromeda::bench
