// The TOML subset reader: line-oriented, for the subset hand-written node.toml files use.
// Anything else (quoted or dotted keys, escapes, multi-line values, inline tables, floats,
// dates, non-ASCII, re-opened tables, ...) returns nullopt and the full parser takes over, so
// this parser never has to be right about the corners of TOML, only about what it accepts.
#include <algorithm>

#include "fabric/toml_tree.hpp"

namespace andromeda::fabric::detail {

namespace {

using Kind = TomlNode::Kind;

bool is_bare_key_char(char c) noexcept {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// Printable ASCII and tab; the subset leaves everything else to toml11.
bool is_plain_line(std::string_view line) noexcept {
    return std::all_of(line.begin(), line.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return c == '\t' || (u >= 0x20 && u < 0x7f);
    });
}

class LineCursor {
public:
    explicit LineCursor(std::string_view line) : line_(line) {}

    void skip_space() noexcept {
        while (pos_ < line_.size() && (line_[pos_] == ' ' || line_[pos_] == '\t')) ++pos_;
    }
    [[nodiscard]] bool at_end() const noexcept { return pos_ >= line_.size(); }
    [[nodiscard]] char peek(std::size_t ahead = 0) const noexcept {
        return pos_ + ahead < line_.size() ? line_[pos_ + ahead] : '\0';
    }
    bool consume(char c) noexcept {
        if (peek() != c) return false;
        ++pos_;
        return true;
    }
    // Only whitespace and an optional comment may follow a complete statement.
    [[nodiscard]] bool rest_is_blank() noexcept {
        skip_space();
        return at_end() || peek() == '#';
    }
    std::string_view bare_key() noexcept {
        const std::size_t start = pos_;
        while (pos_ < line_.size() && is_bare_key_char(line_[pos_])) ++pos_;
        return line_.substr(start, pos_ - start);
    }
    // Characters up to (not including) `quote`; nullopt if the line ends first or an escape
    // appears (escapes are for the full parser).
    std::optional<std::string_view> quoted(char quote) noexcept {
        const std::size_t start = pos_;
        while (pos_ < line_.size() && line_[pos_] != quote) {
            if (line_[pos_] == '\\' && quote == '"') return std::nullopt;
            ++pos_;
        }
        if (pos_ >= line_.size()) return std::nullopt;
        return line_.substr(start, pos_++ - start);
    }
    [[nodiscard]] bool at_delimiter() const noexcept {
        const char c = peek();
        return c == '\0' || c == ' ' || c == '\t' || c == ',' || c == ']' || c == '#';
    }
    void advance(std::size_t n) noexcept { pos_ += n; }

private:
    std::string_view line_;
    std::size_t pos_ = 0;
};

std::optional<TomlNode> parse_integer(LineCursor& cur, std::uint32_t line) {
    bool negative = false;
    if (cur.peek() == '+' || cur.peek() == '-') {
        negative = cur.peek() == '-';
        cur.advance(1);
    }
    std::int64_t value = 0;
    int digits = 0;
    const bool leading_zero = cur.peek() == '0';
    while (cur.peek() >= '0' && cur.peek() <= '9') {
        if (++digits > 18) return std::nullopt;  // longer ones may overflow: toml11 decides
        value = value * 10 + (cur.peek() - '0');
        cur.advance(1);
    }
    if (digits == 0 || (leading_zero && digits > 1) || !cur.at_delimiter()) return std::nullopt;
    TomlNode node;
    node.kind = Kind::integer;
    node.integer = negative ? -value : value;
    node.line = line;
    return node;
}

std::optional<TomlNode> parse_scalar(LineCursor& cur, std::uint32_t line) {
    const char c = cur.peek();
    if (c == '"' || c == '\'') {
        if (cur.peek(1) == c && cur.peek(2) == c) return std::nullopt;  // multi-line string
        cur.advance(1);
        auto text = cur.quoted(c);
        if (!text) return std::nullopt;
        TomlNode node;
        node.kind = Kind::string;
        node.text = std::string(*text);
        node.line = line;
        return node;
    }
    if (c == 't' || c == 'f') {
        const std::string_view word = cur.bare_key();
        if ((word != "true" && word != "false") || !cur.at_delimiter()) return std::nullopt;
        TomlNode node;
        node.kind = Kind::boolean;
        node.boolean = word == "true";
        node.line = line;
        return node;
    }
    if ((c >= '0' && c <= '9') || c == '+' || c == '-') return parse_integer(cur, line);
    return std::nullopt;
}

// A one-line array of scalars of one kind.
std::optional<TomlNode> parse_array(LineCursor& cur, std::uint32_t line) {
    cur.advance(1);  // '['
    TomlNode array;
    array.kind = Kind::array;
    array.line = line;
    for (;;) {
        cur.skip_space();
        if (cur.consume(']')) return array;
        auto item = parse_scalar(cur, line);
        if (!item || (!array.items.empty() && item->kind != array.items.front().kind)) return std::nullopt;
        array.items.push_back(std::move(*item));
        cur.skip_space();
        if (cur.consume(']')) return array;
        if (!cur.consume(',')) return std::nullopt;
    }
}

class SubsetParser {
public:
    explicit SubsetParser(std::string_view text) : text_(text) { root_.line = 1; }

    std::optional<TomlNode> run() {
        current_ = &root_;
        std::size_t pos = 0;
        while (pos < text_.size()) {
            std::size_t end = text_.find('\n', pos);
            const bool newline = end != std::string_view::npos;
            if (!newline) end = text_.size();
            std::string_view line = text_.substr(pos, end - pos);
            pos = end + 1;
            ++line_;
            // CR LF ends a line; a CR without its LF (at the end of the file) is a stray control
            // character, which only the full reader reports.
            if (newline && !line.empty() && line.back() == '\r') line.remove_suffix(1);
            if (!is_plain_line(line) || !statement(line)) return std::nullopt;
        }
        return std::move(root_);
    }

private:
    bool statement(std::string_view line) {
        LineCursor cur(line);
        if (cur.rest_is_blank()) return true;
        if (cur.peek() == '[') return header(cur);
        return key_value(cur);
    }

    bool header(LineCursor& cur) {
        cur.advance(1);
        const bool array_of_tables = cur.consume('[');
        std::vector<std::string_view> path;
        do {
            cur.skip_space();
            const std::string_view key = cur.bare_key();
            if (key.empty()) return false;
            path.push_back(key);
            cur.skip_space();
        } while (cur.consume('.'));
        if (!cur.consume(']') || (array_of_tables && !cur.consume(']')) || !cur.rest_is_blank()) return false;
        TomlNode* table = &root_;
        for (std::size_t i = 0; i + 1 < path.size(); ++i) {
            table = descend(*table, path[i]);
            if (table == nullptr) return false;
        }
        current_ = array_of_tables ? append_table(*table, path.back()) : define_table(*table, path.back());
        return current_ != nullptr;
    }

    // An intermediate key of a header: an existing table, the last table of an array of
    // tables, or a new implicit table.
    TomlNode* descend(TomlNode& table, std::string_view key) {
        TomlNode* child = table.find(key);
        if (child == nullptr) return &add_member(table, key, Kind::table);
        if (child->kind == Kind::table) return child;
        if (child->kind == Kind::array && child->array_of_tables) return &child->items.back();
        return nullptr;
    }

    // Re-opening or re-defining a table has rules the full parser knows; decline it.
    TomlNode* define_table(TomlNode& table, std::string_view key) {
        if (table.find(key) != nullptr) return nullptr;
        return &add_member(table, key, Kind::table);
    }

    TomlNode* append_table(TomlNode& table, std::string_view key) {
        TomlNode* array = table.find(key);
        if (array == nullptr) {
            array = &add_member(table, key, Kind::array);
            array->array_of_tables = true;
        } else if (array->kind != Kind::array || !array->array_of_tables) {
            return nullptr;
        }
        TomlNode element;
        element.line = line_;
        array->items.push_back(std::move(element));
        return &array->items.back();
    }

    bool key_value(LineCursor& cur) {
        const std::string_view key = cur.bare_key();
        cur.skip_space();
        if (key.empty() || !cur.consume('=') || current_->find(key) != nullptr) return false;
        cur.skip_space();
        std::optional<TomlNode> value = cur.peek() == '[' ? parse_array(cur, line_) : parse_scalar(cur, line_);
        if (!value || !cur.rest_is_blank()) return false;
        current_->members.push_back({std::string(key), std::move(*value)});
        return true;
    }

    TomlNode& add_member(TomlNode& table, std::string_view key, Kind kind) {
        TomlNode node;
        node.kind = kind;
        node.line = line_;
        table.members.push_back({std::string(key), std::move(node)});
        return table.members.back().second;
    }

    std::string_view text_;
    std::uint32_t line_ = 0;
    TomlNode root_;
    TomlNode* current_ = nullptr;
};

}  // namespace

const TomlNode* TomlNode::find(std::string_view key) const noexcept {
    for (const auto& [name, value] : members)
        if (name == key) return &value;
    return nullptr;
}

TomlNode* TomlNode::find(std::string_view key) noexcept {
    for (auto& [name, value] : members)
        if (name == key) return &value;
    return nullptr;
}

const char* kind_name(TomlNode::Kind kind) noexcept {
    switch (kind) {
        case Kind::table:
            return "a table";
        case Kind::array:
            return "an array";
        case Kind::string:
            return "a string";
        case Kind::integer:
            return "an integer";
        case Kind::boolean:
            return "a boolean";
        case Kind::other:
            break;
    }
    return "another type";
}

std::optional<TomlNode> parse_toml_subset(std::string_view text) { return SubsetParser(text).run(); }

}  // namespace andromeda::fabric::detail
