#include "dataplane/fabric_state.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <unordered_map>

#include "dataplane/frame_bytes.hpp"

namespace andromeda::dataplane::detail {

void FabricState::rebuild(const fabric::FabricSnapshot& snapshot, const PipelineConfig& config) {
    const auto& local = snapshot.local();
    local_address_ = config.underlay_address ? config.underlay_address : snapshot.local_node().address;
    local_address_word_ = local_address_ && local_address_->ipv4() ? word_of(*local_address_->ipv4()) : 0;
    underlay_mtu_ = config.underlay_mtu.value_or(local.underlay_mtu);
    underlay_vlan_ = config.underlay_vlan.value_or(local.underlay_vlan);
    decap_.kind = local.encap;
    decap_.udp_port = local.encap == fabric::Encap::vxlan ? local.vxlan_port : fabric::kAndromedaUdpPort;
    // The port decapsulate() accepts (0 in a DecapConfig means the kind's default).
    const std::uint16_t udp_port = decap_.udp_port != 0 ? decap_.udp_port : overlay::default_udp_port(decap_.kind);
    const std::array<std::uint8_t, 8> udp{0, 0, static_cast<std::uint8_t>(udp_port >> 8),
                                          static_cast<std::uint8_t>(udp_port), 0, 0, 0, 0};
    overlay_udp_word_ = util::bit_cast<std::uint64_t>(udp);

    stale_ = true;  // until the end: an exception half-way leaves the state to be rebuilt
    snapshot_ = &snapshot;
    bind_ports(snapshot, config);
    build_templates(snapshot, config);
    build_vpcs(snapshot);
    build_routes(snapshot);
    prepare_express_lanes(config);

    generation_ = snapshot.generation();
    stale_ = false;
}

void FabricState::bind_ports(const fabric::FabricSnapshot& snapshot, const PipelineConfig& config) {
    ports_.clear();
    port_by_id_.clear();
    port_by_id_count_ = 0;
    port_index_.reset(config.ports.size());
    underlay_port_ = kNoPort;
    routes_.assign(snapshot.endpoints().size(), EndpointRoute{});
    for (const PortBinding& binding : config.ports) {
        if (port_index_.find(binding.id) != fabric::FlatIndex::kMissing) continue;  // first binding wins
        PortState state;
        state.id = binding.id;
        state.role = binding.role;
        if (binding.role == PortRole::tenant) {
            state.endpoint = binding.tenant_port.empty() ? snapshot.find_local_endpoint_by_ifindex(binding.id)
                                                         : snapshot.find_local_endpoint(binding.tenant_port);
            if (state.endpoint != nullptr) {
                state.vpc_index = state.endpoint->vpc_index;
                routes_[state.endpoint->position].port = binding.id;
            }
        } else if (binding.role == PortRole::underlay && underlay_port_ == kNoPort) {
            underlay_port_ = binding.id;
        }
        port_index_.insert(binding.id, static_cast<std::uint32_t>(ports_.size()));
        ports_.push_back(state);
    }
    for (const PortState& port : ports_) {  // ports_ no longer grows: the pointers stay valid
        if (port.id >= kDirectPortIds) continue;
        if (port_by_id_.size() <= port.id) port_by_id_.resize(port.id + 1, nullptr);
        port_by_id_[port.id] = &port;
    }
    port_by_id_count_ = static_cast<std::uint32_t>(port_by_id_.size());
}

void FabricState::build_routes(const fabric::FabricSnapshot& snapshot) {
    constexpr std::uint8_t kShortestDirectPrefix = 20;
    for (VpcState& vpc : vpcs_) {
        vpc.all_prefixes_direct = true;
        for (const wire::Ipv4Prefix& cidr : vpc.vpc->cidrs) {
            if (cidr.length() < kShortestDirectPrefix) {
                vpc.all_prefixes_direct = false;
                continue;
            }
            const std::uint32_t size = std::uint32_t{1} << (32 - cidr.length());
            vpc.direct.push_back(DirectPrefix{cidr.network().value(), size, std::vector<const EndpointRoute*>(size)});
        }
    }
    for (VpcState& vpc : vpcs_) {
        if (vpc.direct.empty()) continue;
        vpc.first_routes = vpc.direct.front().routes.data();
        vpc.first_network = vpc.direct.front().network;
        vpc.first_size = vpc.direct.front().size;
    }
    for (const fabric::Endpoint& e : snapshot.endpoints()) {
        EndpointRoute& route = routes_[e.position];
        route.endpoint = &e;
        e.mac.copy_to(route.macs.data());
        vpcs_[e.vpc_index].gateway.mac.copy_to(route.macs.data() + 6);
        route.node_index = e.node_index;
        route.is_local = e.is_local;
        route.peer_key = 0;
        if (e.node_index != fabric::kLocalNodeIndex && e.node_index < snapshot.nodes().size()) {
            // IPv4 only: the delivering express lane, the one reader, is off over IPv6.
            if (const auto& node_address = snapshot.nodes()[e.node_index].address; node_address && node_address->ipv4())
                route.peer_key = kPeerKeyTag | word_of(*node_address->ipv4());
        }
        // The encapsulating express lane takes any route with an `outer`. None for an address
        // the general path treats first as something else (the VPC's gateway, answered there;
        // multicast or broadcast, dropped), so the express lane need not test for those per packet.
        // A valid fabric has no such endpoints: this keeps both paths agreeing on any snapshot.
        const bool special = e.ip == vpcs_[e.vpc_index].gateway.ipv4 || is_multicast_or_broadcast(e.ip);
        route.outer = e.is_local || special ? nullptr : outer_template(e.node_index);
        VpcState& vpc = vpcs_[e.vpc_index];
        if (e.ipv6 && vpc.ipv6) vpc.routes6.emplace(interface_id(*e.ipv6), &route);
        vpc.by_mac.emplace(e.mac.as_u64(), &route);
        if (e.is_local) {
            vpc.local_members.push_back(&route);
        } else if (std::find(vpc.flood_nodes.begin(), vpc.flood_nodes.end(), e.node_index) == vpc.flood_nodes.end()) {
            vpc.flood_nodes.push_back(e.node_index);
        }
        for (DirectPrefix& prefix : vpc.direct) {
            const std::uint32_t offset = e.ip.value() - prefix.network;
            // First endpoint wins, as in the snapshot's own index.
            if (offset < prefix.size && prefix.routes[offset] == nullptr) prefix.routes[offset] = &route;
        }
    }
    for (VpcState& vpc : vpcs_) std::sort(vpc.flood_nodes.begin(), vpc.flood_nodes.end());
}

const EndpointRoute* FabricState::route_elsewhere(const VpcState& vpc, wire::Ipv4Address ip) const noexcept {
    for (const DirectPrefix& prefix : vpc.direct) {
        const std::uint32_t offset = ip.value() - prefix.network;
        if (offset < prefix.size) return prefix.routes[offset];
    }
    if (vpc.all_prefixes_direct) return nullptr;
    const fabric::Endpoint* e = snapshot_->find_endpoint(vpc.vpc->vni, ip);
    return e == nullptr ? nullptr : &routes_[e->position];
}

void FabricState::prepare_express_lanes(const PipelineConfig& config) {
    for (PortState& port : ports_) {
        port.express = ExpressLane::none;
        if (!config.express_lanes) continue;
        // The delivering express lane checks the outer destination against this node's address.
        if (port.role == PortRole::underlay && local_address_word_ != 0) port.express = ExpressLane::deliver;
        if (port.role != PortRole::tenant || port.endpoint == nullptr) continue;
        const VpcState& vpc = vpcs_[port.vpc_index];
        if (vpc.firewall) continue;  // the general path judges every packet
        // A multicast gateway MAC (a misconfiguration) must meet the general path's check. The
        // express lane writes untagged IPv4 outer headers only: with a VLAN or over IPv6, the
        // general path encapsulates.
        if (underlay_port_ != kNoPort && !vpc.gateway.mac.is_multicast() && underlay_vlan_ == 0 && !ipv6_underlay())
            port.express = ExpressLane::encapsulate;
        port.vni_bits = overlay::OuterTemplate::vni_bits(vpc.vpc->vni);
        port.endpoint_ip = word_of(port.endpoint->ip);
        port.macs = MacPair::of(vpc.gateway.mac, port.endpoint->mac);
        // Also bounded so that no accepted frame exceeds what an outer IPv4 length can describe.
        port.untagged_mtu = std::min<std::uint32_t>(andromeda_inner_ip_mtu(vpc.inner_mtu, encap_mtu(underlay_mtu_), 14),
                                                   overlay::kMaxInnerFrameSize - 14);
        port.direct_routes = vpc.first_routes;
        port.direct_network = vpc.first_network;
        port.direct_size = vpc.first_size;
    }
}

void FabricState::build_templates(const fabric::FabricSnapshot& snapshot, const PipelineConfig& config) {
    // IP IDs continue across rebuilds so a reload does not restart every peer's ID sequence.
    std::unordered_map<std::uint32_t, std::uint16_t> next_ids;  // IPv4 peers: IPv6 has no ID
    for (const auto& t : templates_)
        if (t && !t->ipv6()) next_ids[t->config().dst_ip.value()] = t->next_ip_id();
    templates_.clear();
    templates_.resize(snapshot.nodes().size());
    if (!local_address_) return;
    for (std::size_t i = 0; i < snapshot.nodes().size(); ++i) {
        const fabric::Node& node = snapshot.nodes()[i];
        // A peer of the other family cannot be reached (validation refuses such a fabric).
        if (node.is_local || !node.address || node.address->is_ipv6() != local_address_->is_ipv6()) continue;
        std::optional<wire::MacAddress> mac = node.mac;
        for (const NextHop& hop : config.next_hops)
            if (hop.node_address == *node.address) mac = hop.mac;
        if (!mac) continue;
        overlay::OuterTemplateConfig c;
        c.kind = decap_.kind;
        c.src_mac = config.underlay_mac;
        c.dst_mac = *mac;
        if (local_address_->is_ipv6()) {
            c.ipv6 = true;
            c.src_ip6 = *local_address_->ipv6();
            c.dst_ip6 = *node.address->ipv6();
        } else {
            c.src_ip = *local_address_->ipv4();
            c.dst_ip = *node.address->ipv4();
        }
        c.udp_port = decap_.udp_port;
        c.udp_checksum = config.outer_udp_checksum;
        c.vlan_id = underlay_vlan_;
        templates_[i].emplace(c);
        if (const auto it = c.ipv6 ? next_ids.end() : next_ids.find(c.dst_ip.value()); it != next_ids.end())
            templates_[i]->set_next_ip_id(it->second);
    }
}

std::optional<gateway::Ipv6Gateway> ipv6_gateway_of(const fabric::Vpc& vpc, std::uint32_t inner_mtu) {
    if (!vpc.ipv6_prefix) return std::nullopt;
    gateway::Ipv6GatewayConfig config;
    config.mac = vpc.gateway_mac;
    config.prefix = *vpc.ipv6_prefix;
    config.global_address = vpc.ipv6_gateway;
    config.mtu = inner_mtu;
    config.dns_servers = vpc.dns6;
    config.router_advertisements = vpc.router_advertisements;
    // The fabric checks the prefix and the VPC MTU; an underlay too narrow for IPv6's 1280 bytes
    // leaves the VPC IPv4 only (the daemon warns at start), rather than advertising an MTU no
    // IPv6 host may take.
    if (!gateway::check_ipv6_gateway_config(config).empty()) return std::nullopt;
    return gateway::Ipv6Gateway(std::move(config));
}

void FabricState::build_vpcs(const fabric::FabricSnapshot& snapshot) {
    vpcs_.clear();
    vpc_by_vni_key_.reset(snapshot.vpcs().size());
    nat_gateway_ = false;
    for (const fabric::Vpc& vpc : snapshot.vpcs()) {
        VpcState state;
        state.vpc = &vpc;
        state.index = static_cast<std::uint32_t>(vpcs_.size());
        state.inner_mtu = andromeda_vpc_inner_mtu(vpc.mtu, underlay_mtu_);
        state.firewall = vpc.firewall();
        state.gateway = gateway::GatewayAddress{vpc.gateway_mac, vpc.gateway};
        state.gateway_ipv6 = gateway::ipv6_link_local(vpc.gateway_mac);
        state.ipv6 = ipv6_gateway_of(vpc, state.inner_mtu);
        if (vpc.nat && vpc.nat->gateway_node_index != fabric::kNoIndex) {
            state.nat_node_index = vpc.nat->gateway_node_index;
            state.nat =
                fabric::FabricSnapshot::translates_here(vpc) ? NatPlacement::this_node : NatPlacement::other_node;
            nat_gateway_ = nat_gateway_ || state.nat == NatPlacement::this_node;
        }
        vpcs_.push_back(state);
    }
    for (const VpcState& vpc : vpcs_) vpc_by_vni_key_.insert(overlay::OuterTemplate::vni_word(vpc.vpc->vni), &vpc);  // vpcs_ is complete
}

}  // namespace andromeda::dataplane::detail
