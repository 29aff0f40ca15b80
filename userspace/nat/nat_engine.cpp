#include "nat/nat_engine.hpp"

#include <mutex>
#include <random>
#include <stdexcept>
#include <utility>

#include "nat/nat_packet.hpp"
#include "nat/nat_shard.hpp"
#include "nat/port_allocator.hpp"
#include "nat/spin_lock.hpp"

namespace andromeda::nat {

// Each shard on its own cache lines, so two workers' locks never share one.
struct alignas(64) NatEngine::Slot {
    Slot(std::size_t index, std::size_t count, const NatSettings& settings, std::uint64_t seed)
        : shard(index, count, settings, seed) {}
    mutable SpinLock lock;
    NatShard shard;
};

namespace {

std::uint64_t pick_seed(std::uint64_t configured) {
    if (configured != 0) return configured;
    std::random_device random;
    return std::uint64_t{random()} << 32 | random();
}

// The port naming a packet's flow, from the side the packet arrives on.
std::uint16_t outbound_port(const NatPacket& p) noexcept {
    return p.kind == PacketKind::icmp_error ? p.inner_destination_port : p.source_port;
}
std::uint16_t inbound_port(const NatPacket& p) noexcept {
    return p.kind == PacketKind::icmp_error ? p.inner_source_port : p.destination_port;
}

}  // namespace

NatEngine::NatEngine(const NatSettings& settings) : settings_(settings) {
    if (const std::string problem = validate(settings); !problem.empty()) throw std::invalid_argument(problem);
    const std::uint64_t seed = pick_seed(settings.hash_seed);
    shards_.reserve(settings.shards);
    for (std::size_t i = 0; i < settings.shards; ++i)
        shards_.push_back(std::make_unique<Slot>(i, settings.shards, settings, seed + i * 0x9E3779B97F4A7C15ULL));
}

NatEngine::~NatEngine() = default;

void NatEngine::set_rules(std::shared_ptr<const NatRules> rules) {
    const std::uint32_t generation = generation_.fetch_add(1, std::memory_order_relaxed) + 1;
    for (auto& slot : shards_) {
        std::lock_guard guard(slot->lock);
        slot->shard.set_rules(rules, generation);
    }
}

std::size_t NatEngine::owner_shard(std::uint16_t port) const noexcept {
    return PortAllocator::owner_shard(port, shards_.size());
}

template <class Op>
ShardOutcome NatEngine::on_shard(std::size_t shard, Op&& op) noexcept {
    Slot& slot = *shards_[shard];
    std::lock_guard guard(slot.lock);
    return op(slot.shard);
}

NatResult NatEngine::reject(DropReason reason) noexcept {
    early_drops_[static_cast<std::size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
    NatResult result;
    result.drop = reason;
    return result;
}

NatResult NatEngine::outbound(std::uint32_t vni, wire::MutableByteSpan ipv4, TimePoint now) noexcept {
    NatPacket p;
    if (const DropReason r = classify(ipv4, p); r != DropReason::none) return reject(r);
    const std::int64_t now_ns = to_ns(now);
    NatResult result = run_outbound(vni, p, now_ns);
    if (!result.to_tenant) return result;
    // Hairpin (RFC 4787 REQ-9): the translated packet is addressed to a NAT address; it comes
    // back in as if from outside, with the NAT address as its source (REQ-9b: external source).
    if (const DropReason r = classify(ipv4, p); r != DropReason::none) return reject(r);
    result = run_inbound(p, now_ns);
    if (result.translated()) on_shard(owner_shard(inbound_port(p)), [](NatShard& s) {
        s.count_hairpin();
        return ShardOutcome{};
    });
    return result;
}

NatResult NatEngine::run_outbound(std::uint32_t vni, const NatPacket& p, std::int64_t now) noexcept {
    std::size_t shard = owner_shard(outbound_port(p));
    ShardOutcome out = on_shard(shard, [&](NatShard& s) { return s.outbound(vni, p, now); });
    if (out.retry_shard != ShardOutcome::kNoShard && out.retry_shard != shard) {
        shard = out.retry_shard;
        out = on_shard(shard, [&](NatShard& s) { return s.outbound(vni, p, now); });
    }
    if (out.retry_shard != ShardOutcome::kNoShard) return reject(DropReason::no_flow);  // never twice
    NatResult result;
    result.drop = out.drop;
    result.to_tenant = out.drop == DropReason::none && out.to_nat_address;
    return result;
}

NatResult NatEngine::inbound(wire::MutableByteSpan ipv4, TimePoint now) noexcept {
    NatPacket p;
    if (const DropReason r = classify(ipv4, p); r != DropReason::none) return reject(r);
    return run_inbound(p, to_ns(now));
}

NatResult NatEngine::run_inbound(const NatPacket& p, std::int64_t now) noexcept {
    const ShardOutcome out = on_shard(owner_shard(inbound_port(p)), [&](NatShard& s) { return s.inbound(p, now); });
    NatResult result;
    result.drop = out.drop;
    if (result.translated()) {
        result.to_tenant = true;
        result.vni = out.vni;
        result.tenant = Ipv4Address(out.tenant);
    }
    return result;
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
    for (std::size_t i = 0; i < shards_.size(); ++i) total += shard_counters(i);
    for (std::size_t r = 1; r < kDropReasonCount; ++r)
        total.count_drop(static_cast<DropReason>(r), early_drops_[r].load(std::memory_order_relaxed));
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
