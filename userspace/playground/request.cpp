#include "playground/request.hpp"

#include "inspect/inspect.hpp"

namespace andromeda::playground {

using nlohmann::json;

FabricLoadError::FabricLoadError(fabric::ValidationErrors loader_errors)
    : RequestError("the fabric does not load:\n" + fabric::to_string(loader_errors)),
      errors(std::move(loader_errors)) {}

const json& member(const json& object, const char* key, std::string_view where) {
    if (!object.is_object()) throw RequestError(std::string(where) + ": must be a JSON object");
    const auto it = object.find(key);
    if (it == object.end()) throw RequestError(std::string(where) + "." + key + ": missing");
    return *it;
}

std::string string_field(const json& object, const char* key, std::string_view where) {
    const json& v = member(object, key, where);
    if (!v.is_string()) throw RequestError(std::string(where) + "." + key + ": must be a string");
    return v.get<std::string>();
}

std::string string_field_or(const json& object, const char* key, std::string_view where, std::string fallback) {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return fallback;
    if (!it->is_string()) throw RequestError(std::string(where) + "." + key + ": must be a string");
    return it->get<std::string>();
}

std::uint64_t number_field(const json& object, const char* key, std::string_view where, std::uint64_t min,
                           std::uint64_t max, std::optional<std::uint64_t> fallback) {
    const auto it = object.is_object() ? object.find(key) : object.end();
    if (it == object.end() || it->is_null()) {
        if (fallback) return *fallback;
        throw RequestError(std::string(where) + "." + key + ": missing");
    }
    if (!it->is_number_integer() || it->get<std::int64_t>() < 0 || it->get<std::uint64_t>() < min ||
        it->get<std::uint64_t>() > max)
        throw RequestError(std::string(where) + "." + key + ": must be a whole number from " + std::to_string(min) +
                           " to " + std::to_string(max));
    return it->get<std::uint64_t>();
}

wire::MacAddress mac_field(const json& object, const char* key, std::string_view where) {
    const std::string text = string_field(object, key, where);
    const auto mac = wire::MacAddress::parse(text);
    if (!mac)
        throw RequestError(std::string(where) + "." + key + ": '" + text +
                           "' is not a MAC address (02:00:00:00:00:0a)");
    return *mac;
}

wire::Ipv4Address ipv4_field(const json& object, const char* key, std::string_view where) {
    const std::string text = string_field(object, key, where);
    const auto ip = wire::Ipv4Address::parse(text);
    if (!ip) throw RequestError(std::string(where) + "." + key + ": '" + text + "' is not an IPv4 address (10.0.0.10)");
    return *ip;
}

std::vector<std::uint8_t> hex_field(const json& object, const char* key, std::string_view where) {
    std::string why;
    auto bytes = inspect::parse_hex(string_field(object, key, where), why);
    if (!bytes) throw RequestError(std::string(where) + "." + key + ": " + why);
    return std::move(*bytes);
}

}  // namespace andromeda::playground
