#include "daemon/next_hops.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "io/netlink/neighbour.hpp"

namespace andromeda::daemon {

namespace {

struct ResolvedHop {
    std::string next_hop;
    wire::MacAddress mac;
    bool resolved_now = false;
};

// ARP towards an IPv4 peer, Neighbor Discovery towards an IPv6 one.
ResolvedHop resolve_hop(const wire::IpAddress& peer, std::chrono::milliseconds timeout) {
    if (const auto v6 = peer.ipv6()) {
        const io::NextHop6 hop = io::resolve_next_hop(*v6, timeout);
        return {hop.next_hop.to_string(), hop.mac, hop.resolved_now};
    }
    const io::NextHop hop = io::resolve_next_hop(*peer.ipv4(), timeout);
    return {hop.next_hop.to_string(), hop.mac, hop.resolved_now};
}

}  // namespace

const char* to_string(NextHopSource source) noexcept {
    switch (source) {
        case NextHopSource::pinned: return "pinned";
        case NextHopSource::neighbour: return "neighbour";
        case NextHopSource::unresolved: return "unresolved";
    }
    return "?";
}

std::vector<dataplane::NextHop> NextHopTable::update(const fabric::FabricSnapshot& snapshot,
                                                     std::chrono::milliseconds timeout) {
    std::vector<PeerNextHop> next;
    std::vector<dataplane::NextHop> learned;
    for (const fabric::Node& node : snapshot.nodes()) {
        if (node.is_local || !node.address) continue;
        PeerNextHop peer{node.name, *node.address, std::nullopt, NextHopSource::unresolved, {}};
        if (node.mac) {
            peer.mac = node.mac;
            peer.source = NextHopSource::pinned;
        } else if (const PeerNextHop* known = find(*node.address);
                   known != nullptr && known->source == NextHopSource::neighbour) {
            peer = *known;
            peer.node = node.name;
        } else {
            resolve(peer, timeout);
        }
        const PeerNextHop* before = find(peer.address);
        if (peer.mac && (before == nullptr || before->mac != peer.mac))
            learned.push_back(dataplane::NextHop{peer.address, *peer.mac});
        next.push_back(std::move(peer));
    }
    peers_ = std::move(next);
    return learned;
}

std::vector<dataplane::NextHop> NextHopTable::refresh(std::chrono::milliseconds timeout,
                                                      std::chrono::milliseconds budget) {
    std::vector<dataplane::NextHop> changed;
    const auto deadline = std::chrono::steady_clock::now() + budget;
    for (std::size_t n = 0; n < peers_.size(); ++n) {
        if (std::chrono::steady_clock::now() >= deadline) break;
        next_refresh_ = (next_refresh_ + 1) % peers_.size();
        PeerNextHop& peer = peers_[next_refresh_];
        if (peer.source == NextHopSource::pinned) continue;
        if (resolve(peer, timeout)) changed.push_back(dataplane::NextHop{peer.address, *peer.mac});
    }
    return changed;
}

bool NextHopTable::resolve(PeerNextHop& peer, std::chrono::milliseconds timeout) {
    try {
        const ResolvedHop hop = resolve_hop(peer.address, timeout);
        const bool changed = peer.mac != hop.mac;
        if (changed || peer.source != NextHopSource::neighbour) {
            ++resolutions_;
            spdlog::info("peer {} ({}): next hop {} is at {}{}", peer.node, peer.address.to_string(),
                         hop.next_hop, hop.mac.to_string(),
                         hop.resolved_now ? " (the kernel resolved it now)" : "");
        }
        peer.mac = hop.mac;
        peer.source = NextHopSource::neighbour;
        peer.problem.clear();
        return changed;
    } catch (const std::exception& e) {
        ++failures_;
        if (peer.problem != e.what())
            spdlog::warn("peer {} ({}): {}{}", peer.node, peer.address.to_string(), e.what(),
                         peer.mac ? "; keeping the last known MAC " + peer.mac->to_string()
                                  : "; its traffic is dropped (no_next_hop) until it resolves");
        peer.problem = e.what();
        return false;
    }
}

const PeerNextHop* NextHopTable::find(const wire::IpAddress& address) const noexcept {
    const auto it = std::find_if(peers_.begin(), peers_.end(), [&](const PeerNextHop& p) { return p.address == address; });
    return it == peers_.end() ? nullptr : &*it;
}

std::size_t NextHopTable::unresolved() const noexcept {
    return static_cast<std::size_t>(std::count_if(peers_.begin(), peers_.end(), [](const PeerNextHop& p) { return !p.mac; }));
}

}  // namespace andromeda::daemon
