// What the NAT did with each packet, counted per shard: one named field per verdict and per
// drop reason, so `andromedactl stats` and the BPF counter map can show them by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "util/counters.hpp"
#include "util/drop_reasons.hpp"

namespace andromeda::nat {

// Why a packet was not translated: shared/andromeda_drops.h, ANDROMEDA_DROPS_NAT. A dropped
// packet is never forwarded: a tenant's private address must not leak to the uplink.
ANDROMEDA_DEFINE_DROP_REASONS(DropReason, kDropReasonCount, none, "not dropped", ANDROMEDA_DROPS_NAT)

#define ANDROMEDA_NAT_COUNTERS(X)                                                              \
    /* Verdicts. */                                                                            \
    X(translated_outbound)    /* tenant -> outside, source rewritten */                        \
    X(translated_inbound)     /* outside -> tenant, destination rewritten */                   \
    X(hairpinned)             /* tenant -> a NAT address -> tenant (also counted both ways) */ \
    X(icmp_errors_translated) /* either direction, embedded packet included */                 \
    /* Flow lifecycle. */                                                                      \
    X(flows_created)                                                                           \
    X(flows_expired)          /* idle timeout (by the wheel or found expired on lookup) */     \
    X(flows_removed_endpoint) /* expired because a reload removed their endpoint */            \
    X(flows_removed_stale)    /* their VPC's NAT address changed or went away */               \
    X(mappings_created)                                                                        \
    X(mappings_released)                                                                       \
    X(ports_preserved) /* new mapping kept the tenant's own port / id */                        \
    /* Offload to the kernel fast path (docs/nat.md). */                                       \
    X(offload_installs)       /* install requests handed to the daemon */                      \
    X(offload_removals)       /* removal requests handed to the daemon */                      \
    X(offload_queue_full)     /* installs deferred to the flow's next packet: queue at its limit */ \
    X(offload_install_failed) /* the daemon could not install one: the pipeline keeps it */   \
    X(offload_adopted)        /* flows rebuilt from the kernel's map (in flows_created) */     \
    X(offload_adopt_refused)  /* kernel entries adopt() refused (conflict, expired, no rule) */ \
    X(offload_touched)        /* kernel syncs of a flow the engine has offloaded */            \
    X(offload_touch_unknown)  /* kernel syncs the engine answered false (entry to delete) */

struct NatCounters {
    ANDROMEDA_NAT_COUNTERS(ANDROMEDA_COUNTER_FIELD)
    // Drops, drop_<reason> for each DropReason.
    ANDROMEDA_DROPS_NAT(ANDROMEDA_DROP_COUNTER_FIELD)

    void count_drop(DropReason reason, std::uint64_t n = 1) noexcept;
    [[nodiscard]] std::uint64_t drops(DropReason reason) const noexcept;
    [[nodiscard]] std::uint64_t total_drops() const noexcept;

    // Calls f(name, value) for every counter in declaration order (util/counters.hpp).
    template <class F>
    void for_each(F&& f) const {
        ANDROMEDA_NAT_COUNTERS(ANDROMEDA_COUNTER_VISIT)
        ANDROMEDA_DROPS_NAT(ANDROMEDA_DROP_COUNTER_VISIT)
    }
};

}  // namespace andromeda::nat
