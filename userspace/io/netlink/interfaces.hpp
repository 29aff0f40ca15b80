// Interface facts over netlink and ethtool ioctls, in the calling thread's network namespace.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wire/addresses.hpp"

namespace andromeda::io {

struct InterfaceInfo {
    std::string name;
    std::uint32_t ifindex = 0;
    wire::MacAddress mac;
    std::uint32_t mtu = 0;
    bool up = false;  // administratively up (IFF_UP)
    // RX queues the driver reports (ETHTOOL_GCHANNELS rx + combined); 1 when it cannot say.
    std::uint32_t rx_queues = 1;
    std::string driver;  // ETHTOOL_GDRVINFO ("veth", "mlx5_core"); empty when unknown
    // The XDP program attached, as the kernel reports it (IFLA_XDP): 0 when none.
    std::uint32_t xdp_prog_id = 0;
    std::uint8_t xdp_attached = 0;  // XDP_ATTACHED_NONE / DRV / SKB / HW / MULTI
    // A veth's peer (IFLA_LINK) and, when the peer lives in another namespace, that
    // namespace's id as seen from here (IFLA_LINK_NETNSID).
    std::uint32_t link_ifindex = 0;
    std::optional<std::int32_t> link_netnsid;
    // A tun-driver device's kind and queues, as the kernel reports them (IFLA_LINKINFO "tun":
    // IFLA_TUN_TYPE, IFLA_TUN_MULTI_QUEUE); tun_type 0 when the device is not one, or the kernel
    // does not say.
    std::uint8_t tun_type = 0;  // IFF_TUN (1) or IFF_TAP (2)
    bool tun_multi_queue = false;
};

// nullopt when no such interface exists in this network namespace. Throws IoError when
// netlink itself fails.
[[nodiscard]] std::optional<InterfaceInfo> find_interface(std::string_view name);
[[nodiscard]] std::optional<InterfaceInfo> find_interface(std::uint32_t ifindex);
// Like find_interface, but a missing interface is an IoError that says what to check.
[[nodiscard]] InterfaceInfo require_interface(std::string_view name);

// Sets the interface administratively up or down (IFF_UP), by ifindex. False when there is no
// such interface; throws IoError when netlink refuses.
bool set_link_up(std::uint32_t ifindex, bool up);

// The interface's IPv4 addresses (RTM_GETADDR), primary first.
[[nodiscard]] std::vector<wire::Ipv4Address> interface_ipv4_addresses(std::uint32_t ifindex);
// Its IPv6 addresses (link-local ones included).
[[nodiscard]] std::vector<wire::Ipv6Address> interface_ipv6_addresses(std::uint32_t ifindex);

// ETHTOOL_GCHANNELS: rx + combined channels; 1 when the driver does not implement it.
[[nodiscard]] std::uint32_t rx_queue_count(std::string_view ifname);
// ETHTOOL_GTXCSUM: whether the interface leaves TX checksums to offload. nullopt when the
// driver cannot say. A punt pair's visible end has it off (io/punt_pair.hpp): what the tenant
// sends CHECKSUM_PARTIAL gets its checksum finished there, before XDP and AF_XDP see it.
[[nodiscard]] std::optional<bool> tx_checksum_offload(std::string_view ifname);

}  // namespace andromeda::io
