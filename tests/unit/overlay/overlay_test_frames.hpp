// Inner and outer frames for the overlay tests, built byte by byte here so that the code under
// test is never used to make its own expected values.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "overlay/outer_template.hpp"
#include "wire/bytes.hpp"
#include "wire/checksum.hpp"

namespace andromeda::overlay::testing {

using Bytes = std::vector<std::uint8_t>;

inline constexpr std::uint32_t kTenantA = 0x0a00000a;  // 10.0.0.10
inline constexpr std::uint32_t kTenantB = 0x0a000014;  // 10.0.0.20

// Ethernet (02:00:00:00:00:20 <- 02:00:00:00:00:10) + IPv4 (IHL 5, DF unless fragmented) + an
// L4 header whose first four bytes are the ports (for TCP/UDP) + `payload_length` bytes.
inline Bytes make_ipv4_frame(std::uint32_t src, std::uint32_t dst, std::uint8_t protocol, std::uint16_t src_port,
                             std::uint16_t dst_port, std::size_t payload_length = 0,
                             std::uint16_t fragment_field = 0x4000) {
    const std::size_t l4_length = (protocol == 6 ? 20 : 8) + payload_length;
    Bytes f(14 + 20 + l4_length, 0);
    const std::uint8_t macs[12] = {2, 0, 0, 0, 0, 0x20, 2, 0, 0, 0, 0, 0x10};
    std::copy(std::begin(macs), std::end(macs), f.begin());
    wire::store_be16(&f[12], 0x0800);
    std::uint8_t* ip = &f[14];
    ip[0] = 0x45;
    wire::store_be16(ip + 2, static_cast<std::uint16_t>(20 + l4_length));
    wire::store_be16(ip + 4, 0x1234);
    wire::store_be16(ip + 6, fragment_field);
    ip[8] = 64;
    ip[9] = protocol;
    wire::store_be32(ip + 12, src);
    wire::store_be32(ip + 16, dst);
    wire::store_be16(ip + 10, wire::internet_checksum(wire::ByteSpan(ip, 20)));
    wire::store_be16(ip + 20, src_port);
    wire::store_be16(ip + 22, dst_port);
    for (std::size_t i = 0; i < payload_length; ++i) f[f.size() - payload_length + i] = static_cast<std::uint8_t>(i);
    return f;
}

// A random inner frame: half the time a well-formed IPv4 TCP/UDP/ICMP frame with random
// addresses, ports and payload, otherwise random bytes of random length (14..1514).
inline Bytes random_inner_frame(std::mt19937& rng) {
    std::uniform_int_distribution<int> byte(0, 255);
    if (rng() % 2 == 0) {
        const std::uint8_t protocols[] = {1, 6, 17};
        Bytes f = make_ipv4_frame(static_cast<std::uint32_t>(rng()), static_cast<std::uint32_t>(rng()),
                                  protocols[rng() % 3], static_cast<std::uint16_t>(rng()),
                                  static_cast<std::uint16_t>(rng()), rng() % 1400);
        for (std::size_t i = 54; i < f.size(); ++i) f[i] = static_cast<std::uint8_t>(byte(rng));
        return f;
    }
    Bytes f(14 + rng() % 1501);
    for (auto& b : f) b = static_cast<std::uint8_t>(byte(rng));
    return f;
}

inline OuterTemplateConfig test_template_config(EncapKind kind, bool udp_checksum = false) {
    OuterTemplateConfig c;
    c.kind = kind;
    c.src_mac = *wire::MacAddress::parse("02:00:00:00:a1:01");
    c.dst_mac = *wire::MacAddress::parse("02:00:00:00:a1:02");
    c.src_ip = *wire::Ipv4Address::parse("192.168.1.1");
    c.dst_ip = *wire::Ipv4Address::parse("192.168.1.2");
    c.udp_checksum = udp_checksum;
    return c;
}

// The same over an IPv6 underlay, fd00:1::1 -> fd00:1::2 (`vlan_id` 0: untagged).
inline OuterTemplateConfig test_template_config6(EncapKind kind, std::uint16_t vlan_id = 0) {
    OuterTemplateConfig c = test_template_config(kind);
    c.ipv6 = true;
    c.src_ip6 = *wire::Ipv6Address::parse("fd00:1::1");
    c.dst_ip6 = *wire::Ipv6Address::parse("fd00:1::2");
    c.vlan_id = vlan_id;
    return c;
}

}  // namespace andromeda::overlay::testing
