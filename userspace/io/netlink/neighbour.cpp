#include "io/netlink/neighbour.hpp"

#include <arpa/inet.h>
#include <linux/neighbour.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "io/netlink/interfaces.hpp"
#include "io/netlink/netlink.hpp"
#include "io/plan/io_error.hpp"

namespace andromeda::io {

namespace {

std::optional<wire::Ipv4Address> address_attribute(const NetlinkAttributes& attrs, std::uint16_t type) {
    const auto b = attrs.bytes(type);
    if (b.size() != 4) return std::nullopt;
    return wire::Ipv4Address::from_bytes(b.data());
}

// RTM_NEWNEIGH with NTF_USE makes the kernel create the entry if needed and start resolving it,
// exactly as if it had a packet to send there.
int request_resolution(std::uint32_t ifindex, wire::Ipv4Address ip) {
    ndmsg nd{};
    nd.ndm_family = AF_INET;
    nd.ndm_ifindex = static_cast<int>(ifindex);
    nd.ndm_flags = NTF_USE;
    nd.ndm_state = NUD_NONE;
    NetlinkRequest request(RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE, &nd, sizeof nd);
    const std::uint32_t dst = htonl(ip.value());
    request.add_value(NDA_DST, dst);
    RtnetlinkSocket netlink;
    return netlink.transact(request);
}

// One datagram to the discard port: the stack needs the next hop's MAC to send it.
int send_udp_probe(wire::Ipv4Address peer) {
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(9);
    to.sin_addr.s_addr = htonl(peer.value());
    const char byte = 0;
    const ssize_t sent = sendto(fd, &byte, 1, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&to), sizeof to);
    const int rc = sent < 0 ? -errno : 0;
    close(fd);
    return rc;
}

}  // namespace

bool Neighbour::usable() const noexcept {
    constexpr std::uint16_t kHasAddress = NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT | NUD_NOARP;
    return mac.has_value() && (state & kHasAddress) != 0;
}

std::optional<Route> route_to(wire::Ipv4Address destination) {
    rtmsg rt{};
    rt.rtm_family = AF_INET;
    rt.rtm_dst_len = 32;
    NetlinkRequest request(RTM_GETROUTE, 0, &rt, sizeof rt);
    const std::uint32_t dst = htonl(destination.value());
    request.add_value(RTA_DST, dst);
    std::optional<Route> route;
    RtnetlinkSocket netlink;
    const int rc = netlink.transact(request, [&](const nlmsghdr& m) {
        if (m.nlmsg_type != RTM_NEWROUTE) return;
        const auto attrs = attributes_after<rtmsg>(m);
        Route r;
        r.ifindex = attrs.u32(RTA_OIF).value_or(0);
        r.gateway = address_attribute(attrs, RTA_GATEWAY);
        r.source = address_attribute(attrs, RTA_PREFSRC);
        route = r;
    });
    if (rc == -ENETUNREACH || rc == -EHOSTUNREACH) return std::nullopt;
    if (rc != 0) throw IoError("netlink RTM_GETROUTE to " + destination.to_string(), -rc);
    return route;
}

std::optional<Neighbour> find_neighbour(std::uint32_t ifindex, wire::Ipv4Address ip) {
    ndmsg nd{};
    nd.ndm_family = AF_INET;
    nd.ndm_ifindex = static_cast<int>(ifindex);
    NetlinkRequest request(RTM_GETNEIGH, NLM_F_DUMP, &nd, sizeof nd);
    std::optional<Neighbour> found;
    RtnetlinkSocket netlink;
    const int rc = netlink.transact(request, [&](const nlmsghdr& m) {
        const auto& entry = fixed_header<ndmsg>(m);
        if (m.nlmsg_type != RTM_NEWNEIGH || static_cast<std::uint32_t>(entry.ndm_ifindex) != ifindex) return;
        const auto attrs = attributes_after<ndmsg>(m);
        if (address_attribute(attrs, NDA_DST) != ip) return;
        Neighbour n;
        n.ifindex = ifindex;
        n.ip = ip;
        n.state = entry.ndm_state;
        if (const auto mac = attrs.bytes(NDA_LLADDR); mac.size() == 6) n.mac = wire::MacAddress::from_bytes(mac.data());
        found = n;
    });
    if (rc != 0) throw IoError("netlink RTM_GETNEIGH", -rc);
    return found;
}

NextHop resolve_next_hop(wire::Ipv4Address peer, std::chrono::milliseconds timeout, ResolveTrigger trigger) {
    const auto route = route_to(peer);
    if (!route || route->ifindex == 0)
        throw IoError("no route to peer node " + peer.to_string(), ENETUNREACH,
                      "give the underlay interface an address in the peers' subnet, or a route to them");
    NextHop hop{peer, route->gateway.value_or(peer), route->ifindex, {}, false};
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int trigger_rc = 0;
    for (bool asked = false;; std::this_thread::sleep_for(std::chrono::milliseconds(5))) {
        if (const auto n = find_neighbour(hop.ifindex, hop.next_hop); n && n->usable()) {
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
                      (link ? link->name : std::to_string(hop.ifindex)) + " did not answer ARP within " +
                      std::to_string(timeout.count()) + " ms",
                  trigger_rc < 0 ? -trigger_rc : EHOSTUNREACH,
                  "check that the peer is up and reachable on the underlay, or pin its MAC with `mac = ...` in "
                  "its [[nodes]] entry");
}

}  // namespace andromeda::io
