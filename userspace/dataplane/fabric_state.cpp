#include "dataplane/fabric_state.hpp"

#include <algorithm>
#include <unordered_map>

namespace andromeda::dataplane::detail {

namespace {

overlay::EncapKind encap_kind_of(fabric::Encap encap) noexcept {
    return encap == fabric::Encap::vxlan ? overlay::EncapKind::vxlan : overlay::EncapKind::andromeda;
}

}  // namespace

void FabricState::rebuild(const fabric::FabricSnapshot& snapshot, const PipelineConfig& config) {
    const auto& local = snapshot.local();
    local_address_ = config.underlay_address ? config.underlay_address : snapshot.local_node().address;
    underlay_mtu_ = config.underlay_mtu.value_or(local.underlay_mtu);
    decap_.kind = encap_kind_of(local.encap);
    decap_.udp_port = local.encap == fabric::Encap::vxlan ? local.vxlan_port : fabric::kAndromedaUdpPort;

    bind_ports(snapshot, config);
    build_templates(snapshot, config);
    build_vpcs(snapshot);

    snapshot_ = &snapshot;
    generation_ = snapshot.generation();
    stale_ = false;
}

void FabricState::bind_ports(const fabric::FabricSnapshot& snapshot, const PipelineConfig& config) {
    ports_.clear();
    port_index_.reserve(config.ports.size());
    underlay_port_ = kNoPort;
    endpoints_base_ = snapshot.endpoints().data();
    port_of_endpoint_.assign(snapshot.endpoints().size(), kNoPort);
    for (const PortBinding& binding : config.ports) {
        if (port_index_.find(binding.id) != fabric::FlatIndex::kEmpty) continue;  // first binding wins
        PortState state{binding.id, binding.role, nullptr, fabric::kNoIndex};
        if (binding.role == PortRole::tenant) {
            state.endpoint = binding.tenant_port.empty() ? snapshot.find_local_endpoint_by_ifindex(binding.id)
                                                         : snapshot.find_local_endpoint(binding.tenant_port);
            if (state.endpoint != nullptr) {
                state.vpc_index = state.endpoint->vpc_index;
                port_of_endpoint_[static_cast<std::size_t>(state.endpoint - endpoints_base_)] = binding.id;
            }
        } else if (binding.role == PortRole::underlay && underlay_port_ == kNoPort) {
            underlay_port_ = binding.id;
        }
        port_index_.insert(binding.id, static_cast<std::uint32_t>(ports_.size()));
        ports_.push_back(state);
    }
}

void FabricState::build_templates(const fabric::FabricSnapshot& snapshot, const PipelineConfig& config) {
    // IP IDs continue across rebuilds so a reload does not restart every peer's ID sequence.
    std::unordered_map<std::uint32_t, std::uint16_t> next_ids;
    for (const auto& t : templates_)
        if (t) next_ids[t->config().dst_ip.value()] = t->next_ip_id();
    templates_.clear();
    templates_.resize(snapshot.nodes().size());
    if (!local_address_) return;
    for (std::size_t i = 0; i < snapshot.nodes().size(); ++i) {
        const fabric::Node& node = snapshot.nodes()[i];
        if (node.is_local || !node.address) continue;
        std::optional<wire::MacAddress> mac = node.mac;
        for (const NextHop& hop : config.next_hops)
            if (hop.node_address == *node.address) mac = hop.mac;
        if (!mac) continue;
        overlay::OuterTemplateConfig c;
        c.kind = decap_.kind;
        c.src_mac = config.underlay_mac;
        c.dst_mac = *mac;
        c.src_ip = *local_address_;
        c.dst_ip = *node.address;
        c.udp_port = decap_.udp_port;
        c.udp_checksum = config.outer_udp_checksum;
        templates_[i].emplace(c);
        if (const auto it = next_ids.find(node.address->value()); it != next_ids.end())
            templates_[i]->set_next_ip_id(it->second);
    }
}

void FabricState::build_vpcs(const fabric::FabricSnapshot& snapshot) {
    vpcs_.clear();
    nat_gateway_ = false;
    const std::uint32_t default_mtu = underlay_mtu_ > fabric::kOverlayOverhead ? underlay_mtu_ - fabric::kOverlayOverhead : 0;
    for (const fabric::Vpc& vpc : snapshot.vpcs()) {
        VpcState state;
        state.vpc = &vpc;
        state.inner_mtu = vpc.mtu != 0 ? std::min(vpc.mtu, default_mtu) : default_mtu;
        state.gateway = gateway::GatewayAddress{vpc.gateway_mac, vpc.gateway};
        state.gateway_ipv6 = gateway::ipv6_link_local(vpc.gateway_mac);
        if (vpc.nat && vpc.nat->gateway_node_index != fabric::kNoIndex) {
            state.nat_node_index = vpc.nat->gateway_node_index;
            state.nat = state.nat_node_index == 0 ? NatPlacement::this_node : NatPlacement::other_node;
            nat_gateway_ = nat_gateway_ || state.nat == NatPlacement::this_node;
        }
        vpcs_.push_back(state);
    }
}

}  // namespace andromeda::dataplane::detail
