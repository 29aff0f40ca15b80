#include "io/bpf/nat_gateway_plumbing.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace andromeda::io {

NatGatewayPlumbing::NatGatewayPlumbing(BpfInstance& bpf, const InterfaceInfo& uplink, const InterfaceInfo& underlay,
                                       bool kernel_nat)
    : bpf_(bpf), uplink_(uplink), underlay_(underlay) {
    try {
        uplink_pair_ = std::make_unique<PuntPair>(uplink.ifindex, std::max<std::uint32_t>(uplink.mtu, 1500));
        const PuntDevices& u = uplink_pair_->devices();
        const AttachReport& report = bpf_.attach(u.steering);
        bpf_.attach_tc(u.visible, BpfInstance::TcProgram::punt);
        bpf_.attach_tc(uplink.name, BpfInstance::TcProgram::uplink);
        note_ = "uplink " + uplink.name + ": tc ingress (NAT in the kernel, punt via " + u.visible + "), " +
                report.message();
        if (kernel_nat) {
            underlay_pair_ = std::make_unique<PuntPair>(underlay.ifindex, std::max<std::uint32_t>(underlay.mtu, 1500));
            const AttachReport& punted = bpf_.attach(underlay_pair_->devices().steering);
            note_ += "; underlay " + underlay.name + ": NAT punts via " + underlay_pair_->devices().visible + ", " +
                     punted.message();
        }
    } catch (...) {
        unplumb();
        throw;
    }
}

NatGatewayPlumbing::~NatGatewayPlumbing() { unplumb(); }

void NatGatewayPlumbing::unplumb() noexcept {
    try {
        bpf_.detach_tc(uplink_.name);
        if (uplink_pair_) {
            bpf_.detach_tc(uplink_pair_->devices().visible);
            bpf_.detach(uplink_pair_->devices().steering);
        }
        if (underlay_pair_) bpf_.detach(underlay_pair_->devices().steering);
    } catch (const std::exception& e) {
        spdlog::warn("NAT gateway ports: {}", e.what());
    }
    underlay_pair_.reset();  // deletes the pairs
    uplink_pair_.reset();
}

void NatGatewayPlumbing::add_ports(PortTable& table, std::uint32_t uplink_slot, std::uint32_t underlay_slot) const {
    const PuntDevices& u = uplink_pair_->devices();
    andromeda_port& uplink = table[uplink_.ifindex];
    uplink.role = ANDROMEDA_PORT_UPLINK;
    uplink.link = u.visible_ifindex;
    andromeda_port visible = make_port(ANDROMEDA_PORT_PUNT, 0);
    visible.flags = ANDROMEDA_PORT_F_EGRESS;
    visible.link = uplink_.ifindex;
    table[u.visible_ifindex] = visible;
    andromeda_port steering = make_port(ANDROMEDA_PORT_UPLINK, uplink_slot);
    steering.flags = ANDROMEDA_PORT_F_PUNTED;
    table[u.steering_ifindex] = steering;
    if (!underlay_pair_) return;
    const PuntDevices& d = underlay_pair_->devices();
    table[underlay_.ifindex].link = d.visible_ifindex;
    andromeda_port punted = make_port(ANDROMEDA_PORT_UNDERLAY, underlay_slot);
    punted.flags = ANDROMEDA_PORT_F_PUNTED;
    table[d.steering_ifindex] = punted;
}

}  // namespace andromeda::io
