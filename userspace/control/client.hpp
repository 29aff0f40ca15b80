// The control socket's client side: what andromedactl (and the tests) use to talk to a daemon.
#pragma once

#include <string>
#include <variant>

#include "control/protocol.hpp"

namespace andromeda::control {

// Default socket path of the instance named `node`.
[[nodiscard]] std::string default_control_socket_path(const std::string& node);

// Sends one request and returns the response, or a ProtocolError naming what failed
// (no such socket: is andromedad running?; permission denied: run as root; ...).
[[nodiscard]] std::variant<ControlResponse, ProtocolError> send_control_request(const std::string& path,
                                                                               const ControlRequest& request,
                                                                               int timeout_ms = 10000);

}  // namespace andromeda::control
