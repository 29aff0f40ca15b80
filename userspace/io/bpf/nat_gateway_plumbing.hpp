// The kernel side of a NAT gateway's ports (docs/nat.md, "In the kernel"): the uplink carries tc
// (andromeda_tc_uplink: the outside's packets of flows the NAT installed are translated back in
// the kernel) instead of XDP, and gets a punt pair like a tenant port, so that what tc leaves to
// the pipeline reaches it with finished checksums (an outside sender in the same kernel, at the
// kernel's defaults, leaves them to offload); the pipeline's uplink port is that pair's steering
// end, and what it sends there leaves out of the uplink (the visible end's tc, PORT_F_EGRESS).
// With the kernel NAT on, the underlay gets a punt pair too: overlay packets for this node's NAT
// that tc does not translate go out of it, still encapsulated, and its steering end is a second
// underlay port of the pipeline (receive only).
//
//   outside ══ uplink ─(tc: NAT in the kernel | punt)─▶ anp<uplink> ══ anx<uplink> ─(XDP)─▶ AF_XDP
//              uplink ◀────────(tc: egress)─────────── anp<uplink> ◀═ anx<uplink> ◀─ AF_XDP TX
//   underlay ─(XDP, tc: decap + NAT | punt)─▶ anp<underlay> ══ anx<underlay> ─(XDP)─▶ AF_XDP
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "io/bpf/bpf_instance.hpp"
#include "io/netlink/interfaces.hpp"
#include "io/netlink/punt_pair.hpp"
#include "io/plan/port_table.hpp"

namespace andromeda::io {

class NatGatewayPlumbing {
public:
    // Plumbs the uplink (always) and, with `kernel_nat`, the underlay. Borrows `bpf`, which must
    // outlive this. Throws IoError, leaving nothing behind.
    NatGatewayPlumbing(BpfInstance& bpf, const InterfaceInfo& uplink, const InterfaceInfo& underlay, bool kernel_nat);
    // Detaches and deletes the pairs (after the workers closed their sockets).
    ~NatGatewayPlumbing();
    NatGatewayPlumbing(const NatGatewayPlumbing&) = delete;
    NatGatewayPlumbing& operator=(const NatGatewayPlumbing&) = delete;

    // The uplink's pair: the pipeline's uplink port is its steering end.
    [[nodiscard]] const PuntDevices& uplink_pair() const noexcept { return uplink_pair_->devices(); }
    // The underlay's pair when the kernel NAT is on: its steering end is a receive-only underlay
    // port of the pipeline.
    [[nodiscard]] const PuntDevices* underlay_pair() const noexcept {
        return underlay_pair_ ? &underlay_pair_->devices() : nullptr;
    }
    // `table` with the pairs' entries: the uplink (role UPLINK, link its visible end), the
    // uplink's visible end (PUNT, EGRESS, link the uplink) and steering end (UPLINK, PUNTED, slot
    // `uplink_slot`); the underlay's link and its steering end (UNDERLAY, PUNTED, `underlay_slot`).
    void add_ports(PortTable& table, std::uint32_t uplink_slot, std::uint32_t underlay_slot) const;
    // What was attached, for the log.
    [[nodiscard]] const std::string& note() const noexcept { return note_; }

private:
    void unplumb() noexcept;

    BpfInstance& bpf_;
    InterfaceInfo uplink_;
    InterfaceInfo underlay_;
    std::unique_ptr<PuntPair> uplink_pair_;
    std::unique_ptr<PuntPair> underlay_pair_;
    std::string note_;
};

}  // namespace andromeda::io
