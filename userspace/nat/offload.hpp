// The NAT's side of the kernel fast path (docs/nat.md, "Offload to the kernel"): the engine
// decides every flow and, once the kernel can carry a flow's remaining packets exactly as the
// engine would, asks the daemon to install it in a BPF map; when the flow ends or stops being
// eligible, it asks for the removal. These are the values exchanged, plain and copyable.
//
// Conventions the BPF map keys must follow (they are the engine's own lookup keys):
//  - addresses are wire::Ipv4Address (host-order numbers), ports host-order;
//  - ICMP echo: the identifier is the tenant's "port" (tenant_port, as the tenant sent it) and
//    the NAT's "port" (nat_port, as it leaves the uplink); the remote "port" is 0. Only echo
//    requests go out and only echo replies come in through a flow;
//  - each direction is keyed by the packet as it arrives: outbound (from a tenant of `vni`)
//    by (vni, protocol, tenant:tenant_port, remote:remote_port), inbound (from the uplink, no
//    VNI) by (protocol, remote:remote_port, nat:nat_port).
#pragma once

#include <cstdint>
#include <string_view>

#include "nat/types.hpp"
#include "wire/addresses.hpp"

namespace andromeda::nat {

enum class OffloadDirection : std::uint8_t {
    outbound,  // tenant -> remote: the source becomes nat:nat_port
    inbound,   // remote -> nat:nat_port: the destination becomes tenant:tenant_port, for VPC vni
};

// One direction's key, fields as the packet carries them when it arrives.
struct OffloadKey {
    OffloadDirection direction = OffloadDirection::outbound;
    std::uint32_t vni = 0;  // outbound only; 0 inbound
    Protocol protocol = Protocol::udp;
    wire::Ipv4Address source;
    std::uint16_t source_port = 0;       // ICMP echo: outbound the tenant's identifier, inbound 0
    wire::Ipv4Address destination;
    std::uint16_t destination_port = 0;  // ICMP echo: outbound 0, inbound the NAT's identifier

    friend bool operator==(const OffloadKey&, const OffloadKey&) = default;
};

// A flow as the kernel carries it: enough to translate either direction and to rebuild the flow
// in a new engine (NatEngine::adopt).
struct OffloadedFlow {
    std::uint32_t vni = 0;
    Protocol protocol = Protocol::udp;
    Origin origin = Origin::outbound;  // who opened it: a tenant (SNAT) or the outside (DNAT)
    bool port_forward = false;         // through a port forward (nat_port is the forwarded port)
    wire::Ipv4Address tenant;
    std::uint16_t tenant_port = 0;     // ICMP echo: the tenant's identifier
    wire::Ipv4Address nat;
    std::uint16_t nat_port = 0;        // ICMP echo: the translated identifier
    wire::Ipv4Address remote;
    std::uint16_t remote_port = 0;     // ICMP echo: 0

    [[nodiscard]] OffloadKey outbound_key() const noexcept {
        return {OffloadDirection::outbound, vni, protocol, tenant, tenant_port, remote, remote_port};
    }
    [[nodiscard]] OffloadKey inbound_key() const noexcept {
        return {OffloadDirection::inbound, 0, protocol, remote, remote_port, nat, nat_port};
    }
    [[nodiscard]] OffloadKey key(OffloadDirection d) const noexcept {
        return d == OffloadDirection::outbound ? outbound_key() : inbound_key();
    }

    friend bool operator==(const OffloadedFlow&, const OffloadedFlow&) = default;
};

// Why a flow was installed or removed.
enum class OffloadReason : std::uint8_t {
    none,
    new_flow,          // install: a UDP or ICMP echo flow the pipeline just created
    tcp_established,   // install: the TCP handshake completed
    expired,           // remove: idle past its timeout and the grace
    tcp_fin,           // remove: a FIN; the flow lives on in the engine (fin_wait / closing)
    tcp_reset,         // remove: an RST; the flow lives on in the engine (reset)
    endpoint_removed,  // remove: expire_endpoint
    stale,             // remove: its VPC lost NAT or changed NAT address, or its forward went
    hairpin,           // remove: its remote became a NAT address; the pipeline hairpins it now
};

[[nodiscard]] constexpr std::string_view to_string(OffloadReason r) noexcept {
    switch (r) {
        case OffloadReason::none: return "none";
        case OffloadReason::new_flow: return "new_flow";
        case OffloadReason::tcp_established: return "tcp_established";
        case OffloadReason::expired: return "expired";
        case OffloadReason::tcp_fin: return "tcp_fin";
        case OffloadReason::tcp_reset: return "tcp_reset";
        case OffloadReason::endpoint_removed: return "endpoint_removed";
        case OffloadReason::stale: return "stale";
        case OffloadReason::hairpin: return "hairpin";
    }
    return "unknown";
}

// One request for the daemon: write both directions of `flow` into the kernel map, or delete them.
struct OffloadChange {
    enum class Kind : std::uint8_t { install, remove };

    Kind kind = Kind::install;
    OffloadReason reason = OffloadReason::none;
    OffloadedFlow flow;
};

// What the kernel counted for one direction of a flow (cumulative, as its map entry holds it).
struct KernelCounts {
    std::uint64_t packets = 0;
    std::uint64_t bytes = 0;

    friend bool operator==(const KernelCounts&, const KernelCounts&) = default;
};

}  // namespace andromeda::nat
