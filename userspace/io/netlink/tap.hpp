// Tap devices as tenant ports (a VM's QEMU reads and writes the tap; docs/vm-tenants.md): making
// one the way QEMU expects to find it, and telling a tap from other interfaces.
#pragma once

#include <cstdint>
#include <string>

#include "io/netlink/interfaces.hpp"

namespace andromeda::io {

// Creates the persistent tap `name`: IFF_TAP | IFF_NO_PI | IFF_VNET_HDR, owned by root, which QEMU
// attaches to with `-netdev tap,ifname=<name>,script=no,downscript=no` (its vnet_hdr and offloads
// are the guest's to set); with `multi_queue`, IFF_MULTI_QUEUE too, for `queues=N` (N > 1: QEMU
// opens a queue per guest queue pair, and a single-queue tap refuses a second). Returns its
// ifindex. Throws IoError naming what failed (no /dev/net/tun, the name taken, ...).
std::uint32_t create_tap(const std::string& name, bool multi_queue = false);

// The interface is a tap: the tun driver in TAP mode (IFLA_TUN_TYPE is IFF_TAP).
[[nodiscard]] bool is_tap(const InterfaceInfo& link);
// A tap made with IFF_MULTI_QUEUE.
[[nodiscard]] bool is_multi_queue_tap(const InterfaceInfo& link);

}  // namespace andromeda::io
