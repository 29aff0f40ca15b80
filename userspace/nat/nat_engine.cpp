#include "nat/nat_engine.hpp"

#include <mutex>
#include <random>
#include <stdexcept>
#include <utility>

#include "nat/nat_engine_internal.hpp"
#include "util/counters.hpp"

namespace andromeda::nat {

namespace {

std::uint64_t pick_seed(std::uint64_t configured) {
    if (configured != 0) return configured;
    std::random_device random;
    return std::uint64_t{random()} << 32 | random();
}

}  // namespace

namespace {
const NatSettings& validated(const NatSettings& settings) {
    if (const std::string problem = validate(settings); !problem.empty()) throw std::invalid_argument(problem);
    return settings;
}
}  // namespace

NatEngine::NatEngine(const NatSettings& settings)
    : settings_(validated(settings)),
      tenant_budget_(settings.tenant_flows, settings.tenants_tracked, pick_seed(settings.hash_seed) ^ 0xB5AD4ECEDA1CE2A9ULL),
      shard_count_(static_cast<std::uint32_t>(settings.shards)),
      shard_of_block_(shard_count_) {
    const std::uint64_t seed = pick_seed(settings.hash_seed);
    shards_.reserve(settings.shards);
    for (std::size_t i = 0; i < settings.shards; ++i) {
        shards_.push_back(std::make_unique<Slot>(i, settings.shards, settings, seed + i * 0x9E3779B97F4A7C15ULL));
        shards_.back()->shard.set_tenant_budget(&tenant_budget_);
    }
}

NatEngine::~NatEngine() = default;

void NatEngine::set_rules(std::shared_ptr<const NatRules> rules) {
    const std::uint32_t generation = generation_.fetch_add(1, std::memory_order_relaxed) + 1;
    for (auto& slot : shards_) {
        std::lock_guard guard(slot->lock);
        slot->shard.set_rules(rules, generation);
    }
}

void NatEngine::reject(DropReason reason, NatResult& result) noexcept {
    early_drops_[util::drop_slot(reason)].fetch_add(1, std::memory_order_relaxed);
    result.drop = reason;
}

void NatEngine::outbound(std::uint32_t vni, wire::MutableByteSpan ipv4, TimePoint now, NatResult& result) noexcept {
    NatPacket p;
    if (const DropReason r = classify(ipv4, p); r != DropReason::none) return reject(r, result);
    const std::int64_t now_ns = to_ns(now);
    const std::size_t shard = owner_shard(outbound_port(p));
    ShardOutcome out;
    on_shard(shard, [&](NatShard& s) { s.outbound(vni, p, now_ns, out); });
    finish_outbound(vni, ipv4, p, now_ns, shard, out, result);
}

void NatEngine::finish_outbound(std::uint32_t vni, wire::MutableByteSpan ipv4, NatPacket& p, std::int64_t now,
                                std::size_t shard, ShardOutcome& out, NatResult& result) noexcept {
    if (out.retry_shard != ShardOutcome::kNoShard && out.retry_shard != shard) {
        shard = out.retry_shard;
        on_shard(shard, [&](NatShard& s) { s.outbound(vni, p, now, out); });
    }
    if (out.retry_shard != ShardOutcome::kNoShard) return reject(DropReason::no_flow, result);  // never twice
    result.drop = out.drop;
    if (out.drop != DropReason::none || !out.to_nat_address) return;
    // Hairpin (RFC 4787 REQ-9): the translated packet is addressed to a NAT address; it comes
    // back in as if from outside, with the NAT address as its source (REQ-9b: external source).
    if (const DropReason r = classify(ipv4, p); r != DropReason::none) return reject(r, result);
    const std::size_t in_shard = owner_shard(inbound_port(p));
    on_shard(in_shard, [&](NatShard& s) {
        s.inbound(p, now, out);
        if (out.drop == DropReason::none) s.count_hairpin();
    });
    finish_inbound(out, result);
}

void NatEngine::inbound(wire::MutableByteSpan ipv4, TimePoint now, NatResult& result) noexcept {
    NatPacket p;
    if (const DropReason r = classify(ipv4, p); r != DropReason::none) return reject(r, result);
    const std::int64_t now_ns = to_ns(now);
    ShardOutcome out;
    on_shard(owner_shard(inbound_port(p)), [&](NatShard& s) { s.inbound(p, now_ns, out); });
    finish_inbound(out, result);
}

void NatEngine::finish_inbound(const ShardOutcome& out, NatResult& result) noexcept {
    result.drop = out.drop;
    result.to_tenant = out.drop == DropReason::none;
    result.vni = out.drop == DropReason::none ? out.vni : 0;
    result.tenant = Ipv4Address(out.drop == DropReason::none ? out.tenant : 0);
}

std::size_t NatEngine::expire(TimePoint now, std::size_t budget) noexcept {
    std::size_t expired = 0;
    for (std::size_t i = 0; i < shards_.size(); ++i) expired += expire_shard(i, now, budget);
    return expired;
}

std::size_t NatEngine::expire_shard(std::size_t shard, TimePoint now, std::size_t budget) noexcept {
    Slot& slot = *shards_[shard];
    std::lock_guard guard(slot.lock);
    return slot.shard.expire(to_ns(now), budget);
}

std::size_t NatEngine::expire_endpoint(std::uint32_t vni, Ipv4Address ip) noexcept {
    std::size_t removed = 0;
    for (auto& slot : shards_) {
        std::lock_guard guard(slot->lock);
        removed += slot->shard.expire_endpoint(vni, ip.value());
    }
    return removed;
}

std::vector<FlowInfo> NatEngine::flows(TimePoint now, std::size_t limit) const {
    std::vector<FlowInfo> out;
    for (const auto& slot : shards_) {
        std::lock_guard guard(slot->lock);
        slot->shard.collect(to_ns(now), out, limit);
    }
    return out;
}

NatCounters NatEngine::counters() const noexcept {
    NatCounters total;
    for (std::size_t i = 0; i < shards_.size(); ++i) util::add_counters(total, shard_counters(i));
    for (std::size_t slot = 0; slot < kDropReasonCount; ++slot)
        total.count_drop(util::drop_of_slot<DropReason>(slot), early_drops_[slot].load(std::memory_order_relaxed));
    return total;
}

NatCounters NatEngine::shard_counters(std::size_t shard) const noexcept {
    const Slot& slot = *shards_[shard];
    std::lock_guard guard(slot.lock);
    return slot.shard.counters();
}

std::size_t NatEngine::flow_count() const noexcept {
    std::size_t n = 0;
    for (const auto& slot : shards_) {
        std::lock_guard guard(slot->lock);
        n += slot->shard.flow_count();
    }
    return n;
}

std::size_t NatEngine::mapping_count() const noexcept {
    std::size_t n = 0;
    for (const auto& slot : shards_) {
        std::lock_guard guard(slot->lock);
        n += slot->shard.mapping_count();
    }
    return n;
}

}  // namespace andromeda::nat
