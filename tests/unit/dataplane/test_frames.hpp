// Frame builders for the gateway and dataplane tests: well-formed Ethernet/ARP/IPv4/IPv6 frames
// with valid checksums, made with the wire builders so the tests share no code with the pipeline.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "wire/addresses.hpp"
#include "wire/arp.hpp"
#include "wire/checksum.hpp"
#include "wire/ethernet.hpp"
#include "wire/icmp.hpp"
#include "wire/ip_protocol.hpp"
#include "wire/ipv4.hpp"
#include "wire/ipv6.hpp"
#include "wire/udp.hpp"

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

inline std::size_t transport_header_length(std::uint8_t protocol) {
    switch (protocol) {
        case wire::ip_protocol::kUdp: return 8;
        case wire::ip_protocol::kTcp: return 20;
        case wire::ip_protocol::kIcmp: return 8;
        default: return 0;
    }
}

inline Bytes ethernet_frame(const wire::MacAddress& src, const wire::MacAddress& dst, std::uint16_t ethertype,
                            const std::vector<wire::VlanTag>& tags, std::size_t payload_length) {
    wire::EthernetHeader eth{dst, src, ethertype, {}, static_cast<std::uint8_t>(tags.size())};
    for (std::size_t i = 0; i < tags.size(); ++i) eth.tags[i] = tags[i];
    Bytes frame(eth.length() + payload_length);
    wire::write_ethernet_header(frame, eth);
    return frame;
}

// Writes the transport header and payload at `l4` (`length` bytes) and fills in its checksum.
inline void write_ipv4_transport(const Ipv4Spec& s, std::uint8_t* l4, std::size_t length) {
    const std::size_t header = transport_header_length(s.protocol);
    for (std::size_t i = header; i < length; ++i) l4[i] = static_cast<std::uint8_t>(s.fill + (i - header));
    const wire::MutableByteSpan span(l4, length);
    if (s.protocol == wire::ip_protocol::kUdp) {
        wire::write_udp_header(span, {s.src_port, s.dst_port, static_cast<std::uint16_t>(length), 0});
        wire::MutableUdpView::parse(span)->update_checksum(s.src, s.dst);
    } else if (s.protocol == wire::ip_protocol::kTcp) {
        std::fill(l4, l4 + 20, 0);
        wire::store_be16(l4, s.src_port);
        wire::store_be16(l4 + 2, s.dst_port);
        wire::store_be32(l4 + 4, 1000);
        l4[12] = 5 << 4;
        l4[13] = 0x18;  // PSH ACK
        wire::store_be16(l4 + 14, 64240);
        const auto sum = wire::pseudo_header_sum(s.src, s.dst, wire::ip_protocol::kTcp, static_cast<std::uint32_t>(length));
        wire::store_be16(l4 + 16, wire::checksum_finish(wire::checksum_add(span, sum)));
    } else if (s.protocol == wire::ip_protocol::kIcmp) {
        wire::write_icmp_header(span, {s.icmp_type, s.icmp_code, 0, 0x0b0c0001});
        wire::MutableIcmpv4View::parse(span)->update_checksum();
    }
}

inline Bytes ipv4_frame(const Ipv4Spec& s) {
    const std::size_t l4_length = transport_header_length(s.protocol) + s.payload;
    const std::size_t ip_length = 20 + s.options.size() + l4_length;
    Bytes frame = ethernet_frame(s.src_mac, s.dst_mac, wire::ethertype::kIpv4, s.tags, ip_length);
    const std::size_t eth_length = frame.size() - ip_length;
    wire::Ipv4Header h;
    h.total_length = static_cast<std::uint16_t>(ip_length);
    h.identification = s.id;
    h.dont_fragment = s.dont_fragment;
    h.more_fragments = s.more_fragments;
    h.fragment_offset = s.fragment_offset;
    h.ttl = s.ttl;
    h.protocol = s.protocol;
    h.source = s.src;
    h.destination = s.dst;
    h.options = s.options;
    wire::write_ipv4_header(wire::MutableByteSpan(frame).subspan(eth_length), h);
    write_ipv4_transport(s, frame.data() + eth_length + h.header_length(), l4_length);
    return frame;
}

inline Bytes arp_frame(const wire::MacAddress& eth_src, const wire::MacAddress& eth_dst, const wire::ArpPacket& arp,
                       const std::vector<wire::VlanTag>& tags = {}) {
    Bytes frame = ethernet_frame(eth_src, eth_dst, wire::ethertype::kArp, tags, wire::kArpLength);
    wire::write_arp(wire::MutableByteSpan(frame).subspan(frame.size() - wire::kArpLength), arp);
    return frame;
}

inline Bytes arp_request(const wire::MacAddress& sender_mac, wire::Ipv4Address sender_ip, wire::Ipv4Address target_ip) {
    return arp_frame(sender_mac, kBroadcast, wire::make_arp_request(sender_mac, sender_ip, target_ip));
}

// Ethernet + IPv6 + UDP with `payload` bytes, checksum filled in.
inline Bytes ipv6_udp_frame(const wire::MacAddress& src_mac, const wire::MacAddress& dst_mac,
                            const wire::Ipv6Address& src, const wire::Ipv6Address& dst, std::size_t payload) {
    const std::size_t udp_length = 8 + payload;
    Bytes frame = ethernet_frame(src_mac, dst_mac, wire::ethertype::kIpv6, {}, 40 + udp_length);
    wire::Ipv6Header h;
    h.payload_length = static_cast<std::uint16_t>(udp_length);
    h.next_header = wire::ip_protocol::kUdp;
    h.source = src;
    h.destination = dst;
    wire::write_ipv6_header(wire::MutableByteSpan(frame).subspan(14), h);
    std::uint8_t* udp = frame.data() + 14 + 40;
    for (std::size_t i = 0; i < payload; ++i) udp[8 + i] = static_cast<std::uint8_t>(i);
    const wire::MutableByteSpan span(udp, udp_length);
    wire::write_udp_header(span, {5000, 6000, static_cast<std::uint16_t>(udp_length), 0});
    wire::MutableUdpView::parse(span)->update_checksum(src, dst);
    return frame;
}

}  // namespace andromeda::testing
