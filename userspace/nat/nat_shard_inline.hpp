// The per-packet helpers of NatShard, defined here so every translation unit of the shard can
// inline them (nat_shard.cpp and nat_shard_icmp_errors.cpp).
#pragma once

#include "nat/flow_state.hpp"
#include "nat/nat_shard.hpp"

namespace andromeda::nat {

inline std::uint32_t NatShard::live(std::uint32_t id, std::int64_t now) noexcept {
    if (id == kNilId) return kNilId;
    if (wheel_.expired(id, now)) {
        remove_flow(id, Removal::expired);
        return kNilId;
    }
    Flow& f = flows_[id];
    if (f.rules_generation != generation_ && !still_valid(f)) {
        remove_flow(id, Removal::stale);
        return kNilId;
    }
    return id;
}

inline void NatShard::track(std::uint32_t id, bool from_inside, std::uint8_t tcp_flags, std::int64_t now) noexcept {
    Flow& f = flows_[id];
    const bool from_originator = from_inside == (f.origin == Origin::outbound);
    if (f.protocol == Protocol::tcp) {
        f.state = next_tcp_state(f, from_originator, tcp_flags);
    } else if (!from_originator) {
        f.state = FlowState::replied;
    }
    std::int64_t deadline = now + timeout_ns(f.protocol, f.state);
    if (offload_enabled_) deadline += offload_after_packet(id);
    wheel_.refresh(id, deadline);
}

// After a packet moved the flow's state: request its install once the kernel can carry the rest
// (or its removal once it cannot). Returns the grace an offloaded flow's deadline gets.
inline std::int64_t NatShard::offload_after_packet(std::uint32_t id) noexcept {
    const Flow& f = flows_[id];
    const bool eligible = offload_eligible(f);
    const bool offloaded = (f.offload & Flow::kOffloaded) != 0;
    if (eligible != offloaded && !(eligible && (f.offload & Flow::kOffloadRefused))) [[unlikely]]
        change_offload(id, eligible);
    return (f.offload & Flow::kOffloaded) ? offload_grace_ns_ : 0;
}

}  // namespace andromeda::nat
