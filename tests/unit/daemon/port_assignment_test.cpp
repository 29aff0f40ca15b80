#include "daemon/port_assignment.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <stdexcept>
#include <vector>

namespace andromeda::daemon {
namespace {

using Load = std::vector<std::size_t>;

// workers = 3 on a one-queue underlay: worker 0 keeps the underlay, tenant ports alternate over
// the two tenant-only workers, ties to the lower index.
TEST(PortAssignment, PrefersTenantOnlyWorkersLeastLoadedFirst) {
    PortAssignment a(1, 3);
    EXPECT_EQ(a.assign(10), 1u);
    EXPECT_EQ(a.assign(11), 2u);
    EXPECT_EQ(a.assign(12), 1u);
    EXPECT_EQ(a.assign(13), 2u);
    EXPECT_EQ(a.load(), (Load{0, 2, 2}));
}

TEST(PortAssignment, WithoutTenantOnlyWorkersEveryWorkerIsACandidate) {
    PortAssignment a(2, 2);
    EXPECT_EQ(a.assign(5), 0u);
    EXPECT_EQ(a.assign(6), 1u);
    EXPECT_EQ(a.assign(7), 0u);
}

// A reload: ports that stay keep their worker, a removed port's place goes to the next new one.
TEST(PortAssignment, StableAcrossReloads) {
    PortAssignment a(1, 3);
    a.assign(10);  // -> 1
    a.assign(11);  // -> 2
    a.assign(12);  // -> 1
    a.release(10);
    EXPECT_EQ(a.load(), (Load{0, 1, 1}));
    EXPECT_EQ(a.worker_of(10), std::nullopt);
    EXPECT_EQ(a.assign(11), 2u) << "a port that stays keeps its worker";
    EXPECT_EQ(a.assign(12), 1u);
    EXPECT_EQ(a.assign(20), 1u) << "tie between 1 and 2: lowest index";
    EXPECT_EQ(a.assign(21), 2u) << "then the least loaded";
    EXPECT_EQ(a.load(), (Load{0, 2, 2}));
}

TEST(PortAssignment, NewPortGoesToTheLeastLoadedWorker) {
    PortAssignment a(1, 4);
    for (std::uint32_t i = 0; i < 6; ++i) a.assign(100 + i);  // 1,2,3,1,2,3
    a.release(102);                                           // worker 3 now has 1
    a.release(105);                                           // worker 3 now has 0
    a.release(100);                                           // worker 1 has 1, 2 has 2
    EXPECT_EQ(a.load(), (Load{0, 1, 2, 0}));
    EXPECT_EQ(a.assign(200), 3u);
    EXPECT_EQ(a.assign(201), 1u);
    EXPECT_EQ(a.assign(202), 3u);
}

TEST(PortAssignment, ReleasingAnUnknownPortChangesNothing) {
    PortAssignment a(1, 2);
    a.assign(7);
    a.release(8);
    a.release(7);
    a.release(7);
    EXPECT_EQ(a.load(), (Load{0, 0}));
}

TEST(PortAssignment, RejectsFewerWorkersThanUnderlayQueues) {
    EXPECT_THROW(PortAssignment(2, 1), std::invalid_argument);
    EXPECT_THROW(PortAssignment(0, 1), std::invalid_argument);
}

// Random reloads: the same history gives the same assignment, kept ports never move, and the
// a new port goes to the least-loaded tenant-only worker.
TEST(PortAssignment, DeterministicAndStableUnderRandomReloads) {
    std::mt19937 rng(32);
    for (int round = 0; round < 50; ++round) {
        const std::uint32_t underlay = 1 + rng() % 3;
        const std::uint32_t workers = underlay + 1 + rng() % 4;
        PortAssignment a(underlay, workers);
        PortAssignment b(underlay, workers);
        std::map<std::uint32_t, std::uint32_t> seen;
        for (int step = 0; step < 200; ++step) {
            const std::uint32_t ifindex = 1 + rng() % 40;
            if (rng() % 3 == 0) {
                a.release(ifindex);
                b.release(ifindex);
                seen.erase(ifindex);
                continue;
            }
            const bool known = a.worker_of(ifindex).has_value();
            const Load before = a.load();
            const std::uint32_t w = a.assign(ifindex);
            ASSERT_EQ(b.assign(ifindex), w);
            for (std::uint32_t other = underlay; other < workers && !known; ++other) {
                ASSERT_TRUE(before[w] < before[other] || (before[w] == before[other] && w <= other))
                    << "worker " << w << " chosen over a less loaded " << other;
            }
            ASSERT_GE(w, underlay) << "the underlay's workers get no tenant port";
            ASSERT_LT(w, workers);
            if (const auto it = seen.find(ifindex); it != seen.end()) {
                ASSERT_EQ(it->second, w) << "a kept port moved";
            }
            seen[ifindex] = w;
        }
        std::size_t total = 0;
        for (const std::size_t l : a.load()) total += l;
        EXPECT_EQ(total, seen.size());
        for (const auto& [ifindex, w] : seen) EXPECT_EQ(a.worker_of(ifindex), w);
    }
}

}  // namespace
}  // namespace andromeda::daemon
