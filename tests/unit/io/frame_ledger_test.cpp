// The frame-ownership ledger: legal hand-overs, caught double frees, and a randomized run of
// the worker's life cycle (fill, receive, transmit, complete, drop of every kind) that must
// always balance.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "io/xsk/frame_ledger.hpp"

namespace andromeda::io {
namespace {

TEST(FrameLedger, StartsWithEveryFrameFree) {
    FrameLedger ledger(128);
    EXPECT_EQ(ledger.count(FrameOwner::free_pool), 128u);
    EXPECT_EQ(ledger.count(FrameOwner::fill_ring), 0u);
    EXPECT_TRUE(ledger.audit());
}

TEST(FrameLedger, FollowsAFrameThroughItsLife) {
    FrameLedger ledger(4);
    EXPECT_TRUE(ledger.move(2, FrameOwner::free_pool, FrameOwner::fill_ring));
    EXPECT_TRUE(ledger.move(2, FrameOwner::fill_ring, FrameOwner::worker));
    EXPECT_TRUE(ledger.move(2, FrameOwner::worker, FrameOwner::tx_ring));
    EXPECT_EQ(ledger.owner(2), FrameOwner::tx_ring);
    EXPECT_EQ(ledger.count(FrameOwner::tx_ring), 1u);
    EXPECT_TRUE(ledger.move(2, FrameOwner::tx_ring, FrameOwner::free_pool));
    EXPECT_EQ(ledger.count(FrameOwner::free_pool), 4u);
    EXPECT_TRUE(ledger.audit());
    EXPECT_EQ(ledger.summary(), "free_pool 4, fill_ring 0, worker 0, tx_ring 0, violations 0");
}

TEST(FrameLedger, RefusesAndCountsAHandOverFromTheWrongOwner) {
    FrameLedger ledger(4);
    ASSERT_TRUE(ledger.move(1, FrameOwner::free_pool, FrameOwner::worker));
    ASSERT_TRUE(ledger.move(1, FrameOwner::worker, FrameOwner::free_pool));
    EXPECT_FALSE(ledger.move(1, FrameOwner::worker, FrameOwner::free_pool));  // a double free
    EXPECT_FALSE(ledger.move(9, FrameOwner::free_pool, FrameOwner::worker));  // no such frame
    EXPECT_EQ(ledger.violations(), 2u);
    EXPECT_EQ(ledger.count(FrameOwner::free_pool), 4u);  // nothing moved
    EXPECT_FALSE(ledger.audit());
}

// A model of the worker: frames go free -> fill -> worker and then to TX or back to free by
// one of the drop paths; completions return TX frames. The ledger must agree with the model
// at every step and balance at the end.
TEST(FrameLedger, RandomizedWorkerLifeCycleAlwaysBalances) {
    constexpr std::uint32_t kFrames = 256;
    FrameLedger ledger(kFrames);
    std::vector<std::uint32_t> free_pool, fill, held, tx;
    for (std::uint32_t i = 0; i < kFrames; ++i) free_pool.push_back(i);
    std::mt19937 rng(12345);
    const auto take = [&](std::vector<std::uint32_t>& from) {
        std::uniform_int_distribution<std::size_t> pick(0, from.size() - 1);
        const std::size_t at = pick(rng);
        const std::uint32_t frame = from[at];
        from[at] = from.back();
        from.pop_back();
        return frame;
    };
    for (int step = 0; step < 200000; ++step) {
        switch (rng() % 5) {
        case 0:  // refill
            if (!free_pool.empty()) {
                const auto f = take(free_pool);
                ASSERT_TRUE(ledger.move(f, FrameOwner::free_pool, FrameOwner::fill_ring));
                fill.push_back(f);
            }
            break;
        case 1:  // receive
            if (!fill.empty()) {
                const auto f = take(fill);
                ASSERT_TRUE(ledger.move(f, FrameOwner::fill_ring, FrameOwner::worker));
                held.push_back(f);
            }
            break;
        case 2:  // transmit
            if (!held.empty()) {
                const auto f = take(held);
                ASSERT_TRUE(ledger.move(f, FrameOwner::worker, FrameOwner::tx_ring));
                tx.push_back(f);
            }
            break;
        case 3:  // a drop of any kind: handler, unhandled, TX ring full, bad socket
            if (!held.empty()) {
                const auto f = take(held);
                ASSERT_TRUE(ledger.move(f, FrameOwner::worker, FrameOwner::free_pool));
                free_pool.push_back(f);
            }
            break;
        default:  // completion
            if (!tx.empty()) {
                const auto f = take(tx);
                ASSERT_TRUE(ledger.move(f, FrameOwner::tx_ring, FrameOwner::free_pool));
                free_pool.push_back(f);
            }
        }
        ASSERT_EQ(ledger.count(FrameOwner::worker), held.size());
        ASSERT_EQ(ledger.count(FrameOwner::fill_ring), fill.size());
    }
    EXPECT_TRUE(ledger.audit()) << ledger.summary();
    EXPECT_EQ(ledger.count(FrameOwner::free_pool) + ledger.count(FrameOwner::fill_ring) + ledger.count(FrameOwner::worker) +
                  ledger.count(FrameOwner::tx_ring),
              kFrames);
}

}  // namespace
}  // namespace andromeda::io
