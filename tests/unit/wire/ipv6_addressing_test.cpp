// IPv6 prefixes, the address predicates, EUI-64 and the multicast groups of ND (the scapy-made
// vectors are in ndp_golden_test.cpp).
#include "wire/ipv6_addressing.hpp"

#include <gtest/gtest.h>

namespace andromeda::wire {
namespace {

Ipv6Address ip6(const char* text) { return *Ipv6Address::parse(text); }
MacAddress mac(const char* text) { return *MacAddress::parse(text); }

TEST(Ipv6PrefixTest, ParseIsStrict) {
    const auto p = Ipv6Prefix::parse("fd00:0:0:1::/64");
    ASSERT_TRUE(p);
    EXPECT_EQ(p->network(), ip6("fd00:0:0:1::"));
    EXPECT_EQ(p->length(), 64);
    EXPECT_EQ(p->to_string(), "fd00:0:0:1::/64");
    EXPECT_TRUE(Ipv6Prefix::parse("::/0"));
    EXPECT_TRUE(Ipv6Prefix::parse("fd00::1/128"));
    for (const char* bad : {"fd00::1/64", "fd00::/129", "fd00::/064", "fd00::/", "fd00::", "fd00::/6a", "10.0.0.0/8",
                            "fd00::/1234", "/64"})
        EXPECT_FALSE(Ipv6Prefix::parse(bad)) << bad;
}

TEST(Ipv6PrefixTest, ConstructorClearsHostBitsAtAnyLength) {
    EXPECT_EQ(Ipv6Prefix(ip6("fd00:0:0:1:ffff::1"), 64).network(), ip6("fd00:0:0:1::"));
    EXPECT_EQ(Ipv6Prefix(ip6("fd00:0:0:1f::"), 60).network(), ip6("fd00:0:0:10::"));
    EXPECT_EQ(Ipv6Prefix(ip6("fd00::ff"), 127).network(), ip6("fd00::fe"));
    EXPECT_EQ(Ipv6Prefix(ip6("fd00::ff"), 200).length(), 128);
    EXPECT_EQ(Ipv6Prefix(ip6("ffff::"), 0).network(), ip6("::"));
}

TEST(Ipv6PrefixTest, ContainsAndOverlaps) {
    const Ipv6Prefix p(ip6("fd00:0:0:10::"), 60);
    EXPECT_TRUE(p.contains(ip6("fd00:0:0:10::1")));
    EXPECT_TRUE(p.contains(ip6("fd00:0:0:1f:ffff:ffff:ffff:ffff")));
    EXPECT_FALSE(p.contains(ip6("fd00:0:0:20::")));
    EXPECT_FALSE(p.contains(ip6("fd00:0:0:f::")));
    EXPECT_TRUE(p.overlaps(Ipv6Prefix(ip6("fd00::"), 8)));
    EXPECT_TRUE(p.overlaps(Ipv6Prefix(ip6("fd00:0:0:11::"), 64)));
    EXPECT_FALSE(p.overlaps(Ipv6Prefix(ip6("fd00:0:0:20::"), 64)));
    EXPECT_TRUE(Ipv6Prefix().contains(ip6("2001:db8::1"))) << "::/0 holds everything";
}

TEST(Ipv6AddressingTest, Predicates) {
    EXPECT_TRUE(is_unspecified(ip6("::")));
    EXPECT_FALSE(is_unspecified(ip6("::1")));
    EXPECT_TRUE(is_multicast(ip6("ff02::1")));
    EXPECT_FALSE(is_multicast(ip6("fe80::1")));
    EXPECT_TRUE(is_link_local(ip6("fe80::1")));
    EXPECT_TRUE(is_link_local(ip6("febf::1")));
    EXPECT_FALSE(is_link_local(ip6("fec0::1")));
    EXPECT_TRUE(is_solicited_node_multicast(ip6("ff02::1:ff00:14")));
    EXPECT_FALSE(is_solicited_node_multicast(ip6("ff02::1:fe00:14")));
    EXPECT_FALSE(is_solicited_node_multicast(ip6("ff05::1:ff00:14")));
    EXPECT_EQ(all_nodes_multicast(), ip6("ff02::1"));
    EXPECT_EQ(all_routers_multicast(), ip6("ff02::2"));
}

TEST(Ipv6AddressingTest, MulticastGroupsAndMacs) {
    EXPECT_EQ(solicited_node_multicast(ip6("2001:db8::1234:5678")), ip6("ff02::1:ff34:5678"));
    EXPECT_EQ(multicast_mac(ip6("ff02::1:ff34:5678")), mac("33:33:ff:34:56:78"));
    EXPECT_EQ(multicast_mac(all_nodes_multicast()), mac("33:33:00:00:00:01"));
    EXPECT_EQ(multicast_mac(all_routers_multicast()), mac("33:33:00:00:00:02"));
}

// RFC 4291 appendix A: ff:fe in the middle, the universal/local bit inverted either way.
TEST(Ipv6AddressingTest, ModifiedEui64) {
    EXPECT_EQ(link_local_address(mac("00:1b:21:3c:9d:f8")), ip6("fe80::21b:21ff:fe3c:9df8"));
    EXPECT_EQ(link_local_address(mac("02:00:00:00:00:0a")), ip6("fe80::ff:fe00:a"));
    const auto id = modified_eui64(mac("02:aa:bb:cc:dd:ee"));
    EXPECT_EQ(id, (std::array<std::uint8_t, 8>{0x00, 0xaa, 0xbb, 0xff, 0xfe, 0xcc, 0xdd, 0xee}));
    const Ipv6Prefix vpc(ip6("fd00:0:0:1::"), 64);
    EXPECT_EQ(eui64_address(vpc, mac("02:00:00:00:00:0a")), ip6("fd00:0:0:1:0:ff:fe00:a"));
    EXPECT_FALSE(eui64_address(Ipv6Prefix(ip6("fd00::"), 48), mac("02:00:00:00:00:0a"))) << "SLAAC needs a /64";
    EXPECT_FALSE(eui64_address(Ipv6Prefix(ip6("fd00::"), 80), mac("02:00:00:00:00:0a")));
}

}  // namespace
}  // namespace andromeda::wire
