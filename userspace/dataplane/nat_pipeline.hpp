// The pipeline with its NAT stage: what a worker of a NAT gateway node calls instead of bare
// Pipeline. Frames go through the Pipeline; those it hands to NAT (Verdict::to_nat) are
// translated by a nat::NatEngine in place and then
//   - outbound (a tenant's packet, local or from a peer node through the overlay): sent out of
//     the uplink port, with an untagged Ethernet header (uplink MAC -> the uplink next hop's MAC);
//   - inbound from the uplink, or a tenant's packet hairpinned to a NAT address: routed to the
//     endpoint with Pipeline::route_from_nat (delivered locally, or encapsulated to its node);
//     an inbound DF packet too big for the overlay is answered instead with Fragmentation Needed
//     (Pipeline::frag_needed_for_nat), translated through NAT and sent out of the uplink
//     (verdict reply, path to_uplink), so outside senders learn the path MTU.
// A frame the NAT refuses is dropped and counted by its nat::DropReason; nothing untranslated
// ever reaches the uplink.
//
// The NAT rules follow the fabric: whenever a call sees a new snapshot generation, the rules of
// the VPCs this node translates for are rebuilt from it (fabric::Vpc::nat) and installed. On a
// reload the daemon also calls on_reload(diff) so flows of removed endpoints go at once.
//
// Borrowed, not owned: the Pipeline (one per worker) and the NatEngine (may be shared by all
// workers; it is thread-safe). No threads, no allocation per packet (only when the generation
// changes), time injected. Not thread-safe itself: one NatPipeline per worker.
//
// The daemon:
//   start:     NatPipeline stage(pipeline, &engine, uplink);   // engine null on a non-NAT node
//   per burst: stage.process_batch(rx, snapshot, sink, results, now);
//   reload:    stage.on_reload(diff);   (rules follow by themselves on the next burst)
//   timer:     engine.expire(now, budget);  `andromedactl conntrack`: engine.flows(now, limit)
// See docs/nat.md, "In the pipeline".
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "dataplane/pipeline.hpp"
#include "fabric/diff.hpp"
#include "nat/nat_engine.hpp"
#include "util/counters.hpp"
#include "util/drop_reasons.hpp"

namespace andromeda::dataplane {

// Where translated outbound traffic leaves.
struct UplinkConfig {
    PortId port = kNoPort;  // kNoPort: the pipeline's port with PortRole::uplink
    wire::MacAddress mac;   // the uplink interface's own MAC: source of every frame sent there
    std::optional<wire::MacAddress> next_hop_mac;  // the router's (netlink); unset: dropped
};

// Why the NAT stage itself (not the pipeline, not the NAT engine) dropped a frame:
// shared/andromeda_drops.h, ANDROMEDA_DROPS_NAT_STAGE.
ANDROMEDA_DEFINE_DROP_REASONS(NatStageDrop, kNatStageDropCount, none, "not dropped", ANDROMEDA_DROPS_NAT_STAGE)

enum class NatPath : std::uint8_t {
    none,       // the frame never reached NAT
    to_uplink,  // translated outbound and emitted on the uplink
    to_tenant,  // translated inbound (or hairpinned) and given to route_from_nat
};

// One frame's outcome. Never Verdict::to_nat: with verdict == drop exactly one of drop_reason
// (the pipeline's, including route_from_nat's), nat_drop (the engine's) and stage_drop is set.
struct NatFrameResult {
    Verdict verdict = Verdict::drop;  // to the uplink: forward
    DropReason drop_reason = DropReason::none;
    nat::DropReason nat_drop = nat::DropReason::none;
    NatStageDrop stage_drop = NatStageDrop::none;
    NatPath path = NatPath::none;
    std::uint16_t emissions = 0;  // frames this input added to the sink
};

// Per worker, plain fields (the pipeline's counters count the rest: to_nat, rx_from_nat, ...).
#define ANDROMEDA_NAT_STAGE_COUNTERS(X)                                                             \
    X(to_uplink)                                                                                    \
    X(to_tenant)              /* given to route_from_nat (its verdicts are the pipeline's) */       \
    X(rules_installed)        /* rule sets built from a new snapshot generation */                  \
    X(rules_rejected)         /* ... that nat::NatRules refused (the old ones stay) */              \
    X(endpoint_flows_expired) /* by on_reload */                                                    \
    X(drop_no_tx_buffer)      /* translated, but no emission slot or spare was left (the frame's */ \
                              /* drop reason is the pipeline's no_tx_buffer / tx_buffer_too_small) */

struct NatStageCounters {
    ANDROMEDA_NAT_STAGE_COUNTERS(ANDROMEDA_COUNTER_FIELD)
    ANDROMEDA_DROPS_NAT_STAGE(ANDROMEDA_DROP_COUNTER_FIELD)        // drop_<NatStageDrop>
    std::array<std::uint64_t, nat::kDropReasonCount> nat_drops{};  // by util::drop_slot(nat::DropReason)

    void count_drop(NatStageDrop r) noexcept;
    void count_nat_drop(nat::DropReason r) noexcept {
        if (const std::size_t slot = util::drop_slot(r); slot < nat_drops.size()) ++nat_drops[slot];
    }
    [[nodiscard]] std::uint64_t nat_drop(nat::DropReason r) const noexcept {
        const std::size_t slot = util::drop_slot(r);
        return slot < nat_drops.size() ? nat_drops[slot] : 0;
    }
    // Calls f(name, value) for every counter (util/counters.hpp); the engine's drops, counted
    // here per worker, as "nat_drop_<reason>".
    template <class F>
    void for_each(F&& f) const {
        ANDROMEDA_NAT_STAGE_COUNTERS(ANDROMEDA_COUNTER_VISIT)
        ANDROMEDA_DROPS_NAT_STAGE(ANDROMEDA_DROP_COUNTER_VISIT)
#define ANDROMEDA_NAT_STAGE_ENGINE_DROP(name, id, description) \
    f("nat_drop_" #name, nat_drops[util::drop_slot(nat::DropReason::name)]);
        ANDROMEDA_DROPS_NAT(ANDROMEDA_NAT_STAGE_ENGINE_DROP)
#undef ANDROMEDA_NAT_STAGE_ENGINE_DROP
    }
};

class NatPipeline {
public:
    // `nat` may be null (a node that is no NAT gateway: to_nat frames are then dropped).
    NatPipeline(Pipeline& pipeline, nat::NatEngine* nat, UplinkConfig uplink);

    // As Pipeline::process / process_in_place / process_batch, with to_nat frames carried through
    // NAT. Copy variant: the input is only read (NAT translates a copy). In place: translated in
    // the input chunk, which is emitted on the uplink (input_index as the pipeline's). A burst's
    // NAT frames are translated together (NatEngine::translate_burst).
    NatFrameResult process(PortId port, wire::ByteSpan frame, const fabric::FabricSnapshot& fabric, FrameSink& sink,
                           nat::TimePoint now);
    NatFrameResult process_in_place(PortId port, const PacketBuffer& frame, const fabric::FabricSnapshot& fabric,
                                    FrameSink& sink, nat::TimePoint now);
    std::size_t process_batch(std::span<const RxFrame> frames, const fabric::FabricSnapshot& fabric, FrameSink& sink,
                              std::span<NatFrameResult> results, nat::TimePoint now);

    // After a reload: expires the flows of every endpoint the diff removed. Returns how many.
    std::size_t on_reload(const fabric::FabricDiff& diff);

    // The uplink next hop's MAC was learned or changed (netlink).
    void set_uplink_next_hop(const wire::MacAddress& mac) noexcept { uplink_.next_hop_mac = mac; }

    [[nodiscard]] const NatStageCounters& counters() const noexcept { return counters_; }
    [[nodiscard]] Pipeline& pipeline() noexcept { return pipeline_; }

private:
    // A frame for NAT: the IPv4 packet to translate, writable, with 14 bytes in front of it for
    // the Ethernet header it leaves with.
    struct NatFrame {
        std::uint8_t* ip = nullptr;
        std::uint32_t ip_length = 0;
        const PacketBuffer* input = nullptr;  // null: `ip` is in scratch_
        std::int32_t input_index = -1;
    };

    void sync_rules(const fabric::FabricSnapshot& fabric);
    // Finds the IPv4 packet of a to_nat frame; for the copy variant copies it into scratch_.
    bool locate(const FrameResult& pipeline_result, wire::ByteSpan bytes, const PacketBuffer* input,
                std::int32_t input_index, NatFrame& out, NatFrameResult& result) noexcept;
    void finish(const NatFrame& frame, const nat::NatResult& translated, bool inbound,
                const fabric::FabricSnapshot& fabric, FrameSink& sink, NatFrameResult& result, nat::TimePoint now);
    void to_uplink(const NatFrame& frame, FrameSink& sink, NatFrameResult& result) noexcept;
    void to_tenant(const NatFrame& frame, const nat::NatResult& translated, bool inbound,
                   const fabric::FabricSnapshot& fabric, FrameSink& sink, NatFrameResult& result, nat::TimePoint now);
    // An inbound frame too big for the overlay: Fragmentation Needed (written by the pipeline into
    // error_scratch_, `length` bytes) translated through NAT and sent out of the uplink.
    void frag_needed_to_uplink(std::uint32_t vni, std::size_t length, FrameSink& sink, NatFrameResult& result,
                               nat::TimePoint now);
    void stage_drop(NatStageDrop why, NatFrameResult& result) noexcept;
    NatFrameResult handle_one(const FrameResult& pipeline_result, wire::ByteSpan bytes, const PacketBuffer* input,
                              const fabric::FabricSnapshot& fabric, FrameSink& sink, nat::TimePoint now);

    Pipeline& pipeline_;
    nat::NatEngine* nat_;
    UplinkConfig uplink_;
    PortId uplink_port_ = kNoPort;
    const fabric::FabricSnapshot* rules_snapshot_ = nullptr;
    std::uint64_t rules_generation_ = 0;
    NatStageCounters counters_;

    // Sized once: the copy variant's writable frame, and a burst's bookkeeping.
    std::vector<std::uint8_t> scratch_;
    std::vector<std::uint8_t> error_scratch_;  // an ICMP error for the uplink (frag_needed_to_uplink)
    std::array<FrameResult, kMaxBatch> pipeline_results_{};
    std::array<nat::NatBurstPacket, kMaxBatch> burst_{};
    std::array<NatFrame, kMaxBatch> burst_frames_{};
    std::array<std::uint32_t, kMaxBatch> burst_index_{};
};

// The NAT rules of the VPCs `fabric`'s local node translates for (their [vpc.nat] names it as
// gateway_node). Throws std::invalid_argument (from nat::NatRules) when they are inconsistent.
[[nodiscard]] std::shared_ptr<const nat::NatRules> nat_rules_for(const fabric::FabricSnapshot& fabric);

}  // namespace andromeda::dataplane
