// The maps of the Andromeda XDP object, by role. The BPF names carry the andromeda_ prefix
// (`bpftool map list` shows them); the pins under the instance directory drop it
// (/sys/fs/bpf/andromeda/<node>/fabric).
#pragma once

#include <array>
#include <cstdint>

namespace andromeda::io {

enum class MapId : std::uint8_t {
    xsks, ports, peers, vnis, fabric, nat_addrs, stats, daemon_stats, fp_config, fp_stats, fp_ip_id, vpc_cidrs, nat_flows,
    punt_limits, peer_mtu, policy_flows, fabric6, policy_flows6
};

inline constexpr std::array<MapId, 18> kAllMaps = {
    MapId::xsks,         MapId::ports,     MapId::peers,    MapId::vnis,     MapId::fabric,
    MapId::nat_addrs,    MapId::stats,     MapId::daemon_stats, MapId::fp_config, MapId::fp_stats,
    MapId::fp_ip_id,     MapId::vpc_cidrs, MapId::nat_flows, MapId::punt_limits, MapId::peer_mtu,
    MapId::policy_flows, MapId::fabric6, MapId::policy_flows6};
inline constexpr std::size_t kMapCount = kAllMaps.size();

[[nodiscard]] constexpr const char* pin_name(MapId id) noexcept {
    constexpr const char* names[] = {"xsks",         "ports",     "peers",    "vnis",    "fabric",  "nat_addrs",
                                     "stats",        "daemon_stats", "fp_config", "fp_stats", "fp_ip_id",
                                     "vpc_cidrs",    "nat_flows", "punt_limits", "peer_mtu", "policy_flows",
                                     "fabric6",      "policy_flows6"};
    return names[static_cast<std::size_t>(id)];
}

[[nodiscard]] constexpr const char* bpf_name(MapId id) noexcept {
    constexpr const char* names[] = {"andromeda_xsks",      "andromeda_ports",        "andromeda_peers",
                                     "andromeda_vnis",      "andromeda_fabric",       "andromeda_nat_addrs",
                                     "andromeda_stats",     "andromeda_daemon_stats", "andromeda_fp_config",
                                     "andromeda_fp_stats",  "andromeda_fp_ip_id",     "andromeda_vpc_cidrs",
                                     "andromeda_nat_flows", "andromeda_punt_limits", "andromeda_peer_mtu",
                                     "andromeda_policy_flows", "andromeda_fabric6", "andromeda_policy_flows6"};
    return names[static_cast<std::size_t>(id)];
}

}  // namespace andromeda::io
