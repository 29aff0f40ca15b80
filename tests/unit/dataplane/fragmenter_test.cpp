// Ipv4Fragmenter on its own: sizes, options, offsets, limits, and a property over random sizes.
#include <gtest/gtest.h>

#include <random>

#include "dataplane/ipv4_fragmenter.hpp"
#include "unit/dataplane/frame_validator.hpp"
#include "unit/dataplane/reassembly.hpp"

namespace andromeda::testing {
namespace {

using dataplane::Ipv4Fragmenter;

Ipv4Spec packet(std::size_t payload) {
    Ipv4Spec s;
    s.src_mac = mac("02:00:00:00:00:10");
    s.dst_mac = mac("02:00:00:00:00:ff");
    s.src = ipv4("10.0.0.10");
    s.dst = ipv4("10.0.0.20");
    s.payload = payload;
    return s;
}

std::vector<Bytes> fragment(const Bytes& frame, std::size_t mtu, std::size_t eth_length = 14) {
    const auto ip = wire::Ipv4View::parse(wire::ByteSpan(frame).subspan(eth_length));
    const Ipv4Fragmenter fragmenter(frame, eth_length, *ip, mtu);
    std::vector<Bytes> out;
    if (!fragmenter.valid()) return out;
    for (std::size_t i = 0; i < fragmenter.count(); ++i) {
        Bytes f(fragmenter.frame_length(i));
        EXPECT_EQ(fragmenter.write(i, f), f.size());
        out.push_back(std::move(f));
    }
    return out;
}

TEST(Ipv4FragmenterTest, SizesFollowTheMtuInMultiplesOfEight) {
    const Bytes frame = ipv4_frame(packet(2972));  // IP 3000 bytes: 2980 of UDP data
    const auto fragments = fragment(frame, 1450);
    ASSERT_EQ(fragments.size(), 3u);
    const std::size_t expected_data[] = {1424, 1424, 132};
    for (std::size_t i = 0; i < 3; ++i) {
        const auto ip = wire::Ipv4View::parse(wire::ByteSpan(fragments[i]).subspan(14));
        EXPECT_EQ(ip->payload().size(), expected_data[i]);
        EXPECT_EQ(ip->fragment_offset(), i * 178);
        EXPECT_EQ(ip->more_fragments(), i < 2);
        EXPECT_EQ(ip->identification(), 0x1234);
        EXPECT_TRUE(ip->checksum_valid());
        EXPECT_EQ(frame_problems(fragments[i]), std::vector<std::string>{});
        EXPECT_TRUE(std::equal(frame.begin(), frame.begin() + 14, fragments[i].begin()));  // Ethernet header kept
    }
}

TEST(Ipv4FragmenterTest, OnlyCopiedOptionsRepeatAndTheyArePadded) {
    Ipv4Spec s = packet(2000);
    // Router alert (copied, 4 bytes), timestamp (not copied, 8), security-like copied option (3) + EOL.
    s.options = {0x94, 0x04, 0x00, 0x00, 0x44, 0x08, 0x05, 0x00, 0, 0, 0, 0, 0x82, 0x03, 0x07, 0x00};
    const Bytes frame = ipv4_frame(s);
    const auto fragments = fragment(frame, 1000);
    ASSERT_GE(fragments.size(), 3u);
    const auto first = wire::Ipv4View::parse(wire::ByteSpan(fragments[0]).subspan(14));
    EXPECT_EQ(first->header_length(), 36u);
    for (std::size_t i = 1; i < fragments.size(); ++i) {
        const auto later = wire::Ipv4View::parse(wire::ByteSpan(fragments[i]).subspan(14));
        ASSERT_EQ(later->header_length(), 28u);  // 4 + 3 copied bytes padded to 8
        const Bytes options(later->options().begin(), later->options().end());
        EXPECT_EQ(options, (Bytes{0x94, 0x04, 0x00, 0x00, 0x82, 0x03, 0x07, 0x00}));
        EXPECT_TRUE(later->checksum_valid());
    }
    std::string error;
    EXPECT_EQ(reassemble_ipv4(fragments, error), Bytes(frame.begin() + 14, frame.end())) << error;
}

TEST(Ipv4FragmenterTest, ATaggedFrameKeepsItsTagsInEveryFragment) {
    Ipv4Spec s = packet(3000);
    s.tags = {wire::VlanTag{wire::ethertype::kVlan, 0, false, 9}};
    const Bytes frame = ipv4_frame(s);
    const auto fragments = fragment(frame, 1446, 18);
    ASSERT_EQ(fragments.size(), 3u);
    for (const Bytes& f : fragments) EXPECT_EQ(wire::EthernetView::parse(f)->vlan_id(), 9);
}

TEST(Ipv4FragmenterTest, ImpossibleSplitsAreRefused) {
    Ipv4Spec s = packet(100);
    s.options = Bytes(40, 1);  // NOPs: a 60-byte header
    EXPECT_TRUE(fragment(ipv4_frame(s), 67).empty());  // 60 + 8 does not fit
    EXPECT_FALSE(fragment(ipv4_frame(s), 68).empty());
    Ipv4Spec late = packet(1000);
    late.fragment_offset = 8100;  // 64800 + 1008 > 65535
    EXPECT_TRUE(fragment(ipv4_frame(late), 576).empty());
    const Bytes frame = ipv4_frame(packet(100));
    const auto ip = wire::Ipv4View::parse(wire::ByteSpan(frame).subspan(14));
    const Ipv4Fragmenter fits(frame, 14, *ip, 1500);
    EXPECT_EQ(fits.count(), 1u);
    Bytes small(10);
    EXPECT_EQ(fits.write(0, small), 0u);
    EXPECT_EQ(fits.write(1, small), 0u);
}

TEST(Ipv4FragmenterTest, RandomSizesAlwaysReassembleToTheOriginal) {
    std::mt19937 rng(7);
    for (int round = 0; round < 300; ++round) {
        Ipv4Spec s = packet(std::uniform_int_distribution<std::size_t>(0, 9000)(rng));
        s.protocol = static_cast<std::uint8_t>(rng() % 2 ? wire::ip_protocol::kUdp : wire::ip_protocol::kTcp);
        s.options = Bytes(std::uniform_int_distribution<std::size_t>(0, 10)(rng) * 4, 1);
        s.fill = static_cast<std::uint8_t>(rng());
        const std::size_t mtu = std::uniform_int_distribution<std::size_t>(68 + s.options.size(), 9000)(rng);
        const Bytes frame = ipv4_frame(s);
        const auto fragments = fragment(frame, mtu);
        ASSERT_FALSE(fragments.empty());
        for (const Bytes& f : fragments) {
            EXPECT_LE(f.size() - 14, std::max(mtu, frame.size() - 14));
            EXPECT_EQ(frame_problems(f, {fragments.size() == 1}), std::vector<std::string>{});
        }
        std::string error;
        EXPECT_EQ(reassemble_ipv4(fragments, error), Bytes(frame.begin() + 14, frame.end())) << error << " mtu " << mtu;
    }
}

}  // namespace
}  // namespace andromeda::testing
