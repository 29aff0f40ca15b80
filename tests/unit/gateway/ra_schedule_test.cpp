// The Router Advertisement schedule of one port (RFC 4861 6.2.4, 6.2.6): initial fast
// advertisements, jittered intervals within the configured bounds, at least 3 s between
// advertisements, a multicast answer restarting the interval, and reproducible from its seed.
#include "gateway/ra_schedule.hpp"

#include <gtest/gtest.h>

#include <set>

namespace andromeda::gateway {
namespace {

constexpr std::uint64_t kSecond = kNanosecondsPerSecond;

RouterAdvertisementConfig intervals(std::uint32_t min_s, std::uint32_t max_s) {
    RouterAdvertisementConfig config;
    config.min_interval_s = min_s;
    config.max_interval_s = max_s;
    return config;
}

// Sends every unsolicited advertisement as it falls due, `count` times; returns the intervals.
std::vector<std::uint64_t> run(RouterAdvertisementSchedule& schedule, int count, std::uint64_t start = kSecond) {
    std::vector<std::uint64_t> gaps;
    std::uint64_t now = start;
    EXPECT_EQ(schedule.next_due(now), now);
    for (int i = 0; i < count; ++i) {
        schedule.advertised(now);
        const std::uint64_t next = schedule.next_due(now);
        gaps.push_back(next - now);
        EXPECT_FALSE(schedule.due(next - 1));
        EXPECT_TRUE(schedule.due(next));
        now = next;
    }
    return gaps;
}

TEST(RaScheduleTest, DefaultsFollowRfc4861) {
    const RouterAdvertisementSchedule schedule(RouterAdvertisementConfig{}, 1);
    EXPECT_EQ(schedule.max_interval_ns(), 600 * kSecond);
    EXPECT_EQ(schedule.min_interval_ns(), 198 * kSecond) << "0.33 * MaxRtrAdvInterval";
    EXPECT_EQ(RouterAdvertisementSchedule(intervals(0, 8), 1).min_interval_ns(), 8 * kSecond)
        << "below 9 s the default MinRtrAdvInterval is MaxRtrAdvInterval";
}

TEST(RaScheduleTest, FirstIsDueAtOnceAndThreeFastOnesFollow) {
    RouterAdvertisementSchedule schedule(RouterAdvertisementConfig{}, 42);
    EXPECT_TRUE(schedule.due(5));
    const auto gaps = run(schedule, 6);
    EXPECT_EQ(gaps[0], 16 * kSecond);
    EXPECT_EQ(gaps[1], 16 * kSecond);
    EXPECT_EQ(gaps[2], 16 * kSecond);
    for (std::size_t i = 3; i < gaps.size(); ++i) {
        EXPECT_GE(gaps[i], 198 * kSecond);
        EXPECT_LE(gaps[i], 600 * kSecond);
    }
}

TEST(RaScheduleTest, IntervalsAreJitteredWithinTheBounds) {
    RouterAdvertisementSchedule schedule(intervals(30, 60), 7);
    const auto gaps = run(schedule, 2003);
    std::set<std::uint64_t> distinct;
    std::uint64_t sum = 0;
    for (std::size_t i = 3; i < gaps.size(); ++i) {
        ASSERT_GE(gaps[i], 30 * kSecond);
        ASSERT_LE(gaps[i], 60 * kSecond);
        distinct.insert(gaps[i]);
        sum += gaps[i] / 1000;
    }
    EXPECT_GT(distinct.size(), 1900u) << "nanosecond jitter: practically never the same interval twice";
    const double mean_s = static_cast<double>(sum) / 2000 / 1e6;
    EXPECT_NEAR(mean_s, 45.0, 1.5) << "uniform over [30, 60]";
    // Initial intervals are capped at 16 s even when the minimum is larger.
    EXPECT_EQ(gaps[0], 16 * kSecond);
}

TEST(RaScheduleTest, SmallIntervalsAreNotStretchedByTheInitialCap) {
    RouterAdvertisementSchedule schedule(intervals(3, 4), 9);
    for (const std::uint64_t gap : run(schedule, 50)) {
        EXPECT_GE(gap, 3 * kSecond);
        EXPECT_LE(gap, 4 * kSecond);
    }
}

TEST(RaScheduleTest, SameSeedSameScheduleOtherSeedOther) {
    RouterAdvertisementSchedule a(intervals(30, 60), 1), b(intervals(30, 60), 1), c(intervals(30, 60), 2);
    const auto gaps_a = run(a, 20), gaps_b = run(b, 20), gaps_c = run(c, 20);
    EXPECT_EQ(gaps_a, gaps_b);
    EXPECT_NE(gaps_a, gaps_c);
}

TEST(RaScheduleTest, AnswersAreAtLeastThreeSecondsApart) {
    RouterAdvertisementSchedule schedule(RouterAdvertisementConfig{}, 3);
    EXPECT_TRUE(schedule.may_answer(10 * kSecond)) << "nothing sent yet";
    schedule.answered(10 * kSecond, false);
    EXPECT_EQ(schedule.next_due(10 * kSecond), 13 * kSecond)
        << "the first unsolicited one is due, but not before 3 s after the unicast answer";
    EXPECT_FALSE(schedule.may_answer(11 * kSecond));
    EXPECT_EQ(schedule.next_due(11 * kSecond), 13 * kSecond);
    EXPECT_FALSE(schedule.may_answer(12 * kSecond + kSecond - 1));
    EXPECT_TRUE(schedule.may_answer(13 * kSecond));
}

TEST(RaScheduleTest, DeferralMovesALaterAdvertisementUpButNeverAnEarlierOneBack) {
    RouterAdvertisementSchedule schedule(intervals(200, 600), 5);
    schedule.advertised(0);
    schedule.advertised(16 * kSecond);
    schedule.advertised(32 * kSecond);
    schedule.advertised(48 * kSecond);  // past the initial ones: next in 200-600 s
    const std::uint64_t regular = schedule.next_due(48 * kSecond);
    EXPECT_GE(regular, 248 * kSecond);
    EXPECT_FALSE(schedule.may_answer(49 * kSecond));
    EXPECT_EQ(schedule.next_due(49 * kSecond), 51 * kSecond) << "moved up to answer the solicitation";

    RouterAdvertisementSchedule fast(intervals(3, 4), 5);
    fast.advertised(0);
    EXPECT_GE(fast.next_due(0), 3 * kSecond);
    EXPECT_FALSE(fast.may_answer(kSecond));
    EXPECT_EQ(fast.next_due(kSecond), 3 * kSecond) << "never earlier than 3 s after the last";
}

TEST(RaScheduleTest, MulticastAnswerRestartsTheInterval) {
    RouterAdvertisementSchedule schedule(intervals(200, 600), 11);
    for (std::uint64_t t : {0ull, 16ull, 32ull, 48ull}) schedule.advertised(t * kSecond);
    ASSERT_TRUE(schedule.may_answer(100 * kSecond));
    schedule.answered(100 * kSecond, true);
    EXPECT_EQ(schedule.advertisements(), 5u);
    const std::uint64_t next = schedule.next_due(100 * kSecond);
    EXPECT_GE(next, 300 * kSecond);
    EXPECT_LE(next, 700 * kSecond);

    ASSERT_TRUE(schedule.may_answer(200 * kSecond));
    schedule.answered(200 * kSecond, false);
    EXPECT_EQ(schedule.next_due(200 * kSecond), next) << "a unicast answer leaves the interval alone";
    EXPECT_EQ(schedule.advertisements(), 5u);
}

}  // namespace
}  // namespace andromeda::gateway
