// Internal to the playground's engine: a loaded fabric as the page sees it. The port table the
// daemon would build, the stand-ins for what the daemon learns from its host, and the answer to
// the "fabric" request (nodes, VPCs with their gateway MACs, endpoints, ports and the presets'
// packets), so the page renders what the daemon's own loader read and derives nothing itself.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dataplane/pipeline_config.hpp"
#include "fabric/snapshot.hpp"

namespace andromeda::playground {

inline constexpr dataplane::PortId kUnderlayPort = 1;
inline constexpr dataplane::PortId kUplinkPort = 2;
inline constexpr dataplane::PortId kFirstTenantPort = 10;

struct Port {
    dataplane::PortId id;
    std::string name;
    dataplane::PortRole role;
    const fabric::Endpoint* endpoint = nullptr;
};

// The port table a daemon builds: the underlay, the uplink if any, each local endpoint's port.
[[nodiscard]] std::vector<Port> port_table(const fabric::FabricSnapshot& fabric);
// The ports as the answers list them: name and role; a tenant port also its endpoint's address
// and MAC, its VPC, and that VPC's gateway address and MAC (what a tenant sends to).
[[nodiscard]] nlohmann::json ports_json(const std::vector<Port>& ports, const fabric::FabricSnapshot& fabric);

// The next-hop MAC a peer gets: its pinned one, else 02:00 followed by its IPv4 address (the
// neighbour table's stand-in); for the local node, the underlay MAC a run assumes.
[[nodiscard]] wire::MacAddress stand_in_mac(const fabric::Node& node);

// The fabric of `text` through the daemon's loader; throws FabricLoadError with the loader's
// errors. The page sends the same fabric for every keystroke of a packet, so the last one loaded
// is kept (a snapshot is immutable; a lock makes the engine safe to share).
[[nodiscard]] std::shared_ptr<const fabric::FabricSnapshot> load_fabric(const std::string& text);

// The "fabric" request's answer for a loaded fabric (docs/playground.md lists its fields).
[[nodiscard]] nlohmann::json describe_fabric(const fabric::FabricSnapshot& fabric);

}  // namespace andromeda::playground
