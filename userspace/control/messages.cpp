#include "control/messages.hpp"

#include <stdexcept>
#include <type_traits>

namespace andromeda::control {
namespace {

// A value of the wrong type, with the path of keys down to it ("ports[1].xdp_mode").
struct Mismatch : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// std::vector and the like, not std::string.
template <class T>
concept List = requires(T& t, const typename T::value_type& v) { t.push_back(v); } && !std::is_same_v<T, std::string>;

// Reads `key` into `out` when present (a missing key leaves the default); a wrong type throws a
// Mismatch that names the key.
template <class T>
void read_field(const nlohmann::json& j, const char* key, T& out) {
    if (!j.is_object()) throw Mismatch(std::string("an object, found ") + j.type_name());
    const auto it = j.find(key);
    if (it == j.end()) return;
    try {
        if constexpr (List<T>) {
            if (it->is_array() && !it->empty() && it->front().is_object()) {  // a list of objects: name the index
                T list;
                for (std::size_t i = 0; i < it->size(); ++i) {
                    try {
                        list.push_back((*it)[i].template get<typename T::value_type>());
                    } catch (const Mismatch& e) {
                        throw Mismatch("[" + std::to_string(i) + "]." + e.what());
                    }
                }
                out = std::move(list);
                return;
            }
        }
        it->get_to(out);
    } catch (const Mismatch& e) {
        throw Mismatch(std::string(key) + (e.what()[0] == '[' ? "" : ".") + e.what());
    } catch (const nlohmann::json::exception&) {
        throw Mismatch(std::string(key) + ": wrong type (" + it->type_name() + ")");
    }
}

}  // namespace

// Each struct's JSON: every field under its own name.
#define ANDROMEDA_CONTROL_READ(field) read_field(nlohmann_json_j, #field, nlohmann_json_t.field);
#define ANDROMEDA_CONTROL_FIELDS(Type, ...)                                                        \
    void to_json(nlohmann::json& nlohmann_json_j, const Type& nlohmann_json_t) {                  \
        nlohmann_json_j = nlohmann::json::object();                                                \
        NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(NLOHMANN_JSON_TO, __VA_ARGS__))                   \
    }                                                                                              \
    void from_json(const nlohmann::json& nlohmann_json_j, Type& nlohmann_json_t) {                \
        NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(ANDROMEDA_CONTROL_READ, __VA_ARGS__))             \
    }

ANDROMEDA_CONTROL_FIELDS(WorkerCpu, cpu, pinned)
ANDROMEDA_CONTROL_FIELDS(PortStatus, name, ifindex, role, xdp_mode, xdp, tc, socket_device, paths, bind, queue_ids,
                         endpoint, workers)
ANDROMEDA_CONTROL_FIELDS(PeerStatus, node, address, mac, source, problem)
ANDROMEDA_CONTROL_FIELDS(RejectedKeyStatus, key, reason)
ANDROMEDA_CONTROL_FIELDS(EtcdStatusReply, endpoints, prefix, connected, revision, keys, rejected, lease_alive, last_error)
ANDROMEDA_CONTROL_FIELDS(HealthProblem, check, detail)
ANDROMEDA_CONTROL_FIELDS(HealthReply, healthy, problems)
ANDROMEDA_CONTROL_FIELDS(StatusReply, node, pid, uptime_s, fabric_generation, workers, worker_rx_frames, worker_cpus,
                         config, pin_dir, control_socket, underlay, underlay_address, underlay_vlan, encap, nat_gateway,
                         ports, peers, worker_failures, etcd, health, version)
ANDROMEDA_CONTROL_FIELDS(FabricNode, name, address, mac, local, path_mtu, path_mtu_expires_in_s)
ANDROMEDA_CONTROL_FIELDS(NatForward, protocol, nat_port, to)
ANDROMEDA_CONTROL_FIELDS(VpcNat, gateway_node, address, port_range, forwards)
ANDROMEDA_CONTROL_FIELDS(FabricEndpoint, ip, mac, node, port, ipv6)
ANDROMEDA_CONTROL_FIELDS(FabricVpc, name, vni, cidr, gateway, gateway_mac, mtu, nat, endpoints, ipv6_prefix,
                         ipv6_router, ipv6_gateway)
ANDROMEDA_CONTROL_FIELDS(FabricReply, generation, source, local_node, nodes, vpcs)
ANDROMEDA_CONTROL_FIELDS(FlowTuple, source, source_port, destination, destination_port)
ANDROMEDA_CONTROL_FIELDS(ConntrackFlow, vni, protocol, origin, state, port_forward, original, translated, age_seconds,
                         expires_in_seconds, kernel, kernel_packets, kernel_bytes)
ANDROMEDA_CONTROL_FIELDS(FirewallFlow, vni, endpoint, direction, protocol, tuple, packets, idle_seconds, closing, rule)
ANDROMEDA_CONTROL_FIELDS(ConntrackReply, nat_gateway, count, flows, total, in_table, offset, limit, firewall_flows,
                         firewall_in_table)
ANDROMEDA_CONTROL_FIELDS(ReloadReply, generation, summary)
ANDROMEDA_CONTROL_FIELDS(LogLevelReply, level, previous)
ANDROMEDA_CONTROL_FIELDS(PolicyRule, vpc, group, index, direction, action, priority, rule, hits)
ANDROMEDA_CONTROL_FIELDS(PolicyReply, generation, enforced_vpcs, rules, flows, opened, denied, revoked, expired,
                         fragments_unknown, table_full, unopened)
ANDROMEDA_CONTROL_FIELDS(DhcpLeaseEntry, vni, mac, address, state, expires_in_seconds, last_seen_seconds_ago,
                         last_message, naks)
ANDROMEDA_CONTROL_FIELDS(LeasesReply, leases, discovers, requests, offers, acks, naks, releases, declines, informs,
                         unknown_client, rate_limited, malformed)
#undef ANDROMEDA_CONTROL_FIELDS
#undef ANDROMEDA_CONTROL_READ

// Stats: the groups are the top-level keys; a value that is not an unsigned integer is refused.
void to_json(nlohmann::json& j, const StatsReply& v) { j = v.groups; }
void from_json(const nlohmann::json& j, StatsReply& v) {
    if (!j.is_object()) throw Mismatch(std::string("an object, found ") + j.type_name());
    for (const auto& [group, counters] : j.items()) {
        if (!counters.is_object()) continue;  // not a counter group: not ours to show
        auto& g = v.groups[group];
        for (const auto& [name, value] : counters.items()) {
            if (!value.is_number_unsigned() && !(value.is_number_integer() && value.get<std::int64_t>() >= 0))
                throw Mismatch(group + "." + name + ": not a counter (" + value.type_name() + ")");
            g[name] = value.get<std::uint64_t>();
        }
    }
}

std::string decode_error(const std::exception& e) {
    return std::string("the daemon's reply does not match this andromedactl: ") + e.what();
}

std::uint64_t StatsReply::value(const std::string& group, const std::string& counter) const {
    const auto g = groups.find(group);
    if (g == groups.end()) return 0;
    const auto c = g->second.find(counter);
    return c == g->second.end() ? 0 : c->second;
}

}  // namespace andromeda::control
