#include "control/protocol.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>

namespace andromeda::control {

namespace {

constexpr std::array<std::pair<std::string_view, Command>, 9> kCommands = {{
    {"status", Command::status},
    {"stats", Command::stats},
    {"fabric", Command::fabric},
    {"conntrack", Command::conntrack},
    {"reload", Command::reload},
    {"health", Command::health},
    {"log-level", Command::log_level},
    {"policy", Command::policy},
    {"leases", Command::leases},
}};

// Strings a request may carry besides a file path are short; longer ones are refused unread.
constexpr std::size_t kMaxFilterBytes = 64;

// nlohmann::json recurses per nesting level; refuse deep documents before parsing them.
constexpr int kMaxDepth = 16;

bool nesting_within_limit(std::string_view text) {
    int depth = 0;
    bool in_string = false, escaped = false;
    for (char c : text) {
        if (in_string) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') in_string = true;
        else if (c == '{' || c == '[') {
            if (++depth > kMaxDepth) return false;
        } else if (c == '}' || c == ']') {
            --depth;
        }
    }
    return true;
}

std::variant<nlohmann::json, ProtocolError> parse_object(std::string_view line, std::string_view what) {
    if (line.size() > kMaxRequestBytes)
        return ProtocolError{fmt::format("{} is {} bytes; the limit is {}", what, line.size(), kMaxRequestBytes)};
    if (!nesting_within_limit(line))
        return ProtocolError{fmt::format("{} nests deeper than {} levels", what, kMaxDepth)};
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return ProtocolError{fmt::format("{} is not valid JSON", what)};
    if (!j.is_object()) return ProtocolError{fmt::format("{} must be a JSON object", what)};
    return j;
}


std::optional<ProtocolError> read_string(const nlohmann::json& value, const char* key, std::optional<std::string>& out) {
    if (!value.is_string() || value.get_ref<const std::string&>().empty())
        return ProtocolError{fmt::format("\"{}\" must be a non-empty string", key)};
    if (value.get_ref<const std::string&>().size() > kMaxFilterBytes)
        return ProtocolError{fmt::format("\"{}\" is longer than {} bytes", key, kMaxFilterBytes)};
    out = value.get<std::string>();
    return std::nullopt;
}

std::optional<ProtocolError> read_count(const nlohmann::json& value, const char* key, std::uint64_t min,
                                        std::uint64_t max, std::uint64_t& out) {
    const bool whole = value.is_number_unsigned() || (value.is_number_integer() && value.get<std::int64_t>() >= 0);
    if (!whole || value.get<std::uint64_t>() < min || value.get<std::uint64_t>() > max)
        return ProtocolError{fmt::format("\"{}\" must be a whole number from {} to {}", key, min, max)};
    out = value.get<std::uint64_t>();
    return std::nullopt;
}

std::optional<ProtocolError> read_conntrack_key(ConntrackQuery& q, const std::string& key, const nlohmann::json& value) {
    if (key == "offset") return read_count(value, "offset", 0, std::numeric_limits<std::uint32_t>::max(), q.offset);
    if (key == "limit") return read_count(value, "limit", 1, kConntrackMaxLimit, q.limit);
    if (key == "port") {
        std::uint64_t port = 0;
        if (auto e = read_count(value, "port", 0, 65535, port)) return e;
        q.port = static_cast<std::uint16_t>(port);
        return std::nullopt;
    }
    if (key == "address") return read_string(value, "address", q.address);
    if (key == "state") return read_string(value, "state", q.state);
    if (key == "protocol") return read_string(value, "protocol", q.protocol);
    return ProtocolError{};  // not a conntrack key: the caller names it
}

// One key besides "command"; an error with an empty message: the key is not the command's.
std::optional<ProtocolError> read_key(ControlRequest& request, const std::string& key, const nlohmann::json& value) {
    switch (request.command) {
        case Command::reload:
            if (key != "file") break;
            if (!value.is_string() || value.get_ref<const std::string&>().empty())
                return ProtocolError{"\"file\" must be a non-empty string"};
            request.file = value.get<std::string>();
            return std::nullopt;
        case Command::log_level: {
            if (key != "level") break;
            const bool known = value.is_string() && std::find(std::begin(kLogLevels), std::end(kLogLevels),
                                                              value.get_ref<const std::string&>()) != std::end(kLogLevels);
            if (!known)
                return ProtocolError{"\"level\" must be one of trace, debug, info, warn, error, critical, off"};
            request.level = value.get<std::string>();
            return std::nullopt;
        }
        case Command::conntrack: return read_conntrack_key(request.conntrack, key, value);
        case Command::status:
        case Command::stats:
        case Command::fabric:
        case Command::policy:
        case Command::leases:
        case Command::health: break;
    }
    return ProtocolError{};
}

}  // namespace

std::string_view to_string(Command c) noexcept {
    for (const auto& [name, command] : kCommands)
        if (command == c) return name;
    return "unknown";
}

std::variant<ControlRequest, ProtocolError> parse_request(std::string_view line) {
    auto parsed = parse_object(line, "request");
    if (auto* e = std::get_if<ProtocolError>(&parsed)) return *e;
    const auto& j = std::get<nlohmann::json>(parsed);
    ControlRequest request;
    const auto cmd = j.find("command");
    if (cmd == j.end() || !cmd->is_string()) return ProtocolError{"request has no \"command\" string"};
    const auto& name = cmd->get_ref<const std::string&>();
    bool known = false;
    for (const auto& [text, command] : kCommands) {
        if (name == text) {
            request.command = command;
            known = true;
        }
    }
    if (!known)
        return ProtocolError{fmt::format(
            "unknown command \"{}\"; expected status, stats, fabric, conntrack, policy, reload, health or log-level",
            name.substr(0, 64))};
    for (const auto& [key, value] : j.items()) {
        if (key == "command") continue;
        if (auto error = read_key(request, key, value)) {
            if (error->message.empty())
                error->message = fmt::format("unexpected key \"{}\" for command {}", key.substr(0, 64), name);
            return *error;
        }
    }
    return request;
}

std::string render_request(const ControlRequest& request) {
    nlohmann::json j = {{"command", to_string(request.command)}};
    if (request.file) j["file"] = *request.file;
    if (request.level) j["level"] = *request.level;
    if (request.command == Command::conntrack) {
        const ConntrackQuery& q = request.conntrack;
        if (q.offset != 0) j["offset"] = q.offset;
        if (q.limit != kConntrackDefaultLimit) j["limit"] = q.limit;
        if (q.address) j["address"] = *q.address;
        if (q.port) j["port"] = *q.port;
        if (q.state) j["state"] = *q.state;
        if (q.protocol) j["protocol"] = *q.protocol;
    }
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string render_ok(const nlohmann::json& result) {
    return nlohmann::json{{"ok", true}, {"result", result}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string render_error(std::string_view message) {
    return nlohmann::json{{"ok", false}, {"error", message}}.dump(-1, ' ', false,
                                                                  nlohmann::json::error_handler_t::replace);
}

std::variant<ControlResponse, ProtocolError> parse_response(std::string_view line) {
    // Responses (a fabric dump of 100k endpoints) may be large; only requests are capped.
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return ProtocolError{"the daemon's response is not a JSON object"};
    const auto ok = j.find("ok");
    if (ok == j.end() || !ok->is_boolean()) return ProtocolError{"the daemon's response has no \"ok\" flag"};
    ControlResponse r;
    r.ok = ok->get<bool>();
    if (r.ok) {
        r.result = j.value("result", nlohmann::json::object());
    } else {
        const auto err = j.find("error");
        r.error = err != j.end() && err->is_string() ? err->get<std::string>() : "unspecified error";
    }
    return r;
}

}  // namespace andromeda::control
