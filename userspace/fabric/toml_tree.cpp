#include <algorithm>

#include "fabric/toml_tree.hpp"

namespace andromeda::fabric::detail {

namespace {

// Index just past the string that starts at `i` (at its opening quote).
std::size_t skip_string(std::string_view text, std::size_t i) noexcept {
    const char quote = text[i];
    const bool escapes = quote == '"';
    const bool multi_line = text.substr(i, 3) == std::string_view(quote == '"' ? "\"\"\"" : "'''");
    i += multi_line ? 3 : 1;
    while (i < text.size()) {
        const char c = text[i];
        if (escapes && c == '\\') {
            i += 2;
            continue;
        }
        if (!multi_line && c == '\n') return i;
        if (c == quote) {
            if (!multi_line) return i + 1;
            if (i + 2 < text.size() && text[i + 1] == quote && text[i + 2] == quote) return i + 3;
        }
        ++i;
    }
    return i;
}

bool same_members(const TomlNode& a, const TomlNode& b) {
    if (a.members.size() != b.members.size()) return false;
    for (const auto& [key, value] : a.members) {
        const TomlNode* other = b.find(key);
        if (other == nullptr || !same_document(value, *other)) return false;
    }
    return true;
}

}  // namespace

std::size_t max_nesting_depth(std::string_view text) noexcept {
    std::size_t depth = 0;
    std::size_t deepest = 0;
    std::size_t i = 0;
    while (i < text.size()) {
        const char c = text[i];
        if (c == '"' || c == '\'') {
            i = skip_string(text, i);
            continue;
        }
        if (c == '#') {
            while (i < text.size() && text[i] != '\n') ++i;
            continue;
        }
        if (c == '[' || c == '{') deepest = std::max(deepest, ++depth);
        if ((c == ']' || c == '}') && depth > 0) --depth;
        ++i;
    }
    return deepest;
}

std::optional<std::size_t> first_invalid_utf8(std::string_view text) noexcept {
    std::size_t i = 0;
    while (i < text.size()) {
        const auto lead = static_cast<unsigned char>(text[i]);
        if (lead < 0x80) {
            ++i;
            continue;
        }
        // Length and the valid range of the first continuation byte (excludes overlong forms,
        // surrogates and code points above U+10FFFF).
        std::size_t length = 0;
        unsigned char low = 0x80, high = 0xBF;
        if (lead >= 0xC2 && lead <= 0xDF) length = 2;
        else if (lead == 0xE0) length = 3, low = 0xA0;
        else if (lead == 0xED) length = 3, high = 0x9F;
        else if (lead >= 0xE1 && lead <= 0xEF) length = 3;
        else if (lead == 0xF0) length = 4, low = 0x90;
        else if (lead >= 0xF1 && lead <= 0xF3) length = 4;
        else if (lead == 0xF4) length = 4, high = 0x8F;
        else return i;
        if (i + length > text.size()) return i;
        for (std::size_t k = 1; k < length; ++k) {
            const auto c = static_cast<unsigned char>(text[i + k]);
            if (c < (k == 1 ? low : 0x80) || c > (k == 1 ? high : 0xBF)) return i;
        }
        i += length;
    }
    return std::nullopt;
}

bool same_document(const TomlNode& a, const TomlNode& b) {
    if (a.kind != b.kind) return false;
    switch (a.kind) {
    case TomlNode::Kind::table: return same_members(a, b);
    case TomlNode::Kind::array:
        if (a.items.size() != b.items.size()) return false;
        for (std::size_t i = 0; i < a.items.size(); ++i)
            if (!same_document(a.items[i], b.items[i])) return false;
        return true;
    case TomlNode::Kind::string: return a.line == b.line && a.text == b.text;
    case TomlNode::Kind::integer: return a.line == b.line && a.integer == b.integer;
    case TomlNode::Kind::boolean: return a.line == b.line && a.boolean == b.boolean;
    case TomlNode::Kind::other: return a.text == b.text;
    }
    return false;
}

std::optional<TomlNode> parse_toml(std::string_view text, const std::string& file_name, ValidationError& error) {
    if (auto subset = parse_toml_subset(text)) return subset;
    return parse_toml_full(text, file_name, error);
}

}  // namespace andromeda::fabric::detail
