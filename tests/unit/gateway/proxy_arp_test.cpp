// Proxy-ARP: which requests are answered, and the reply field by field, copied and in place.
#include <gtest/gtest.h>

#include "gateway/proxy_arp.hpp"
#include "unit/dataplane/test_frames.hpp"

namespace andromeda::gateway {
namespace {

using testing::Bytes;
using testing::ipv4;
using testing::mac;

const wire::MacAddress kGatewayMac = mac("02:00:00:00:00:ff");
const wire::MacAddress kAsker = mac("02:00:00:00:00:10");

void expect_reply(const Bytes& reply, std::size_t header_length, wire::Ipv4Address asked) {
    const auto eth = wire::EthernetView::parse(reply);
    ASSERT_TRUE(eth);
    EXPECT_EQ(eth->header_length(), header_length);
    EXPECT_EQ(reply.size(), header_length + 28);
    EXPECT_EQ(eth->destination(), kAsker);
    EXPECT_EQ(eth->source(), kGatewayMac);
    EXPECT_EQ(eth->ethertype(), wire::ethertype::kArp);
    const auto arp = wire::ArpView::parse(eth->payload());
    ASSERT_TRUE(arp);
    EXPECT_TRUE(arp->is_reply());
    EXPECT_EQ(arp->sender_mac(), kGatewayMac);
    EXPECT_EQ(arp->sender_ip(), asked);
    EXPECT_EQ(arp->target_mac(), kAsker);
    EXPECT_EQ(arp->target_ip(), ipv4("10.0.0.10"));
}

TEST(ProxyArpTest, AnyAddressButTheAskersOwnIsAnsweredWithTheGatewayMac) {
    for (const char* asked : {"10.0.0.20", "10.0.0.1", "10.0.0.99", "8.8.8.8"}) {
        SCOPED_TRACE(asked);
        const Bytes request = testing::arp_request(kAsker, ipv4("10.0.0.10"), ipv4(asked));
        Bytes out(64);
        const ProxyArpReply reply = write_proxy_arp_reply(request, kGatewayMac, out);
        ASSERT_EQ(reply.outcome, ProxyArpOutcome::answered) << to_string(reply.outcome);
        out.resize(reply.length);
        expect_reply(out, 14, ipv4(asked));
    }
}

TEST(ProxyArpTest, InPlaceReplyEqualsTheCopiedOneAndTrimsPadding) {
    Bytes request = testing::arp_request(kAsker, ipv4("10.0.0.10"), ipv4("10.0.0.20"));
    request.resize(60, 0);  // minimum-size frame with padding, as a NIC delivers it
    Bytes copied(64);
    const ProxyArpReply copy = write_proxy_arp_reply(request, kGatewayMac, copied);
    copied.resize(copy.length);
    const ProxyArpReply in_place = proxy_arp_reply_in_place(request, kGatewayMac);
    ASSERT_TRUE(in_place.answered());
    EXPECT_EQ(in_place.offset, 0u);
    EXPECT_EQ(Bytes(request.begin(), request.begin() + static_cast<std::ptrdiff_t>(in_place.length)), copied);
}

TEST(ProxyArpTest, TaggedRequestGetsATaggedReply) {
    const std::vector<wire::VlanTag> tags{{wire::ethertype::kQinQ, 1, false, 100}, {wire::ethertype::kVlan, 0, true, 7}};
    const Bytes request = testing::arp_frame(
        kAsker, testing::kBroadcast, wire::make_arp_request(kAsker, ipv4("10.0.0.10"), ipv4("10.0.0.20")), tags);
    Bytes out(64);
    const ProxyArpReply reply = write_proxy_arp_reply(request, kGatewayMac, out);
    ASSERT_TRUE(reply.answered());
    out.resize(reply.length);
    expect_reply(out, 22, ipv4("10.0.0.20"));
    const auto eth = wire::EthernetView::parse(out);
    EXPECT_EQ(*eth->tag(0), tags[0]);
    EXPECT_EQ(*eth->tag(1), tags[1]);
}

TEST(ProxyArpTest, RefusalsAreNamedAndLeaveTheFrameAlone) {
    const wire::Ipv4Address me = ipv4("10.0.0.10");
    wire::ArpPacket reply_packet = wire::make_arp_request(kAsker, me, ipv4("10.0.0.20"));
    reply_packet.operation = wire::arp_op::kReply;
    struct Case {
        Bytes frame;
        ProxyArpOutcome outcome;
    };
    Bytes bad_lengths = testing::arp_request(kAsker, me, ipv4("10.0.0.20"));
    bad_lengths[19] = 6;
    const Case cases[] = {
        {testing::arp_request(kAsker, me, me), ProxyArpOutcome::own_address},
        {testing::arp_request(kAsker, wire::Ipv4Address(0), me), ProxyArpOutcome::probe},
        {testing::arp_frame(kAsker, testing::kBroadcast, reply_packet), ProxyArpOutcome::not_a_request},
        {bad_lengths, ProxyArpOutcome::not_arp},
        {Bytes(20, 0), ProxyArpOutcome::not_arp},
        {testing::ipv4_frame({}), ProxyArpOutcome::not_arp},
    };
    for (const Case& c : cases) {
        Bytes out(64);
        EXPECT_EQ(write_proxy_arp_reply(c.frame, kGatewayMac, out).outcome, c.outcome);
        Bytes frame = c.frame;
        EXPECT_EQ(proxy_arp_reply_in_place(frame, kGatewayMac).outcome, c.outcome);
        EXPECT_EQ(frame, c.frame);
    }
    Bytes small(41);
    EXPECT_EQ(write_proxy_arp_reply(testing::arp_request(kAsker, me, ipv4("10.0.0.20")), kGatewayMac, small).outcome,
              ProxyArpOutcome::no_room);
    EXPECT_EQ(to_string(ProxyArpOutcome::probe), "probe");
}

}  // namespace
}  // namespace andromeda::gateway
