// What nat_engine.cpp and nat_engine_burst.cpp share: the shard slot and the per-packet helpers.
#pragma once

#include <mutex>

#include "nat/nat_engine.hpp"
#include "nat/nat_packet.hpp"
#include "nat/nat_shard.hpp"
#include "nat/spin_lock.hpp"
#include "nat/tenant_budget.hpp"

namespace andromeda::nat {

// Each shard on its own cache lines, so two workers' locks never share one.
struct alignas(64) NatEngine::Slot {
    Slot(std::size_t index, std::size_t count, const NatSettings& settings, std::uint64_t seed)
        : shard(index, count, settings, seed) {}
    mutable SpinLock lock;
    NatShard shard;
};

template <class Op>
void NatEngine::on_shard(std::size_t shard, Op&& op) noexcept {
    Slot& slot = *shards_[shard];
    std::lock_guard guard(slot.lock);
    op(slot.shard);
}

// The port naming a packet's flow, from the side the packet arrives on.
inline std::uint16_t outbound_port(const NatPacket& p) noexcept {
    return p.kind == PacketKind::icmp_error ? p.inner_destination_port : p.source_port;
}
inline std::uint16_t inbound_port(const NatPacket& p) noexcept {
    return p.kind == PacketKind::icmp_error ? p.inner_source_port : p.destination_port;
}

}  // namespace andromeda::nat
