// The results of the control commands, typed: andromedad fills these structs, andromedactl
// renders them, and their JSON (what `andromedactl <command> --json` prints, and what scripts read)
// is defined once, here, by the to_json/from_json below. A key missing from a reply decodes to the
// field's default, so an andromedactl talks to an older or newer daemon; a key of the wrong type is
// a ProtocolError that names it.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "control/protocol.hpp"

// std::optional as JSON null or the value (nlohmann 3.11.2 has no serializer of its own for it).
namespace nlohmann {
template <class T>
struct adl_serializer<std::optional<T>> {
    static void to_json(json& j, const std::optional<T>& v) {
        if (v) j = *v;
        else j = nullptr;
    }
    static void from_json(const json& j, std::optional<T>& v) {
        if (j.is_null()) v.reset();
        else v = j.get<T>();
    }
};
}  // namespace nlohmann

namespace andromeda::control {

// --- status -------------------------------------------------------------------------------

struct WorkerCpu {
    int cpu = 0;
    bool pinned = false;
};

struct PortStatus {
    std::string name;
    std::uint32_t ifindex = 0;
    std::string role;                      // underlay | uplink | tenant
    std::optional<std::string> xdp_mode;   // native | generic, on the port's socket device
    std::optional<std::string> xdp;        // the attachment, in words
    std::optional<std::string> tc;         // the tc fast-path program on the port, and tcx | clsact
    std::string socket_device;             // where its AF_XDP sockets are (a tenant's punt pair)
    std::string paths;                     // "fast path (tc) + pipeline via anx3", or why not
    std::optional<std::string> bind;       // copy | zero-copy; null: no socket bound
    std::vector<std::uint32_t> queue_ids;
    std::optional<std::string> endpoint;   // "10.0.0.10 vni 100", an address, or null
    std::vector<std::uint32_t> workers;    // the packet workers that have its sockets
};

struct PeerStatus {
    std::string node;
    std::string address;
    std::optional<std::string> mac;
    std::string source;   // how the MAC was learnt
    std::string problem;  // the last resolution failure, empty when fine
};

struct RejectedKeyStatus {
    std::string key;
    std::string reason;
};

// [etcd]: where the fabric comes from and how that goes.
struct EtcdStatusReply {
    std::vector<std::string> endpoints;
    std::string prefix;
    bool connected = false;
    std::int64_t revision = 0;
    std::uint64_t keys = 0;
    std::vector<RejectedKeyStatus> rejected;  // keys left out, and why
    bool lease_alive = false;                 // this node's own entry is in etcd
    std::string last_error;
};

// --- health -------------------------------------------------------------------------------

// One reason the daemon is degraded: which check ("etcd", "port", "reload", "worker") and what,
// in words an operator acts on.
struct HealthProblem {
    std::string check;
    std::string detail;
};

struct HealthReply {
    bool healthy = true;
    std::vector<HealthProblem> problems;  // empty when healthy
};

// --- status -------------------------------------------------------------------------------

struct StatusReply {
    std::string node;
    std::int64_t pid = 0;
    std::uint64_t uptime_s = 0;
    std::uint64_t fabric_generation = 0;
    std::uint64_t workers = 0;
    std::vector<std::uint64_t> worker_rx_frames;
    std::vector<std::optional<WorkerCpu>> worker_cpus;  // null: not pinned by [node] worker_cpus
    std::string config;
    std::string pin_dir;
    std::string control_socket;
    std::string underlay;
    std::string underlay_address;
    std::uint16_t underlay_vlan = 0;  // 0: untagged
    std::string encap;
    bool nat_gateway = false;
    std::vector<PortStatus> ports;
    std::vector<PeerStatus> peers;
    std::vector<std::string> worker_failures;
    std::optional<EtcdStatusReply> etcd;  // null: the fabric comes from node.toml
    std::optional<HealthReply> health;    // null: a daemon that does not report it
    std::string version;                  // "0.1.0 (git 1a2b3c4)"
};

// --- stats --------------------------------------------------------------------------------

// Named counters by group ("xdp", "fastpath", "dataplane", "nat", "io", "daemon"); the JSON is
// {"group": {"counter": value, ...}, ...}.
struct StatsReply {
    std::map<std::string, std::map<std::string, std::uint64_t>> groups;
    [[nodiscard]] std::uint64_t value(const std::string& group, const std::string& counter) const;
};

// --- fabric -------------------------------------------------------------------------------

struct FabricNode {
    std::string name;
    std::optional<std::string> address;
    std::optional<std::string> mac;
    bool local = false;
    // A peer whose underlay path was found narrower than underlay_mtu (ICMP fragmentation needed):
    // the MTU both paths size tenant packets by, and the seconds it still lasts.
    std::optional<std::uint32_t> path_mtu;
    std::optional<std::uint64_t> path_mtu_expires_in_s;
};

struct NatForward {
    std::string protocol;
    std::uint16_t nat_port = 0;
    std::string to;  // "10.0.0.20:80"
};

struct VpcNat {
    std::string gateway_node;
    std::string address;
    std::array<std::uint16_t, 2> port_range{};
    std::vector<NatForward> forwards;
};

struct FabricEndpoint {
    std::string ip;
    std::string mac;
    std::string node;
    std::optional<std::string> port;  // local endpoints only
    std::optional<std::string> ipv6;  // dual-stack VPCs: its IPv6 address, if it has one
};

struct FabricVpc {
    std::string name;
    std::uint32_t vni = 0;
    std::string cidr;  // comma-separated
    std::string gateway;
    std::string gateway_mac;
    std::uint32_t mtu = 0;
    std::optional<VpcNat> nat;
    std::vector<FabricEndpoint> endpoints;
    std::optional<std::string> ipv6_prefix;   // dual stack
    std::optional<std::string> ipv6_router;   // ... the gateway's link-local address, the tenants' router
    std::optional<std::string> ipv6_gateway;  // ... its global address (ipv6_gateway), if it has one
};

struct FabricReply {
    std::uint64_t generation = 0;
    std::string source;
    std::string local_node;
    std::vector<FabricNode> nodes;
    std::vector<FabricVpc> vpcs;
};

// --- conntrack ----------------------------------------------------------------------------

struct FlowTuple {
    std::string source;
    std::uint16_t source_port = 0;
    std::string destination;
    std::uint16_t destination_port = 0;
};

struct ConntrackFlow {
    std::uint32_t vni = 0;
    std::string protocol;  // tcp | udp | icmp
    std::string origin;    // outbound | inbound
    std::string state;
    bool port_forward = false;
    FlowTuple original;
    FlowTuple translated;
    double age_seconds = 0;
    double expires_in_seconds = 0;
    // Whether the kernel fast path translates it (docs/nat.md, "Offload to the kernel"), and what
    // it counted in each direction (as of its last sync, at most a second ago).
    bool kernel = false;
    std::uint64_t kernel_packets = 0;
    std::uint64_t kernel_bytes = 0;
};

// A flow the firewall tracks, at one endpoint (`endpoint`) in the direction it was opened.
struct FirewallFlow {
    std::uint32_t vni = 0;
    std::string endpoint;
    std::string direction;
    std::string protocol;
    FlowTuple tuple;
    std::uint64_t packets = 0;
    double idle_seconds = 0;
    bool closing = false;
    std::string rule;  // the rule that opened it (andromedactl policy), when it is still the current policy's
};

struct ConntrackReply {
    bool nat_gateway = false;
    std::uint64_t count = 0;     // flows in this reply
    std::vector<ConntrackFlow> flows;
    std::uint64_t total = 0;     // flows that match the query's filters (count of them from offset on)
    std::uint64_t in_table = 0;  // every flow in the table
    std::uint64_t offset = 0;    // as asked
    std::uint64_t limit = 0;     // as applied
    // The security groups' connection tracking, beside NAT's: the first `limit` of its flows.
    std::vector<FirewallFlow> firewall_flows;
    std::uint64_t firewall_in_table = 0;
};

// --- policy -------------------------------------------------------------------------------

// One rule of a security group (or a VPC's default, group ""), as the firewall counts it.
struct PolicyRule {
    std::string vpc;
    std::string group;   // "" for the VPC's default
    std::int32_t index = -1;  // its place in the group; -1: the default
    std::string direction;
    std::string action;
    std::uint32_t priority = 0;
    std::string rule;    // as people read it
    std::uint64_t hits = 0;  // flows it decided, and packets it denied
};

struct PolicyReply {
    std::uint64_t generation = 0;
    std::vector<std::string> enforced_vpcs;
    std::vector<PolicyRule> rules;
    std::uint64_t flows = 0;  // tracked now
    std::uint64_t opened = 0, denied = 0, revoked = 0, expired = 0, fragments_unknown = 0, table_full = 0;
    std::uint64_t unopened = 0;  // TCP segments of no tracked connection, passed by the rules alone
};

// --- leases -------------------------------------------------------------------------------

// One client the gateway's DHCP server has heard (docs/vm-tenants.md): a record, never the
// source of an answer (leases are static: the fabric maps the endpoint's MAC to its address).
struct DhcpLeaseEntry {
    std::uint32_t vni = 0;
    std::string mac;
    std::string address;
    std::string state;  // offered, bound, released, declined, informed, other_server, expired
    double expires_in_seconds = -1;  // -1: no expiry (or expired)
    double last_seen_seconds_ago = 0;
    std::string last_message;  // DISCOVER, REQUEST, ...
    std::uint32_t naks = 0;
};

struct LeasesReply {
    std::vector<DhcpLeaseEntry> leases;
    std::uint64_t discovers = 0, requests = 0, offers = 0, acks = 0, naks = 0, releases = 0, declines = 0,
                  informs = 0, unknown_client = 0, rate_limited = 0, malformed = 0;
};

// --- log-level ----------------------------------------------------------------------------

struct LogLevelReply {
    std::string level;     // now
    std::string previous;  // before the request (equal when it only asked)
};

// --- reload -------------------------------------------------------------------------------

struct ReloadReply {
    std::uint64_t generation = 0;
    std::string summary;  // what changed, one line per kind of change
};

#define ANDROMEDA_CONTROL_JSON(Type)                   \
    void to_json(nlohmann::json& j, const Type& v);   \
    void from_json(const nlohmann::json& j, Type& v);
ANDROMEDA_CONTROL_JSON(WorkerCpu)
ANDROMEDA_CONTROL_JSON(PortStatus)
ANDROMEDA_CONTROL_JSON(PeerStatus)
ANDROMEDA_CONTROL_JSON(RejectedKeyStatus)
ANDROMEDA_CONTROL_JSON(EtcdStatusReply)
ANDROMEDA_CONTROL_JSON(HealthProblem)
ANDROMEDA_CONTROL_JSON(HealthReply)
ANDROMEDA_CONTROL_JSON(StatusReply)
ANDROMEDA_CONTROL_JSON(StatsReply)
ANDROMEDA_CONTROL_JSON(FabricNode)
ANDROMEDA_CONTROL_JSON(NatForward)
ANDROMEDA_CONTROL_JSON(VpcNat)
ANDROMEDA_CONTROL_JSON(FabricEndpoint)
ANDROMEDA_CONTROL_JSON(FabricVpc)
ANDROMEDA_CONTROL_JSON(FabricReply)
ANDROMEDA_CONTROL_JSON(FlowTuple)
ANDROMEDA_CONTROL_JSON(ConntrackFlow)
ANDROMEDA_CONTROL_JSON(ConntrackReply)
ANDROMEDA_CONTROL_JSON(ReloadReply)
ANDROMEDA_CONTROL_JSON(LogLevelReply)
ANDROMEDA_CONTROL_JSON(PolicyRule)
ANDROMEDA_CONTROL_JSON(FirewallFlow)
ANDROMEDA_CONTROL_JSON(PolicyReply)
ANDROMEDA_CONTROL_JSON(DhcpLeaseEntry)
ANDROMEDA_CONTROL_JSON(LeasesReply)
#undef ANDROMEDA_CONTROL_JSON

[[nodiscard]] std::string decode_error(const std::exception& e);

// A response's result as `Reply`, or what in it does not fit: "...: ports[1].xdp_mode: wrong type
// (number)".
template <class Reply>
[[nodiscard]] std::variant<Reply, ProtocolError> decode(const nlohmann::json& result) {
    try {
        return result.get<Reply>();
    } catch (const std::exception& e) {
        return ProtocolError{decode_error(e)};
    }
}

}  // namespace andromeda::control
