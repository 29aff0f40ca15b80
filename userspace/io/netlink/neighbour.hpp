// The outer Ethernet header's destination: the next hop's MAC towards a peer node, from the
// kernel's routing and neighbour tables. When the kernel does not know it yet, we ask it to
// resolve (ARP) and wait, bounded. Nothing is hard-coded; a [[nodes]] mac in node.toml is the
// escape hatch for underlays without ARP, and the error message says so.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "wire/addresses.hpp"

namespace andromeda::io {

struct Route {
    std::uint32_t ifindex = 0;
    std::optional<wire::Ipv4Address> gateway;  // unset: the destination is on the link
    std::optional<wire::Ipv4Address> source;   // the preferred source address
};

// RTM_GETROUTE: how the kernel would reach `destination`; nullopt when it has no route.
[[nodiscard]] std::optional<Route> route_to(wire::Ipv4Address destination);

struct Neighbour {
    std::uint32_t ifindex = 0;
    wire::Ipv4Address ip;
    std::optional<wire::MacAddress> mac;
    std::uint16_t state = 0;  // NUD_*

    // Has a link-layer address the kernel itself would send to.
    [[nodiscard]] bool usable() const noexcept;
};

// The neighbour table's entry for `ip` on `ifindex`, nullopt when there is none.
[[nodiscard]] std::optional<Neighbour> find_neighbour(std::uint32_t ifindex, wire::Ipv4Address ip);

enum class ResolveTrigger : std::uint8_t {
    netlink_use,  // RTM_NEWNEIGH with NTF_USE: the kernel starts ARP itself
    udp_probe,    // send one UDP datagram (discard port) to the peer through the normal stack
};

struct NextHop {
    wire::Ipv4Address peer;
    wire::Ipv4Address next_hop;  // the peer itself, or the gateway towards it
    std::uint32_t ifindex = 0;
    wire::MacAddress mac;
    bool resolved_now = false;  // the kernel had to be asked (it was not in the table)
};

// Route, then neighbour; when the neighbour is missing or unresolved, triggers resolution and
// re-reads the table every few milliseconds until `timeout`. Throws IoError naming the peer,
// the interface and the fix when it stays unresolved.
[[nodiscard]] NextHop resolve_next_hop(wire::Ipv4Address peer,
                                       std::chrono::milliseconds timeout = std::chrono::seconds(3),
                                       ResolveTrigger trigger = ResolveTrigger::netlink_use);

}  // namespace andromeda::io
