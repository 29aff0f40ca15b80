#include "control/protocol.hpp"

#include <fmt/format.h>

#include <array>

namespace andromeda::control {

namespace {

constexpr std::array<std::pair<std::string_view, Command>, 5> kCommands = {{
    {"status", Command::status},
    {"stats", Command::stats},
    {"fabric", Command::fabric},
    {"conntrack", Command::conntrack},
    {"reload", Command::reload},
}};

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
        return ProtocolError{fmt::format("unknown command \"{}\"; expected status, stats, fabric, conntrack or reload",
                                         name.substr(0, 64))};
    for (const auto& [key, value] : j.items()) {
        if (key == "command") continue;
        if (key == "file" && request.command == Command::reload) {
            if (!value.is_string() || value.get_ref<const std::string&>().empty())
                return ProtocolError{"\"file\" must be a non-empty string"};
            request.file = value.get<std::string>();
            continue;
        }
        return ProtocolError{fmt::format("unexpected key \"{}\" for command {}", key.substr(0, 64), name)};
    }
    return request;
}

std::string render_request(const ControlRequest& request) {
    nlohmann::json j = {{"command", to_string(request.command)}};
    if (request.file) j["file"] = *request.file;
    return j.dump();
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
