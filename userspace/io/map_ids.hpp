// The maps of the Andromeda XDP object, by role. The BPF names carry the andromeda_ prefix
// (`bpftool map list` shows them); the pins under the instance directory drop it
// (/sys/fs/bpf/andromeda/<node>/fabric).
#pragma once

#include <array>
#include <cstdint>

namespace andromeda::io {

enum class MapId : std::uint8_t { xsks, ports, peers, vnis, fabric, nat_addrs, stats, daemon_stats };

inline constexpr std::array<MapId, 8> kAllMaps = {MapId::xsks,   MapId::ports,     MapId::peers, MapId::vnis,
                                                  MapId::fabric, MapId::nat_addrs, MapId::stats, MapId::daemon_stats};
inline constexpr std::size_t kMapCount = kAllMaps.size();

[[nodiscard]] constexpr const char* pin_name(MapId id) noexcept {
    constexpr const char* names[] = {"xsks", "ports", "peers", "vnis", "fabric", "nat_addrs", "stats", "daemon_stats"};
    return names[static_cast<std::size_t>(id)];
}

[[nodiscard]] constexpr const char* bpf_name(MapId id) noexcept {
    constexpr const char* names[] = {"andromeda_xsks",   "andromeda_ports",     "andromeda_peers", "andromeda_vnis",
                                     "andromeda_fabric", "andromeda_nat_addrs", "andromeda_stats", "andromeda_daemon_stats"};
    return names[static_cast<std::size_t>(id)];
}

}  // namespace andromeda::io
