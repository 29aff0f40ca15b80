// The only translation unit that includes toml11 (it is slow to compile). Converts toml11's
// value tree into TomlNode and its syntax errors into ValidationError.
#include <toml.hpp>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "fabric/toml_tree.hpp"

namespace andromeda::fabric::detail {

namespace {

using Kind = TomlNode::Kind;

// Maps byte offsets to 1-based line numbers (toml11's own line lookup counts newlines from the
// start of the file on every call, quadratic over a large file).
class LineIndex {
public:
    explicit LineIndex(std::string_view text) {
        line_starts_.push_back(0);
        for (std::size_t i = 0; i < text.size(); ++i)
            if (text[i] == '\n') line_starts_.push_back(i + 1);
    }
    [[nodiscard]] std::uint32_t line_of(std::size_t offset) const {
        const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
        return static_cast<std::uint32_t>(it - line_starts_.begin());
    }

private:
    std::vector<std::size_t> line_starts_;
};

std::uint32_t line_of(const toml::value& value, const LineIndex& lines) {
    const auto* region = dynamic_cast<const toml::detail::region*>(toml::detail::get_region(value));
    if (region == nullptr || !region->is_ok()) return 0;
    return lines.line_of(static_cast<std::size_t>(region->first() - region->begin()));
}

TomlNode convert(const toml::value& value, const LineIndex& lines) {
    TomlNode node;
    node.line = line_of(value, lines);
    switch (value.type()) {
    case toml::value_t::table:
        node.kind = Kind::table;
        for (const auto& [key, member] : value.as_table()) node.members.push_back({key, convert(member, lines)});
        // toml11 keeps tables unordered; file order makes errors come out in reading order.
        std::sort(node.members.begin(), node.members.end(), [](const auto& a, const auto& b) {
            return a.second.line != b.second.line ? a.second.line < b.second.line : a.first < b.first;
        });
        break;
    case toml::value_t::array:
        node.kind = Kind::array;
        for (const auto& item : value.as_array()) node.items.push_back(convert(item, lines));
        break;
    case toml::value_t::string: node.kind = Kind::string; node.text = value.as_string().str; break;
    case toml::value_t::integer: node.kind = Kind::integer; node.integer = value.as_integer(); break;
    case toml::value_t::boolean: node.kind = Kind::boolean; node.boolean = value.as_boolean(); break;
    default: {
        node.kind = Kind::other;
        std::ostringstream type;
        type << value.type();
        node.text = type.str();
        break;
    }
    }
    return node;
}

// toml11 messages look like "[error] toml::parse_key_value: <what>\n --> file\n 12 | ...".
ValidationError syntax_error(const std::string& file, const std::string& message, std::uint32_t fallback_line) {
    ValidationError error;
    error.file = file;
    error.line = fallback_line;
    std::istringstream in(message);
    std::string first;
    std::getline(in, first);
    if (first.rfind("[error] ", 0) == 0) first.erase(0, 8);
    if (first.rfind("toml::", 0) == 0) {
        if (const auto colon = first.find(": "); colon != std::string::npos) first.erase(0, colon + 2);
    }
    // The numbered source lines quoted below the message; for "defined twice" errors the
    // first is the earlier definition and the last the offending one.
    std::vector<std::uint32_t> quoted_lines;
    for (std::string text; std::getline(in, text);) {
        const std::size_t i = text.find_first_not_of(' ');
        const std::size_t digits_end = i == std::string::npos ? i : text.find_first_not_of("0123456789", i);
        if (i != std::string::npos && digits_end != std::string::npos && digits_end > i && digits_end - i < 9 &&
            text.compare(digits_end, 2, " |") == 0)
            quoted_lines.push_back(static_cast<std::uint32_t>(std::stoul(text.substr(i, digits_end - i))));
    }
    if (!first.empty() && first.back() == '.') first.pop_back();
    if (!quoted_lines.empty()) error.line = quoted_lines.back();
    if (quoted_lines.size() > 1 && quoted_lines.front() != quoted_lines.back())
        first += " (first at line " + std::to_string(quoted_lines.front()) + ")";
    error.problem = "TOML syntax error: " + first;
    error.expected = "the file must be valid TOML 1.0 (https://toml.io)";
    return error;
}

}  // namespace

std::optional<TomlNode> parse_toml_full(std::string_view text, const std::string& file_name,
                                        ValidationError& error) {
    if (max_nesting_depth(text) > kMaxNestingDepth) {
        error = {file_name, 0, "", "arrays or inline tables nested more than " + std::to_string(kMaxNestingDepth) +
                                       " levels deep", "node.toml needs at most 2 levels"};
        return std::nullopt;
    }
    if (const auto bad = first_invalid_utf8(text)) {
        const auto line = static_cast<std::uint32_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(*bad), '\n') + 1);
        char byte[8];
        std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(text[*bad]));
        error = {file_name, line, "", std::string("invalid UTF-8 (byte ") + byte + ")",
                 "TOML files must be UTF-8; re-save the file as UTF-8"};
        return std::nullopt;
    }
    try {
        std::istringstream stream{std::string(text)};
        const toml::value root = toml::parse(stream, file_name);
        const LineIndex lines(text);
        return convert(root, lines);
    } catch (const toml::exception& e) {
        error = syntax_error(file_name, e.what(), e.location().line());
    } catch (const std::exception& e) {
        error = syntax_error(file_name, e.what(), 0);
    }
    return std::nullopt;
}

}  // namespace andromeda::fabric::detail
