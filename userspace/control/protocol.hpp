// The control-socket protocol between andromedactl and andromedad: one JSON object per line
// each way, one request per connection. This library (userspace/control) is what both sides
// share: the protocol, the socket helpers and the client; the server lives in the daemon.
// Requests are untrusted bytes (anyone who can reach the socket can send them), so parsing is
// bounded and every malformed request gets a reason.
//
//   request:  {"command": "status" | "stats" | "fabric" | "health" | "policy" | "reload", "file": "..."}
//             {"command": "conntrack", "offset": N, "limit": N, "address": "...", "port": N,
//              "state": "...", "protocol": "..."}   (every key but "command" optional)
//             {"command": "log-level", "level": "debug"}   (no "level": only asks)
//   response: {"ok": true, "result": {...}}  or  {"ok": false, "error": "what went wrong"}
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace andromeda::control {

// Requests longer than this are refused without being parsed.
inline constexpr std::size_t kMaxRequestBytes = 64 * 1024;

enum class Command { status, stats, fabric, conntrack, reload, health, log_level, policy, leases };

[[nodiscard]] std::string_view to_string(Command c) noexcept;

// conntrack: which flows, and which page of them. The daemon filters and pages, so a reply
// stays bounded however many flows the table holds.
inline constexpr std::uint64_t kConntrackDefaultLimit = 1000;
inline constexpr std::uint64_t kConntrackMaxLimit = 10000;
struct ConntrackQuery {
    std::uint64_t offset = 0;               // flows skipped (in the daemon's stable order)
    std::uint64_t limit = kConntrackDefaultLimit;  // 1..kConntrackMaxLimit
    std::optional<std::string> address;     // on either side of the original or translated tuple
    std::optional<std::uint16_t> port;      // likewise
    std::optional<std::string> state;       // "established", "unreplied", ... (nat::to_string)
    std::optional<std::string> protocol;    // tcp | udp | icmp

    friend bool operator==(const ConntrackQuery&, const ConntrackQuery&) = default;
};

// Log levels as spdlog names them, from the most verbose.
inline constexpr std::string_view kLogLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};

struct ControlRequest {
    Command command = Command::status;
    std::optional<std::string> file = std::nullopt;   // reload: a new config file; default: the running one
    std::optional<std::string> level = std::nullopt;  // log-level: the new level; none: only report it
    ConntrackQuery conntrack = {};     // conntrack only

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
