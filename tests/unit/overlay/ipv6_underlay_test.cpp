// Outer-header templates and decap over an IPv6 underlay: the 70 (74 tagged) outer bytes field by
// field against an expectation built here and against scapy's goldens (tests/data/overlay6), the
// UDP checksum against an independent sum over the IPv6 pseudo-header (always sent, 0 as 0xffff),
// decap(encap(x)) == x by copy, in place and in bursts, and a property over random configs:
// IPv4 and IPv6 templates, tagged or not, both kinds, round-trip random inner frames.
#include <gtest/gtest.h>

#include <array>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "overlay/decap.hpp"
#include "overlay/flow_hash.hpp"
#include "overlay/outer_template.hpp"
#include "support/golden_files.hpp"
#include "unit/overlay/overlay_test_frames.hpp"

namespace andromeda::overlay {
namespace {

using testing::Bytes;
using testing::kTenantA;
using testing::kTenantB;
using testing::make_ipv4_frame;
using testing::random_inner_frame;
using testing::test_template_config;
using testing::test_template_config6;

constexpr EncapKind kKinds[] = {EncapKind::andromeda, EncapKind::vxlan};
const std::string kGoldenDir = std::string(ANDROMEDA_TESTDATA_DIR) + "/overlay6/";

// --- An independent reading of RFC 1071 and RFC 8200 section 8.1, byte by byte ---

std::uint32_t add_words(const std::uint8_t* p, std::size_t n, std::uint32_t sum) {
    for (std::size_t i = 0; i < n; i += 2)
        sum += static_cast<std::uint32_t>(p[i]) << 8 | (i + 1 < n ? p[i + 1] : 0u);
    return sum;
}

std::uint16_t fold_and_complement(std::uint32_t sum) {
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<std::uint16_t>(~sum);
}

// The UDP checksum the datagram after the IPv6 header at `ip` must carry: the pseudo-header
// (addresses, UDP length as 32 bits, next header 17) and the datagram with its checksum field as 0.
std::uint16_t udp6_checksum(const std::uint8_t* ip) {
    const std::size_t udp_length = static_cast<std::size_t>(ip[44]) << 8 | ip[45];
    std::uint32_t sum = add_words(ip + 8, 32, 0) + static_cast<std::uint32_t>(udp_length) + 17;
    Bytes datagram(ip + 40, ip + 40 + udp_length);
    datagram[6] = datagram[7] = 0;
    const std::uint16_t c = fold_and_complement(add_words(datagram.data(), datagram.size(), sum));
    return c == 0 ? 0xffff : c;
}

// The outer bytes an IPv6 template with `c` must write for an inner frame of `inner_size` bytes,
// field by field from docs/wire-format.md, UDP checksum 0 (the caller fills it in).
Bytes expected_outer6(const OuterTemplateConfig& c, std::size_t inner_size, const OverlayFields& f) {
    Bytes o;
    const auto put16 = [&o](std::uint32_t v) {
        o.push_back(static_cast<std::uint8_t>(v >> 8));
        o.push_back(static_cast<std::uint8_t>(v));
    };
    o.insert(o.end(), c.dst_mac.bytes().begin(), c.dst_mac.bytes().end());
    o.insert(o.end(), c.src_mac.bytes().begin(), c.src_mac.bytes().end());
    if (c.vlan_id != 0) {
        put16(0x8100);
        put16(c.vlan_id);  // PCP 0, DEI 0
    }
    put16(0x86dd);
    const std::uint32_t label = static_cast<std::uint32_t>(f.flow_hash) << 4 | f.flow_hash >> 12;
    const std::uint32_t word0 = 6u << 28 | static_cast<std::uint32_t>(c.tos) << 20 | label;
    put16(word0 >> 16);
    put16(word0 & 0xffff);
    const auto udp_length = static_cast<std::uint32_t>(inner_size + 16);
    put16(udp_length);  // payload length
    o.push_back(17);    // next header
    o.push_back(c.ttl);  // hop limit
    o.insert(o.end(), c.src_ip6.bytes().begin(), c.src_ip6.bytes().end());
    o.insert(o.end(), c.dst_ip6.bytes().begin(), c.dst_ip6.bytes().end());
    put16(f.flow_hash | 0xc000u);
    put16(c.udp_port != 0 ? c.udp_port : (c.kind == EncapKind::vxlan ? 4789u : 43481u));
    put16(udp_length);
    put16(0);  // checksum
    if (c.kind == EncapKind::andromeda) {
        o.push_back(static_cast<std::uint8_t>(0x10 | (f.flags & 0x0f)));
        o.push_back(0);
        put16(f.flow_hash);
    } else {
        o.insert(o.end(), {0x08, 0, 0, 0});
    }
    o.push_back(static_cast<std::uint8_t>(f.vni >> 16));
    o.push_back(static_cast<std::uint8_t>(f.vni >> 8));
    o.push_back(static_cast<std::uint8_t>(f.vni));
    o.push_back(c.kind == EncapKind::andromeda ? f.hop_limit : 0);
    return o;
}

std::size_t ip_offset(const OuterTemplateConfig& c) { return c.vlan_id != 0 ? 18 : 14; }

// `out` (the whole outer packet) is what expected_outer6 says, with the independent checksum.
void expect_outer6(const OuterTemplateConfig& c, const Bytes& inner, wire::ByteSpan out, const OverlayFields& f) {
    Bytes expected = expected_outer6(c, inner.size(), f);
    const std::size_t header = expected.size();
    ASSERT_EQ(header, outer_headers_size(true, c.vlan_id != 0));
    ASSERT_EQ(out.size(), header + inner.size());
    expected.insert(expected.end(), inner.begin(), inner.end());
    const std::uint16_t checksum = udp6_checksum(expected.data() + ip_offset(c));
    expected[header - 10] = static_cast<std::uint8_t>(checksum >> 8);
    expected[header - 9] = static_cast<std::uint8_t>(checksum);
    ASSERT_EQ(Bytes(out.begin(), out.end()), expected);
}

OverlayFields random_fields(std::mt19937& rng, EncapKind kind) {
    OverlayFields f{static_cast<std::uint32_t>(rng() & 0xffffff), static_cast<std::uint16_t>(rng()),
                    static_cast<std::uint8_t>(rng()), static_cast<std::uint8_t>(rng() & 0x0f)};
    if (kind == EncapKind::vxlan) f.flags = 0;
    return f;
}

wire::Ipv6Address random_ip6(std::mt19937& rng) {
    std::array<std::uint8_t, 16> b{};
    for (auto& x : b) x = static_cast<std::uint8_t>(rng());
    return wire::Ipv6Address(b);
}

TEST(Ipv6OuterTemplate, Sizes) {
    EXPECT_EQ(kOuterIpv6Size, 40u);
    EXPECT_EQ(kOuterHeadersSize6, 70u);
    EXPECT_EQ(kTaggedOuterHeadersSize6, 74u);
    EXPECT_EQ(outer_headers_size(false, false), 50u);
    EXPECT_EQ(outer_headers_size(false, true), 54u);
    EXPECT_EQ(outer_headers_size(true, false), 70u);
    EXPECT_EQ(outer_headers_size(true, true), 74u);
    for (const bool ipv6 : {false, true}) {
        for (const std::uint16_t vid : {std::uint16_t{0}, std::uint16_t{100}}) {
            OuterTemplateConfig c = test_template_config(EncapKind::vxlan);
            if (ipv6) c = test_template_config6(EncapKind::vxlan);
            c.vlan_id = vid;
            const OuterTemplate t(c);
            EXPECT_EQ(t.ipv6(), ipv6);
            EXPECT_EQ(t.tagged(), vid != 0);
            EXPECT_EQ(t.header_size(), outer_headers_size(ipv6, vid != 0));
        }
    }
    static_assert(outer_flow_label(0x60d1) == 0x60d16);
    EXPECT_EQ(outer_flow_label(0), 0u);
    for (std::uint32_t h = 1; h <= 0xffff; ++h) ASSERT_NE(outer_flow_label(static_cast<std::uint16_t>(h)), 0u);
}

TEST(Ipv6OuterTemplate, WritesEveryOuterFieldForBothKindsTaggedOrNot) {
    std::mt19937 rng(61);
    const Bytes inner = make_ipv4_frame(kTenantA, kTenantB, 17, 40000, 4242, 18);
    for (const EncapKind kind : kKinds) {
        for (const std::uint16_t vid : {std::uint16_t{0}, std::uint16_t{100}, std::uint16_t{4094}}) {
            for (const bool udp_checksum : {false, true}) {  // ignored over IPv6: always computed
                OuterTemplateConfig c = test_template_config6(kind, vid);
                c.udp_checksum = udp_checksum;
                OuterTemplate t(c);
                for (int i = 0; i < 50; ++i) {
                    const OverlayFields f = random_fields(rng, kind);
                    Bytes out(inner.size() + t.header_size());
                    ASSERT_EQ(t.encapsulate(inner, out, f), out.size());
                    expect_outer6(c, inner, out, f);
                }
            }
        }
    }
}

TEST(Ipv6OuterTemplate, ConfigurablePortHopLimitAndTrafficClass) {
    OuterTemplateConfig c = test_template_config6(EncapKind::vxlan);
    c.udp_port = kVxlanLinuxLegacyPort;
    c.ttl = 9;
    c.tos = 0xb8;
    c.dont_fragment = false;  // means nothing over IPv6
    OuterTemplate t(c);
    const Bytes inner(60, 0xab);
    Bytes out(130);
    const OverlayFields f{7, 0x1234, 64, 0};
    ASSERT_EQ(t.encapsulate(inner, out, f), 130u);
    expect_outer6(c, inner, out, f);
    EXPECT_EQ(wire::load_be32(&out[14]), 0x6b812341u);  // version 6, class 0xb8, label 0x12341
    EXPECT_EQ(out[21], 9);
    EXPECT_EQ(wire::load_be16(&out[56]), 8472);
}

// What scapy wrote (tests/data/overlay6/make_golden.py), reproduced byte for byte and decapsulated.
TEST(Ipv6OuterTemplate, MatchesScapyGoldens) {
    const nlohmann::json manifest = test_support::read_golden_manifest(
        kGoldenDir + "manifest.json", "/usr/bin/python3 tests/data/overlay6/make_golden.py");
    ASSERT_GE(manifest["frames"].size(), 5u);
    for (const auto& g : manifest["frames"]) {
        SCOPED_TRACE(g["name"].get<std::string>());
        OuterTemplateConfig c;
        c.kind = g["kind"] == "vxlan" ? EncapKind::vxlan : EncapKind::andromeda;
        c.src_mac = *wire::MacAddress::parse(g["src_mac"].get<std::string>());
        c.dst_mac = *wire::MacAddress::parse(g["dst_mac"].get<std::string>());
        c.ipv6 = true;
        c.src_ip6 = *wire::Ipv6Address::parse(g["src_ip6"].get<std::string>());
        c.dst_ip6 = *wire::Ipv6Address::parse(g["dst_ip6"].get<std::string>());
        c.udp_port = g["udp_port"].get<std::uint16_t>();
        c.ttl = g["ttl"].get<std::uint8_t>();
        c.tos = g["tos"].get<std::uint8_t>();
        c.vlan_id = g["vlan_id"].get<std::uint16_t>();
        const OverlayFields f{g["vni"].get<std::uint32_t>(), g["flow_hash"].get<std::uint16_t>(),
                              g["hop_limit"].get<std::uint8_t>(), 0};
        Bytes inner;
        const std::string inner_hex = g["inner"].get<std::string>();
        for (std::size_t i = 0; i + 1 < inner_hex.size(); i += 2)
            inner.push_back(static_cast<std::uint8_t>(std::stoi(inner_hex.substr(i, 2), nullptr, 16)));
        const Bytes golden = test_support::read_golden_hex(kGoldenDir + g["file"].get<std::string>());
        ASSERT_EQ(golden.size(), g["length"].get<std::size_t>());

        OuterTemplate t(c);
        Bytes out(golden.size());
        ASSERT_EQ(t.encapsulate(inner, out, f), golden.size());
        EXPECT_EQ(out, golden);
        EXPECT_EQ(wire::load_be16(&out[t.header_size() - 10]), g["udp_checksum"].get<std::uint16_t>());
        expect_outer6(c, inner, out, f);

        const DecapResult r = decapsulate(golden, {c.kind, c.udp_port});
        ASSERT_TRUE(r.ok()) << to_string(r.error);
        EXPECT_EQ(Bytes(r.packet.inner.begin(), r.packet.inner.end()), inner);
        EXPECT_TRUE(r.packet.outer_ipv6);
        EXPECT_EQ(r.packet.outer_src_ip6, c.src_ip6);
        EXPECT_EQ(r.packet.outer_dst_ip6, c.dst_ip6);
        EXPECT_EQ(r.packet.outer_ttl, c.ttl);
        EXPECT_EQ(r.packet.outer_vlan_id, c.vlan_id);
        EXPECT_EQ(r.packet.vni, f.vni);
    }
}

// A datagram whose checksum computes to 0 carries 0xffff (0 would mean "none", refused over IPv6).
TEST(Ipv6OuterTemplate, AComputedZeroChecksumIsSentAsFfff) {
    for (const EncapKind kind : kKinds) {
        OuterTemplate t(test_template_config6(kind));
        Bytes inner = make_ipv4_frame(kTenantA, kTenantB, 17, 1, 2, 20);  // 62 bytes: the datagram is 78, even
        inner[60] = inner[61] = 0;
        const OverlayFields f{100, 0x60d1, 64, 0};
        Bytes out(inner.size() + 70);
        ASSERT_EQ(t.encapsulate(inner, out, f), out.size());
        // With the last inner word 0 the checksum is c = ~S; making that word c makes the sum
        // 0xffff, whose complement is 0 (the word sits at an even offset of the datagram).
        const std::uint16_t c = wire::load_be16(&out[60]);
        wire::store_be16(&inner[60], c);
        ASSERT_EQ(t.encapsulate(inner, out, f), out.size());
        EXPECT_EQ(wire::load_be16(&out[60]), 0xffff);
        expect_outer6(test_template_config6(kind), inner, out, f);
        EXPECT_TRUE(decapsulate(out, {kind, 0}).ok());
    }
}

TEST(Ipv6OuterTemplate, SendsNoIpv4IdAndLeavesTheCounterAlone) {
    OuterTemplate t(test_template_config6(EncapKind::andromeda));
    t.set_next_ip_id(0x4242);
    std::mt19937 rng(62);
    Bytes out(1600);
    for (int i = 0; i < 100; ++i) {
        const Bytes inner = random_inner_frame(rng);
        ASSERT_EQ(t.encapsulate(inner, out, {1, static_cast<std::uint16_t>(rng()), 64, 0}), inner.size() + 70);
    }
    EXPECT_EQ(t.next_ip_id(), 0x4242);
}

TEST(Ipv6OuterTemplate, RefusesWhatDoesNotFit) {
    for (const std::uint16_t vid : {std::uint16_t{0}, std::uint16_t{7}}) {
        OuterTemplate t(test_template_config6(EncapKind::andromeda, vid));
        const std::size_t header = t.header_size();
        const Bytes inner(60, 1);
        Bytes small(60 + header - 1, 0xee);
        EXPECT_EQ(t.encapsulate(inner, small, {}), 0u);
        EXPECT_EQ(small, Bytes(60 + header - 1, 0xee));
        const Bytes huge(kMaxInnerFrameSize + 1);
        Bytes big(huge.size() + header);
        EXPECT_EQ(t.encapsulate(huge, big, {}), 0u);
        EXPECT_EQ(t.encapsulate(wire::ByteSpan(huge).first(kMaxInnerFrameSize), big, {}),
                  kMaxInnerFrameSize + header);
        const DecapResult r = decapsulate(wire::ByteSpan(big).first(kMaxInnerFrameSize + header), {});
        ASSERT_TRUE(r.ok()) << to_string(r.error);
        EXPECT_EQ(r.packet.inner.size(), kMaxInnerFrameSize);

        Bytes buffer(200, 0xee);
        EXPECT_TRUE(t.encapsulate_in_place(buffer, header - 1, 60, {}).empty());  // enough for IPv4, not IPv6
        EXPECT_TRUE(t.encapsulate_in_place(buffer, header, 200 - header + 1, {}).empty());
        EXPECT_EQ(buffer, Bytes(200, 0xee));
        EXPECT_EQ(t.encapsulate_in_place(buffer, header, 200 - header, {}).size(), 200u);
    }
}

// Decap of an IPv6-encapsulated frame gives back the frame and every field.
void expect_round_trip6(const OuterTemplateConfig& c, const Bytes& inner, wire::ByteSpan packet,
                        const OverlayFields& f) {
    const DecapResult r = decapsulate(packet, {c.kind, c.udp_port});
    ASSERT_TRUE(r.ok()) << to_string(r.error);
    ASSERT_EQ(Bytes(r.packet.inner.begin(), r.packet.inner.end()), inner);
    EXPECT_EQ(r.packet.inner_offset, outer_headers_size(true, c.vlan_id != 0));
    EXPECT_EQ(r.packet.vni, f.vni);
    EXPECT_EQ(r.packet.outer_src_port, flow_source_port(f.flow_hash));
    EXPECT_TRUE(r.packet.outer_ipv6);
    EXPECT_EQ(r.packet.outer_src_ip6, c.src_ip6);
    EXPECT_EQ(r.packet.outer_dst_ip6, c.dst_ip6);
    EXPECT_EQ(r.packet.outer_src_ip, wire::Ipv4Address());
    EXPECT_EQ(r.packet.outer_dst_ip, wire::Ipv4Address());
    EXPECT_EQ(r.packet.outer_ttl, c.ttl);
    EXPECT_EQ(r.packet.outer_vlan_id, c.vlan_id);
    EXPECT_EQ(r.packet.outer_src_mac, c.src_mac);
    EXPECT_EQ(r.packet.outer_dst_mac, c.dst_mac);
    if (c.kind == EncapKind::andromeda) {
        EXPECT_EQ(r.packet.flow_hash, f.flow_hash);
        EXPECT_EQ(r.packet.hop_limit, f.hop_limit);
        EXPECT_EQ(r.packet.flags, f.flags);
    } else {
        EXPECT_EQ(r.packet.flow_hash, flow_source_port(f.flow_hash));
        EXPECT_EQ(r.packet.hop_limit, kDefaultHopLimit);
        EXPECT_EQ(r.packet.flags, 0);
    }
    EXPECT_EQ(wire::load_be16(packet.data() + r.packet.inner_offset - 10),
              udp6_checksum(packet.data() + ip_offset(c)));
}

TEST(Ipv6EncapDecap, CopyRoundTripsRandomFrames) {
    for (const EncapKind kind : kKinds) {
        for (const std::uint16_t vid : {std::uint16_t{0}, std::uint16_t{300}}) {
            const OuterTemplateConfig c = test_template_config6(kind, vid);
            OuterTemplate t(c);
            std::mt19937 rng(63);
            Bytes out(1600);
            for (int i = 0; i < 2000; ++i) {
                const Bytes inner = random_inner_frame(rng);
                const OverlayFields f = random_fields(rng, kind);
                const std::size_t n = t.encapsulate(inner, out, f);
                ASSERT_EQ(n, inner.size() + t.header_size());
                expect_round_trip6(c, inner, wire::ByteSpan(out).first(n), f);
                if (i % 50 == 0) expect_outer6(c, inner, wire::ByteSpan(out).first(n), f);
            }
        }
    }
}

TEST(Ipv6EncapDecap, InPlaceRoundTripsRandomFramesAndTouchesNothingInFront) {
    for (const EncapKind kind : kKinds) {
        for (const std::uint16_t vid : {std::uint16_t{0}, std::uint16_t{300}}) {
            const OuterTemplateConfig c = test_template_config6(kind, vid);
            OuterTemplate t(c);
            const std::size_t header = t.header_size();
            std::mt19937 rng(64);
            for (int i = 0; i < 2000; ++i) {
                const Bytes inner = random_inner_frame(rng);
                const std::size_t headroom = header + rng() % 200;
                Bytes buffer(headroom + inner.size() + rng() % 64, 0xcc);
                std::copy(inner.begin(), inner.end(), buffer.begin() + static_cast<std::ptrdiff_t>(headroom));
                const OverlayFields f = random_fields(rng, kind);
                const auto outer = t.encapsulate_in_place(buffer, headroom, inner.size(), f);
                ASSERT_EQ(outer.data(), buffer.data() + headroom - header);
                ASSERT_EQ(outer.size(), inner.size() + header);
                expect_round_trip6(c, inner, outer, f);
                for (std::size_t b = 0; b < headroom - header; ++b) ASSERT_EQ(buffer[b], 0xcc);
            }
        }
    }
}

TEST(Ipv6EncapDecap, BurstInPlaceRoundTripsAndHashesEachFrame) {
    for (const EncapKind kind : kKinds) {
        for (const std::uint16_t vid : {std::uint16_t{0}, std::uint16_t{300}}) {
            const OuterTemplateConfig c = test_template_config6(kind, vid);
            OuterTemplate t(c);
            const std::size_t header = t.header_size();
            std::mt19937 rng(65);
            constexpr std::size_t kBurst = 32, kHeadroom = 256;
            for (int round = 0; round < 20; ++round) {
                std::vector<Bytes> inners, buffers;
                std::vector<InPlaceFrame> frames;
                for (std::size_t i = 0; i < kBurst; ++i) {
                    inners.push_back(random_inner_frame(rng));
                    buffers.emplace_back(kHeadroom + inners.back().size());
                    std::copy(inners.back().begin(), inners.back().end(), buffers.back().begin() + kHeadroom);
                }
                for (std::size_t i = 0; i < kBurst; ++i) {
                    // Frame 5 has room for IPv4's tagged 54 bytes, not for IPv6's.
                    frames.push_back({buffers[i].data() + kHeadroom, static_cast<std::uint32_t>(inners[i].size()),
                                      i == 5 ? 54u : static_cast<std::uint32_t>(kHeadroom)});
                }
                ASSERT_EQ(t.encapsulate_burst_in_place(frames, 100), kBurst - 1);
                for (std::size_t i = 0; i < kBurst; ++i) {
                    if (i == 5) {
                        EXPECT_EQ(frames[i].length, 0u);
                        continue;
                    }
                    ASSERT_EQ(frames[i].data, buffers[i].data() + kHeadroom - header);
                    ASSERT_EQ(frames[i].headroom, kHeadroom - header);
                    const OverlayFields f{100, flow_hash_of_frame(inners[i]), kDefaultHopLimit, 0};
                    const wire::ByteSpan packet(frames[i].data, frames[i].length);
                    expect_round_trip6(c, inners[i], packet, f);
                    expect_outer6(c, inners[i], packet, f);
                }
            }
        }
    }
}

// The property over everything a config can say: IPv4 or IPv6, tagged or not, either kind, any
// addresses, port, hop limit and class; any inner frame; copy or in place. decap(encap(x)) == x
// with every outer field as configured, and the outer checksums verify.
TEST(EncapDecapProperty, Ipv4AndIpv6TemplatesRoundTripRandomFrames) {
    std::mt19937 rng(66);
    Bytes out(1700);
    int ipv6_count = 0;
    for (int config_index = 0; config_index < 400; ++config_index) {
        const EncapKind kind = kKinds[rng() % 2];
        OuterTemplateConfig c = test_template_config(kind, rng() % 2 == 0);
        c.ipv6 = rng() % 2 == 0;
        ipv6_count += c.ipv6;
        c.src_ip = wire::Ipv4Address(static_cast<std::uint32_t>(rng()));
        c.dst_ip = wire::Ipv4Address(static_cast<std::uint32_t>(rng()));
        c.src_ip6 = random_ip6(rng);
        c.dst_ip6 = random_ip6(rng);
        c.ttl = static_cast<std::uint8_t>(rng());
        c.tos = static_cast<std::uint8_t>(rng());
        c.vlan_id = rng() % 2 == 0 ? 0 : static_cast<std::uint16_t>(1 + rng() % 4094);
        c.udp_port = rng() % 3 == 0 ? 0 : static_cast<std::uint16_t>(1 + rng() % 0xffff);
        OuterTemplate t(c);
        const std::size_t header = t.header_size();
        ASSERT_EQ(header, outer_headers_size(c.ipv6, c.vlan_id != 0));
        for (int i = 0; i < 25; ++i) {
            const Bytes inner = random_inner_frame(rng);
            const OverlayFields f = random_fields(rng, c.kind);
            wire::ByteSpan packet;
            if (rng() % 2 == 0) {
                const std::size_t n = t.encapsulate(inner, out, f);
                ASSERT_EQ(n, inner.size() + header);
                packet = wire::ByteSpan(out).first(n);
            } else {
                std::copy(inner.begin(), inner.end(), out.begin() + 100);
                const auto outer = t.encapsulate_in_place(out, 100, inner.size(), f);
                ASSERT_EQ(outer.size(), inner.size() + header);
                packet = outer;
            }
            const DecapResult r = decapsulate(packet, {c.kind, c.udp_port});
            ASSERT_TRUE(r.ok()) << to_string(r.error) << " config " << config_index << " frame " << i;
            ASSERT_EQ(Bytes(r.packet.inner.begin(), r.packet.inner.end()), inner);
            EXPECT_EQ(r.packet.inner_offset, header);
            EXPECT_EQ(r.packet.vni, f.vni);
            EXPECT_EQ(r.packet.outer_ipv6, c.ipv6);
            EXPECT_EQ(r.packet.outer_ttl, c.ttl);
            EXPECT_EQ(r.packet.outer_vlan_id, c.vlan_id);
            EXPECT_EQ(r.packet.outer_src_port, flow_source_port(f.flow_hash));
            const std::uint8_t* ip = packet.data() + ip_offset(c);
            if (c.ipv6) {
                EXPECT_EQ(r.packet.outer_src_ip6, c.src_ip6);
                EXPECT_EQ(r.packet.outer_dst_ip6, c.dst_ip6);
                EXPECT_EQ(r.packet.outer_src_ip, wire::Ipv4Address());
                EXPECT_EQ(wire::load_be16(ip + 46), udp6_checksum(ip));
                EXPECT_EQ(ip[1] >> 4 | (ip[0] & 0x0f) << 4, c.tos);
            } else {
                EXPECT_EQ(r.packet.outer_src_ip, c.src_ip);
                EXPECT_EQ(r.packet.outer_dst_ip, c.dst_ip);
                EXPECT_EQ(r.packet.outer_src_ip6, wire::Ipv6Address());
                EXPECT_EQ(r.packet.outer_dst_ip6, wire::Ipv6Address());
                EXPECT_EQ(fold_and_complement(add_words(ip, 20, 0)), 0);  // the header checksum verifies
                EXPECT_EQ(ip[1], c.tos);
            }
        }
    }
    EXPECT_GT(ipv6_count, 100);
}

}  // namespace
}  // namespace andromeda::overlay
