// Outer-header templates with an 802.1Q tag ([node] underlay_vlan): the 54 outer bytes field by
// field, the same IPv4/UDP/overlay part as untagged, and decap(encap(x)) == x with the tag, copy,
// in place and in bursts, with and without the outer UDP checksum.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "overlay/decap.hpp"
#include "overlay/flow_hash.hpp"
#include "overlay/outer_template.hpp"
#include "unit/overlay/overlay_test_frames.hpp"
#include "wire/checksum.hpp"

namespace andromeda::overlay {
namespace {

using testing::Bytes;
using testing::kTenantA;
using testing::kTenantB;
using testing::make_ipv4_frame;
using testing::random_inner_frame;
using testing::test_template_config;

constexpr std::uint16_t kVid = 100;

OuterTemplateConfig tagged_config(EncapKind kind, bool udp_checksum = false, std::uint16_t vid = kVid) {
    OuterTemplateConfig c = test_template_config(kind, udp_checksum);
    c.vlan_id = vid;
    return c;
}

std::uint16_t recomputed_ip_checksum(const std::uint8_t* ip) {
    std::uint8_t header[20];
    std::copy(ip, ip + 20, header);
    header[10] = header[11] = 0;
    return wire::internet_checksum(header);
}

TEST(TaggedOuterTemplate, SizesAndFlags) {
    const OuterTemplate untagged(test_template_config(EncapKind::andromeda));
    EXPECT_FALSE(untagged.tagged());
    EXPECT_EQ(untagged.header_size(), 50u);
    const OuterTemplate tagged(tagged_config(EncapKind::andromeda));
    EXPECT_TRUE(tagged.tagged());
    EXPECT_EQ(tagged.header_size(), 54u);
    EXPECT_EQ(kTaggedOuterHeadersSize, 54u);
}

TEST(TaggedOuterTemplate, WritesEveryOuterFieldWithTheTag) {
    OuterTemplate t(tagged_config(EncapKind::andromeda));
    const Bytes inner = make_ipv4_frame(kTenantA, kTenantB, 17, 40000, 4242, 18);  // 60 bytes
    Bytes out(inner.size() + 54);
    ASSERT_EQ(t.encapsulate(inner, out, {100, 0x60d1, 64, 0}), 114u);
    const Bytes expected_outer = {
        0x02, 0x00, 0x00, 0x00, 0xa1, 0x02, 0x02, 0x00, 0x00, 0x00, 0xa1, 0x01,  // destination, source MAC
        0x81, 0x00, 0x00, 0x64,                                                  // 802.1Q: PCP 0, DEI 0, VID 100
        0x08, 0x00,                                                              // IPv4
        0x45, 0x00, 0x00, 0x60, 0x00, 0x01, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00,  // IPv4 (same as untagged) ...
        0xc0, 0xa8, 0x01, 0x01, 0xc0, 0xa8, 0x01, 0x02,                          // ... addresses
        0xe0, 0xd1, 0xa9, 0xd9, 0x00, 0x4c, 0x00, 0x00,                          // UDP
        0x10, 0x00, 0x60, 0xd1, 0x00, 0x00, 0x64, 0x40,                          // Andromeda
    };
    Bytes outer(out.begin(), out.begin() + 54);
    EXPECT_EQ(wire::load_be16(&outer[28]), recomputed_ip_checksum(out.data() + 18));
    outer[28] = outer[29] = 0;
    EXPECT_EQ(outer, expected_outer);
    EXPECT_EQ(Bytes(out.begin() + 54, out.end()), inner);
}

TEST(TaggedOuterTemplate, TheTagIsTheOnlyDifferenceFromUntagged) {
    for (const EncapKind kind : {EncapKind::andromeda, EncapKind::vxlan}) {
        for (const bool udp_checksum : {false, true}) {
            OuterTemplate plain(test_template_config(kind, udp_checksum));
            OuterTemplate tagged(tagged_config(kind, udp_checksum, 4094));
            std::mt19937 rng(21);
            for (int i = 0; i < 200; ++i) {
                const Bytes inner = random_inner_frame(rng);
                const OverlayFields fields{static_cast<std::uint32_t>(rng() & 0xffffff), static_cast<std::uint16_t>(rng()),
                                           64, 0};
                Bytes a(inner.size() + 50), b(inner.size() + 54);
                ASSERT_EQ(plain.encapsulate(inner, a, fields), a.size());
                ASSERT_EQ(tagged.encapsulate(inner, b, fields), b.size());
                EXPECT_EQ(Bytes(b.begin(), b.begin() + 12), Bytes(a.begin(), a.begin() + 12));
                EXPECT_EQ(Bytes(b.begin() + 12, b.begin() + 16), (Bytes{0x81, 0x00, 0x0f, 0xfe}));
                ASSERT_EQ(Bytes(b.begin() + 16, b.end()), Bytes(a.begin() + 12, a.end())) << "frame " << i;
            }
        }
    }
}

TEST(TaggedOuterTemplate, RefusesWhatDoesNotFit) {
    OuterTemplate t(tagged_config(EncapKind::andromeda));
    const Bytes inner(60, 1);
    Bytes small(113, 0xee);  // 60 + 54 - 1
    EXPECT_EQ(t.encapsulate(inner, small, {}), 0u);
    EXPECT_EQ(small, Bytes(113, 0xee));
    const Bytes huge(kMaxInnerFrameSize + 1);
    Bytes big(huge.size() + 54);
    EXPECT_EQ(t.encapsulate(huge, big, {}), 0u);
    EXPECT_EQ(t.encapsulate(wire::ByteSpan(huge).first(kMaxInnerFrameSize), big, {}), kMaxInnerFrameSize + 54);

    Bytes buffer(200, 0xee);
    EXPECT_TRUE(t.encapsulate_in_place(buffer, 53, 60, {}).empty());  // headroom 53: enough untagged, not tagged
    EXPECT_TRUE(t.encapsulate_in_place(buffer, 54, 147, {}).empty());  // runs past the buffer
    EXPECT_EQ(buffer, Bytes(200, 0xee));
    EXPECT_EQ(t.encapsulate_in_place(buffer, 54, 146, {}).size(), 200u);
}

void expect_tagged_round_trip(const Bytes& inner, wire::ByteSpan packet, EncapKind kind, const OverlayFields& fields) {
    ASSERT_GE(packet.size(), 54u);
    EXPECT_EQ(wire::load_be16(packet.data() + 12), 0x8100);
    EXPECT_EQ(wire::load_be16(packet.data() + 14), kVid);
    const DecapResult r = decapsulate(packet, {kind, 0});
    ASSERT_TRUE(r.ok()) << to_string(r.error);
    ASSERT_EQ(Bytes(r.packet.inner.begin(), r.packet.inner.end()), inner);
    EXPECT_EQ(r.packet.inner_offset, 54u);
    EXPECT_EQ(r.packet.outer_vlan_id, kVid);
    EXPECT_EQ(r.packet.vni, fields.vni);
    EXPECT_EQ(r.packet.outer_src_port, flow_source_port(fields.flow_hash));
    EXPECT_EQ(r.packet.outer_src_ip, wire::Ipv4Address(0xc0a80101));
    EXPECT_EQ(r.packet.outer_dst_ip, wire::Ipv4Address(0xc0a80102));
    EXPECT_EQ(r.packet.outer_src_mac, *wire::MacAddress::parse("02:00:00:00:a1:01"));
    EXPECT_EQ(r.packet.outer_dst_mac, *wire::MacAddress::parse("02:00:00:00:a1:02"));
    if (kind == EncapKind::andromeda) {
        EXPECT_EQ(r.packet.flow_hash, fields.flow_hash);
        EXPECT_EQ(r.packet.hop_limit, fields.hop_limit);
    }
    EXPECT_EQ(wire::load_be16(packet.data() + 28), recomputed_ip_checksum(packet.data() + 18));
}

TEST(TaggedEncapDecap, CopyRoundTripsRandomFrames) {
    for (const EncapKind kind : {EncapKind::andromeda, EncapKind::vxlan}) {
        for (const bool udp_checksum : {false, true}) {
            OuterTemplate t(tagged_config(kind, udp_checksum));
            std::mt19937 rng(22);
            Bytes out(1600);
            for (int i = 0; i < 2000; ++i) {
                const Bytes inner = random_inner_frame(rng);
                const OverlayFields fields{static_cast<std::uint32_t>(rng() & 0xffffff), static_cast<std::uint16_t>(rng()),
                                           static_cast<std::uint8_t>(1 + rng() % 255), 0};
                const std::size_t n = t.encapsulate(inner, out, fields);
                ASSERT_EQ(n, inner.size() + 54);
                expect_tagged_round_trip(inner, wire::ByteSpan(out).first(n), kind, fields);
                if (udp_checksum) {
                    const auto pseudo = wire::pseudo_header_sum(wire::Ipv4Address(0xc0a80101), wire::Ipv4Address(0xc0a80102),
                                                                17, static_cast<std::uint32_t>(n - 38));
                    ASSERT_TRUE(wire::checksum_verifies(wire::ByteSpan(out).subspan(38, n - 38), pseudo));
                }
            }
        }
    }
}

TEST(TaggedEncapDecap, InPlaceRoundTripsRandomFramesAndTouchesNothingInFront) {
    OuterTemplate t(tagged_config(EncapKind::andromeda));
    std::mt19937 rng(23);
    for (int i = 0; i < 2000; ++i) {
        const Bytes inner = random_inner_frame(rng);
        const std::size_t headroom = 54 + rng() % 200;
        Bytes buffer(headroom + inner.size() + rng() % 64, 0xcc);
        std::copy(inner.begin(), inner.end(), buffer.begin() + static_cast<std::ptrdiff_t>(headroom));
        const OverlayFields fields{static_cast<std::uint32_t>(rng() & 0xffffff), static_cast<std::uint16_t>(rng()), 64, 0};
        const auto outer = t.encapsulate_in_place(buffer, headroom, inner.size(), fields);
        ASSERT_EQ(outer.data(), buffer.data() + headroom - 54);
        ASSERT_EQ(outer.size(), inner.size() + 54);
        expect_tagged_round_trip(inner, outer, EncapKind::andromeda, fields);
        for (std::size_t b = 0; b < headroom - 54; ++b) ASSERT_EQ(buffer[b], 0xcc);
    }
}

TEST(TaggedEncapDecap, BurstInPlaceRoundTrips) {
    OuterTemplate t(tagged_config(EncapKind::andromeda));
    std::mt19937 rng(24);
    constexpr std::size_t kBurst = 16, kHeadroom = 128;
    std::vector<Bytes> inners, buffers;
    std::vector<InPlaceFrame> frames;
    for (std::size_t i = 0; i < kBurst; ++i) {
        inners.push_back(random_inner_frame(rng));
        buffers.emplace_back(kHeadroom + inners.back().size());
        std::copy(inners.back().begin(), inners.back().end(), buffers.back().begin() + kHeadroom);
    }
    for (std::size_t i = 0; i < kBurst; ++i)
        frames.push_back({buffers[i].data() + kHeadroom, static_cast<std::uint32_t>(inners[i].size()),
                          i == 3 ? 50u : static_cast<std::uint32_t>(kHeadroom)});  // 50: enough only untagged
    ASSERT_EQ(t.encapsulate_burst_in_place(frames, 100), kBurst - 1);
    for (std::size_t i = 0; i < kBurst; ++i) {
        if (i == 3) {
            EXPECT_EQ(frames[i].length, 0u);
            continue;
        }
        ASSERT_EQ(frames[i].data, buffers[i].data() + kHeadroom - 54);
        ASSERT_EQ(frames[i].headroom, kHeadroom - 54);
        expect_tagged_round_trip(inners[i], wire::ByteSpan(frames[i].data, frames[i].length), EncapKind::andromeda,
                                 {100, flow_hash_of_frame(inners[i]), kDefaultHopLimit, 0});
    }
}

}  // namespace
}  // namespace andromeda::overlay
