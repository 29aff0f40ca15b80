// What changed between two snapshots. Drives the incremental updates: only changed entries are
// written to the BPF maps, and NAT flows to removed endpoints are expired.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fabric/snapshot.hpp"

namespace andromeda::fabric {

template <class T>
struct Change {
    T before;
    T after;
};

// A port forward together with the VPC it belongs to (forwards are keyed by VNI, protocol and
// NAT port).
struct NatForwardEntry {
    std::uint32_t vni = 0;
    Ipv4Address nat_address;
    NatForward forward;
};

struct FabricDiff {
    // [node] settings such as the underlay interface or encapsulation apply on restart only.
    bool local_settings_changed = false;
    LocalNodeSettings local_before;
    LocalNodeSettings local_after;

    std::vector<Node> nodes_added, nodes_removed;  // keyed by name
    std::vector<Change<Node>> nodes_changed;
    std::vector<Vpc> vpcs_added, vpcs_removed;  // keyed by VNI; changes include [vpc.nat]
    std::vector<Change<Vpc>> vpcs_changed;
    std::vector<Endpoint> endpoints_added, endpoints_removed;  // keyed by (VNI, IP)
    std::vector<Change<Endpoint>> endpoints_changed;
    std::vector<NatForwardEntry> nat_forwards_added, nat_forwards_removed;
    std::vector<Change<NatForwardEntry>> nat_forwards_changed;

    [[nodiscard]] bool empty() const noexcept;
    // One count line, then one line per change (at most `max_lines` per kind), for
    // `andromedactl reload` and the daemon log.
    [[nodiscard]] std::string summary(std::size_t max_lines = 20) const;
};

// A fabric derived from the running one by a change applied in place (etcd's incremental path),
// with the diff that change makes: what diff_fabrics(running, snapshot) would say, computed from
// the change alone.
struct DerivedFabric {
    std::shared_ptr<const FabricSnapshot> snapshot;
    FabricDiff diff;
};

// `before` may be null (the first load): then everything in `after` is added.
[[nodiscard]] FabricDiff diff_fabrics(const FabricSnapshot* before, const FabricSnapshot& after);

}  // namespace andromeda::fabric
