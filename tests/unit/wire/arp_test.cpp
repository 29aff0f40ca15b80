#include "wire/arp.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace andromeda::wire {
namespace {

const MacAddress kHostMac(std::array<std::uint8_t, 6>{0x02, 0, 0, 0, 0, 0x0a});
const MacAddress kGatewayMac(std::array<std::uint8_t, 6>{0x02, 0xaa, 0, 0, 0, 0x01});
const Ipv4Address kHostIp(0x0a00000a);
const Ipv4Address kGatewayIp(0x0a000001);

TEST(Arp, RequestRoundTrip) {
    std::vector<std::uint8_t> buf(46, 0);  // Ethernet minimum payload: 18 bytes of padding
    const auto request = make_arp_request(kHostMac, kHostIp, kGatewayIp);
    ASSERT_EQ(write_arp(buf, request), 28u);
    const std::vector<std::uint8_t> fixed = {0, 1, 8, 0, 6, 4, 0, 1};
    EXPECT_TRUE(std::equal(fixed.begin(), fixed.end(), buf.begin()));
    const auto arp = ArpView::parse(buf);
    ASSERT_TRUE(arp);
    EXPECT_EQ(arp->operation(), arp_op::kRequest);
    EXPECT_TRUE(arp->is_request());
    EXPECT_FALSE(arp->is_reply());
    EXPECT_EQ(arp->sender_mac(), kHostMac);
    EXPECT_EQ(arp->sender_ip(), kHostIp);
    EXPECT_TRUE(arp->target_mac().is_zero());
    EXPECT_EQ(arp->target_ip(), kGatewayIp);
    EXPECT_FALSE(arp->is_gratuitous());
    EXPECT_EQ(arp->bytes().size(), 28u);
    EXPECT_EQ(arp->packet(), request);
}

TEST(Arp, ReplyRoundTripAndInPlaceTurnaround) {
    const auto request = make_arp_request(kHostMac, kHostIp, kGatewayIp);
    const auto reply = make_arp_reply(request, kGatewayMac);
    EXPECT_EQ(reply, (ArpPacket{arp_op::kReply, kGatewayMac, kGatewayIp, kHostMac, kHostIp}));
    std::vector<std::uint8_t> expected(28), buf(28);
    ASSERT_EQ(write_arp(expected, reply), 28u);
    ASSERT_EQ(write_arp(buf, request), 28u);
    const auto arp = MutableArpView::parse(buf);
    ASSERT_TRUE(arp);
    const auto asked = arp->packet();
    arp->set_operation(arp_op::kReply);
    arp->set_target(asked.sender_mac, asked.sender_ip);
    arp->set_sender(kGatewayMac, asked.target_ip);
    EXPECT_EQ(buf, expected);
    EXPECT_TRUE(ArpView::parse(buf)->is_reply());
}

TEST(Arp, ParseErrors) {
    std::vector<std::uint8_t> buf(28);
    ASSERT_NE(write_arp(buf, make_arp_request(kHostMac, kHostIp, kHostIp)), 0u);
    EXPECT_TRUE(ArpView::parse(buf)->is_gratuitous());
    EXPECT_EQ(ArpView::parse(std::span(buf).first(27)).error(), ParseError::Truncated);
    auto bad = buf;
    bad[1] = 6;  // IEEE 802 hardware type
    EXPECT_EQ(ArpView::parse(bad).error(), ParseError::BadHardwareType);
    bad = buf;
    bad[2] = 0x86;
    bad[3] = 0xdd;
    EXPECT_EQ(ArpView::parse(bad).error(), ParseError::BadHardwareType);
    bad = buf;
    bad[5] = 16;
    EXPECT_EQ(ArpView::parse(bad).error(), ParseError::BadAddressLength);
    std::vector<std::uint8_t> small(27);
    EXPECT_EQ(write_arp(small, ArpPacket{}), 0u);
}

TEST(Arp, PropertyRandomBytesStayInBounds) {
    std::mt19937 rng(826);
    std::vector<std::uint8_t> valid(28);
    ASSERT_NE(write_arp(valid, make_arp_request(kHostMac, kHostIp, kGatewayIp)), 0u);
    for (int iter = 0; iter < 5000; ++iter) {
        std::vector<std::uint8_t> junk(rng() % 40);
        for (std::size_t i = 0; i < junk.size(); ++i)
            junk[i] = (i < valid.size() && rng() % 4 != 0) ? valid[i] : static_cast<std::uint8_t>(rng());
        if (const auto arp = ArpView::parse(junk)) {
            ASSERT_LE(arp->bytes().size(), junk.size());
            std::vector<std::uint8_t> rebuilt(28);
            ASSERT_EQ(write_arp(rebuilt, arp->packet()), 28u);
            ASSERT_TRUE(std::equal(rebuilt.begin(), rebuilt.end(), junk.begin()));
        }
    }
}

}  // namespace
}  // namespace andromeda::wire
