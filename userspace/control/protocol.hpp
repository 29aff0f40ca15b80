// The control-socket protocol between andromedactl and andromedad: one JSON object per line
// each way, one request per connection. This library (userspace/control) is what both sides
// share: the protocol, the socket helpers and the client; the server lives in the daemon.
// Requests are untrusted bytes (anyone who can reach the socket can send them), so parsing is
// bounded and every malformed request gets a reason.
//
//   request:  {"command": "status" | "stats" | "fabric" | "conntrack" | "reload", "file": "..."}
//   response: {"ok": true, "result": {...}}  or  {"ok": false, "error": "what went wrong"}
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace andromeda::control {

// Requests longer than this are refused without being parsed.
inline constexpr std::size_t kMaxRequestBytes = 64 * 1024;

enum class Command { status, stats, fabric, conntrack, reload };

[[nodiscard]] std::string_view to_string(Command c) noexcept;

struct ControlRequest {
    Command command = Command::status;
    std::optional<std::string> file;  // reload: a new config file; default: the running one

    friend bool operator==(const ControlRequest&, const ControlRequest&) = default;
};

struct ProtocolError {
    std::string message;
};

// Parses one request line (without its newline).
[[nodiscard]] std::variant<ControlRequest, ProtocolError> parse_request(std::string_view line);
[[nodiscard]] std::string render_request(const ControlRequest& request);

[[nodiscard]] std::string render_ok(const nlohmann::json& result);
[[nodiscard]] std::string render_error(std::string_view message);

// A parsed response: the result object, or the daemon's error text.
struct ControlResponse {
    bool ok = false;
    nlohmann::json result;
    std::string error;
};

[[nodiscard]] std::variant<ControlResponse, ProtocolError> parse_response(std::string_view line);

}  // namespace andromeda::control
