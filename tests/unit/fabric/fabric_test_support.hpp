// Helpers shared by the fabric unit tests.
#pragma once

#include <string>

#include "fabric/fabric.hpp"

namespace andromeda::fabric::testing {

// A small valid fabric; tests append to it or replace lines in it.
//  1 [node] ... 20 port (see the line numbers in the expected messages).
inline const std::string kBaseFabric = R"([node]
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

[[vpc.endpoint]]
ip = "10.0.0.10"
mac = "02:00:00:00:00:10"
node = "node1"
port = "tap1"
)";

inline std::string replace_once(std::string text, const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    if (at != std::string::npos) text.replace(at, from.size(), to);
    return text;
}

inline std::string source_path(const std::string& relative) { return std::string(ANDROMEDA_SOURCE_DIR) + "/" + relative; }

}  // namespace andromeda::fabric::testing
