#include "io/plan/map_capacity.hpp"

#include <string>
#include <unordered_set>

namespace andromeda::io {

namespace {

std::string count_of(std::size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

// "<count>, but <map> holds at most <capacity>" with what would fit, when `needed` exceeds it.
void check(fabric::ValidationErrors& errors, const fabric::FabricSnapshot& snapshot, std::size_t needed,
           std::size_t capacity, const char* key, const std::string& what, const char* map, const std::string& fix) {
    if (needed <= capacity) return;
    errors.push_back({snapshot.source_name(), 0, key,
                      what + ", but " + map + " holds at most " + std::to_string(capacity),
                      fix + " (" + std::to_string(needed - capacity) + " too many)"});
}

}  // namespace

MapEntryCounts planned_entries(const fabric::FabricSnapshot& snapshot) {
    MapEntryCounts n;
    std::unordered_set<std::uint32_t> peer_addresses;
    for (const fabric::Node& node : snapshot.nodes())
        if (!node.is_local && node.address && node.address->ipv4()) peer_addresses.insert(node.address->ipv4()->value());
    n.peers = peer_addresses.size();
    std::unordered_set<std::uint32_t> vnis;
    std::unordered_set<std::uint32_t> nat_addresses;
    for (const fabric::Vpc& vpc : snapshot.vpcs()) {
        vnis.insert(vpc.vni);
        n.vpc_cidrs += vpc.cidrs.size();  // a VPC's CIDRs never overlap, so each is its own key
        if (vpc.nat && vpc.nat->gateway_node == snapshot.local().name) nat_addresses.insert(vpc.nat->address.value());
    }
    n.vnis = vnis.size();
    n.nat_addrs = nat_addresses.size();
    n.fabric = snapshot.endpoints().size();  // (VNI, address) is unique: validation sees to it
    // Every tenant port named, whether its interface exists yet or not: it enters the map when it does.
    std::unordered_set<std::string_view> tenant_ports;
    const auto endpoints = snapshot.endpoints();
    for (const std::uint32_t p : snapshot.local_positions())
        if (!endpoints[p].port.empty()) tenant_ports.insert(endpoints[p].port);
    n.ports = kTenantPortEntries * tenant_ports.size() + kUnderlayPortEntries +
              (snapshot.local().uplink ? kUplinkPortEntries : 0);
    return n;
}

fabric::ValidationErrors capacity_errors(const fabric::FabricSnapshot& snapshot, const MapEntryCounts& capacities) {
    const MapEntryCounts n = planned_entries(snapshot);
    const std::string node = snapshot.local().name;
    fabric::ValidationErrors errors;
    check(errors, snapshot, n.peers, capacities.peers, "nodes", count_of(n.peers, "peer node", "peer nodes"),
          "andromeda_peers", "list at most " + std::to_string(capacities.peers) + " nodes besides this one");
    check(errors, snapshot, n.vnis, capacities.vnis, "vpc", count_of(n.vnis, "VPC", "VPCs"), "andromeda_vnis",
          "every node holds every VPC: at most " + std::to_string(capacities.vnis) + " VPCs in a fabric");
    check(errors, snapshot, n.vpc_cidrs, capacities.vpc_cidrs, "vpc.cidr",
          count_of(n.vpc_cidrs, "CIDR", "CIDRs") + " over all VPCs", "andromeda_vpc_cidrs",
          "at most " + std::to_string(capacities.vpc_cidrs) +
              " CIDRs over all VPCs: merge adjacent prefixes, or remove some");
    check(errors, snapshot, n.fabric, capacities.fabric, "vpc.endpoint", count_of(n.fabric, "endpoint", "endpoints"),
          "andromeda_fabric",
          "every node holds every endpoint: at most " + std::to_string(capacities.fabric) + " endpoints in a fabric");
    check(errors, snapshot, n.nat_addrs, capacities.nat_addrs, "vpc.nat.address",
          count_of(n.nat_addrs, "NAT address", "NAT addresses") + " translated by this node (" + node + ")",
          "andromeda_nat_addrs",
          "at most " + std::to_string(capacities.nat_addrs) +
              " per gateway node: name another gateway_node for some VPCs");
    const std::size_t fixed = kUnderlayPortEntries + (snapshot.local().uplink ? kUplinkPortEntries : 0);
    const std::size_t tenants = (n.ports - fixed) / kTenantPortEntries;
    const std::size_t fit = capacities.ports > fixed ? (capacities.ports - fixed) / kTenantPortEntries : 0;
    if (n.ports > capacities.ports)
        errors.push_back({snapshot.source_name(), 0, "vpc.endpoint.port",
                          count_of(tenants, "tenant port", "tenant ports") + " on this node (" + node +
                              "), but andromeda_ports holds at most " + std::to_string(capacities.ports) +
                              " entries: 3 for each tenant port (it and its punt pair) and " + std::to_string(fixed) +
                              " for the underlay" + (snapshot.local().uplink ? " and uplink" : ""),
                          "at most " + std::to_string(fit) + " tenant ports on one node: place " +
                              std::to_string(tenants - fit) + " of these endpoints on other nodes"});
    return errors;
}

}  // namespace andromeda::io
