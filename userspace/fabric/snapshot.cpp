#include "fabric/snapshot.hpp"

#include <algorithm>

namespace andromeda::fabric {

FabricSnapshot::FabricSnapshot(FabricConfig config, std::uint64_t generation, const PortResolver& ports)
    : source_name_(std::move(config.source_name)),
      generation_(generation),
      local_(std::move(config.local)),
      nodes_(std::move(config.nodes)),
      vpcs_(std::move(config.vpcs)),
      endpoint_count_(config.endpoints.size()) {
    for (std::size_t first = 0; first < endpoint_count_; first += kEndpointChunk) {
        auto chunk = std::make_shared<EndpointChunk>();
        const std::size_t n = std::min(kEndpointChunk, endpoint_count_ - first);
        std::move(config.endpoints.begin() + static_cast<std::ptrdiff_t>(first),
                  config.endpoints.begin() + static_cast<std::ptrdiff_t>(first + n), chunk->begin());
        chunk_data_.push_back(chunk->data());
        chunks_.push_back(std::move(chunk));
    }
    owned_.assign(chunks_.size(), true);
    build_indexes(ports);
    owned_.clear();
}

FabricSnapshot::FabricSnapshot(Derived, const FabricSnapshot& base, std::vector<Node> nodes, std::uint64_t generation)
    : source_name_(base.source_name_),
      generation_(generation),
      local_(base.local_),
      nodes_(std::move(nodes)),
      vpcs_(base.vpcs_),
      chunks_(base.chunks_),
      chunk_data_(base.chunk_data_),
      owned_(base.chunks_.size(), false),
      endpoint_count_(base.endpoint_count_),
      local_positions_(base.local_positions_),
      endpoint_by_vni_ip_(base.endpoint_by_vni_ip_),
      endpoint_by_vpc_mac_(base.endpoint_by_vpc_mac_) {}

Endpoint& FabricSnapshot::writable(std::uint32_t index) {
    const std::size_t c = index >> kEndpointChunkBits;
    if (c == chunks_.size()) {  // one past the last chunk: a new one
        chunks_.push_back(std::make_shared<EndpointChunk>());
        chunk_data_.push_back(chunks_.back()->data());
        owned_.push_back(true);
    } else if (!owned_[c]) {
        chunks_[c] = std::make_shared<EndpointChunk>(*chunks_[c]);
        chunk_data_[c] = chunks_[c]->data();
        owned_[c] = true;
    }
    return (*chunks_[c])[index & (kEndpointChunk - 1)];
}

// On duplicate keys (only possible in an unvalidated config) the first entry wins.
void FabricSnapshot::build_indexes(const PortResolver& ports) {
    endpoint_by_vni_ip_.reset(endpoint_count_);
    endpoint_by_vpc_mac_.reset(endpoint_count_);
    for (std::uint32_t i = 0; i < endpoint_count_; ++i) {
        Endpoint& e = writable(i);
        e.position = i;
        endpoint_by_vni_ip_.insert(vni_ip_key(e), i);
        endpoint_by_vpc_mac_.insert_another(vpc_mac_key(e.vpc_index, e.mac), i);
        if (e.is_local) local_positions_.push_back(i);
    }
    index_local(ports);
    index_nodes_and_vpcs();
}

// The local endpoints' tables, from local_positions_: a tenant port is bound to the interface
// the resolver names now (none when it names none).
void FabricSnapshot::index_local(const PortResolver& ports) {
    local_by_port_.reset(local_positions_.size());
    local_by_ifindex_.reset(local_positions_.size());
    for (const std::uint32_t i : local_positions_) {
        const Endpoint& e = *endpoint_at(i);
        if (e.port.empty() || find_local_endpoint(e.port) != nullptr) continue;
        local_by_port_.insert_another(hash_name(e.port), i);
        if (const auto bound = ports ? ports(e) : std::nullopt; bound && bound->ifindex != 0) {
            if (bound->ifindex != e.port_ifindex || bound->tap != e.port_is_tap) {
                Endpoint& w = writable(i);
                w.port_ifindex = bound->ifindex;
                w.port_is_tap = bound->tap;
            }
            local_by_ifindex_.insert(bound->ifindex, i);
        }
    }
}

void FabricSnapshot::index_nodes_and_vpcs() {
    vpc_by_vni_.reset(vpcs_.size());
    for (std::uint32_t i = 0; i < vpcs_.size(); ++i)
        vpc_by_vni_.insert(vpcs_[i].vni, i);
    node_by_name_.reset(nodes_.size());
    node_by_address_.reset(nodes_.size());
    for (std::uint32_t i = 0; i < nodes_.size(); ++i) {
        if (find_node(nodes_[i].name) == nullptr) node_by_name_.insert_another(hash_name(nodes_[i].name), i);
        if (const auto& a = nodes_[i].address) node_by_address_.insert_another(a->hash(), i);
    }
}

std::shared_ptr<const FabricSnapshot> FabricSnapshot::derive(const FabricSnapshot& base, std::vector<Node> nodes,
                                                             EndpointPatch patch, std::uint64_t generation,
                                                             const PortResolver& ports) {
    auto derived = std::shared_ptr<FabricSnapshot>(new FabricSnapshot(Derived{}, base, nodes, generation));
    if (derived->apply(patch)) {
        derived->index_local(ports);
        derived->index_nodes_and_vpcs();
        derived->owned_.clear();
        return derived;
    }
    // The whole fabric, built: base's endpoints in order, the patch applied.
    FabricConfig config;
    config.source_name = base.source_name_;
    config.local = base.local_;
    config.nodes = std::move(nodes);
    config.vpcs = base.vpcs_;
    std::vector<bool> removed(base.endpoint_count_, false);
    for (const std::uint32_t r : patch.removed)
        if (r < removed.size()) removed[r] = true;
    std::vector<const Endpoint*> replacement(base.endpoint_count_, nullptr);
    for (const auto& [r, e] : patch.replaced)
        if (r < replacement.size()) replacement[r] = &e;
    config.endpoints.reserve(base.endpoint_count_ + patch.added.size());
    for (std::uint32_t i = 0; i < base.endpoint_count_; ++i)
        if (!removed[i]) config.endpoints.push_back(replacement[i] != nullptr ? *replacement[i] : *base.endpoint_at(i));
    for (Endpoint& e : patch.added) config.endpoints.push_back(std::move(e));
    return std::make_shared<const FabricSnapshot>(std::move(config), generation, ports);
}

// The patch on this copy of a snapshot's endpoints and their two tables; false, leaving the copy
// unusable, where a build has to decide. The patch's endpoints are copied, not moved: a build
// after a refusal takes them as they were.
bool FabricSnapshot::apply(EndpointPatch& patch) {
    if (endpoint_count_ + patch.added.size() > endpoint_by_vni_ip_.capacity() + patch.removed.size()) return false;
    const auto local = [&](std::uint32_t i) { return i >= endpoint_count_ || endpoint_at(i)->is_local; };
    for (const auto& [i, e] : patch.replaced) {
        if (local(i) || e.is_local) return false;
        const Endpoint& old = *endpoint_at(i);
        if (vni_ip_key(old) != vni_ip_key(e) || old.vpc_index != e.vpc_index) return false;
        if (old.mac != e.mac) {
            endpoint_by_vpc_mac_.erase(vpc_mac_key(old.vpc_index, old.mac), i);
            endpoint_by_vpc_mac_.insert_another(vpc_mac_key(e.vpc_index, e.mac), i);
        }
        Endpoint& slot = writable(i);
        slot = e;
        slot.position = i;
    }
    // From the last position down, each removed endpoint's place taken by the last one: the
    // positions stay dense, and a place freed above is never one still to be removed.
    std::sort(patch.removed.begin(), patch.removed.end(), std::greater<>());
    if (std::adjacent_find(patch.removed.begin(), patch.removed.end()) != patch.removed.end()) return false;
    for (const std::uint32_t i : patch.removed) {
        if (local(i)) return false;
        const Endpoint& gone = *endpoint_at(i);
        if (!endpoint_by_vni_ip_.erase(vni_ip_key(gone), i) ||
            !endpoint_by_vpc_mac_.erase(vpc_mac_key(gone.vpc_index, gone.mac), i))
            return false;
        const auto last = static_cast<std::uint32_t>(endpoint_count_ - 1);
        if (i != last) {
            Endpoint moved = *endpoint_at(last);
            endpoint_by_vni_ip_.replace(vni_ip_key(moved), last, i);
            endpoint_by_vpc_mac_.replace(vpc_mac_key(moved.vpc_index, moved.mac), last, i);
            if (moved.is_local) std::replace(local_positions_.begin(), local_positions_.end(), last, i);
            moved.position = i;
            writable(i) = std::move(moved);
        }
        --endpoint_count_;
        if (endpoint_count_ % kEndpointChunk == 0) {  // the last chunk emptied
            chunks_.pop_back();
            chunk_data_.pop_back();
            owned_.pop_back();
        }
    }
    for (const Endpoint& e : patch.added) {
        if (e.is_local) return false;
        const auto i = static_cast<std::uint32_t>(endpoint_count_);
        if (!endpoint_by_vni_ip_.insert(vni_ip_key(e), i)) return false;
        endpoint_by_vpc_mac_.insert_another(vpc_mac_key(e.vpc_index, e.mac), i);
        Endpoint& slot = writable(i);
        slot = e;
        slot.position = i;
        ++endpoint_count_;
    }
    return true;
}

const Endpoint* FabricSnapshot::find_endpoint_by_mac(std::uint32_t vpc_index, MacAddress mac) const noexcept {
    return endpoint_at(endpoint_by_vpc_mac_.find(vpc_mac_key(vpc_index, mac), [&](std::uint32_t i) {
        const Endpoint& e = *endpoint_at(i);
        return e.vpc_index == vpc_index && e.mac == mac;
    }));
}

const Endpoint* FabricSnapshot::find_local_endpoint(std::string_view port) const noexcept {
    return endpoint_at(
        local_by_port_.find(hash_name(port), [&](std::uint32_t i) { return endpoint_at(i)->port == port; }));
}

bool FabricSnapshot::serves_nat() const noexcept {
    return std::any_of(vpcs_.begin(), vpcs_.end(), [](const Vpc& vpc) { return translates_here(vpc); });
}

const Node* FabricSnapshot::find_node(std::string_view name) const noexcept {
    return at(nodes_, node_by_name_.find(hash_name(name), [&](std::uint32_t i) { return nodes_[i].name == name; }));
}

namespace {

std::size_t string_heap(const std::string& s) noexcept { return s.capacity() > 15 ? s.capacity() + 1 : 0; }

}  // namespace

std::size_t FabricSnapshot::memory_bytes() const noexcept {
    std::size_t bytes = nodes_.capacity() * sizeof(Node) + vpcs_.capacity() * sizeof(Vpc) +
                        chunks_.size() * sizeof(EndpointChunk) + local_positions_.capacity() * sizeof(std::uint32_t);
    for (const auto& n : nodes_) bytes += string_heap(n.name);
    for (const auto& v : vpcs_) {
        bytes += string_heap(v.name) + v.cidrs.capacity() * sizeof(Ipv4Prefix);
        if (v.nat) bytes += string_heap(v.nat->gateway_node) + v.nat->forwards.capacity() * sizeof(NatForward);
    }
    for (const Endpoint& e : endpoints()) bytes += string_heap(e.node) + string_heap(e.port);
    for (const FlatIndex* index : {&endpoint_by_vni_ip_, &endpoint_by_vpc_mac_, &local_by_port_, &local_by_ifindex_,
                                   &vpc_by_vni_, &node_by_name_, &node_by_address_})
        bytes += index->memory_bytes();
    return bytes;
}

}  // namespace andromeda::fabric
