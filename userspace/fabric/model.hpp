// The fabric model: plain values describing this node, its peers, the VPCs and their endpoints.
// Built once per load by the loader and then only read; the snapshot indexes these vectors.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "gateway/ipv6_gateway.hpp"
#include "overlay/encap_kind.hpp"
#include "wire/addresses.hpp"
#include "wire/ipv6_addressing.hpp"

namespace andromeda::fabric {

using wire::Ipv4Address;
using wire::Ipv4Prefix;
using wire::MacAddress;

// The encapsulation is the codecs' enum (whose values are the BPF side's), and its constants are
// theirs: defined once, in shared/andromeda_kern_user.h.
using Encap = overlay::EncapKind;
using overlay::to_string;
enum class NatProtocol : std::uint8_t { tcp, udp };

inline constexpr std::uint16_t kAndromedaUdpPort = overlay::kAndromedaUdpPort;
inline constexpr std::uint16_t kDefaultVxlanPort = overlay::kVxlanUdpPort;
// Outer Ethernet + IPv4 + UDP + 8-byte overlay header; the same for both encapsulations.
inline constexpr std::uint32_t kOverlayOverhead = overlay::kOuterHeadersSize;
// Over an IPv6 underlay: IPv6's 40-byte header instead of IPv4's 20.
inline constexpr std::uint32_t kOverlayOverhead6 = kOverlayOverhead + 20;
[[nodiscard]] constexpr std::uint32_t overlay_overhead(bool ipv6_underlay) noexcept {
    return ipv6_underlay ? kOverlayOverhead6 : kOverlayOverhead;
}
inline constexpr std::uint32_t kDefaultUnderlayMtu = 1500;
inline constexpr std::uint32_t kMinUnderlayMtu = 626;
inline constexpr std::uint32_t kMinIpv6UnderlayMtu = 1280;  // RFC 8200 section 5
inline constexpr std::uint32_t kMaxUnderlayMtu = 9216;
inline constexpr std::uint16_t kMinUnderlayVlan = 1;     // 802.1Q: VID 0 means "priority tag only"
inline constexpr std::uint16_t kMaxUnderlayVlan = 4094;  // and 4095 is reserved
inline constexpr std::int64_t kMaxWorkerCpu = 1024;  // CPU_SETSIZE
// [node] workers: each worker is a thread and 32 MB of UMEM; the host check also caps it at the CPUs.
inline constexpr std::int64_t kMaxWorkers = 256;
// [node] punt_rate / punt_burst: what each tenant port may hand the pipeline (frames per second,
// and at once from an idle port). Far above what a tenant's ARP, new connections and NAT first
// packets need (a few hundred a second even for a busy host), far below the ~100k/s that fill a
// packet worker (docs/configuration.md). punt_rate = 0: no limit.
inline constexpr std::uint32_t kDefaultPuntRate = 20000;
inline constexpr std::uint32_t kDefaultPuntBurst = 2000;
inline constexpr std::uint32_t kMaxPuntRate = 100'000'000;
inline constexpr std::uint32_t kMaxPuntBurst = 1'000'000;
// [node] gateway_rate / gateway_burst: the answers the gateway gives one tenant (ARP and echo
// replies, DNS queries taken) per second, and at once from a quiet tenant. Far above `ping -i
// 0.01` and a busy resolver client; a flood beyond it costs the worker no reply frames.
inline constexpr std::uint32_t kDefaultGatewayRate = 1000;
inline constexpr std::uint32_t kDefaultGatewayBurst = 1000;
inline constexpr std::uint32_t kMaxGatewayRate = 10'000'000;
// [node] flood_rate / flood_burst: broadcast and multicast frames one sender may flood in a VXLAN
// fabric (each becomes a copy per member of its VPC), per second and at once. Far above what
// mDNS, DHCP and service discovery send; a storm beyond it is dropped before it is multiplied.
inline constexpr std::uint32_t kDefaultFloodRate = 100;
inline constexpr std::uint32_t kDefaultFloodBurst = 100;
inline constexpr std::uint32_t kMinVpcMtu = 576;
inline constexpr std::uint32_t kMaxVni = 0xFFFFFF;
inline constexpr std::uint16_t kDefaultNatPortMin = 1024;
inline constexpr std::uint16_t kDefaultNatPortMax = 65535;
// The reference implementation's virtual gateway MAC; every VPC uses it unless told otherwise.
inline constexpr MacAddress kDefaultGatewayMac{{0x02, 0x00, 0x00, 0x00, 0x00, 0xff}};
inline constexpr std::uint32_t kNoIndex = 0xFFFFFFFF;
// This node's index in the node list: the loader ([node] is decoded first) puts it first.
// Elsewhere ask FabricSnapshot (local_node(), translates_here(), serves_nat()).
inline constexpr std::uint32_t kLocalNodeIndex = 0;

// The NAT gateway's outside port: where translated traffic leaves for the Internet.
// How many NAT flows the kernel fast path translates at most (two map entries each); the rest
// stay with the pipeline. A start-time setting: the map is sized when the object is loaded.
inline constexpr std::uint32_t kDefaultKernelNatFlows = 131072;
inline constexpr std::uint32_t kMaxKernelNatFlows = 1u << 20;
// New NAT flows each tenant (VNI, inside address) may open per second, and at once: one tenant
// scanning the outside must not take the ports, the table and the slow path from the others.
// 0: no limit. Changeable by a reload.
inline constexpr std::uint32_t kDefaultNewFlowsPerTenant = 1000;
inline constexpr std::uint32_t kDefaultNewFlowsBurst = 2000;
inline constexpr std::uint32_t kMaxNewFlowsPerTenant = 10'000'000;

struct Uplink {
    std::string interface;
    std::optional<Ipv4Address> address;   // unset: the interface's own address
    std::optional<Ipv4Address> next_hop;  // unset: the kernel's route
    std::uint32_t kernel_flows = kDefaultKernelNatFlows;
    std::uint32_t new_flows_per_tenant = kDefaultNewFlowsPerTenant;
    std::uint32_t new_flows_burst = kDefaultNewFlowsBurst;

    friend bool operator==(const Uplink&, const Uplink&) = default;
};

// [etcd]: the fabric (nodes, VPCs, endpoints) comes from etcd instead of node.toml, which then
// holds only this node's own settings (docs/etcd.md).
inline constexpr std::uint32_t kDefaultEtcdLeaseTtl = 10;
struct EtcdSettings {
    std::vector<std::string> endpoints;  // "http://127.0.0.1:2379", "https://etcd1:2379"
    std::string prefix = "/andromeda";   // the keys live under <prefix>/v1/
    std::string ca_file;                 // TLS: the servers' CA; a client certificate and key
    std::string cert_file;
    std::string key_file;
    std::string username;                // etcd authentication: the user, and a file holding
    std::string password_file;           // its password (kept out of node.toml)
    std::uint32_t lease_ttl = kDefaultEtcdLeaseTtl;  // this node's entry lives this long without us

    friend bool operator==(const EtcdSettings&, const EtcdSettings&) = default;
};

// [node]: settings of the host this file configures.
// A resolver the gateway's DNS forwards tenants' queries to ([node] dns_upstreams).
struct DnsUpstreamAddress {
    std::variant<Ipv4Address, wire::Ipv6Address> address;
    std::uint16_t port = 53;

    friend bool operator==(const DnsUpstreamAddress&, const DnsUpstreamAddress&) = default;
};

struct LocalNodeSettings {
    std::string name;
    std::string underlay;                // underlay interface name
    std::optional<wire::IpAddress> address;  // IPv4 or IPv6; unset: the daemon uses the underlay interface's
    Encap encap = Encap::andromeda;
    std::uint16_t vxlan_port = kDefaultVxlanPort;
    std::uint32_t underlay_mtu = kDefaultUnderlayMtu;
    // 802.1Q VID (1-4094) andromedad tags its own underlay frames with, attached to the parent
    // (trunk) interface; 0: untagged (or a kernel VLAN device as `underlay`). Needs `address` and
    // every peer's pinned `mac`: the kernel cannot resolve next hops on a VLAN it has no device for.
    std::uint16_t underlay_vlan = 0;
    std::string pin_dir;  // default /sys/fs/bpf/andromeda/<name>
    std::optional<Uplink> uplink;
    // CPUs the packet workers are pinned to: worker i runs on worker_cpus[i % size]. Empty: not
    // pinned (the scheduler places them).
    std::vector<std::uint32_t> worker_cpus;
    // Packet workers: 0, one per underlay RX queue; more than the underlay's queues adds
    // tenant-only workers that tenant ports are spread over (fewer is the same as 0).
    std::uint32_t workers = 0;
    // Whether this node runs the kernel fast path (east-west traffic encapsulated and
    // decapsulated by tc programs); false: every tenant frame goes through the AF_XDP pipeline.
    bool fastpath = true;
    // Whether tenant ports get Receive Packet Steering over every online CPU on RX queues without a
    // mask (io/netlink/rps.hpp), so that a tenant's flow stays in the order it was sent. Off by
    // default: measured, it costs throughput (docs/fastpath.md, "A tenant's flow in order").
    bool tenant_rps = false;
    // The token bucket of every tenant port's punts (andromeda_punt_limits): frames per second
    // (0: unlimited) and the burst an idle port may send at once. Applied again on every reload.
    std::uint32_t punt_rate = kDefaultPuntRate;
    std::uint32_t punt_burst = kDefaultPuntBurst;
    // What the gateway answers each tenant at most (replies per second, and at once): ARP, echo
    // and DNS together. Applied when the daemon starts.
    std::uint32_t gateway_rate = kDefaultGatewayRate;
    std::uint32_t gateway_burst = kDefaultGatewayBurst;
    // Broadcast and multicast one sender may flood (VXLAN only), per second and at once. Applied
    // when the daemon starts.
    std::uint32_t flood_rate = kDefaultFloodRate;
    std::uint32_t flood_burst = kDefaultFloodBurst;
    std::optional<EtcdSettings> etcd;  // [etcd]
    // Where the gateway's DNS forwards what it does not answer from the VPC's names; unset: the
    // nameservers of the host's /etc/resolv.conf when the daemon starts.
    std::optional<std::vector<DnsUpstreamAddress>> dns_upstreams;

    friend bool operator==(const LocalNodeSettings&, const LocalNodeSettings&) = default;
};

// One host of the underlay, this node included (is_local).
struct Node {
    std::string name;
    std::optional<wire::IpAddress> address;  // IPv4 or IPv6 (one family per fabric); unset only for the local node without an address
    std::optional<MacAddress> mac;       // pinned next-hop MAC, for underlays without ARP
    bool is_local = false;

    friend bool operator==(const Node&, const Node&) = default;
};

// A fabric's underlay is of one family (validation refuses a mix): IPv6 when any node's address is.
[[nodiscard]] inline bool ipv6_underlay(std::span<const Node> nodes) noexcept {
    return std::any_of(nodes.begin(), nodes.end(), [](const Node& n) { return n.address && n.address->is_ipv6(); });
}

struct NatForward {
    NatProtocol protocol = NatProtocol::tcp;
    std::uint16_t nat_port = 0;
    Ipv4Address endpoint_ip;
    std::uint16_t endpoint_port = 0;

    friend bool operator==(const NatForward&, const NatForward&) = default;
};

struct NatConfig {
    std::string gateway_node;
    std::uint32_t gateway_node_index = kNoIndex;
    Ipv4Address address;
    std::uint16_t port_min = kDefaultNatPortMin;
    std::uint16_t port_max = kDefaultNatPortMax;
    std::vector<NatForward> forwards;

    friend bool operator==(const NatConfig&, const NatConfig&) = default;
};

// Security groups (docs/security-groups.md). A rule matches a packet by protocol, destination
// port (or ICMP type and code) and the remote side (the source for ingress, the destination for
// egress): CIDRs, or the addresses of another group's members. Of the rules that match, the lowest
// priority number decides; at the same priority a deny wins. None: the VPC's default. Rules cover
// both families: tcp, udp and any match IPv4 and IPv6, icmp only IPv4 and icmpv6 only IPv6; an
// IPv4 CIDR matches only IPv4 packets, an IPv6 one only IPv6, a group both of its members' addresses.
enum class PolicyDirection : std::uint8_t { ingress, egress };
enum class PolicyAction : std::uint8_t { allow, deny };
enum class PolicyProtocol : std::uint8_t { any = 0, icmp = 1, tcp = 6, udp = 17, icmpv6 = 58 };
inline constexpr std::uint32_t kDefaultRulePriority = 1000;
inline constexpr std::uint32_t kMaxRulePriority = 65535;

struct PortRange {
    std::uint16_t first = 0;
    std::uint16_t last = 65535;

    [[nodiscard]] bool contains(std::uint16_t port) const noexcept { return port >= first && port <= last; }
    friend bool operator==(const PortRange&, const PortRange&) = default;
};

struct SecurityRule {
    PolicyDirection direction = PolicyDirection::ingress;
    PolicyAction action = PolicyAction::allow;
    std::uint32_t priority = kDefaultRulePriority;
    PolicyProtocol protocol = PolicyProtocol::any;
    std::vector<PortRange> ports;  // tcp and udp; empty: every port
    std::int16_t icmp_type = -1;   // icmp, icmpv6; -1: any
    std::int16_t icmp_code = -1;
    std::vector<Ipv4Prefix> remote_cidrs;          // all three empty: any remote address
    std::vector<wire::Ipv6Prefix> remote_cidrs6;  // written in remote_cidrs beside the IPv4 ones
    std::vector<std::string> remote_groups;        // groups of the same VPC, by name
    std::string description;

    [[nodiscard]] bool any_remote() const noexcept {
        return remote_cidrs.empty() && remote_cidrs6.empty() && remote_groups.empty();
    }
    [[nodiscard]] bool is_icmp() const noexcept {
        return protocol == PolicyProtocol::icmp || protocol == PolicyProtocol::icmpv6;
    }

    friend bool operator==(const SecurityRule&, const SecurityRule&) = default;
};

struct SecurityGroup {
    std::string name;
    std::vector<SecurityRule> rules;

    friend bool operator==(const SecurityGroup&, const SecurityGroup&) = default;
};

struct Vpc {
    std::string name;
    std::uint32_t vni = 0;
    std::vector<Ipv4Prefix> cidrs;  // at least one; never overlapping each other
    // Dual stack: the VPC's IPv6 /64 (a ULA or a global prefix), whose addresses its endpoints
    // may have; none: IPv4 only. Two VPCs may have the same one (the VNI keeps them apart).
    std::optional<wire::Ipv6Prefix> ipv6_prefix;
    // With it: the gateway's own global address in the prefix (answered like its link-local one),
    // the DNS servers its Router Advertisements name (RDNSS), and their settings.
    std::optional<wire::Ipv6Address> ipv6_gateway;
    std::vector<wire::Ipv6Address> dns6;
    gateway::RouterAdvertisementConfig router_advertisements;
    Ipv4Address gateway;
    MacAddress gateway_mac = kDefaultGatewayMac;
    std::uint32_t mtu = 0;  // inner MTU; default underlay_mtu - kOverlayOverhead
    bool fastpath = true;   // its east-west traffic may take the kernel fast path (where the node runs it)
    std::optional<NatConfig> nat;
    // The firewall: enforced when the VPC declares a security group or a default; otherwise the VPC
    // is open, as it was before security groups existed.
    std::vector<SecurityGroup> security_groups;
    std::optional<PolicyAction> default_ingress;  // unset: deny (when enforced)
    std::optional<PolicyAction> default_egress;   // unset: allow

    [[nodiscard]] bool firewall() const noexcept {
        return !security_groups.empty() || default_ingress.has_value() || default_egress.has_value();
    }
    [[nodiscard]] PolicyAction default_action(PolicyDirection d) const noexcept {
        return d == PolicyDirection::ingress ? default_ingress.value_or(PolicyAction::deny)
                                             : default_egress.value_or(PolicyAction::allow);
    }
    [[nodiscard]] const SecurityGroup* find_group(std::string_view group) const noexcept {
        for (const auto& g : security_groups)
            if (g.name == group) return &g;
        return nullptr;
    }

    [[nodiscard]] bool contains(Ipv4Address ip) const noexcept {
        for (const auto& cidr : cidrs)
            if (cidr.contains(ip)) return true;
        return false;
    }
    friend bool operator==(const Vpc&, const Vpc&) = default;
};

// What a tenant port is: a veth (a container or namespace holds the other end) or a tap (a VM's
// QEMU reads it; docs/vm-tenants.md). A `tap` port the daemon creates when it is missing; either
// way what the interface turns out to be is what Endpoint::port_is_tap says.
enum class PortType : std::uint8_t { veth, tap };
// A tap's queues (`queues`): the kernel attaches at most this many to one tap (MAX_TAP_QUEUES).
inline constexpr std::int64_t kMaxTapQueues = 256;

[[nodiscard]] inline const char* to_string(PortType t) noexcept { return t == PortType::tap ? "tap" : "veth"; }

struct Endpoint {
    std::uint32_t vni = 0;
    Ipv4Address ip;
    MacAddress mac;
    std::string node;
    std::string port;  // tenant port; indexed only when the endpoint is on this node
    std::vector<std::string> groups;  // security groups of its VPC it belongs to
    std::string name;  // its DNS name in the VPC, <name>.<vpc>.internal (and DHCP host name); empty: none
    PortType port_type = PortType::veth;
    // A tap's queues, as QEMU's `-netdev tap,queues=N` opens them: more than one and the daemon
    // creates the tap multi-queue (IFF_MULTI_QUEUE), which a guest with several queues needs.
    std::uint16_t queues = 1;
    // Its IPv6 address in the VPC's ipv6_prefix: given, or the EUI-64 one SLAAC derives from its
    // MAC (`ipv6 = "eui64"`); none: IPv4 only.
    std::optional<wire::Ipv6Address> ipv6;
    std::uint32_t vpc_index = kNoIndex;
    std::uint32_t node_index = kNoIndex;
    std::uint32_t port_ifindex = 0;  // 0 until the daemon binds port names to interfaces
    bool port_is_tap = false;        // bound with port_ifindex: the interface is a tap (kernel driver tun)
    std::uint32_t position = kNoIndex;  // its place in FabricSnapshot::endpoints(), set by the snapshot
    bool is_local = false;

    // What the configuration says, ignoring the indexes derived from it.
    [[nodiscard]] bool same_config(const Endpoint& o) const noexcept {
        return vni == o.vni && ip == o.ip && mac == o.mac && node == o.node && port == o.port && groups == o.groups &&
               name == o.name && port_type == o.port_type && queues == o.queues && ipv6 == o.ipv6;
    }
};

// A whole fabric as loaded from one file, before indexing.
struct FabricConfig {
    std::string source_name;
    LocalNodeSettings local;
    std::vector<Node> nodes;  // the local node first
    std::vector<Vpc> vpcs;
    std::vector<Endpoint> endpoints;
};

[[nodiscard]] inline const char* to_string(PolicyDirection d) noexcept {
    return d == PolicyDirection::ingress ? "ingress" : "egress";
}
[[nodiscard]] inline const char* to_string(PolicyAction a) noexcept { return a == PolicyAction::deny ? "deny" : "allow"; }
[[nodiscard]] inline const char* to_string(PolicyProtocol p) noexcept {
    switch (p) {
        case PolicyProtocol::icmp: return "icmp";
        case PolicyProtocol::icmpv6: return "icmpv6";
        case PolicyProtocol::tcp: return "tcp";
        case PolicyProtocol::udp: return "udp";
        default: return "any";
    }
}
[[nodiscard]] inline const char* to_string(NatProtocol p) noexcept { return p == NatProtocol::udp ? "udp" : "tcp"; }

}  // namespace andromeda::fabric
