// The per-source token bucket for ICMP errors, driven by an injected clock.
#include <gtest/gtest.h>

#include "gateway/rate_limiter.hpp"
#include "unit/dataplane/test_frames.hpp"

namespace andromeda::gateway {
namespace {

using testing::ipv4;

constexpr std::uint64_t kSecond = 1'000'000'000;

struct FakeClock {
    std::uint64_t now = 5 * kSecond;
    IcmpErrorRateLimiter::Clock clock() {
        return [this] { return now; };
    }
};

TEST(RateLimiterTest, BurstThenSustainedRate) {
    FakeClock time;
    IcmpErrorRateLimiter limiter({10, 5, 64}, time.clock());
    const RateLimitKey source = RateLimitKey::of(100, ipv4("10.0.0.10"));
    for (int i = 0; i < 5; ++i) EXPECT_TRUE(limiter.allow(source)) << i;
    EXPECT_FALSE(limiter.allow(source));
    time.now += kSecond / 10 - 1;  // not quite one token's worth
    EXPECT_FALSE(limiter.allow(source));
    time.now += 1;
    EXPECT_TRUE(limiter.allow(source));
    EXPECT_FALSE(limiter.allow(source));
    // Ten seconds of silence refill only up to the burst.
    time.now += 10 * kSecond;
    int allowed = 0;
    while (limiter.allow(source)) ++allowed;
    EXPECT_EQ(allowed, 5);
}

TEST(RateLimiterTest, SourcesAndScopesHaveTheirOwnBuckets) {
    FakeClock time;
    IcmpErrorRateLimiter limiter({1, 1, 64}, time.clock());
    const auto blue = RateLimitKey::of(100, ipv4("10.0.0.10"));
    const auto green_same_ip = RateLimitKey::of(200, ipv4("10.0.0.10"));
    const auto blue_other = RateLimitKey::of(100, ipv4("10.0.0.11"));
    EXPECT_TRUE(limiter.allow(blue));
    EXPECT_FALSE(limiter.allow(blue));
    EXPECT_TRUE(limiter.allow(green_same_ip));
    EXPECT_TRUE(limiter.allow(blue_other));
    EXPECT_NE(RateLimitKey::of(0, ipv4("10.0.0.10")), RateLimitKey::of(0, *wire::Ipv6Address::parse("fd00::a00:a")));
    EXPECT_EQ(RateLimitKey::of(0, ipv4("10.0.0.10")), RateLimitKey::of(0, *wire::Ipv6Address::parse("::ffff:10.0.0.10")));
}

TEST(RateLimiterTest, MemoryIsBoundedUnderAFloodOfSources) {
    FakeClock time;
    IcmpErrorRateLimiter limiter({10, 2, 100}, time.clock());
    EXPECT_EQ(limiter.capacity(), 128u);  // rounded up to a power of two
    for (std::uint32_t i = 0; i < 10000; ++i) {
        time.now += 1000;
        EXPECT_TRUE(limiter.allow(RateLimitKey::of(1, wire::Ipv4Address(0x0a000000 + i))));
    }
    EXPECT_EQ(limiter.tracked_sources(), limiter.capacity());
    EXPECT_EQ(limiter.evictions(), 10000u - limiter.capacity());
}

TEST(RateLimiterTest, AnActiveSourceSurvivesChurnInOtherSets) {
    FakeClock time;
    IcmpErrorRateLimiter limiter({1, 1, 4096}, time.clock());
    const auto busy = RateLimitKey::of(1, ipv4("10.0.0.10"));
    EXPECT_TRUE(limiter.allow(busy));
    for (std::uint32_t i = 0; i < 100; ++i) (void)limiter.allow(RateLimitKey::of(2, wire::Ipv4Address(i)));
    EXPECT_FALSE(limiter.allow(busy));  // still remembered with an empty bucket
}

TEST(RateLimiterTest, ClockGoingBackwardsRefillsNothing) {
    FakeClock time;
    IcmpErrorRateLimiter limiter({1, 1, 4}, time.clock());
    const auto source = RateLimitKey::of(1, ipv4("10.0.0.10"));
    EXPECT_TRUE(limiter.allow(source));
    time.now -= 3 * kSecond;
    EXPECT_FALSE(limiter.allow(source));
    EXPECT_TRUE(limiter.allow(source, time.now + 4 * kSecond));
}

TEST(RateLimiterTest, DefaultClockIsMonotonic) {
    IcmpErrorRateLimiter limiter;
    const auto source = RateLimitKey::of(1, ipv4("10.0.0.10"));
    int allowed = 0;
    for (int i = 0; i < 100; ++i) allowed += limiter.allow(source) ? 1 : 0;
    EXPECT_GE(allowed, 10);  // the default burst
    EXPECT_LT(allowed, 100);
}

}  // namespace
}  // namespace andromeda::gateway
