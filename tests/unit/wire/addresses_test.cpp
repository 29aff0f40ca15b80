#include "wire/addresses.hpp"

#include <gtest/gtest.h>

namespace andromeda::wire {
namespace {

TEST(MacAddress, ParsesAndFormats) {
    const auto m = MacAddress::parse("02:00:00:00:A1:0f");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->to_string(), "02:00:00:00:a1:0f");
    EXPECT_EQ(MacAddress::parse("02-00-00-00-a1-0f"), m);
    EXPECT_FALSE(m->is_multicast());
    EXPECT_TRUE(MacAddress::parse("ff:ff:ff:ff:ff:ff")->is_broadcast());
}

TEST(MacAddress, RejectsMalformed) {
    for (const char* bad : {"", "02:00:00:00:00", "02:00:00:00:00:0g", "02:00-00:00:00:00", "0200.0000.0000",
                            "02:00:00:00:00:000"})
        EXPECT_FALSE(MacAddress::parse(bad)) << bad;
}

TEST(Ipv4Address, ParsesStrictDottedQuad) {
    EXPECT_EQ(Ipv4Address::parse("10.0.0.1")->value(), 0x0a000001u);
    EXPECT_EQ(Ipv4Address::parse("255.255.255.255")->value(), 0xffffffffu);
    EXPECT_EQ(Ipv4Address(0xc0a80102).to_string(), "192.168.1.2");
    for (const char* bad : {"", "10.0.0", "10.0.0.256", "10.0.0.01", "10.0.0.1.", "1.2.3.4 ", "a.b.c.d", "1..2.3",
                            "1000.0.0.1"})
        EXPECT_FALSE(Ipv4Address::parse(bad)) << bad;
}

TEST(Ipv6Address, RoundTrips) {
    const auto a = Ipv6Address::parse("fe80::1");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->to_string(), "fe80::1");
    EXPECT_EQ(a->bytes()[0], 0xfe);
    EXPECT_FALSE(Ipv6Address::parse("fe80:::1"));
}

// A node's underlay address: either family, equal only within one, hashing an IPv4 address to itself.
TEST(IpAddress, ParsesEitherFamilyAndComparesWithinOne) {
    const auto v4 = IpAddress::parse("192.168.1.1");
    const auto v6 = IpAddress::parse("fd00:1::1");
    ASSERT_TRUE(v4 && v6);
    EXPECT_FALSE(v4->is_ipv6());
    EXPECT_EQ(v4->ipv4(), Ipv4Address(0xc0a80101));
    EXPECT_EQ(v4->ipv6(), std::nullopt);
    EXPECT_EQ(v4->hash(), 0xc0a80101u);
    EXPECT_TRUE(v6->is_ipv6());
    EXPECT_EQ(v6->ipv6(), Ipv6Address::parse("fd00:1:0::1"));
    EXPECT_EQ(v6->ipv4(), std::nullopt);
    EXPECT_EQ(v6->to_string(), "fd00:1::1");
    EXPECT_EQ(v4->to_string(), "192.168.1.1");
    EXPECT_EQ(*v4, Ipv4Address(0xc0a80101));
    EXPECT_EQ(*v6, *Ipv6Address::parse("fd00:1::1"));
    // The same bits in the other family are another address: ::c0a8:101 is not 192.168.1.1.
    const auto compat = IpAddress::parse("::192.168.1.1");
    ASSERT_TRUE(compat);
    EXPECT_NE(*compat, *v4);
    EXPECT_NE(IpAddress(), IpAddress(Ipv6Address{}));
    EXPECT_EQ(IpAddress::parse("fd00:1::1")->hash(), v6->hash());
    for (const char* bad : {"", "192.168.1", "192.168.1.256", "host1", "fe80::1%eth1", "fd00::1/64", "1.2.3.4:80"})
        EXPECT_EQ(IpAddress::parse(bad), std::nullopt) << bad;
}

TEST(Ipv4Prefix, ContainsAndOverlaps) {
    const auto p = Ipv4Prefix::parse("10.0.0.0/24");
    ASSERT_TRUE(p);
    EXPECT_TRUE(p->contains(*Ipv4Address::parse("10.0.0.255")));
    EXPECT_FALSE(p->contains(*Ipv4Address::parse("10.0.1.0")));
    EXPECT_TRUE(p->overlaps(*Ipv4Prefix::parse("10.0.0.128/25")));
    EXPECT_TRUE(p->overlaps(*Ipv4Prefix::parse("10.0.0.0/8")));
    EXPECT_FALSE(p->overlaps(*Ipv4Prefix::parse("10.0.1.0/24")));
    EXPECT_EQ(Ipv4Prefix::parse("0.0.0.0/0")->mask(), 0u);
    EXPECT_EQ(p->to_string(), "10.0.0.0/24");
}

TEST(Ipv4Prefix, RejectsHostBitsAndBadLengths) {
    for (const char* bad : {"10.0.0.1/24", "10.0.0.0/33", "10.0.0.0/", "10.0.0.0", "10.0.0.0/024", "10.0.0.0/x"})
        EXPECT_FALSE(Ipv4Prefix::parse(bad)) << bad;
}

}  // namespace
}  // namespace andromeda::wire
