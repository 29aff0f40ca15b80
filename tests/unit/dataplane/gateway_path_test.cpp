// The distributed gateway through the pipeline: ARP answered with the gateway MAC (so a tenant
// never learns where its peers live) and ping of the gateway address, copied and in place.
#include <gtest/gtest.h>

#include "unit/dataplane/pipeline_fixture.hpp"

namespace andromeda::testing {
namespace {

using dataplane::DropReason;
using dataplane::Verdict;

class GatewayPathTest : public PipelineTest {};

void expect_arp_reply(const Bytes& reply, wire::Ipv4Address asked) {
    EXPECT_EQ(frame_problems(reply), std::vector<std::string>{});
    const auto eth = wire::EthernetView::parse(reply);
    EXPECT_EQ(eth->destination(), kBlue10Mac);
    EXPECT_EQ(eth->source(), kGatewayMac);
    const auto arp = wire::ArpView::parse(eth->payload());
    EXPECT_TRUE(arp->is_reply());
    EXPECT_EQ(arp->sender_mac(), kGatewayMac);
    EXPECT_EQ(arp->sender_ip(), asked);
    EXPECT_EQ(arp->target_mac(), kBlue10Mac);
    EXPECT_EQ(arp->target_ip(), ipv4("10.0.0.10"));
}

TEST_F(GatewayPathTest, ArpForARemoteEndpointIsAnsweredWithTheGatewayMac) {
    const Bytes request = arp_request(kBlue10Mac, ipv4("10.0.0.10"), ipv4("10.0.0.20"));
    const auto r = run(kBlue10Port, request);
    ASSERT_EQ(r.verdict, Verdict::reply) << to_string(r.drop_reason);
    ASSERT_EQ(out_.emissions().size(), 1u);
    EXPECT_EQ(out_.emissions()[0].port, kBlue10Port);
    expect_arp_reply(out_.frame(0), ipv4("10.0.0.20"));
    EXPECT_EQ(pipeline_.counters().arp_replies, 1u);
}

TEST_F(GatewayPathTest, ArpForLocalPeersGatewayAndStrangersIsAnsweredToo) {
    for (const char* asked : {"10.0.0.11", "10.0.0.1", "10.0.0.200", "1.1.1.1"}) {
        SCOPED_TRACE(asked);
        ASSERT_EQ(run(kBlue10Port, arp_request(kBlue10Mac, ipv4("10.0.0.10"), ipv4(asked))).verdict, Verdict::reply);
        expect_arp_reply(out_.frame(0), ipv4(asked));
    }
}

TEST_F(GatewayPathTest, ArpIsAnsweredInPlace) {
    ChunkFrame request(arp_request(kBlue10Mac, ipv4("10.0.0.10"), ipv4("10.0.0.20")));
    ASSERT_EQ(run_in_place(kBlue10Port, request).verdict, Verdict::reply);
    const auto& e = out_.emissions()[0];
    EXPECT_EQ(e.input_index, 0);
    EXPECT_EQ(e.frame.chunk, request.chunk.data());
    EXPECT_EQ(e.frame.offset, request.buffer.offset);
    expect_arp_reply(out_.frame(0), ipv4("10.0.0.20"));
    EXPECT_EQ(out_.sink().spares_used(), 0u);
}

TEST_F(GatewayPathTest, PingOfTheGatewayIsAnswered) {
    Ipv4Spec s = blue10_to("10.0.0.1", wire::ip_protocol::kIcmp);
    s.payload = 56;
    const Bytes request = ipv4_frame(s);
    for (const bool in_place : {false, true}) {
        SCOPED_TRACE(in_place);
        ChunkFrame chunk(request);
        const auto r = in_place ? run_in_place(kBlue10Port, chunk) : run(kBlue10Port, request);
        ASSERT_EQ(r.verdict, Verdict::reply) << to_string(r.drop_reason);
        EXPECT_EQ(out_.emissions()[0].port, kBlue10Port);
        const Bytes reply = out_.frame(0);
        EXPECT_EQ(frame_problems(reply), std::vector<std::string>{});
        const auto eth = wire::EthernetView::parse(reply);
        EXPECT_EQ(eth->destination(), kBlue10Mac);
        EXPECT_EQ(eth->source(), kGatewayMac);
        const auto ip = wire::Ipv4View::parse(eth->payload());
        EXPECT_EQ(ip->source(), ipv4("10.0.0.1"));
        EXPECT_EQ(ip->destination(), ipv4("10.0.0.10"));
        EXPECT_EQ(ip->ttl(), 64);
        const auto icmp = wire::Icmpv4View::parse(ip->payload());
        EXPECT_EQ(icmp->type(), wire::icmpv4_type::kEchoReply);
        EXPECT_EQ(icmp->rest_of_header(), 0x0b0c0001u);
        EXPECT_EQ(reply.size(), request.size());
    }
    EXPECT_EQ(pipeline_.counters().echo_replies, 2u);
}

TEST_F(GatewayPathTest, EachVpcAnswersForItsOwnGateway) {
    Ipv4Spec s = blue10_to("172.16.0.1", wire::ip_protocol::kIcmp);
    s.src_mac = kRed10Mac;
    s.src = ipv4("172.16.0.10");
    ASSERT_EQ(run(kRed10Port, ipv4_frame(s)).verdict, Verdict::reply);
    const Bytes reply = out_.frame(0);
    EXPECT_EQ(wire::Ipv4View::parse(wire::ByteSpan(reply).subspan(14))->source(), ipv4("172.16.0.1"));
    // Blue's gateway address is outside red: it is no gateway there, just an outside address.
    Ipv4Spec other = s;
    other.dst = ipv4("10.0.0.1");
    EXPECT_EQ(run(kRed10Port, ipv4_frame(other)).verdict, Verdict::forward);  // to red's NAT node
}

TEST_F(GatewayPathTest, PingWithABadChecksumOrAsAFragmentIsDropped) {
    Ipv4Spec s = blue10_to("10.0.0.1", wire::ip_protocol::kIcmp);
    Bytes bad = ipv4_frame(s);
    bad.back() ^= 0xff;
    EXPECT_EQ(run(kBlue10Port, bad).drop_reason, DropReason::gateway_unsupported);
    s.more_fragments = true;
    EXPECT_EQ(run(kBlue10Port, ipv4_frame(s)).drop_reason, DropReason::gateway_unsupported);
    ChunkFrame chunk(bad);
    EXPECT_EQ(run_in_place(kBlue10Port, chunk).drop_reason, DropReason::gateway_unsupported);
}

// The gateway's answers are budgeted per source (VNI, address), ARP and echo together; a source
// over its budget is dropped and counted, others keep theirs, and time refills it.
TEST(GatewayReplyRateLimitTest, RepliesAreLimitedPerSourceAndRefillWithTime) {
    struct {
        std::uint64_t now = 1'000'000'000;
    } time;
    auto config = node_config("node1");
    config.gateway_reply_rate = {10, 4, 64};
    config.clock = [&time] { return time.now; };
    dataplane::Pipeline pipeline(config);
    const auto fabric = load_fabric(fabric_text("node1"));
    SinkStorage out;
    const Bytes arp = arp_request(kBlue10Mac, ipv4("10.0.0.10"), ipv4("10.0.0.1"));
    const Bytes ping = ipv4_frame(blue10_to("10.0.0.1", wire::ip_protocol::kIcmp));
    const auto run = [&](PortId port, const Bytes& frame) { return pipeline.process(port, frame, *fabric, out.fresh()); };
    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(run(kBlue10Port, arp).verdict, Verdict::reply) << i;
        EXPECT_EQ(run(kBlue10Port, ping).verdict, Verdict::reply) << i;
    }
    const auto limited = run(kBlue10Port, ping);
    EXPECT_EQ(limited.drop_reason, DropReason::gateway_reply_rate_limited);
    EXPECT_TRUE(out.emissions().empty()) << "nothing answered";
    EXPECT_EQ(run(kBlue10Port, arp).drop_reason, DropReason::gateway_reply_rate_limited);
    // Green's 10.0.0.10 is another source with its own budget.
    EXPECT_EQ(run(kGreen10Port, arp_request(kGreen10Mac, ipv4("10.0.0.10"), ipv4("10.0.0.1"))).verdict, Verdict::reply);
    time.now += 100'000'000;  // one token at 10 a second
    EXPECT_EQ(run(kBlue10Port, arp).verdict, Verdict::reply);
    EXPECT_EQ(run(kBlue10Port, ping).drop_reason, DropReason::gateway_reply_rate_limited);
    EXPECT_EQ(dataplane::drop_count(pipeline.counters().drops, DropReason::gateway_reply_rate_limited), 3u);
    EXPECT_EQ(pipeline.counters().arp_replies, 4u);
}

// The default budget never touches `ping -i 0.01` and an ARP a second, for a minute.
TEST(GatewayReplyRateLimitTest, TheDefaultBudgetLeavesFastPingAlone) {
    std::uint64_t now = 1'000'000'000;
    auto config = node_config("node1");
    config.clock = [&now] { return now; };
    dataplane::Pipeline pipeline(config);
    const auto fabric = load_fabric(fabric_text("node1"));
    SinkStorage out;
    const Bytes arp = arp_request(kBlue10Mac, ipv4("10.0.0.10"), ipv4("10.0.0.1"));
    const Bytes ping = ipv4_frame(blue10_to("10.0.0.1", wire::ip_protocol::kIcmp));
    for (int i = 0; i < 6000; ++i, now += 10'000'000) {
        ASSERT_EQ(pipeline.process(kBlue10Port, ping, *fabric, out.fresh()).verdict, Verdict::reply) << i;
        if (i % 100 == 0) {
            ASSERT_EQ(pipeline.process(kBlue10Port, arp, *fabric, out.fresh()).verdict, Verdict::reply) << i;
        }
    }
}

}  // namespace
}  // namespace andromeda::testing
