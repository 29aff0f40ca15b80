#include "io/plan/punt_limit.hpp"

#include <algorithm>

namespace andromeda::io {

std::optional<andromeda_punt_limit> punt_bucket_update(const andromeda_punt_limit& current, std::uint32_t ifindex,
                                                       PuntLimit limit) noexcept {
    constexpr std::uint64_t kSecond = 1'000'000'000;
    andromeda_punt_limit next{};
    if (current.ifindex == ifindex) {
        next.next_ns = current.next_ns;
        next.punted = current.punted;
        next.rate_limited = current.rate_limited;
    }
    next.ifindex = ifindex;
    // A rate above one frame a nanosecond is no limit the clock can tell from none: 1 ns.
    next.interval_ns = limit.rate == 0 ? 0 : std::max<std::uint64_t>(1, kSecond / limit.rate);
    next.tolerance_ns = (std::max<std::uint64_t>(limit.burst, 1) - 1) * next.interval_ns;
    if (current.ifindex == next.ifindex && current.interval_ns == next.interval_ns &&
        current.tolerance_ns == next.tolerance_ns)
        return std::nullopt;
    return next;
}

}  // namespace andromeda::io
