// The punt token bucket of a tenant port (andromeda_punt_limits, bpf/lib/punt.h) run by
// andromeda_tc_tenant: an idle port punts its burst, then every frame it would punt is dropped and
// counted (drop_punt_rate_limited, the bucket's own rate_limited) until time refills the bucket;
// ARP goes through the same bucket; another port's bucket is its own; a slot the daemon never
// wrote limits nothing. The buckets are written as andromedad writes them
// (io::punt_bucket_update), then given an interval of an hour, so that no token comes back while
// the test runs; time is then moved by moving the bucket's timestamp back.
#include "io/plan/punt_limit.hpp"

#include <gtest/gtest.h>
#include <linux/pkt_cls.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "differential_check.hpp"
#include "support/root.hpp"

namespace andromeda::fast_path_test {
namespace {

constexpr std::uint64_t kHour = 3600ull * 1'000'000'000;
constexpr std::uint32_t kBurst = 5;

class PuntLimit : public ::testing::Test {
protected:
    void SetUp() override {
        ANDROMEDA_REQUIRE_ROOT();
        world_ = std::make_unique<World>(Encap::andromeda, fabric_toml(Encap::andromeda));
        ASSERT_TRUE(world_->error().empty()) << world_->error();
    }

    std::uint32_t slot_of(std::uint32_t ifindex) const {
        andromeda_port port{};
        EXPECT_EQ(bpf_map_lookup_elem(World::fd(world_->skel().maps.andromeda_ports), &ifindex, &port), 0);
        return port.slot;
    }
    andromeda_punt_limit bucket(std::uint32_t ifindex) const {
        const std::uint32_t slot = slot_of(ifindex);
        andromeda_punt_limit b{};
        EXPECT_EQ(bpf_map_lookup_elem(World::fd(world_->skel().maps.andromeda_punt_limits), &slot, &b), 0);
        return b;
    }
    void write(std::uint32_t ifindex, const andromeda_punt_limit& b) {
        const std::uint32_t slot = slot_of(ifindex);
        ASSERT_EQ(bpf_map_update_elem(World::fd(world_->skel().maps.andromeda_punt_limits), &slot, &b, BPF_ANY), 0)
            << std::strerror(errno);
    }
    // As andromedad configures the port, then slowed to one token an hour.
    void limit(std::uint32_t ifindex) {
        auto b = io::punt_bucket_update(bucket(ifindex), ifindex, {1, kBurst});
        ASSERT_TRUE(b.has_value());
        b->interval_ns = kHour;
        b->tolerance_ns = (kBurst - 1) * kHour;
        write(ifindex, *b);
    }

    // Runs `frame` on the port; the counters that moved, the verdict checked against them.
    std::vector<std::string> run(std::uint32_t ifindex, const Bytes& frame) {
        const TenantBpf b = world_->run_tenant(ifindex, frame);
        EXPECT_EQ(b.run.error, 0) << std::strerror(b.run.error);
        const std::vector<std::string> counters = moved(b.delta);
        const bool dropped = counters == std::vector<std::string>{"drop_punt_rate_limited"};
        EXPECT_EQ(b.run.retval, static_cast<std::uint32_t>(dropped ? TC_ACT_SHOT : TC_ACT_REDIRECT));
        return counters;
    }

    const std::vector<std::string> kPunted{"punt_packets", "punt_no_route"};
    const std::vector<std::string> kArpPunted{"punt_packets", "punt_not_ipv4"};
    const std::vector<std::string> kLimited{"drop_punt_rate_limited"};
    std::unique_ptr<World> world_;
};

Bytes to_the_outside(int endpoint) { return ipv4(tenant_spec("blue", endpoint, ip4(8, 8, 8, 8))); }

Bytes arp_for_the_gateway() {
    const EndpointDef& e = endpoint("blue", 10);
    return arp(e.mac, kBroadcastMac, 1, e.mac, e.ip, vpc_named("blue").gateway);
}

TEST_F(PuntLimit, TheBurstPassesTheRestIsDroppedAndCountedOnItsPort) {
    const std::uint32_t b10 = world_->tenant("tap-b10"), b11 = world_->tenant("tap-b11");
    limit(b10);
    limit(b11);
    for (std::uint32_t i = 0; i < kBurst; ++i) EXPECT_EQ(run(b10, to_the_outside(10)), kPunted) << "frame " << i;
    for (int i = 0; i < 3; ++i) EXPECT_EQ(run(b10, to_the_outside(10)), kLimited) << "frame " << kBurst + i;
    // ARP of a flooding tenant is limited with the rest of its punts.
    EXPECT_EQ(run(b10, arp_for_the_gateway()), kLimited);
    EXPECT_EQ(bucket(b10).punted, kBurst);
    EXPECT_EQ(bucket(b10).rate_limited, 4u);
    // The neighbour's bucket is untouched: its whole burst still passes.
    for (std::uint32_t i = 0; i < kBurst; ++i) EXPECT_EQ(run(b11, to_the_outside(11)), kPunted) << "b11 frame " << i;
    EXPECT_EQ(bucket(b11).rate_limited, 0u);
}

TEST_F(PuntLimit, TimeRefillsTheBucketOneTokenPerInterval) {
    const std::uint32_t b10 = world_->tenant("tap-b10");
    limit(b10);
    for (std::uint32_t i = 0; i < kBurst; ++i) ASSERT_EQ(run(b10, to_the_outside(10)), kPunted);
    ASSERT_EQ(run(b10, to_the_outside(10)), kLimited);

    // Two intervals later: two tokens, the third frame finds none.
    andromeda_punt_limit b = bucket(b10);
    b.next_ns -= 2 * kHour;
    write(b10, b);
    EXPECT_EQ(run(b10, arp_for_the_gateway()), kArpPunted);
    EXPECT_EQ(run(b10, to_the_outside(10)), kPunted);
    EXPECT_EQ(run(b10, to_the_outside(10)), kLimited);

    // Idle for longer than the burst takes to refill: the bucket is full, never fuller.
    b = bucket(b10);
    b.next_ns = 0;  // long past (the clock counts from boot)
    write(b10, b);
    for (std::uint32_t i = 0; i < kBurst; ++i) EXPECT_EQ(run(b10, to_the_outside(10)), kPunted) << "frame " << i;
    EXPECT_EQ(run(b10, to_the_outside(10)), kLimited);
    EXPECT_EQ(bucket(b10).punted, 2 * kBurst + 2);
    EXPECT_EQ(bucket(b10).rate_limited, 3u);
}

TEST_F(PuntLimit, AnUnwrittenOrUnlimitedBucketLimitsNothing) {
    const std::uint32_t b10 = world_->tenant("tap-b10");
    for (int i = 0; i < 50; ++i) ASSERT_EQ(run(b10, to_the_outside(10)), kPunted) << "unwritten, frame " << i;
    const auto unlimited = io::punt_bucket_update(bucket(b10), b10, {0, 1});
    ASSERT_TRUE(unlimited.has_value());
    write(b10, *unlimited);
    for (int i = 0; i < 50; ++i) ASSERT_EQ(run(b10, to_the_outside(10)), kPunted) << "punt_rate = 0, frame " << i;
    EXPECT_EQ(bucket(b10).rate_limited, 0u);
}

// What the fast path takes itself never touches the bucket: an empty bucket still encapsulates.
TEST_F(PuntLimit, FramesTheFastPathForwardsTakeNoToken) {
    const std::uint32_t b10 = world_->tenant("tap-b10");
    limit(b10);
    for (std::uint32_t i = 0; i < kBurst; ++i) ASSERT_EQ(run(b10, to_the_outside(10)), kPunted);
    ASSERT_EQ(run(b10, to_the_outside(10)), kLimited);
    const TenantBpf b = world_->run_tenant(b10, ipv4(tenant_spec("blue", 10, ip4(10, 0, 0, 20))));
    EXPECT_EQ(moved(b.delta), std::vector<std::string>{"encap_packets"});
    EXPECT_EQ(bucket(b10).rate_limited, 1u);
}

}  // namespace
}  // namespace andromeda::fast_path_test
