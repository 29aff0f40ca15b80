// The 8-byte overlay headers and the flow hash, field by field.
#include <gtest/gtest.h>

#include <array>
#include <random>

#include "overlay/andromeda_header.hpp"
#include "overlay/flow_hash.hpp"
#include "overlay/vxlan_header.hpp"
#include "unit/overlay/overlay_test_frames.hpp"

namespace andromeda::overlay {
namespace {

using testing::kTenantA;
using testing::kTenantB;
using testing::make_ipv4_frame;

TEST(AndromedaHeader, EncodesEveryFieldAtItsOffset) {
    std::array<std::uint8_t, 8> out{};
    AndromedaHeader{kAndromedaFlagOam, 0, 0x60d1, 0x123456, 17}.encode(out.data());
    EXPECT_EQ(out, (std::array<std::uint8_t, 8>{0x14, 0x00, 0x60, 0xd1, 0x12, 0x34, 0x56, 17}));
}

TEST(AndromedaHeader, DefaultsAreVersion1EthernetHopLimit64) {
    std::array<std::uint8_t, 8> out{};
    AndromedaHeader{}.encode(out.data());
    EXPECT_EQ(out, (std::array<std::uint8_t, 8>{0x10, 0, 0, 0, 0, 0, 0, 64}));
}

TEST(AndromedaHeader, EncodeMasksFlagsAndVni) {
    std::array<std::uint8_t, 8> out{};
    AndromedaHeader{0xff, 0, 0, 0xff000001, 1}.encode(out.data());
    EXPECT_EQ(out[0], 0x1f);
    EXPECT_EQ(wire::load_be24(&out[4]), 1u);
}

TEST(AndromedaHeader, EveryFieldRoundTrips) {
    std::mt19937 rng(7);
    for (int i = 0; i < 5000; ++i) {
        const AndromedaHeader h{static_cast<std::uint8_t>(rng() & 0x0f), static_cast<std::uint8_t>(rng()),
                                static_cast<std::uint16_t>(rng()), static_cast<std::uint32_t>(rng() & kMaxVni),
                                static_cast<std::uint8_t>(rng())};
        std::array<std::uint8_t, 8> out{};
        h.encode(out.data());
        const auto back = AndromedaHeader::decode(out);
        ASSERT_TRUE(back);
        EXPECT_EQ(*back, h);
    }
}

TEST(AndromedaHeader, ControlAndOamFlags) {
    const std::array<std::uint8_t, 8> control{0x18, 0, 0, 0, 0, 0, 0, 64};
    const std::array<std::uint8_t, 8> oam{0x14, 0, 0, 0, 0, 0, 0, 64};
    EXPECT_TRUE(AndromedaHeader::decode(control)->is_control());
    EXPECT_FALSE(AndromedaHeader::decode(control)->is_oam());
    EXPECT_TRUE(AndromedaHeader::decode(oam)->is_oam());
    EXPECT_FALSE(AndromedaHeader::decode(oam)->is_control());
}

TEST(AndromedaHeader, DecodeRejectsOtherVersionsAndShortInput) {
    for (int version = 0; version < 16; ++version) {
        const std::array<std::uint8_t, 8> bytes{static_cast<std::uint8_t>(version << 4), 0, 0, 0, 0, 0, 100, 64};
        EXPECT_EQ(AndromedaHeader::decode(bytes).has_value(), version == 1) << version;
    }
    const std::array<std::uint8_t, 7> short_input{0x10, 0, 0, 0, 0, 0, 100};
    EXPECT_FALSE(AndromedaHeader::decode(short_input));
}

TEST(VxlanHeader, EncodesRfc7348Layout) {
    std::array<std::uint8_t, 8> out;
    out.fill(0xee);
    VxlanHeader{0xabcdef}.encode(out.data());
    EXPECT_EQ(out, (std::array<std::uint8_t, 8>{0x08, 0, 0, 0, 0xab, 0xcd, 0xef, 0}));
}

TEST(VxlanHeader, VniRoundTripsAndReservedBitsAreIgnored) {
    std::mt19937 rng(8);
    for (int i = 0; i < 5000; ++i) {
        const std::uint32_t vni = rng() & 0xffffff;
        std::array<std::uint8_t, 8> out{};
        VxlanHeader{vni}.encode(out.data());
        out[0] |= static_cast<std::uint8_t>(rng() & 0xf7);  // reserved flag bits
        out[1] = static_cast<std::uint8_t>(rng());
        out[7] = static_cast<std::uint8_t>(rng());
        const auto back = VxlanHeader::decode(out);
        ASSERT_TRUE(back);
        EXPECT_EQ(back->vni, vni);
    }
}

TEST(VxlanHeader, DecodeRequiresTheIFlag) {
    const std::array<std::uint8_t, 8> no_i{0x00, 0, 0, 0, 0, 0, 100, 0};
    const std::array<std::uint8_t, 7> short_input{0x08, 0, 0, 0, 0, 0, 100};
    EXPECT_FALSE(VxlanHeader::decode(no_i));
    EXPECT_FALSE(VxlanHeader::decode(short_input));
}

TEST(FlowHash, DesignTestVector) {
    const FlowTuple t{kTenantA, kTenantB, 40000, 4242, 17};
    EXPECT_EQ(flow_hash(t), 0x60d1);
    EXPECT_EQ(flow_source_port(flow_hash(t)), 57553);
}

TEST(FlowHash, SourcePortIsAlwaysDynamicRange) {
    for (std::uint32_t h = 0; h <= 0xffff; ++h) {
        const std::uint16_t port = flow_source_port(static_cast<std::uint16_t>(h));
        ASSERT_GE(port, 49152);
        ASSERT_EQ(port & 0x3fff, h & 0x3fff);
    }
}

TEST(FlowHash, TupleOfUdpFrame) {
    const auto frame = make_ipv4_frame(kTenantA, kTenantB, 17, 40000, 4242, 10);
    const auto t = flow_tuple_of_frame(frame);
    ASSERT_TRUE(t);
    EXPECT_EQ(*t, (FlowTuple{kTenantA, kTenantB, 40000, 4242, 17}));
    EXPECT_EQ(flow_hash_of_frame(frame), 0x60d1);
}

TEST(FlowHash, ReferenceHashesOfCapturedFlows) {
    // Values from testdata/light-andromeda/underlay.pcap.
    EXPECT_EQ(flow_hash_of_frame(make_ipv4_frame(kTenantA, kTenantB, 6, 52264, 7000)), 0xc19d);
    EXPECT_EQ(flow_hash_of_frame(make_ipv4_frame(kTenantB, kTenantA, 6, 7000, 52264)), 0xa68c);
    EXPECT_EQ(flow_hash_of_frame(make_ipv4_frame(kTenantA, kTenantB, 17, 42180, 7001)), 0x468d);
}

TEST(FlowHash, IcmpHashesToZeroAsTheReferenceDoes) {
    EXPECT_EQ(flow_hash_of_frame(make_ipv4_frame(kTenantA, kTenantB, 1, 0x0800, 0x1234, 56)), 0);
    // ...while its tuple is still the ports-0 one.
    EXPECT_EQ(*flow_tuple_of_frame(make_ipv4_frame(kTenantA, kTenantB, 1, 0x0800, 0x1234)),
              (FlowTuple{kTenantA, kTenantB, 0, 0, 1}));
}

TEST(FlowHash, OtherProtocolsHashWithPortsZero) {
    const auto gre = make_ipv4_frame(kTenantA, kTenantB, 47, 0xabcd, 0x1234);
    EXPECT_EQ(flow_hash_of_frame(gre), flow_hash({kTenantA, kTenantB, 0, 0, 47}));
}

TEST(FlowHash, NonFirstFragmentsHashWithoutPorts) {
    const auto first = make_ipv4_frame(kTenantA, kTenantB, 17, 40000, 4242, 64, 0x2000);   // MF, offset 0
    const auto later = make_ipv4_frame(kTenantA, kTenantB, 17, 0xdead, 0xbeef, 64, 0x0008);  // offset 64
    EXPECT_EQ(flow_hash_of_frame(first), 0x60d1);
    EXPECT_EQ(flow_hash_of_frame(later), flow_hash({kTenantA, kTenantB, 0, 0, 17}));
}

TEST(FlowHash, VlanTaggedInnerFrame) {
    auto frame = make_ipv4_frame(kTenantA, kTenantB, 17, 40000, 4242);
    const std::uint8_t tag[4] = {0x81, 0x00, 0x00, 0x64};
    frame.insert(frame.begin() + 12, std::begin(tag), std::end(tag));
    EXPECT_EQ(flow_hash_of_frame(frame), 0x60d1);
}

TEST(FlowHash, NonIpv4FramesHaveTheDocumentedHash) {
    auto arp = make_ipv4_frame(kTenantA, kTenantB, 17, 1, 2);
    wire::store_be16(&arp[12], 0x0806);
    EXPECT_EQ(flow_hash_of_frame(arp), 0);
    EXPECT_FALSE(flow_tuple_of_frame(arp));
    EXPECT_EQ(flow_hash_of_frame(wire::ByteSpan(arp).first(10)), 0);

    // IPv6 UDP: addresses folded to 32 bits, next header 17, ports.
    testing::Bytes v6(14 + 40 + 8, 0);
    wire::store_be16(&v6[12], 0x86dd);
    v6[14] = 0x60;
    v6[14 + 5] = 8;  // payload length
    v6[14 + 6] = 17;
    wire::store_be32(&v6[14 + 8], 0xfd000000);
    wire::store_be32(&v6[14 + 20], 0x00000001);
    wire::store_be32(&v6[14 + 24], 0xfd000000);
    wire::store_be32(&v6[14 + 36], 0x00000002);
    wire::store_be16(&v6[54], 40000);
    wire::store_be16(&v6[56], 4242);
    EXPECT_EQ(flow_hash_of_frame(v6), flow_hash({0xfd000001, 0xfd000002, 40000, 4242, 17}));
    EXPECT_FALSE(flow_tuple_of_frame(v6));

    // ...and behind a hop-by-hop header, the ports are still found.
    const std::uint8_t hop_by_hop[8] = {17, 0, 1, 4, 0, 0, 0, 0};
    v6[14 + 6] = 0;
    v6[14 + 5] = 16;
    v6.insert(v6.begin() + 54, std::begin(hop_by_hop), std::end(hop_by_hop));
    EXPECT_EQ(flow_hash_of_frame(v6), flow_hash({0xfd000001, 0xfd000002, 40000, 4242, 17}));
    v6[14 + 5] = 200;  // payload length past the frame: malformed
    EXPECT_EQ(flow_hash_of_frame(v6), 0);
}

TEST(FlowHash, MalformedIpv4HashesToZero) {
    auto frame = make_ipv4_frame(kTenantA, kTenantB, 17, 40000, 4242);
    frame[14] = 0x43;  // IHL 3
    EXPECT_EQ(flow_hash_of_frame(frame), 0);
    EXPECT_FALSE(flow_tuple_of_frame(frame));
}

}  // namespace
}  // namespace andromeda::overlay
