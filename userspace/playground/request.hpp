// Internal to the playground's engine: reading a request's fields, each failure a RequestError
// whose message names the field's path and what would be valid ("packet.ttl: must be a whole
// number from 0 to 255").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fabric/errors.hpp"
#include "wire/addresses.hpp"

namespace andromeda::playground {

// A request the engine cannot serve: handle() answers {"ok": false, "error": what()}.
struct RequestError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A fabric text the loader refused: the answer carries the loader's own errors too, one
// `file:line: key: what; what would be valid` each.
struct FabricLoadError : RequestError {
    explicit FabricLoadError(fabric::ValidationErrors loader_errors);
    fabric::ValidationErrors errors;
};

const nlohmann::json& member(const nlohmann::json& object, const char* key, std::string_view where);
std::string string_field(const nlohmann::json& object, const char* key, std::string_view where);
// The string at `key`, or `fallback` when the key is missing or null.
std::string string_field_or(const nlohmann::json& object, const char* key, std::string_view where,
                            std::string fallback);
std::uint64_t number_field(const nlohmann::json& object, const char* key, std::string_view where, std::uint64_t min,
                           std::uint64_t max, std::optional<std::uint64_t> fallback = std::nullopt);
wire::MacAddress mac_field(const nlohmann::json& object, const char* key, std::string_view where);
wire::Ipv4Address ipv4_field(const nlohmann::json& object, const char* key, std::string_view where);
std::vector<std::uint8_t> hex_field(const nlohmann::json& object, const char* key, std::string_view where);

}  // namespace andromeda::playground
