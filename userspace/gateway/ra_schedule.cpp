#include "gateway/ra_schedule.hpp"

#include <algorithm>

namespace andromeda::gateway {

RouterAdvertisementSchedule::RouterAdvertisementSchedule(const RouterAdvertisementConfig& config,
                                                         std::uint64_t seed) noexcept
    : min_interval_ns_(effective_min_interval_s(config) * kNanosecondsPerSecond),
      max_interval_ns_(std::max<std::uint64_t>(config.max_interval_s * kNanosecondsPerSecond, min_interval_ns_)),
      random_state_(seed) {}

// splitmix64: a few instructions, no state beyond one word, good enough to spread intervals.
std::uint64_t RouterAdvertisementSchedule::draw_interval() noexcept {
    random_state_ += 0x9e3779b97f4a7c15ull;
    std::uint64_t z = random_state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    std::uint64_t interval = min_interval_ns_ + z % (max_interval_ns_ - min_interval_ns_ + 1);
    if (multicast_sent_ <= kMaxInitialAdvertisements) interval = std::min(interval, kMaxInitialAdvertisementInterval);
    return interval;
}

void RouterAdvertisementSchedule::advertised(std::uint64_t now) noexcept {
    ++multicast_sent_;
    started_ = true;
    sent_any_ = true;
    last_sent_ = now;
    due_ = now + draw_interval();
}

bool RouterAdvertisementSchedule::may_answer(std::uint64_t now) noexcept {
    if (!sent_any_ || now >= last_sent_ + kMinDelayBetweenAdvertisements) return true;
    const std::uint64_t earliest = last_sent_ + kMinDelayBetweenAdvertisements;
    due_ = started_ ? std::min(due_, earliest) : earliest;
    started_ = true;
    return false;
}

void RouterAdvertisementSchedule::answered(std::uint64_t now, bool multicast) noexcept {
    if (multicast) return advertised(now);
    sent_any_ = true;
    last_sent_ = std::max(last_sent_, now);
}

}  // namespace andromeda::gateway
