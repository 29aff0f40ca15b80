// The outer Ethernet header's destination: the next hop's MAC towards a peer node, from the
// kernel's routing and neighbour tables. When the kernel does not know it yet, we ask it to
// resolve (ARP for an IPv4 underlay, Neighbor Discovery for an IPv6 one) and wait, bounded.
// Nothing is hard-coded; a [[nodes]] mac in node.toml is the escape hatch for underlays without
// ARP or ND, and the error message says so. Each lookup has an IPv4 and an IPv6 overload with
// the same behaviour (one implementation, templated over the family).
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

// An IPv6 route; its gateway may be link-local (fe80::/10): it is only ever looked up in the
// neighbour table of `ifindex`, where that is unambiguous.
struct Route6 {
    std::uint32_t ifindex = 0;
    std::optional<wire::Ipv6Address> gateway;  // unset: the destination is on the link
    std::optional<wire::Ipv6Address> source;   // the preferred source address
};

// RTM_GETROUTE: how the kernel would reach `destination`; nullopt when it has no route or an
// unreachable one. A prohibit or blackhole route throws IoError with the kernel's errno.
[[nodiscard]] std::optional<Route> route_to(wire::Ipv4Address destination);
[[nodiscard]] std::optional<Route6> route_to(wire::Ipv6Address destination);

struct Neighbour {
    std::uint32_t ifindex = 0;
    wire::Ipv4Address ip;
    std::optional<wire::MacAddress> mac;
    std::uint16_t state = 0;  // NUD_*

    // Has a link-layer address the kernel itself would send to.
    [[nodiscard]] bool usable() const noexcept;
};

struct Neighbour6 {
    std::uint32_t ifindex = 0;
    wire::Ipv6Address ip;
    std::optional<wire::MacAddress> mac;
    std::uint16_t state = 0;  // NUD_*

    // Has a link-layer address the kernel itself would send to.
    [[nodiscard]] bool usable() const noexcept;
};

// The neighbour table's (ARP or NDP) entry for `ip` on `ifindex`, nullopt when there is none.
[[nodiscard]] std::optional<Neighbour> find_neighbour(std::uint32_t ifindex, wire::Ipv4Address ip);
[[nodiscard]] std::optional<Neighbour6> find_neighbour(std::uint32_t ifindex, wire::Ipv6Address ip);

enum class ResolveTrigger : std::uint8_t {
    netlink_use,  // RTM_NEWNEIGH with NTF_USE: the kernel starts ARP (or ND) itself
    udp_probe,    // send one UDP datagram (discard port) to the peer through the normal stack
};

struct NextHop {
    wire::Ipv4Address peer;
    wire::Ipv4Address next_hop;  // the peer itself, or the gateway towards it
    std::uint32_t ifindex = 0;
    wire::MacAddress mac;
    bool resolved_now = false;  // the kernel had to be asked (it was not in the table)
};

struct NextHop6 {
    wire::Ipv6Address peer;
    wire::Ipv6Address next_hop;  // the peer itself, or the gateway towards it (possibly link-local)
    std::uint32_t ifindex = 0;
    wire::MacAddress mac;
    bool resolved_now = false;  // the kernel had to be asked (it was not in the table)
};

// Route, then neighbour; when the neighbour is missing or unresolved, triggers resolution and
// re-reads the table every few milliseconds until `timeout`. Throws IoError naming the peer,
// the interface and the fix when there is no route or the neighbour stays unresolved.
[[nodiscard]] NextHop resolve_next_hop(wire::Ipv4Address peer,
                                       std::chrono::milliseconds timeout = std::chrono::seconds(3),
                                       ResolveTrigger trigger = ResolveTrigger::netlink_use);
[[nodiscard]] NextHop6 resolve_next_hop(wire::Ipv6Address peer,
                                        std::chrono::milliseconds timeout = std::chrono::seconds(3),
                                        ResolveTrigger trigger = ResolveTrigger::netlink_use);

}  // namespace andromeda::io
