// How a flow's state moves with each packet, and which idle timeout each state gets.
//
// The TCP tracking is what a NAT needs to pick a timeout, not a full RFC 9293 machine: no
// sequence-window checks (so a stray RST is believed, as in most NATs without window tracking).
#pragma once

#include <cstdint>

#include "nat/flow_table.hpp"
#include "nat/settings.hpp"
#include "nat/types.hpp"
#include "wire/tcp.hpp"

namespace andromeda::nat {

// A SYN without ACK: the only TCP segment that may open a flow.
[[nodiscard]] constexpr bool is_tcp_open(std::uint8_t flags) noexcept {
    return (flags & (wire::tcp_flag::kSyn | wire::tcp_flag::kAck | wire::tcp_flag::kRst)) == wire::tcp_flag::kSyn;
}

[[nodiscard]] constexpr FlowState initial_state(Protocol p) noexcept {
    return p == Protocol::tcp ? FlowState::tcp_syn_sent : FlowState::unreplied;
}

// The state after a TCP segment with `flags` from the originator (or the responder).
[[nodiscard]] inline FlowState next_tcp_state(Flow& flow, bool from_originator, std::uint8_t flags) noexcept {
    using namespace wire::tcp_flag;
    const FlowState s = flow.state;
    if (flags & kRst) return FlowState::tcp_reset;
    // A fresh SYN on a finished connection's tuple (TIME_WAIT reuse) starts over.
    if (from_originator && is_tcp_open(flags) &&
        (s == FlowState::tcp_fin_wait || s == FlowState::tcp_closing || s == FlowState::tcp_reset)) {
        flow.fins = 0;
        return FlowState::tcp_syn_sent;
    }
    switch (s) {
        case FlowState::tcp_syn_sent:
            return !from_originator && (flags & kSyn) ? FlowState::tcp_syn_received : s;
        case FlowState::tcp_syn_received:
            return from_originator && (flags & kAck) && !(flags & kSyn) ? FlowState::tcp_established : s;
        case FlowState::tcp_established:
        case FlowState::tcp_fin_wait:
        case FlowState::tcp_closing: break;
        default: return s;  // reset: only a new SYN revives it
    }
    if (!(flags & kFin)) return s;
    flow.fins |= from_originator ? Flow::kFinFromOriginator : Flow::kFinFromResponder;
    return flow.fins == (Flow::kFinFromOriginator | Flow::kFinFromResponder) ? FlowState::tcp_closing
                                                                            : FlowState::tcp_fin_wait;
}

[[nodiscard]] constexpr std::chrono::seconds idle_timeout(const NatTimeouts& t, Protocol p, FlowState s) noexcept {
    switch (s) {
        case FlowState::tcp_syn_sent:
        case FlowState::tcp_syn_received: return t.tcp_handshake;
        case FlowState::tcp_established: return t.tcp_established;
        case FlowState::tcp_fin_wait:
        case FlowState::tcp_closing:
        case FlowState::tcp_reset: return t.tcp_closing;
        case FlowState::unreplied:
        case FlowState::replied: break;
    }
    return p == Protocol::icmp ? t.icmp : t.udp;
}

}  // namespace andromeda::nat
