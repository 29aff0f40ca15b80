// Hand-built frames for end-to-end tests that inject traffic with an AF_PACKET socket: Ethernet
// (optionally 802.1Q-tagged), IPv4 with a correct (or deliberately wrong) header checksum, UDP
// with its checksum, and the Andromeda overlay (outer IPv4/UDP to port 43481, 8-byte header).
// Written from the RFCs and docs/wire-format.md, independently of userspace/wire and overlay/,
// so a test does not check the daemon against its own encoder.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "andromeda_kern_user.h"

namespace andromeda::testing::frames {

using Bytes = std::vector<std::uint8_t>;
using Mac = std::array<std::uint8_t, 6>;

inline Mac mac(const std::string& text) {
    Mac m{};
    unsigned v[6] = {};
    std::sscanf(text.c_str(), "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]);
    for (int i = 0; i < 6; ++i) m[i] = static_cast<std::uint8_t>(v[i]);
    return m;
}

inline std::uint32_t ip(const std::string& text) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    std::sscanf(text.c_str(), "%u.%u.%u.%u", &a, &b, &c, &d);
    return a << 24 | b << 16 | c << 8 | d;
}

inline void put16(Bytes& out, std::size_t at, unsigned v) {
    out[at] = static_cast<std::uint8_t>(v >> 8);
    out[at + 1] = static_cast<std::uint8_t>(v);
}

inline void put32(Bytes& out, std::size_t at, std::uint32_t v) {
    put16(out, at, v >> 16);
    put16(out, at + 2, v & 0xffff);
}

// The Internet checksum of `bytes[from, from + length)` plus `sum`.
inline std::uint16_t checksum(const Bytes& bytes, std::size_t from, std::size_t length, std::uint32_t sum = 0) {
    for (std::size_t i = 0; i + 1 < length; i += 2) sum += static_cast<std::uint32_t>(bytes[from + i] << 8 | bytes[from + i + 1]);
    if (length % 2 != 0) sum += static_cast<std::uint32_t>(bytes[from + length - 1] << 8);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<std::uint16_t>(~sum);
}

struct Ipv4Options {
    std::uint8_t ttl = 64;
    std::uint16_t id = 1;
    bool dont_fragment = true;
    bool more_fragments = false;
    std::uint16_t fragment_offset = 0;  // in 8-byte units
    bool bad_checksum = false;
};

// An IPv4 packet around `payload` (protocol `protocol`).
inline Bytes ipv4(std::uint32_t src, std::uint32_t dst, std::uint8_t protocol, const Bytes& payload,
                  const Ipv4Options& o = {}) {
    Bytes p(20 + payload.size());
    p[0] = 0x45;
    put16(p, 2, static_cast<unsigned>(p.size()));
    put16(p, 4, o.id);
    put16(p, 6, (o.dont_fragment ? 0x4000u : 0u) | (o.more_fragments ? 0x2000u : 0u) | o.fragment_offset);
    p[8] = o.ttl;
    p[9] = protocol;
    put32(p, 12, src);
    put32(p, 16, dst);
    put16(p, 10, checksum(p, 0, 20) ^ (o.bad_checksum ? 0x5a5au : 0u));
    std::copy(payload.begin(), payload.end(), p.begin() + 20);
    return p;
}

// A UDP datagram with a correct checksum, inside an IPv4 packet.
inline Bytes udp_packet(std::uint32_t src, std::uint32_t dst, unsigned sport, unsigned dport, const Bytes& data,
                        const Ipv4Options& o = {}, bool with_checksum = true) {
    Bytes u(8 + data.size());
    put16(u, 0, sport);
    put16(u, 2, dport);
    put16(u, 4, static_cast<unsigned>(u.size()));
    std::copy(data.begin(), data.end(), u.begin() + 8);
    if (with_checksum) {
        const std::uint32_t pseudo = (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) + 17 + u.size();
        std::uint16_t c = checksum(u, 0, u.size(), pseudo);
        put16(u, 6, c == 0 ? 0xffff : c);
    }
    return ipv4(src, dst, 17, u, o);
}

// An Ethernet frame; `vlan` >= 0 adds an 802.1Q tag with that VLAN id.
inline Bytes ethernet(const Mac& dst, const Mac& src, unsigned ethertype, const Bytes& payload, int vlan = -1) {
    // Sized once and filled in (not header + insert(): gcc 12 at -O3 reports a false
    // -Warray-bounds inside vector's reallocation).
    const std::size_t header = 14 + (vlan >= 0 ? 4 : 0);
    Bytes f(header + payload.size());
    std::copy(dst.begin(), dst.end(), f.begin());
    std::copy(src.begin(), src.end(), f.begin() + 6);
    if (vlan >= 0) {
        put16(f, 12, 0x8100);
        put16(f, 14, static_cast<unsigned>(vlan));
    }
    put16(f, header - 2, ethertype);
    std::copy(payload.begin(), payload.end(), f.begin() + static_cast<std::ptrdiff_t>(header));
    return f;
}

struct OverlayOptions {
    std::uint32_t vni = 100;
    std::uint8_t version = 1;       // the Andromeda header's version nibble
    std::uint8_t hop_limit = 64;
    Ipv4Options outer;              // outer IPv4 (DF set by default, as the fabric sends it)
};

// The Andromeda overlay packet (outer IPv4/UDP to 43481, the 8-byte header, `inner` frame).
inline Bytes overlay_packet(std::uint32_t src, std::uint32_t dst, const Bytes& inner, const OverlayOptions& o = {}) {
    Bytes payload(8);
    payload[0] = static_cast<std::uint8_t>(o.version << 4);
    payload[1] = 0;
    put16(payload, 2, 0x1234);
    payload[4] = static_cast<std::uint8_t>(o.vni >> 16);
    payload[5] = static_cast<std::uint8_t>(o.vni >> 8);
    payload[6] = static_cast<std::uint8_t>(o.vni);
    payload[7] = o.hop_limit;
    payload.insert(payload.end(), inner.begin(), inner.end());
    return udp_packet(src, dst, 0xc000 | 0x1234, ANDROMEDA_OVERLAY_PORT, payload, o.outer, false);
}

}  // namespace andromeda::testing::frames
