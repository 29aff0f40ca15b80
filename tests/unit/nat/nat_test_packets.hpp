// Packet builders and checkers for the NAT tests: IPv4 TCP/UDP/ICMP packets with correct
// checksums, built with the wire builders, and a full-recompute checker for every checksum a
// NAT rewrite touches.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "nat/nat_engine.hpp"
#include "wire/icmp.hpp"
#include "wire/ipv4.hpp"
#include "wire/tcp.hpp"
#include "wire/udp.hpp"

namespace andromeda::nat::test {

using wire::Ipv4Address;
using Bytes = std::vector<std::uint8_t>;

inline Ipv4Address ip(const char* text) { return *Ipv4Address::parse(text); }
inline TimePoint at(double seconds) {
    return TimePoint{} + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds));
}

inline Bytes ipv4_packet(Ipv4Address src, Ipv4Address dst, std::uint8_t protocol, std::size_t transport_length) {
    Bytes packet(wire::kIpv4MinHeaderLength + transport_length);
    wire::Ipv4Header h;
    h.total_length = static_cast<std::uint16_t>(packet.size());
    h.protocol = protocol;
    h.source = src;
    h.destination = dst;
    h.identification = 0x4242;
    h.dont_fragment = true;
    wire::write_ipv4_header(packet, h);
    return packet;
}

inline Bytes udp_packet(Ipv4Address src, std::uint16_t sport, Ipv4Address dst, std::uint16_t dport,
                        std::size_t payload = 16, bool with_checksum = true) {
    Bytes packet = ipv4_packet(src, dst, wire::ip_protocol::kUdp, wire::kUdpHeaderLength + payload);
    auto l4 = wire::MutableByteSpan(packet).subspan(20);
    for (std::size_t i = 0; i < payload; ++i) l4[8 + i] = static_cast<std::uint8_t>(i * 7 + sport);
    wire::write_udp_header(l4, {sport, dport, static_cast<std::uint16_t>(8 + payload), 0});
    if (with_checksum) wire::MutableUdpView::parse(l4)->update_checksum(src, dst);
    return packet;
}

inline Bytes tcp_packet(Ipv4Address src, std::uint16_t sport, Ipv4Address dst, std::uint16_t dport,
                        std::uint8_t flags, std::size_t payload = 0) {
    Bytes packet = ipv4_packet(src, dst, wire::ip_protocol::kTcp, wire::kTcpMinHeaderLength + payload);
    auto l4 = wire::MutableByteSpan(packet).subspan(20);
    wire::TcpHeader h;
    h.source_port = sport;
    h.destination_port = dport;
    h.sequence = 1000u + sport;
    h.acknowledgment = (flags & wire::tcp_flag::kAck) ? 5000u + dport : 0u;
    h.flags = flags;
    h.window = 65535;
    wire::write_tcp_header(l4, h);
    for (std::size_t i = 0; i < payload; ++i) l4[20 + i] = static_cast<std::uint8_t>(i);
    wire::MutableTcpView::parse(l4)->update_checksum(src, dst);
    return packet;
}

inline Bytes icmp_echo(Ipv4Address src, Ipv4Address dst, std::uint8_t type, std::uint16_t id, std::uint16_t seq,
                       std::size_t payload = 24) {
    Bytes packet = ipv4_packet(src, dst, wire::ip_protocol::kIcmp, wire::kIcmpHeaderLength + payload);
    auto l4 = wire::MutableByteSpan(packet).subspan(20);
    wire::write_icmp_header(l4, wire::icmp_echo(type, id, seq));
    for (std::size_t i = 0; i < payload; ++i) l4[8 + i] = static_cast<std::uint8_t>(0x30 + i);
    wire::MutableIcmpv4View::parse(l4)->update_checksum();
    return packet;
}

// An ICMP error from `router` to `to` quoting the first `quote` bytes of `offending`.
inline Bytes icmp_error(Ipv4Address router, Ipv4Address to, std::uint8_t type, std::uint8_t code,
                        std::uint32_t rest_of_header, const Bytes& offending, std::size_t quote) {
    quote = std::min(quote, offending.size());
    Bytes packet = ipv4_packet(router, to, wire::ip_protocol::kIcmp, wire::kIcmpHeaderLength + quote);
    auto l4 = wire::MutableByteSpan(packet).subspan(20);
    wire::write_icmp_header(l4, {type, code, 0, rest_of_header});
    std::copy_n(offending.begin(), quote, l4.begin() + 8);
    wire::MutableIcmpv4View::parse(l4)->update_checksum();
    return packet;
}

struct Endpoints {
    Ipv4Address source;
    std::uint16_t source_port = 0;  // ICMP echo: identifier
    Ipv4Address destination;
    std::uint16_t destination_port = 0;
    friend bool operator==(const Endpoints&, const Endpoints&) = default;
};

inline std::ostream& operator<<(std::ostream& os, const Endpoints& e) {
    return os << e.source.to_string() << ":" << e.source_port << " -> " << e.destination.to_string() << ":"
              << e.destination_port;
}

inline Endpoints endpoints(const Bytes& packet) {
    const auto v = wire::Ipv4View::parse(packet);
    Endpoints e{v->source(), 0, v->destination(), 0};
    const auto l4 = v->payload();
    if (v->protocol() == wire::ip_protocol::kIcmp) {
        e.source_port = e.destination_port = wire::load_be16(&l4[4]);
    } else {
        e.source_port = wire::load_be16(&l4[0]);
        e.destination_port = wire::load_be16(&l4[2]);
    }
    return e;
}

// Every checksum of the packet verifies by full recomputation: IPv4 header, TCP/UDP (over the
// pseudo-header; UDP 0 accepted), ICMP, and for an ICMP error the quoted IPv4 header.
inline ::testing::AssertionResult checksums_valid(const Bytes& packet) {
    const auto v = wire::Ipv4View::parse(packet);
    if (!v) return ::testing::AssertionFailure() << "not IPv4";
    if (!v->checksum_valid()) return ::testing::AssertionFailure() << "IPv4 header checksum";
    switch (v->protocol()) {
        case wire::ip_protocol::kTcp:
            if (!wire::TcpView::parse(v->payload())->checksum_valid(v->source(), v->destination()))
                return ::testing::AssertionFailure() << "TCP checksum";
            break;
        case wire::ip_protocol::kUdp:
            if (!wire::UdpView::parse(v->payload())->checksum_valid(v->source(), v->destination()))
                return ::testing::AssertionFailure() << "UDP checksum";
            break;
        case wire::ip_protocol::kIcmp: {
            const auto icmp = wire::Icmpv4View::parse(v->payload());
            if (!icmp->checksum_valid()) return ::testing::AssertionFailure() << "ICMP checksum";
            if (icmp->is_error()) {
                const auto inner = wire::Ipv4View::parse_quoted(icmp->original_datagram());
                if (!inner || !inner->checksum_valid()) return ::testing::AssertionFailure() << "quoted IPv4 checksum";
            }
            break;
        }
        default: break;
    }
    return ::testing::AssertionSuccess();
}

inline std::uint16_t udp_checksum_field(const Bytes& packet) { return wire::load_be16(&packet[20 + 6]); }

// Rules for one VPC with NAT (and optional forwards).
inline std::shared_ptr<const NatRules> one_vpc_rules(std::uint32_t vni, Ipv4Address nat_address,
                                                     std::uint16_t port_min = kDefaultPortMin,
                                                     std::uint16_t port_max = kDefaultPortMax,
                                                     std::vector<PortForward> forwards = {}) {
    return std::make_shared<const NatRules>(
        std::vector<VpcNatConfig>{{vni, nat_address, port_min, port_max, std::move(forwards)}});
}

inline NatSettings small_settings(std::size_t max_flows = 1024, std::size_t shards = 1) {
    NatSettings s;
    s.max_flows = max_flows;
    s.shards = shards;
    s.hash_seed = 12345;
    return s;
}

}  // namespace andromeda::nat::test
