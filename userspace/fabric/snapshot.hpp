// An immutable, indexed fabric: what the per-packet path reads. Every lookup is O(1) over flat
// open-addressing tables built here (or patched here from a copy of the previous snapshot's, for a
// derived one), and none allocates.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "fabric/model.hpp"
#include "util/flat_table.hpp"

namespace andromeda::fabric {

// The snapshot's indexes: 64-bit keys (VNI << 32 | address, ifindexes, hashes of names) to
// positions in its vectors.
using FlatIndex = util::FlatTable<std::uint64_t, std::uint32_t, util::Mix64>;

// What a local endpoint's tenant port is bound to.
struct PortBinding {
    std::uint32_t ifindex = 0;
    bool tap = false;  // the interface is a tap
};

// Binds a local endpoint's tenant port (Endpoint::port, and port_type for a tap the daemon may
// create) to its interface; supplied by the daemon (netlink), so the library itself does no I/O.
// Returns nullopt for a port that does not exist (yet).
using PortResolver = std::function<std::optional<PortBinding>(const Endpoint& endpoint)>;

// A PortResolver from a lookup by port name alone, binding no taps (tests, tools).
[[nodiscard]] inline PortResolver resolve_port_names(std::function<std::optional<std::uint32_t>(std::string_view)> by_name) {
    return [by_name = std::move(by_name)](const Endpoint& e) -> std::optional<PortBinding> {
        if (const auto ifindex = by_name(e.port)) return PortBinding{*ifindex, false};
        return std::nullopt;
    };
}

// A snapshot keeps its endpoints in chunks of kEndpointChunk that the snapshots derived from it
// share: a derived snapshot copies only the chunks its change touches (FabricSnapshot::derive).
inline constexpr unsigned kEndpointChunkBits = 8;
inline constexpr std::size_t kEndpointChunk = std::size_t{1} << kEndpointChunkBits;

// The endpoints of a snapshot in position order (Endpoint::position), as a random-access view
// over its chunks.
class EndpointView {
public:
    class iterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = Endpoint;
        using difference_type = std::ptrdiff_t;
        using pointer = const Endpoint*;
        using reference = const Endpoint&;

        iterator() = default;
        iterator(const Endpoint* const* chunks, std::size_t at) : chunks_(chunks), at_(at) {}
        reference operator*() const noexcept { return chunks_[at_ >> kEndpointChunkBits][at_ & (kEndpointChunk - 1)]; }
        pointer operator->() const noexcept { return &**this; }
        iterator& operator++() noexcept {
            ++at_;
            return *this;
        }
        iterator operator++(int) noexcept {
            iterator was = *this;
            ++at_;
            return was;
        }
        friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.at_ == b.at_; }

    private:
        const Endpoint* const* chunks_ = nullptr;
        std::size_t at_ = 0;
    };

    EndpointView(const Endpoint* const* chunks, std::size_t size) : chunks_(chunks), size_(size) {}
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    [[nodiscard]] const Endpoint& operator[](std::size_t i) const noexcept {
        return chunks_[i >> kEndpointChunkBits][i & (kEndpointChunk - 1)];
    }
    [[nodiscard]] iterator begin() const noexcept { return {chunks_, 0}; }
    [[nodiscard]] iterator end() const noexcept { return {chunks_, size_}; }

private:
    const Endpoint* const* chunks_;
    std::size_t size_;
};

// A change to a snapshot's endpoints, by position in it (FabricSnapshot::derive).
struct EndpointPatch {
    std::vector<std::uint32_t> removed;                        // positions
    std::vector<std::pair<std::uint32_t, Endpoint>> replaced;  // position, new version (same VNI and address)
    std::vector<Endpoint> added;
};

class FabricSnapshot {
public:
    // `config` must have passed validation (the loader guarantees it); generation numbers
    // snapshots in publication order.
    explicit FabricSnapshot(FabricConfig config, std::uint64_t generation = 0, const PortResolver& ports = {});

    FabricSnapshot(const FabricSnapshot&) = delete;
    FabricSnapshot& operator=(const FabricSnapshot&) = delete;

    // `base` with its nodes replaced by `nodes` (base's, changed in place or with more at the
    // end: an endpoint's node_index keeps pointing at its node) and `patch` applied to its
    // endpoints (none of them local to this node; each position once). The result shares every
    // chunk of endpoints the patch does not touch with `base` and patches copies of its
    // indexes: the cost grows with the change, not with the fabric. Where that does not hold
    // (a patch that names a local endpoint, or outgrows the indexes), the snapshot is built
    // in full; the result is the same fabric either way, in another order than a build's.
    [[nodiscard]] static std::shared_ptr<const FabricSnapshot> derive(const FabricSnapshot& base, std::vector<Node> nodes,
                                                                      EndpointPatch patch, std::uint64_t generation,
                                                                      const PortResolver& ports = {});

    [[nodiscard]] const Endpoint* find_endpoint(std::uint32_t vni, Ipv4Address ip) const noexcept {
        return endpoint_at(endpoint_by_vni_ip_.find(std::uint64_t{vni} << 32 | ip.value()));
    }
    // The endpoint of VPC `vpc_index` with `mac`, or null.
    [[nodiscard]] const Endpoint* find_endpoint_by_mac(std::uint32_t vpc_index, MacAddress mac) const noexcept;
    // Local endpoints only, by tenant port name or by the ifindex the resolver gave it.
    [[nodiscard]] const Endpoint* find_local_endpoint(std::string_view port) const noexcept;
    [[nodiscard]] const Endpoint* find_local_endpoint_by_ifindex(std::uint32_t ifindex) const noexcept {
        return endpoint_at(local_by_ifindex_.find(ifindex));
    }
    [[nodiscard]] const Vpc* find_vpc(std::uint32_t vni) const noexcept { return at(vpcs_, vpc_by_vni_.find(vni)); }
    [[nodiscard]] const Node* find_node(std::string_view name) const noexcept;
    // By underlay address, of either family (an IPv4 address hashes to itself).
    [[nodiscard]] const Node* find_node_by_address(const wire::IpAddress& address) const noexcept {
        return at(nodes_, node_by_address_.find(address.hash(), [&](std::uint32_t i) { return nodes_[i].address == address; }));
    }

    [[nodiscard]] const Vpc& vpc_of(const Endpoint& e) const noexcept { return vpcs_[e.vpc_index]; }
    [[nodiscard]] const Node& node_of(const Endpoint& e) const noexcept { return nodes_[e.node_index]; }

    [[nodiscard]] const LocalNodeSettings& local() const noexcept { return local_; }
    // This node is nodes()[kLocalNodeIndex] (model.hpp). Ask these rather than comparing
    // indexes or names.
    [[nodiscard]] const Node& local_node() const noexcept { return nodes_[kLocalNodeIndex]; }
    // Whether this node translates `vpc`'s outside traffic (its [vpc.nat] gateway_node).
    [[nodiscard]] static bool translates_here(const Vpc& vpc) noexcept {
        return vpc.nat && vpc.nat->gateway_node_index == kLocalNodeIndex;
    }
    // Whether this node is the NAT gateway of some VPC.
    [[nodiscard]] bool serves_nat() const noexcept;
    [[nodiscard]] std::span<const Node> nodes() const noexcept { return nodes_; }
    [[nodiscard]] std::span<const Vpc> vpcs() const noexcept { return vpcs_; }
    [[nodiscard]] EndpointView endpoints() const noexcept { return {chunk_data_.data(), endpoint_count_}; }
    // This node's endpoints' positions.
    [[nodiscard]] std::span<const std::uint32_t> local_positions() const noexcept { return local_positions_; }
    [[nodiscard]] std::uint64_t generation() const noexcept { return generation_; }
    [[nodiscard]] const std::string& source_name() const noexcept { return source_name_; }
    // Heap bytes held by this snapshot (model vectors, strings and indexes), chunks it shares
    // with other snapshots included.
    [[nodiscard]] std::size_t memory_bytes() const noexcept;

private:
    using EndpointChunk = std::array<Endpoint, kEndpointChunk>;
    struct Derived {};

    FabricSnapshot(Derived, const FabricSnapshot& base, std::vector<Node> nodes, std::uint64_t generation);
    [[nodiscard]] bool apply(EndpointPatch& patch);

    template <class T>
    static const T* at(const std::vector<T>& items, std::uint32_t index) noexcept {
        return index == FlatIndex::kMissing ? nullptr : &items[index];
    }
    [[nodiscard]] const Endpoint* endpoint_at(std::uint32_t index) const noexcept {
        return index == FlatIndex::kMissing ? nullptr
                                            : &chunk_data_[index >> kEndpointChunkBits][index & (kEndpointChunk - 1)];
    }
    // A writable endpoint: its chunk is copied first when this snapshot shares it.
    Endpoint& writable(std::uint32_t index);
    static std::uint64_t hash_name(std::string_view name) noexcept { return std::hash<std::string_view>{}(name); }
    static std::uint64_t vni_ip_key(const Endpoint& e) noexcept { return std::uint64_t{e.vni} << 32 | e.ip.value(); }
    // A hash of (VPC, MAC): find_endpoint_by_mac() tells colliding entries apart.
    static std::uint64_t vpc_mac_key(std::uint32_t vpc_index, MacAddress mac) noexcept {
        return mac.as_u64() ^ std::uint64_t{vpc_index} << 48;
    }
    void build_indexes(const PortResolver& ports);
    void index_local(const PortResolver& ports);
    void index_nodes_and_vpcs();

    std::string source_name_;
    std::uint64_t generation_;
    LocalNodeSettings local_;
    std::vector<Node> nodes_;
    std::vector<Vpc> vpcs_;
    std::vector<std::shared_ptr<EndpointChunk>> chunks_;
    std::vector<const Endpoint*> chunk_data_;  // chunks_[c]->data(), what lookups read
    std::vector<bool> owned_;                  // chunks_[c] is this snapshot's own (while it is built)
    std::size_t endpoint_count_ = 0;
    std::vector<std::uint32_t> local_positions_;
    FlatIndex endpoint_by_vni_ip_;
    FlatIndex endpoint_by_vpc_mac_;
    FlatIndex local_by_port_;
    FlatIndex local_by_ifindex_;
    FlatIndex vpc_by_vni_;
    FlatIndex node_by_name_;
    FlatIndex node_by_address_;
};

}  // namespace andromeda::fabric
