#include "daemon/daemon_support.hpp"

#include <filesystem>

namespace andromeda::daemon {

namespace {

// The local node is always index 0 of FabricSnapshot::nodes().
constexpr std::uint32_t kLocalNodeIndex = 0;

bool translated_here(const fabric::Vpc& vpc) noexcept {
    return vpc.nat && vpc.nat->gateway_node_index == kLocalNodeIndex;
}

}  // namespace

bool serves_nat(const fabric::FabricSnapshot& snapshot) noexcept {
    for (const fabric::Vpc& vpc : snapshot.vpcs())
        if (translated_here(vpc)) return true;
    return false;
}

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
