// What a node.toml needs from the host it runs on (interfaces, addresses, MTUs, privileges),
// checked before anything is changed, so `andromedad --check` and a failed start both say
// exactly what is missing and how to fix it.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "fabric/snapshot.hpp"
#include "io/netlink/interfaces.hpp"
#include "wire/addresses.hpp"

namespace andromeda::daemon {

// A startup failure: what failed and how to fix it, one sentence or several lines.
class StartupError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct HostFacts {
    io::InterfaceInfo underlay;
    wire::IpAddress underlay_address;  // [node] address (IPv4 or IPv6), or the interface's primary IPv4 one
    std::optional<io::InterfaceInfo> uplink;
    std::optional<wire::Ipv4Address> uplink_address;
};

struct HostCheck {
    std::optional<HostFacts> facts;     // unset when an error makes starting impossible
    std::vector<std::string> errors;    // each says what is wrong and how to fix it
    std::vector<std::string> warnings;  // andromedad starts anyway
    std::vector<std::string> missing_tenant_ports;  // also among the warnings
};

// Checks the calling thread's network namespace (where andromedad runs) against the snapshot.
[[nodiscard]] HostCheck check_host(const fabric::FabricSnapshot& snapshot);

// The capabilities andromedad needs, each with what for (docs/operations.md: each was verified by
// running without it; tests/integration/service_test.cpp runs it with exactly these).
struct RequiredCapability {
    unsigned capability = 0;
    const char* name = "";
    const char* needed_for = "";
};
[[nodiscard]] const std::vector<RequiredCapability>& required_capabilities();

// Empty when this process has every required capability in its effective set (root is no
// shortcut: a service's bounding set can take them from root too); else each missing one, named,
// with what it is for and how to grant it.
[[nodiscard]] std::string privilege_problem();

}  // namespace andromeda::daemon
