// PolicyFlowMap against a fake map: the firewall's installs become two entries (the flow's own
// direction and its replies', as the BPF programs look them up), removals delete both, a sync
// keeps the firewall's flow alive by the kernel's use and deletes what it no longer has, and a
// restart adopts the map's flows.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include "fake_map_writer.hpp"
#include "io/plan/policy_flow_map.hpp"

namespace andromeda::io::testing {
namespace {

using policy::FlowKey;
using policy::KernelChange;
using policy::PolicyDirection;

constexpr std::uint32_t kWeb = 0x0a00000a, kApp = 0x0a000014;  // 10.0.0.10, 10.0.0.20

// app -> web:80 at web (ingress), under generation 77 by rule 3.
policy::KernelFlow flow() {
    using policy::Address;
    return {{100, Address::v4(kWeb), Address::v4(kApp), Address::v4(kWeb), 40000, 80, 6, PolicyDirection::ingress}, 77, 3};
}

TEST(PolicyFlowMap, AnInstallWritesBothDirectionsAsTheKernelLooksThemUp) {
    FakeMapWriter maps;
    PolicyFlowMap map(maps);
    map.apply(std::vector<KernelChange>{{KernelChange::Kind::install, flow()}});
    ASSERT_EQ(maps.table(MapId::policy_flows).size(), 2u);
    andromeda_policy_flow_key own{};
    own.vni = 100;
    own.saddr = htonl(kApp);
    own.daddr = htonl(kWeb);
    own.sport = htons(40000);
    own.dport = htons(80);
    own.protocol = 6;
    own.direction = ANDROMEDA_POLICY_INGRESS;
    const auto* e = maps.find<andromeda_policy_flow_key, andromeda_policy_flow>(MapId::policy_flows, own);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->generation, 77u);
    EXPECT_EQ(e->rule, 3u);
    EXPECT_EQ(e->flags, 0u);
    // The reply: web -> app, egress at web.
    andromeda_policy_flow_key reply{};
    reply.vni = 100;
    reply.saddr = htonl(kWeb);
    reply.daddr = htonl(kApp);
    reply.sport = htons(80);
    reply.dport = htons(40000);
    reply.protocol = 6;
    reply.direction = ANDROMEDA_POLICY_EGRESS;
    e = maps.find<andromeda_policy_flow_key, andromeda_policy_flow>(MapId::policy_flows, reply);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->flags, static_cast<__u32>(ANDROMEDA_POLICY_FLOW_F_REPLY));
    // Keys round-trip, the endpoint being the receiver coming in and the sender going out.
    EXPECT_EQ(policy_flow_key_of(own), flow().key);
    EXPECT_EQ(policy_flow_key_of(reply), flow().key.reversed());

    map.apply(std::vector<KernelChange>{{KernelChange::Kind::remove, flow()}});
    EXPECT_TRUE(maps.table(MapId::policy_flows).empty());
    EXPECT_EQ(map.counters().installs, 1u);
    EXPECT_EQ(map.counters().removals, 1u);
}

TEST(PolicyFlowMap, ASyncDeletesWhatTheFirewallNoLongerHasAndARestartAdoptsTheRest) {
    FakeMapWriter maps;
    PolicyFlowMap map(maps);
    policy::Firewall firewall({}, [] { return std::uint64_t{5'000'000'000}; });
    policy::KernelFlow stale = flow();
    stale.key.source_port = 40001;
    map.apply(std::vector<KernelChange>{{KernelChange::Kind::install, flow()}, {KernelChange::Kind::install, stale}});
    ASSERT_EQ(maps.table(MapId::policy_flows).size(), 4u);
    // A restarted daemon's firewall: both flows adopted from their own direction's entries.
    EXPECT_EQ(map.adopt(firewall), 2u);
    EXPECT_EQ(firewall.counters().flows, 2u);
    EXPECT_EQ(map.sync(firewall), 4u);
    EXPECT_EQ(map.counters().stale_deleted, 0u);
    // A firewall that never had them (or had them under another generation): all four deleted.
    policy::Firewall other;
    EXPECT_EQ(map.sync(other), 4u);
    EXPECT_EQ(map.counters().stale_deleted, 4u);
    EXPECT_TRUE(maps.table(MapId::policy_flows).empty());
}

// An IPv6 flow goes to andromeda_policy_flows6, by its IPv6 tuple, the IPv4 map untouched; a sync
// and a restart read both maps.
TEST(PolicyFlowMap, Ipv6FlowsLiveInTheirOwnMap) {
    using policy::Address;
    const auto v6 = [](const char* text) { return Address::of(*wire::Ipv6Address::parse(text)); };
    const policy::KernelFlow flow6{{100, v6("fd00::10"), v6("fd00::20"), v6("fd00::10"), 40000, 443, 6,
                                    PolicyDirection::ingress},
                                   77, 3};
    FakeMapWriter maps;
    PolicyFlowMap map(maps);
    map.apply(std::vector<KernelChange>{{KernelChange::Kind::install, flow6}, {KernelChange::Kind::install, flow()}});
    ASSERT_EQ(maps.table(MapId::policy_flows6).size(), 2u);
    ASSERT_EQ(maps.table(MapId::policy_flows).size(), 2u);
    andromeda_policy_flow6_key own{};
    own.vni = 100;
    const auto source = wire::Ipv6Address::parse("fd00::20")->bytes();
    const auto destination = wire::Ipv6Address::parse("fd00::10")->bytes();
    std::copy(source.begin(), source.end(), own.saddr);
    std::copy(destination.begin(), destination.end(), own.daddr);
    own.sport = htons(40000);
    own.dport = htons(443);
    own.protocol = 6;
    own.direction = ANDROMEDA_POLICY_INGRESS;
    const auto* e = maps.find<andromeda_policy_flow6_key, andromeda_policy_flow>(MapId::policy_flows6, own);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->generation, 77u);
    EXPECT_EQ(e->flags, 0u);
    EXPECT_EQ(policy_flow_key_of(own), flow6.key);
    const andromeda_policy_flow6_key reply = policy_flow6_key(flow6.key.reversed());
    const auto* back = maps.find<andromeda_policy_flow6_key, andromeda_policy_flow>(MapId::policy_flows6, reply);
    ASSERT_NE(back, nullptr);
    EXPECT_EQ(back->flags, static_cast<__u32>(ANDROMEDA_POLICY_FLOW_F_REPLY));
    EXPECT_EQ(policy_flow_key_of(reply), flow6.key.reversed());

    policy::Firewall firewall({}, [] { return std::uint64_t{5'000'000'000}; });
    EXPECT_EQ(map.adopt(firewall), 2u);  // one of each family
    EXPECT_EQ(map.sync(firewall), 4u);
    EXPECT_EQ(map.counters().stale_deleted, 0u);
    map.apply(std::vector<KernelChange>{{KernelChange::Kind::remove, flow6}});
    EXPECT_TRUE(maps.table(MapId::policy_flows6).empty());
    EXPECT_EQ(maps.table(MapId::policy_flows).size(), 2u);
}

}  // namespace
}  // namespace andromeda::io::testing
