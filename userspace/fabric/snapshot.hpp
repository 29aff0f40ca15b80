// An immutable, indexed fabric: what the per-packet path reads. Every lookup is O(1) over flat
// open-addressing tables built once here, and none allocates.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "fabric/model.hpp"
#include "util/flat_table.hpp"

namespace andromeda::fabric {

// The snapshot's indexes: 64-bit keys (VNI << 32 | address, ifindexes, hashes of names) to
// positions in its vectors.
using FlatIndex = util::FlatTable<std::uint64_t, std::uint32_t, util::Mix64>;

// Binds a tenant port name to its interface index; supplied by the daemon (netlink), so the
// library itself does no I/O. Returns nullopt for a port that does not exist (yet).
using PortResolver = std::function<std::optional<std::uint32_t>(std::string_view port)>;

class FabricSnapshot {
public:
    // `config` must have passed validation (the loader guarantees it); generation numbers
    // snapshots in publication order.
    explicit FabricSnapshot(FabricConfig config, std::uint64_t generation = 0, const PortResolver& ports = {});

    FabricSnapshot(const FabricSnapshot&) = delete;
    FabricSnapshot& operator=(const FabricSnapshot&) = delete;

    [[nodiscard]] const Endpoint* find_endpoint(std::uint32_t vni, Ipv4Address ip) const noexcept {
        return at(endpoints_, endpoint_by_vni_ip_.find(std::uint64_t{vni} << 32 | ip.value()));
    }
    // Local endpoints only, by tenant port name or by the ifindex the resolver gave it.
    [[nodiscard]] const Endpoint* find_local_endpoint(std::string_view port) const noexcept;
    [[nodiscard]] const Endpoint* find_local_endpoint_by_ifindex(std::uint32_t ifindex) const noexcept {
        return at(endpoints_, local_by_ifindex_.find(ifindex));
    }
    [[nodiscard]] const Vpc* find_vpc(std::uint32_t vni) const noexcept { return at(vpcs_, vpc_by_vni_.find(vni)); }
    [[nodiscard]] const Node* find_node(std::string_view name) const noexcept;
    [[nodiscard]] const Node* find_node_by_address(Ipv4Address address) const noexcept {
        return at(nodes_, node_by_address_.find(address.value()));
    }

    [[nodiscard]] const Vpc& vpc_of(const Endpoint& e) const noexcept { return vpcs_[e.vpc_index]; }
    [[nodiscard]] const Node& node_of(const Endpoint& e) const noexcept { return nodes_[e.node_index]; }

    [[nodiscard]] const LocalNodeSettings& local() const noexcept { return local_; }
    [[nodiscard]] const Node& local_node() const noexcept { return nodes_.front(); }
    [[nodiscard]] std::span<const Node> nodes() const noexcept { return nodes_; }
    [[nodiscard]] std::span<const Vpc> vpcs() const noexcept { return vpcs_; }
    [[nodiscard]] std::span<const Endpoint> endpoints() const noexcept { return endpoints_; }
    [[nodiscard]] std::uint64_t generation() const noexcept { return generation_; }
    [[nodiscard]] const std::string& source_name() const noexcept { return source_name_; }
    // Heap bytes held by this snapshot (model vectors, strings and indexes).
    [[nodiscard]] std::size_t memory_bytes() const noexcept;

private:
    template <class T>
    static const T* at(const std::vector<T>& items, std::uint32_t index) noexcept {
        return index == FlatIndex::kMissing ? nullptr : &items[index];
    }
    static std::uint64_t hash_name(std::string_view name) noexcept { return std::hash<std::string_view>{}(name); }
    void build_indexes(const PortResolver& ports);

    std::string source_name_;
    std::uint64_t generation_;
    LocalNodeSettings local_;
    std::vector<Node> nodes_;
    std::vector<Vpc> vpcs_;
    std::vector<Endpoint> endpoints_;
    FlatIndex endpoint_by_vni_ip_;
    FlatIndex local_by_port_;
    FlatIndex local_by_ifindex_;
    FlatIndex vpc_by_vni_;
    FlatIndex node_by_name_;
    FlatIndex node_by_address_;
};

}  // namespace andromeda::fabric
