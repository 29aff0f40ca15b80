// Frame builders for the gateway and dataplane tests in wire's address types: well-formed
// Ethernet/ARP/IPv4/IPv6 frames with valid checksums, made byte by byte by support/frame_builder.hpp
// so the tests share no code with what they test (the wire types only carry the addresses).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "support/frame_builder.hpp"
#include "wire/addresses.hpp"
#include "wire/arp.hpp"
#include "wire/ethernet.hpp"
#include "wire/icmp.hpp"
#include "wire/ip_protocol.hpp"

namespace andromeda::testing {

using Bytes = std::vector<std::uint8_t>;

inline wire::MacAddress mac(std::string_view text) { return *wire::MacAddress::parse(text); }
inline wire::Ipv4Address ipv4(std::string_view text) { return *wire::Ipv4Address::parse(text); }
inline wire::Ipv6Address ipv6(std::string_view text) { return *wire::Ipv6Address::parse(text); }

inline const wire::MacAddress kBroadcast = mac("ff:ff:ff:ff:ff:ff");

struct Ipv4Spec {
    wire::MacAddress src_mac;
    wire::MacAddress dst_mac;
    wire::Ipv4Address src;
    wire::Ipv4Address dst;
    std::uint8_t protocol = wire::ip_protocol::kUdp;
    std::size_t payload = 32;  // bytes after the transport header (ICMP: after the 8-byte header)
    bool dont_fragment = false;
    bool more_fragments = false;
    std::uint16_t fragment_offset = 0;  // 8-byte units
    std::uint8_t ttl = 64;
    std::uint16_t id = 0x1234;
    std::uint16_t src_port = 40000;
    std::uint16_t dst_port = 4242;
    std::uint8_t icmp_type = wire::icmpv4_type::kEchoRequest;
    std::uint8_t icmp_code = 0;
    std::vector<wire::VlanTag> tags;
    Bytes options;          // a multiple of 4 bytes
    std::uint8_t fill = 0;  // payload byte i is fill + i
};

namespace detail {
inline test_support::Mac to_mac(const wire::MacAddress& m) { return m.bytes(); }
inline std::vector<test_support::VlanTag> to_tags(const std::vector<wire::VlanTag>& tags) {
    std::vector<test_support::VlanTag> out;
    for (const wire::VlanTag& t : tags) out.push_back({t.tpid, t.vlan_id, t.priority, t.drop_eligible});
    return out;
}
}  // namespace detail

inline Bytes ipv4_frame(const Ipv4Spec& s) {
    test_support::Ipv4Frame f;
    f.src_mac = detail::to_mac(s.src_mac);
    f.dst_mac = detail::to_mac(s.dst_mac);
    f.src = s.src.value();
    f.dst = s.dst.value();
    f.protocol = s.protocol;
    f.payload = s.payload;
    f.src_port = s.src_port;
    f.dst_port = s.dst_port;
    f.icmp_type = s.icmp_type;
    f.icmp_code = s.icmp_code;
    f.ttl = s.ttl;
    f.id = s.id;
    f.dont_fragment = s.dont_fragment;
    f.more_fragments = s.more_fragments;
    f.fragment_offset = s.fragment_offset;
    f.options = s.options;
    f.tags = detail::to_tags(s.tags);
    f.fill = s.fill;
    return test_support::ipv4_frame(f);
}

inline Bytes arp_frame(const wire::MacAddress& eth_src, const wire::MacAddress& eth_dst, const wire::ArpPacket& arp,
                       const std::vector<wire::VlanTag>& tags = {}) {
    const test_support::ArpPacket a{static_cast<std::uint16_t>(arp.operation), arp.sender_mac.bytes(), arp.sender_ip.value(),
                                    arp.target_mac.bytes(), arp.target_ip.value()};
    return test_support::arp_frame(eth_src.bytes(), eth_dst.bytes(), a, detail::to_tags(tags));
}

inline Bytes arp_request(const wire::MacAddress& sender_mac, wire::Ipv4Address sender_ip, wire::Ipv4Address target_ip) {
    return test_support::arp_request(sender_mac.bytes(), sender_ip.value(), target_ip.value());
}

// Ethernet + IPv6 + UDP with `payload` bytes, checksum filled in.
inline Bytes ipv6_udp_frame(const wire::MacAddress& src_mac, const wire::MacAddress& dst_mac,
                            const wire::Ipv6Address& src, const wire::Ipv6Address& dst, std::size_t payload) {
    return test_support::ipv6_udp_frame(src_mac.bytes(), dst_mac.bytes(), src.bytes(), dst.bytes(), payload);
}

}  // namespace andromeda::testing
