// What was built: project()'s version and the git commit of the tree it was built from
// (cmake/Version.cmake writes them at build time).
#pragma once

#include <string>
#include <string_view>

namespace andromeda {

[[nodiscard]] std::string_view version() noexcept;     // "0.1.0"
[[nodiscard]] std::string_view git_commit() noexcept;  // 12 hex digits; empty: not built from git
[[nodiscard]] bool git_modified() noexcept;            // the tree had uncommitted changes

// "0.1.0 (git 176e324abcde)", "0.1.0 (git 176e324abcde, modified)" or
// "0.1.0 (not built from a git checkout)".
[[nodiscard]] std::string version_text();

}  // namespace andromeda
