// Bursts: classify every packet, then visit each shard the burst touches once, under one lock
// acquisition, and finish the few packets that need more (another shard, a hairpin) one by one.
#include <array>

#include "nat/nat_engine_internal.hpp"

namespace andromeda::nat {
namespace {
constexpr std::size_t kChunk = 64;
constexpr std::uint32_t kRejected = 0xFFFFFFFF;  // refused by classify: already has its result
constexpr std::uint32_t kDone = 0xFFFFFFFE;      // ran in the shard of an earlier packet's visit
}  // namespace

void NatEngine::translate_burst(std::span<NatBurstPacket> packets, TimePoint now) noexcept {
    const std::int64_t now_ns = to_ns(now);
    std::array<NatPacket, kChunk> parsed;
    std::array<std::uint32_t, kChunk> shard_of;
    std::array<ShardOutcome, kChunk> outcome;
    for (std::size_t base = 0; base < packets.size(); base += kChunk) {
        const std::span<NatBurstPacket> chunk = packets.subspan(base, std::min(kChunk, packets.size() - base));
        for (std::size_t i = 0; i < chunk.size(); ++i) {
            NatBurstPacket& b = chunk[i];
            b.result = NatResult{};
            shard_of[i] = kRejected;
            if (const DropReason r = classify(b.ipv4, parsed[i]); r != DropReason::none) {
                reject(r, b.result);
                continue;
            }
            shard_of[i] = static_cast<std::uint32_t>(
                owner_shard(b.outbound ? outbound_port(parsed[i]) : inbound_port(parsed[i])));
        }
        // Each shard present in the chunk, once, in order of first appearance.
        for (std::size_t i = 0; i < chunk.size(); ++i) {
            const std::uint32_t shard = shard_of[i];
            if (shard == kRejected || shard == kDone) continue;
            Slot& slot = *shards_[shard];
            std::lock_guard guard(slot.lock);
            // Two prefetch passes over this shard's packets, then the real work: the lookups'
            // cache misses overlap (a big table misses on the bucket and on the flow).
            for (int step = 0; step < 2 && slot.shard.prefetch_pays(); ++step)
                for (std::size_t j = i; j < chunk.size(); ++j)
                    if (shard_of[j] == shard) slot.shard.prefetch(chunk[j].vni, parsed[j], chunk[j].outbound, step);
            for (std::size_t j = i; j < chunk.size(); ++j) {
                if (shard_of[j] != shard) continue;
                const NatBurstPacket& b = chunk[j];
                if (b.outbound) {
                    slot.shard.outbound(b.vni, parsed[j], now_ns, outcome[j]);
                } else {
                    slot.shard.inbound(parsed[j], now_ns, outcome[j]);
                }
                if (j != i) shard_of[j] = kDone;
            }
        }
        for (std::size_t i = 0; i < chunk.size(); ++i) {
            NatBurstPacket& b = chunk[i];
            if (shard_of[i] == kRejected) continue;
            if (b.outbound) {
                const std::size_t shard = owner_shard(outbound_port(parsed[i]));
                finish_outbound(b.vni, b.ipv4, parsed[i], now_ns, shard, outcome[i], b.result);
            } else {
                finish_inbound(outcome[i], b.result);
            }
        }
    }
}

}  // namespace andromeda::nat
