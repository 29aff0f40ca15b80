#include "dataplane/underlay_pmtu.hpp"

#include "wire/checksum.hpp"
#include "wire/ethernet.hpp"
#include "wire/icmp.hpp"
#include "wire/ip_protocol.hpp"
#include "wire/ipv4.hpp"
#include "wire/ipv6.hpp"

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

OuterFragNeededReport parse_outer_packet_too_big(wire::ByteSpan frame, const wire::Ipv6Address& local,
                                                 std::uint16_t overlay_port) noexcept {
    OuterFragNeededReport r;
    const auto ethernet = wire::EthernetView::parse(frame);
    if (!ethernet || ethernet->ethertype() != wire::ethertype::kIpv6) return r;
    const wire::ByteSpan packet = ethernet->payload();
    if (packet.size() < wire::kIpv6HeaderLength) {
        r.kind = OuterFragNeeded::truncated;
        return r;
    }
    const std::uint8_t* ip = packet.data();
    // Fixed header only: the prefilter steers nothing else here, and a Packet Too Big behind
    // extension headers would be the host's.
    if ((ip[0] >> 4) != 6 || ip[6] != wire::ip_protocol::kIcmpv6 || wire::Ipv6Address::from_bytes(ip + 24) != local)
        return r;
    const std::size_t payload_length = wire::load_be16(ip + 4);
    if (payload_length > packet.size() - wire::kIpv6HeaderLength) {
        r.kind = OuterFragNeeded::truncated;
        return r;
    }
    const wire::ByteSpan icmp = packet.subspan(wire::kIpv6HeaderLength, payload_length);
    if (icmp.size() < wire::kIcmpHeaderLength) {
        r.kind = OuterFragNeeded::truncated;
        return r;
    }
    if (icmp[0] != wire::icmpv6_type::kPacketTooBig || icmp[1] != 0) return r;
    // The quote: as much of our outer packet as fits in 1280 bytes (RFC 4443 section 3.2); we need
    // its IPv6 header and its UDP header behind it (ours never carry extension headers).
    const wire::ByteSpan quote = icmp.subspan(wire::kIcmpHeaderLength);
    if (quote.size() < wire::kIpv6HeaderLength + 8) {
        r.kind = OuterFragNeeded::truncated;
        return r;
    }
    const std::uint64_t pseudo = wire::pseudo_header_sum(wire::Ipv6Address::from_bytes(ip + 8), local,
                                                         wire::ip_protocol::kIcmpv6, static_cast<std::uint32_t>(icmp.size()));
    if (!wire::checksum_verifies(icmp, pseudo)) {
        r.kind = OuterFragNeeded::bad_checksum;
        return r;
    }
    const std::uint8_t* q = quote.data();
    const std::uint8_t* udp = q + wire::kIpv6HeaderLength;
    if ((q[0] >> 4) != 6 || q[6] != wire::ip_protocol::kUdp || wire::Ipv6Address::from_bytes(q + 8) != local ||
        wire::load_be16(udp + 2) != overlay_port) {
        r.kind = OuterFragNeeded::not_our_packet;
        return r;
    }
    r.kind = OuterFragNeeded::ours;
    r.peer = wire::Ipv6Address::from_bytes(q + 24);
    r.mtu = wire::load_be32(icmp.data() + 4);
    return r;
}

PeerPathMtu::Key PeerPathMtu::key_of(const wire::IpAddress& a) noexcept {
    Key k;
    if (const auto v6 = a.ipv6()) {
        for (std::size_t i = 0; i < 4; ++i) k.words[i] = wire::load_be32(v6->bytes().data() + 4 * i);
        k.family = 6;
    } else {
        k.words[3] = a.ipv4()->value();
        k.family = 4;
    }
    return k;
}

wire::IpAddress PeerPathMtu::address_of(const Key& k) noexcept {
    if (k.family == 4) return wire::Ipv4Address(k.words[3]);
    std::array<std::uint8_t, 16> bytes{};
    for (std::size_t i = 0; i < 4; ++i) wire::store_be32(bytes.data() + 4 * i, k.words[i]);
    return wire::Ipv6Address(bytes);
}

std::optional<PeerPathMtu::SlotValue> PeerPathMtu::read(const Slot& s) noexcept {
    const std::uint32_t before = s.sequence.load(std::memory_order_acquire);
    if ((before & 1) != 0) return std::nullopt;
    SlotValue v;
    for (std::size_t i = 0; i < 4; ++i) v.key.words[i] = s.words[i].load(std::memory_order_relaxed);
    v.key.family = s.family.load(std::memory_order_relaxed);
    v.mtu = s.mtu.load(std::memory_order_relaxed);
    v.expires_ns = s.expires_ns.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s.sequence.load(std::memory_order_relaxed) != before) return std::nullopt;
    return v;
}

void PeerPathMtu::write(Slot& s, const Key& key, std::uint32_t mtu, std::uint64_t expires_ns) noexcept {
    const std::uint32_t sequence = s.sequence.load(std::memory_order_relaxed);
    s.sequence.store(sequence + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    for (std::size_t i = 0; i < 4; ++i) s.words[i].store(key.words[i], std::memory_order_relaxed);
    s.family.store(key.family, std::memory_order_relaxed);
    s.mtu.store(mtu, std::memory_order_relaxed);
    s.expires_ns.store(expires_ns, std::memory_order_relaxed);
    s.sequence.store(sequence + 2, std::memory_order_release);
}

bool PeerPathMtu::learn(const wire::IpAddress& peer, std::uint32_t mtu, std::uint64_t now_ns) {
    const Key key = key_of(peer);
    if (key.words == std::array<std::uint32_t, 4>{} || mtu == 0) return false;
    const std::lock_guard lock(write_);
    const std::uint32_t used = used_.load(std::memory_order_relaxed);
    Slot* reusable = nullptr;
    for (std::uint32_t i = 0; i < used; ++i) {
        Slot& s = slots_[i];
        const std::optional<SlotValue> held = read(s);  // the only writer holds write_: consistent
        if (held && held->key == key) {
            const bool live = held->expires_ns > now_ns;
            if (live && mtu > held->mtu) return false;
            write(s, key, mtu, now_ns + kPeerMtuLifetimeNs);
            return true;
        }
        if (reusable == nullptr && held && held->key.family == 0) reusable = &s;
    }
    if (reusable == nullptr) {
        if (used == kCapacity) return false;
        reusable = &slots_[used];
        write(*reusable, key, mtu, now_ns + kPeerMtuLifetimeNs);
        used_.store(used + 1, std::memory_order_release);
    } else {
        write(*reusable, key, mtu, now_ns + kPeerMtuLifetimeNs);
    }
    live_.fetch_add(1, std::memory_order_relaxed);
    return true;
}

std::uint32_t PeerPathMtu::mtu(const wire::IpAddress& peer, std::uint64_t now_ns) const noexcept {
    const Key key = key_of(peer);
    const std::uint32_t used = used_.load(std::memory_order_acquire);
    for (std::uint32_t i = 0; i < used; ++i) {
        // A slot being rewritten is read again: a writer holds it for a few stores.
        std::optional<SlotValue> v;
        for (int attempt = 0; attempt < 64 && !v; ++attempt) v = read(slots_[i]);
        if (!v || v->key != key) continue;
        return v->expires_ns > now_ns ? v->mtu : 0;
    }
    return 0;
}

std::size_t PeerPathMtu::expire(std::uint64_t now_ns) {
    const std::lock_guard lock(write_);
    std::size_t expired = 0;
    const std::uint32_t used = used_.load(std::memory_order_relaxed);
    for (std::uint32_t i = 0; i < used; ++i) {
        const std::optional<SlotValue> held = read(slots_[i]);
        if (!held || held->key.family == 0 || held->expires_ns > now_ns) continue;
        write(slots_[i], Key{}, 0, 0);
        ++expired;
    }
    live_.fetch_sub(static_cast<std::uint32_t>(expired), std::memory_order_relaxed);
    return expired;
}

std::vector<PeerPathMtu::Entry> PeerPathMtu::entries(std::uint64_t now_ns) const {
    std::vector<Entry> out;
    const std::uint32_t used = used_.load(std::memory_order_acquire);
    for (std::uint32_t i = 0; i < used; ++i) {
        std::optional<SlotValue> v;
        for (int attempt = 0; attempt < 64 && !v; ++attempt) v = read(slots_[i]);
        if (v && v->key.family != 0 && v->mtu != 0 && v->expires_ns > now_ns)
            out.push_back({address_of(v->key), v->mtu, v->expires_ns});
    }
    return out;
}

}  // namespace andromeda::dataplane
