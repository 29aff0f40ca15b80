// What the fabric maps (peers, vnis, fabric, fabric6, nat_addrs, vpc_cidrs) should contain, computed from a fabric
// snapshot, and what a FabricDiff changes in them. Pure functions over the fabric model: the
// writing (and the skipping of writes that would change nothing) is map_sync's.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "andromeda_kern_user.h"
#include "fabric/diff.hpp"
#include "fabric/snapshot.hpp"
#include "wire/addresses.hpp"

namespace andromeda::io {

// The peer key of a node with underlay address `address`, in host order (shared/
// andromeda_kern_user.h, struct andromeda_peer): its IPv4 address, or over an IPv6 underlay
// andromeda_peer_key6 of its IPv6 one (unique among a fabric's nodes: fabric validation refuses
// two addresses with one key). The maps name nodes by it (in network order).
[[nodiscard]] std::uint32_t peer_key(const wire::IpAddress& address) noexcept;

// Facts about this node the fabric file may leave out.
struct LocalContext {
    // This node's underlay address: [node] address, or the underlay interface's own IPv4.
    wire::IpAddress underlay_address;
    // The resolved next-hop MAC of each peer node, by peer key (peer_key()): the kernel fast
    // path writes it as the outer destination. A peer missing here gets mac_known = 0, and the
    // fast path punts its traffic to the pipeline.
    std::map<std::uint32_t, wire::MacAddress> next_hops;

    // Records a peer's next-hop MAC.
    void learn_next_hop(const wire::IpAddress& peer, const wire::MacAddress& mac) { next_hops[peer_key(peer)] = mac; }
};

template <class Key, class Value>
struct TableChanges {
    std::vector<std::pair<Key, Value>> upserts;
    std::vector<Key> erases;  // applied before the upserts, so a key may move between entries

    [[nodiscard]] bool empty() const noexcept { return upserts.empty() && erases.empty(); }
    [[nodiscard]] std::size_t size() const noexcept { return upserts.size() + erases.size(); }
};

struct FabricMapPlan {
    TableChanges<__be32, andromeda_peer> peers;  // peer key -> peer node
    TableChanges<__u32, andromeda_vni> vnis;
    TableChanges<andromeda_fabric_key, andromeda_fabric_entry> fabric;
    TableChanges<andromeda_fabric6_key, andromeda_fabric_entry> fabric6;  // endpoints with an IPv6 address
    TableChanges<__be32, __u32> nat_addrs;  // NAT address served by this node -> VNI
    TableChanges<andromeda_vpc_cidr_key, __u32> vpc_cidrs;  // (VNI, CIDR) -> VNI

    [[nodiscard]] std::size_t size() const noexcept {
        return peers.size() + vnis.size() + fabric.size() + fabric6.size() + nat_addrs.size() + vpc_cidrs.size();
    }
};

// Everything the maps should hold for `snapshot`: upserts only. map_sync's reconcile() also
// erases whatever else the maps hold.
[[nodiscard]] FabricMapPlan plan_full(const fabric::FabricSnapshot& snapshot, const LocalContext& local);

// The entries `diff` may have changed, valued from `after` (the snapshot the diff leads to),
// including knock-on changes the diff does not list (a node's new address moves the fabric
// entries of its endpoints). It may name an entry whose value did not change; map_sync skips
// those writes.
[[nodiscard]] FabricMapPlan plan_diff(const fabric::FabricSnapshot& after, const fabric::FabricDiff& diff,
                                      const LocalContext& local);

// The fabric entries of a diff that changes endpoints only (no node, VPC or forward), valued
// from the endpoints themselves and `nodes`, the node list they index: what the daemon writes
// for an etcd change before the snapshot holding it is built (plan_diff() from that snapshot
// then finds them written).
[[nodiscard]] FabricMapPlan plan_endpoint_changes(std::span<const fabric::Node> nodes, const fabric::FabricDiff& diff,
                                                  const LocalContext& local);

// Every peer entry, valued with `local.next_hops`: what the daemon applies when next hops are
// learned or change (map_sync skips the entries whose value is the same).
[[nodiscard]] FabricMapPlan plan_peers(const fabric::FabricSnapshot& snapshot, const LocalContext& local);

// The inner MTU the fast path enforces for a VPC: its `mtu`, at most (and by default) the
// underlay MTU less the overlay overhead, as the pipeline computes it.
[[nodiscard]] std::uint32_t vpc_inner_mtu(const fabric::Vpc& vpc, std::uint32_t underlay_mtu) noexcept;

// A stable 32-bit id from a name (FNV-1a): the node_id of a peer and vpc_id of a VNI, so an
// entry's value does not change when the file is merely reordered.
[[nodiscard]] std::uint32_t stable_id(std::string_view name) noexcept;

}  // namespace andromeda::io
