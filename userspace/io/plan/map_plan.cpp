#include "io/plan/map_plan.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <unordered_map>

#include "andromeda_overlay.h"
#include "fabric/policy_generation.hpp"

namespace andromeda::io {

namespace {

using fabric::Endpoint;
using fabric::FabricSnapshot;
using fabric::Node;
using fabric::Vpc;

__be32 be32(wire::Ipv4Address a) noexcept { return htonl(a.value()); }

// A node is a peer of the maps by its peer key (peer_key()), over either underlay.
__be32 key_of(const wire::IpAddress& a) noexcept { return htonl(peer_key(a)); }
bool is_peer(const Node& n) noexcept { return !n.is_local && n.address.has_value(); }

std::pair<__be32, andromeda_peer> peer_entry(const Node& n, const LocalContext& local) {
    andromeda_peer peer{};
    peer.node_id = stable_id(n.name);
    if (const auto it = local.next_hops.find(peer_key(*n.address)); it != local.next_hops.end()) {
        it->second.copy_to(peer.mac);
        peer.mac_known = 1;
    }
    if (const auto v6 = n.address->ipv6()) v6->copy_to(peer.ip6);
    return {key_of(*n.address), peer};
}

using PolicyGenerations = std::unordered_map<std::uint32_t, std::uint32_t>;

// A VPC's entry: its MTU and gateway, and where its NAT is (the NAT node's underlay address, and
// whether that is this node), which the fast path needs to send the outside's traffic there and
// to accept the outside's replies from there alone; with security groups, their generation
// (fabric/policy_generation.hpp).
std::pair<__u32, andromeda_vni> vni_entry(const FabricSnapshot& s, const Vpc& v, const LocalContext& local,
                                          const PolicyGenerations& generations) {
    andromeda_vni vni{};
    vni.vpc_id = stable_id(v.name);
    vni.mtu = vpc_inner_mtu(v, s.local().underlay_mtu);
    vni.gateway = be32(v.gateway);
    v.gateway_mac.copy_to(vni.gateway_mac);
    vni.flags = v.fastpath ? ANDROMEDA_VNI_F_FASTPATH : 0;
    // Security groups: the fast path carries only the flows the pipeline's firewall allowed under
    // this generation of the VPC's policy (bpf/lib/policy.h).
    if (const auto g = generations.find(v.vni); v.firewall() && g != generations.end()) {
        vni.flags |= ANDROMEDA_VNI_F_POLICY;
        vni.policy_generation = g->second;
    }
    if (v.nat) {
        if (const Node* node = s.find_node(v.nat->gateway_node)) {
            if (node->is_local) {
                vni.nat_node_ip = key_of(local.underlay_address);
                vni.flags |= ANDROMEDA_VNI_F_NAT_HERE;
            } else if (node->address) {
                vni.nat_node_ip = key_of(*node->address);
            }
        }
    }
    return {v.vni, vni};
}

// The LPM trie's keys for a VPC's CIDRs: the VNI's 32 bits, then the prefix.
std::vector<andromeda_vpc_cidr_key> cidr_keys(const Vpc& v) {
    std::vector<andromeda_vpc_cidr_key> keys;
    for (const auto& cidr : v.cidrs)
        keys.push_back({static_cast<__u32>(32 + cidr.length()), htonl(v.vni), be32(cidr.network())});
    return keys;
}

bool same_cidr_key(const andromeda_vpc_cidr_key& a, const andromeda_vpc_cidr_key& b) noexcept {
    return a.prefixlen == b.prefixlen && a.vni == b.vni && a.ip == b.ip;
}

void plan_vpc_cidrs(const Vpc* before, const Vpc* now, FabricMapPlan& plan) {
    const auto old_keys = before ? cidr_keys(*before) : std::vector<andromeda_vpc_cidr_key>{};
    const auto new_keys = now ? cidr_keys(*now) : std::vector<andromeda_vpc_cidr_key>{};
    for (const auto& k : old_keys)
        if (std::none_of(new_keys.begin(), new_keys.end(), [&](const auto& n) { return same_cidr_key(k, n); }))
            plan.vpc_cidrs.erases.push_back(k);
    for (const auto& k : new_keys) plan.vpc_cidrs.upserts.push_back({k, now->vni});
}

andromeda_fabric_key fabric_key(const Endpoint& e) noexcept { return {e.vni, be32(e.ip)}; }

std::pair<andromeda_fabric_key, andromeda_fabric_entry> fabric_entry(const Node& node, const Endpoint& e,
                                                                     const LocalContext& local) {
    andromeda_fabric_entry entry{};
    entry.node_ip = e.is_local ? key_of(local.underlay_address) : node.address ? key_of(*node.address) : 0;
    e.mac.copy_to(entry.mac);
    entry.local = e.is_local ? 1 : 0;
    entry.ifindex = e.is_local ? e.port_ifindex : 0;
    entry.flags = e.is_local && e.port_is_tap ? ANDROMEDA_FABRIC_F_TAP : 0;
    return {fabric_key(e), entry};
}

andromeda_fabric6_key fabric6_key(const Endpoint& e, const wire::Ipv6Address& ipv6) noexcept {
    andromeda_fabric6_key key{};
    key.vni = e.vni;
    ipv6.copy_to(key.ip);
    return key;
}

// An endpoint's entries in both fabric maps: by its IPv4 address, and by its IPv6 one when it has
// one (the same value: where it lives).
void upsert_endpoint(const Node& node, const Endpoint& e, const LocalContext& local, FabricMapPlan& plan) {
    const auto entry = fabric_entry(node, e, local);
    plan.fabric.upserts.push_back(entry);
    if (e.ipv6) plan.fabric6.upserts.push_back({fabric6_key(e, *e.ipv6), entry.second});
}

void erase_endpoint(const Endpoint& e, FabricMapPlan& plan) {
    plan.fabric.erases.push_back(fabric_key(e));
    if (e.ipv6) plan.fabric6.erases.push_back(fabric6_key(e, *e.ipv6));
}

// A changed endpoint keeps its (VNI, IPv4) key; its IPv6 address may come, go or change.
void change_endpoint(const Node& node, const fabric::Change<Endpoint>& change, const LocalContext& local,
                     FabricMapPlan& plan) {
    if (change.before.ipv6 && change.before.ipv6 != change.after.ipv6)
        plan.fabric6.erases.push_back(fabric6_key(change.before, *change.before.ipv6));
    upsert_endpoint(node, change.after, local, plan);
}

// The NAT address this node answers for, when it is the VPC's NAT gateway.
std::optional<std::pair<__be32, __u32>> nat_entry(const Vpc& v, const std::string& local_name) {
    if (!v.nat || v.nat->gateway_node != local_name) return std::nullopt;
    return std::pair<__be32, __u32>{be32(v.nat->address), v.vni};
}

void plan_nodes(const FabricSnapshot& after, const fabric::FabricDiff& diff, const LocalContext& local,
                const PolicyGenerations& generations, FabricMapPlan& plan) {
    // A VPC's entry names its NAT node's address: a NAT node that comes, goes or moves changes it.
    const auto replan_nat_vpcs = [&](const std::string& node) {
        for (const Vpc& v : after.vpcs())
            if (v.nat && v.nat->gateway_node == node) plan.vnis.upserts.push_back(vni_entry(after, v, local, generations));
    };
    for (const Node& n : diff.nodes_added) replan_nat_vpcs(n.name);
    for (const Node& n : diff.nodes_removed) replan_nat_vpcs(n.name);
    for (const auto& change : diff.nodes_changed) replan_nat_vpcs(change.after.name);
    for (const Node& n : diff.nodes_added)
        if (is_peer(n)) plan.peers.upserts.push_back(peer_entry(n, local));
    for (const Node& n : diff.nodes_removed)
        if (is_peer(n)) plan.peers.erases.push_back(key_of(*n.address));
    for (const auto& [before, now] : diff.nodes_changed) {
        const bool moved = before.address != now.address;
        if (is_peer(before) && (moved || !is_peer(now))) plan.peers.erases.push_back(key_of(*before.address));
        if (is_peer(now)) plan.peers.upserts.push_back(peer_entry(now, local));
        if (!moved) continue;
        for (const Endpoint& e : after.endpoints())
            if (e.node == now.name) upsert_endpoint(after.node_of(e), e, local, plan);
    }
}

void plan_vpcs(const FabricSnapshot& after, const fabric::FabricDiff& diff, const LocalContext& local,
               const PolicyGenerations& generations, FabricMapPlan& plan) {
    const std::string& local_name = after.local().name;
    for (const Vpc& v : diff.vpcs_added) {
        plan.vnis.upserts.push_back(vni_entry(after, v, local, generations));
        plan_vpc_cidrs(nullptr, &v, plan);
        if (auto nat = nat_entry(v, local_name)) plan.nat_addrs.upserts.push_back(*nat);
    }
    for (const Vpc& v : diff.vpcs_removed) {
        plan.vnis.erases.push_back(v.vni);
        plan_vpc_cidrs(&v, nullptr, plan);
        if (auto nat = nat_entry(v, local_name)) plan.nat_addrs.erases.push_back(nat->first);
    }
    // A VPC with security groups whose members change (an endpoint added, removed or moved between
    // groups, which is no change of the VPC itself) has a new policy generation: its entry is
    // planned in every diff, and the sync writes it where the generation did change.
    for (const Vpc& v : after.vpcs())
        if (v.firewall()) plan.vnis.upserts.push_back(vni_entry(after, v, local, generations));
    for (const auto& [before, now] : diff.vpcs_changed) {
        plan.vnis.upserts.push_back(vni_entry(after, now, local, generations));
        plan_vpc_cidrs(&before, &now, plan);
        const auto old_nat = nat_entry(before, local_name);
        const auto new_nat = nat_entry(now, local_name);
        if (old_nat && (!new_nat || new_nat->first != old_nat->first)) plan.nat_addrs.erases.push_back(old_nat->first);
        if (new_nat) plan.nat_addrs.upserts.push_back(*new_nat);
    }
}

}  // namespace

std::uint32_t peer_key(const wire::IpAddress& address) noexcept {
    if (const auto v4 = address.ipv4()) return v4->value();
    return andromeda_peer_key6(address.ipv6()->bytes().data());
}

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
    const PolicyGenerations generations = fabric::policy_generations(snapshot);
    for (const Vpc& v : snapshot.vpcs()) {
        plan.vnis.upserts.push_back(vni_entry(snapshot, v, local, generations));
        plan_vpc_cidrs(nullptr, &v, plan);
        if (auto nat = nat_entry(v, snapshot.local().name)) plan.nat_addrs.upserts.push_back(*nat);
    }
    for (const Endpoint& e : snapshot.endpoints()) upsert_endpoint(snapshot.node_of(e), e, local, plan);
    return plan;
}

FabricMapPlan plan_endpoint_changes(std::span<const Node> nodes, const fabric::FabricDiff& diff, const LocalContext& local) {
    FabricMapPlan plan;
    const auto node_of = [&](const Endpoint& e) -> const Node* {
        return e.node_index < nodes.size() ? &nodes[e.node_index] : nullptr;
    };
    for (const Endpoint& e : diff.endpoints_removed) erase_endpoint(e, plan);
    for (const Endpoint& e : diff.endpoints_added)
        if (const Node* n = node_of(e)) upsert_endpoint(*n, e, local, plan);
    for (const auto& change : diff.endpoints_changed)
        if (const Node* n = node_of(change.after)) change_endpoint(*n, change, local, plan);
    return plan;
}

FabricMapPlan plan_diff(const FabricSnapshot& after, const fabric::FabricDiff& diff, const LocalContext& local) {
    FabricMapPlan plan;
    const PolicyGenerations generations = fabric::policy_generations(after);
    plan_nodes(after, diff, local, generations, plan);
    plan_vpcs(after, diff, local, generations, plan);
    for (const Endpoint& e : diff.endpoints_removed) erase_endpoint(e, plan);
    for (const Endpoint& e : diff.endpoints_added) upsert_endpoint(after.node_of(e), e, local, plan);
    for (const auto& change : diff.endpoints_changed) change_endpoint(after.node_of(change.after), change, local, plan);
    return plan;
}

}  // namespace andromeda::io
