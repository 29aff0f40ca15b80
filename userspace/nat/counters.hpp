// What the NAT did with each packet, counted per shard: one named field per verdict and per
// drop reason, so `andromedactl stats` and the BPF counter map can show them by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "andromeda_drops.h"

namespace andromeda::nat {

// Why a packet was not translated: shared/andromeda_drops.h, ANDROMEDA_DROPS_NAT. A dropped
// packet is never forwarded: a tenant's private address must not leak to the uplink.
enum class DropReason : std::uint8_t {
    none,
#define ANDROMEDA_NAT_DROP_ENUM(name, id, description) name,
    ANDROMEDA_DROPS_NAT(ANDROMEDA_NAT_DROP_ENUM)
#undef ANDROMEDA_NAT_DROP_ENUM
};

inline constexpr std::size_t kDropReasonCount = 1
#define ANDROMEDA_NAT_DROP_COUNT(name, id, description) +1
    ANDROMEDA_DROPS_NAT(ANDROMEDA_NAT_DROP_COUNT)
#undef ANDROMEDA_NAT_DROP_COUNT
    ;  // none included

[[nodiscard]] constexpr std::string_view to_string(DropReason r) noexcept {
    switch (r) {
        case DropReason::none: return "none";
#define ANDROMEDA_NAT_DROP_NAME(name, id, description) \
    case DropReason::name: return #name;
        ANDROMEDA_DROPS_NAT(ANDROMEDA_NAT_DROP_NAME)
#undef ANDROMEDA_NAT_DROP_NAME
    }
    return "unknown";
}

[[nodiscard]] constexpr std::string_view describe(DropReason r) noexcept {
    switch (r) {
        case DropReason::none: return "not dropped";
#define ANDROMEDA_NAT_DROP_DESCRIPTION(name, id, description) \
    case DropReason::name: return description;
        ANDROMEDA_DROPS_NAT(ANDROMEDA_NAT_DROP_DESCRIPTION)
#undef ANDROMEDA_NAT_DROP_DESCRIPTION
    }
    return "unknown";
}

struct NatCounters {
    // Verdicts.
    std::uint64_t translated_outbound = 0;    // tenant -> outside, source rewritten
    std::uint64_t translated_inbound = 0;     // outside -> tenant, destination rewritten
    std::uint64_t hairpinned = 0;             // tenant -> a NAT address -> tenant (also counted both ways)
    std::uint64_t icmp_errors_translated = 0; // either direction, embedded packet included
    // Flow lifecycle.
    std::uint64_t flows_created = 0;
    std::uint64_t flows_expired = 0;          // idle timeout (by the wheel or found expired on lookup)
    std::uint64_t flows_removed_endpoint = 0; // expired because a reload removed their endpoint
    std::uint64_t flows_removed_stale = 0;    // their VPC's NAT address changed or went away
    std::uint64_t mappings_created = 0;
    std::uint64_t mappings_released = 0;
    std::uint64_t ports_preserved = 0;        // new mapping kept the tenant's own port / id
    // Offload to the kernel fast path (docs/nat.md).
    std::uint64_t offload_installs = 0;       // install requests handed to the daemon
    std::uint64_t offload_removals = 0;       // removal requests handed to the daemon
    std::uint64_t offload_queue_full = 0;     // installs deferred to the flow's next packet: queue at its limit
    std::uint64_t offload_install_failed = 0; // the daemon could not install one: the pipeline keeps it
    std::uint64_t offload_adopted = 0;        // flows rebuilt from the kernel's map (included in flows_created)
    std::uint64_t offload_adopt_refused = 0;  // kernel entries adopt() refused (conflict, expired, no rule)
    std::uint64_t offload_touched = 0;        // kernel syncs of a flow the engine has offloaded
    std::uint64_t offload_touch_unknown = 0;  // kernel syncs the engine answered false (entry to delete)
    // Drops, one per DropReason (none excluded).
#define ANDROMEDA_NAT_DROP_FIELD(name, id, description) std::uint64_t drop_##name = 0;
    ANDROMEDA_DROPS_NAT(ANDROMEDA_NAT_DROP_FIELD)
#undef ANDROMEDA_NAT_DROP_FIELD

    void count_drop(DropReason reason, std::uint64_t n = 1) noexcept;
    [[nodiscard]] std::uint64_t drops(DropReason reason) const noexcept;
    [[nodiscard]] std::uint64_t total_drops() const noexcept;

    // Calls f(name, value) for every counter in declaration order (util/counters.hpp).
    template <class F>
    void for_each(F&& f) const {
        f("translated_outbound", translated_outbound);
        f("translated_inbound", translated_inbound);
        f("hairpinned", hairpinned);
        f("icmp_errors_translated", icmp_errors_translated);
        f("flows_created", flows_created);
        f("flows_expired", flows_expired);
        f("flows_removed_endpoint", flows_removed_endpoint);
        f("flows_removed_stale", flows_removed_stale);
        f("mappings_created", mappings_created);
        f("mappings_released", mappings_released);
        f("ports_preserved", ports_preserved);
        f("offload_installs", offload_installs);
        f("offload_removals", offload_removals);
        f("offload_queue_full", offload_queue_full);
        f("offload_install_failed", offload_install_failed);
        f("offload_adopted", offload_adopted);
        f("offload_adopt_refused", offload_adopt_refused);
        f("offload_touched", offload_touched);
        f("offload_touch_unknown", offload_touch_unknown);
        for (std::size_t r = 1; r < kDropReasonCount; ++r) {
            const auto reason = static_cast<DropReason>(r);
            f(drop_field_name(reason), drops(reason));
        }
    }
    [[nodiscard]] static std::string_view drop_field_name(DropReason reason) noexcept;
};

}  // namespace andromeda::nat
