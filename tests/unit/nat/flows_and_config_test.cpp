// The flows `andromedactl conntrack` lists (NatEngine::flows), the counters by name, and the
// validation of settings and rules.
#include <gtest/gtest.h>

#include <map>

#include "nat_test_packets.hpp"

namespace andromeda::nat {
namespace {

using namespace test;

TEST(ConntrackListing, FlowsHaveBothTuplesStateAgeAndExpiry) {
    NatEngine nat(small_settings());
    nat.set_rules(one_vpc_rules(100, ip("198.51.100.1"), 1024, 65535, {{Protocol::tcp, 8080, ip("10.0.0.20"), 80}}));
    Bytes syn = tcp_packet(ip("10.0.0.10"), 40000, ip("203.0.113.7"), 443, wire::tcp_flag::kSyn);
    ASSERT_TRUE(nat.outbound(100, syn, at(10)).translated());
    Bytes forwarded = tcp_packet(ip("203.0.113.9"), 5555, ip("198.51.100.1"), 8080, wire::tcp_flag::kSyn);
    ASSERT_TRUE(nat.inbound(forwarded, at(12)).translated());

    const auto flows = nat.flows(at(15));
    ASSERT_EQ(flows.size(), 2u);
    const FlowInfo& snat = flows[0].origin == Origin::outbound ? flows[0] : flows[1];
    const FlowInfo& dnat = flows[0].origin == Origin::outbound ? flows[1] : flows[0];
    EXPECT_EQ(snat.protocol, Protocol::tcp);
    EXPECT_EQ(snat.state, FlowState::tcp_syn_sent);
    EXPECT_EQ(snat.vni, 100u);
    EXPECT_FALSE(snat.port_forward);
    EXPECT_EQ(snat.original.source, ip("10.0.0.10"));
    EXPECT_EQ(snat.original.source_port, 40000);
    EXPECT_EQ(snat.original.destination, ip("203.0.113.7"));
    EXPECT_EQ(snat.translated.source, ip("198.51.100.1"));
    EXPECT_EQ(snat.translated.destination_port, 443);
    EXPECT_EQ(snat.age, std::chrono::seconds(5));
    EXPECT_EQ(snat.expires_in, std::chrono::seconds(25));  // handshake: 30 s from t=10
    EXPECT_TRUE(dnat.port_forward);
    EXPECT_EQ(dnat.original.destination, ip("198.51.100.1"));
    EXPECT_EQ(dnat.original.destination_port, 8080);
    EXPECT_EQ(dnat.translated.destination, ip("10.0.0.20"));
    EXPECT_EQ(dnat.translated.destination_port, 80);

    EXPECT_EQ(nat.flows(at(15), 1).size(), 1u);  // the limit holds
}

TEST(ConntrackListing, CountersNameEveryFieldOnce) {
    NatCounters c;
    c.translated_outbound = 3;
    c.count_drop(DropReason::table_full, 2);
    std::map<std::string, std::uint64_t> named;
    c.for_each([&](std::string_view name, std::uint64_t v) { EXPECT_TRUE(named.emplace(name, v).second) << name; });
    EXPECT_EQ(named["translated_outbound"], 3u);
    EXPECT_EQ(named["drop_table_full"], 2u);
    EXPECT_EQ(named["drop_stale_flow"], 0u);
#define ANDROMEDA_TEST_ONE(name) +1
    constexpr std::size_t kVerdictsAndLifecycle = 0 ANDROMEDA_NAT_COUNTERS(ANDROMEDA_TEST_ONE);
#undef ANDROMEDA_TEST_ONE
    EXPECT_EQ(named.size(), kVerdictsAndLifecycle + kDropReasonCount);
    EXPECT_EQ(c.total_drops(), 2u);
}

TEST(NatConfig, SettingsAreValidated) {
    NatSettings s;
    EXPECT_TRUE(validate(s).empty());
    s.shards = 0;
    EXPECT_FALSE(validate(s).empty());
    EXPECT_THROW(NatEngine{s}, std::invalid_argument);
    s = NatSettings{};
    s.timeouts.udp = std::chrono::seconds(0);
    EXPECT_NE(validate(s).find("timeouts"), std::string::npos);
}

TEST(NatConfig, RulesRejectInconsistentVpcs) {
    const auto nat = ip("198.51.100.1");
    auto make = [](std::vector<VpcNatConfig> v) { return NatRules(std::move(v)); };
    EXPECT_THROW(make({{1, nat, 2000, 1000, {}}}), std::invalid_argument);  // inverted range
    EXPECT_THROW(make({{1, nat, 0, 1000, {}}}), std::invalid_argument);     // port 0
    EXPECT_THROW(make({{1, nat, 1024, 65535, {}}, {1, ip("198.51.100.2"), 1024, 65535, {}}}), std::invalid_argument);
    EXPECT_THROW(make({{1, nat, 1024, 65535, {{Protocol::icmp, 1, ip("10.0.0.1"), 1}}}}), std::invalid_argument);
    // The same address, protocol and port forwarded twice, even from two VPCs sharing the address.
    EXPECT_THROW(make({{1, nat, 1024, 65535, {{Protocol::tcp, 80, ip("10.0.0.1"), 80}}},
                       {2, nat, 1024, 65535, {{Protocol::tcp, 80, ip("10.0.0.2"), 80}}}}),
                 std::invalid_argument);
    const NatRules ok = make({{1, nat, 1024, 65535, {{Protocol::tcp, 80, ip("10.0.0.1"), 8080}}},
                              {2, nat, 1024, 65535, {{Protocol::udp, 80, ip("10.0.0.2"), 53}}}});
    EXPECT_TRUE(ok.is_nat_address(nat));
    EXPECT_FALSE(ok.is_nat_address(ip("198.51.100.2")));
    ASSERT_NE(ok.find_forward(nat, Protocol::udp, 80), nullptr);
    EXPECT_EQ(ok.find_forward(nat, Protocol::udp, 80)->vni, 2u);
    EXPECT_EQ(ok.find_forward_from_endpoint(1, Protocol::tcp, ip("10.0.0.1"), 8080)->forward.nat_port, 80);
    EXPECT_EQ(ok.find_forward_from_endpoint(2, Protocol::tcp, ip("10.0.0.1"), 8080), nullptr);
    EXPECT_TRUE(ok.is_forwarded(nat, Protocol::tcp, 80));
    EXPECT_FALSE(ok.is_forwarded(nat, Protocol::tcp, 81));
}

}  // namespace
}  // namespace andromeda::nat
