// The kernel's flow cache of the security groups (andromeda_policy_flows for IPv4 and
// andromeda_policy_flows6 for IPv6, shared/andromeda_policy_kern_user.h) kept equal to what the firewall allowed (docs/security-groups.md,
// "The kernel fast path"): the firewall asks for installs and removals (policy::KernelChange);
// this writes them, two entries per flow (its own direction, and its replies' flagged REPLY),
// reads the kernel's use back into the firewall every second, deletes what the firewall no
// longer has installed, and after a restart gives the firewall the flows the map holds. One
// thread calls it (the daemon's); pure apart from its MapWriter.
#pragma once

#include <cstdint>
#include <span>

#include "andromeda_policy_kern_user.h"
#include "io/plan/map_sync.hpp"
#include "policy/firewall.hpp"

namespace andromeda::io {

// `andromedactl stats` group `policy_offload`.
#define ANDROMEDA_POLICY_FLOW_MAP_COUNTERS(X)                                                    \
    X(installs)        /* flows written into the kernel (both directions) */                    \
    X(removals)        /* flows deleted at the firewall's request (closed, revoked, expired) */ \
    X(syncs)           /* passes over the map reading the kernel's use back */                  \
    X(entries_synced)  /* entries read by those passes */                                       \
    X(stale_deleted)   /* entries the firewall no longer had installed, deleted by a sync */    \
    X(adopted)         /* flows a new daemon took over from the map after a restart */

struct PolicyFlowMapCounters {
#define ANDROMEDA_POLICY_FLOW_MAP_FIELD(name) std::uint64_t name = 0;
    ANDROMEDA_POLICY_FLOW_MAP_COUNTERS(ANDROMEDA_POLICY_FLOW_MAP_FIELD)
#undef ANDROMEDA_POLICY_FLOW_MAP_FIELD

    template <class F>
    void for_each(F&& f) const {
#define ANDROMEDA_POLICY_FLOW_MAP_NAME(name) f(#name, name);
        ANDROMEDA_POLICY_FLOW_MAP_COUNTERS(ANDROMEDA_POLICY_FLOW_MAP_NAME)
#undef ANDROMEDA_POLICY_FLOW_MAP_NAME
    }
};

// The map's key for a packet tuple at its endpoint (policy::FlowKey, host order), and back.
[[nodiscard]] andromeda_policy_flow_key policy_flow_key(const policy::FlowKey& key) noexcept;
[[nodiscard]] policy::FlowKey policy_flow_key_of(const andromeda_policy_flow_key& key) noexcept;
[[nodiscard]] andromeda_policy_flow6_key policy_flow6_key(const policy::FlowKey& key) noexcept;
[[nodiscard]] policy::FlowKey policy_flow_key_of(const andromeda_policy_flow6_key& key) noexcept;

class PolicyFlowMap {
public:
    explicit PolicyFlowMap(MapWriter& writer) noexcept : writer_(writer) {}

    // Writes what the firewall drained, in order. Throws IoError when the kernel refuses (an LRU
    // map is never full: it evicts, and the evicted flow's next packet asks again).
    void apply(std::span<const policy::KernelChange> changes);
    // Every entry's last use into the firewall; an entry the firewall does not have installed
    // under its generation is deleted. Returns the entries read.
    std::size_t sync(policy::Firewall& firewall);
    // After a restart, before the workers start: the flows of the map (their own direction's
    // entries) into the firewall. Returns how many.
    std::size_t adopt(policy::Firewall& firewall);

    [[nodiscard]] const PolicyFlowMapCounters& counters() const noexcept { return counters_; }

private:
    template <class Key>
    void apply_one(MapId map, const policy::KernelChange& change);
    template <class Key>
    std::size_t sync_map(MapId id, policy::Firewall& firewall);
    template <class Key>
    std::size_t adopt_map(MapId id, policy::Firewall& firewall);

    MapWriter& writer_;
    PolicyFlowMapCounters counters_;
};

}  // namespace andromeda::io
