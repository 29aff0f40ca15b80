// Test and benchmark frames, built byte by byte: Ethernet (with 802.1Q tags), IPv4 (options,
// fragments), UDP/TCP/ICMP with their checksums, ARP, and overlay packets (Andromeda and VXLAN);
// and the edits tests make to a built frame. Nothing here includes userspace/, so the code under
// test never makes its own expected input. Addresses are host byte order.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace andromeda::test_support {

using Bytes = std::vector<std::uint8_t>;
using Mac = std::array<std::uint8_t, 6>;

inline constexpr Mac kBroadcastMac = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

// "02:00:00:00:00:10"; nullopt when it is not six hex bytes.
inline std::optional<Mac> parse_mac(std::string_view text) {
    Mac m{};
    std::size_t at = 0;
    for (std::size_t i = 0; i < 6; ++i) {
        unsigned value = 0;
        std::size_t digits = 0;
        for (; at < text.size() && text[at] != ':'; ++at, ++digits) {
            const char c = text[at];
            const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (d < 0) return std::nullopt;
            value = value * 16 + static_cast<unsigned>(d);
        }
        if (digits == 0 || digits > 2 || (i < 5 && at == text.size()) || (i == 5 && at != text.size())) return std::nullopt;
        m[i] = static_cast<std::uint8_t>(value);
        ++at;  // the ':'
    }
    return m;
}

// "10.0.0.10" in host byte order; nullopt when it is not a dotted quad.
inline std::optional<std::uint32_t> parse_ipv4(std::string_view text) {
    std::uint32_t address = 0;
    std::size_t at = 0;
    for (int part = 0; part < 4; ++part) {
        unsigned value = 0;
        std::size_t digits = 0;
        for (; at < text.size() && text[at] >= '0' && text[at] <= '9'; ++at, ++digits) value = value * 10 + static_cast<unsigned>(text[at] - '0');
        if (digits == 0 || digits > 3 || value > 255) return std::nullopt;
        address = address << 8 | value;
        if (part < 3) {
            if (at >= text.size() || text[at] != '.') return std::nullopt;
            ++at;
        }
    }
    if (at != text.size()) return std::nullopt;
    return address;
}

inline Mac mac(std::string_view text) { return parse_mac(text).value(); }
inline std::uint32_t ipv4(std::string_view text) { return parse_ipv4(text).value(); }

inline std::uint16_t get16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] << 8 | p[1]); }
inline void put16(std::uint8_t* p, std::uint16_t v) {
    p[0] = static_cast<std::uint8_t>(v >> 8);
    p[1] = static_cast<std::uint8_t>(v);
}
inline std::uint32_t get32(const std::uint8_t* p) { return static_cast<std::uint32_t>(get16(p)) << 16 | get16(p + 2); }
inline void put32(std::uint8_t* p, std::uint32_t v) {
    put16(p, static_cast<std::uint16_t>(v >> 16));
    put16(p + 2, static_cast<std::uint16_t>(v));
}

// RFC 1071: the one's-complement sum of big-endian 16-bit words (an odd last byte padded with
// zero), not yet folded; `checksum_of` folds and inverts it.
inline std::uint32_t ones_sum(const std::uint8_t* p, std::size_t n, std::uint32_t sum = 0) {
    for (; n > 1; p += 2, n -= 2) sum += static_cast<std::uint32_t>(p[0] << 8 | p[1]);
    if (n == 1) sum += static_cast<std::uint32_t>(p[0] << 8);
    return sum;
}
inline std::uint16_t checksum_of(std::uint32_t sum) {
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<std::uint16_t>(~sum & 0xffff);
}

namespace protocol {
inline constexpr std::uint8_t kIcmp = 1;
inline constexpr std::uint8_t kTcp = 6;
inline constexpr std::uint8_t kUdp = 17;
}  // namespace protocol

struct VlanTag {
    std::uint16_t tpid = 0x8100;
    std::uint16_t vid = 0;
    std::uint8_t pcp = 0;
    bool dei = false;
};

// An Ethernet header (and its tags) for `payload` bytes of `ethertype`; the payload is zeroed.
inline Bytes ethernet_frame(const Mac& src, const Mac& dst, std::uint16_t ethertype, std::size_t payload,
                            const std::vector<VlanTag>& tags = {}) {
    Bytes f(14 + 4 * tags.size() + payload, 0);
    std::copy(dst.begin(), dst.end(), f.begin());
    std::copy(src.begin(), src.end(), f.begin() + 6);
    std::size_t at = 12;
    for (const VlanTag& tag : tags) {
        put16(&f[at], tag.tpid);
        put16(&f[at + 2], static_cast<std::uint16_t>(tag.pcp << 13 | (tag.dei ? 0x1000 : 0) | (tag.vid & 0x0fff)));
        at += 4;
    }
    put16(&f[at], ethertype);
    return f;
}

// An IPv4 packet in an Ethernet frame. The transport header gets the ports (TCP: seq 1000, the
// flags (PSH ACK unless set), window 64240; ICMP: type, code, the identifier (0x0b0c unless set),
// sequence 1) and a correct checksum, fragment or not (unless `transport` is false); payload byte
// i is fill + i * fill_step.
struct Ipv4Frame {
    Mac src_mac{};
    Mac dst_mac{};
    std::uint32_t src = 0;
    std::uint32_t dst = 0;
    std::uint8_t protocol = protocol::kUdp;
    std::size_t payload = 32;  // bytes after the transport header
    std::uint16_t src_port = 40000;
    std::uint16_t dst_port = 4242;
    std::uint8_t icmp_type = 8;  // echo request
    std::uint8_t icmp_code = 0;
    std::uint16_t icmp_id = 0x0b0c;
    std::uint8_t tcp_flags = 0x18;  // PSH ACK
    std::uint8_t ttl = 64;
    std::uint8_t tos = 0;
    std::uint16_t id = 0x1234;
    bool dont_fragment = false;
    bool more_fragments = false;
    std::uint16_t fragment_offset = 0;  // 8-byte units
    bool udp_checksum = true;           // false: UDP checksum 0 (none)
    Bytes options{};                    // a multiple of 4 bytes
    std::vector<VlanTag> tags{};
    std::uint8_t fill = 0;
    std::uint8_t fill_step = 1;
    // false: no transport header, every byte after the IPv4 header is payload (what a later
    // fragment carries, or a packet cut down to its IPv4 header).
    bool transport = true;
    // When set, the IPv4 total length, in place of `payload`: what the headers leave is payload
    // (none when it is below the IPv4 header's length), and a transport header that does not fit
    // in it is left out.
    std::optional<std::size_t> total_length;

    // The whole Ethernet frame is `length` bytes (no FCS): sets `payload` accordingly.
    Ipv4Frame& frame_length(std::size_t length);
    std::size_t transport_header() const {
        if (!transport) return 0;
        return protocol == protocol::kTcp ? 20 : (protocol == protocol::kUdp || protocol == protocol::kIcmp) ? 8 : 0;
    }
};

inline Ipv4Frame& Ipv4Frame::frame_length(std::size_t length) {
    const std::size_t headers = 14 + 4 * tags.size() + 20 + options.size() + transport_header();
    payload = length > headers ? length - headers : 0;
    return *this;
}

inline Bytes ipv4_frame(const Ipv4Frame& s) {
    const std::size_t ihl = 20 + s.options.size();
    std::size_t l4_header = s.transport_header();
    std::size_t payload = s.payload;
    if (s.total_length) {
        const std::size_t after_header = *s.total_length > ihl ? *s.total_length - ihl : 0;
        if (after_header < l4_header) l4_header = 0;
        payload = after_header - l4_header;
    }
    const std::size_t ip_length = ihl + l4_header + payload;
    Bytes f = ethernet_frame(s.src_mac, s.dst_mac, 0x0800, ip_length, s.tags);
    std::uint8_t* ip = f.data() + (f.size() - ip_length);
    ip[0] = static_cast<std::uint8_t>(0x40 | ihl / 4);
    ip[1] = s.tos;
    put16(ip + 2, static_cast<std::uint16_t>(ip_length));
    put16(ip + 4, s.id);
    put16(ip + 6, static_cast<std::uint16_t>((s.dont_fragment ? 0x4000 : 0) | (s.more_fragments ? 0x2000 : 0) |
                                             (s.fragment_offset & 0x1fff)));
    ip[8] = s.ttl;
    ip[9] = s.protocol;
    put32(ip + 12, s.src);
    put32(ip + 16, s.dst);
    std::copy(s.options.begin(), s.options.end(), ip + 20);
    put16(ip + 10, checksum_of(ones_sum(ip, ihl)));

    std::uint8_t* l4 = ip + ihl;
    const std::size_t l4_length = l4_header + payload;
    for (std::size_t i = 0; i < payload; ++i) l4[l4_header + i] = static_cast<std::uint8_t>(s.fill + i * s.fill_step);
    if (l4_header == 0) return f;
    std::uint32_t pseudo = ones_sum(ip + 12, 8) + s.protocol + static_cast<std::uint32_t>(l4_length);
    if (s.protocol == protocol::kUdp) {
        put16(l4, s.src_port);
        put16(l4 + 2, s.dst_port);
        put16(l4 + 4, static_cast<std::uint16_t>(l4_length));
        if (s.udp_checksum) {
            const std::uint16_t check = checksum_of(ones_sum(l4, l4_length, pseudo));
            put16(l4 + 6, check == 0 ? 0xffff : check);
        }
    } else if (s.protocol == protocol::kTcp) {
        put16(l4, s.src_port);
        put16(l4 + 2, s.dst_port);
        put32(l4 + 4, 1000);
        l4[12] = 5 << 4;
        l4[13] = s.tcp_flags;
        put16(l4 + 14, 64240);
        put16(l4 + 16, checksum_of(ones_sum(l4, l4_length, pseudo)));
    } else {  // ICMP: no pseudo-header
        l4[0] = s.icmp_type;
        l4[1] = s.icmp_code;
        put16(l4 + 4, s.icmp_id);
        put16(l4 + 6, 1);
        put16(l4 + 2, checksum_of(ones_sum(l4, l4_length)));
    }
    return f;
}

// Ethernet/IPv4/TCP with every TCP field the caller's (sequence numbers, flags, window, options,
// data), DF set, both checksums right: one segment of a connection a test plays by hand.
struct TcpSegmentSpec {
    Mac src_mac{};
    Mac dst_mac{};
    std::uint32_t src = 0;
    std::uint32_t dst = 0;
    std::uint16_t src_port = 40000;
    std::uint16_t dst_port = 53;
    std::uint32_t seq = 0;
    std::uint32_t ack = 0;
    std::uint8_t flags = 0;
    std::uint16_t window = 64240;
    Bytes options{};  // a multiple of 4 bytes
    Bytes data{};
};

inline Bytes tcp_segment_frame(const TcpSegmentSpec& s) {
    const std::size_t tcp_length = 20 + s.options.size() + s.data.size();
    Bytes f = ethernet_frame(s.src_mac, s.dst_mac, 0x0800, 20 + tcp_length, {});
    std::uint8_t* ip = f.data() + 14;
    ip[0] = 0x45;
    put16(ip + 2, static_cast<std::uint16_t>(20 + tcp_length));
    put16(ip + 6, 0x4000);
    ip[8] = 64;
    ip[9] = protocol::kTcp;
    put32(ip + 12, s.src);
    put32(ip + 16, s.dst);
    put16(ip + 10, checksum_of(ones_sum(ip, 20)));
    std::uint8_t* tcp = ip + 20;
    put16(tcp, s.src_port);
    put16(tcp + 2, s.dst_port);
    put32(tcp + 4, s.seq);
    put32(tcp + 8, s.ack);
    tcp[12] = static_cast<std::uint8_t>((20 + s.options.size()) / 4 << 4);
    tcp[13] = s.flags;
    put16(tcp + 14, s.window);
    std::copy(s.options.begin(), s.options.end(), tcp + 20);
    std::copy(s.data.begin(), s.data.end(), tcp + 20 + s.options.size());
    const std::uint32_t pseudo = ones_sum(ip + 12, 8) + protocol::kTcp + static_cast<std::uint32_t>(tcp_length);
    put16(tcp + 16, checksum_of(ones_sum(tcp, tcp_length, pseudo)));
    return f;
}

// A UDP frame of exactly `length` bytes, DF set, ID 1, payload all 0x5a and no UDP checksum: what
// the pipeline benchmarks send.
inline Bytes udp_frame(std::size_t length, const Mac& src_mac, const Mac& dst_mac, std::uint32_t src, std::uint32_t dst,
                       std::uint16_t src_port = 40000, std::uint16_t dst_port = 4242) {
    Ipv4Frame s;
    s.src_mac = src_mac;
    s.dst_mac = dst_mac;
    s.src = src;
    s.dst = dst;
    s.src_port = src_port;
    s.dst_port = dst_port;
    s.dont_fragment = true;
    s.id = 1;
    s.fill = 0x5a;
    s.fill_step = 0;
    s.udp_checksum = false;
    return ipv4_frame(s.frame_length(length));
}

using Ipv6Address = std::array<std::uint8_t, 16>;

// Ethernet + IPv6 (hop limit 64) + UDP 5000 -> 6000 with `payload` counting bytes, checksum filled in.
inline Bytes ipv6_udp_frame(const Mac& src_mac, const Mac& dst_mac, const Ipv6Address& src, const Ipv6Address& dst,
                            std::size_t payload) {
    const std::size_t udp_length = 8 + payload;
    Bytes f = ethernet_frame(src_mac, dst_mac, 0x86dd, 40 + udp_length);
    std::uint8_t* ip = f.data() + 14;
    ip[0] = 0x60;
    put16(ip + 4, static_cast<std::uint16_t>(udp_length));
    ip[6] = protocol::kUdp;
    ip[7] = 64;
    std::copy(src.begin(), src.end(), ip + 8);
    std::copy(dst.begin(), dst.end(), ip + 24);
    std::uint8_t* udp = ip + 40;
    put16(udp, 5000);
    put16(udp + 2, 6000);
    put16(udp + 4, static_cast<std::uint16_t>(udp_length));
    for (std::size_t i = 0; i < payload; ++i) udp[8 + i] = static_cast<std::uint8_t>(i);
    const std::uint32_t pseudo = ones_sum(ip + 8, 32) + protocol::kUdp + static_cast<std::uint32_t>(udp_length);
    const std::uint16_t check = checksum_of(ones_sum(udp, udp_length, pseudo));
    put16(udp + 6, check == 0 ? 0xffff : check);
    return f;
}

// An Ethernet/IPv4 ARP packet (operation 1 request, 2 reply).
struct ArpPacket {
    std::uint16_t operation = 1;
    Mac sender_mac{};
    std::uint32_t sender_ip = 0;
    Mac target_mac{};
    std::uint32_t target_ip = 0;
};

inline Bytes arp_frame(const Mac& eth_src, const Mac& eth_dst, const ArpPacket& a, const std::vector<VlanTag>& tags = {}) {
    Bytes f = ethernet_frame(eth_src, eth_dst, 0x0806, 28, tags);
    std::uint8_t* p = f.data() + (f.size() - 28);
    put16(p, 1);       // Ethernet
    put16(p + 2, 0x0800);
    p[4] = 6;
    p[5] = 4;
    put16(p + 6, a.operation);
    std::copy(a.sender_mac.begin(), a.sender_mac.end(), p + 8);
    put32(p + 14, a.sender_ip);
    std::copy(a.target_mac.begin(), a.target_mac.end(), p + 18);
    put32(p + 24, a.target_ip);
    return f;
}

// "Who has target_ip? Tell sender_ip", broadcast.
inline Bytes arp_request(const Mac& sender_mac, std::uint32_t sender_ip, std::uint32_t target_ip) {
    return arp_frame(sender_mac, kBroadcastMac, {1, sender_mac, sender_ip, Mac{}, target_ip});
}

// Recomputes the checksum of the IPv4 header at `ip` (its IHL, at least 20 bytes, as far as the
// frame holds it), after an edit to the header; a frame without 20 bytes there is left alone.
inline void refresh_ipv4_checksum(Bytes& f, std::size_t ip) {
    if (f.size() < ip + 20) return;
    const std::size_t ihl = std::min<std::size_t>(std::max<std::size_t>((f[ip] & 0x0f) * 4u, 20), f.size() - ip);
    put16(&f[ip + 10], 0);
    put16(&f[ip + 10], checksum_of(ones_sum(&f[ip], ihl)));
}

// Recomputes the TCP, UDP or ICMP checksum of the IPv4 packet at `ip` (no fragment, its transport
// whole up to its total length), after an edit to it; a UDP checksum of 0 (none) stays 0. Other
// protocols, and packets the frame does not hold, are left alone.
inline void refresh_transport_checksum(Bytes& f, std::size_t ip) {
    if (f.size() < ip + 20) return;
    const std::size_t ihl = (f[ip] & 0x0f) * 4u, total = get16(&f[ip + 2]);
    if (ihl < 20 || total < ihl || f.size() < ip + total) return;
    std::uint8_t* l4 = &f[ip + ihl];
    const std::size_t length = total - ihl;
    const std::uint8_t protocol = f[ip + 9];
    const std::size_t at = protocol == protocol::kTcp ? 16 : protocol == protocol::kUdp ? 6 : 2;
    if ((protocol != protocol::kTcp && protocol != protocol::kUdp && protocol != protocol::kIcmp) || length < at + 2)
        return;
    if (protocol == protocol::kUdp && get16(l4 + 6) == 0) return;
    put16(l4 + at, 0);
    const std::uint32_t pseudo =
        protocol == protocol::kIcmp ? 0 : ones_sum(&f[ip + 12], 8) + protocol + static_cast<std::uint32_t>(length);
    const std::uint16_t check = checksum_of(ones_sum(l4, length, pseudo));
    put16(l4 + at, protocol == protocol::kUdp && check == 0 ? 0xffff : check);
}

// A tag inserted right after the MACs, in front of any the frame has (with TPID 0x88a8 over an
// 802.1Q tag: a QinQ pair).
inline void insert_vlan_tag(Bytes& f, const VlanTag& tag) {
    std::uint8_t bytes[4];
    put16(bytes, tag.tpid);
    put16(bytes + 2, static_cast<std::uint16_t>(tag.pcp << 13 | (tag.dei ? 0x1000 : 0) | (tag.vid & 0x0fff)));
    f.insert(f.begin() + 12, std::begin(bytes), std::end(bytes));
}

// A copy of a spec with one edit, for the rows of a case table: with(spec, [](auto& s) { s.ttl = 0; }).
template <class Spec, class Edit>
Spec with(Spec s, Edit edit) {
    edit(s);
    return s;
}

// Edits of a built frame for the rows of a case table, each on a copy. Offsets are the frame's;
// where an edit touches IPv4 or UDP, the IPv4 header is at byte 14 without options (its UDP
// header at byte 34).
enum class Ipv4Checksum { left, refreshed };
inline Bytes with_byte(Bytes f, std::size_t at, std::uint8_t value, Ipv4Checksum checksum = Ipv4Checksum::left) {
    f.at(at) = value;
    if (checksum == Ipv4Checksum::refreshed) refresh_ipv4_checksum(f, 14);
    return f;
}
inline Bytes flipped(Bytes f, std::size_t at, std::uint8_t bits, Ipv4Checksum checksum = Ipv4Checksum::left) {
    const std::uint8_t value = static_cast<std::uint8_t>(f.at(at) ^ bits);
    return with_byte(std::move(f), at, value, checksum);
}
inline Bytes with_be16(Bytes f, std::size_t at, std::uint16_t value) {
    static_cast<void>(f.at(at + 1));  // std::out_of_range past the end, as at() everywhere here
    put16(&f[at], value);
    return f;
}
inline Bytes with_ipv4_total_length(Bytes f, std::size_t total) {  // checksum refreshed
    f = with_be16(std::move(f), 16, static_cast<std::uint16_t>(total));
    refresh_ipv4_checksum(f, 14);
    return f;
}
inline Bytes with_udp_length(Bytes f, std::size_t length) {
    return with_be16(std::move(f), 38, static_cast<std::uint16_t>(length));
}
inline Bytes resized(Bytes f, std::size_t size) {  // cut, or padded with zeros
    f.resize(size, 0);
    return f;
}
inline Bytes tagged(Bytes f, std::uint16_t tpid, std::uint16_t vid) {
    insert_vlan_tag(f, {tpid, vid});
    return f;
}

enum class OverlayKind { andromeda, vxlan };

// An overlay packet as a peer sends it: outer Ethernet, IPv4, UDP, the 8-byte overlay header and
// the inner frame. The header (docs/wire-format.md, RFC 7348):
//   Andromeda  version|flags, inner protocol, flow hash (the UDP source port's low 14 bits, as a
//              sender derives the port from it), VNI (3 bytes), hop limit
//   VXLAN      flags (I = 0x08), 3 reserved bytes, VNI (3 bytes), a reserved byte
struct OverlayPacket {
    OverlayKind kind = OverlayKind::andromeda;
    Mac src_mac{};
    Mac dst_mac{};
    std::uint32_t src = 0;
    std::uint32_t dst = 0;
    std::uint16_t src_port = 0xc123;
    std::uint16_t dst_port = 0;
    std::uint32_t vni = 0;
    std::optional<std::uint8_t> first_byte;  // default: Andromeda version 1 (0x10), VXLAN's I flag (0x08)
    std::uint8_t protocol = 0;               // Andromeda: the inner protocol (0: Ethernet); VXLAN: reserved byte 3
    std::uint8_t hop_limit = 64;             // Andromeda only: VXLAN's last byte is reserved (0)
    std::uint8_t ttl = 64;
    std::uint16_t id = 0;
    bool dont_fragment = true;
    bool more_fragments = false;
    std::uint16_t fragment_offset = 0;  // 8-byte units
    Bytes options{};                    // outer IPv4 options, a multiple of 4 bytes
    bool udp_checksum = false;          // true: a correct non-zero checksum; false: 0, as senders leave it
    Bytes inner{};
};

inline Bytes overlay_frame(const OverlayPacket& s) {
    const std::size_t udp_length = 8 + 8 + s.inner.size();
    Ipv4Frame outer;
    outer.src_mac = s.src_mac;
    outer.dst_mac = s.dst_mac;
    outer.src = s.src;
    outer.dst = s.dst;
    outer.protocol = protocol::kUdp;
    outer.transport = false;  // the UDP header is written below, over the zeroed payload
    outer.payload = udp_length;
    outer.fill_step = 0;
    outer.ttl = s.ttl;
    outer.id = s.id;
    outer.dont_fragment = s.dont_fragment;
    outer.more_fragments = s.more_fragments;
    outer.fragment_offset = s.fragment_offset;
    outer.options = s.options;
    Bytes f = ipv4_frame(outer);
    std::uint8_t* udp = &f[14 + 20 + s.options.size()];
    put16(udp, s.src_port);
    put16(udp + 2, s.dst_port);
    put16(udp + 4, static_cast<std::uint16_t>(udp_length));
    std::uint8_t* h = udp + 8;
    if (s.kind == OverlayKind::andromeda) {
        h[0] = s.first_byte.value_or(0x10);
        h[1] = s.protocol;
        put16(h + 2, static_cast<std::uint16_t>(s.src_port & 0x3fff));
        h[7] = s.hop_limit;
    } else {
        h[0] = s.first_byte.value_or(0x08);
        h[3] = s.protocol;
    }
    h[4] = static_cast<std::uint8_t>(s.vni >> 16);
    h[5] = static_cast<std::uint8_t>(s.vni >> 8);
    h[6] = static_cast<std::uint8_t>(s.vni);
    std::copy(s.inner.begin(), s.inner.end(), h + 8);
    if (s.udp_checksum) {
        const std::uint32_t pseudo = ones_sum(&f[14 + 12], 8) + protocol::kUdp + static_cast<std::uint32_t>(udp_length);
        const std::uint16_t check = checksum_of(ones_sum(udp, udp_length, pseudo));
        put16(udp + 6, check == 0 ? 0xffff : check);
    }
    return f;
}

}  // namespace andromeda::test_support
