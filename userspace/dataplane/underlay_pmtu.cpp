#include "dataplane/underlay_pmtu.hpp"

#include "wire/checksum.hpp"
#include "wire/ethernet.hpp"
#include "wire/icmp.hpp"
#include "wire/ip_protocol.hpp"
#include "wire/ipv4.hpp"

namespace andromeda::dataplane {

OuterFragNeededReport parse_outer_frag_needed(wire::ByteSpan frame, wire::Ipv4Address local,
                                              std::uint16_t overlay_port) noexcept {
    OuterFragNeededReport r;
    const auto ethernet = wire::EthernetView::parse(frame);
    if (!ethernet || ethernet->ethertype() != wire::ethertype::kIpv4) return r;
    const auto ip = wire::Ipv4View::parse(ethernet->payload());
    if (!ip) {
        r.kind = OuterFragNeeded::truncated;
        return r;
    }
    if (ip->protocol() != wire::ip_protocol::kIcmp || ip->is_fragment() || ip->destination() != local) return r;
    const wire::ByteSpan icmp = ip->payload();
    if (icmp.size() < wire::kIcmpHeaderLength) {
        r.kind = OuterFragNeeded::truncated;
        return r;
    }
    if (icmp[0] != wire::icmpv4_type::kDestinationUnreachable || icmp[1] != wire::icmpv4_code::kFragmentationNeeded)
        return r;
    // The quote: the outer IPv4 header as sent (no options: ours never have any) and the first
    // 8 bytes behind it, all RFC 792 promises.
    const wire::ByteSpan quote = icmp.subspan(wire::kIcmpHeaderLength);
    if (quote.size() < wire::kIpv4MinHeaderLength + 8) {
        r.kind = OuterFragNeeded::truncated;
        return r;
    }
    if (!wire::checksum_verifies(icmp)) {
        r.kind = OuterFragNeeded::bad_checksum;
        return r;
    }
    const std::uint8_t* q = quote.data();
    const std::uint8_t* udp = q + wire::kIpv4MinHeaderLength;
    if (q[0] != 0x45 || q[9] != wire::ip_protocol::kUdp || wire::Ipv4Address::from_bytes(q + 12) != local ||
        wire::load_be16(udp + 2) != overlay_port) {
        r.kind = OuterFragNeeded::not_our_packet;
        return r;
    }
    r.kind = OuterFragNeeded::ours;
    r.peer = wire::Ipv4Address::from_bytes(q + 16);
    r.mtu = wire::load_be16(icmp.data() + 6);
    return r;
}

bool PeerPathMtu::learn(wire::Ipv4Address peer, std::uint32_t mtu, std::uint64_t now_ns) {
    const std::uint32_t key = peer.value();
    if (key == 0 || mtu == 0) return false;
    const std::lock_guard lock(write_);
    const std::uint32_t used = used_.load(std::memory_order_relaxed);
    Slot* reusable = nullptr;
    for (std::uint32_t i = 0; i < used; ++i) {
        Slot& s = slots_[i];
        const std::uint32_t held = s.peer.load(std::memory_order_relaxed);
        if (held == key) {
            const bool live = s.expires_ns.load(std::memory_order_relaxed) > now_ns;
            if (live && mtu > s.mtu.load(std::memory_order_relaxed)) return false;
            s.mtu.store(mtu, std::memory_order_relaxed);
            s.expires_ns.store(now_ns + kPeerMtuLifetimeNs, std::memory_order_release);
            return true;
        }
        if (reusable == nullptr && held == 0) reusable = &s;
    }
    if (reusable == nullptr) {
        if (used == kCapacity) return false;
        reusable = &slots_[used];
        used_.store(used + 1, std::memory_order_release);
    }
    reusable->mtu.store(mtu, std::memory_order_relaxed);
    reusable->expires_ns.store(now_ns + kPeerMtuLifetimeNs, std::memory_order_relaxed);
    reusable->peer.store(key, std::memory_order_release);
    live_.fetch_add(1, std::memory_order_relaxed);
    return true;
}

std::uint32_t PeerPathMtu::mtu(wire::Ipv4Address peer, std::uint64_t now_ns) const noexcept {
    const std::uint32_t key = peer.value();
    const std::uint32_t used = used_.load(std::memory_order_acquire);
    for (std::uint32_t i = 0; i < used; ++i) {
        const Slot& s = slots_[i];
        if (s.peer.load(std::memory_order_acquire) != key) continue;
        if (s.expires_ns.load(std::memory_order_acquire) <= now_ns) return 0;
        return s.mtu.load(std::memory_order_relaxed);
    }
    return 0;
}

std::size_t PeerPathMtu::expire(std::uint64_t now_ns) {
    const std::lock_guard lock(write_);
    std::size_t expired = 0;
    const std::uint32_t used = used_.load(std::memory_order_relaxed);
    for (std::uint32_t i = 0; i < used; ++i) {
        Slot& s = slots_[i];
        if (s.peer.load(std::memory_order_relaxed) == 0 || s.expires_ns.load(std::memory_order_relaxed) > now_ns)
            continue;
        // The address goes first: a reader that still matched it finds the expiry passed.
        s.peer.store(0, std::memory_order_release);
        s.mtu.store(0, std::memory_order_relaxed);
        ++expired;
    }
    live_.fetch_sub(static_cast<std::uint32_t>(expired), std::memory_order_relaxed);
    return expired;
}

std::vector<PeerPathMtu::Entry> PeerPathMtu::entries(std::uint64_t now_ns) const {
    std::vector<Entry> out;
    const std::uint32_t used = used_.load(std::memory_order_acquire);
    for (std::uint32_t i = 0; i < used; ++i) {
        const Slot& s = slots_[i];
        const std::uint32_t peer = s.peer.load(std::memory_order_acquire);
        const std::uint64_t expires = s.expires_ns.load(std::memory_order_acquire);
        const std::uint32_t mtu = s.mtu.load(std::memory_order_relaxed);
        if (peer != 0 && mtu != 0 && expires > now_ns) out.push_back({wire::Ipv4Address(peer), mtu, expires});
    }
    return out;
}

}  // namespace andromeda::dataplane
