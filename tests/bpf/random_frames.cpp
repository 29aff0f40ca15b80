#include "random_frames.hpp"

#include <algorithm>

namespace andromeda::fast_path_test {

using test_support::get16;
using test_support::put16;

namespace {

struct Placed {
    const VpcDef* vpc;
    const EndpointDef* e;
};

std::vector<Placed> endpoints_where(bool (*pred)(const VpcDef&, const EndpointDef&)) {
    std::vector<Placed> out;
    for (const VpcDef& v : vpcs())
        for (const EndpointDef& e : v.endpoints)
            if (pred(v, e)) out.push_back({&v, &e});
    return out;
}

// The transport header a first fragment of `protocol` carries (0: none the builder knows).
std::size_t transport_header_of(std::uint8_t protocol) {
    Ipv4Frame s;
    s.protocol = protocol;
    return s.transport_header();
}

std::uint8_t random_protocol(Gen& g) {
    const std::uint32_t r = g.below(100);
    return r < 40 ? kUdp : r < 70 ? kTcp : r < 88 ? kIcmp : g.chance(50) ? kGre : g.byte();
}

// An IPv4 total length: small, around `mtu`, or anywhere up to just past the underlay's MTU.
std::size_t random_total(Gen& g, std::uint32_t mtu, std::size_t minimum) {
    const std::uint32_t r = g.below(100);
    std::size_t total;
    if (r < 45)
        total = minimum + g.below(120);
    else if (r < 75)
        total = mtu - 4 + g.below(9);
    else
        total = minimum + g.below(1520 - static_cast<std::uint32_t>(minimum));
    return std::max(total, minimum);
}

std::uint32_t random_address(Gen& g, const VpcDef& vpc) {
    const std::uint32_t r = g.below(100);
    if (r < 30) {  // an endpoint on another node: what the fast path encapsulates
        std::vector<std::uint32_t> remote;
        for (const EndpointDef& e : vpc.endpoints)
            if (e.node != "node1") remote.push_back(e.ip);
        return g.pick(remote);
    }
    if (r < 58) return g.pick(vpc.endpoints).ip;
    if (r < 65) return vpc.gateway;
    if (r < 70) return vpc.network | g.range(2, 254);
    if (r < 75) return g.chance(50) ? ip4(8, 8, 8, 8) : ip4(203, 0, 113, g.range(1, 254));
    if (r < 79) return ip4(g.range(224, 239), g.byte(), g.byte(), g.byte());
    if (r < 82) return 0xffffffff;
    if (r < 84) return vpc.network | 255;
    if (r < 92) return g.pick(g.pick(vpcs()).endpoints).ip;
    return g.word();
}

Mac random_destination_mac(Gen& g, const VpcDef& vpc) {
    switch (g.below(6)) {
        case 0:
            return kBroadcastMac;
        case 1:
            return {0x01, 0x00, 0x5e, static_cast<std::uint8_t>(g.byte() & 0x7f), g.byte(), g.byte()};
        case 2:
            return g.pick(vpc.endpoints).mac;
        case 3:
            return g.pick(vpcs()).gateway_mac;
        default:
            return g.mac();
    }
}

void random_ipv4_header_damage(Gen& g, Bytes& f, std::size_t ip) {
    if (f.size() < ip + 20) return;
    if (g.chance(4)) f[ip + 10 + g.below(2)] ^= static_cast<std::uint8_t>(1u << g.below(8));  // bad checksum
    if (g.chance(4)) {  // total length off by a little (or a lot), checksum valid
        const int delta = g.chance(80) ? static_cast<int>(g.range(1, 6)) * (g.chance(50) ? 1 : -1)
                                       : static_cast<int>(g.word() % 3000) - 1500;
        put16(&f[ip + 2], static_cast<std::uint16_t>(static_cast<int>(get16(&f[ip + 2])) + delta));
        test_support::refresh_ipv4_checksum(f, ip);
    }
    if (g.chance(2)) {
        f[ip] = static_cast<std::uint8_t>(g.chance(50) ? (g.range(0, 15) << 4 | (f[ip] & 0x0f))
                                                       : (f[ip] & 0xf0) | g.range(0, 4));
        test_support::refresh_ipv4_checksum(f, ip);
    }
}

void random_frame_damage(Gen& g, Bytes& f) {
    if (g.chance(4)) {  // Ethernet padding
        const std::size_t n = g.range(1, 46);
        for (std::size_t i = 0; i < n; ++i) f.push_back(g.chance(70) ? 0 : g.byte());
    }
    if (g.chance(3)) f = tagged(std::move(f), 0x8100, static_cast<std::uint16_t>(g.below(4096)));
    if (g.chance(1)) f = tagged(std::move(f), 0x88a8, static_cast<std::uint16_t>(g.below(4096)));
    if (g.chance(3) && f.size() > 14) f.resize(g.range(14, static_cast<std::uint32_t>(f.size()) - 1));
    if (g.chance(2) && f.size() > 12)
        f[g.range(12, static_cast<std::uint32_t>(f.size()) - 1)] ^= static_cast<std::uint8_t>(1u << g.below(8));
}

// How often a random IPv4 packet has each oddity, in percent; 100: always, without a draw.
struct Ipv4Odds {
    std::uint32_t options;
    std::uint32_t fragment;          // MF or an offset, on top of DF in 70 %
    std::uint8_t ttl;                // the TTL in 90 %
    std::uint32_t transport_header;  // room for the transport header
    std::uint32_t header_damage;     // random_ipv4_header_damage
};
constexpr Ipv4Odds kTenantOdds{5, 6, 64, 95, 100};
constexpr Ipv4Odds kInnerOdds{3, 4, 63, 100, 40};

bool happens(Gen& g, std::uint32_t percent) { return percent >= 100 || g.chance(percent); }

Bytes random_ipv4(Gen& g, const VpcDef& vpc, const Mac& src_mac, std::uint32_t src, const Mac& dst_mac,
                  std::uint32_t dst, const Ipv4Odds& odds) {
    Ipv4Frame s;
    s.src_mac = src_mac;
    s.dst_mac = dst_mac;
    s.src = src;
    s.dst = dst;
    s.protocol = random_protocol(g);
    s.options = nop_options(g.chance(odds.options) ? 4 * g.range(1, 10) : 0);
    std::uint16_t field = g.chance(70) ? kDf : 0;
    if (g.chance(odds.fragment)) field = static_cast<std::uint16_t>(field | (g.chance(50) ? kMf : g.range(1, 0x1fff)));
    s = fragment(s, field);
    s.ttl = g.chance(90) ? odds.ttl : g.byte();
    s.tos = g.chance(90) ? 0 : g.byte();
    s.id = static_cast<std::uint16_t>(g.word());
    s.src_port = static_cast<std::uint16_t>(g.word());
    s.dst_port = static_cast<std::uint16_t>(g.word());
    s.fill = g.byte();
    const std::size_t header = happens(g, odds.transport_header) ? transport_header_of(s.protocol) : 0;
    s.total_length = random_total(g, vpc.inner_mtu(), 20 + s.options.size() + header);
    Bytes f = ipv4(s);
    if (happens(g, odds.header_damage)) random_ipv4_header_damage(g, f, 14);
    return f;
}

// The outer headers of a random overlay packet from `sender` (its node, or another), mostly valid.
void random_outer(Gen& g, Encap kind, const VpcDef& vpc, const EndpointDef& sender, OverlayPacket& s) {
    s.kind = g.chance(96) ? kind : other_encap(kind);
    s.dst_port = g.chance(94)   ? overlay_port(kind)
                 : g.chance(50) ? overlay_port(s.kind == kind ? other_encap(kind) : s.kind)
                                : static_cast<std::uint16_t>(g.word());
    s.src = sender.node == "node1" ? kNode2 : node_address(sender.node);
    s.src_mac = sender.node == "node1" ? kNode2Mac : node_mac(sender.node);
    s.dst = kNode1;
    s.dst_mac = kUnderlayMac;  // other outer destination MACs are a crafted case
    if (g.chance(5)) s.src = g.chance(40) ? kNode3 : g.chance(50) ? kNode2 : g.chance(50) ? kStranger : kNode1;
    if (g.chance(3)) s.dst = g.chance(50) ? kNode2 : g.word();
    s.src_port = static_cast<std::uint16_t>(0xc000 | g.below(0x4000));
    if (g.chance(2)) s.src_port = static_cast<std::uint16_t>(g.word());
    s.vni = g.chance(93) ? vpc.vni : g.chance(60) ? g.pick(vpcs()).vni : g.below(0x1000000);
    if (s.kind == Encap::andromeda) {
        if (g.chance(3))
            s.first_byte = static_cast<std::uint8_t>(g.range(0, 3) << 4 | (g.chance(70) ? 0 : g.range(1, 15)));
        if (g.chance(2)) s.protocol = g.byte();
        s.hop_limit = g.chance(90) ? 64 : g.chance(30) ? 0 : g.byte();
    } else {
        if (g.chance(3)) s.first_byte = 0;
        if (g.chance(3)) s.first_byte = g.byte();
        if (g.chance(2)) s.protocol = g.byte();
    }
    std::uint16_t field = kDf;
    if (g.chance(3)) field = g.chance(50) ? kMf : static_cast<std::uint16_t>(g.range(1, 0x1fff));
    if (g.chance(3)) field = 0;
    s = fragment(s, field);
    s.options = nop_options(g.chance(2) ? 4 * g.range(1, 10) : 0);
    s.ttl = g.chance(90) ? 64 : g.byte();
}

// A random IPv6 packet of a dual-stack VPC: mostly between its endpoints' addresses (at times
// another of the prefix, a link-local or multicast one, or nobody's), of a random transport
// (ICMPv6 of any type, extension headers among them), a random length and flow label.
Bytes random_ipv6(Gen& g, const Mac& src_mac, std::uint32_t src_octet, const Mac& dst_mac, std::uint32_t dst_octet) {
    static constexpr std::uint8_t kNext[] = {kUdp, kUdp, kTcp, kTcp, kIcmpv6, kIcmpv6, 0, 44, 43, 60, kGre, 59};
    const auto address = [&g](std::uint32_t octet) {
        const std::uint32_t r = g.below(100);
        Ip6 a = ip6_of(octet);
        if (r < 4) a = ip6_of(g.range(1, 0x200));
        else if (r < 6) a = link_local_of(g.mac());
        else if (r < 8) a = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0, 0, static_cast<std::uint8_t>(octet)};
        else if (r < 9) a = Ip6{};
        else if (r < 11)
            for (auto& b : a) b = g.byte();
        return a;
    };
    Ipv6Spec s;
    s.src_mac = src_mac;
    s.dst_mac = dst_mac;
    s.src = address(src_octet);
    s.dst = address(dst_octet);
    s.next_header = g.chance(95) ? kNext[g.below(sizeof kNext)] : g.byte();
    s.payload = g.chance(10) ? g.range(0, 8) : g.chance(5) ? g.range(1300, 1500) : g.range(8, 300);
    s.flow_label = g.chance(30) ? 0 : g.word();
    s.hop_limit = g.chance(90) ? 64 : g.byte();
    s.icmp_type = g.chance(60) ? static_cast<std::uint8_t>(g.chance(50) ? 128 : 129) : g.byte();
    return ipv6(s);
}

}  // namespace

Case random_tenant(Gen& g) {
    static const auto sources = endpoints_where(
        [](const VpcDef&, const EndpointDef& e) { return e.node == "node1" && e.port != kPortWithoutDevice; });
    const Placed src = g.pick(sources);
    const VpcDef& vpc = *src.vpc;
    Mac smac = src.e->mac;
    std::uint32_t sip = src.e->ip;
    if (g.chance(5)) smac = g.chance(50) ? g.pick(g.pick(vpcs()).endpoints).mac : g.mac();
    if (g.chance(6)) sip = g.chance(70) ? g.pick(vpc.endpoints).ip : g.word();
    Case c{"random frame", src.e->port, {}, ""};
    const std::uint32_t kind = g.below(100);
    if (kind < 8) {
        const Mac sender_mac = g.chance(85) ? smac : g.mac();
        const std::uint32_t sender_ip = g.chance(80) ? sip : g.chance(50) ? 0 : random_address(g, vpc);
        c.frame = arp(smac, g.chance(70) ? kBroadcastMac : vpc.gateway_mac, g.chance(85) ? 1 : g.range(0, 3),
                      sender_mac, sender_ip, g.chance(60) ? vpc.gateway : random_address(g, vpc));
        if (g.chance(4)) c.frame[14 + g.below(6)] ^= 0x01;
        if (g.chance(4)) c.frame.resize(g.range(14, 41));
    } else if (kind < 11) {
        c.frame = ethertype_frame(smac, g.chance(85) ? vpc.gateway_mac : random_destination_mac(g, vpc), 0x86dd,
                                  g.range(0, 200), g.byte());
    } else if (kind < 13) {
        c.frame =
            ethertype_frame(smac, vpc.gateway_mac, static_cast<std::uint16_t>(g.word()), g.range(0, 100), g.byte());
    } else if (kind < 27 && dual_stack(vpc)) {
        c.frame = random_ipv6(g, smac, g.chance(94) ? src.e->ip & 255 : g.pick(vpc.endpoints).ip & 255,
                              g.chance(88) ? vpc.gateway_mac : random_destination_mac(g, vpc),
                              g.pick(vpc.endpoints).ip & 255);
    } else {
        const Mac dst_mac = g.chance(88) ? vpc.gateway_mac : random_destination_mac(g, vpc);
        const std::uint32_t dst = random_address(g, vpc);
        c.frame = random_ipv4(g, vpc, smac, sip, dst_mac, dst, kTenantOdds);
    }
    random_frame_damage(g, c.frame);
    return c;
}

namespace {

// random_overlay's packet before its outer checksum and the damage done to the whole frame.
OverlayPacket random_overlay_packet(Gen& g, Encap kind) {
    const VpcDef& vpc = g.pick(vpcs());
    // The sender: mostly an endpoint of the VPC on another node.
    std::vector<const EndpointDef*> remote, local;
    for (const EndpointDef& e : vpc.endpoints) (e.node == "node1" ? local : remote).push_back(&e);
    EndpointDef sender = *g.pick(remote);
    const std::uint32_t r = g.below(100);
    if (r < 6 && !local.empty())
        sender = *g.pick(local);
    else if (r < 12)
        sender.ip = vpc.network | g.range(2, 254);
    else if (r < 16)
        sender.ip = g.word();
    // The receiver: mostly a local endpoint.
    std::uint32_t to_ip;
    Mac to_mac;
    const std::uint32_t t = g.below(100);
    if (t < 75 && !local.empty()) {
        const EndpointDef* e = g.pick(local);
        to_ip = e->ip;
        to_mac = e->mac;
    } else {
        to_ip = random_address(g, vpc);
        to_mac = g.chance(50) ? vpc.gateway_mac : g.pick(vpc.endpoints).mac;
    }
    if (g.chance(4)) to_mac = g.mac();
    if (g.chance(3)) sender.mac = g.mac();

    OverlayPacket s;
    random_outer(g, kind, vpc, sender, s);
    const std::uint32_t what = g.below(100);
    if (what < 3)
        s.inner = arp(sender.mac, kBroadcastMac, 1, sender.mac, sender.ip, to_ip);
    else if (what < 5)
        s.inner = ethertype_frame(sender.mac, to_mac, 0x86dd, g.range(40, 200), g.byte());
    else if (what < 25 && dual_stack(vpc))
        s.inner = random_ipv6(g, sender.mac, sender.ip & 255, to_mac, to_ip & 255);
    else
        s.inner = random_ipv4(g, vpc, sender.mac, sender.ip, to_mac, to_ip, kInnerOdds);
    if (g.chance(2)) s.inner.resize(s.inner.size() + g.range(1, 20), 0);
    if (g.chance(2)) s.inner = tagged(std::move(s.inner), 0x8100, static_cast<std::uint16_t>(g.below(4096)));
    if (g.chance(2)) s.inner.resize(g.range(0, static_cast<std::uint32_t>(s.inner.size())));
    return s;
}

// random_outer's IPv4 node addresses as the IPv6 underlay's (anything else: an address nobody has).
Ip6 as_ipv6_node(Gen& g, std::uint32_t address) {
    if (address == kNode1) return kNode1Ip6;
    if (address == kNode2) return kNode2Ip6;
    if (address == kNode3) return kNode3Ip6;
    if (address == kStranger) return kStrangerIp6;
    Ip6 a = kStrangerIp6;
    a[14] = g.byte();
    a[15] = g.byte();
    return a;
}

}  // namespace

Case random_overlay(Gen& g, Encap kind) {
    OverlayPacket s = random_overlay_packet(g, kind);
    s.udp_checksum = g.chance(5);
    Case c{"random overlay packet", kUnderlay, overlay(s), ""};
    const std::size_t udp = 14 + 20 + s.options.size();
    if (s.udp_checksum && g.chance(30)) c.frame[udp + 6] ^= 0x04;
    if (g.chance(3) && c.frame.size() >= udp + 8) {  // UDP length off
        std::uint8_t* udp_len = &c.frame[udp + 4];
        put16(udp_len, static_cast<std::uint16_t>(get16(udp_len) + (g.chance(50) ? 1u : 0xffffu) * g.range(1, 20)));
    }
    if (g.chance(40)) random_ipv4_header_damage(g, c.frame, 14);
    random_frame_damage(g, c.frame);
    return c;
}

Case random_overlay6(Gen& g, Encap kind) {
    OverlayPacket s = random_overlay_packet(g, kind);
    if (g.chance(3)) {  // the other family's overlay packet: never the fast path's here
        s.udp_checksum = g.chance(50);
        return {"random overlay packet over IPv4", kUnderlay, overlay(s), ""};
    }
    const Ip6 src = as_ipv6_node(g, s.src), dst = as_ipv6_node(g, s.dst);
    const std::uint32_t checksum = g.below(100);
    Case c{"random overlay packet over IPv6", kUnderlay, overlay6(s, src, dst, g.word(), checksum >= 5), ""};
    constexpr std::size_t udp = 14 + 40;
    if (checksum >= 93) c.frame[udp + 6 + g.below(2)] ^= static_cast<std::uint8_t>(1u << g.below(8));
    if (g.chance(3)) {  // UDP length off
        std::uint8_t* udp_len = &c.frame[udp + 4];
        put16(udp_len, static_cast<std::uint16_t>(get16(udp_len) + (g.chance(50) ? 1u : 0xffffu) * g.range(1, 20)));
    }
    if (g.chance(3)) {  // IPv6 payload length off
        std::uint8_t* payload = &c.frame[14 + 4];
        put16(payload, static_cast<std::uint16_t>(get16(payload) + (g.chance(50) ? 1u : 0xffffu) * g.range(1, 20)));
    }
    if (g.chance(2)) c.frame[14 + 7] = g.byte();  // hop limit
    random_frame_damage(g, c.frame);
    return c;
}

}  // namespace andromeda::fast_path_test
