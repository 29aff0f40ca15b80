// Per-worker counters: plain structs of named uint64 fields (util/counters.hpp: summed with
// util::add_counters, named by for_each), written by one worker without atomics. The daemon later copies them into a per-CPU BPF map whose BTF carries the same field
// names, so one `bpftool map dump` shows the XDP and user-space counters together.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dataplane/verdict.hpp"
#include "overlay/decap.hpp"

namespace andromeda::dataplane {

struct DropCounters {
#define ANDROMEDA_DROP_FIELD(name, id, description) std::uint64_t name = 0;
    ANDROMEDA_DROPS_PIPELINE(ANDROMEDA_DROP_FIELD)
#undef ANDROMEDA_DROP_FIELD
};
static_assert(sizeof(DropCounters) == kDropReasonCount * sizeof(std::uint64_t));

// One field per overlay::DecapError but ok: why a packet on the underlay port was refused.
struct DecapErrorCounters {
#define ANDROMEDA_DECAP_FIELD(name, id, description) std::uint64_t name = 0;
    ANDROMEDA_DROPS_DECAP(ANDROMEDA_DECAP_FIELD)
#undef ANDROMEDA_DECAP_FIELD
};

struct PipelineCounters {
    // Frames in, by the role of the port they came from (route_from_nat counts as from_nat).
    std::uint64_t rx_tenant = 0;
    std::uint64_t rx_underlay = 0;
    std::uint64_t rx_uplink = 0;
    std::uint64_t rx_from_nat = 0;
    // One per verdict; they sum to the frames in.
    std::uint64_t forwarded = 0;
    std::uint64_t delivered = 0;
    std::uint64_t replied = 0;
    std::uint64_t to_nat = 0;
    std::uint64_t dropped = 0;
    // What the verdicts were made of.
    std::uint64_t encapsulated = 0;           // outer packets sent (a fragmented packet counts per fragment)
    std::uint64_t decapsulated = 0;           // overlay packets accepted
    std::uint64_t delivered_local = 0;        // tenant port to tenant port on this host
    std::uint64_t delivered_from_fabric = 0;  // decapsulated and delivered
    std::uint64_t sent_to_nat_gateway = 0;    // outside the VPC, encapsulated towards its NAT node
    std::uint64_t arp_replies = 0;
    std::uint64_t echo_replies = 0;
    std::uint64_t frag_needed_sent = 0;
    std::uint64_t packet_too_big_sent = 0;
    std::uint64_t packets_fragmented = 0;
    std::uint64_t fragments_sent = 0;
    std::uint64_t in_place_fallback_copies = 0;  // in-place encap without the outer headers' headroom
    std::uint64_t fabric_rebuilds = 0;           // snapshot-derived state rebuilt (new generation)
    DropCounters drops;
    DecapErrorCounters decap_errors;

    // Calls f(name, value) for every counter (util/counters.hpp): the drops as "drop_<reason>",
    // the decapsulation refusals as "decap_<error>".
    template <class F>
    void for_each(F&& f) const {
        f("rx_tenant", rx_tenant);
        f("rx_underlay", rx_underlay);
        f("rx_uplink", rx_uplink);
        f("rx_from_nat", rx_from_nat);
        f("forwarded", forwarded);
        f("delivered", delivered);
        f("replied", replied);
        f("to_nat", to_nat);
        f("dropped", dropped);
        f("encapsulated", encapsulated);
        f("decapsulated", decapsulated);
        f("delivered_local", delivered_local);
        f("delivered_from_fabric", delivered_from_fabric);
        f("sent_to_nat_gateway", sent_to_nat_gateway);
        f("arp_replies", arp_replies);
        f("echo_replies", echo_replies);
        f("frag_needed_sent", frag_needed_sent);
        f("packet_too_big_sent", packet_too_big_sent);
        f("packets_fragmented", packets_fragmented);
        f("fragments_sent", fragments_sent);
        f("in_place_fallback_copies", in_place_fallback_copies);
        f("fabric_rebuilds", fabric_rebuilds);
#define ANDROMEDA_PIPELINE_DROP_NAME(name, id, description) f("drop_" #name, drops.name);
        ANDROMEDA_DROPS_PIPELINE(ANDROMEDA_PIPELINE_DROP_NAME)
#undef ANDROMEDA_PIPELINE_DROP_NAME
#define ANDROMEDA_PIPELINE_DECAP_NAME(name, id, description) f("decap_" #name, decap_errors.name);
        ANDROMEDA_DROPS_DECAP(ANDROMEDA_PIPELINE_DECAP_NAME)
#undef ANDROMEDA_PIPELINE_DECAP_NAME
    }
};

// The counter of `reason` (a reference into `counters.drops`); none has no counter.
[[nodiscard]] std::uint64_t* drop_counter(DropCounters& counters, DropReason reason) noexcept;
[[nodiscard]] std::uint64_t drop_count(const DropCounters& counters, DropReason reason) noexcept;
[[nodiscard]] std::uint64_t* decap_error_counter(DecapErrorCounters& counters, overlay::DecapError error) noexcept;
[[nodiscard]] std::uint64_t total_drops(const DropCounters& counters) noexcept;

}  // namespace andromeda::dataplane
