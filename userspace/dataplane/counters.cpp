#include "dataplane/counters.hpp"

namespace andromeda::dataplane {


std::uint64_t* drop_counter(DropCounters& counters, DropReason reason) noexcept {
    switch (reason) {
        case DropReason::none: return nullptr;
#define ANDROMEDA_DROP_CASE(name, id, description) \
    case DropReason::name: return &counters.name;
        ANDROMEDA_DROPS_PIPELINE(ANDROMEDA_DROP_CASE)
#undef ANDROMEDA_DROP_CASE
    }
    return nullptr;
}

std::uint64_t drop_count(const DropCounters& counters, DropReason reason) noexcept {
    const std::uint64_t* c = drop_counter(const_cast<DropCounters&>(counters), reason);
    return c != nullptr ? *c : 0;
}

std::uint64_t* decap_error_counter(DecapErrorCounters& counters, overlay::DecapError error) noexcept {
    switch (error) {
        case overlay::DecapError::ok: return nullptr;
#define ANDROMEDA_DECAP_CASE(name, id, description) \
    case overlay::DecapError::name: return &counters.name;
        ANDROMEDA_DROPS_DECAP(ANDROMEDA_DECAP_CASE)
#undef ANDROMEDA_DECAP_CASE
    }
    return nullptr;
}

std::uint64_t total_drops(const DropCounters& counters) noexcept {
    std::uint64_t total = 0;
#define ANDROMEDA_DROP_SUM(name, id, description) total += counters.name;
    ANDROMEDA_DROPS_PIPELINE(ANDROMEDA_DROP_SUM)
#undef ANDROMEDA_DROP_SUM
    return total;
}

}  // namespace andromeda::dataplane
