// The playground engine's requests as its tests make them: each answer must be "ok" (a test
// failure shows the request and the answer otherwise).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "playground/playground.hpp"

namespace andromeda::playground::testing_requests {

using nlohmann::json;

inline json ok(const json& request) {
    const json r = handle(request);
    EXPECT_TRUE(r.value("ok", false)) << request.dump() << "\n" << r.dump(2);
    return r;
}

inline std::string build(const json& packet) { return ok({{"op", "build"}, {"packet", packet}}).value("hex", ""); }

// A view of the sample fabric (with no settings: the fixture's own), what the engine says a
// fabric holds, and one of its presets ({"port", "packet"}).
inline json sample(const json& settings = json::object()) {
    json request = settings;
    request["op"] = "sample";
    return ok(request);
}
inline json describe(const std::string& fabric) { return ok({{"op", "fabric"}, {"fabric", fabric}}); }
inline json example(const std::string& name, const json& view = sample()) {
    const json e = describe(view.at("fabric")).at("examples").at(name);
    EXPECT_FALSE(e.contains("error")) << e.dump();
    return e;
}

// The pipeline on a view of the sample, with the underlay MAC the sample gives it.
inline json run_on(const json& view, const std::string& port, const json& packet) {
    return ok({{"op", "run"},
               {"fabric", view.at("fabric")},
               {"underlay_mac", view.at("underlay_mac")},
               {"port", port},
               {"hex", build(packet)}});
}
inline json run(const json& e, const json& view = sample()) { return run_on(view, e.at("port"), e.at("packet")); }

// A preset with some of its packet's fields changed.
inline json with(json e, const json& changes) {
    for (const auto& [k, v] : changes.items()) e["packet"][k] = v;
    return e;
}

}  // namespace andromeda::playground::testing_requests
