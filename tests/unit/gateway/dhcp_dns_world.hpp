// The VPC of the DHCP and DNS tests, the same as tests/data/gateway/make_golden.py's: gateway
// 10.0.0.1 (02:aa:00:00:00:01), one endpoint "web" 10.0.0.10 / fd00::a (02:00:00:00:00:0a) in VPC
// "blue", MTU 1450, one-hour leases.
#pragma once

#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "gateway/dhcp_server.hpp"
#include "gateway/dns_forwarder.hpp"
#include "gateway/dns_zone.hpp"
#include "unit/dataplane/test_frames.hpp"

namespace andromeda::gateway::testing {

using andromeda::testing::Bytes;
using andromeda::testing::ipv4;
using andromeda::testing::ipv6;
using andromeda::testing::mac;

inline constexpr std::uint32_t kVni = 100;
inline constexpr std::uint64_t kSecond = 1'000'000'000;

inline GatewayAddress vpc_gateway() { return {mac("02:aa:00:00:00:01"), ipv4("10.0.0.1")}; }

inline DhcpEndpoint endpoint() {
    DhcpEndpoint e;
    e.scope = kVni;
    e.mac = mac("02:00:00:00:00:0a");
    e.address = ipv4("10.0.0.10");
    e.prefix_length = 24;
    e.gateway = vpc_gateway();
    e.dns_server = vpc_gateway().ipv4;
    e.mtu = 1450;
    e.lease_seconds = 3600;
    e.domain_name = "blue.internal";
    e.host_name = "web";
    return e;
}

inline DnsZone blue_zone() {
    std::string error;
    DnsZone zone = *DnsZone::for_vpc("blue", error);
    zone.add("web", {ipv4("10.0.0.10"), ipv6("fd00::a")}, error);
    zone.add("db", {ipv4("10.0.0.20"), std::nullopt}, error);
    return zone;
}

inline Bytes from_hex(const std::string& hex) {
    Bytes bytes;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
        bytes.push_back(static_cast<std::uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    return bytes;
}


// Ethernet/IPv4/UDP around `payload`, checksums by support/frame_builder.hpp (not by wire/).
struct UdpFrameSpec {
    wire::MacAddress src_mac = mac("02:00:00:00:00:0a");
    wire::MacAddress dst_mac = mac("ff:ff:ff:ff:ff:ff");
    wire::Ipv4Address src = ipv4("0.0.0.0");
    wire::Ipv4Address dst = ipv4("255.255.255.255");
    std::uint16_t src_port = 68;
    std::uint16_t dst_port = 67;
    std::vector<wire::VlanTag> tags;
    bool more_fragments = false;
};

inline Bytes udp_frame(const UdpFrameSpec& s, const Bytes& payload) {
    andromeda::testing::Ipv4Spec spec;
    spec.src_mac = s.src_mac;
    spec.dst_mac = s.dst_mac;
    spec.src = s.src;
    spec.dst = s.dst;
    spec.src_port = s.src_port;
    spec.dst_port = s.dst_port;
    spec.payload = payload.size();
    spec.tags = s.tags;
    spec.more_fragments = s.more_fragments;
    Bytes f = andromeda::testing::ipv4_frame(spec);
    const std::size_t udp = f.size() - payload.size() - 8;
    std::copy(payload.begin(), payload.end(), f.begin() + static_cast<long>(udp + 8));
    test_support::put16(&f[udp + 6], 0);
    std::uint32_t pseudo = test_support::ones_sum(&f[udp - 8], 8) + 17 + static_cast<std::uint32_t>(payload.size() + 8);
    const std::uint16_t check = test_support::checksum_of(test_support::ones_sum(&f[udp], payload.size() + 8, pseudo));
    test_support::put16(&f[udp + 6], check == 0 ? 0xffff : check);
    return f;
}

// A DHCP client message written byte by byte (RFC 2131 figure 1), independent of wire::DhcpBuilder.
struct DhcpClientMessage {
    std::uint8_t op = 1;
    std::uint8_t htype = 1;
    std::uint8_t hlen = 6;
    std::uint32_t xid = 0x11223344;
    bool broadcast = false;
    wire::Ipv4Address ciaddr;
    wire::Ipv4Address giaddr;
    wire::MacAddress chaddr = mac("02:00:00:00:00:0a");
    std::vector<std::pair<std::uint8_t, Bytes>> options;  // in order; 53 first by convention
    bool end = true;

    DhcpClientMessage& type(std::uint8_t t) { return option(53, Bytes{t}); }
    DhcpClientMessage& option(std::uint8_t code, Bytes value) {
        options.emplace_back(code, std::move(value));
        return *this;
    }
    DhcpClientMessage& address_option(std::uint8_t code, wire::Ipv4Address a) {
        const std::uint32_t v = a.value();
        return option(code, Bytes{static_cast<std::uint8_t>(v >> 24), static_cast<std::uint8_t>(v >> 16),
                                  static_cast<std::uint8_t>(v >> 8), static_cast<std::uint8_t>(v)});
    }

    Bytes bytes() const {
        Bytes m(240, 0);
        m[0] = op;
        m[1] = htype;
        m[2] = hlen;
        test_support::put32(&m[4], xid);
        test_support::put16(&m[10], broadcast ? 0x8000 : 0);
        test_support::put32(&m[12], ciaddr.value());
        test_support::put32(&m[24], giaddr.value());
        std::copy(chaddr.bytes().begin(), chaddr.bytes().end(), m.begin() + 28);
        test_support::put32(&m[236], 0x63825363);
        for (const auto& [code, value] : options) {
            m.push_back(code);
            m.push_back(static_cast<std::uint8_t>(value.size()));
            m.insert(m.end(), value.begin(), value.end());
        }
        if (end) m.push_back(255);
        return m;
    }
};

// A DNS message written byte by byte (RFC 1035 4.1), independent of wire::DnsBuilder: the header,
// one question (unless `no_question`), and an OPT record when `edns_size` is set.
struct DnsQuery {
    std::uint16_t id = 0x4242;
    std::uint16_t flags = 0x0100;  // RD
    std::string name = "web.blue.internal";
    std::uint16_t type = 1;
    std::uint16_t klass = 1;
    std::optional<std::uint16_t> edns_size;
    std::uint8_t edns_version = 0;
    bool no_question = false;

    Bytes bytes() const {
        Bytes m(12, 0);
        test_support::put16(&m[0], id);
        test_support::put16(&m[2], flags);
        test_support::put16(&m[4], no_question ? 0 : 1);
        test_support::put16(&m[10], edns_size ? 1 : 0);
        if (!no_question) {
            std::size_t start = 0;
            while (start <= name.size()) {
                const std::size_t dot = std::min(name.find('.', start), name.size());
                m.push_back(static_cast<std::uint8_t>(dot - start));
                m.insert(m.end(), name.begin() + static_cast<long>(start), name.begin() + static_cast<long>(dot));
                start = dot + 1;
            }
            m.push_back(0);
            m.push_back(static_cast<std::uint8_t>(type >> 8));
            m.push_back(static_cast<std::uint8_t>(type));
            m.push_back(static_cast<std::uint8_t>(klass >> 8));
            m.push_back(static_cast<std::uint8_t>(klass));
        }
        if (edns_size) {
            const Bytes opt{0, 0, 41, static_cast<std::uint8_t>(*edns_size >> 8), static_cast<std::uint8_t>(*edns_size),
                            0, edns_version, 0, 0, 0, 0};
            m.insert(m.end(), opt.begin(), opt.end());
        }
        return m;
    }
};

#ifdef ANDROMEDA_TESTDATA_DIR  // tests only: the benchmarks build their frames
inline const std::string kGoldenDir = std::string(ANDROMEDA_TESTDATA_DIR) + "/gateway/";

// A golden frame of tests/data/gateway/.
inline Bytes golden(const std::string& name) {
    std::ifstream in(kGoldenDir + name + ".hex");
    std::string hex;
    in >> hex;
    return from_hex(hex);
}
#endif

}  // namespace andromeda::gateway::testing
