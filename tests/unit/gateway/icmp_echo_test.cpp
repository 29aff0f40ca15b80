// Echo replies from the gateway address, field by field, copied and in place.
#include <gtest/gtest.h>

#include "gateway/icmp_echo.hpp"
#include "unit/dataplane/frame_validator.hpp"
#include "unit/dataplane/test_frames.hpp"

namespace andromeda::gateway {
namespace {

using testing::Bytes;
using testing::ipv4;
using testing::mac;

const GatewayAddress kGateway{mac("02:00:00:00:00:ff"), ipv4("10.0.0.1")};

testing::Ipv4Spec ping_gateway() {
    testing::Ipv4Spec s;
    s.src_mac = mac("02:00:00:00:00:10");
    s.dst_mac = kGateway.mac;
    s.src = ipv4("10.0.0.10");
    s.dst = kGateway.ipv4;
    s.protocol = wire::ip_protocol::kIcmp;
    s.payload = 56;
    s.ttl = 17;
    s.dont_fragment = true;
    return s;
}

void expect_reply_to(const Bytes& request, const Bytes& reply) {
    EXPECT_EQ(testing::frame_problems(reply), std::vector<std::string>{});
    const auto req_eth = wire::EthernetView::parse(request);
    const auto req_ip = wire::Ipv4View::parse(req_eth->payload());
    const auto eth = wire::EthernetView::parse(reply);
    EXPECT_EQ(eth->destination(), req_eth->source());
    EXPECT_EQ(eth->source(), kGateway.mac);
    const auto ip = wire::Ipv4View::parse(eth->payload());
    ASSERT_TRUE(ip);
    EXPECT_EQ(ip->ihl(), 5);
    EXPECT_EQ(ip->source(), kGateway.ipv4);
    EXPECT_EQ(ip->destination(), req_ip->source());
    EXPECT_EQ(ip->ttl(), kGatewayTtl);
    EXPECT_EQ(ip->identification(), req_ip->identification());
    EXPECT_TRUE(ip->checksum_valid());
    const auto icmp = wire::Icmpv4View::parse(ip->payload());
    const auto req_icmp = wire::Icmpv4View::parse(req_ip->payload());
    EXPECT_EQ(icmp->type(), wire::icmpv4_type::kEchoReply);
    EXPECT_EQ(icmp->code(), 0);
    EXPECT_EQ(icmp->identifier(), req_icmp->identifier());
    EXPECT_EQ(icmp->sequence(), req_icmp->sequence());
    EXPECT_TRUE(icmp->checksum_valid());
    EXPECT_TRUE(std::equal(icmp->body().begin(), icmp->body().end(), req_icmp->body().begin(), req_icmp->body().end()));
}

TEST(IcmpEchoTest, PingOfTheGatewayIsAnsweredFieldByField) {
    const Bytes request = testing::ipv4_frame(ping_gateway());
    Bytes out(2048);
    const EchoReply reply = write_echo_reply(request, kGateway, out);
    ASSERT_EQ(reply.outcome, EchoOutcome::replied) << to_string(reply.outcome);
    EXPECT_EQ(reply.length, request.size());
    out.resize(reply.length);
    expect_reply_to(request, out);
}

TEST(IcmpEchoTest, InPlaceReplyDropsIpOptionsAndMovesTheStart) {
    testing::Ipv4Spec s = ping_gateway();
    s.options = {0x94, 0x04, 0, 0, 0x01, 0x01, 0x01, 0x00};  // router alert, NOPs, end
    const Bytes request = testing::ipv4_frame(s);
    Bytes copied(2048);
    const EchoReply copy = write_echo_reply(request, kGateway, copied);
    ASSERT_TRUE(copy.replied());
    copied.resize(copy.length);
    expect_reply_to(request, copied);

    Bytes frame = request;
    const EchoReply in_place = echo_reply_in_place(frame, kGateway);
    ASSERT_TRUE(in_place.replied());
    EXPECT_EQ(in_place.offset, 8u);
    EXPECT_EQ(in_place.length, request.size() - 8);
    const auto start = frame.begin() + static_cast<std::ptrdiff_t>(in_place.offset);
    EXPECT_EQ(Bytes(start, start + static_cast<std::ptrdiff_t>(in_place.length)), copied);
}

TEST(IcmpEchoTest, TaggedPingGetsATaggedReply) {
    testing::Ipv4Spec s = ping_gateway();
    s.tags = {wire::VlanTag{wire::ethertype::kVlan, 3, false, 42}};
    const Bytes request = testing::ipv4_frame(s);
    Bytes frame = request;
    const EchoReply reply = echo_reply_in_place(frame, kGateway);
    ASSERT_TRUE(reply.replied());
    frame.resize(reply.length);
    EXPECT_EQ(wire::EthernetView::parse(frame)->vlan_id(), 42);
    expect_reply_to(request, frame);
}

TEST(IcmpEchoTest, RefusalsAreNamed) {
    const Bytes good = testing::ipv4_frame(ping_gateway());
    testing::Ipv4Spec other = ping_gateway();
    other.dst = ipv4("10.0.0.20");
    testing::Ipv4Spec reply_type = ping_gateway();
    reply_type.icmp_type = wire::icmpv4_type::kEchoReply;
    testing::Ipv4Spec fragment = ping_gateway();
    fragment.dont_fragment = false;
    fragment.more_fragments = true;
    testing::Ipv4Spec udp = ping_gateway();
    udp.protocol = wire::ip_protocol::kUdp;
    Bytes bad_icmp = good;
    // Said outright so gcc 12 at -O3 sees no path where back() is index -1 (-Warray-bounds).
    ASSERT_FALSE(bad_icmp.empty());
    bad_icmp.back() ^= 1;  // the ICMP body's last byte: the ICMP checksum fails, the IP one holds
    Bytes bad_ip = good;
    bad_ip[14 + 8] ^= 1;
    const std::pair<Bytes, EchoOutcome> cases[] = {
        {testing::ipv4_frame(other), EchoOutcome::not_for_gateway},
        {testing::ipv4_frame(reply_type), EchoOutcome::not_echo_request},
        {testing::ipv4_frame(fragment), EchoOutcome::fragment},
        {testing::ipv4_frame(udp), EchoOutcome::not_echo_request},
        {bad_icmp, EchoOutcome::bad_checksum},
        {bad_ip, EchoOutcome::bad_checksum},
        {Bytes(good.begin(), good.begin() + 30), EchoOutcome::not_echo_request},
    };
    for (const auto& [frame, outcome] : cases) {
        Bytes out(2048);
        EXPECT_EQ(write_echo_reply(frame, kGateway, out).outcome, outcome) << to_string(outcome);
        Bytes copy = frame;
        EXPECT_EQ(echo_reply_in_place(copy, kGateway).outcome, outcome);
        EXPECT_EQ(copy, frame);
    }
    Bytes small(good.size() - 1);
    EXPECT_EQ(write_echo_reply(good, kGateway, small).outcome, EchoOutcome::no_room);
}

}  // namespace
}  // namespace andromeda::gateway
