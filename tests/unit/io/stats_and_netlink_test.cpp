// Per-CPU counter summing and names; netlink message building and attribute parsing.
#include <gtest/gtest.h>
#include <linux/if_link.h>

#include <cstring>
#include <set>
#include <vector>

#include "io/bpf/xdp_stats.hpp"
#include "io/netlink/netlink.hpp"

namespace andromeda::io {
namespace {

TEST(XdpStats, SumsEveryCpuAndNamesEveryCounter) {
    std::vector<andromeda_xdp_stats> per_cpu(3);
    per_cpu[0].rx_packets = 5;
    per_cpu[1].rx_packets = 7;
    per_cpu[2].drop_unknown_vni = 2;
    per_cpu[1].drop_spoofed_mac = 1;
    per_cpu[0].redirect_overlay = 4;
    const XdpStats stats(per_cpu);
    EXPECT_EQ(stats.totals().rx_packets, 12u);
    EXPECT_EQ(stats.totals().drop_unknown_vni, 2u);
    EXPECT_EQ(stats.totals().redirect_overlay, 4u);
    EXPECT_EQ(stats.drops(), 3u);
    EXPECT_EQ(stats.value("drop_spoofed_mac"), 1u);
    EXPECT_EQ(stats.value("no_such_counter"), std::nullopt);
    // The table names every field once, in order.
    std::set<std::string_view> names;
    for (const auto& f : kXdpCounterFields) names.insert(f.name);
    EXPECT_EQ(names.size(), kXdpCounterFields.size());
    EXPECT_EQ(kXdpCounterFields.front().name, "rx_packets");
    EXPECT_EQ(kXdpCounterFields.back().name, "redirect_icmp");
}

TEST(Netlink, RequestAttributesParseBack) {
    ifinfomsg ifi{};
    ifi.ifi_index = 7;
    NetlinkRequest request(RTM_GETLINK, 0, &ifi, sizeof ifi);
    request.add_string(IFLA_IFNAME, "eth1");
    request.add_value<std::uint32_t>(IFLA_MTU, 1500);
    const std::string long_value(600, 'x');  // grows the buffer
    request.add_attribute(IFLA_IFALIAS, long_value.data(), long_value.size());
    const nlmsghdr& h = *request.header();
    EXPECT_EQ(h.nlmsg_type, RTM_GETLINK);
    EXPECT_NE(h.nlmsg_flags & NLM_F_REQUEST, 0);
    EXPECT_EQ(request.bytes().size(), h.nlmsg_len);
    EXPECT_EQ(fixed_header<ifinfomsg>(h).ifi_index, 7);
    const auto attrs = attributes_after<ifinfomsg>(h);
    EXPECT_EQ(attrs.string(IFLA_IFNAME), "eth1");
    EXPECT_EQ(attrs.u32(IFLA_MTU), 1500u);
    EXPECT_EQ(attrs.bytes(IFLA_IFALIAS).size(), 600u);
    EXPECT_FALSE(attrs.has(IFLA_ADDRESS));
    EXPECT_EQ(attrs.u32(IFLA_ADDRESS), std::nullopt);
    EXPECT_FALSE(attrs.nested(IFLA_XDP).has(IFLA_XDP_PROG_ID));
}

TEST(Netlink, TruncatedAttributesAreIgnored) {
    std::vector<std::uint8_t> junk = {8, 0, 3, 0, 'a', 'b', 'c', 0, 200, 0, 4, 0};  // second claims 200 bytes
    const NetlinkAttributes attrs(junk.data(), junk.size());
    EXPECT_EQ(attrs.string(3), "abc");
    EXPECT_FALSE(attrs.has(4));
}

}  // namespace
}  // namespace andromeda::io
