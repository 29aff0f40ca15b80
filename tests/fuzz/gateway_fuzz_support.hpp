// What dhcp_fuzz and dns_fuzz share: the tenant's frame around a fuzzed UDP payload, and the
// check that whatever the gateway sends back is a well-formed frame.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

#include "gateway/gateway_address.hpp"
#include "wire/ethernet.hpp"
#include "wire/ipv4.hpp"
#include "wire/udp.hpp"

namespace andromeda::fuzzing {

using Bytes = std::vector<std::uint8_t>;

[[noreturn]] inline void violation(const char* fuzzer, const char* what) {
    std::fprintf(stderr, "%s: %s\n", fuzzer, what);
    std::abort();
}

inline const gateway::GatewayAddress kGateway{wire::MacAddress({2, 0xaa, 0, 0, 0, 1}), wire::Ipv4Address(0x0a000001)};
inline const wire::MacAddress kTenantMac({2, 0, 0, 0, 0, 0x0a});
inline constexpr wire::Ipv4Address kTenantIp(0x0a00000a);

struct TenantDatagram {
    wire::Ipv4Address source;
    wire::Ipv4Address destination;
    std::uint16_t source_port = 0;
    std::uint16_t destination_port = 0;
    bool tagged = false;
};

// The Ethernet/IPv4/UDP frame a tenant would send with `payload`, checksums right.
inline Bytes tenant_frame(const TenantDatagram& d, wire::ByteSpan payload) {
    wire::EthernetHeader eth;
    eth.destination = d.destination.value() == 0xffffffff ? wire::MacAddress({0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
                                                          : kGateway.mac;
    eth.source = kTenantMac;
    eth.ethertype = wire::ethertype::kIpv4;
    if (d.tagged) {
        eth.tag_count = 1;
        eth.tags[0].vlan_id = 7;
    }
    const std::size_t udp_length = 8 + payload.size();
    Bytes f(eth.length() + 20 + udp_length);
    wire::write_ethernet_header(f, eth);
    wire::Ipv4Header ip;
    ip.total_length = static_cast<std::uint16_t>(20 + udp_length);
    ip.protocol = 17;
    ip.source = d.source;
    ip.destination = d.destination;
    wire::write_ipv4_header(wire::MutableByteSpan(f).subspan(eth.length()), ip);
    const auto udp = wire::MutableByteSpan(f).subspan(eth.length() + 20);
    wire::write_udp_header(udp, {d.source_port, d.destination_port, static_cast<std::uint16_t>(udp_length), 0});
    std::copy(payload.begin(), payload.end(), udp.begin() + 8);
    wire::MutableUdpView::parse(udp)->update_checksum(d.source, d.destination);
    return f;
}

// The UDP payload of a reply frame from the gateway's `port` to the tenant; aborts unless every
// layer is well-formed and its checksums verify.
inline wire::ByteSpan checked_reply(const char* fuzzer, wire::ByteSpan frame, std::uint16_t port) {
    const auto eth = wire::EthernetView::parse(frame);
    if (!eth || eth->source() != kGateway.mac || eth->ethertype() != wire::ethertype::kIpv4)
        violation(fuzzer, "reply: not an Ethernet/IPv4 frame from the gateway MAC");
    const auto ip = wire::Ipv4View::parse(eth->payload());
    if (!ip || !ip->checksum_valid() || ip->source() != kGateway.ipv4 || ip->packet().size() != eth->payload().size())
        violation(fuzzer, "reply: bad IPv4 header");
    const auto udp = wire::UdpView::parse(ip->payload());
    if (!udp || udp->checksum() == 0 || !udp->checksum_valid(ip->source(), ip->destination()) ||
        udp->source_port() != port || udp->datagram().size() != ip->payload().size())
        violation(fuzzer, "reply: bad UDP header");
    return udp->payload();
}

}  // namespace andromeda::fuzzing
