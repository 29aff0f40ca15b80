// The NAT as the pipeline uses it: SNAT/PAT with endpoint-independent mappings, port-forward
// DNAT, ICMP echo and ICMP error translation, hairpinning, conntrack with timing-wheel expiry.
//
// Packets are IPv4 packets translated in place (a span starting at the IPv4 header; the
// Ethernet header is the pipeline's). Lengths never change, so the frame around it stays valid.
//
// Concurrency: the table is split into shards, each with its own lock, and a packet is handled
// by the shard owning its port: the tenant's source port (or echo id) outbound, the NAT port
// inbound, the quoted packet's for ICMP errors (PortAllocator::owner_shard). A shard allocates
// only ports it owns, so a flow, its mapping, its port and its replies always meet in one shard
// and no operation ever holds two locks. Any worker may call any method; with more shards than
// workers the locks are nearly always free. A daemon that steers packets to the worker of their
// shard (owner_shard is a pure function of the port) makes them uncontended.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "nat/counters.hpp"
#include "nat/flow_info.hpp"
#include "nat/offload.hpp"
#include "nat/port_allocator.hpp"
#include "nat/rules.hpp"
#include "nat/settings.hpp"
#include "nat/types.hpp"
#include "wire/bytes.hpp"

namespace andromeda::nat {

class NatShard;
struct NatPacket;
struct ShardOutcome;

struct NatResult {
    // none: translated, send it on. Anything else: drop the packet. A refused packet is left as
    // it came, except a hairpin refused on its way back in (say, table full): that one already
    // carries the NAT address as source.
    DropReason drop = DropReason::none;
    // True when the packet now goes to a tenant (inbound, or a tenant's packet to a NAT address
    // hairpinned back inside): deliver to endpoint (vni, tenant). False: send it to the uplink.
    bool to_tenant = false;
    std::uint32_t vni = 0;
    Ipv4Address tenant;

    [[nodiscard]] bool translated() const noexcept { return drop == DropReason::none; }
};

// One packet of a burst: what to translate, and (filled in) what happened.
struct NatBurstPacket {
    wire::MutableByteSpan ipv4;
    bool outbound = true;    // from a tenant of VPC `vni`; false: from the uplink
    std::uint32_t vni = 0;
    NatResult result;
};

class NatEngine {
public:
    static constexpr std::size_t kUnbounded = std::numeric_limits<std::size_t>::max();

    // Preallocates every table. Throws std::invalid_argument when validate(settings) fails.
    explicit NatEngine(const NatSettings& settings = {});
    ~NatEngine();
    NatEngine(const NatEngine&) = delete;
    NatEngine& operator=(const NatEngine&) = delete;

    // Installs new per-VPC rules (a reload). Shard by shard: each packet sees one whole rule set.
    // Flows whose VPC lost NAT or changed NAT address, and flows of a port forward that was
    // removed or now leads elsewhere, are dropped when next seen, or at once by remove_stale().
    void set_rules(std::shared_ptr<const NatRules> rules);
    // The new-flow budget of each tenant (settings().tenant_flows at construction), from now on.
    void set_tenant_flow_limit(TenantFlowLimit limit) noexcept { tenant_budget_.set_limit(limit); }
    [[nodiscard]] TenantFlowLimit tenant_flow_limit() const noexcept { return tenant_budget_.limit(); }
    // After set_rules: ends every flow the new rules no longer allow (and any past its deadline)
    // now rather than when next seen, and takes offloaded flows whose remote became a NAT
    // address out of the kernel. Their removals are queued before it returns, so a reload drains
    // them (drain_offload_changes) before it reports success. Returns the flows ended. Cost: a
    // walk of every flow, each shard under its lock in turn.
    std::size_t remove_stale(TimePoint now) noexcept;

    // A tenant's packet from VPC `vni` leaving towards a non-VPC destination: source becomes the
    // VPC's NAT address and a mapped port.
    NatResult outbound(std::uint32_t vni, wire::MutableByteSpan ipv4, TimePoint now) noexcept {
        NatResult result;
        outbound(vni, ipv4, now, result);
        return result;
    }
    // A packet from the uplink to a NAT address: destination becomes the tenant's.
    NatResult inbound(wire::MutableByteSpan ipv4, TimePoint now) noexcept {
        NatResult result;
        inbound(ipv4, now, result);
        return result;
    }
    // The same, writing the result into the caller's `result`. (The value-returning forms above
    // are inline wrappers of these: a 12-byte result returned in registers was assembled from
    // byte stores and reloaded whole, a store-forwarding stall of about 4 ns per packet.)
    void outbound(std::uint32_t vni, wire::MutableByteSpan ipv4, TimePoint now, NatResult& result) noexcept;
    void inbound(wire::MutableByteSpan ipv4, TimePoint now, NatResult& result) noexcept;

    // A burst of packets at once (the AF_XDP loop hands over up to 64): each shard's lock is
    // taken once per burst rather than once per packet. Same results as one call per packet.
    void translate_burst(std::span<NatBurstPacket> packets, TimePoint now) noexcept;

    // Reclaims flows whose idle timeout has passed, at most `budget` per shard. Call it
    // regularly (each worker after a burst, or a timer); cost is proportional to what expires.
    std::size_t expire(TimePoint now, std::size_t budget = kUnbounded) noexcept;
    std::size_t expire_shard(std::size_t shard, TimePoint now, std::size_t budget = kUnbounded) noexcept;
    // Removes every flow of tenant (vni, ip), e.g. after a reload removed the endpoint. Cost: that
    // endpoint's flows (plus hash-bucket neighbours), not the table.
    std::size_t expire_endpoint(std::uint32_t vni, Ipv4Address ip) noexcept;

    // ---- Offload to the kernel fast path (docs/nat.md, "Offload to the kernel") ----
    // With settings.offload.enabled, a flow the kernel can carry exactly as the engine would
    // (UDP and ICMP echo once created, TCP once established; never a hairpin) is queued for
    // install once and marked offloaded; when it ends or stops being eligible (FIN, RST) it is
    // queued for removal. The daemon, outside any lock:

    // Hands out queued changes, at most out.size(); call until it returns less. Every removal of
    // every shard comes before any install, so a key's removal precedes a new flow's install of
    // the same key. Call it and touch_offloaded from one thread (the daemon's map owner).
    std::size_t drain_offload_changes(std::span<OffloadChange> out) noexcept;
    // The kernel's use of one direction of `flow`, read from its map entry: refreshes the flow's
    // deadline to last_used + its timeout (+ the grace; never earlier than it was) and records
    // the counts. True when the engine has exactly this flow offloaded; false (unknown, ended,
    // no longer offloaded, or translated differently): delete the kernel's entries.
    bool touch_offloaded(const OffloadedFlow& flow, OffloadDirection direction, TimePoint last_used,
                         const KernelCounts& counts, TimePoint now) noexcept;
    // The same for both entries of a flow at once (half the lookups): `last_used` the later of
    // the two entries'.
    bool touch_offloaded(const OffloadedFlow& flow, TimePoint last_used, const KernelCounts& outbound,
                         const KernelCounts& inbound, TimePoint now) noexcept;
    // The daemon could not write an install (map full): the flow stays in the pipeline (the
    // daemon deletes whatever half it wrote), and is not offered again. False when the flow has
    // ended meanwhile: its removal follows (and finds nothing to delete).
    bool offload_failed(const OffloadedFlow& flow, TimePoint now) noexcept;
    // After a restart, before the workers start (rules set): recreates a flow the kernel still
    // carries, with its mapping (its NAT port marked in use) or on its port forward, as
    // offloaded and installed, in `state` (TCP: established; UDP/ICMP: unreplied or replied),
    // expiring at last_used + timeout + grace. False, changing nothing, when it conflicts with
    // an existing flow or mapping, no rule allows it, it has expired, or its ports fall in two
    // shards (the shard count changed): the daemon then deletes the kernel's entries.
    bool adopt(const OffloadedFlow& flow, FlowState state, TimePoint last_used, TimePoint now) noexcept;
    // Changes waiting in the queues (all shards).
    [[nodiscard]] std::size_t pending_offload_changes() const noexcept;

    // Live flows for `andromedactl conntrack`, at most `limit`. Copies each shard under its lock.
    [[nodiscard]] std::vector<FlowInfo> flows(TimePoint now, std::size_t limit = kUnbounded) const;
    [[nodiscard]] NatCounters counters() const noexcept;
    [[nodiscard]] NatCounters shard_counters(std::size_t shard) const noexcept;
    [[nodiscard]] std::size_t flow_count() const noexcept;
    [[nodiscard]] std::size_t mapping_count() const noexcept;
    [[nodiscard]] std::size_t shard_count() const noexcept { return shards_.size(); }
    [[nodiscard]] const NatSettings& settings() const noexcept { return settings_; }
    // The shard owning a port: where an inbound packet to that NAT port is handled.
    [[nodiscard]] std::size_t owner_shard(std::uint16_t port) const noexcept {
        return shard_count_ == 1 ? 0 : shard_of_block_(static_cast<std::uint32_t>(port) >> PortAllocator::kBlockShift);
    }

private:
    struct Slot;

    // After the owning shard ran: a retry in another shard (port-forward flows), the result,
    // hairpinning.
    void finish_outbound(std::uint32_t vni, wire::MutableByteSpan ipv4, NatPacket& p, std::int64_t now,
                         std::size_t shard, ShardOutcome& out, NatResult& result) noexcept;
    static void finish_inbound(const ShardOutcome& out, NatResult& result) noexcept;
    template <class Op>
    void on_shard(std::size_t shard, Op&& op) noexcept;
    void reject(DropReason reason, NatResult& result) noexcept;

    NatSettings settings_;
    TenantFlowBudget tenant_budget_;  // shared by the shards: a tenant's flows span them
    std::vector<std::unique_ptr<Slot>> shards_;
    std::uint32_t shard_count_;
    FastModulo shard_of_block_;
    // Drops decided before a packet has a shard (unparseable packets), counted lock-free, by
    // util::drop_slot(reason).
    std::array<std::atomic<std::uint64_t>, kDropReasonCount> early_drops_{};
    std::atomic<std::uint32_t> generation_{0};
    std::atomic<std::size_t> drain_from_{0};  // the shard the next drain starts with (fairness)
};

}  // namespace andromeda::nat
