// Outer-header templates and decap: every outer field, checksums against full recomputes, and
// decap(encap(x)) == x over thousands of random inner frames, copy, in place and in bursts.
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

constexpr EncapKind kKinds[] = {EncapKind::andromeda, EncapKind::vxlan};

// The outer IPv4 checksum recomputed from scratch with the field zeroed.
std::uint16_t recomputed_ip_checksum(const std::uint8_t* packet) {
    std::uint8_t header[20];
    std::copy(packet + 14, packet + 34, header);
    header[10] = header[11] = 0;
    return wire::internet_checksum(header);
}

TEST(OuterTemplate, WritesEveryOuterField) {
    OuterTemplate t(test_template_config(EncapKind::andromeda));
    const Bytes inner = make_ipv4_frame(kTenantA, kTenantB, 17, 40000, 4242, 18);  // 60 bytes
    Bytes out(inner.size() + 50);
    ASSERT_EQ(t.encapsulate(inner, out, {100, 0x60d1, 64, 0}), 110u);
    const Bytes expected_outer = {
        0x02, 0x00, 0x00, 0x00, 0xa1, 0x02, 0x02, 0x00, 0x00, 0x00, 0xa1, 0x01, 0x08, 0x00,  // Ethernet
        0x45, 0x00, 0x00, 0x60, 0x00, 0x01, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00,              // IPv4 ...
        0xc0, 0xa8, 0x01, 0x01, 0xc0, 0xa8, 0x01, 0x02,                                      // ... addrs
        0xe0, 0xd1, 0xa9, 0xd9, 0x00, 0x4c, 0x00, 0x00,                                      // UDP
        0x10, 0x00, 0x60, 0xd1, 0x00, 0x00, 0x64, 0x40,                                      // Andromeda
    };
    Bytes outer(out.begin(), out.begin() + 50);
    EXPECT_EQ(wire::load_be16(&outer[24]), recomputed_ip_checksum(out.data()));
    outer[24] = outer[25] = 0;
    EXPECT_EQ(outer, expected_outer);
    EXPECT_EQ(Bytes(out.begin() + 50, out.end()), inner);
}

TEST(OuterTemplate, VxlanUsesItsPortAndHeader) {
    OuterTemplate t(test_template_config(EncapKind::vxlan));
    EXPECT_EQ(t.udp_port(), 4789);
    const Bytes inner = make_ipv4_frame(kTenantA, kTenantB, 17, 40000, 4242);
    Bytes out(inner.size() + 50);
    ASSERT_EQ(t.encapsulate(inner, out, {100, 0x60d1, 64, 0}), out.size());
    EXPECT_EQ(wire::load_be16(&out[34]), 57553);
    EXPECT_EQ(wire::load_be16(&out[36]), 4789);
    EXPECT_EQ(Bytes(out.begin() + 42, out.begin() + 50), (Bytes{0x08, 0, 0, 0, 0, 0, 100, 0}));
}

TEST(OuterTemplate, ConfigurablePortTtlTosAndDf) {
    auto config = test_template_config(EncapKind::vxlan);
    config.udp_port = kVxlanLinuxLegacyPort;
    config.ttl = 9;
    config.tos = 0xb8;
    config.dont_fragment = false;
    OuterTemplate t(config);
    const Bytes inner(60, 0xab);
    Bytes out(110);
    ASSERT_EQ(t.encapsulate(inner, out, {7, 1, 64, 0}), 110u);
    EXPECT_EQ(wire::load_be16(&out[36]), 8472);
    EXPECT_EQ(out[22], 9);
    EXPECT_EQ(out[15], 0xb8);
    EXPECT_EQ(wire::load_be16(&out[20]), 0);
    EXPECT_EQ(wire::load_be16(&out[24]), recomputed_ip_checksum(out.data()));
}

TEST(OuterTemplate, IpIdIncrementsAndChecksumAlwaysMatchesRecompute) {
    OuterTemplate t(test_template_config(EncapKind::andromeda));
    t.set_next_ip_id(0xfff0);
    std::mt19937 rng(3);
    Bytes out(1600);
    for (std::uint32_t i = 0; i < 70000; ++i) {  // wraps the 16-bit ID
        const Bytes inner(14 + rng() % 1500, 0x5a);
        ASSERT_EQ(t.encapsulate(inner, out, {100, static_cast<std::uint16_t>(rng()), 64, 0}), inner.size() + 50);
        ASSERT_EQ(wire::load_be16(&out[18]), static_cast<std::uint16_t>(0xfff0 + i));
        ASSERT_EQ(wire::load_be16(&out[24]), recomputed_ip_checksum(out.data())) << i;
        ASSERT_TRUE(wire::checksum_verifies(wire::ByteSpan(out.data() + 14, 20)));
    }
}

// The checksum is folded from memory-order words with a precomputed constant part: check it
// against a recomputation for many header constants (addresses, TTL, TOS, DF), lengths and IDs,
// which between them reach every carry case of the fold.
TEST(OuterTemplate, ChecksumMatchesRecomputeForAnyHeaderConstants) {
    std::mt19937 rng(17);
    Bytes out(1600);
    for (int config_index = 0; config_index < 2000; ++config_index) {
        OuterTemplateConfig config = test_template_config(kKinds[config_index % 2]);
        config.src_ip = wire::Ipv4Address(static_cast<std::uint32_t>(rng()));
        config.dst_ip = wire::Ipv4Address(static_cast<std::uint32_t>(rng()));
        config.ttl = static_cast<std::uint8_t>(rng());
        config.tos = static_cast<std::uint8_t>(rng());
        config.dont_fragment = rng() % 2 == 0;
        OuterTemplate t(config);
        t.set_next_ip_id(static_cast<std::uint16_t>(rng()));
        for (int i = 0; i < 40; ++i) {
            const Bytes inner(14 + rng() % 1500, 0x5a);
            ASSERT_EQ(t.encapsulate(inner, out, {100, static_cast<std::uint16_t>(rng()), 64, 0}), inner.size() + 50);
            ASSERT_EQ(wire::load_be16(&out[24]), recomputed_ip_checksum(out.data())) << config_index << " " << i;
        }
    }
}

// The express lanes' header word (precomputed per template and VNI) writes what the fields do.
TEST(OuterTemplate, FreshHeaderWordEncodesLikeDefaultFields) {
    std::mt19937 rng(23);
    const Bytes inner = make_ipv4_frame(kTenantA, kTenantB, 17, 40000, 4242);
    for (const EncapKind kind : kKinds) {
        OuterTemplate by_fields(test_template_config(kind));
        OuterTemplate by_word(test_template_config(kind));
        for (int i = 0; i < 5000; ++i) {
            const auto vni = static_cast<std::uint32_t>(rng() & 0xffffff);
            const auto hash = static_cast<std::uint16_t>(rng());
            Bytes a(inner.size() + 50), b(inner.size() + 50);
            ASSERT_EQ(by_fields.encapsulate_untagged(inner, a, {vni, hash, kDefaultHopLimit, 0}), a.size());
            ASSERT_EQ(by_word.encapsulate_untagged(inner, b, by_word.fresh_header_word(OuterTemplate::vni_bits(vni), hash),
                                                   hash),
                      b.size());
            ASSERT_EQ(a, b) << "VNI " << vni << " hash " << hash;
        }
    }
}

TEST(OuterTemplate, UdpChecksumOnRequestVerifies) {
    OuterTemplate t(test_template_config(EncapKind::andromeda, true));
    std::mt19937 rng(4);
    for (int i = 0; i < 2000; ++i) {
        const Bytes inner = random_inner_frame(rng);
        Bytes out(inner.size() + 50);
        ASSERT_EQ(t.encapsulate(inner, out, {100, static_cast<std::uint16_t>(rng()), 64, 0}), out.size());
        ASSERT_NE(wire::load_be16(&out[40]), 0);
        const auto pseudo = wire::pseudo_header_sum(wire::Ipv4Address(0xc0a80101), wire::Ipv4Address(0xc0a80102), 17,
                                                    static_cast<std::uint32_t>(out.size() - 34));
        ASSERT_TRUE(wire::checksum_verifies(wire::ByteSpan(out).subspan(34), pseudo));
        ASSERT_TRUE(decapsulate(out, {}).ok());
    }
}

TEST(OuterTemplate, RefusesWhatDoesNotFit) {
    OuterTemplate t(test_template_config(EncapKind::andromeda));
    const Bytes inner(60, 1);
    Bytes small(109, 0xee);
    EXPECT_EQ(t.encapsulate(inner, small, {}), 0u);
    EXPECT_EQ(small, Bytes(109, 0xee));
    const Bytes huge(kMaxInnerFrameSize + 1);
    Bytes big(huge.size() + 50);
    EXPECT_EQ(t.encapsulate(huge, big, {}), 0u);
    EXPECT_EQ(t.encapsulate(wire::ByteSpan(huge).first(kMaxInnerFrameSize), big, {}), kMaxInnerFrameSize + 50);

    Bytes buffer(200, 0xee);
    EXPECT_TRUE(t.encapsulate_in_place(buffer, 49, 60, {}).empty());   // headroom 49
    EXPECT_TRUE(t.encapsulate_in_place(buffer, 50, 151, {}).empty());  // runs past the buffer
    EXPECT_TRUE(t.encapsulate_in_place(buffer, 201, 0, {}).empty());
    EXPECT_EQ(buffer, Bytes(200, 0xee));
    EXPECT_EQ(t.encapsulate_in_place(buffer, 50, 150, {}).size(), 200u);
}

// Decap of an encapsulated frame gives back the frame and every overlay field.
void expect_round_trip(const Bytes& inner, wire::ByteSpan packet, EncapKind kind, const OverlayFields& fields) {
    const DecapResult r = decapsulate(packet, {kind, 0});
    ASSERT_TRUE(r.ok()) << to_string(r.error);
    ASSERT_EQ(Bytes(r.packet.inner.begin(), r.packet.inner.end()), inner);
    EXPECT_EQ(r.packet.inner_offset, 50u);
    EXPECT_EQ(r.packet.vni, fields.vni);
    EXPECT_EQ(r.packet.outer_src_port, flow_source_port(fields.flow_hash));
    EXPECT_EQ(r.packet.outer_src_ip, wire::Ipv4Address(0xc0a80101));
    EXPECT_EQ(r.packet.outer_dst_ip, wire::Ipv4Address(0xc0a80102));
    EXPECT_EQ(r.packet.outer_src_mac, *wire::MacAddress::parse("02:00:00:00:a1:01"));
    EXPECT_EQ(r.packet.outer_ttl, 64);
    if (kind == EncapKind::andromeda) {
        EXPECT_EQ(r.packet.flow_hash, fields.flow_hash);
        EXPECT_EQ(r.packet.hop_limit, fields.hop_limit);
        EXPECT_EQ(r.packet.flags, fields.flags);
    } else {
        EXPECT_EQ(r.packet.flow_hash, flow_source_port(fields.flow_hash));
    }
    EXPECT_EQ(wire::load_be16(packet.data() + 24), recomputed_ip_checksum(packet.data()));
}

OverlayFields random_fields(std::mt19937& rng, EncapKind kind) {
    OverlayFields f{static_cast<std::uint32_t>(rng() & 0xffffff), static_cast<std::uint16_t>(rng()),
                    static_cast<std::uint8_t>(rng()), static_cast<std::uint8_t>(rng() & 0x0f)};
    if (kind == EncapKind::vxlan) f.flags = 0;
    return f;
}

TEST(EncapDecap, CopyRoundTripsRandomFrames) {
    for (const EncapKind kind : kKinds) {
        for (const bool udp_checksum : {false, true}) {
            OuterTemplate t(test_template_config(kind, udp_checksum));
            std::mt19937 rng(11);
            Bytes out(1600);
            for (int i = 0; i < 3000; ++i) {
                const Bytes inner = random_inner_frame(rng);
                const OverlayFields fields = random_fields(rng, kind);
                const std::size_t n = t.encapsulate(inner, out, fields);
                ASSERT_EQ(n, inner.size() + 50);
                expect_round_trip(inner, wire::ByteSpan(out).first(n), kind, fields);
            }
        }
    }
}

TEST(EncapDecap, InPlaceRoundTripsRandomFrames) {
    for (const EncapKind kind : kKinds) {
        OuterTemplate t(test_template_config(kind));
        std::mt19937 rng(12);
        for (int i = 0; i < 3000; ++i) {
            const Bytes inner = random_inner_frame(rng);
            const std::size_t headroom = 50 + rng() % 200;
            Bytes buffer(headroom + inner.size() + rng() % 64, 0xcc);
            std::copy(inner.begin(), inner.end(), buffer.begin() + static_cast<std::ptrdiff_t>(headroom));
            const OverlayFields fields = random_fields(rng, kind);
            const auto outer = t.encapsulate_in_place(buffer, headroom, inner.size(), fields);
            ASSERT_EQ(outer.data(), buffer.data() + headroom - 50);
            ASSERT_EQ(outer.size(), inner.size() + 50);
            expect_round_trip(inner, outer, kind, fields);
            // Nothing in front of the 50 bytes was touched.
            for (std::size_t b = 0; b < headroom - 50; ++b) ASSERT_EQ(buffer[b], 0xcc);
        }
    }
}

TEST(EncapDecap, BurstInPlaceRoundTripsAndHashesEachFrame) {
    OuterTemplate t(test_template_config(EncapKind::andromeda));
    std::mt19937 rng(13);
    constexpr std::size_t kBurst = 32, kHeadroom = 256;
    for (int round = 0; round < 100; ++round) {
        std::vector<Bytes> inners, buffers;
        std::vector<InPlaceFrame> frames;
        for (std::size_t i = 0; i < kBurst; ++i) {
            inners.push_back(random_inner_frame(rng));
            buffers.emplace_back(kHeadroom + inners.back().size());
            std::copy(inners.back().begin(), inners.back().end(), buffers.back().begin() + kHeadroom);
        }
        for (std::size_t i = 0; i < kBurst; ++i) {
            frames.push_back({buffers[i].data() + kHeadroom, static_cast<std::uint32_t>(inners[i].size()),
                              i == 5 ? 40u : static_cast<std::uint32_t>(kHeadroom)});
        }
        ASSERT_EQ(t.encapsulate_burst_in_place(frames, 100), kBurst - 1);
        for (std::size_t i = 0; i < kBurst; ++i) {
            if (i == 5) {
                EXPECT_EQ(frames[i].length, 0u);  // too little headroom: dropped
                continue;
            }
            ASSERT_EQ(frames[i].data, buffers[i].data() + kHeadroom - 50);
            ASSERT_EQ(frames[i].headroom, kHeadroom - 50);
            expect_round_trip(inners[i], wire::ByteSpan(frames[i].data, frames[i].length), EncapKind::andromeda,
                              {100, flow_hash_of_frame(inners[i]), kDefaultHopLimit, 0});
        }
    }
}

TEST(EncapDecap, DecapHonoursAConfiguredPort) {
    auto config = test_template_config(EncapKind::vxlan);
    config.udp_port = 8472;
    OuterTemplate t(config);
    const Bytes inner = make_ipv4_frame(kTenantA, kTenantB, 6, 1, 2);
    Bytes out(inner.size() + 50);
    t.encapsulate(inner, out, {5, 9, 64, 0});
    EXPECT_EQ(decapsulate(out, {EncapKind::vxlan, 8472}).error, DecapError::ok);
    EXPECT_EQ(decapsulate(out, {EncapKind::vxlan, 0}).error, DecapError::wrong_udp_port);
    EXPECT_EQ(decapsulate(out, {EncapKind::andromeda, 8472}).error, DecapError::bad_overlay_version);
}

}  // namespace
}  // namespace andromeda::overlay
