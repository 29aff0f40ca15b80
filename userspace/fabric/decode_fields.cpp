#include "fabric/decode_fields.hpp"

#include <algorithm>
#include <vector>

namespace andromeda::fabric::detail {

namespace {

using Kind = TomlNode::Kind;

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

std::string describe(const TomlNode& value) {
    if (value.kind == Kind::other) return "a " + value.text;
    return kind_name(value.kind);
}

// "vpc[0].nat" -> "vpc.nat": the header a person writes for a nested array of tables.
std::string without_indexes(const std::string& path) {
    std::string out;
    bool in_index = false;
    for (char c : path) {
        if (c == '[') in_index = true;
        if (!in_index) out += c;
        if (c == ']') in_index = false;
    }
    return out;
}

}  // namespace

bool is_valid_name(std::string_view name) {
    return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
               c == '_' || c == '.';
    });
}

std::string join_path(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string quoted(std::string_view text) {
    std::string out = "\"";
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) {
            static constexpr char kHex[] = "0123456789abcdef";
            out += "\\x";
            out += kHex[u >> 4];
            out += kHex[u & 15];
        } else {
            out += c;
        }
    }
    return out + "\"";
}

void FieldReader::error(std::uint32_t line, std::string key, std::string problem, std::string expected) {
    errors_.push_back({file_, line, std::move(key), std::move(problem), std::move(expected)});
}

void FieldReader::reject_unknown_keys(const TomlNode& table, const std::string& path,
                                      std::initializer_list<std::string_view> allowed) {
    for (const auto& [key, value] : table.members) {
        if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
        std::string valid;
        std::string_view nearest;
        std::size_t nearest_distance = 3;  // suggest only close spellings
        for (auto candidate : allowed) {
            valid += (valid.empty() ? "" : ", ") + std::string(candidate);
            if (const auto d = edit_distance(key, candidate); d < nearest_distance) {
                nearest_distance = d;
                nearest = candidate;
            }
        }
        std::string expected = nearest.empty() ? "" : "did you mean \"" + std::string(nearest) + "\"? ";
        error(value.line != 0 ? value.line : table.line, join_path(path, key), "unknown key " + quoted(key),
              expected + "valid keys here: " + valid);
    }
}

const TomlNode* FieldReader::member(const TomlNode& table, const std::string& path, std::string_view key,
                                    Kind kind, bool required, std::string_view example) {
    const TomlNode* value = table.find(key);
    if (value == nullptr) {
        if (required)
            error(table.line, join_path(path, key), "missing required key", "add it, e.g. " + std::string(example));
        return nullptr;
    }
    if (value->kind != kind) {
        error(value->line, join_path(path, key), "expected " + std::string(kind_name(kind)) + ", found " +
                                                     describe(*value), "e.g. " + std::string(example));
        return nullptr;
    }
    return value;
}

std::optional<std::string> FieldReader::string(const TomlNode& table, const std::string& path,
                                               std::string_view key, bool required, std::string_view example,
                                               std::uint32_t* line) {
    const TomlNode* value = member(table, path, key, Kind::string, required, example);
    if (value == nullptr) return std::nullopt;
    if (line != nullptr) *line = value->line;
    return value->text;
}

std::optional<std::int64_t> FieldReader::integer(const TomlNode& table, const std::string& path,
                                                 std::string_view key, bool required, const IntegerRange& range,
                                                 std::uint32_t* line) {
    const std::string example = std::string(key) + " = " + std::to_string(range.typical);
    const TomlNode* value = member(table, path, key, Kind::integer, required, example);
    if (value == nullptr) return std::nullopt;
    if (line != nullptr) *line = value->line;
    if (value->integer < range.min || value->integer > range.max) {
        error(value->line, join_path(path, key), std::to_string(value->integer) + " is out of range",
              std::string(range.what) + " is " + std::to_string(range.min) + " to " + std::to_string(range.max));
        return std::nullopt;
    }
    return value->integer;
}

std::optional<Ipv4Address> FieldReader::ipv4(const TomlNode& table, const std::string& path, std::string_view key,
                                             bool required, std::uint32_t* line) {
    const std::string example = std::string(key) + " = \"10.0.0.10\"";
    const TomlNode* value = member(table, path, key, Kind::string, required, example);
    if (value == nullptr) return std::nullopt;
    if (line != nullptr) *line = value->line;
    auto address = Ipv4Address::parse(value->text);
    if (!address)
        error(value->line, join_path(path, key), quoted(value->text) + " is not an IPv4 address",
              "expected a dotted quad such as \"10.0.0.10\"");
    return address;
}

std::optional<wire::IpAddress> FieldReader::underlay_address(const TomlNode& table, const std::string& path,
                                                             std::string_view key, bool required, std::uint32_t* line) {
    const std::string example = std::string(key) + " = \"192.0.2.10\" (or an IPv6 address)";
    const TomlNode* value = member(table, path, key, Kind::string, required, example);
    if (value == nullptr) return std::nullopt;
    if (line != nullptr) *line = value->line;
    const auto address = wire::IpAddress::parse(value->text);
    if (!address) {
        error(value->line, join_path(path, key), quoted(value->text) + " is not an IPv4 or IPv6 address",
              "expected a dotted quad such as \"192.0.2.10\" or an IPv6 address such as \"2001:db8::10\"");
        return std::nullopt;
    }
    if (const auto v6 = address->ipv6()) {
        const auto& b = v6->bytes();
        const char* why = b[0] == 0xff                             ? "a multicast address"
                          : (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) ? "a link-local address (it needs a zone)"
                          : *v6 == wire::Ipv6Address{}              ? "the unspecified address"
                          : (std::all_of(b.begin(), b.begin() + 10, [](std::uint8_t x) { return x == 0; }) &&
                             b[10] == 0xff && b[11] == 0xff)
                              ? "an IPv4-mapped address"
                              : nullptr;
        if (why != nullptr) {
            error(value->line, join_path(path, key), quoted(value->text) + " is " + why + ", not a unicast underlay address",
                  "use the node's global or unique-local IPv6 address, or its IPv4 address");
            return std::nullopt;
        }
    }
    return address;
}

bool FieldReader::boolean(const TomlNode& table, const std::string& path, std::string_view key, bool fallback) {
    const std::string example = std::string(key) + " = " + (fallback ? "true" : "false");
    const TomlNode* value = member(table, path, key, Kind::boolean, false, example);
    return value == nullptr ? fallback : value->boolean;
}

std::optional<MacAddress> FieldReader::mac(const TomlNode& table, const std::string& path, std::string_view key,
                                           bool required, std::uint32_t* line) {
    const std::string example = std::string(key) + " = \"02:00:00:00:00:0a\"";
    const TomlNode* value = member(table, path, key, Kind::string, required, example);
    if (value == nullptr) return std::nullopt;
    if (line != nullptr) *line = value->line;
    auto address = MacAddress::parse(value->text);
    if (!address) {
        error(value->line, join_path(path, key), quoted(value->text) + " is not a MAC address",
              "expected six hex bytes such as \"02:00:00:00:00:0a\"");
    } else if (address->is_multicast() || address->is_zero()) {
        error(value->line, join_path(path, key), quoted(value->text) + " is not a unicast MAC address",
              "the first byte must be even and the address not all zeros, e.g. \"02:00:00:00:00:0a\"");
        return std::nullopt;
    }
    return address;
}

std::optional<Ipv4Prefix> FieldReader::prefix(const TomlNode& value, const std::string& path) {
    auto parsed = Ipv4Prefix::parse(value.text);
    if (parsed) return parsed;
    std::string expected = "expected a network address and prefix length such as \"10.0.0.0/24\"";
    // The common mistake, a host address with a length, gets the prefix it probably meant.
    const auto slash = value.text.find('/');
    const auto address = Ipv4Address::parse(std::string_view(value.text).substr(0, slash));
    if (slash != std::string::npos && address && value.text.size() - slash <= 3) {
        const std::string length = value.text.substr(slash + 1);
        if (!length.empty() && std::all_of(length.begin(), length.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
            std::stoi(length) <= 32) {
            const Ipv4Prefix network(*address, static_cast<std::uint8_t>(std::stoi(length)));
            error(value.line, path, quoted(value.text) + " has host bits set",
                  "did you mean \"" + network.to_string() + "\"?");
            return std::nullopt;
        }
    }
    error(value.line, path, quoted(value.text) + " is not a CIDR prefix", expected);
    return std::nullopt;
}

const TomlNode* FieldReader::table_array(const TomlNode& table, const std::string& path, std::string_view key) {
    const TomlNode* value = table.find(key);
    if (value == nullptr) return nullptr;
    const bool all_tables = value->kind == Kind::array &&
                            std::all_of(value->items.begin(), value->items.end(),
                                        [](const TomlNode& item) { return item.kind == Kind::table; });
    if (!all_tables) {
        const std::string header = join_path(without_indexes(path), key);
        error(value->line, join_path(path, key), "expected an array of tables, found " + describe(*value),
              "write each entry under its own [[" + header + "]] header (double brackets)");
        return nullptr;
    }
    return value;
}

const TomlNode* FieldReader::table(const TomlNode& parent, const std::string& path, std::string_view key,
                                   bool required) {
    const std::string header = join_path(path, key);
    return member(parent, path, key, Kind::table, required, "a [" + header + "] section");
}

}  // namespace andromeda::fabric::detail
