#include "nat/conntrack_render.hpp"

#include <chrono>
#include <cstdio>

namespace andromeda::nat {
namespace {

double seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

nlohmann::json endpoints_json(const FlowEndpoints& e) {
    return {{"source", e.source.to_string()},
            {"source_port", e.source_port},
            {"destination", e.destination.to_string()},
            {"destination_port", e.destination_port}};
}

std::string endpoint_text(wire::Ipv4Address a, std::uint16_t port) { return a.to_string() + ":" + std::to_string(port); }

std::string endpoints_text(const FlowEndpoints& e) {
    return endpoint_text(e.source, e.source_port) + " -> " + endpoint_text(e.destination, e.destination_port);
}

}  // namespace

nlohmann::json to_json(const FlowInfo& flow) {
    return {{"vni", flow.vni},
            {"protocol", std::string(to_string(flow.protocol))},
            {"origin", std::string(to_string(flow.origin))},
            {"state", std::string(to_string(flow.state))},
            {"port_forward", flow.port_forward},
            {"original", endpoints_json(flow.original)},
            {"translated", endpoints_json(flow.translated)},
            {"age_seconds", seconds(flow.age)},
            {"expires_in_seconds", seconds(flow.expires_in)}};
}

nlohmann::json conntrack_json(std::span<const FlowInfo> flows) {
    nlohmann::json list = nlohmann::json::array();
    for (const FlowInfo& f : flows) list.push_back(to_json(f));
    return {{"flows", std::move(list)}, {"count", flows.size()}};
}

std::string conntrack_text(std::span<const FlowInfo> flows) {
    std::string out;
    char numbers[96];
    for (const FlowInfo& f : flows) {
        std::snprintf(numbers, sizeof numbers, " age=%.0fs expires=%.0fs\n", seconds(f.age), seconds(f.expires_in));
        out += std::string(to_string(f.protocol)) + " " + std::string(to_string(f.state)) +
               " vni=" + std::to_string(f.vni) + (f.port_forward ? " forward " : " ") + endpoints_text(f.original) +
               " as " + endpoints_text(f.translated) + numbers;
    }
    return out;
}

nlohmann::json to_json(const NatCounters& counters) {
    nlohmann::json out = nlohmann::json::object();
    counters.for_each([&](std::string_view name, std::uint64_t value) { out[std::string(name)] = value; });
    return out;
}

}  // namespace andromeda::nat
