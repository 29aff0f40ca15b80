// Published<T>, the sequence lock the packet workers publish their counters with: a reader never
// sees a torn value (every word from the same store), and never waits for a lock. Also run
// under ThreadSanitizer (scripts/test.sh).
#include "worker/published.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <thread>

namespace andromeda::worker {
namespace {

struct Wide {
    std::array<std::uint64_t, 40> words{};
};

TEST(Published, AReaderNeverSeesATornValue) {
    Published<Wide> published;
    std::atomic<bool> done{false};
    std::thread writer([&] {
        Wide w;
        for (std::uint64_t i = 1; i <= 200000; ++i) {
            w.words.fill(i);
            published.store(w);
        }
        done = true;
    });
    std::uint64_t reads = 0, last = 0;
    bool torn = false, backwards = false;
    while (!done.load()) {
        const Wide w = published.load();
        for (const auto word : w.words) torn |= word != w.words[0];
        backwards |= w.words[0] < last;
        last = w.words[0];
        ++reads;
    }
    writer.join();
    EXPECT_FALSE(torn) << "a load mixed two stores";
    EXPECT_FALSE(backwards) << "a later load returned an older store";
    EXPECT_EQ(published.load().words[39], 200000u);
    EXPECT_GT(reads, 0u);
}

TEST(Published, StartsZeroAndReturnsWhatWasStored) {
    Published<Wide> published;
    EXPECT_EQ(published.load().words[7], 0u);
    Wide w;
    w.words[7] = 42;
    published.store(w);
    EXPECT_EQ(published.load().words[7], 42u);
    EXPECT_EQ(published.load().words[8], 0u);
}

}  // namespace
}  // namespace andromeda::worker
