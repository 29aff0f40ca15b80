// Vocabulary shared by every part of the NAT: protocols, time, flow states.
//
// Time is injected: every call that needs it takes a TimePoint (the daemon passes
// steady_clock::now() once per burst; tests pass a fake clock value), so expiry is exactly
// reproducible.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#include "wire/ip_protocol.hpp"

namespace andromeda::nat {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using Duration = std::chrono::nanoseconds;

// The transport protocols the NAT translates; values are the IANA protocol numbers.
enum class Protocol : std::uint8_t {
    icmp = wire::ip_protocol::kIcmp,
    tcp = wire::ip_protocol::kTcp,
    udp = wire::ip_protocol::kUdp,
};

[[nodiscard]] constexpr std::string_view to_string(Protocol p) noexcept {
    switch (p) {
        case Protocol::icmp: return "icmp";
        case Protocol::tcp: return "tcp";
        case Protocol::udp: return "udp";
    }
    return "unknown";
}

// Which side opened the flow: a tenant (SNAT) or the outside through a port forward or
// endpoint-independent filtering (DNAT).
enum class Origin : std::uint8_t { outbound, inbound };

[[nodiscard]] constexpr std::string_view to_string(Origin o) noexcept {
    return o == Origin::inbound ? "inbound" : "outbound";
}

// Connection-tracking state. TCP follows the handshake and teardown; UDP and ICMP only note
// whether the other side has answered.
enum class FlowState : std::uint8_t {
    tcp_syn_sent,      // the originator's SYN seen
    tcp_syn_received,  // the responder's SYN (normally SYN+ACK) seen
    tcp_established,   // the originator ACKed the responder's SYN
    tcp_fin_wait,      // one side sent FIN
    tcp_closing,       // both sides sent FIN
    tcp_reset,         // RST seen
    unreplied,         // UDP / ICMP: only the originator has sent
    replied,           // UDP / ICMP: both sides have sent
};

[[nodiscard]] constexpr std::string_view to_string(FlowState s) noexcept {
    switch (s) {
        case FlowState::tcp_syn_sent: return "syn_sent";
        case FlowState::tcp_syn_received: return "syn_received";
        case FlowState::tcp_established: return "established";
        case FlowState::tcp_fin_wait: return "fin_wait";
        case FlowState::tcp_closing: return "closing";
        case FlowState::tcp_reset: return "reset";
        case FlowState::unreplied: return "unreplied";
        case FlowState::replied: return "replied";
    }
    return "unknown";
}

// Nanoseconds since the clock's epoch: the form deadlines are stored in.
[[nodiscard]] inline std::int64_t to_ns(TimePoint t) noexcept {
    return std::chrono::duration_cast<Duration>(t.time_since_epoch()).count();
}

}  // namespace andromeda::nat
