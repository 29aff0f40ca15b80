// NatEngine's offload calls: each finds the shard owning the flow (its NAT port's: dynamic
// mappings and port forwards alike live there) or visits every shard in turn, one lock at a time.
#include "nat/nat_engine_internal.hpp"

namespace andromeda::nat {

std::size_t NatEngine::remove_stale(TimePoint now) noexcept {
    std::size_t ended = 0;
    for (auto& slot : shards_) {
        std::lock_guard guard(slot->lock);
        ended += slot->shard.remove_stale(to_ns(now));
    }
    return ended;
}

std::size_t NatEngine::drain_offload_changes(std::span<OffloadChange> out) noexcept {
    const std::size_t count = shards_.size();
    const std::size_t first = drain_from_.load(std::memory_order_relaxed) % count;
    std::size_t n = 0;
    // Removals of every shard first, then each shard's (new) removals and installs.
    for (const bool installs : {false, true}) {
        for (std::size_t i = 0; i < count && n < out.size(); ++i) {
            const std::size_t shard = (first + i) % count;
            Slot& slot = *shards_[shard];
            std::lock_guard guard(slot.lock);
            n += slot.shard.drain_offload(out.subspan(n), installs);
            if (n == out.size()) drain_from_.store(shard, std::memory_order_relaxed);  // resume here
        }
    }
    return n;
}

bool NatEngine::touch_offloaded(const OffloadedFlow& flow, OffloadDirection direction, TimePoint last_used,
                                const KernelCounts& counts, TimePoint now) noexcept {
    const bool outbound = direction == OffloadDirection::outbound;
    bool known = false;
    on_shard(owner_shard(flow.nat_port), [&](NatShard& s) {
        known = s.touch_offloaded(flow, to_ns(last_used), outbound ? &counts : nullptr, outbound ? nullptr : &counts,
                                  to_ns(now));
    });
    return known;
}

bool NatEngine::touch_offloaded(const OffloadedFlow& flow, TimePoint last_used, const KernelCounts& outbound,
                                const KernelCounts& inbound, TimePoint now) noexcept {
    bool known = false;
    on_shard(owner_shard(flow.nat_port),
             [&](NatShard& s) { known = s.touch_offloaded(flow, to_ns(last_used), &outbound, &inbound, to_ns(now)); });
    return known;
}

bool NatEngine::offload_failed(const OffloadedFlow& flow, TimePoint now) noexcept {
    bool known = false;
    on_shard(owner_shard(flow.nat_port), [&](NatShard& s) { known = s.offload_failed(flow, to_ns(now)); });
    return known;
}

bool NatEngine::adopt(const OffloadedFlow& flow, FlowState state, TimePoint last_used, TimePoint now) noexcept {
    bool adopted = false;
    on_shard(owner_shard(flow.nat_port),
             [&](NatShard& s) { adopted = s.adopt(flow, state, to_ns(last_used), to_ns(now)); });
    return adopted;
}

std::size_t NatEngine::pending_offload_changes() const noexcept {
    std::size_t n = 0;
    for (const auto& slot : shards_) {
        std::lock_guard guard(slot->lock);
        n += slot->shard.pending_offload_changes();
    }
    return n;
}

}  // namespace andromeda::nat
