// What a Pipeline needs beyond the fabric snapshot: facts about this host the daemon finds out
// (underlay MAC, next-hop MACs via netlink, which interface is which port) plus knobs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/gateway_services.hpp"
#include "dataplane/packet_buffer.hpp"
#include "dataplane/underlay_pmtu.hpp"
#include "policy/firewall.hpp"
#include "gateway/rate_limiter.hpp"
#include "wire/addresses.hpp"

namespace andromeda::dataplane {

enum class PortRole : std::uint8_t {
    tenant,    // a local endpoint's veth/tap: anti-spoofing, gateway, encap
    underlay,  // the NIC towards the other nodes: decap
    uplink,    // a NAT gateway's outside interface: everything goes to NAT
};

[[nodiscard]] constexpr std::string_view to_string(PortRole role) noexcept {
    switch (role) {
        case PortRole::tenant: return "tenant";
        case PortRole::underlay: return "underlay";
        case PortRole::uplink: return "uplink";
    }
    return "unknown";
}

struct PortBinding {
    PortId id = kNoPort;
    PortRole role = PortRole::tenant;
    // Tenant ports: the endpoint's `port` name in node.toml. Empty: the endpoint whose resolved
    // ifindex (FabricSnapshot::find_local_endpoint_by_ifindex) equals `id`.
    std::string tenant_port;
};

// The underlay MAC of a peer node's next hop (its own NIC on a flat underlay).
struct NextHop {
    wire::IpAddress node_address;
    wire::MacAddress mac;
};

struct PipelineConfig {
    wire::MacAddress underlay_mac;                       // this host's underlay NIC
    std::optional<wire::IpAddress> underlay_address;  // default: the fabric's local node address
    std::optional<std::uint32_t> underlay_mtu;          // default: node.toml's underlay_mtu
    std::optional<std::uint16_t> underlay_vlan;         // default: node.toml's underlay_vlan (0: untagged)
    std::vector<NextHop> next_hops;                     // default per peer: its pinned `mac`, if any
    std::vector<PortBinding> ports;
    bool outer_udp_checksum = false;  // 0 is legal for IPv4 tunnels and saves summing every frame
    gateway::RateLimiterConfig icmp_error_rate;
    // What the gateway answers each tenant (VNI, address) at most: ARP replies, echo replies and
    // DNS queries together ([node] gateway_rate and gateway_burst). Far above `ping -i 0.01`
    // (100/s) and any ARP cache's needs; a tenant flooding the gateway gets this many answers and
    // its requests beyond them dropped (gateway_reply_rate_limited), so its flood costs the worker
    // no reply frames.
    gateway::RateLimiterConfig gateway_reply_rate{1000, 1000, 1024};
    // Broadcast and multicast frames one sender (by MAC) may flood in a VXLAN fabric ([node]
    // flood_rate and flood_burst): each is copied to every other member of its VPC, so a storm
    // beyond this is dropped (flood_rate_limited) before it is multiplied.
    gateway::RateLimiterConfig flood_rate{100, 100, 1024};
    gateway::IcmpErrorRateLimiter::Clock clock;  // monotonic ns for the rate limiters and path MTUs; tests inject one
    // The path MTUs learned towards peer nodes, shared by every worker's pipeline (and read by the
    // daemon for the fast path's map). Null: the pipeline keeps its own.
    std::shared_ptr<PeerPathMtu> peer_path_mtu;
    // The node's stateful firewall (security groups and their connection tracking), shared by
    // every worker's pipeline: the two directions of a flow may meet different workers. Null: the
    // pipeline keeps its own.
    std::shared_ptr<policy::Firewall> firewall;
    // The common cases (tenant -> remote endpoint, overlay -> local endpoint) take an express lane
    // with the same outcome as the general one; tests turn it off to compare the two.
    bool express_lanes = true;
    // Tenants' DNS queries to their gateway; null: dropped (dns_not_served).
    std::shared_ptr<DnsQuerySink> dns;
    // The gateway's DHCP server, shared by every worker's pipeline. Null: the pipeline keeps its own.
    std::shared_ptr<GatewayDhcp> dhcp;
    // The tenant ports' Router Advertisement schedules, shared with the daemon's unsolicited
    // advertisements. Null: the pipeline keeps its own (and only answers solicitations).
    std::shared_ptr<GatewayRouterAdvertisements> router_advertisements;
};

}  // namespace andromeda::dataplane
