// NatPipeline end to end in memory: tenants on node1 reach the outside through node2's NAT and
// uplink, and the outside reaches them back; TCP through its whole life and its expiry; UDP and
// ICMP echo; tenants sharing a port or a private address; port forwards; hairpinning. Each test
// runs in copy, in-place and batch mode.
#include "unit/dataplane/nat_pipeline_fixture.hpp"

namespace andromeda::testing::natworld {
namespace {

using dataplane::NatPath;
using dataplane::Verdict;
using nat::test::Endpoints;
using nat::test::endpoints;
namespace flag = wire::tcp_flag;

const wire::Ipv4Address kNat = ipv4("198.51.100.1");
const wire::Ipv4Address kGreenNat = ipv4("198.51.100.2");
const wire::Ipv4Address kRemote = ipv4("203.0.113.7");
const wire::Ipv4Address kBlue10 = ipv4("10.0.0.10");
const wire::Ipv4Address kBlue11 = ipv4("10.0.0.11");
const wire::Ipv4Address kBlue20 = ipv4("10.0.0.20");

using NatRoundTrip = NatPipelineTest;

TEST_P(NatRoundTrip, UdpOutAndReplyBack) {
    const Bytes udp = nat::test::udp_packet(kBlue10, 40000, kRemote, 4242, 64);
    const Bytes out = expect_on_uplink(from_tenant(kBlue10Port, kBlue10Mac, udp));
    ASSERT_FALSE(out.empty());
    // Source port kept: it is free and in the range.
    EXPECT_EQ(endpoints(out), (Endpoints{kNat, 40000, kRemote, 4242}));
    EXPECT_TRUE(std::equal(udp.begin() + 28, udp.end(), out.begin() + 28)) << "payload changed";
    EXPECT_EQ(node2_.stage.counters().to_uplink, 1u);

    const Sent back = from_outside(nat::test::udp_packet(kRemote, 4242, kNat, 40000, 32));
    const Bytes in = expect_delivered(back, kBlue10Port, kBlue10Mac);
    ASSERT_FALSE(in.empty());
    EXPECT_EQ(endpoints(in), (Endpoints{kRemote, 4242, kBlue10, 40000}));
    EXPECT_EQ(node2_.stage.counters().to_tenant, 1u);
    EXPECT_EQ(engine_.counters().translated_inbound, 1u);
}

TEST_P(NatRoundTrip, IcmpEchoIdentifierTranslatedBothWays) {
    const Bytes out = expect_on_uplink(
        from_tenant(kBlue10Port, kBlue10Mac, nat::test::icmp_echo(kBlue10, kRemote, wire::icmpv4_type::kEchoRequest, 7, 1)));
    ASSERT_FALSE(out.empty());
    const std::uint16_t id = endpoints(out).source_port;
    EXPECT_EQ(endpoints(out).source, kNat);
    const Bytes in = expect_delivered(
        from_outside(nat::test::icmp_echo(kRemote, kNat, wire::icmpv4_type::kEchoReply, id, 1)), kBlue10Port, kBlue10Mac);
    ASSERT_FALSE(in.empty());
    EXPECT_EQ(endpoints(in), (Endpoints{kRemote, 7, kBlue10, 7}));
    EXPECT_EQ(in[20], wire::icmpv4_type::kEchoReply);
}

TEST_P(NatRoundTrip, TcpHandshakeEstablishedFinThenExpiryExactlyAtTheTimeout) {
    const auto state = [&] {
        const auto flows = engine_.flows(now_);
        return flows.size() == 1 ? flows[0].state : nat::FlowState::replied;
    };
    Bytes out = expect_on_uplink(from_tenant(kBlue10Port, kBlue10Mac, nat::test::tcp_packet(kBlue10, 40001, kRemote, 80, flag::kSyn)));
    ASSERT_FALSE(out.empty());
    const std::uint16_t port = endpoints(out).source_port;
    EXPECT_EQ(state(), nat::FlowState::tcp_syn_sent);
    advance(1);
    expect_delivered(from_outside(nat::test::tcp_packet(kRemote, 80, kNat, port, flag::kSyn | flag::kAck)), kBlue10Port,
                     kBlue10Mac);
    EXPECT_EQ(state(), nat::FlowState::tcp_syn_received);
    expect_on_uplink(from_tenant(kBlue10Port, kBlue10Mac, nat::test::tcp_packet(kBlue10, 40001, kRemote, 80, flag::kAck)));
    EXPECT_EQ(state(), nat::FlowState::tcp_established);
    // Data both ways, then FIN from each side.
    expect_on_uplink(from_tenant(kBlue10Port, kBlue10Mac,
                                 nat::test::tcp_packet(kBlue10, 40001, kRemote, 80, flag::kAck | flag::kPsh, 100)));
    expect_delivered(from_outside(nat::test::tcp_packet(kRemote, 80, kNat, port, flag::kAck | flag::kPsh, 200)),
                     kBlue10Port, kBlue10Mac);
    expect_on_uplink(from_tenant(kBlue10Port, kBlue10Mac,
                                 nat::test::tcp_packet(kBlue10, 40001, kRemote, 80, flag::kFin | flag::kAck)));
    EXPECT_EQ(state(), nat::FlowState::tcp_fin_wait);
    const Bytes last_in = expect_delivered(
        from_outside(nat::test::tcp_packet(kRemote, 80, kNat, port, flag::kFin | flag::kAck)), kBlue10Port, kBlue10Mac);
    EXPECT_EQ(endpoints(last_in), (Endpoints{kRemote, 80, kBlue10, 40001}));
    EXPECT_EQ(state(), nat::FlowState::tcp_closing);

    // Closing timeout 30 s: still there a nanosecond before, gone at exactly 30 s.
    const nat::TimePoint last = now_;
    now_ = last + std::chrono::seconds(30) - nat::Duration(1);
    EXPECT_EQ(engine_.flows(now_).size(), 1u);
    now_ = last + std::chrono::seconds(30);
    const Sent late = from_outside(nat::test::tcp_packet(kRemote, 80, kNat, port, flag::kAck));
    EXPECT_EQ(late.result.verdict, Verdict::drop);
    EXPECT_EQ(late.result.nat_drop, nat::DropReason::no_flow);
    EXPECT_TRUE(late.frames.empty());
    engine_.expire(now_);
    EXPECT_EQ(engine_.flow_count(), 0u);
    EXPECT_EQ(node2_.stage.counters().nat_drop(nat::DropReason::no_flow), 1u);
}

TEST_P(NatRoundTrip, TwoTenantsWithTheSameSourcePortBothGetTheirReplies) {
    const Bytes out10 = expect_on_uplink(from_tenant(kBlue10Port, kBlue10Mac, nat::test::udp_packet(kBlue10, 5000, kRemote, 53)));
    const Bytes out11 = expect_on_uplink(from_tenant(kBlue11Port, kBlue11Mac, nat::test::udp_packet(kBlue11, 5000, kRemote, 53)));
    ASSERT_FALSE(out10.empty());
    ASSERT_FALSE(out11.empty());
    const std::uint16_t port10 = endpoints(out10).source_port, port11 = endpoints(out11).source_port;
    EXPECT_NE(port10, port11);
    const Bytes in11 = expect_delivered(from_outside(nat::test::udp_packet(kRemote, 53, kNat, port11)), kBlue11Port, kBlue11Mac);
    const Bytes in10 = expect_delivered(from_outside(nat::test::udp_packet(kRemote, 53, kNat, port10)), kBlue10Port, kBlue10Mac);
    EXPECT_EQ(endpoints(in10), (Endpoints{kRemote, 53, kBlue10, 5000}));
    EXPECT_EQ(endpoints(in11), (Endpoints{kRemote, 53, kBlue11, 5000}));
}

TEST_P(NatRoundTrip, SamePrivateAddressInTwoVpcsLeavesFromEachVpcsNatAddress) {
    const Bytes blue = expect_on_uplink(from_tenant(kBlue10Port, kBlue10Mac, nat::test::udp_packet(kBlue10, 6000, kRemote, 53)));
    const Bytes green = expect_on_uplink(from_tenant(kGreen10, kGreen10Mac, nat::test::udp_packet(kBlue10, 6000, kRemote, 53)));
    ASSERT_FALSE(blue.empty());
    ASSERT_FALSE(green.empty());
    EXPECT_EQ(endpoints(blue).source, kNat);
    EXPECT_EQ(endpoints(green).source, kGreenNat);
    const Bytes to_green = expect_delivered(
        from_outside(nat::test::udp_packet(kRemote, 53, kGreenNat, endpoints(green).source_port)), kGreen10, kGreen10Mac);
    EXPECT_EQ(endpoints(to_green), (Endpoints{kRemote, 53, kBlue10, 6000}));
    const Bytes to_blue = expect_delivered(
        from_outside(nat::test::udp_packet(kRemote, 53, kNat, endpoints(blue).source_port)), kBlue10Port, kBlue10Mac);
    EXPECT_EQ(endpoints(to_blue), (Endpoints{kRemote, 53, kBlue10, 6000}));
}

TEST_P(NatRoundTrip, PortForwardToAnEndpointOnAnotherNodeBothWays) {
    // 198.51.100.1:8080/tcp -> 10.0.0.11:80 on node1, through the overlay.
    const Bytes in = expect_delivered(from_outside(nat::test::tcp_packet(kRemote, 50000, kNat, 8080, flag::kSyn)),
                                      kBlue11Port, kBlue11Mac);
    EXPECT_EQ(endpoints(in), (Endpoints{kRemote, 50000, kBlue11, 80}));
    const Bytes out = expect_on_uplink(
        from_tenant(kBlue11Port, kBlue11Mac, nat::test::tcp_packet(kBlue11, 80, kRemote, 50000, flag::kSyn | flag::kAck)));
    EXPECT_EQ(endpoints(out), (Endpoints{kNat, 8080, kRemote, 50000}));
}

TEST_P(NatRoundTrip, PortForwardToAnEndpointOnTheGatewayNodeBothWays) {
    // 198.51.100.1:5353/udp -> 10.0.0.20:53, delivered on node2 itself.
    const Sent at_gateway = from_outside(nat::test::udp_packet(kRemote, 7000, kNat, 5353));
    EXPECT_EQ(at_gateway.result.path, NatPath::to_tenant);
    const Bytes in = expect_delivered(at_gateway, kBlue20Port, kBlue20Mac);
    EXPECT_EQ(endpoints(in), (Endpoints{kRemote, 7000, kBlue20, 53}));
    const Sent reply = send(node2_, kBlue20Port, ethernet_around(kGatewayMac, kBlue20Mac, nat::test::udp_packet(kBlue20, 53, kRemote, 7000)));
    EXPECT_EQ(endpoints(expect_on_uplink(reply)), (Endpoints{kNat, 5353, kRemote, 7000}));
}

TEST_P(NatRoundTrip, TenantToItsOwnNatAddressIsHairpinnedToTheForwardedEndpoint) {
    const Sent hairpin = from_tenant(kBlue10Port, kBlue10Mac, nat::test::udp_packet(kBlue10, 41000, kNat, 5353));
    EXPECT_EQ(hairpin.result.path, NatPath::to_tenant);
    const Bytes in = expect_delivered(hairpin, kBlue20Port, kBlue20Mac);
    ASSERT_FALSE(in.empty());
    // RFC 4787 REQ-9b: the NAT address as source, never the private one.
    EXPECT_EQ(endpoints(in).source, kNat);
    EXPECT_EQ(endpoints(in).destination, kBlue20);
    EXPECT_EQ(endpoints(in).destination_port, 53);
    EXPECT_EQ(frame_on(hairpin, kUplink), nullptr);
}

TEST_P(NatRoundTrip, UnsolicitedInboundAndNonIpv4OnTheUplinkAreDroppedByName) {
    const Sent stray = send(node2_, kUplink, ethernet_around(kUplinkMac, kRouterMac, nat::test::udp_packet(kRemote, 1, kNat, 2)));
    EXPECT_EQ(stray.result.verdict, Verdict::drop);
    EXPECT_EQ(stray.result.nat_drop, nat::DropReason::no_flow);
    EXPECT_TRUE(stray.frames.empty());
    const Sent arp = send(node2_, kUplink, arp_request(kRouterMac, ipv4("198.51.100.129"), kNat));
    EXPECT_EQ(arp.result.verdict, Verdict::drop);
    EXPECT_EQ(arp.result.stage_drop, dataplane::NatStageDrop::not_ipv4);
    EXPECT_EQ(node2_.stage.counters().drop_not_ipv4, 1u);
    EXPECT_EQ(node2_.stage.counters().nat_drop(nat::DropReason::no_flow), 1u);
}

TEST_P(NatRoundTrip, UnknownUplinkNextHopDropsUntilLearned) {
    dataplane::UplinkConfig uplink = uplink_config();
    uplink.next_hop_mac.reset();
    dataplane::NatPipeline stage(node2_.pipeline, &engine_, uplink);
    const Bytes tenant = ethernet_around(kGatewayMac, kBlue20Mac, nat::test::udp_packet(kBlue20, 1000, kRemote, 53));
    dataplane::NatFrameResult r = stage.process(kBlue20Port, tenant, *node2_.fabric, node2_.out.fresh(), now_);
    EXPECT_EQ(r.stage_drop, dataplane::NatStageDrop::no_uplink_next_hop);
    EXPECT_TRUE(node2_.out.emissions().empty());
    stage.set_uplink_next_hop(kRouterMac);
    r = stage.process(kBlue20Port, tenant, *node2_.fabric, node2_.out.fresh(), now_);
    EXPECT_EQ(r.path, NatPath::to_uplink);
    EXPECT_EQ(node2_.out.emissions().size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Modes, NatRoundTrip, ::testing::Values(Mode::copy, Mode::in_place, Mode::batch), mode_name);

}  // namespace
}  // namespace andromeda::testing::natworld
