// Rendering the conntrack listing and the NAT counters for `andromedactl conntrack [--json]`
// and `andromedactl stats`.
#pragma once

#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "nat/counters.hpp"
#include "nat/flow_info.hpp"

namespace andromeda::nat {

// {"vni":100,"protocol":"tcp","origin":"outbound","state":"established","port_forward":false,
//  "original":{"source":"10.0.0.10","source_port":40000,"destination":"203.0.113.7",
//              "destination_port":80},
//  "translated":{...}, "age_seconds":12.5, "expires_in_seconds":7427.5}
[[nodiscard]] nlohmann::json to_json(const FlowInfo& flow);
// {"flows":[...], "count":N}
[[nodiscard]] nlohmann::json conntrack_json(std::span<const FlowInfo> flows);
// One line per flow, conntrack(8)-like:
// "tcp established vni=100 10.0.0.10:40000 -> 203.0.113.7:80 as 198.51.100.1:40000 -> ...
//  age=12s expires=7427s"
[[nodiscard]] std::string conntrack_text(std::span<const FlowInfo> flows);
// {"translated_outbound":..., ..., "drop_stale_flow":...}
[[nodiscard]] nlohmann::json to_json(const NatCounters& counters);

}  // namespace andromeda::nat
