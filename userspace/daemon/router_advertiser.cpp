#include "daemon/router_advertiser.hpp"

#include <algorithm>
#include <array>
#include <optional>

#include "andromeda_overlay.h"
#include "dataplane/fabric_state.hpp"
#include "gateway/router_advertisement.hpp"

namespace andromeda::daemon {

RouterAdvertiser::RouterAdvertiser() = default;

void RouterAdvertiser::set_ports(const fabric::FabricSnapshot& snapshot,
                                 const std::map<std::uint32_t, std::uint32_t>& steering) {
    // Each VPC's IPv6 side once, then a copy per port of it.
    std::vector<std::optional<gateway::Ipv6Gateway>> gateways;
    for (const fabric::Vpc& vpc : snapshot.vpcs())
        gateways.push_back(
            dataplane::detail::ipv6_gateway_of(vpc, andromeda_vpc_inner_mtu(vpc.mtu, snapshot.local().underlay_mtu)));
    std::vector<Port> ports;
    for (const fabric::Endpoint& e : snapshot.endpoints()) {
        if (!e.is_local || e.port_ifindex == 0 || !gateways[e.vpc_index]) continue;
        const auto it = steering.find(e.port_ifindex);
        ports.push_back(Port{e.port_ifindex, it == steering.end() ? 0 : it->second, *gateways[e.vpc_index]});
    }
    std::lock_guard lock(mutex_);
    ports_ = std::move(ports);
    schedules_->retain([this](dataplane::PortId port) {
        return std::any_of(ports_.begin(), ports_.end(), [&](const Port& p) { return p.ifindex == port; });
    });
}

std::size_t RouterAdvertiser::advertise(std::uint64_t now_ns) {
    std::lock_guard lock(mutex_);
    std::array<std::uint8_t, gateway::kMaxRouterAdvertisementFrame> frame{};
    std::size_t sent = 0;
    for (const Port& port : ports_) {
        if (port.steering == 0) continue;
        const std::size_t length = schedules_->advertise_if_due(port.ifindex, port.gateway, now_ns, frame);
        if (length == 0) continue;
        if (socket_.send(port.steering, {frame.data(), length}) == io::PacketSocket::Sent::sent) {
            ++counters_.sent;
            ++sent;
        } else {
            ++counters_.send_errors;
        }
    }
    return sent;
}

RouterAdvertiserCounters RouterAdvertiser::counters() const {
    std::lock_guard lock(mutex_);
    return counters_;
}

std::size_t RouterAdvertiser::ports() const {
    std::lock_guard lock(mutex_);
    return ports_.size();
}

}  // namespace andromeda::daemon
