#include "wire/icmp.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace andromeda::wire {
namespace {

TEST(Icmpv4, EchoRoundTrip) {
    std::vector<std::uint8_t> msg(8 + 11, 0x61);
    ASSERT_EQ(write_icmp_header(msg, icmp_echo(icmpv4_type::kEchoRequest, 0x1234, 7)), 8u);
    const auto icmp = MutableIcmpv4View::parse(msg);
    ASSERT_TRUE(icmp);
    EXPECT_FALSE(icmp->checksum_valid());
    icmp->update_checksum();
    EXPECT_TRUE(icmp->checksum_valid());
    EXPECT_EQ(icmp->checksum(), internet_checksum([&] { auto z = msg; z[2] = z[3] = 0; return z; }()));
    EXPECT_EQ(icmp->type(), icmpv4_type::kEchoRequest);
    EXPECT_EQ(icmp->code(), 0);
    EXPECT_EQ(icmp->identifier(), 0x1234);
    EXPECT_EQ(icmp->sequence(), 7);
    EXPECT_TRUE(icmp->is_echo());
    EXPECT_FALSE(icmp->is_error());
    EXPECT_FALSE(icmp->is_fragmentation_needed());
    EXPECT_EQ(icmp->next_hop_mtu(), 0);
    EXPECT_TRUE(icmp->original_datagram().empty());
    EXPECT_EQ(icmp->body().size(), 11u);
    EXPECT_EQ(icmp->header(), (IcmpHeader{8, 0, icmp->checksum(), 0x12340007}));
    // Turn the request into a reply in place: the checksum follows.
    icmp->set_type(icmpv4_type::kEchoReply);
    EXPECT_TRUE(icmp->checksum_valid());
    EXPECT_EQ(icmp->checksum(), icmp->compute_checksum());
    icmp->set_identifier(1);
    icmp->set_sequence(2);
    icmp->set_code(3);
    EXPECT_EQ(icmp->checksum(), icmp->compute_checksum());
}

TEST(Icmpv4, FragmentationNeededCarriesMtuAndOriginal) {
    std::vector<std::uint8_t> msg(8 + 28, 0);
    ASSERT_EQ(write_icmp_header(msg, icmpv4_fragmentation_needed(1450)), 8u);
    msg[8] = 0x45;  // start of the embedded original header
    const auto icmp = MutableIcmpv4View::parse(msg);
    ASSERT_TRUE(icmp);
    icmp->update_checksum();
    EXPECT_TRUE(icmp->is_error());
    EXPECT_TRUE(icmp->is_fragmentation_needed());
    EXPECT_EQ(icmp->next_hop_mtu(), 1450);
    EXPECT_EQ(icmp->rest_of_header(), 1450u);
    EXPECT_EQ(icmp->original_datagram().size(), 28u);
    EXPECT_EQ(icmp->original_datagram()[0], 0x45);
    EXPECT_TRUE(icmp->checksum_valid());
}

TEST(Icmpv4, ParseAndBuilderRefusals) {
    std::vector<std::uint8_t> msg(7);
    EXPECT_EQ(Icmpv4View::parse(msg).error(), ParseError::Truncated);
    EXPECT_EQ(Icmpv6View::parse(msg).error(), ParseError::Truncated);
    EXPECT_EQ(write_icmp_header(msg, IcmpHeader{}), 0u);
}

TEST(Icmpv6, EchoAndPacketTooBig) {
    const auto src = *Ipv6Address::parse("fd00::1"), dst = *Ipv6Address::parse("fd00::2");
    std::vector<std::uint8_t> msg(8 + 9, 0x33);
    ASSERT_EQ(write_icmp_header(msg, icmp_echo(icmpv6_type::kEchoRequest, 99, 3)), 8u);
    auto icmp = MutableIcmpv6View::parse(msg);
    ASSERT_TRUE(icmp);
    icmp->update_checksum(src, dst);
    EXPECT_TRUE(icmp->checksum_valid(src, dst));
    EXPECT_FALSE(icmp->checksum_valid(dst, src == dst ? src : *Ipv6Address::parse("fd00::3")));
    EXPECT_TRUE(icmp->is_echo());
    EXPECT_FALSE(icmp->is_error());
    EXPECT_EQ(icmp->identifier(), 99);
    EXPECT_EQ(icmp->sequence(), 3);
    EXPECT_EQ(icmp->mtu(), 0u);
    EXPECT_TRUE(icmp->invoking_packet().empty());
    icmp->set_type(icmpv6_type::kEchoReply);
    EXPECT_TRUE(icmp->checksum_valid(src, dst));

    std::vector<std::uint8_t> ptb(8 + 48, 0);
    ASSERT_EQ(write_icmp_header(ptb, icmpv6_packet_too_big(1280)), 8u);
    icmp = MutableIcmpv6View::parse(ptb);
    ASSERT_TRUE(icmp);
    icmp->update_checksum(src, dst);
    EXPECT_EQ(icmp->type(), icmpv6_type::kPacketTooBig);
    EXPECT_EQ(icmp->mtu(), 1280u);
    EXPECT_TRUE(icmp->is_error());
    EXPECT_EQ(icmp->invoking_packet().size(), 48u);
    EXPECT_TRUE(icmp->checksum_valid(src, dst));
    EXPECT_EQ(icmp->checksum(), icmp->compute_checksum(src, dst));
}

TEST(Icmp, PropertyRandomBytesAndSetters) {
    std::mt19937 rng(792);
    const auto src = *Ipv6Address::parse("fe80::1"), dst = *Ipv6Address::parse("ff02::1");
    for (int iter = 0; iter < 5000; ++iter) {
        std::vector<std::uint8_t> msg(rng() % 40);
        for (auto& b : msg) b = static_cast<std::uint8_t>(rng());
        const auto v4 = MutableIcmpv4View::parse(msg);
        ASSERT_EQ(static_cast<bool>(v4), msg.size() >= 8);
        if (!v4) continue;
        (void)v4->next_hop_mtu();
        ASSERT_LE(v4->original_datagram().size(), msg.size());
        v4->update_checksum();
        v4->set_type(static_cast<std::uint8_t>(rng()));
        v4->set_sequence(static_cast<std::uint16_t>(rng()));
        ASSERT_EQ(v4->checksum(), v4->compute_checksum());
        const auto v6 = MutableIcmpv6View::parse(msg);
        ASSERT_TRUE(v6);
        v6->update_checksum(src, dst);
        v6->set_code(static_cast<std::uint8_t>(rng()));
        v6->set_identifier(static_cast<std::uint16_t>(rng()));
        ASSERT_EQ(v6->checksum(), v6->compute_checksum(src, dst));
        ASSERT_TRUE(v6->checksum_valid(src, dst));
    }
}

}  // namespace
}  // namespace andromeda::wire
