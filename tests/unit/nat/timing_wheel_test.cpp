// The hashed timing wheel on its own: exact deadlines, O(1) refresh, cost per tick proportional
// to what expires, budgets, long pauses.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "nat/timing_wheel.hpp"

namespace andromeda::nat {
namespace {

constexpr std::int64_t kSecond = 1'000'000'000;

std::vector<std::uint32_t> advance_all(TimingWheel& wheel, std::int64_t now) {
    std::vector<std::uint32_t> expired;
    wheel.advance(now, TimingWheel::kNil, [&](std::uint32_t id) { expired.push_back(id); });
    return expired;
}

TEST(TimingWheel, EntryExpiresAtItsDeadlineNotBefore) {
    TimingWheel wheel(8, kSecond, 64);
    const std::int64_t t0 = 1000 * kSecond + 123;
    wheel.schedule(3, t0 + 30 * kSecond, t0);
    EXPECT_FALSE(wheel.expired(3, t0 + 30 * kSecond - 1));
    EXPECT_TRUE(wheel.expired(3, t0 + 30 * kSecond));
    EXPECT_TRUE(advance_all(wheel, t0 + 30 * kSecond - 1).empty());
    // The tick holding the deadline fires at the first tick boundary at or after it.
    EXPECT_EQ(advance_all(wheel, t0 + 31 * kSecond), std::vector<std::uint32_t>{3});
    EXPECT_FALSE(wheel.scheduled(3));
    EXPECT_EQ(wheel.size(), 0u);
}

TEST(TimingWheel, DeadlineOnATickBoundaryFiresInThatTick) {
    TimingWheel wheel(4, kSecond, 16);
    wheel.schedule(0, 10 * kSecond, 0);
    EXPECT_TRUE(advance_all(wheel, 10 * kSecond - 1).empty());
    EXPECT_EQ(advance_all(wheel, 10 * kSecond), std::vector<std::uint32_t>{0});
}

TEST(TimingWheel, LaterRefreshIsLazyAndRefiledWhenTheOldSlotFires) {
    TimingWheel wheel(4, kSecond, 64);
    wheel.schedule(1, 10 * kSecond, 0);
    wheel.refresh(1, 20 * kSecond);
    wheel.refresh(1, 25 * kSecond);  // many refreshes, still one entry, one refile
    EXPECT_TRUE(advance_all(wheel, 15 * kSecond).empty());
    EXPECT_EQ(wheel.refiled(), 1u);
    EXPECT_TRUE(advance_all(wheel, 25 * kSecond - 1).empty());
    EXPECT_EQ(advance_all(wheel, 25 * kSecond), std::vector<std::uint32_t>{1});
}

TEST(TimingWheel, EarlierRefreshMovesTheEntryAtOnce) {
    TimingWheel wheel(4, kSecond, 8192);
    wheel.schedule(2, 7440 * kSecond, 0);  // established
    wheel.refresh(2, 30 * kSecond);        // FIN: closing timeout
    EXPECT_EQ(advance_all(wheel, 30 * kSecond), std::vector<std::uint32_t>{2});
    EXPECT_EQ(wheel.refiled(), 0u);
}

TEST(TimingWheel, CancelUnlinksInConstantTime) {
    TimingWheel wheel(8, kSecond, 16);
    for (std::uint32_t id = 0; id < 5; ++id) wheel.schedule(id, 5 * kSecond, 0);
    wheel.cancel(0);
    wheel.cancel(2);
    wheel.cancel(4);
    wheel.cancel(4);  // twice is harmless
    const auto expired = advance_all(wheel, 5 * kSecond);
    EXPECT_EQ(std::set<std::uint32_t>(expired.begin(), expired.end()), (std::set<std::uint32_t>{1, 3}));
}

TEST(TimingWheel, TickCostIsProportionalToWhatExpires) {
    // 10,000 entries due far in the future and 3 due now: the tick hands over exactly 3 and
    // visits nothing else (no refiles).
    TimingWheel wheel(10'003, kSecond, 8192);
    for (std::uint32_t id = 0; id < 10'000; ++id) wheel.schedule(id, 3600 * kSecond + id, 0);
    for (std::uint32_t id = 10'000; id < 10'003; ++id) wheel.schedule(id, 2 * kSecond, 0);
    std::size_t visited = 0;
    const std::size_t expired = wheel.advance(2 * kSecond, TimingWheel::kNil, [&](std::uint32_t) { ++visited; });
    EXPECT_EQ(expired, 3u);
    EXPECT_EQ(visited, 3u);
    EXPECT_EQ(wheel.refiled(), 0u);
    EXPECT_EQ(wheel.size(), 10'000u);
}

TEST(TimingWheel, BudgetLimitsWorkAndTheRestFollowsNextCall) {
    TimingWheel wheel(100, kSecond, 16);
    for (std::uint32_t id = 0; id < 100; ++id) wheel.schedule(id, kSecond, 0);
    std::size_t n = 0;
    EXPECT_EQ(wheel.advance(kSecond, 30, [&](std::uint32_t) { ++n; }), 30u);
    EXPECT_EQ(wheel.advance(kSecond, 30, [&](std::uint32_t) { ++n; }), 30u);
    EXPECT_EQ(wheel.advance(2 * kSecond, 1000, [&](std::uint32_t) { ++n; }), 40u);
    EXPECT_EQ(n, 100u);
    EXPECT_EQ(wheel.size(), 0u);
}

TEST(TimingWheel, DeadlinesBeyondOneRotationWaitForTheirTurn) {
    TimingWheel wheel(2, kSecond, 8);  // spans 8 s
    wheel.schedule(0, 20 * kSecond, 0);
    wheel.schedule(1, 3 * kSecond, 0);
    for (std::int64_t t = 1; t < 20; ++t) {
        const auto expired = advance_all(wheel, t * kSecond);
        if (t == 3) {
            EXPECT_EQ(expired, std::vector<std::uint32_t>{1});
        } else {
            EXPECT_TRUE(expired.empty()) << "at " << t << " s";
        }
    }
    EXPECT_EQ(advance_all(wheel, 20 * kSecond), std::vector<std::uint32_t>{0});
}

TEST(TimingWheel, LongPauseVisitsEachSlotOnceAndExpiresEverythingDue) {
    TimingWheel wheel(3, kSecond, 16);
    wheel.schedule(0, 5 * kSecond, 0);
    wheel.schedule(1, 50 * kSecond, 0);
    wheel.schedule(2, 5000 * kSecond, 0);
    const auto expired = advance_all(wheel, 4000 * kSecond);
    EXPECT_EQ(std::set<std::uint32_t>(expired.begin(), expired.end()), (std::set<std::uint32_t>{0, 1}));
    EXPECT_EQ(advance_all(wheel, 5000 * kSecond), std::vector<std::uint32_t>{2});
}

TEST(TimingWheel, ScheduleIntoAnAlreadyProcessedTickStillFires) {
    TimingWheel wheel(2, kSecond, 16);
    advance_all(wheel, 100 * kSecond);
    wheel.schedule(0, 100 * kSecond + 1, 100 * kSecond);  // same tick as now, which ran already
    EXPECT_EQ(advance_all(wheel, 101 * kSecond), std::vector<std::uint32_t>{0});
}

}  // namespace
}  // namespace andromeda::nat
