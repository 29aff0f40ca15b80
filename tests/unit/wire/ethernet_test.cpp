#include "wire/ethernet.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace andromeda::wire {
namespace {

const MacAddress kDst(std::array<std::uint8_t, 6>{0x02, 0, 0, 0, 0, 0x0a});
const MacAddress kSrc(std::array<std::uint8_t, 6>{0x02, 0, 0, 0, 0, 0x14});

TEST(Ethernet, UntaggedRoundTrip) {
    std::vector<std::uint8_t> frame(60, 0xee);
    const EthernetHeader h{kDst, kSrc, ethertype::kIpv4, {}, 0};
    ASSERT_EQ(write_ethernet_header(frame, h), 14u);
    const auto eth = EthernetView::parse(frame);
    ASSERT_TRUE(eth);
    EXPECT_EQ(eth->destination(), kDst);
    EXPECT_EQ(eth->source(), kSrc);
    EXPECT_EQ(eth->ethertype(), ethertype::kIpv4);
    EXPECT_EQ(eth->vlan_count(), 0u);
    EXPECT_EQ(eth->vlan_id(), 0);
    EXPECT_FALSE(eth->tag(0));
    EXPECT_EQ(eth->header_length(), 14u);
    EXPECT_EQ(eth->payload().size(), 46u);
    EXPECT_EQ(eth->payload().data(), frame.data() + 14);
    EXPECT_EQ(eth->header(), h);
}

TEST(Ethernet, SingleTagRoundTrip) {
    std::vector<std::uint8_t> frame(64);
    EthernetHeader h{kDst, kSrc, ethertype::kIpv6, {}, 1};
    h.tags[0] = VlanTag{ethertype::kVlan, 5, true, 100};
    ASSERT_EQ(write_ethernet_header(frame, h), 18u);
    EXPECT_EQ(frame[12], 0x81);
    EXPECT_EQ(frame[13], 0x00);
    EXPECT_EQ(frame[14], 0xb0);  // PCP 5, DEI 1, VID high nibble 0
    EXPECT_EQ(frame[15], 100);
    const auto eth = EthernetView::parse(frame);
    ASSERT_TRUE(eth);
    EXPECT_EQ(eth->ethertype(), ethertype::kIpv6);
    EXPECT_EQ(eth->vlan_count(), 1u);
    EXPECT_EQ(eth->vlan_id(), 100);
    EXPECT_EQ(*eth->tag(0), h.tags[0]);
    EXPECT_EQ(eth->header_length(), 18u);
    EXPECT_EQ(eth->payload().size(), 64u - 18u);
    EXPECT_EQ(eth->header(), h);
}

TEST(Ethernet, QinQRoundTrip) {
    std::vector<std::uint8_t> frame(64);
    EthernetHeader h{kDst, kSrc, ethertype::kArp, {}, 2};
    h.tags[0] = VlanTag{ethertype::kQinQ, 7, false, 4094};
    h.tags[1] = VlanTag{ethertype::kVlan, 0, false, 1};
    ASSERT_EQ(write_ethernet_header(frame, h), 22u);
    const auto eth = EthernetView::parse(frame);
    ASSERT_TRUE(eth);
    EXPECT_EQ(eth->vlan_count(), 2u);
    EXPECT_EQ(eth->vlan_id(0), 4094);
    EXPECT_EQ(eth->vlan_id(1), 1);
    EXPECT_EQ(eth->ethertype(), ethertype::kArp);
    EXPECT_EQ(eth->header(), h);
}

TEST(Ethernet, BuilderRefusesSmallBufferAndTooManyTags) {
    std::vector<std::uint8_t> frame(17);
    EthernetHeader h{kDst, kSrc, ethertype::kIpv4, {}, 1};
    EXPECT_EQ(write_ethernet_header(frame, h), 0u);
    h.tag_count = 3;
    frame.resize(64);
    EXPECT_EQ(write_ethernet_header(frame, h), 0u);
}

TEST(Ethernet, ParseErrors) {
    std::vector<std::uint8_t> frame(13);
    EXPECT_EQ(EthernetView::parse(frame).error(), ParseError::Truncated);
    frame.assign(20, 0);
    frame[12] = 0x81;  // a tag whose inner ethertype is cut off
    EXPECT_EQ(EthernetView::parse(std::span(frame).first(17)).error(), ParseError::Truncated);
    EXPECT_TRUE(EthernetView::parse(std::span(frame).first(18)));
    // Three stacked tags.
    frame.assign(40, 0);
    for (std::size_t off : {12u, 16u, 20u}) store_be16(&frame[off], ethertype::kVlan);
    EXPECT_EQ(EthernetView::parse(frame).error(), ParseError::TooManyVlanTags);
    EXPECT_EQ(to_string(ParseError::TooManyVlanTags), "too_many_vlan_tags");
}

TEST(Ethernet, MutableSetters) {
    std::vector<std::uint8_t> frame(64);
    EthernetHeader h{kDst, kSrc, ethertype::kIpv4, {}, 1};
    h.tags[0] = VlanTag{ethertype::kVlan, 3, true, 10};
    ASSERT_NE(write_ethernet_header(frame, h), 0u);
    const auto eth = MutableEthernetView::parse(frame);
    ASSERT_TRUE(eth);
    eth->set_destination(kSrc);
    eth->set_source(kDst);
    eth->set_ethertype(ethertype::kIpv6);
    EXPECT_TRUE(eth->set_vlan_id(0, 2000));
    EXPECT_FALSE(eth->set_vlan_id(1, 5));
    const auto again = EthernetView::parse(frame);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->destination(), kSrc);
    EXPECT_EQ(again->source(), kDst);
    EXPECT_EQ(again->ethertype(), ethertype::kIpv6);
    EXPECT_EQ(*again->tag(0), (VlanTag{ethertype::kVlan, 3, true, 2000}));
}

// Random bytes, with the TPID positions biased towards VLAN types so the tag walk is exercised.
// Every successful parse must describe a header that lies inside the buffer.
TEST(Ethernet, PropertyRandomBytesStayInBounds) {
    std::mt19937 rng(0xe7e7);
    for (int iter = 0; iter < 20000; ++iter) {
        std::vector<std::uint8_t> frame(rng() % 40);
        for (auto& b : frame) b = static_cast<std::uint8_t>(rng());
        for (std::size_t off = 12; off + 1 < frame.size(); off += 4)
            if (rng() % 2) store_be16(&frame[off], rng() % 2 ? ethertype::kVlan : ethertype::kQinQ);
        const auto eth = EthernetView::parse(frame);
        if (!eth) continue;
        ASSERT_LE(eth->header_length(), frame.size());
        ASSERT_EQ(eth->header_length() + eth->payload().size(), frame.size());
        const auto h = eth->header();
        std::vector<std::uint8_t> rebuilt(h.length());
        ASSERT_EQ(write_ethernet_header(rebuilt, h), h.length());
        ASSERT_TRUE(std::equal(rebuilt.begin(), rebuilt.end(), frame.begin()));
    }
}

}  // namespace
}  // namespace andromeda::wire
