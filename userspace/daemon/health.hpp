// Whether andromedad is doing all it was asked to (`andromedactl health`, and `status`'s exit
// code): each fact that makes it degraded becomes a problem an operator can act on. The daemon
// gathers the facts (daemon_health.cpp); this part is pure, and the kernel queries it needs are
// read-only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "control/messages.hpp"

namespace andromeda::daemon {

struct HealthFacts {
    bool etcd_configured = false;
    bool etcd_connected = false;
    std::string etcd_error;                          // the last one, when disconnected
    std::vector<std::string> detached_programs;      // "eth1: XDP program andromeda_xdp is no longer attached"
    std::vector<std::string> unserved_tenant_ports;  // configured endpoints whose port has no programs
    std::optional<std::string> last_reload_error;    // the last reload's errors, when it was refused
    std::vector<std::string> worker_failures;
};

[[nodiscard]] control::HealthReply evaluate_health(const HealthFacts& facts);

// What the kernel has on an interface right now: true when some XDP program (native, generic or
// offloaded) is attached / some BPF program is on tc ingress (a tcx link or Andromeda's clsact
// filter); std::nullopt when the interface is gone.
[[nodiscard]] std::optional<bool> xdp_attached_now(std::uint32_t ifindex);
[[nodiscard]] std::optional<bool> tc_ingress_attached_now(std::uint32_t ifindex);

}  // namespace andromeda::daemon
