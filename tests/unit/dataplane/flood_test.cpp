// Broadcast and multicast in a VXLAN fabric (head-end replication, pipeline_flood.cpp): a tenant's
// flood reaches its VPC's other local endpoints and each peer node with an endpoint of the VPC, a
// peer's flood reaches the local endpoints only, byte for byte; senders are checked, budgets kept,
// and Andromeda's own encapsulation and VPCs with security groups never flood.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include "support/icmpv6_frame_builder.hpp"
#include "unit/dataplane/pipeline_fixture.hpp"
#include "wire/checksum.hpp"
#include "wire/ipv6_addressing.hpp"

namespace andromeda::testing {
namespace {

namespace ts = test_support;
using dataplane::DropReason;
using dataplane::Verdict;

// node1's view of the shared world (blue: .10, .11, .12 unbound here; .20 on node2; .30 on node3,
// which has no next hop) with VXLAN as the encapsulation, dual stack.
class FloodTest : public ::testing::Test {
protected:
    explicit FloodTest(dataplane::PipelineConfig config = node_config("node1"))
        : fabric_(load_fabric(dual_stack_vxlan_fabric("node1"))), pipeline_(with_clock(std::move(config))) {}

    dataplane::PipelineConfig with_clock(dataplane::PipelineConfig config) {
        config.clock = [this] { return now_; };
        return config;
    }
    dataplane::FrameResult run(PortId port, const Bytes& frame) {
        return pipeline_.process(port, frame, *fabric_, out_.fresh());
    }
    // The emission to `port`, or null.
    const dataplane::Emission* to(PortId port) const {
        const auto e = out_.emissions();
        const auto it = std::find_if(e.begin(), e.end(), [&](const dataplane::Emission& x) { return x.port == port; });
        return it == e.end() ? nullptr : &*it;
    }
    Bytes bytes_of(const dataplane::Emission& e) const { return Bytes(e.frame.data(), e.frame.data() + e.frame.length); }

    std::uint64_t now_ = 1'000'000'000;
    std::shared_ptr<const fabric::FabricSnapshot> fabric_;
    dataplane::Pipeline pipeline_;
    SinkStorage out_;
};

// A UDP datagram to the broadcast MAC, from `mac` and `source` to `destination`.
Ipv4Spec broadcast(const wire::MacAddress& mac, const char* source, const char* destination = "10.0.0.255") {
    Ipv4Spec s;
    s.src_mac = mac;
    s.dst_mac = kBroadcast;
    s.src = ipv4(source);
    s.dst = ipv4(destination);
    s.dst_port = 5353;
    return s;
}

Ipv4Spec blue10_broadcast() { return broadcast(kBlue10Mac, "10.0.0.10"); }

// `s` (by default blue .20's broadcast) as node2, a kernel VXLAN peer, floods it to node1.
Bytes blue20_broadcast_over_vxlan(const Ipv4Spec& s = broadcast(kBlue20Mac, "10.0.0.20")) {
    return overlay_packet(ipv4_frame(s), 100, kNode2Ip, kNode1Ip, 64, 0, overlay::EncapKind::vxlan);
}

TEST_F(FloodTest, ATenantsBroadcastReachesTheVpcsOtherLocalEndpointsAndEachPeerNodeUnchanged) {
    const Bytes frame = ipv4_frame(blue10_broadcast());
    const auto r = run(kBlue10Port, frame);
    ASSERT_EQ(r.verdict, Verdict::forward) << to_string(r.drop_reason);
    // .11 here and node2 (for .20); not .10 itself, not .12 (no port), not node3 (no next hop),
    // and nothing to green, which has the same addresses on other ports.
    ASSERT_EQ(out_.emissions().size(), 2u);
    ASSERT_NE(to(kBlue11Port), nullptr);
    EXPECT_EQ(bytes_of(*to(kBlue11Port)), frame);
    const dataplane::Emission* tunnel = to(kUnderlayPort);
    ASSERT_NE(tunnel, nullptr);
    const Bytes sent = bytes_of(*tunnel);
    ASSERT_EQ(sent.size(), 50u + frame.size());
    expect_vxlan_from_node1_to_node2(sent, 100);
    EXPECT_EQ(Bytes(sent.begin() + 50, sent.end()), frame);
    const auto c = pipeline_.counters();
    EXPECT_EQ(c.flooded, 1u);
    EXPECT_EQ(c.flood_copies, 2u);
    EXPECT_EQ(c.encapsulated, 1u);     // each copy counted as what it is
    EXPECT_EQ(c.delivered_local, 1u);
}

TEST_F(FloodTest, APeersBroadcastReachesEveryLocalEndpointOfTheVpcAndIsNeverSentOn) {
    const Bytes packet = blue20_broadcast_over_vxlan();
    const Bytes inner(packet.begin() + 50, packet.end());
    const auto r = run(kUnderlayPort, packet);
    ASSERT_EQ(r.verdict, Verdict::forward) << to_string(r.drop_reason);
    ASSERT_EQ(out_.emissions().size(), 2u);
    ASSERT_NE(to(kBlue10Port), nullptr);
    ASSERT_NE(to(kBlue11Port), nullptr);
    EXPECT_EQ(bytes_of(*to(kBlue10Port)), inner);  // its MACs as a bridge forwards it
    EXPECT_EQ(bytes_of(*to(kBlue11Port)), inner);
    EXPECT_EQ(to(kUnderlayPort), nullptr);  // split horizon: node2 sent it to every node itself
    EXPECT_EQ(pipeline_.counters().flood_copies, 2u);
    EXPECT_EQ(pipeline_.counters().delivered_from_fabric, 2u);
}

// The delivering express lane takes a peer's unicast to a local endpoint; one to the same address
// behind a broadcast MAC is the general path's, and floods either way.
TEST_F(FloodTest, ABroadcastMacToALocalEndpointsAddressFloodsWithAndWithoutTheExpressLanes) {
    const Bytes packet = blue20_broadcast_over_vxlan(broadcast(kBlue20Mac, "10.0.0.20", "10.0.0.10"));
    dataplane::PipelineConfig general_only = node_config("node1");
    general_only.express_lanes = false;
    dataplane::Pipeline general(general_only);
    for (dataplane::Pipeline* p : {&pipeline_, &general}) {
        const auto r = p->process(kUnderlayPort, packet, *fabric_, out_.fresh());
        ASSERT_EQ(r.verdict, Verdict::forward) << to_string(r.drop_reason);
        EXPECT_EQ(out_.emissions().size(), 2u);
        EXPECT_EQ(p->counters().flooded, 1u);
    }
}

TEST_F(FloodTest, APeerMaySpeakOnlyForItsOwnEndpointsFromTheirOwnAddresses) {
    // node1's endpoint claimed by node2; node2's endpoint's MAC with another address; no endpoint's MAC.
    for (const Ipv4Spec& s : {broadcast(kBlue10Mac, "10.0.0.10"), broadcast(kBlue20Mac, "10.0.0.21"),
                              broadcast(mac("02:00:00:00:00:99"), "10.0.0.20")})
        EXPECT_EQ(run(kUnderlayPort, blue20_broadcast_over_vxlan(s)).drop_reason, DropReason::fabric_spoofed_source)
            << s.src_mac.to_string();
    // A tenant's own broadcast must come from its own address too.
    Ipv4Spec t = blue10_broadcast();
    t.src = ipv4("10.0.0.11");
    EXPECT_EQ(run(kBlue10Port, ipv4_frame(t)).drop_reason, DropReason::spoofed_source_ip);
    EXPECT_EQ(pipeline_.counters().flooded, 0u);
}

TEST_F(FloodTest, Ipv6MulticastFromALinkLocalAddressIsFloodedAndMldIsNot) {
    const wire::Ipv6Address all_nodes = ipv6("ff02::1");
    const wire::MacAddress all_nodes_mac = mac("33:33:00:00:00:01");
    const Bytes frame =
        ipv6_udp_frame(kBlue10Mac, all_nodes_mac, wire::link_local_address(kBlue10Mac), all_nodes, 40);
    const auto r = run(kBlue10Port, frame);
    ASSERT_EQ(r.verdict, Verdict::forward) << to_string(r.drop_reason);
    ASSERT_EQ(out_.emissions().size(), 2u);
    EXPECT_EQ(bytes_of(*to(kBlue11Port)), frame);
    ASSERT_NE(to(kUnderlayPort), nullptr);
    // From node2's .20, by its link-local address; then from another MAC's link-local.
    const Bytes peer_frame =
        ipv6_udp_frame(kBlue20Mac, all_nodes_mac, wire::link_local_address(kBlue20Mac), all_nodes, 40);
    const auto from_peer = [&](const Bytes& inner) {
        return run(kUnderlayPort, overlay_packet(inner, 100, kNode2Ip, kNode1Ip, 64, 0, overlay::EncapKind::vxlan));
    };
    ASSERT_EQ(from_peer(peer_frame).verdict, Verdict::forward);
    EXPECT_EQ(bytes_of(*to(kBlue10Port)), peer_frame);
    EXPECT_EQ(from_peer(ipv6_udp_frame(kBlue20Mac, all_nodes_mac, wire::link_local_address(kBlue10Mac), all_nodes, 40))
                  .drop_reason,
              DropReason::fabric_spoofed_source);
    // MLD and router messages from a peer's tenant are no one's business here.
    ts::Icmpv6Frame mld;
    mld.src_mac = kBlue20Mac.bytes();
    mld.src = wire::link_local_address(kBlue20Mac).bytes();
    mld.dst = ts::ipv6("ff02::16");
    mld.dst_mac = ts::multicast_mac(mld.dst);
    mld.hop_limit = 1;
    mld.type = 143;  // MLDv2 report
    mld.body = Bytes(4, 0);
    EXPECT_EQ(from_peer(ts::icmpv6_frame(mld)).drop_reason, DropReason::mld_ignored);
    mld.type = ts::icmpv6::kRouterAdvertisement;
    mld.dst = ts::ipv6("ff02::1");
    mld.dst_mac = ts::multicast_mac(mld.dst);
    mld.hop_limit = 255;
    mld.body = Bytes(12, 0);
    EXPECT_EQ(from_peer(ts::icmpv6_frame(mld)).drop_reason, DropReason::tenant_router_message);
    EXPECT_EQ(pipeline_.counters().flooded, 2u);
}

// A veth left the sender's UDP checksum to an offload: the field holds the pseudo-header's sum.
// Every copy carries the finished checksum (a kernel peer and a tenant would drop it otherwise).
TEST_F(FloodTest, AnUnfinishedChecksumIsFinishedInEveryCopy) {
    Bytes frame = ipv4_frame(blue10_broadcast());
    const auto ip = wire::Ipv4View::parse(wire::ByteSpan(frame).subspan(14));
    const std::size_t udp = 14 + ip->header_length();
    const auto udp_length = static_cast<std::uint32_t>(frame.size() - udp);
    const std::uint16_t partial =
        wire::checksum_fold(wire::pseudo_header_sum(ip->source(), ip->destination(), wire::ip_protocol::kUdp, udp_length));
    wire::store_be16(frame.data() + udp + 6, partial);
    ASSERT_EQ(run(kBlue10Port, frame).verdict, Verdict::forward);
    for (const PortId port : {kBlue11Port, kUnderlayPort}) {
        ASSERT_NE(to(port), nullptr);
        const Bytes copy = bytes_of(*to(port));
        const std::size_t inner = port == kUnderlayPort ? 50 : 0;
        const wire::ByteSpan datagram = wire::ByteSpan(copy).subspan(inner + udp);
        EXPECT_TRUE(wire::checksum_verifies(
            datagram, wire::pseudo_header_sum(ip->source(), ip->destination(), wire::ip_protocol::kUdp, udp_length)))
            << "port " << port;
    }
    EXPECT_EQ(pipeline_.counters().checksums_finished, 2u);
}

TEST_F(FloodTest, EachSendersFloodsAreBudgeted) {
    // The default budget: 100 at once, then 100 a second.
    const Bytes frame = ipv4_frame(blue10_broadcast());
    for (int i = 0; i < 100; ++i) ASSERT_EQ(run(kBlue10Port, frame).verdict, Verdict::forward) << i;
    EXPECT_EQ(run(kBlue10Port, frame).drop_reason, DropReason::flood_rate_limited);
    // Another sender has its own budget; a peer's sender too.
    EXPECT_EQ(run(kBlue11Port, ipv4_frame(broadcast(kBlue11Mac, "10.0.0.11"))).verdict, Verdict::forward);
    EXPECT_EQ(run(kUnderlayPort, blue20_broadcast_over_vxlan()).verdict, Verdict::forward);
    now_ += 20'000'000;  // 20 ms: two more
    EXPECT_EQ(run(kBlue10Port, frame).verdict, Verdict::forward);
    EXPECT_EQ(run(kBlue10Port, frame).verdict, Verdict::forward);
    EXPECT_EQ(run(kBlue10Port, frame).drop_reason, DropReason::flood_rate_limited);
    EXPECT_EQ(pipeline_.counters().flooded, 104u);
}

TEST_F(FloodTest, OversizeAndNowhereToGoAreDropped) {
    Ipv4Spec big = blue10_broadcast();
    big.payload = 1500;  // over the VPC's 1450
    EXPECT_EQ(run(kBlue10Port, ipv4_frame(big)).drop_reason, DropReason::too_big_no_icmp);
    // Without the underlay only blue .11 is left; green .10 has no one on this node then.
    dataplane::PipelineConfig config = node_config("node1");
    config.ports.erase(config.ports.begin());  // the underlay port
    dataplane::Pipeline alone(config);
    Ipv4Spec green = blue10_broadcast();
    green.src_mac = kGreen10Mac;
    EXPECT_EQ(alone.process(kGreen10Port, ipv4_frame(green), *fabric_, out_.fresh()).drop_reason,
              DropReason::flood_no_members);
    const auto r = alone.process(kBlue10Port, ipv4_frame(blue10_broadcast()), *fabric_, out_.fresh());
    ASSERT_EQ(r.verdict, Verdict::forward);
    ASSERT_EQ(out_.emissions().size(), 1u);
    EXPECT_EQ(out_.emissions()[0].port, kBlue11Port);
}

TEST_F(FloodTest, ASinkWithoutRoomForEveryCopySendsNone) {
    SinkStorage small(1);  // one spare: two copies needed
    const auto r = pipeline_.process(kBlue10Port, ipv4_frame(blue10_broadcast()), *fabric_, small.fresh());
    EXPECT_EQ(r.drop_reason, DropReason::no_tx_buffer);
    EXPECT_TRUE(small.emissions().empty());
}

// Andromeda's encapsulation carries unicast only; a VPC with security groups never floods.
TEST(FloodOff, AndromedaEncapsulationAndSecurityGroupsKeepBroadcastDropped) {
    SinkStorage out;
    const auto andromeda = load_fabric(dual_stack_fabric("node1"));
    dataplane::Pipeline pipeline(node_config("node1"));
    EXPECT_EQ(pipeline.process(kBlue10Port, ipv4_frame(blue10_broadcast()), *andromeda, out.fresh()).drop_reason,
              DropReason::multicast_or_broadcast);
    // Blue gets a group with no rules, for .11.
    std::string text = dual_stack_vxlan_fabric("node1");
    text.insert(text.find("[[vpc.endpoint]]"), "[[vpc.security_group]]\nname = \"web\"\n");
    const std::string port11 = "port = \"tap-blue-11\"\n";
    text.replace(text.find(port11), port11.size(), port11 + "groups = [\"web\"]\n");
    std::string errors;
    const auto grouped = try_load_fabric(text, 1, errors);
    ASSERT_TRUE(grouped) << errors;
    dataplane::Pipeline firewalled(node_config("node1"));
    EXPECT_EQ(firewalled.process(kBlue10Port, ipv4_frame(blue10_broadcast()), *grouped, out.fresh()).drop_reason,
              DropReason::multicast_or_broadcast);
    EXPECT_EQ(firewalled.process(kUnderlayPort, blue20_broadcast_over_vxlan(), *grouped, out.fresh()).drop_reason,
              DropReason::multicast_or_broadcast);
}

}  // namespace
}  // namespace andromeda::testing
