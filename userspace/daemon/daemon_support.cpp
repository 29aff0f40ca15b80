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

std::shared_ptr<const nat::NatRules> nat_rules_for(const fabric::FabricSnapshot& snapshot) {
    std::vector<nat::VpcNatConfig> vpcs;
    for (const fabric::Vpc& vpc : snapshot.vpcs()) {
        if (!translated_here(vpc)) continue;
        nat::VpcNatConfig config;
        config.vni = vpc.vni;
        config.nat_address = vpc.nat->address;
        config.port_min = vpc.nat->port_min;
        config.port_max = vpc.nat->port_max;
        for (const fabric::NatForward& f : vpc.nat->forwards)
            config.forwards.push_back(nat::PortForward{
                f.protocol == fabric::NatProtocol::udp ? nat::Protocol::udp : nat::Protocol::tcp, f.nat_port,
                f.endpoint_ip, f.endpoint_port});
        vpcs.push_back(std::move(config));
    }
    return std::make_shared<const nat::NatRules>(std::move(vpcs));
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
