// Internal: a small TOML document tree the schema decoder walks, with a line number on every
// value. Two parsers fill it: a subset reader for the plain subset of TOML that node.toml files use
// (a 100,000-endpoint fabric parses in tens of milliseconds), and toml11 for everything else,
// which also produces the syntax errors. Not part of the public API; toml11 stays in one .cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fabric/errors.hpp"

namespace andromeda::fabric::detail {

struct TomlMember;

struct TomlNode {
    enum class Kind : std::uint8_t { table, array, string, integer, boolean, other };

    Kind kind = Kind::table;
    bool array_of_tables = false;  // an array made by [[header]] (the subset reader appends to it)
    std::uint32_t line = 0;        // 1-based; 0 when the parser could not tell
    std::string text;              // string value; for `other` the TOML type (float, datetime...)
    std::int64_t integer = 0;
    bool boolean = false;
    std::vector<TomlMember> members;  // table members in file order
    std::vector<TomlNode> items;                            // array items

    [[nodiscard]] const TomlNode* find(std::string_view key) const noexcept;
    TomlNode* find(std::string_view key) noexcept;
};

struct TomlMember {
    std::string first;  // the key
    TomlNode second;
};

[[nodiscard]] const char* kind_name(TomlNode::Kind kind) noexcept;

// nullopt when the text uses anything outside the subset (or is not valid TOML): the caller
// then hands it to the full parser, which either accepts it or says precisely what is wrong.
[[nodiscard]] std::optional<TomlNode> parse_toml_subset(std::string_view text);

// toml11. On a syntax error returns nullopt and fills `error`.
[[nodiscard]] std::optional<TomlNode> parse_toml_full(std::string_view text, const std::string& file_name,
                                                      ValidationError& error);

// The subset reader first, toml11 when it declines.
[[nodiscard]] std::optional<TomlNode> parse_toml(std::string_view text, const std::string& file_name,
                                                 ValidationError& error);

// Same keys, kinds and values (and lines of scalars); member order is ignored. For the fuzzer,
// which checks that the two parsers agree wherever the subset reader accepts an input.
[[nodiscard]] bool same_document(const TomlNode& a, const TomlNode& b);

// Deepest bracket/brace nesting outside strings and comments. toml11 parses arrays and inline
// tables recursively, so the loader refuses absurd nesting before it can exhaust the stack.
[[nodiscard]] std::size_t max_nesting_depth(std::string_view text) noexcept;
inline constexpr std::size_t kMaxNestingDepth = 32;

// Offset of the first byte that is not part of well-formed UTF-8 (RFC 3629), or nullopt. TOML
// must be UTF-8, and toml11 3.7 overruns its buffer reporting some invalid sequences, so the
// loader checks first and reports it itself.
[[nodiscard]] std::optional<std::size_t> first_invalid_utf8(std::string_view text) noexcept;

}  // namespace andromeda::fabric::detail
