// Whether a fabric fits this node's BPF maps. Their sizes are fixed when the object is loaded
// (shared/andromeda_kern_user.h), and a map that is full refuses the next entry in the middle of
// a reload: a fabric beyond them is refused with the fabric's other errors instead, before
// anything is written. The counts are what map_plan.cpp and port_table.cpp put into each map
// for this node's view of the fabric (map_capacity_test.cpp holds them to plan_full()).
#pragma once

#include <cstddef>

#include "andromeda_kern_user.h"
#include "fabric/errors.hpp"
#include "fabric/snapshot.hpp"

namespace andromeda::io {

// Entries per map: what a snapshot needs, or what the maps hold at most.
struct MapEntryCounts {
    std::size_t peers = 0;      // andromeda_peers: every other node with an address
    std::size_t vnis = 0;       // andromeda_vnis: every VPC
    std::size_t fabric = 0;     // andromeda_fabric: every endpoint of every VPC
    std::size_t nat_addrs = 0;  // andromeda_nat_addrs: the NAT addresses this node translates
    std::size_t vpc_cidrs = 0;  // andromeda_vpc_cidrs: every CIDR of every VPC
    std::size_t ports = 0;      // andromeda_ports: this node's tenant ports, their punt pairs, underlay, uplink

    friend bool operator==(const MapEntryCounts&, const MapEntryCounts&) = default;
};

// andromeda_fabric6 holds the endpoints that have an IPv6 address, a subset of andromeda_fabric's:
// the fabric map's limit covers both.
static_assert(ANDROMEDA_MAX_FABRIC6_ENTRIES >= ANDROMEDA_MAX_FABRIC_ENTRIES);
inline constexpr MapEntryCounts kMapCapacities{ANDROMEDA_MAX_PEERS,          ANDROMEDA_MAX_VNIS,
                                               ANDROMEDA_MAX_FABRIC_ENTRIES, ANDROMEDA_MAX_NAT_ADDRESSES,
                                               ANDROMEDA_MAX_VPC_CIDRS,      ANDROMEDA_MAX_PORTS};

// andromeda_ports entries besides the tenant ports': the underlay; with an uplink, the uplink,
// its punt pair's two ends and the underlay punt pair's steering end (the kernel NAT's).
inline constexpr std::size_t kUnderlayPortEntries = 1;
inline constexpr std::size_t kUplinkPortEntries = 4;
// A tenant port, and its punt pair's visible and steering ends.
inline constexpr std::size_t kTenantPortEntries = 3;

[[nodiscard]] MapEntryCounts planned_entries(const fabric::FabricSnapshot& snapshot);

// One error per map `snapshot` does not fit, in the loader's format, naming the map, its size
// and the count (e.g. "node.toml: vpc: 5000 VPCs, but andromeda_vnis holds at most 4096; ...");
// empty when it fits.
[[nodiscard]] fabric::ValidationErrors capacity_errors(const fabric::FabricSnapshot& snapshot,
                                                       const MapEntryCounts& capacities = kMapCapacities);

}  // namespace andromeda::io
