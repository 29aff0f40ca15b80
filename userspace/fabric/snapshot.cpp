#include "fabric/snapshot.hpp"

namespace andromeda::fabric {

FabricSnapshot::FabricSnapshot(FabricConfig config, std::uint64_t generation, const PortResolver& ports)
    : source_name_(std::move(config.source_name)),
      generation_(generation),
      local_(std::move(config.local)),
      nodes_(std::move(config.nodes)),
      vpcs_(std::move(config.vpcs)),
      endpoints_(std::move(config.endpoints)) {
    build_indexes(ports);
}

// On duplicate keys (only possible in an unvalidated config) the first entry wins.
void FabricSnapshot::build_indexes(const PortResolver& ports) {
    endpoint_by_vni_ip_.reset(endpoints_.size());
    std::size_t local_count = 0;
    for (const auto& e : endpoints_) local_count += e.is_local ? 1 : 0;
    local_by_port_.reset(local_count);
    local_by_ifindex_.reset(local_count);
    for (std::uint32_t i = 0; i < endpoints_.size(); ++i) {
        Endpoint& e = endpoints_[i];
        const std::uint64_t key = std::uint64_t{e.vni} << 32 | e.ip.value();
        endpoint_by_vni_ip_.insert(key, i);
        if (!e.is_local || e.port.empty() || find_local_endpoint(e.port) != nullptr) continue;
        local_by_port_.insert_another(hash_name(e.port), i);
        if (auto ifindex = ports ? ports(e.port) : std::nullopt; ifindex && *ifindex != 0) {
            e.port_ifindex = *ifindex;
            local_by_ifindex_.insert(*ifindex, i);
        }
    }
    vpc_by_vni_.reset(vpcs_.size());
    for (std::uint32_t i = 0; i < vpcs_.size(); ++i)
        vpc_by_vni_.insert(vpcs_[i].vni, i);
    node_by_name_.reset(nodes_.size());
    node_by_address_.reset(nodes_.size());
    for (std::uint32_t i = 0; i < nodes_.size(); ++i) {
        if (find_node(nodes_[i].name) == nullptr) node_by_name_.insert_another(hash_name(nodes_[i].name), i);
        if (const auto& a = nodes_[i].address) node_by_address_.insert(a->value(), i);
    }
}

const Endpoint* FabricSnapshot::find_local_endpoint(std::string_view port) const noexcept {
    return at(endpoints_,
              local_by_port_.find(hash_name(port), [&](std::uint32_t i) { return endpoints_[i].port == port; }));
}

const Node* FabricSnapshot::find_node(std::string_view name) const noexcept {
    return at(nodes_, node_by_name_.find(hash_name(name), [&](std::uint32_t i) { return nodes_[i].name == name; }));
}

namespace {

std::size_t string_heap(const std::string& s) noexcept { return s.capacity() > 15 ? s.capacity() + 1 : 0; }

}  // namespace

std::size_t FabricSnapshot::memory_bytes() const noexcept {
    std::size_t bytes = nodes_.capacity() * sizeof(Node) + vpcs_.capacity() * sizeof(Vpc) +
                        endpoints_.capacity() * sizeof(Endpoint);
    for (const auto& n : nodes_) bytes += string_heap(n.name);
    for (const auto& v : vpcs_) {
        bytes += string_heap(v.name) + v.cidrs.capacity() * sizeof(Ipv4Prefix);
        if (v.nat) bytes += string_heap(v.nat->gateway_node) + v.nat->forwards.capacity() * sizeof(NatForward);
    }
    for (const auto& e : endpoints_) bytes += string_heap(e.node) + string_heap(e.port);
    for (const FlatIndex* index : {&endpoint_by_vni_ip_, &local_by_port_, &local_by_ifindex_, &vpc_by_vni_,
                                   &node_by_name_, &node_by_address_})
        bytes += index->memory_bytes();
    return bytes;
}

}  // namespace andromeda::fabric
