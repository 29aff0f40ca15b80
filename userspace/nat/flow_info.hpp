// One flow as `andromedactl conntrack` shows it: plain values, copied out of the table so the
// caller holds no lock while rendering.
#pragma once

#include <cstdint>

#include "nat/offload.hpp"
#include "nat/types.hpp"
#include "wire/addresses.hpp"

namespace andromeda::nat {

// A packet's addresses and ports (for ICMP echo, the identifier is in both port fields of the
// tenant side and the remote "port" is 0).
struct FlowEndpoints {
    wire::Ipv4Address source;
    std::uint16_t source_port = 0;
    wire::Ipv4Address destination;
    std::uint16_t destination_port = 0;

    friend bool operator==(const FlowEndpoints&, const FlowEndpoints&) = default;
};

struct FlowInfo {
    std::uint32_t vni = 0;
    Protocol protocol = Protocol::udp;
    Origin origin = Origin::outbound;
    FlowState state = FlowState::unreplied;
    bool port_forward = false;   // opened through a port forward (no dynamic mapping)
    // The flow's first packet as it arrived, and as the NAT sent it on. Outbound:
    // tenant -> remote becomes nat -> remote. Inbound: remote -> nat becomes remote -> tenant.
    FlowEndpoints original;
    FlowEndpoints translated;
    Duration age{};              // since the flow was created (or adopted)
    Duration expires_in{};       // idle time left before it expires (offloaded: grace included)
    // In the kernel fast path (docs/nat.md, offload), with what the kernel counted in each
    // direction as of the daemon's last sync: `original` is the direction of the first packet.
    bool offloaded = false;
    KernelCounts kernel_original;
    KernelCounts kernel_reply;
};

}  // namespace andromeda::nat
