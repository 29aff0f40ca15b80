// The token bucket of a tenant port's punts (andromeda_punt_limits, bpf/lib/punt.h): what the
// daemon writes into a port's slot for [node] punt_rate and punt_burst.
#pragma once

#include <cstdint>
#include <optional>

#include "andromeda_kern_user.h"

namespace andromeda::io {

struct PuntLimit {
    std::uint32_t rate = 0;   // frames per second; 0: no limit
    std::uint32_t burst = 1;  // frames an idle port may punt at once (at least 1)
};

// The bucket a slot should hold for the tenant port `ifindex` under `limit`, given what it holds
// now, or nullopt when it holds that already. A slot that served another port (or none) starts
// full and with its counters at zero; a changed limit keeps the counters and the bucket's level.
[[nodiscard]] std::optional<andromeda_punt_limit> punt_bucket_update(const andromeda_punt_limit& current,
                                                                     std::uint32_t ifindex, PuntLimit limit) noexcept;

}  // namespace andromeda::io
