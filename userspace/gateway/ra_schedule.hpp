// When the gateway advertises on one tenant port (RFC 4861 6.2.4, 6.2.6), I/O-free: the caller
// asks next_due(now), sends what is due and says so; nothing here reads a clock or a socket.
//
// - Unsolicited advertisements go out at intervals drawn uniformly from [MinRtrAdvInterval,
//   MaxRtrAdvInterval], so routers (and here the many ports of one daemon) do not synchronise.
// - After each of the first MAX_INITIAL_RTR_ADVERTISEMENTS (3), the next follows within
//   MAX_INITIAL_RTR_ADVERT_INTERVAL (16 s), so a tenant that missed the first learns its prefix
//   quickly. The first is due as soon as the port is asked.
// - Advertisements on the port are at least MIN_DELAY_BETWEEN_RAS (3 s) apart: a solicitation
//   within that time of the last advertisement is answered by the next unsolicited one, moved up
//   to 3 s after the last (RFC 4861 6.2.6 demands it of multicast answers; unicast ones are held
//   to it too, so a tenant flooding solicitations gets one answer per 3 s, not one each).
// - A multicast answer restarts the interval as if it were an unsolicited advertisement.
// - RFC 4861 6.2.6 also delays every answer by up to MAX_RA_DELAY_TIME (0.5 s) so that several
//   routers on one link do not answer at once. A tenant port is a link with one router, the
//   gateway, so answers are sent at once: the delay would only slow a booting tenant down.
#pragma once

#include <algorithm>
#include <cstdint>

#include "gateway/ipv6_gateway.hpp"

namespace andromeda::gateway {

inline constexpr std::uint64_t kNanosecondsPerSecond = 1'000'000'000;
inline constexpr std::uint32_t kMaxInitialAdvertisements = 3;
inline constexpr std::uint64_t kMaxInitialAdvertisementInterval = 16 * kNanosecondsPerSecond;
inline constexpr std::uint64_t kMinDelayBetweenAdvertisements = 3 * kNanosecondsPerSecond;

class RouterAdvertisementSchedule {
public:
    // `seed` draws the intervals: give each port its own (its index, say) so ports drift apart;
    // the same seed replays the same schedule.
    RouterAdvertisementSchedule(const RouterAdvertisementConfig& config, std::uint64_t seed) noexcept;

    // When (monotonic ns) the next unsolicited advertisement is due; at or before `now` means
    // send one now. A schedule that has sent nothing yet is due at `now`.
    [[nodiscard]] std::uint64_t next_due(std::uint64_t now) const noexcept {
        const std::uint64_t due = started_ ? due_ : now;
        return sent_any_ ? std::max(due, last_sent_ + kMinDelayBetweenAdvertisements) : due;
    }
    [[nodiscard]] bool due(std::uint64_t now) const noexcept { return next_due(now) <= now; }

    // An unsolicited advertisement went out at `now`: the next is drawn.
    void advertised(std::uint64_t now) noexcept;

    // A solicitation arrived at `now`. True: answer it now, then call answered(). False: the next
    // unsolicited advertisement answers it; next_due() has been moved up to 3 s after the last.
    [[nodiscard]] bool may_answer(std::uint64_t now) noexcept;
    // A solicited advertisement went out at `now`, to all-nodes (`multicast`) or to the asker.
    void answered(std::uint64_t now, bool multicast) noexcept;

    [[nodiscard]] std::uint32_t advertisements() const noexcept { return multicast_sent_; }
    [[nodiscard]] std::uint64_t min_interval_ns() const noexcept { return min_interval_ns_; }
    [[nodiscard]] std::uint64_t max_interval_ns() const noexcept { return max_interval_ns_; }

private:
    [[nodiscard]] std::uint64_t draw_interval() noexcept;

    std::uint64_t min_interval_ns_ = 0;
    std::uint64_t max_interval_ns_ = 0;
    std::uint64_t random_state_ = 0;
    std::uint64_t due_ = 0;
    std::uint64_t last_sent_ = 0;  // any advertisement, unicast or multicast
    std::uint32_t multicast_sent_ = 0;
    bool started_ = false;  // an unsolicited or multicast advertisement has gone out
    bool sent_any_ = false;
};

}  // namespace andromeda::gateway
