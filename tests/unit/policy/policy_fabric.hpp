// A small fabric with security groups for the policy tests: VPC blue (10.0.0.0/24, and
// fd00:0:0:100::/64 with endpoint .N at fd00:0:0:100::N) on node1 and node2, and a way to rebuild a loaded snapshot with groups and memberships set in code (random
// rule sets need not pass validation's dead-rule checks).
#pragma once

#include <string>
#include <vector>

#include "fabric/loader.hpp"

namespace andromeda::policy::testing {

inline std::string blue_fabric(const std::string& groups_toml, const std::vector<std::string>& endpoint_groups = {}) {
    std::string text = R"([node]
name = "node1"
underlay = "eth1"
address = "192.168.1.1"
[[nodes]]
name = "node2"
address = "192.168.1.2"
[[vpc]]
name = "blue"
vni = 100
cidr = "10.0.0.0/24"
gateway = "10.0.0.1"
ipv6_prefix = "fd00:0:0:100::/64"
)" + groups_toml;
    const char* ips[] = {"10.0.0.10", "10.0.0.11", "10.0.0.20", "10.0.0.21"};
    for (std::size_t i = 0; i < 4; ++i) {
        text += "[[vpc.endpoint]]\nip = \"" + std::string(ips[i]) + "\"\nmac = \"02:00:00:00:00:" +
                std::to_string(10 + i) + "\"\nnode = \"" + (i < 2 ? "node1" : "node2") + "\"\nport = \"tap" +
                std::to_string(i) + "\"\nipv6 = \"fd00:0:0:100::" + std::string(ips[i]).substr(7) + "\"\n";
        if (i < endpoint_groups.size() && !endpoint_groups[i].empty()) text += "groups = " + endpoint_groups[i] + "\n";
    }
    return text;
}

// `base` with VPC 0's groups and defaults replaced and endpoint i's groups set to groups[i].
inline std::shared_ptr<const fabric::FabricSnapshot> with_policy(const fabric::FabricSnapshot& base,
                                                                  std::vector<fabric::SecurityGroup> sgs,
                                                                  const std::vector<std::vector<std::string>>& groups,
                                                                  std::uint64_t generation,
                                                                  std::optional<fabric::PolicyAction> ingress = {},
                                                                  std::optional<fabric::PolicyAction> egress = {}) {
    fabric::FabricConfig c;
    c.source_name = base.source_name();
    c.local = base.local();
    c.nodes.assign(base.nodes().begin(), base.nodes().end());
    c.vpcs.assign(base.vpcs().begin(), base.vpcs().end());
    c.vpcs[0].security_groups = std::move(sgs);
    c.vpcs[0].default_ingress = ingress;
    c.vpcs[0].default_egress = egress;
    std::size_t i = 0;
    for (const fabric::Endpoint& e : base.endpoints()) {
        c.endpoints.push_back(e);
        c.endpoints.back().groups = i < groups.size() ? groups[i] : std::vector<std::string>{};
        ++i;
    }
    return std::make_shared<const fabric::FabricSnapshot>(std::move(c), generation);
}

inline std::shared_ptr<const fabric::FabricSnapshot> load(const std::string& text, std::uint64_t generation = 1) {
    fabric::LoadOptions options;
    options.generation = generation;
    auto r = fabric::load_fabric_string(text, "t.toml", options);
    if (!r.ok()) throw std::runtime_error(fabric::to_string(r.errors));
    return r.snapshot;
}

}  // namespace andromeda::policy::testing
