// One partition of the NAT: flows, mappings, port pools, timing wheel and counters. Not
// thread-safe; NatEngine serialises access with one lock per shard and routes each packet to
// the shard owning its port (see port_allocator.hpp), so every flow, its mapping and its port
// live in the same shard.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "nat/counters.hpp"
#include "nat/flow_info.hpp"
#include "nat/flow_table.hpp"
#include "nat/mapping_table.hpp"
#include "nat/nat_packet.hpp"
#include "nat/offload.hpp"
#include "nat/port_allocator.hpp"
#include "nat/rules.hpp"
#include "nat/settings.hpp"
#include "nat/tenant_budget.hpp"
#include "nat/timing_wheel.hpp"

namespace andromeda::nat {

// What a shard did with a packet. No default member initialisers: a burst keeps 64 of these on
// the stack and zeroing them all per burst showed up in profiles. Value-initialise ({}) where a
// whole outcome is built; NatShard::outbound/inbound set every field their callers read.
struct ShardOutcome {
    static constexpr std::uint32_t kNoShard = 0xFFFFFFFF;

    DropReason drop;
    bool to_nat_address;        // outbound: the destination is a NAT address (hairpin)
    std::uint32_t retry_shard;  // the flow belongs to another shard: ask that one (or kNoShard)
    std::uint32_t vni;          // inbound: the tenant's VPC
    std::uint32_t tenant;       // inbound: the tenant address now in the destination

    [[nodiscard]] static ShardOutcome translated(std::uint32_t vni = 0, std::uint32_t tenant = 0) noexcept {
        return {DropReason::none, false, kNoShard, vni, tenant};
    }
    [[nodiscard]] static ShardOutcome dropped(DropReason reason) noexcept { return {reason, false, kNoShard, 0, 0}; }
    [[nodiscard]] static ShardOutcome retry_in(std::uint32_t shard) noexcept {
        return {DropReason::none, false, shard, 0, 0};
    }
};

class NatShard {
public:
    NatShard(std::size_t index, std::size_t shard_count, const NatSettings& settings, std::uint64_t seed);
    NatShard(const NatShard&) = delete;  // the wheel points into flows_
    NatShard& operator=(const NatShard&) = delete;

    void set_rules(std::shared_ptr<const NatRules> rules, std::uint32_t generation);
    // The engine's budget of new flows per tenant, consulted for each outbound flow opened.
    void set_tenant_budget(TenantFlowBudget* budget) noexcept { tenant_budget_ = budget; }

    // Translate one packet; the outcome goes to `out` (see nat_shard.cpp on why not a return).
    void outbound(std::uint32_t vni, const NatPacket& p, std::int64_t now, ShardOutcome& out) noexcept;
    void inbound(const NatPacket& p, std::int64_t now, ShardOutcome& out) noexcept;

    // Burst prefetching (see ChainIndex): step 0 the bucket head, step 1 the flow it names.
    // Only a hint: skipping it changes nothing but speed.
    void prefetch(std::uint32_t vni, const NatPacket& p, bool outbound, int step) const noexcept;
    // Worth it only when the table outgrows the caches; below, the extra passes cost more.
    [[nodiscard]] bool prefetch_pays() const noexcept { return flows_.size() > kPrefetchFromFlows; }
    static constexpr std::size_t kPrefetchFromFlows = 32768;  // 2 MiB of flows

    // Reclaims flows whose deadline has passed (at most `budget`); returns how many.
    std::size_t expire(std::int64_t now, std::size_t budget) noexcept;
    // Removes every flow of tenant (vni, ip); returns how many.
    std::size_t expire_endpoint(std::uint32_t vni, std::uint32_t ip) noexcept;

    // Appends live flows to `out` until it holds `limit`.
    void collect(std::int64_t now, std::vector<FlowInfo>& out, std::size_t limit) const;

    // ---- offload to the kernel (nat_shard_offload.cpp; NatEngine documents each) ----
    // Removals only (the flows that left the kernel first), or removals then installs.
    std::size_t drain_offload(std::span<OffloadChange> out, bool installs) noexcept;
    // The counts of either direction or both (null: not known).
    bool touch_offloaded(const OffloadedFlow& flow, std::int64_t last_used, const KernelCounts* outbound,
                         const KernelCounts* inbound, std::int64_t now) noexcept;
    bool adopt(const OffloadedFlow& flow, FlowState state, std::int64_t last_used, std::int64_t now) noexcept;
    bool offload_failed(const OffloadedFlow& flow, std::int64_t now) noexcept;
    // Ends the flows the current rules no longer allow (and those past their deadline).
    std::size_t remove_stale(std::int64_t now) noexcept;
    [[nodiscard]] std::size_t pending_offload_changes() const noexcept {
        return install_queue_.size + removal_queue_.size;
    }

    void count_hairpin() noexcept { ++counters_.hairpinned; }
    [[nodiscard]] const NatCounters& counters() const noexcept { return counters_; }
    // Flows in the table, not counting ended ones whose removal waits to be drained.
    [[nodiscard]] std::size_t flow_count() const noexcept { return flows_.size() - retired_; }
    [[nodiscard]] std::size_t mapping_count() const noexcept { return mappings_.size(); }
    [[nodiscard]] std::size_t capacity() const noexcept { return flows_.capacity(); }

private:
    TenantFlowBudget* tenant_budget_ = nullptr;
    enum class Removal : std::uint8_t { expired, endpoint, stale };

    ShardOutcome outbound_special(std::uint32_t vni, const NatPacket& p, std::int64_t now) noexcept;
    ShardOutcome inbound_special(const NatPacket& p, std::int64_t now) noexcept;
    ShardOutcome open_outbound(std::uint32_t vni, const NatPacket& p, const InsideKey& key, std::int64_t now,
                               std::uint32_t& id) noexcept;
    ShardOutcome outbound_icmp_error(std::uint32_t vni, const NatPacket& p, std::int64_t now) noexcept;
    ShardOutcome inbound_icmp_error(const NatPacket& p, std::int64_t now) noexcept;
    ShardOutcome create_outbound(std::uint32_t vni, const VpcNatConfig& vpc, const NatPacket& p, const InsideKey& key,
                                 std::int64_t now, std::uint32_t& id) noexcept;
    ShardOutcome create_inbound(const NatPacket& p, const OutsideKey& key, std::int64_t now,
                                std::uint32_t& id) noexcept;
    // The shard owning a forwarded endpoint's flows when it is not this one, else kNoShard.
    [[nodiscard]] std::uint32_t forward_owner(std::uint32_t vni, const NatPacket& p) const noexcept;
    // Finds a mapping for a new tenant port, or allocates a port for one.
    DropReason mapping_for(std::uint32_t vni, const VpcNatConfig& vpc, const NatPacket& p,
                           std::uint32_t& mapping) noexcept;
    // Adds a flow (inside key fields, NAT side, mapping) and files it on the wheel.
    DropReason add_flow(const Flow& fields, std::int64_t now, std::uint32_t& id) noexcept;

    // The id if it names a live flow still valid under the current rules; else removes an
    // expired or stale one and returns kNilId.
    // Inlined into the per-packet path: as calls they spilled the packet's key and flow pointer.
    [[gnu::always_inline]] inline std::uint32_t live(std::uint32_t id, std::int64_t now) noexcept;
    [[gnu::always_inline]] inline void track(std::uint32_t id, bool from_inside, std::uint8_t tcp_flags,
                                             std::int64_t now) noexcept;
    // The rare part of live(): the rules changed since the flow was last seen.
    [[nodiscard]] bool still_valid(Flow& f) noexcept;
    // Ends a flow: freed at once, or, when the daemon was told of it (or a change of it waits in
    // the queue), unlinked and kept, with its mapping and port, until the queue hands it out.
    void remove_flow(std::uint32_t id, Removal why) noexcept;
    void free_flow(std::uint32_t id) noexcept;

    // Offload: the per-packet decision (inline), the change it makes (rare), the queues.
    [[gnu::always_inline]] inline std::int64_t offload_after_packet(std::uint32_t id) noexcept;
    [[nodiscard]] static bool offload_eligible(const Flow& f) noexcept {
        return !f.remote_is_nat_address && (f.protocol != Protocol::tcp || f.state == FlowState::tcp_established);
    }
    [[gnu::noinline]] void change_offload(std::uint32_t id, bool offload) noexcept;
    [[nodiscard]] bool forward_replies_here(const Flow& f) const noexcept;
    void retire_offloaded(std::uint32_t id, Removal why) noexcept;
    void enqueue_offload(std::uint32_t id) noexcept;
    // A FIFO of flow ids linked through offload_next_.
    struct OffloadQueue {
        std::uint32_t head = kNilId;
        std::uint32_t tail = kNilId;
        std::size_t size = 0;
    };
    // Pops the queue's flows into `out` until it is full; returns how many changes it wrote.
    std::size_t drain_queue(OffloadQueue& queue, std::span<OffloadChange> out) noexcept;
    // The live flow carrying exactly `flow`'s translation, else kNilId.
    [[nodiscard]] std::uint32_t find_offloaded(const OffloadedFlow& flow, std::int64_t now) noexcept;
    [[nodiscard]] bool adoptable(const OffloadedFlow& flow, FlowState state) const noexcept;
    [[nodiscard]] bool adopt_mapping(const OffloadedFlow& flow, std::uint32_t& mapping) noexcept;
    void release_mapping_if_unused(std::uint32_t mapping) noexcept;
    ShardOutcome drop(DropReason reason) noexcept {
        counters_.count_drop(reason);
        return ShardOutcome::dropped(reason);
    }
    [[nodiscard]] std::int64_t timeout_ns(Protocol p, FlowState s) const noexcept;

    std::size_t index_;
    std::size_t shard_count_;
    NatSettings settings_;
    std::uint64_t seed_;
    // The wheel reaches each flow's node inside the flow's own cache line.
    struct FlowWheelNodes {
        FlowTable* table;
        WheelNode& operator()(std::uint32_t id) const noexcept { return (*table)[id].wheel; }
    };

    std::shared_ptr<const NatRules> rules_;
    std::uint32_t generation_ = 0;
    FlowTable flows_;
    MappingTable mappings_;
    PortAllocator ports_;
    BasicTimingWheel<FlowWheelNodes> wheel_;
    NatCounters counters_;

    bool offload_enabled_;
    std::int64_t offload_grace_ns_;
    // With offload on only, one per flow slot: the queues' links, and the kernel's counts
    // (original direction at 2 id, reply at 2 id + 1).
    std::vector<std::uint32_t> offload_next_;
    std::vector<KernelCounts> kernel_counts_;
    // A flow is in at most one queue, chosen when it joins: removals if the daemon was told the
    // kernel has it, else installs. Removals are drained first, so the removal of a key always
    // precedes the install of a new flow with the same key (that flow came later).
    OffloadQueue install_queue_;
    OffloadQueue removal_queue_;
    std::size_t retired_ = 0;  // ended flows held until their removal is drained
};

}  // namespace andromeda::nat
