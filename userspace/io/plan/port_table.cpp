#include "io/plan/port_table.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <set>
#include <vector>

#include "io/plan/io_error.hpp"

namespace andromeda::io {

std::uint32_t PortSlots::allocate(std::string_view port_name, bool tenant) {
    if (auto found = find(port_name)) return *found;
    std::vector<bool> taken(ANDROMEDA_MAX_PORTS, false);
    for (const auto& [name, entry] : slots_) taken[entry.slot] = true;
    for (std::uint32_t slot = 0; slot < ANDROMEDA_MAX_PORTS; ++slot) {
        if (taken[slot]) continue;
        slots_.emplace(std::string(port_name), Entry{slot, tenant});
        return slot;
    }
    throw IoError("no free port slot for " + std::string(port_name), ENOSPC,
                  "at most " + std::to_string(ANDROMEDA_MAX_PORTS) + " ports per node");
}

std::string punt_visible_name(std::uint32_t tenant_ifindex) { return "anp" + std::to_string(tenant_ifindex); }
std::string punt_steering_name(std::uint32_t tenant_ifindex) { return "anx" + std::to_string(tenant_ifindex); }
std::string segmenter_entry_name(std::uint32_t underlay_ifindex) { return "ans" + std::to_string(underlay_ifindex); }
std::string segmenter_exit_name(std::uint32_t underlay_ifindex) { return "anr" + std::to_string(underlay_ifindex); }

std::optional<std::uint32_t> PortSlots::find(std::string_view port_name) const {
    const auto it = slots_.find(port_name);
    if (it == slots_.end()) return std::nullopt;
    return it->second.slot;
}

andromeda_port make_port(andromeda_port_role role, std::uint32_t slot, std::uint32_t vni, wire::Ipv4Address ip,
                         wire::MacAddress mac) {
    andromeda_port port{};
    port.role = role;
    port.slot = slot;
    port.vni = vni;
    port.ip = htonl(ip.value());
    mac.copy_to(port.mac);
    return port;
}

andromeda_port make_tenant_port(std::uint32_t slot, const fabric::Endpoint& e) {
    andromeda_port port = make_port(ANDROMEDA_PORT_TENANT, slot, e.vni, e.ip, e.mac);
    if (e.ipv6) e.ipv6->copy_to(port.ip6);
    return port;
}

PortTable tenant_ports(const fabric::FabricSnapshot& snapshot, PortSlots& slots,
                       std::map<std::string, std::uint32_t>* unresolved) {
    PortTable table;
    std::map<std::string, std::uint32_t> in_use;  // port name -> ifindex
    const auto endpoints = snapshot.endpoints();
    for (const std::uint32_t p : snapshot.local_positions()) {  // this node's endpoints, not the fabric's
        const fabric::Endpoint& e = endpoints[p];
        if (e.port.empty()) continue;
        in_use.emplace(e.port, e.port_ifindex);
        if (e.port_ifindex == 0 && unresolved != nullptr) unresolved->emplace(e.port, e.vni);
    }
    // Keep slots of known names first so a new port never takes a slot a live one holds.
    slots.retain_tenants(in_use);
    for (const std::uint32_t p : snapshot.local_positions()) {
        const fabric::Endpoint& e = endpoints[p];
        if (e.port.empty() || e.port_ifindex == 0) continue;
        andromeda_port& port = table[e.port_ifindex] =
            make_tenant_port(slots.tenant_slot_for(e.port), e);
        if (snapshot.local().fastpath && e.vpc_index < snapshot.vpcs().size() && snapshot.vpcs()[e.vpc_index].fastpath)
            port.flags |= ANDROMEDA_PORT_F_FASTPATH;
        if (e.port_is_tap) port.flags |= ANDROMEDA_PORT_F_TAP;
    }
    return table;
}

void add_punt_ports(PortTable& table, const std::map<std::uint32_t, PuntDevices>& punts) {
    std::vector<std::pair<std::uint32_t, andromeda_port>> added;
    for (auto it = table.begin(); it != table.end();) {
        if (it->second.role != ANDROMEDA_PORT_TENANT) {
            ++it;
            continue;
        }
        const auto punt = punts.find(it->first);
        if (punt == punts.end()) {
            it = table.erase(it);
            continue;
        }
        it->second.link = punt->second.visible_ifindex;
        andromeda_port visible{};
        visible.role = ANDROMEDA_PORT_PUNT;
        visible.link = it->first;
        if (it->second.flags & ANDROMEDA_PORT_F_TAP) visible.flags |= ANDROMEDA_PORT_F_EGRESS;  // out of the tap
        added.emplace_back(punt->second.visible_ifindex, visible);
        andromeda_port steering = it->second;
        steering.link = 0;
        added.emplace_back(punt->second.steering_ifindex, steering);
        ++it;
    }
    for (const auto& [ifindex, port] : added) table[ifindex] = port;
}

namespace {

// A tenant port's entry (its link is its punt device), as opposed to its steering copy (link 0).
bool is_tenant_port(const andromeda_port& p) noexcept { return p.role == ANDROMEDA_PORT_TENANT && p.link != 0; }

void take_identity(andromeda_port& port, const andromeda_port& wanted) noexcept {
    port.vni = wanted.vni;
    port.ip = wanted.ip;
    std::copy(std::begin(wanted.mac), std::end(wanted.mac), std::begin(port.mac));
    std::copy(std::begin(wanted.ip6), std::end(wanted.ip6), std::begin(port.ip6));
    port.flags =
        static_cast<__u8>((port.flags & ~ANDROMEDA_PORT_F_FASTPATH) | (wanted.flags & ANDROMEDA_PORT_F_FASTPATH));
}

}  // namespace

PortTable reconcile_adopted_ports(const PortTable& adopted, const PortTable& tenants) {
    std::map<std::uint32_t, const andromeda_port*> kept_by_slot;  // slot -> the configuration's entry
    std::set<std::uint32_t> removed;                              // tenant ports and their punt devices
    for (const auto& [ifindex, port] : adopted) {
        if (!is_tenant_port(port)) continue;
        const auto wanted = tenants.find(ifindex);
        if (wanted != tenants.end() && wanted->second.role == ANDROMEDA_PORT_TENANT) {
            kept_by_slot[port.slot] = &wanted->second;
        } else {
            removed.insert(ifindex);
            removed.insert(port.link);
        }
    }
    PortTable out;
    for (const auto& [ifindex, port] : adopted) {
        if (removed.count(ifindex) != 0) continue;
        if (port.role == ANDROMEDA_PORT_PUNT && removed.count(port.link) != 0) continue;
        andromeda_port entry = port;
        if (port.role == ANDROMEDA_PORT_TENANT) {
            const auto wanted = kept_by_slot.find(port.slot);
            if (wanted == kept_by_slot.end()) continue;  // the steering copy of a removed port
            take_identity(entry, *wanted->second);
        }
        out.emplace(ifindex, entry);
    }
    return out;
}

}  // namespace andromeda::io
