// Small pure helpers of the daemon: message formatting and paths.
#pragma once

#include <string>
#include <vector>

#include "fabric/snapshot.hpp"
#include "io/plan/punt_limit.hpp"
#include "nat/tenant_budget.hpp"
#include "wire/addresses.hpp"

namespace andromeda::daemon {

// A documentation address (TEST-NET-2, RFC 5737): never local, so the kernel's route to it is
// the default route, whose gateway is the uplink's next hop when node.toml names none.
inline constexpr wire::Ipv4Address kUplinkProbeAddress{0xC6336401};  // 198.51.100.1

// `path` made absolute (the daemon may be asked to reload it from another directory's view).
[[nodiscard]] std::string absolute_path(const std::string& path);

// "<title>\n  <line>\n  <line>".
[[nodiscard]] std::string join_lines(const std::string& title, const std::vector<std::string>& lines);

// [node] punt_rate and punt_burst as the punt buckets take them.
[[nodiscard]] inline io::PuntLimit punt_limit_of(const fabric::LocalNodeSettings& local) noexcept {
    return {local.punt_rate, local.punt_burst};
}

// [node.uplink] new_flows_per_tenant and new_flows_burst as the NAT's tenant budget takes them
// (no uplink: no NAT, nothing to limit).
[[nodiscard]] inline nat::TenantFlowLimit tenant_flow_limit_of(const fabric::LocalNodeSettings& local) noexcept {
    if (!local.uplink) return {};
    return {local.uplink->new_flows_per_tenant, local.uplink->new_flows_burst};
}

}  // namespace andromeda::daemon
