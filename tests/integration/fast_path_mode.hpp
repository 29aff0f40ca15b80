// Which data path the end-to-end tests run. Every daemon test binary is registered twice
// (tests/integration/CMakeLists.txt): as itself, with the kernel fast path on (andromedad's
// default), and as <Suite>.<Test>.slowpath with ANDROMEDA_TEST_FASTPATH=off, where each node's
// config gets `fastpath = false` in [node] and every tenant frame goes through the AF_XDP
// pipeline. Tenants keep the kernel's default offloads in both.
//
// The counters a test reads to prove which path carried its traffic differ between the two
// (the fast path counts GSO packets whole, in `stats` group "fastpath"); PathCounters names the
// ones that mean the same thing on either path.
#pragma once

#include <cstdlib>
#include <string>
#include <string_view>

namespace andromeda::testing {

inline bool fast_path_on() {
    const char* v = std::getenv("ANDROMEDA_TEST_FASTPATH");
    return v == nullptr || (std::string_view(v) != "off" && std::string_view(v) != "0");
}

// `config` (a node.toml) with this run's path: `fastpath = false` added to [node] when the fast
// path is off; as it is otherwise, or when it already says.
inline std::string with_path_mode(std::string config, bool fast = fast_path_on()) {
    const std::string section = "[node]\n";
    const auto at = config.find(section);
    if (fast || at == std::string::npos || config.find("\nfastpath =") != std::string::npos) return config;
    config.insert(at + section.size(), "fastpath = false\n");
    return config;
}

// The `stats` counter (group, name) that counts what this path did: on the fast path a tenant
// frame encapsulated in the kernel, an overlay packet decapsulated in it, an overlay packet the
// underlay XDP handed to it; on the slow path the pipeline's and XDP's steering counterparts.
struct PathCounter {
    const char* group;
    const char* name;
};
inline PathCounter encapsulated_counter(bool fast = fast_path_on()) {
    return fast ? PathCounter{"fastpath", "encap_packets"} : PathCounter{"dataplane", "encapsulated"};
}
inline PathCounter delivered_from_fabric_counter(bool fast = fast_path_on()) {
    return fast ? PathCounter{"fastpath", "decap_packets"} : PathCounter{"dataplane", "delivered_from_fabric"};
}
inline PathCounter overlay_steered_counter(bool fast = fast_path_on()) {
    return fast ? PathCounter{"xdp", "pass_fastpath"} : PathCounter{"xdp", "redirect_overlay"};
}

}  // namespace andromeda::testing
