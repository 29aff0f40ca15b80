// What andromedad writes into a tenant port's punt bucket (io/plan/punt_limit.hpp).
#include "io/plan/punt_limit.hpp"

#include <gtest/gtest.h>

namespace andromeda::io {
namespace {

TEST(PuntBucket, RateAndBurstBecomeIntervalAndTolerance) {
    const auto b = punt_bucket_update({}, 7, {20000, 2000});
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(b->ifindex, 7u);
    EXPECT_EQ(b->interval_ns, 50'000u);
    EXPECT_EQ(b->tolerance_ns, 1999u * 50'000u) << "burst frames pass at once: the first, then burst - 1 more";
    EXPECT_EQ(b->next_ns, 0u) << "a new port starts with a full bucket";
    EXPECT_EQ(punt_bucket_update({}, 7, {1, 1})->tolerance_ns, 0u) << "burst 1: one at a time";
    EXPECT_EQ(punt_bucket_update({}, 7, {0, 100})->interval_ns, 0u) << "punt_rate = 0: no limit";
    EXPECT_EQ(punt_bucket_update({}, 7, {2'000'000'000, 1})->interval_ns, 1u) << "never 0 for a rate that is set";
}

TEST(PuntBucket, TheSamePortKeepsItsCountersAndLevel) {
    andromeda_punt_limit now = *punt_bucket_update({}, 7, {100, 10});
    now.next_ns = 123;
    now.punted = 40;
    now.rate_limited = 5;
    EXPECT_FALSE(punt_bucket_update(now, 7, {100, 10}).has_value()) << "unchanged: nothing to write";
    const auto changed = punt_bucket_update(now, 7, {200, 10});
    ASSERT_TRUE(changed.has_value());
    EXPECT_EQ(changed->interval_ns, 5'000'000u);
    EXPECT_EQ(changed->next_ns, 123u);
    EXPECT_EQ(changed->punted, 40u);
    EXPECT_EQ(changed->rate_limited, 5u);
}

TEST(PuntBucket, ASlotTakenByAnotherPortStartsAfresh) {
    andromeda_punt_limit now = *punt_bucket_update({}, 7, {100, 10});
    now.next_ns = 123;
    now.punted = 40;
    now.rate_limited = 5;
    const auto fresh = punt_bucket_update(now, 8, {100, 10});
    ASSERT_TRUE(fresh.has_value());
    EXPECT_EQ(fresh->ifindex, 8u);
    EXPECT_EQ(fresh->next_ns, 0u);
    EXPECT_EQ(fresh->punted, 0u);
    EXPECT_EQ(fresh->rate_limited, 0u);
}

}  // namespace
}  // namespace andromeda::io
