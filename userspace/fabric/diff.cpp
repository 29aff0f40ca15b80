#include "fabric/diff.hpp"

#include <map>
#include <tuple>

namespace andromeda::fabric {

namespace {

bool same_node(const Node& a, const Node& b) { return a == b; }

// Configuration only: the resolved gateway node index may move when [[nodes]] is reordered.
bool same_vpc(const Vpc& a, const Vpc& b) {
    const bool same_nat = a.nat.has_value() == b.nat.has_value() &&
                          (!a.nat || (a.nat->gateway_node == b.nat->gateway_node && a.nat->address == b.nat->address &&
                                      a.nat->port_min == b.nat->port_min && a.nat->port_max == b.nat->port_max));
    return same_nat && a.name == b.name && a.vni == b.vni && a.cidrs == b.cidrs &&
           a.ipv6_prefix == b.ipv6_prefix && a.ipv6_gateway == b.ipv6_gateway && a.dns6 == b.dns6 &&
           a.router_advertisements == b.router_advertisements && a.gateway == b.gateway &&
           a.gateway_mac == b.gateway_mac && a.mtu == b.mtu && a.fastpath == b.fastpath &&
           a.security_groups == b.security_groups && a.default_ingress == b.default_ingress &&
           a.default_egress == b.default_egress;  // a VPC gaining or losing its firewall leaves or rejoins the fast path
}

bool same_endpoint(const Endpoint& a, const Endpoint& b) {
    return a.same_config(b) && a.port_ifindex == b.port_ifindex && a.port_is_tap == b.port_is_tap &&
           a.is_local == b.is_local;
}

void diff_nodes(const FabricSnapshot* before, const FabricSnapshot& after, FabricDiff& out) {
    for (const Node& node : after.nodes()) {
        const Node* old = before ? before->find_node(node.name) : nullptr;
        if (old == nullptr) out.nodes_added.push_back(node);
        else if (!same_node(*old, node)) out.nodes_changed.push_back({*old, node});
    }
    if (before == nullptr) return;
    for (const Node& node : before->nodes())
        if (after.find_node(node.name) == nullptr) out.nodes_removed.push_back(node);
}

void diff_vpcs(const FabricSnapshot* before, const FabricSnapshot& after, FabricDiff& out) {
    for (const Vpc& vpc : after.vpcs()) {
        const Vpc* old = before ? before->find_vpc(vpc.vni) : nullptr;
        if (old == nullptr) out.vpcs_added.push_back(vpc);
        else if (!same_vpc(*old, vpc)) out.vpcs_changed.push_back({*old, vpc});
    }
    if (before == nullptr) return;
    for (const Vpc& vpc : before->vpcs())
        if (after.find_vpc(vpc.vni) == nullptr) out.vpcs_removed.push_back(vpc);
}

void diff_endpoints(const FabricSnapshot* before, const FabricSnapshot& after, FabricDiff& out) {
    for (const Endpoint& endpoint : after.endpoints()) {
        const Endpoint* old = before ? before->find_endpoint(endpoint.vni, endpoint.ip) : nullptr;
        if (old == nullptr) out.endpoints_added.push_back(endpoint);
        else if (!same_endpoint(*old, endpoint)) out.endpoints_changed.push_back({*old, endpoint});
    }
    if (before == nullptr) return;
    for (const Endpoint& endpoint : before->endpoints())
        if (after.find_endpoint(endpoint.vni, endpoint.ip) == nullptr) out.endpoints_removed.push_back(endpoint);
}

using ForwardKey = std::tuple<std::uint32_t, NatProtocol, std::uint16_t>;

std::map<ForwardKey, NatForwardEntry> forwards_of(const FabricSnapshot* snapshot) {
    std::map<ForwardKey, NatForwardEntry> forwards;
    if (snapshot == nullptr) return forwards;
    for (const Vpc& vpc : snapshot->vpcs()) {
        if (!vpc.nat) continue;
        for (const NatForward& f : vpc.nat->forwards)
            forwards.emplace(ForwardKey{vpc.vni, f.protocol, f.nat_port}, NatForwardEntry{vpc.vni, vpc.nat->address, f});
    }
    return forwards;
}

void diff_nat_forwards(const FabricSnapshot* before, const FabricSnapshot& after, FabricDiff& out) {
    const auto old_forwards = forwards_of(before);
    const auto new_forwards = forwards_of(&after);
    for (const auto& [key, entry] : new_forwards) {
        const auto old = old_forwards.find(key);
        if (old == old_forwards.end()) out.nat_forwards_added.push_back(entry);
        else if (!(old->second.forward == entry.forward && old->second.nat_address == entry.nat_address))
            out.nat_forwards_changed.push_back({old->second, entry});
    }
    for (const auto& [key, entry] : old_forwards)
        if (!new_forwards.contains(key)) out.nat_forwards_removed.push_back(entry);
}

}  // namespace

FabricDiff diff_fabrics(const FabricSnapshot* before, const FabricSnapshot& after) {
    FabricDiff out;
    if (before != nullptr && !(before->local() == after.local())) {
        out.local_settings_changed = true;
        out.local_before = before->local();
        out.local_after = after.local();
    }
    diff_nodes(before, after, out);
    diff_vpcs(before, after, out);
    diff_endpoints(before, after, out);
    diff_nat_forwards(before, after, out);
    return out;
}

bool FabricDiff::empty() const noexcept {
    return !local_settings_changed && nodes_added.empty() && nodes_removed.empty() && nodes_changed.empty() &&
           vpcs_added.empty() && vpcs_removed.empty() && vpcs_changed.empty() && endpoints_added.empty() &&
           endpoints_removed.empty() && endpoints_changed.empty() && nat_forwards_added.empty() &&
           nat_forwards_removed.empty() && nat_forwards_changed.empty();
}

}  // namespace andromeda::fabric
