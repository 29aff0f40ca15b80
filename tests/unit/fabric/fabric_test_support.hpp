// Helpers shared by the fabric unit tests.
#pragma once

#include <string>

#include "fabric/fabric.hpp"
#include "support/fabric_builder.hpp"

namespace andromeda::fabric::testing {

// A small valid fabric; tests append to it or replace lines in it.
//  1 [node] ... 20 port (see the line numbers in the expected messages).
inline const std::string kBaseFabric =
    test_support::two_node_blue("node1").endpoint("10.0.0.10", "02:00:00:00:00:10", "node1", "tap1").toml();

inline std::string replace_once(std::string text, const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    if (at != std::string::npos) text.replace(at, from.size(), to);
    return text;
}

inline std::string source_path(const std::string& relative) { return std::string(ANDROMEDA_SOURCE_DIR) + "/" + relative; }

}  // namespace andromeda::fabric::testing
