// The kernel's NAT flows (andromeda_nat_flows, shared/andromeda_nat_kern_user.h) kept equal to what
// the NAT engine offloads (docs/nat.md, "Offload to the kernel"): the engine decides every flow and
// asks for installs and removals; this writes them, two entries per flow (one per direction, keyed
// by the packet as it arrives), reads the kernel's use of them back into the engine every second,
// deletes what the engine no longer knows, and, after a restart, rebuilds the engine's flows from
// the map. One thread calls it (the daemon's map owner); pure apart from its MapWriter.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "andromeda_nat_kern_user.h"
#include "io/plan/map_sync.hpp"
#include "nat/nat_engine.hpp"
#include "nat/offload.hpp"

namespace andromeda::io {

// The X-list of NatFlowMap's counters: `andromedactl stats` group `nat_offload`.
#define ANDROMEDA_NAT_FLOW_MAP_COUNTERS(X)                                                        \
    X(installs)          /* flows written into the kernel (both directions) */                   \
    X(install_full)      /* an install the full map refused: the flow stays with the pipeline */ \
    X(install_conflict)  /* an install whose key was taken: refused likewise, the old entry kept */ \
    X(removals)          /* flows deleted from the kernel at the engine's request */             \
    X(syncs)             /* passes over the map reading the kernel's use back */                 \
    X(entries_synced)    /* entries read by those passes */                                      \
    X(stale_deleted)     /* entries the engine no longer knew, deleted by a sync */              \
    X(adopted)           /* flows a new daemon took over from the map after a restart */         \
    X(adopt_refused)     /* entries it could not take over, deleted */

struct NatFlowMapCounters {
#define ANDROMEDA_NAT_FLOW_MAP_FIELD(name) std::uint64_t name = 0;
    ANDROMEDA_NAT_FLOW_MAP_COUNTERS(ANDROMEDA_NAT_FLOW_MAP_FIELD)
#undef ANDROMEDA_NAT_FLOW_MAP_FIELD

    template <class F>
    void for_each(F&& f) const {
#define ANDROMEDA_NAT_FLOW_MAP_NAME(name) f(#name, name);
        ANDROMEDA_NAT_FLOW_MAP_COUNTERS(ANDROMEDA_NAT_FLOW_MAP_NAME)
#undef ANDROMEDA_NAT_FLOW_MAP_NAME
    }
};

// The map's key for one direction of a flow, and the entry both directions share.
[[nodiscard]] andromeda_nat_key nat_flow_key(const nat::OffloadKey& key) noexcept;
[[nodiscard]] andromeda_nat_entry nat_flow_entry(const nat::OffloadedFlow& flow) noexcept;
// The flow an entry describes, or nullopt for one no engine could have written (an unknown
// protocol): what a restart adopts.
[[nodiscard]] std::optional<nat::OffloadedFlow> offloaded_flow_of(const andromeda_nat_entry& entry) noexcept;

class NatFlowMap {
public:
    explicit NatFlowMap(MapWriter& writer) noexcept : writer_(writer) {}

    // Applies what the engine drained: removals delete both entries (where they still hold that
    // flow), installs write both with "no existing entry" (a full map, or a key taken by another
    // flow, deletes what was written and tells the engine, which keeps the flow in the pipeline).
    // Throws IoError when the kernel refuses for another reason.
    void apply(std::span<const nat::OffloadChange> changes, nat::NatEngine& engine, nat::TimePoint now);

    // Every entry's kernel use (last packet, packets, bytes) into the engine; the entries of a flow
    // the engine does not have offloaded as written are deleted. Call it more often than the
    // engine's offload grace (docs/nat.md). Returns the entries read.
    std::size_t sync(nat::NatEngine& engine, nat::TimePoint now);

    // After a restart, before the workers start: each flow in the map is rebuilt in the engine
    // (NatEngine::adopt: the mapping and its port taken, so the port is never handed out again);
    // what the engine refuses is deleted (the pipeline then decides those packets anew).
    std::size_t adopt(nat::NatEngine& engine, nat::TimePoint now);

    [[nodiscard]] const NatFlowMapCounters& counters() const noexcept { return counters_; }

private:
    // Deletes both entries of `flow`, each only where it still holds that flow (a key a newer flow
    // took is left to it).
    void erase_flow(const nat::OffloadedFlow& flow);
    void install(const nat::OffloadedFlow& flow, nat::NatEngine& engine, nat::TimePoint now);

    MapWriter& writer_;
    NatFlowMapCounters counters_;
};

}  // namespace andromeda::io
