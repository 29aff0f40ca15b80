#include "io/plan/map_plan.hpp"

#include <arpa/inet.h>

#include <algorithm>

#include "andromeda_overlay.h"

namespace andromeda::io {

namespace {

using fabric::Endpoint;
using fabric::FabricSnapshot;
using fabric::Node;
using fabric::Vpc;

__be32 be32(wire::Ipv4Address a) noexcept { return htonl(a.value()); }

bool is_peer(const Node& n) noexcept { return !n.is_local && n.address.has_value(); }

std::pair<__be32, andromeda_peer> peer_entry(const Node& n, const LocalContext& local) {
    andromeda_peer peer{};
    peer.node_id = stable_id(n.name);
    if (const auto it = local.next_hops.find(n.address->value()); it != local.next_hops.end()) {
        it->second.copy_to(peer.mac);
        peer.mac_known = 1;
    }
    return {be32(*n.address), peer};
}

std::pair<__u32, andromeda_vni> vni_entry(const Vpc& v, std::uint32_t underlay_mtu) {
    andromeda_vni vni{};
    vni.vpc_id = stable_id(v.name);
    vni.mtu = vpc_inner_mtu(v, underlay_mtu);
    vni.gateway = be32(v.gateway);
    v.gateway_mac.copy_to(vni.gateway_mac);
    vni.flags = v.fastpath ? ANDROMEDA_VNI_F_FASTPATH : 0;
    return {v.vni, vni};
}

andromeda_fabric_key fabric_key(const Endpoint& e) noexcept { return {e.vni, be32(e.ip)}; }

std::pair<andromeda_fabric_key, andromeda_fabric_entry> fabric_entry(const Node& node, const Endpoint& e,
                                                                     const LocalContext& local) {
    andromeda_fabric_entry entry{};
    const wire::Ipv4Address node_ip = e.is_local ? local.underlay_address : node.address.value_or(wire::Ipv4Address{});
    entry.node_ip = be32(node_ip);
    e.mac.copy_to(entry.mac);
    entry.local = e.is_local ? 1 : 0;
    entry.ifindex = e.is_local ? e.port_ifindex : 0;
    return {fabric_key(e), entry};
}

std::pair<andromeda_fabric_key, andromeda_fabric_entry> fabric_entry(const FabricSnapshot& s, const Endpoint& e,
                                                                     const LocalContext& local) {
    return fabric_entry(s.node_of(e), e, local);
}

// The NAT address this node answers for, when it is the VPC's NAT gateway.
std::optional<std::pair<__be32, __u32>> nat_entry(const Vpc& v, const std::string& local_name) {
    if (!v.nat || v.nat->gateway_node != local_name) return std::nullopt;
    return std::pair<__be32, __u32>{be32(v.nat->address), v.vni};
}

void plan_nodes(const FabricSnapshot& after, const fabric::FabricDiff& diff, const LocalContext& local,
                FabricMapPlan& plan) {
    for (const Node& n : diff.nodes_added)
        if (is_peer(n)) plan.peers.upserts.push_back(peer_entry(n, local));
    for (const Node& n : diff.nodes_removed)
        if (is_peer(n)) plan.peers.erases.push_back(be32(*n.address));
    for (const auto& [before, now] : diff.nodes_changed) {
        const bool moved = before.address != now.address;
        if (is_peer(before) && (moved || !is_peer(now))) plan.peers.erases.push_back(be32(*before.address));
        if (is_peer(now)) plan.peers.upserts.push_back(peer_entry(now, local));
        if (!moved) continue;
        for (const Endpoint& e : after.endpoints())
            if (e.node == now.name) plan.fabric.upserts.push_back(fabric_entry(after, e, local));
    }
}

void plan_vpcs(const fabric::FabricDiff& diff, const std::string& local_name, std::uint32_t underlay_mtu,
               FabricMapPlan& plan) {
    for (const Vpc& v : diff.vpcs_added) {
        plan.vnis.upserts.push_back(vni_entry(v, underlay_mtu));
        if (auto nat = nat_entry(v, local_name)) plan.nat_addrs.upserts.push_back(*nat);
    }
    for (const Vpc& v : diff.vpcs_removed) {
        plan.vnis.erases.push_back(v.vni);
        if (auto nat = nat_entry(v, local_name)) plan.nat_addrs.erases.push_back(nat->first);
    }
    for (const auto& [before, now] : diff.vpcs_changed) {
        plan.vnis.upserts.push_back(vni_entry(now, underlay_mtu));
        const auto old_nat = nat_entry(before, local_name);
        const auto new_nat = nat_entry(now, local_name);
        if (old_nat && (!new_nat || new_nat->first != old_nat->first)) plan.nat_addrs.erases.push_back(old_nat->first);
        if (new_nat) plan.nat_addrs.upserts.push_back(*new_nat);
    }
}

}  // namespace

std::uint32_t stable_id(std::string_view name) noexcept {
    std::uint32_t h = 2166136261u;
    for (const char c : name) {
        h ^= static_cast<std::uint8_t>(c);
        h *= 16777619u;
    }
    return h;
}

std::uint32_t vpc_inner_mtu(const fabric::Vpc& vpc, std::uint32_t underlay_mtu) noexcept {
    return andromeda_vpc_inner_mtu(vpc.mtu, underlay_mtu);
}

FabricMapPlan plan_peers(const FabricSnapshot& snapshot, const LocalContext& local) {
    FabricMapPlan plan;
    for (const Node& n : snapshot.nodes())
        if (is_peer(n)) plan.peers.upserts.push_back(peer_entry(n, local));
    return plan;
}

FabricMapPlan plan_full(const FabricSnapshot& snapshot, const LocalContext& local) {
    FabricMapPlan plan;
    for (const Node& n : snapshot.nodes())
        if (is_peer(n)) plan.peers.upserts.push_back(peer_entry(n, local));
    for (const Vpc& v : snapshot.vpcs()) {
        plan.vnis.upserts.push_back(vni_entry(v, snapshot.local().underlay_mtu));
        if (auto nat = nat_entry(v, snapshot.local().name)) plan.nat_addrs.upserts.push_back(*nat);
    }
    for (const Endpoint& e : snapshot.endpoints()) plan.fabric.upserts.push_back(fabric_entry(snapshot, e, local));
    return plan;
}

FabricMapPlan plan_endpoint_changes(std::span<const Node> nodes, const fabric::FabricDiff& diff, const LocalContext& local) {
    FabricMapPlan plan;
    const auto node_of = [&](const Endpoint& e) -> const Node* {
        return e.node_index < nodes.size() ? &nodes[e.node_index] : nullptr;
    };
    for (const Endpoint& e : diff.endpoints_removed) plan.fabric.erases.push_back(fabric_key(e));
    for (const Endpoint& e : diff.endpoints_added)
        if (const Node* n = node_of(e)) plan.fabric.upserts.push_back(fabric_entry(*n, e, local));
    for (const auto& change : diff.endpoints_changed)
        if (const Node* n = node_of(change.after)) plan.fabric.upserts.push_back(fabric_entry(*n, change.after, local));
    return plan;
}

FabricMapPlan plan_diff(const FabricSnapshot& after, const fabric::FabricDiff& diff, const LocalContext& local) {
    FabricMapPlan plan;
    plan_nodes(after, diff, local, plan);
    plan_vpcs(diff, after.local().name, after.local().underlay_mtu, plan);
    for (const Endpoint& e : diff.endpoints_removed) plan.fabric.erases.push_back(fabric_key(e));
    for (const Endpoint& e : diff.endpoints_added) plan.fabric.upserts.push_back(fabric_entry(after, e, local));
    for (const auto& change : diff.endpoints_changed)
        plan.fabric.upserts.push_back(fabric_entry(after, change.after, local));
    return plan;
}

}  // namespace andromeda::io
