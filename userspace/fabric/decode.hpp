// Internal: the schema. decode_fabric() turns a TOML tree into a FabricConfig, reporting
// unknown keys, missing keys, wrong types and malformed values; validate_fabric() then checks
// what spans entries (duplicates, references, containment) and fills the indexes. Both keep
// going after an error so one run reports everything. SourceMap remembers where each value
// was written so the cross-entry checks can point at a line too.
#pragma once

#include <string>
#include <vector>

#include "fabric/errors.hpp"
#include "fabric/model.hpp"
#include "fabric/toml_tree.hpp"

namespace andromeda::fabric::detail {

struct LocalSource {
    std::uint32_t table = 0, name = 0, address = 0, underlay_mtu = 0, underlay_vlan = 0, pin_dir = 0, uplink = 0;
};

struct NodeSource {
    std::uint32_t table = 0, name = 0, address = 0;
    std::string path;  // "node" or "nodes[3]"
};

struct ForwardSource {
    std::uint32_t table = 0, nat_port = 0, to = 0;
};

struct VpcSource {
    std::uint32_t table = 0, name = 0, vni = 0, cidr = 0, gateway = 0, gateway_mac = 0, mtu = 0;
    std::uint32_t nat_gateway_node = 0, nat_address = 0, ipv6_prefix = 0, ipv6_gateway = 0;
    bool vni_ok = false, cidr_ok = false, gateway_ok = false, mtu_set = false;
    std::vector<ForwardSource> forwards;
};

struct EndpointSource {
    std::uint32_t table = 0, ip = 0, mac = 0, node = 0, port = 0, name = 0, port_type = 0, queues = 0, ipv6 = 0;
    std::uint32_t index_in_vpc = 0;
};

// Parallel to the vectors of FabricConfig (nodes[0], the local node, is [node]).
struct SourceMap {
    LocalSource local;
    std::vector<NodeSource> nodes;
    std::vector<VpcSource> vpcs;
    std::vector<EndpointSource> endpoints;
};

struct DecodedFabric {
    FabricConfig config;
    SourceMap source;
    ValidationErrors errors;
};

[[nodiscard]] DecodedFabric decode_fabric(const TomlNode& root, const std::string& file_name);
void validate_fabric(DecodedFabric& fabric);

[[nodiscard]] std::string endpoint_path(const FabricConfig& config, const SourceMap& source, std::size_t index);
[[nodiscard]] std::string vpc_path(std::size_t index);

}  // namespace andromeda::fabric::detail
