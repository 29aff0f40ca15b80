#include "io/netlink/neighbour.hpp"

#include <arpa/inet.h>
#include <linux/neighbour.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <thread>

#include "io/netlink/interfaces.hpp"
#include "io/netlink/netlink.hpp"
#include "io/plan/io_error.hpp"

namespace andromeda::io {

namespace {

// What differs between an IPv4 and an IPv6 underlay; everything else below is written once.
template <class Address>
struct Family;

template <>
struct Family<wire::Ipv4Address> {
    using Route = io::Route;
    using Neighbour = io::Neighbour;
    using NextHop = io::NextHop;
    static constexpr std::uint8_t af = AF_INET;
    static constexpr std::size_t size = 4;
    static constexpr const char* resolution = "ARP";
    static constexpr const char* no_route_fix =
        "give the underlay interface an address in the peers' subnet, or a route to them";

    static socklen_t socket_address(wire::Ipv4Address ip, std::uint16_t port, sockaddr_storage& storage) noexcept {
        sockaddr_in to{};
        to.sin_family = AF_INET;
        to.sin_port = htons(port);
        to.sin_addr.s_addr = htonl(ip.value());
        std::memcpy(&storage, &to, sizeof to);
        return sizeof to;
    }
};

template <>
struct Family<wire::Ipv6Address> {
    using Route = io::Route6;
    using Neighbour = io::Neighbour6;
    using NextHop = io::NextHop6;
    static constexpr std::uint8_t af = AF_INET6;
    static constexpr std::size_t size = 16;
    static constexpr const char* resolution = "Neighbor Discovery";
    static constexpr const char* no_route_fix =
        "give the underlay interface an IPv6 address in the peers' prefix, or a route to them; IPv6 must be "
        "enabled on it: net.ipv6.conf.<interface>.disable_ipv6=0";

    static socklen_t socket_address(wire::Ipv6Address ip, std::uint16_t port, sockaddr_storage& storage) noexcept {
        sockaddr_in6 to{};
        to.sin6_family = AF_INET6;
        to.sin6_port = htons(port);
        ip.copy_to(to.sin6_addr.s6_addr);
        std::memcpy(&storage, &to, sizeof to);
        return sizeof to;
    }
};

// The address as netlink carries it (network order).
template <class Address>
std::array<std::uint8_t, Family<Address>::size> bytes_of(Address ip) noexcept {
    std::array<std::uint8_t, Family<Address>::size> bytes{};
    ip.copy_to(bytes.data());
    return bytes;
}

template <class Address>
std::optional<Address> address_attribute(const NetlinkAttributes& attrs, std::uint16_t type) {
    const auto b = attrs.bytes(type);
    if (b.size() != Family<Address>::size) return std::nullopt;
    return Address::from_bytes(b.data());
}

// Route types that carry nothing. Kernels answer RTM_GETROUTE for one with an errno (6.18 does, in
// both families), but one that hands the route back (IPv6, dev lo) must not become a next hop.
bool forwards(std::uint8_t rtm_type) noexcept {
    return rtm_type != RTN_UNREACHABLE && rtm_type != RTN_PROHIBIT && rtm_type != RTN_BLACKHOLE &&
           rtm_type != RTN_THROW;
}

bool has_link_address(const std::optional<wire::MacAddress>& mac, std::uint16_t state) noexcept {
    constexpr std::uint16_t kHasAddress = NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT | NUD_NOARP;
    return mac.has_value() && (state & kHasAddress) != 0;
}

// RTM_NEWNEIGH with NTF_USE makes the kernel create the entry if needed and start resolving it
// (ARP, or a neighbour solicitation), exactly as if it had a packet to send there.
template <class Address>
int request_resolution(std::uint32_t ifindex, Address ip) {
    ndmsg nd{};
    nd.ndm_family = Family<Address>::af;
    nd.ndm_ifindex = static_cast<int>(ifindex);
    nd.ndm_flags = NTF_USE;
    nd.ndm_state = NUD_NONE;
    NetlinkRequest request(RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE, &nd, sizeof nd);
    const auto dst = bytes_of(ip);
    request.add_attribute(NDA_DST, dst.data(), dst.size());
    RtnetlinkSocket netlink;
    return netlink.transact(request);
}

// One datagram to the discard port: the stack needs the next hop's MAC to send it.
template <class Address>
int send_udp_probe(Address peer) {
    sockaddr_storage to{};
    const socklen_t to_length = Family<Address>::socket_address(peer, 9, to);
    const int fd = socket(Family<Address>::af, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    const char byte = 0;
    const ssize_t sent = sendto(fd, &byte, 1, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&to), to_length);
    const int rc = sent < 0 ? -errno : 0;
    close(fd);
    return rc;
}

template <class Address>
std::optional<typename Family<Address>::Route> lookup_route(Address destination) {
    using F = Family<Address>;
    rtmsg rt{};
    rt.rtm_family = F::af;
    rt.rtm_dst_len = 8 * F::size;
    NetlinkRequest request(RTM_GETROUTE, 0, &rt, sizeof rt);
    const auto dst = bytes_of(destination);
    request.add_attribute(RTA_DST, dst.data(), dst.size());
    std::optional<typename F::Route> route;
    RtnetlinkSocket netlink;
    const int rc = netlink.transact(request, [&](const nlmsghdr& m) {
        if (m.nlmsg_type != RTM_NEWROUTE || !forwards(fixed_header<rtmsg>(m).rtm_type)) return;
        const auto attrs = attributes_after<rtmsg>(m);
        typename F::Route r;
        r.ifindex = attrs.u32(RTA_OIF).value_or(0);
        r.gateway = address_attribute<Address>(attrs, RTA_GATEWAY);
        r.source = address_attribute<Address>(attrs, RTA_PREFSRC);
        route = r;
    });
    if (rc == -ENETUNREACH || rc == -EHOSTUNREACH) return std::nullopt;
    if (rc != 0) throw IoError("netlink RTM_GETROUTE to " + destination.to_string(), -rc);
    return route;
}

template <class Address>
std::optional<typename Family<Address>::Neighbour> lookup_neighbour(std::uint32_t ifindex, Address ip) {
    using F = Family<Address>;
    ndmsg nd{};
    nd.ndm_family = F::af;
    nd.ndm_ifindex = static_cast<int>(ifindex);
    NetlinkRequest request(RTM_GETNEIGH, NLM_F_DUMP, &nd, sizeof nd);
    std::optional<typename F::Neighbour> found;
    RtnetlinkSocket netlink;
    const int rc = netlink.transact(request, [&](const nlmsghdr& m) {
        const auto& entry = fixed_header<ndmsg>(m);
        if (m.nlmsg_type != RTM_NEWNEIGH || entry.ndm_family != F::af ||
            static_cast<std::uint32_t>(entry.ndm_ifindex) != ifindex)
            return;
        const auto attrs = attributes_after<ndmsg>(m);
        if (address_attribute<Address>(attrs, NDA_DST) != ip) return;
        typename F::Neighbour n;
        n.ifindex = ifindex;
        n.ip = ip;
        n.state = entry.ndm_state;
        if (const auto mac = attrs.bytes(NDA_LLADDR); mac.size() == 6) n.mac = wire::MacAddress::from_bytes(mac.data());
        found = n;
    });
    if (rc != 0) throw IoError("netlink RTM_GETNEIGH", -rc);
    return found;
}

template <class Address>
typename Family<Address>::NextHop resolve(Address peer, std::chrono::milliseconds timeout, ResolveTrigger trigger) {
    using F = Family<Address>;
    const auto route = lookup_route(peer);
    if (!route || route->ifindex == 0)
        throw IoError("no route to peer node " + peer.to_string(), ENETUNREACH, F::no_route_fix);
    typename F::NextHop hop{peer, route->gateway.value_or(peer), route->ifindex, {}, false};
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int trigger_rc = 0;
    for (bool asked = false;; std::this_thread::sleep_for(std::chrono::milliseconds(5))) {
        if (const auto n = lookup_neighbour(hop.ifindex, hop.next_hop); n && n->usable()) {
            hop.mac = *n->mac;
            hop.resolved_now = asked;
            return hop;
        }
        if (std::chrono::steady_clock::now() >= deadline) break;
        if (!asked) {
            trigger_rc = trigger == ResolveTrigger::netlink_use ? request_resolution(hop.ifindex, hop.next_hop) : 0;
            // A kernel that refuses NTF_USE still resolves for a packet of ours.
            if (trigger == ResolveTrigger::udp_probe || trigger_rc != 0) trigger_rc = send_udp_probe(peer);
            asked = true;
        }
    }
    const auto link = find_interface(hop.ifindex);
    throw IoError("the next hop " + hop.next_hop.to_string() + " towards peer " + peer.to_string() + " on " +
                      (link ? link->name : std::to_string(hop.ifindex)) + " did not answer " + F::resolution +
                      " within " + std::to_string(timeout.count()) + " ms",
                  trigger_rc < 0 ? -trigger_rc : EHOSTUNREACH,
                  "check that the peer is up and reachable on the underlay, or pin its MAC with `mac = ...` in "
                  "its [[nodes]] entry");
}

}  // namespace

bool Neighbour::usable() const noexcept { return has_link_address(mac, state); }
bool Neighbour6::usable() const noexcept { return has_link_address(mac, state); }

std::optional<Route> route_to(wire::Ipv4Address destination) { return lookup_route(destination); }
std::optional<Route6> route_to(wire::Ipv6Address destination) { return lookup_route(destination); }

std::optional<Neighbour> find_neighbour(std::uint32_t ifindex, wire::Ipv4Address ip) {
    return lookup_neighbour(ifindex, ip);
}
std::optional<Neighbour6> find_neighbour(std::uint32_t ifindex, wire::Ipv6Address ip) {
    return lookup_neighbour(ifindex, ip);
}

NextHop resolve_next_hop(wire::Ipv4Address peer, std::chrono::milliseconds timeout, ResolveTrigger trigger) {
    return resolve(peer, timeout, trigger);
}
NextHop6 resolve_next_hop(wire::Ipv6Address peer, std::chrono::milliseconds timeout, ResolveTrigger trigger) {
    return resolve(peer, timeout, trigger);
}

}  // namespace andromeda::io
