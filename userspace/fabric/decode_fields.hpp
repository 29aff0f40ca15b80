// Internal: typed field access over a TomlNode table, each failure recorded as a
// ValidationError with the file, line and key path.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "fabric/errors.hpp"
#include "fabric/model.hpp"
#include "fabric/toml_tree.hpp"

namespace andromeda::fabric::detail {

// The valid range of an integer key, how the error names it, and a value for examples.
struct IntegerRange {
    std::int64_t min;
    std::int64_t max;
    std::int64_t typical;
    std::string_view what;  // "a VNI has 24 bits; valid" -> "...; a VNI has 24 bits; valid is 1 to 16777215"
};

class FieldReader {
public:
    FieldReader(const std::string& file_name, ValidationErrors& errors) : file_(file_name), errors_(errors) {}

    void error(std::uint32_t line, std::string key, std::string problem, std::string expected);
    [[nodiscard]] const std::string& file_name() const noexcept { return file_; }

    // Reports every key of `table` that is not in `allowed`, suggesting the nearest valid one.
    void reject_unknown_keys(const TomlNode& table, const std::string& path,
                             std::initializer_list<std::string_view> allowed);

    // The member `key` if it has the wanted kind; reports it missing (when required) or of
    // the wrong kind. `example` is a valid assignment shown in the message.
    const TomlNode* member(const TomlNode& table, const std::string& path, std::string_view key,
                           TomlNode::Kind kind, bool required, std::string_view example);

    std::optional<std::string> string(const TomlNode& table, const std::string& path, std::string_view key,
                                      bool required, std::string_view example, std::uint32_t* line = nullptr);
    std::optional<std::int64_t> integer(const TomlNode& table, const std::string& path, std::string_view key,
                                        bool required, const IntegerRange& range, std::uint32_t* line = nullptr);
    std::optional<Ipv4Address> ipv4(const TomlNode& table, const std::string& path, std::string_view key,
                                    bool required, std::uint32_t* line = nullptr);
    // A node's underlay address: IPv4, or a unicast IPv6 address that needs no zone.
    std::optional<wire::IpAddress> underlay_address(const TomlNode& table, const std::string& path, std::string_view key,
                                                    bool required, std::uint32_t* line = nullptr);
    // `key = true|false`; `fallback` when absent (or of the wrong kind, which is reported).
    bool boolean(const TomlNode& table, const std::string& path, std::string_view key, bool fallback);
    std::optional<MacAddress> mac(const TomlNode& table, const std::string& path, std::string_view key,
                                  bool required, std::uint32_t* line = nullptr);
    std::optional<Ipv4Prefix> prefix(const TomlNode& value, const std::string& path);

    // An array of tables such as [[vpc]]; reports a single [vpc] table or another type.
    const TomlNode* table_array(const TomlNode& table, const std::string& path, std::string_view key);
    const TomlNode* table(const TomlNode& parent, const std::string& path, std::string_view key, bool required);

private:
    const std::string& file_;
    ValidationErrors& errors_;
};

[[nodiscard]] std::string join_path(const std::string& path, std::string_view key);
// Node, VPC and security group names (they end up in paths and logs): 1 to 64 letters, digits,
// '-', '_' or '.'.
[[nodiscard]] bool is_valid_name(std::string_view name);
[[nodiscard]] std::string quoted(std::string_view text);


}  // namespace andromeda::fabric::detail
