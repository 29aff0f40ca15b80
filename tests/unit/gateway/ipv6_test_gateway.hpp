// The IPv6 gateway the gateway tests answer from, the tenant that asks, and helpers to read the
// answers back with the wire views. Request frames come from support/icmpv6_frame_builder.hpp.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "gateway/ipv6_gateway.hpp"
#include "support/icmpv6_frame_builder.hpp"
#include "wire/ethernet.hpp"
#include "wire/ipv6.hpp"
#include "wire/ndp.hpp"

namespace andromeda::gateway::ipv6_test {

namespace ts = test_support;
using Bytes = std::vector<std::uint8_t>;

inline wire::Ipv6Address ip6(const char* text) { return *wire::Ipv6Address::parse(text); }
inline wire::MacAddress mac(const char* text) { return *wire::MacAddress::parse(text); }
inline ts::Mac raw(const wire::MacAddress& m) { return m.bytes(); }
inline ts::Ipv6Address raw(const wire::Ipv6Address& a) { return a.bytes(); }

inline const wire::MacAddress kGatewayMac = mac("02:aa:00:00:00:01");
inline const wire::Ipv6Address kGatewayGlobal = ip6("fd00:0:0:1::1");
inline const wire::Ipv6Address kGatewayLinkLocal = ip6("fe80::aa:ff:fe00:1");
inline const wire::MacAddress kTenantMac = mac("02:00:00:00:00:0a");
inline const wire::Ipv6Address kTenant = ip6("fd00:0:0:1:0:ff:fe00:a");
inline const wire::Ipv6Address kTenantLinkLocal = ip6("fe80::ff:fe00:a");
inline const wire::Ipv6Address kPeer = ip6("fd00:0:0:1:0:ff:fe00:14");
inline const std::vector<wire::Ipv6Address> kDns = {ip6("fd00:0:0:1::53"), ip6("2001:db8::53")};

inline Ipv6GatewayConfig test_config() {
    Ipv6GatewayConfig config;
    config.mac = kGatewayMac;
    config.prefix = *wire::Ipv6Prefix::parse("fd00:0:0:1::/64");
    config.global_address = kGatewayGlobal;
    config.mtu = 1450;
    config.dns_servers = kDns;
    return config;
}

inline const std::vector<wire::Ipv6Address> kTenantAddresses = {kTenant};
inline const Ipv6Endpoint kAsker{kTenantMac, kTenantAddresses};

// An NS from the tenant (`source`, to `target`'s solicited-node group, with the tenant's MAC
// unless the source is ::) for `target`.
inline ts::Icmpv6Frame solicitation(const wire::Ipv6Address& source, const wire::Ipv6Address& target) {
    ts::Icmpv6Frame f;
    f.src_mac = raw(kTenantMac);
    f.dst_mac = ts::multicast_mac(ts::solicited_node(raw(target)));
    f.src = raw(source);
    f.dst = ts::solicited_node(raw(target));
    f.type = ts::icmpv6::kNeighborSolicitation;
    const bool dad = source == wire::Ipv6Address{};
    f.body = ts::ns_body(raw(target), dad ? Bytes{} : ts::link_layer_option(1, raw(kTenantMac)));
    return f;
}

inline ts::Icmpv6Frame router_solicitation(const wire::Ipv6Address& source) {
    ts::Icmpv6Frame f;
    f.src_mac = raw(kTenantMac);
    f.dst_mac = ts::mac("33:33:00:00:00:02");
    f.src = raw(source);
    f.dst = ts::ipv6("ff02::2");
    f.type = ts::icmpv6::kRouterSolicitation;
    f.body = ts::rs_body(source == wire::Ipv6Address{} ? Bytes{} : ts::link_layer_option(1, raw(kTenantMac)));
    return f;
}

// An answer frame read back: its Ethernet and IPv6 views (valid while the bytes live).
struct Answer {
    std::optional<wire::EthernetView> ethernet;
    std::optional<wire::Ipv6View> ip;
};

inline Answer read_answer(const Bytes& frame) {
    Answer a;
    const auto eth = wire::EthernetView::parse(frame);
    EXPECT_TRUE(eth);
    if (!eth) return a;
    EXPECT_EQ(eth->ethertype(), wire::ethertype::kIpv6);
    const auto ip = wire::Ipv6View::parse(eth->payload());
    EXPECT_TRUE(ip) << wire::to_string(ip.error());
    if (!ip) return a;
    EXPECT_EQ(ip->packet().size(), eth->payload().size()) << "no bytes past the IPv6 payload";
    a.ethernet = *eth;
    a.ip = *ip;
    return a;
}
Answer read_answer(Bytes&&) = delete;  // the views would outlive the bytes

}  // namespace andromeda::gateway::ipv6_test
