// Everything the per-packet path derives from one fabric snapshot plus the pipeline config,
// computed once when the snapshot generation (or the config) changes: the port table bound to
// endpoints, the outer-header template per peer node, per-VPC MTU and NAT placement. Packets then
// only do O(1) lookups here and in the snapshot.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "dataplane/frame_bytes.hpp"
#include "dataplane/packet_buffer.hpp"
#include "dataplane/pipeline_config.hpp"
#include "fabric/snapshot.hpp"
#include "gateway/gateway_address.hpp"
#include "gateway/ipv6_gateway.hpp"
#include "overlay/decap.hpp"
#include "overlay/outer_template.hpp"
#include "util/flat_table.hpp"

namespace andromeda::dataplane::detail {

// Where a VPC's traffic for outside addresses goes.
enum class NatPlacement : std::uint8_t { none, this_node, other_node };

struct VpcState;

struct EndpointRoute;

// The pipeline's shortcuts for the two frames that are nearly all traffic (Pipeline::
// express_encapsulate, express_deliver). Not "fast path": that is the kernel's tc programs.
enum class ExpressLane : std::uint8_t { none, encapsulate, deliver };

struct PortState {
    PortId id = kNoPort;
    PortRole role = PortRole::tenant;
    const fabric::Endpoint* endpoint = nullptr;  // tenant ports: the local endpoint, if bound
    std::uint32_t vpc_index = fabric::kNoIndex;
    // Which express lane frames from this port try first, decided once per rebuild (the pipeline's
    // express_lanes setting, the role, and for tenant ports whether the express lane's assumptions hold).
    ExpressLane express = ExpressLane::none;
    // The encapsulating express lane's copy of what it compares, as raw words (IPv4 in network order) so
    // one frame costs no pointer chasing. Set when `express` is ExpressLane::encapsulate.
    MacPair macs;                // the VPC's gateway MAC, then the endpoint's
    std::uint64_t vni_bits = 0;  // the VPC's VNI for OuterTemplate::fresh_header_word()
    std::uint32_t endpoint_ip = 0;
    std::uint32_t untagged_mtu = 0;  // largest untagged IPv4 packet the overlay and the VPC carry
    // The VPC's first directly indexed prefix, copied here so a lookup is one load from the port.
    const EndpointRoute* const* direct_routes = nullptr;
    std::uint32_t direct_network = 0;
    std::uint32_t direct_size = 0;
};

// Per endpoint of the snapshot (same index as FabricSnapshot::endpoints()): what forwarding to
// it takes, resolved once per generation.
struct EndpointRoute {
    const fabric::Endpoint* endpoint = nullptr;
    // The endpoint's MAC, then its VPC's gateway MAC: the destination and source MACs of a frame
    // delivered to it, here so that the express lanes write them with two copies and no other load.
    std::array<std::uint8_t, 12> macs{};
    // The encapsulating express lane's template towards the endpoint's node. Null for local endpoints, nodes
    // without a next hop, and addresses the general path must see (see build_routes).
    overlay::OuterTemplate* outer = nullptr;
    PortId port = kNoPort;                    // local: its tenant port (kNoPort: not in the port table)
    std::uint32_t node_index = fabric::kNoIndex;
    bool is_local = false;
    // What an overlay packet from this endpoint carries as its outer source, for the delivering express
    // lane's sender check in one compare: kPeerKeyTag | the node's address as it reads off the
    // wire (network order). 0 for endpoints of this node or of a node without an address, which
    // matches no packet (the tag bit).
    std::uint64_t peer_key = 0;
};
inline constexpr std::uint64_t kPeerKeyTag = std::uint64_t{1} << 32;

// A VPC prefix small enough (/20 or longer) to index endpoints by host offset: one subtraction
// and one load instead of hashing (VNI, address).
struct DirectPrefix {
    std::uint32_t network = 0;
    std::uint32_t size = 0;
    std::vector<const EndpointRoute*> routes;  // by ip - network; null: no endpoint there
};

struct VpcState {
    const fabric::Vpc* vpc = nullptr;
    std::uint32_t index = fabric::kNoIndex;  // in FabricSnapshot::vpcs()
    // direct.front(), unpacked: the one prefix nearly every VPC has, checked inline.
    const EndpointRoute* const* first_routes = nullptr;
    std::uint32_t first_network = 0;
    std::uint32_t first_size = 0;
    std::vector<DirectPrefix> direct;
    bool all_prefixes_direct = false;  // then an address in none of `direct` has no endpoint
    std::uint32_t inner_mtu = 0;  // largest tenant IP packet the VPC carries (its `mtu`)
    NatPlacement nat = NatPlacement::none;
    std::uint32_t nat_node_index = fabric::kNoIndex;
    gateway::GatewayAddress gateway;
    wire::Ipv6Address gateway_ipv6;  // link-local of the gateway MAC, for ICMPv6 errors
    bool firewall = false;  // security groups are enforced: no express lane, every packet judged
    // Dual stack (the VPC has an ipv6_prefix): the gateway's IPv6 side (ND, RA, echo), and the
    // endpoints with an IPv6 address by the low 64 bits of it (the prefix is a /64, its upper half).
    std::optional<gateway::Ipv6Gateway> ipv6;
    std::unordered_map<std::uint64_t, const EndpointRoute*> routes6;
    // Flooding (head-end replication, VXLAN only; Pipeline::flood): the VPC's endpoints on
    // this node, the peer nodes with at least one of its endpoints (each once, in node order), and
    // every endpoint by its MAC (MacAddress::as_u64), which is how a flooded frame's sender is
    // known when its source address is a link-local one.
    std::vector<const EndpointRoute*> local_members;
    std::vector<std::uint32_t> flood_nodes;
    std::unordered_map<std::uint64_t, const EndpointRoute*> by_mac;
};

// The gateway's IPv6 side of `vpc` (its prefix, gateway MAC and `inner_mtu`, the RA defaults), or
// none for an IPv4-only VPC. The pipeline and the daemon's unsolicited advertisements share it.
[[nodiscard]] std::optional<gateway::Ipv6Gateway> ipv6_gateway_of(const fabric::Vpc& vpc, std::uint32_t inner_mtu);

// An endpoint as the ND proxy sees it: its MAC and its IPv6 address, if it has one.
[[nodiscard]] inline gateway::Ipv6Endpoint ipv6_endpoint_of(const fabric::Endpoint& endpoint) noexcept {
    return gateway::Ipv6Endpoint{endpoint.mac, endpoint.ipv6 ? std::span<const wire::Ipv6Address>(&*endpoint.ipv6, 1)
                                                             : std::span<const wire::Ipv6Address>{}};
}

// Whether `source` is one of `endpoint`'s own IPv6 addresses: its `ipv6`, or the link-local one
// its MAC gives (what a Linux interface takes by default). Anti-spoofing for a tenant's packets
// and for a peer's flooded ones.
[[nodiscard]] inline bool owns_ipv6_source(const fabric::Endpoint& endpoint, const wire::Ipv6Address& source) noexcept {
    return (endpoint.ipv6 && source == *endpoint.ipv6) || source == wire::link_local_address(endpoint.mac);
}

// The low 64 bits of an IPv6 address (its interface identifier in a /64), the routes6 key.
[[nodiscard]] inline std::uint64_t interface_id(const wire::Ipv6Address& address) noexcept {
    std::uint64_t id = 0;
    for (std::size_t i = 8; i < 16; ++i) id = id << 8 | address.bytes()[i];
    return id;
}

class FabricState {
public:
    // Not copyable: port_by_id_ points into ports_ (a move keeps both buffers, so moving is fine).
    FabricState() = default;
    FabricState(const FabricState&) = delete;
    FabricState& operator=(const FabricState&) = delete;
    FabricState(FabricState&&) noexcept = default;
    FabricState& operator=(FabricState&&) noexcept = default;

    [[nodiscard]] bool is_current(const fabric::FabricSnapshot& snapshot) const noexcept {
        return &snapshot == snapshot_ && snapshot.generation() == generation_ && !stale_;
    }
    void invalidate() noexcept { stale_ = true; }
    void rebuild(const fabric::FabricSnapshot& snapshot, const PipelineConfig& config);

    [[nodiscard]] const PortState* port(PortId id) const noexcept {
        // Interface indexes are small: a direct table is one load; the hash index is the fallback.
        if (id < port_by_id_count_) [[likely]] return port_by_id_[id];
        const std::uint32_t i = port_index_.find(id);
        return i == fabric::FlatIndex::kMissing ? nullptr : &ports_[i];
    }
    // The template towards node `node_index`, or null when its address or next-hop MAC is unknown.
    [[nodiscard]] overlay::OuterTemplate* outer_template(std::uint32_t node_index) noexcept {
        if (node_index >= templates_.size() || !templates_[node_index]) return nullptr;
        return &*templates_[node_index];
    }
    // The endpoint `ip` of VPC `vpc_index` and how to reach it, or null when there is none.
    [[nodiscard]] const EndpointRoute* route(std::uint32_t vpc_index, wire::Ipv4Address ip) const noexcept {
        return route(vpcs_[vpc_index], ip);
    }
    [[gnu::always_inline]] [[nodiscard]] const EndpointRoute* route(const VpcState& vpc,
                                                                    wire::Ipv4Address ip) const noexcept {
        const std::uint32_t offset = ip.value() - vpc.first_network;
        return offset < vpc.first_size ? vpc.first_routes[offset] : route_elsewhere(vpc, ip);
    }
    // The endpoint with IPv6 address `ip` in VPC `vpc` (dual stack), or null.
    [[nodiscard]] const EndpointRoute* route6(const VpcState& vpc, const wire::Ipv6Address& ip) const noexcept {
        if (!vpc.ipv6 || !vpc.ipv6->prefix().contains(ip)) return nullptr;
        const auto it = vpc.routes6.find(interface_id(ip));
        return it == vpc.routes6.end() ? nullptr : it->second;
    }
    // The endpoint of VPC `vpc` with MAC `mac`, or null.
    [[nodiscard]] const EndpointRoute* route_by_mac(const VpcState& vpc, const wire::MacAddress& mac) const {
        const auto it = vpc.by_mac.find(mac.as_u64());
        return it == vpc.by_mac.end() ? nullptr : it->second;
    }
    [[nodiscard]] const VpcState& vpc(std::uint32_t index) const noexcept { return vpcs_[index]; }
    // The VPC with the VNI whose OuterTemplate::vni_word() is `key`, or null.
    [[gnu::always_inline]] [[nodiscard]] const VpcState* vpc_by_vni_key(std::uint32_t key) const noexcept {
        return vpc_by_vni_key_.find(key);
    }

    [[nodiscard]] const std::optional<wire::IpAddress>& local_address() const noexcept { return local_address_; }
    [[nodiscard]] bool ipv6_underlay() const noexcept { return local_address_ && local_address_->is_ipv6(); }
    // The local IPv4 address as it reads off the wire (network order), 0 when unknown or IPv6.
    [[nodiscard]] std::uint32_t local_address_word() const noexcept { return local_address_word_; }
    // The overlay port and a zero checksum as a UDP header holds them, under
    // detail::kUdpPortAndChecksumMask.
    [[nodiscard]] std::uint64_t overlay_udp_word() const noexcept { return overlay_udp_word_; }
    [[nodiscard]] std::uint32_t underlay_mtu() const noexcept { return underlay_mtu_; }
    // What andromeda_inner_ip_mtu(), which counts IPv4 outer headers, is given for `mtu` of the
    // underlay: over IPv6, the 20 bytes its outer header takes beyond IPv4's are taken off first.
    [[nodiscard]] std::uint32_t encap_mtu(std::uint32_t mtu) const noexcept {
        return ipv6_underlay() ? mtu - (fabric::kOverlayOverhead6 - fabric::kOverlayOverhead) : mtu;
    }
    // The 802.1Q VID outer frames carry (every template is tagged with it), 0: untagged.
    [[nodiscard]] std::uint16_t underlay_vlan() const noexcept { return underlay_vlan_; }
    [[nodiscard]] const overlay::DecapConfig& decap_config() const noexcept { return decap_; }
    [[nodiscard]] PortId underlay_port() const noexcept { return underlay_port_; }
    [[nodiscard]] bool is_nat_gateway() const noexcept { return nat_gateway_; }

private:
    static constexpr PortId kDirectPortIds = 4096;

    // route() for an address outside the VPC's first prefix.
    [[nodiscard]] const EndpointRoute* route_elsewhere(const VpcState& vpc, wire::Ipv4Address ip) const noexcept;

    void bind_ports(const fabric::FabricSnapshot& snapshot, const PipelineConfig& config);
    void prepare_express_lanes(const PipelineConfig& config);
    void build_templates(const fabric::FabricSnapshot& snapshot, const PipelineConfig& config);
    void build_vpcs(const fabric::FabricSnapshot& snapshot);
    void build_routes(const fabric::FabricSnapshot& snapshot);

    const fabric::FabricSnapshot* snapshot_ = nullptr;
    std::uint64_t generation_ = 0;
    bool stale_ = true;

    std::vector<PortState> ports_;
    // By port id for ids below kDirectPortIds (null: no such port), filled once ports_ is complete.
    std::vector<const PortState*> port_by_id_;
    std::uint32_t port_by_id_count_ = 0;  // port_by_id_.size(), kept so a lookup is one compare
    fabric::FlatIndex port_index_;
    PortId underlay_port_ = kNoPort;
    std::vector<EndpointRoute> routes_;
    std::vector<std::optional<overlay::OuterTemplate>> templates_;
    std::vector<VpcState> vpcs_;
    util::FlatTable<std::uint32_t, const VpcState*, util::Fibonacci32> vpc_by_vni_key_;  // keyed by OuterTemplate::vni_word(), into vpcs_
    std::optional<wire::IpAddress> local_address_;
    std::uint32_t local_address_word_ = 0;
    std::uint64_t overlay_udp_word_ = 0;
    std::uint32_t underlay_mtu_ = 0;
    std::uint16_t underlay_vlan_ = 0;
    overlay::DecapConfig decap_;
    bool nat_gateway_ = false;
};

}  // namespace andromeda::dataplane::detail
