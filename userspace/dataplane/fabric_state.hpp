// Everything the per-packet path derives from one fabric snapshot plus the pipeline config,
// computed once when the snapshot generation (or the config) changes: the port table bound to
// endpoints, the outer-header template per peer node, per-VPC MTU and NAT placement. Packets then
// only do O(1) lookups here and in the snapshot.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "dataplane/packet_buffer.hpp"
#include "dataplane/pipeline_config.hpp"
#include "fabric/flat_index.hpp"
#include "fabric/snapshot.hpp"
#include "gateway/gateway_address.hpp"
#include "overlay/decap.hpp"
#include "overlay/outer_template.hpp"

namespace andromeda::dataplane::detail {

struct PortState {
    PortId id = kNoPort;
    PortRole role = PortRole::tenant;
    const fabric::Endpoint* endpoint = nullptr;  // tenant ports: the local endpoint, if bound
    std::uint32_t vpc_index = fabric::kNoIndex;
};

// Where a VPC's traffic for outside addresses goes.
enum class NatPlacement : std::uint8_t { none, this_node, other_node };

struct VpcState {
    const fabric::Vpc* vpc = nullptr;
    std::uint32_t inner_mtu = 0;  // largest tenant IP packet the VPC carries (its `mtu`)
    NatPlacement nat = NatPlacement::none;
    std::uint32_t nat_node_index = fabric::kNoIndex;
    gateway::GatewayAddress gateway;
    wire::Ipv6Address gateway_ipv6;  // link-local of the gateway MAC, for ICMPv6 errors
};

class FabricState {
public:
    [[nodiscard]] bool is_current(const fabric::FabricSnapshot& snapshot) const noexcept {
        return &snapshot == snapshot_ && snapshot.generation() == generation_ && !stale_;
    }
    void invalidate() noexcept { stale_ = true; }
    void rebuild(const fabric::FabricSnapshot& snapshot, const PipelineConfig& config);

    [[nodiscard]] const PortState* port(PortId id) const noexcept {
        const std::uint32_t i = port_index_.find(id);
        return i == fabric::FlatIndex::kEmpty ? nullptr : &ports_[i];
    }
    // The template towards node `node_index`, or null when its address or next-hop MAC is unknown.
    [[nodiscard]] overlay::OuterTemplate* outer_template(std::uint32_t node_index) noexcept {
        if (node_index >= templates_.size() || !templates_[node_index]) return nullptr;
        return &*templates_[node_index];
    }
    // The tenant port carrying local endpoint `e`, or kNoPort.
    [[nodiscard]] PortId port_of(const fabric::Endpoint& e) const noexcept {
        const auto i = static_cast<std::size_t>(&e - endpoints_base_);
        return i < port_of_endpoint_.size() ? port_of_endpoint_[i] : kNoPort;
    }
    [[nodiscard]] const VpcState& vpc(std::uint32_t index) const noexcept { return vpcs_[index]; }

    [[nodiscard]] const std::optional<wire::Ipv4Address>& local_address() const noexcept { return local_address_; }
    [[nodiscard]] std::uint32_t underlay_mtu() const noexcept { return underlay_mtu_; }
    [[nodiscard]] const overlay::DecapConfig& decap_config() const noexcept { return decap_; }
    [[nodiscard]] PortId underlay_port() const noexcept { return underlay_port_; }
    [[nodiscard]] bool is_nat_gateway() const noexcept { return nat_gateway_; }

private:
    void bind_ports(const fabric::FabricSnapshot& snapshot, const PipelineConfig& config);
    void build_templates(const fabric::FabricSnapshot& snapshot, const PipelineConfig& config);
    void build_vpcs(const fabric::FabricSnapshot& snapshot);

    const fabric::FabricSnapshot* snapshot_ = nullptr;
    std::uint64_t generation_ = 0;
    bool stale_ = true;

    std::vector<PortState> ports_;
    fabric::FlatIndex port_index_;
    PortId underlay_port_ = kNoPort;
    const fabric::Endpoint* endpoints_base_ = nullptr;
    std::vector<PortId> port_of_endpoint_;
    std::vector<std::optional<overlay::OuterTemplate>> templates_;
    std::vector<VpcState> vpcs_;
    std::optional<wire::Ipv4Address> local_address_;
    std::uint32_t underlay_mtu_ = 0;
    overlay::DecapConfig decap_;
    bool nat_gateway_ = false;
};

}  // namespace andromeda::dataplane::detail
