// The fabric in etcd: its key layout, the fabric built from node.toml's local part plus every key
// under the layout, and the reverse (a node.toml's fabric as keys, for `andromedactl fabric
// import`), and the etcd client's configuration from [etcd] (etcd_client_config(), which reads
// the password file). Otherwise no I/O: the daemon and andromedactl talk to etcd (userspace/etcd/).
//
// Keys (schema version 1, under a prefix, "/andromeda" by default), values JSON objects with the
// same fields as node.toml's tables:
//   <prefix>/v1/nodes/<name>           {"name": "node2", "address": "192.168.1.2", "mac": "02:...", "encap": "andromeda"}
//   <prefix>/v1/vpcs/<name>            {"name": "blue", "vni": 100, "cidr": "10.0.0.0/24", "gateway": "10.0.0.1",
//                                       "nat": {"gateway_node": "node2", "address": "203.0.113.10", "forward": [...]}}
//   <prefix>/v1/endpoints/<vpc>/<ip>   {"ip": "10.0.0.10", "mac": "02:00:00:00:00:10", "node": "node1", "port": "tap1"}
// A value may leave out the field its key already names (a node's name, a VPC's name, an
// endpoint's ip); where it gives it, the two must agree.
//
// A bad key (malformed JSON, a wrong field, an endpoint outside its VPC's CIDR, a VPC whose VNI
// another one has) is left out with a reason naming the key, and everything else is built: one
// bad value never takes the rest of the fabric down. Leaving out a VPC leaves out its endpoints.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "etcd/client.hpp"
#include "fabric/diff.hpp"
#include "fabric/errors.hpp"
#include "fabric/loader.hpp"
#include "fabric/model.hpp"

namespace andromeda::fabric {

class EtcdLayout {
public:
    explicit EtcdLayout(std::string prefix = "/andromeda") : root_(std::move(prefix) + "/v1/") {}

    [[nodiscard]] const std::string& root() const noexcept { return root_; }
    [[nodiscard]] std::string node_key(std::string_view name) const { return root_ + "nodes/" + std::string(name); }
    [[nodiscard]] std::string vpc_key(std::string_view name) const { return root_ + "vpcs/" + std::string(name); }
    [[nodiscard]] std::string endpoint_key(std::string_view vpc, std::string_view ip) const {
        return root_ + "endpoints/" + std::string(vpc) + "/" + std::string(ip);
    }

    enum class Kind { node, vpc, endpoint, unknown };
    struct Key {
        Kind kind = Kind::unknown;
        std::string vpc;   // endpoint: its VPC
        std::string name;  // node or VPC name; endpoint: its address
    };
    // What a key under root() is; unknown for anything else (which the fabric ignores).
    [[nodiscard]] Key parse(std::string_view key) const;

private:
    std::string root_;
};

struct RejectedKey {
    std::string key;
    std::string reason;
    friend bool operator==(const RejectedKey&, const RejectedKey&) = default;
};

struct EtcdFabric {
    // The fabric of every accepted key. Errors here are node.toml's own (its [node] or [etcd]):
    // then nothing is built, and the caller keeps what runs.
    LoadResult loaded;
    std::vector<RejectedKey> rejected;  // keys left out, in key order
    std::size_t keys_used = 0;
};

// node.toml's text (its [node] and [etcd] tables; `display_name` for its errors) and every key
// under `layout.root()` with its value.
[[nodiscard]] EtcdFabric build_etcd_fabric(std::string_view local_toml, const std::string& display_name,
                                           const std::map<std::string, std::string>& kvs, const EtcdLayout& layout,
                                           const LoadOptions& options = {});

// Keys that changed, as a watch reports them: the new value, or nullopt for a deleted key.
using EtcdChanges = std::map<std::string, std::optional<std::string>>;

// Why EtcdFabricBuilder::plan_change() leaves a change to build(), one X(name, description) each.
#define ANDROMEDA_ETCD_IN_PLACE_DECLINES(X)                                                                     \
    X(keys_rejected, "the last build left a key out: a rejected key may come back with any change")             \
    X(node_deleted, "a node's key was deleted: build() decides what becomes of its endpoints")                  \
    X(own_node_key, "this node's own key changed")                                                              \
    X(node_unparsed, "a node's value does not parse")                                                           \
    X(node_encap, "a node's encapsulation is not this node's")                                                  \
    X(local_toml_unparsed, "node.toml's own part does not parse")                                               \
    X(nodes_invalid, "the nodes do not validate together (a name or an address taken twice, ...)")              \
    X(not_endpoint_key, "a VPC's key, or a key outside the layout, changed")                                    \
    X(endpoint_address, "an endpoint key's address is not written as the address prints")                       \
    X(vpc_not_running, "an endpoint of a VPC the running fabric does not have")                                 \
    X(local_endpoint, "an endpoint of this node, before or after: tenant ports are build()'s")                  \
    X(forward_target_removed, "a removed endpoint is a target of its VPC's NAT port forwards")                  \
    X(endpoint_unparsed, "an endpoint's value, or its VPC's, does not parse")                                   \
    X(endpoint_invalid, "an endpoint's value does not validate against the nodes and its VPC")                  \
    X(endpoint_node_unknown, "an endpoint names a node the fabric does not have (never expected: "              \
                             "the endpoint validates against the same nodes)")                                  \
    X(mac_taken, "an endpoint's MAC is another endpoint's in its VPC")

enum class InPlaceDecline : std::uint8_t {
    none,
#define ANDROMEDA_IN_PLACE_DECLINE_ENUM(name, description) name,
    ANDROMEDA_ETCD_IN_PLACE_DECLINES(ANDROMEDA_IN_PLACE_DECLINE_ENUM)
#undef ANDROMEDA_IN_PLACE_DECLINE_ENUM
};
inline constexpr std::size_t kInPlaceDeclineCount = 0
#define ANDROMEDA_IN_PLACE_DECLINE_COUNT(name, description) +1
    ANDROMEDA_ETCD_IN_PLACE_DECLINES(ANDROMEDA_IN_PLACE_DECLINE_COUNT)
#undef ANDROMEDA_IN_PLACE_DECLINE_COUNT
    ;
[[nodiscard]] std::string_view to_string(InPlaceDecline decline) noexcept;
[[nodiscard]] std::string_view describe(InPlaceDecline decline) noexcept;

// A change checked against the running fabric (EtcdFabricBuilder::plan_change), not yet built
// into a snapshot: its diff and what apply_change() needs. The daemon writes the fast path's map
// entries from it before the snapshot for the workers is built.
struct EtcdChangePlan {
    std::uint64_t base_generation = 0;  // the running snapshot it was planned against
    FabricDiff diff;
    std::vector<Node> nodes;  // the fabric's nodes after the change (the endpoints' node_index)
    EndpointPatch endpoints;  // by position in the running snapshot
};

// What plan_change() found: the plan, or why the change needs build().
struct PlannedChange {
    std::optional<EtcdChangePlan> plan;
    InPlaceDecline declined = InPlaceDecline::none;  // set exactly when there is no plan
};

// The same, for a daemon that builds again at every change: each value is parsed once, when it
// first appears or changes, and kept between builds. Endpoint changes can also be applied to the
// running fabric without building it again (derive()).
class EtcdFabricBuilder {
public:
    explicit EtcdFabricBuilder(EtcdLayout layout);
    ~EtcdFabricBuilder();
    EtcdFabricBuilder(const EtcdFabricBuilder&) = delete;
    EtcdFabricBuilder& operator=(const EtcdFabricBuilder&) = delete;

    // Makes the builder hold exactly `kvs`; returns how many values it had to parse.
    std::size_t update(const std::map<std::string, std::string>& kvs);
    // Applies changed keys to what it holds (as update() with the whole new set would).
    std::size_t update(const EtcdChanges& changes);
    [[nodiscard]] EtcdFabric build(std::string_view local_toml, const std::string& display_name, const LoadOptions& options = {});

    // `running` (this builder's last build or derivation) with `changes` (already given to
    // update()) applied, in time proportional to the changes (FabricSnapshot::derive shares what
    // they do not touch, and copies the snapshot's endpoint indexes), where that is exactly what
    // build() would give:
    //   - the last build left no key out (a rejected key may come back with any change);
    //   - every change is an endpoint key (its address as the address prints) of a VPC that runs,
    //     or the put of another node's key (a node added, or its address or MAC changed), its
    //     value valid with the other nodes and of this node's encapsulation;
    //   - neither the endpoint's old nor its new entry is on this node (tenant ports are build()'s);
    //   - a removed endpoint is no target of its VPC's NAT port forwards;
    //   - its new value decodes and validates as build() checks it, against the nodes and its VPC,
    //     and its MAC is unique in the VPC.
    // Otherwise nullopt, having changed nothing: build() then decides, and says what it rejects.
    // Every refusal is counted by its reason (InPlaceDecline, declines()).
    [[nodiscard]] std::optional<DerivedFabric> derive(const FabricSnapshot& running, const EtcdChanges& changes,
                                                      std::string_view local_toml, const std::string& display_name,
                                                      const LoadOptions& options = {});
    // derive() in two steps: the checks and the diff, then the snapshot (from the same running
    // snapshot the plan was made against).
    [[nodiscard]] PlannedChange plan_change(const FabricSnapshot& running, const EtcdChanges& changes,
                                            std::string_view local_toml, const std::string& display_name);
    [[nodiscard]] DerivedFabric apply_change(const FabricSnapshot& running, EtcdChangePlan plan,
                                             const LoadOptions& options = {}) const;
    [[nodiscard]] const EtcdLayout& layout() const noexcept { return layout_; }
    // How many changes plan_change() left to build(), by reason.
    [[nodiscard]] std::uint64_t declines(InPlaceDecline reason) const noexcept {
        return reason == InPlaceDecline::none ? 0 : declines_[static_cast<std::size_t>(reason) - 1];
    }
    // Calls f("declined_<reason>", count) for every reason.
    template <class F>
    void for_each_decline(F&& f) const {
#define ANDROMEDA_IN_PLACE_DECLINE_VISIT(name, description) f("declined_" #name, declines(InPlaceDecline::name));
        ANDROMEDA_ETCD_IN_PLACE_DECLINES(ANDROMEDA_IN_PLACE_DECLINE_VISIT)
#undef ANDROMEDA_IN_PLACE_DECLINE_VISIT
    }

private:
    struct Cache;
    class ChangePlanner;
    EtcdLayout layout_;
    std::unique_ptr<Cache> cache_;
    bool clean_ = false;  // the last build or derivation left no key out
    std::array<std::uint64_t, kInPlaceDeclineCount> declines_{};
};

// A whole node.toml's fabric ([[nodes]], [[vpc]] and their endpoints, validated as a reload
// would) as the keys and values of `layout`; [node] and [etcd] are the node's own and are not
// converted. On errors (the file's), no values.
struct EtcdImport {
    std::vector<std::pair<std::string, std::string>> values;
    ValidationErrors errors;
};
[[nodiscard]] EtcdImport etcd_values_of(std::string_view toml, const std::string& display_name, const EtcdLayout& layout);

// The etcd client configuration of node.toml's [etcd] (the password read from its file).
// Throws std::runtime_error when the password file cannot be read.
[[nodiscard]] etcd::Config etcd_client_config(const EtcdSettings& settings);

}  // namespace andromeda::fabric
