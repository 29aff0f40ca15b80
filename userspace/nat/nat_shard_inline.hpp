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
    wheel_.refresh(id, now + timeout_ns(f.protocol, f.state));
}

}  // namespace andromeda::nat
