// The upstreams read from a resolv.conf text: glibc's reading of it, and what is skipped and why.
#include <gtest/gtest.h>

#include "gateway/resolv_conf.hpp"
#include "unit/dataplane/test_frames.hpp"

namespace andromeda::gateway {
namespace {

using andromeda::testing::ipv4;
using andromeda::testing::ipv6;

TEST(ResolvConfTest, NameserversInFileOrderLoopbackIncluded) {
    const ResolvConf conf = parse_resolv_conf(
        "# written by NetworkManager\n"
        "search example.com corp.example.com\n"
        "nameserver 127.0.0.53\n"
        "options edns0 trust-ad timeout:1\n"
        "nameserver\t192.0.2.1   # the office\r\n"
        "  nameserver 2001:db8::53\n");
    ASSERT_EQ(conf.nameservers.size(), 3u);
    EXPECT_EQ(conf.nameservers[0], (DnsUpstream{ipv4("127.0.0.53"), 53}));
    EXPECT_TRUE(conf.nameservers[0].is_loopback());
    EXPECT_EQ(conf.nameservers[1], (DnsUpstream{ipv4("192.0.2.1"), 53}));
    EXPECT_FALSE(conf.nameservers[1].is_loopback());
    EXPECT_EQ(conf.nameservers[2], (DnsUpstream{ipv6("2001:db8::53"), 53}));
    EXPECT_EQ(conf.nameservers[2].to_string(), "[2001:db8::53]:53");
    EXPECT_EQ(conf.nameservers[1].to_string(), "192.0.2.1:53");
    EXPECT_TRUE(conf.warnings.empty());
}

TEST(ResolvConfTest, WhatCannotBeUsedIsAWarningNamingItsLine) {
    const ResolvConf conf = parse_resolv_conf(
        "nameserver fe80::1%eth0\n"
        "nameserver dns.example.com\n"
        "nameserver\n"
        "; nameserver 192.0.2.9\n"
        "nameserver ::1\n"
        "nameserver 192.0.2.1\n"
        "nameserver 192.0.2.2\n"
        "nameserver 192.0.2.3\n");
    ASSERT_EQ(conf.nameservers.size(), 3u);
    EXPECT_TRUE(conf.nameservers[0].is_loopback());
    EXPECT_EQ(conf.nameservers[2], (DnsUpstream{ipv4("192.0.2.2"), 53}));
    ASSERT_EQ(conf.warnings.size(), 4u);
    EXPECT_NE(conf.warnings[0].find("line 1:"), std::string::npos);
    EXPECT_NE(conf.warnings[0].find("zone index"), std::string::npos);
    EXPECT_NE(conf.warnings[1].find("line 2: nameserver dns.example.com is not an IPv4 or IPv6 address"),
              std::string::npos);
    EXPECT_NE(conf.warnings[2].find("line 3:"), std::string::npos);
    EXPECT_NE(conf.warnings[3].find("line 8: nameserver 192.0.2.3 ignored: only the first 3"), std::string::npos);
}

TEST(ResolvConfTest, NoNameserverMeansLocalhostAsForGlibc) {
    for (const char* text : {"", "search example.com\n", "nameserver 300.1.1.1\n"}) {
        const ResolvConf conf = parse_resolv_conf(text);
        ASSERT_EQ(conf.nameservers.size(), 1u) << text;
        EXPECT_EQ(conf.nameservers[0], (DnsUpstream{ipv4("127.0.0.1"), 53}));
        EXPECT_NE(conf.warnings.back().find("127.0.0.1"), std::string::npos);
    }
}

}  // namespace
}  // namespace andromeda::gateway
