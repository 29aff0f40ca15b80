// Internal to the playground's engine: the sample fabric. It is one fixture,
// web/playground/sample_fabric.toml, embedded at build time (sample_fixture.cpp is generated from
// it), so the page, the engine's tests and the browser test all get the same text from the
// engine. A view of it is the fixture with [node] written for another node or encapsulation and
// the first VPC's VNI changed; every other line stays as the fixture has it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "fabric/snapshot.hpp"

namespace andromeda::playground {

// The fixture's text, byte for byte.
[[nodiscard]] std::string_view sample_fixture() noexcept;

struct SampleView {
    std::string node;   // whose view: a node of the fixture's [[nodes]]
    std::string encap;  // "andromeda" or "vxlan"
    std::uint32_t vni;  // the first VPC's
};

// The fixture loaded by the daemon's loader (once); what the views are made from.
[[nodiscard]] const fabric::FabricSnapshot& sample_snapshot();
// The fixture's own view (its [node], its encapsulation, its first VPC's VNI).
[[nodiscard]] SampleView default_view();
[[nodiscard]] std::vector<std::string> sample_nodes();

// The fixture as `view.node` sees it. Throws RequestError for a node the fixture does not have;
// the result always loads (the tests load every view).
[[nodiscard]] std::string sample_text(const SampleView& view);

// The "sample" request: {"node", "encap", "vni"}, each defaulting to the fixture's own.
[[nodiscard]] nlohmann::json answer_sample(const nlohmann::json& request);

}  // namespace andromeda::playground
