#include "io/bpf/tenant_plumbing.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "io/netlink/interfaces.hpp"

namespace andromeda::io {

TenantPlumbing::~TenantPlumbing() {
    while (!ports_.empty()) {
        const std::string name = ports_.begin()->second.first;  // unplumb() erases the entry
        unplumb(name, ports_.begin()->first);
    }
}

const PuntDevices& TenantPlumbing::plumb(const std::string& name, std::uint32_t ifindex, std::string& note) {
    const InterfaceInfo link = require_interface(name);
    auto pair = std::make_unique<PuntPair>(ifindex, std::max<std::uint32_t>(link.mtu, 1500));
    const PuntDevices& devices = pair->devices();
    try {
        const AttachReport& report = bpf_.attach(devices.steering);  // logs what it achieved
        bpf_.attach_tc(devices.visible, BpfInstance::TcProgram::punt);
        bpf_.attach_tc(name, BpfInstance::TcProgram::tenant);
        // Up only now that its program is there: a stop or a removal left it down (unplumb).
        set_link_up(ifindex, true);
        if (!link.up) spdlog::info("{}: set up (a stop or a reload had set it down, or it was down)", name);
        note = "tc ingress (fast path, punt via " + devices.visible + "), " + report.message();
        steer_flows(link, note);
    } catch (...) {
        set_down(name, ifindex);
        bpf_.detach_tc(name);
        bpf_.detach_tc(devices.visible);
        bpf_.detach(devices.steering);
        throw;
    }
    auto& slot = ports_[ifindex];
    slot = {name, std::move(pair)};
    return slot.second->devices();
}

void TenantPlumbing::steer_flows(const InterfaceInfo& link, std::string& note) const {
    if (rps_.cpus().empty()) return;
    const std::string& name = link.name;
    const RpsOutcome rps = rps_.steer({link.name, link.ifindex, link.mac.to_string()});
    const std::string cpus = format_cpu_list(rps_.cpus()) + " (rps_cpus " + format_cpu_mask(rps_.cpus()) + ")";
    std::string said;
    if (rps.set > 0) said += "RPS over CPUs " + cpus + " on " + std::to_string(rps.set) + " RX queue(s)";
    if (rps.kept > 0) said += (said.empty() ? "" : ", ") + std::string("RPS as found on ") + std::to_string(rps.kept) + " RX queue(s)";
    if (!said.empty()) {
        spdlog::info("{}: {}", name, said);
        note += ", " + said;
    }
    if (!rps.error.empty())
        spdlog::warn("tenant port {}: RPS not set (its TCP flows may arrive out of order; docs/fastpath.md, \"A tenant's "
                     "flow in order\"): {}",
                     name, rps.error);
}

void TenantPlumbing::release_flows(std::uint32_t ifindex) const noexcept {
    if (rps_.cpus().empty()) return;
    try {
        if (const auto link = find_interface(ifindex)) rps_.release({link->name, ifindex, link->mac.to_string()});
    } catch (const std::exception& e) {
        spdlog::warn("tenant port (ifindex {}): its RPS masks were left as they are: {}", ifindex, e.what());
    }
}

void TenantPlumbing::unplumb(const std::string& name, std::uint32_t ifindex) noexcept {
    set_down(name, ifindex);  // before its program goes: never an ordinary host interface
    release_flows(ifindex);
    try {
        bpf_.detach_tc(name);
        const auto it = ports_.find(ifindex);
        if (it == ports_.end()) return;
        const PuntDevices& devices = it->second.second->devices();
        bpf_.detach_tc(devices.visible);
        bpf_.detach(devices.steering);
        ports_.erase(it);  // deletes the pair
    } catch (const std::exception& e) {
        spdlog::warn("tenant port {}: {}", name, e.what());
        ports_.erase(ifindex);
    }
}

// Down, a veth or tap drops what the tenant sends (the tenant's end loses its carrier) and the
// host sends nothing into it: no ARP answered for the host's addresses, nothing routed or
// delivered, no IPv6 of the host's own. By ifindex: an interface recreated under the same name
// is another port, not this one.
void TenantPlumbing::set_down(const std::string& name, std::uint32_t ifindex) noexcept {
    try {
        set_link_up(ifindex, false);
    } catch (const std::exception& e) {
        spdlog::error("tenant port {}: could not set it down, so the host may answer or forward for its tenant: {}",
                      name, e.what());
    }
}

std::map<std::uint32_t, std::uint32_t> TenantPlumbing::steering_ifindexes() const {
    std::map<std::uint32_t, std::uint32_t> out;
    for (const auto& [ifindex, port] : ports_) out.emplace(ifindex, port.second->devices().steering_ifindex);
    return out;
}

PortTable TenantPlumbing::with_punt_devices(PortTable table) const {
    std::map<std::uint32_t, PuntDevices> devices;
    for (const auto& [ifindex, port] : ports_) devices.emplace(ifindex, port.second->devices());
    add_punt_ports(table, devices);
    return table;
}

}  // namespace andromeda::io
