#include "daemon/daemon_support.hpp"

#include <filesystem>

namespace andromeda::daemon {

std::string absolute_path(const std::string& path) {
    std::error_code ec;
    const auto p = std::filesystem::absolute(path, ec);
    return ec ? path : p.lexically_normal().string();
}

std::string join_lines(const std::string& title, const std::vector<std::string>& lines) {
    std::string out = title;
    for (const auto& line : lines) out += "\n  " + line;
    return out;
}

}  // namespace andromeda::daemon
