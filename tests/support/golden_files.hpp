// Reading the golden files tests/data/make_golden*.py write: a manifest (JSON) and frames as one
// line of hex each.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace andromeda::test_support {

// `path` parsed as JSON; a missing file fails the test with `how_to_make` (the script that makes it).
inline nlohmann::json read_golden_manifest(const std::string& path, const std::string& how_to_make = "") {
    std::ifstream in(path);
    EXPECT_TRUE(in) << "missing " << path << (how_to_make.empty() ? "" : ": run " + how_to_make);
    return nlohmann::json::parse(in);
}

// The bytes of a file holding one line of hex digits.
inline std::vector<std::uint8_t> read_golden_hex(const std::string& path) {
    std::ifstream in(path);
    std::string hex;
    in >> hex;
    std::vector<std::uint8_t> bytes;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
        bytes.push_back(static_cast<std::uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    return bytes;
}

}  // namespace andromeda::test_support
