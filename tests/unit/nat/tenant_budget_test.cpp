// The new-flow budget per tenant (nat/tenant_budget.hpp): the rate and burst it promises, one
// tenant's exhaustion leaving the others theirs, a limit changed at run time, and the engine
// refusing a flooding tenant's new flows (counted) while its neighbour and its own established
// flows go on.
#include <gtest/gtest.h>

#include <random>

#include "nat/tenant_budget.hpp"
#include "nat_test_packets.hpp"

namespace andromeda::nat {
namespace {

using namespace test;

constexpr std::int64_t kSecond = 1'000'000'000;
constexpr std::int64_t kT0 = 1000 * kSecond;

std::size_t taken(TenantFlowBudget& budget, std::uint32_t vni, std::uint32_t ip, std::int64_t now, std::size_t tries) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < tries; ++i) n += budget.take(vni, ip, now) ? 1 : 0;
    return n;
}

TEST(TenantFlowBudget, ABurstAtOnceThenTheRate) {
    TenantFlowBudget budget({100, 20}, 64, 1);
    EXPECT_EQ(taken(budget, 1, 10, kT0, 50), 20u) << "the burst, at one instant";
    EXPECT_EQ(taken(budget, 1, 10, kT0 + kSecond / 100 - 1, 5), 0u) << "nothing before one interval";
    EXPECT_EQ(taken(budget, 1, 10, kT0 + kSecond / 100, 5), 1u) << "one per interval";
    // Over ten seconds at a steady demand far above the rate: the rate, to within the burst.
    std::size_t n = 0;
    for (std::int64_t t = kT0 + kSecond; t < kT0 + 11 * kSecond; t += kSecond / 1000) n += taken(budget, 1, 10, t, 3);
    EXPECT_GE(n, 1000u);
    EXPECT_LE(n, 1000u + 20u);
}

TEST(TenantFlowBudget, AnIdleTenantGetsItsBurstBackButNoMore) {
    TenantFlowBudget budget({10, 5}, 64, 1);
    EXPECT_EQ(taken(budget, 1, 10, kT0, 10), 5u);
    EXPECT_EQ(taken(budget, 1, 10, kT0 + 60 * kSecond, 100), 5u) << "a minute idle: the burst, not 600";
}

TEST(TenantFlowBudget, TenantsAreApartByAddressAndByVni) {
    TenantFlowBudget budget({10, 5}, 64, 1);
    EXPECT_EQ(taken(budget, 1, 10, kT0, 100), 5u);
    EXPECT_EQ(taken(budget, 1, 11, kT0, 100), 5u) << "another address of the VPC";
    EXPECT_EQ(taken(budget, 2, 10, kT0, 100), 5u) << "the same address in another VPC";
    EXPECT_EQ(taken(budget, 1, 10, kT0, 1), 0u) << "the first is still exhausted";
}

TEST(TenantFlowBudget, ZeroRateIsUnlimitedAndALimitChangesAtRunTime) {
    TenantFlowBudget budget({0, 0}, 64, 1);
    EXPECT_EQ(taken(budget, 1, 10, kT0, 100000), 100000u);
    budget.set_limit({10, 3});
    EXPECT_EQ(budget.limit(), (TenantFlowLimit{10, 3}));
    EXPECT_EQ(taken(budget, 1, 10, kT0, 10), 3u);
    budget.set_limit({0, 0});
    EXPECT_EQ(taken(budget, 1, 10, kT0, 10), 10u);
}

// More tenants than the table tracks: the newcomers are served (a forgotten tenant starts over
// with a full burst, never with none), and the table stays at its size.
TEST(TenantFlowBudget, MoreTenantsThanTrackedAreAllServed) {
    TenantFlowBudget budget({10, 2}, 64, 7);
    for (std::uint32_t ip = 1; ip <= 10000; ++ip) EXPECT_TRUE(budget.take(1, ip, kT0)) << ip;
    EXPECT_LE(budget.tracked(), 64u);
    // A tenant the table still holds keeps its debt: tenant 10000 was the last one placed.
    EXPECT_TRUE(budget.take(1, 10000, kT0));
    EXPECT_FALSE(budget.take(1, 10000, kT0));
}

// The property behind it: whatever the arrival pattern, a tenant gets at most
// burst + rate * elapsed flows, and a tenant asking no faster than the rate is never refused.
TEST(TenantFlowBudget, NeverMoreThanBurstPlusRateAndNeverRefusesAConformingTenant) {
    std::mt19937_64 rng(42);
    for (int round = 0; round < 50; ++round) {
        const auto rate = static_cast<std::uint32_t>(1 + rng() % 5000);
        const auto burst = static_cast<std::uint32_t>(1 + rng() % 100);
        TenantFlowBudget budget({rate, burst}, 64, rng());
        std::int64_t t = kT0;
        std::uint64_t granted = 0;
        for (int i = 0; i < 2000; ++i) {
            t += static_cast<std::int64_t>(rng() % (2 * kSecond / rate + 1));
            granted += budget.take(3, 4, t) ? 1 : 0;
        }
        const double allowed = burst + static_cast<double>(rate) * static_cast<double>(t - kT0) / kSecond;
        EXPECT_LE(static_cast<double>(granted), allowed + 1) << "rate " << rate << " burst " << burst;
        // Conforming: one flow every interval exactly.
        TenantFlowBudget steady({rate, burst}, 64, rng());
        const std::int64_t interval = kSecond / rate;
        for (int i = 0; i < 500; ++i) ASSERT_TRUE(steady.take(5, 6, kT0 + i * interval)) << "rate " << rate << " i " << i;
    }
}

// Through the engine: one tenant opening flows as fast as it can gets its burst, the rest
// refused and counted as tenant_flow_rate_limited; its neighbour opens its own flows, and the
// flooder's established flows keep translating.
TEST(TenantFlowBudget, TheEngineRefusesAFloodingTenantsNewFlowsOnly) {
    NatSettings settings = small_settings();
    settings.tenant_flows = {100, 10};
    NatEngine nat(settings);
    nat.set_rules(one_vpc_rules(100, ip("198.51.100.1")));
    const Ipv4Address flooder = ip("10.0.0.10"), neighbour = ip("10.0.0.11"), remote = ip("203.0.113.7");
    const TimePoint now = at(1000.0);
    std::size_t opened = 0;
    for (std::uint16_t port = 20000; port < 20100; ++port) {
        Bytes p = udp_packet(flooder, port, remote, 53);
        opened += nat.outbound(100, p, now).translated() ? 1 : 0;
    }
    EXPECT_EQ(opened, 10u);
    EXPECT_EQ(nat.counters().drops(DropReason::tenant_flow_rate_limited), 90u);
    Bytes again = udp_packet(flooder, 20000, remote, 53);
    EXPECT_TRUE(nat.outbound(100, again, now).translated()) << "an established flow is not a new one";
    Bytes neighbours = udp_packet(neighbour, 30000, remote, 53);
    EXPECT_TRUE(nat.outbound(100, neighbours, now).translated());
    Bytes later = udp_packet(flooder, 21000, remote, 53);
    EXPECT_TRUE(nat.outbound(100, later, at(1000.0 + 0.011)).translated()) << "one more after an interval (10 ms)";
}

}  // namespace
}  // namespace andromeda::nat
