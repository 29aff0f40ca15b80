// Underlay -> tenant: decapsulation checks (peer, VNI, hop limit, sender's endpoints) and
// delivery; the uplink and the NAT hooks.
#include <gtest/gtest.h>

#include "overlay/outer_template.hpp"
#include "unit/dataplane/pipeline_fixture.hpp"

namespace andromeda::testing {
namespace {

using dataplane::DropReason;
using dataplane::Verdict;

// Blue 10.0.0.20 (on node2) -> 10.0.0.10 (on node1), as node2 encapsulates it.
Ipv4Spec blue20_to_10(std::uint8_t protocol = wire::ip_protocol::kTcp) {
    Ipv4Spec s;
    s.src_mac = kBlue20Mac;
    s.dst_mac = kBlue10Mac;
    s.src = ipv4("10.0.0.20");
    s.dst = ipv4("10.0.0.10");
    s.protocol = protocol;
    s.ttl = 63;
    return s;
}

class FabricPathTest : public PipelineTest {};

TEST_F(FabricPathTest, DecapsulatedFrameIsDeliveredFieldByField) {
    const Bytes inner = ipv4_frame(blue20_to_10());
    const auto r = run(kUnderlayPort, overlay_packet(inner, 100));
    ASSERT_EQ(r.verdict, Verdict::deliver) << to_string(r.drop_reason);
    ASSERT_EQ(out_.emissions().size(), 1u);
    EXPECT_EQ(out_.emissions()[0].port, kBlue10Port);
    const Bytes delivered = out_.frame(0);
    Bytes expected = inner;
    kBlue10Mac.copy_to(expected.data());
    kGatewayMac.copy_to(expected.data() + 6);
    EXPECT_EQ(delivered, expected);
    EXPECT_EQ(wire::Ipv4View::parse(wire::ByteSpan(delivered).subspan(14))->ttl(), 63);  // inner TTL untouched
    expect_valid_emissions();
    EXPECT_EQ(pipeline_.counters().decapsulated, 1u);
    EXPECT_EQ(pipeline_.counters().delivered_from_fabric, 1u);
    EXPECT_EQ(pipeline_.counters().rx_underlay, 1u);
}

TEST_F(FabricPathTest, InPlaceDeliveryMovesTheOffsetPastTheOuterHeaders) {
    const Bytes inner = ipv4_frame(blue20_to_10());
    ChunkFrame packet(overlay_packet(inner, 100));
    ASSERT_EQ(run_in_place(kUnderlayPort, packet).verdict, Verdict::deliver);
    const auto& e = out_.emissions()[0];
    EXPECT_EQ(e.frame.chunk, packet.chunk.data());
    EXPECT_EQ(e.frame.offset, packet.buffer.offset + 50);
    EXPECT_EQ(e.frame.length, inner.size());
    EXPECT_EQ(out_.frame(0).size(), inner.size());
    EXPECT_EQ(out_.sink().spares_used(), 0u);
}

TEST_F(FabricPathTest, HopLimitZeroIsDroppedAndOneIsStillDelivered) {
    const Bytes inner = ipv4_frame(blue20_to_10());
    EXPECT_EQ(run(kUnderlayPort, overlay_packet(inner, 100, kNode2Ip, kNode1Ip, 0)).drop_reason,
              DropReason::overlay_hop_limit_exceeded);
    EXPECT_EQ(run(kUnderlayPort, overlay_packet(inner, 100, kNode2Ip, kNode1Ip, 1)).verdict, Verdict::deliver);
}

TEST_F(FabricPathTest, SameAddressesInAnotherVniReachTheOtherTenant) {
    Ipv4Spec s = blue20_to_10();
    s.src_mac = kGreen20Mac;
    s.dst_mac = kGreen10Mac;
    ASSERT_EQ(run(kUnderlayPort, overlay_packet(ipv4_frame(s), 200)).verdict, Verdict::deliver);
    EXPECT_EQ(out_.emissions()[0].port, kGreen10Port);
    EXPECT_EQ(wire::EthernetView::parse(out_.frame(0))->destination(), kGreen10Mac);
}

TEST_F(FabricPathTest, VxlanIsDecapsulatedWhenConfigured) {
    auto fabric = load_fabric(fabric_text("node1", "encap = \"vxlan\"\n"));
    dataplane::Pipeline pipeline(node_config("node1"));
    const Bytes inner = ipv4_frame(blue20_to_10());
    const Bytes packet = overlay_packet(inner, 100, kNode2Ip, kNode1Ip, 64, 0, overlay::EncapKind::vxlan);
    EXPECT_EQ(pipeline.process(kUnderlayPort, packet, *fabric, out_.fresh()).verdict, Verdict::deliver);
    // An Andromeda packet on a VXLAN node is host traffic to another port.
    EXPECT_EQ(pipeline.process(kUnderlayPort, overlay_packet(inner, 100), *fabric, out_.fresh()).drop_reason,
              DropReason::underlay_not_overlay);
}

// A kernel VXLAN peer is a bridge: its tenant's ARP request for an endpoint of node1 arrives
// flooded over the overlay, and node1 answers it for the endpoint (its MAC) back to the peer,
// encapsulated as the peer expects. Anyone else's address, a spoofed asker or a reply: dropped.
TEST_F(FabricPathTest, ArpFromAVxlanPeersTenantIsAnsweredForALocalEndpointOverTheOverlay) {
    auto fabric = load_fabric(fabric_text("node1", "encap = \"vxlan\"\n"));
    dataplane::Pipeline pipeline(node_config("node1"));
    const auto ask = [&](const wire::MacAddress& sender_mac, const char* sender, const char* target) {
        const Bytes request = arp_request(sender_mac, ipv4(sender), ipv4(target));
        return overlay_packet(request, 100, kNode2Ip, kNode1Ip, 64, 0, overlay::EncapKind::vxlan);
    };
    const auto r = pipeline.process(kUnderlayPort, ask(kBlue20Mac, "10.0.0.20", "10.0.0.10"), *fabric, out_.fresh());
    ASSERT_EQ(r.verdict, Verdict::forward) << to_string(r.drop_reason);
    ASSERT_EQ(out_.emissions().size(), 1u);
    EXPECT_EQ(out_.emissions()[0].port, kUnderlayPort);
    const Bytes sent = out_.frame(0);
    ASSERT_EQ(sent.size(), 50u + 42u);
    expect_vxlan_from_node1_to_node2(sent, 100);
    // Inner: the reply, from 10.0.0.10's MAC to the asker.
    const auto inner = wire::EthernetView::parse(wire::ByteSpan(sent).subspan(50));
    ASSERT_TRUE(inner);
    EXPECT_EQ(inner->destination(), kBlue20Mac);
    EXPECT_EQ(inner->source(), kBlue10Mac);
    EXPECT_EQ(inner->ethertype(), wire::ethertype::kArp);
    const auto reply = wire::ArpView::parse(inner->payload());
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->packet(), (wire::ArpPacket{wire::arp_op::kReply, kBlue10Mac, ipv4("10.0.0.10"), kBlue20Mac,
                                                   ipv4("10.0.0.20")}));
    EXPECT_EQ(pipeline.counters().overlay_arp_replies, 1u);

    const auto dropped = [&](const Bytes& packet) {
        return pipeline.process(kUnderlayPort, packet, *fabric, out_.fresh()).drop_reason;
    };
    // For node2's own endpoint (its bridge answers), and for no endpoint at all.
    EXPECT_EQ(dropped(ask(kBlue20Mac, "10.0.0.20", "10.0.0.20")), DropReason::overlay_resolution_not_ours);
    EXPECT_EQ(dropped(ask(kBlue20Mac, "10.0.0.20", "10.0.0.99")), DropReason::overlay_resolution_not_ours);
    // node2 speaking for node1's endpoint, or with another MAC than 10.0.0.20's.
    EXPECT_EQ(dropped(ask(kBlue10Mac, "10.0.0.11", "10.0.0.10")), DropReason::fabric_spoofed_source);
    EXPECT_EQ(dropped(ask(mac("02:00:00:00:00:99"), "10.0.0.20", "10.0.0.10")), DropReason::fabric_spoofed_source);
    // A probe (sender 0.0.0.0) and a reply are never answered.
    EXPECT_EQ(dropped(ask(kBlue20Mac, "0.0.0.0", "10.0.0.10")), DropReason::arp_probe);
    const Bytes answer = arp_frame(kBlue20Mac, kBlue10Mac,
                                   {wire::arp_op::kReply, kBlue20Mac, ipv4("10.0.0.20"), kBlue10Mac, ipv4("10.0.0.10")});
    EXPECT_EQ(dropped(overlay_packet(answer, 100, kNode2Ip, kNode1Ip, 64, 0, overlay::EncapKind::vxlan)),
              DropReason::arp_not_request);
    EXPECT_EQ(pipeline.counters().overlay_arp_replies, 1u);
}

struct DropCase {
    const char* name;
    Bytes packet;
    DropReason reason;
};

std::vector<DropCase> underlay_drop_cases() {
    const Bytes inner = ipv4_frame(blue20_to_10());
    Bytes bad_outer_checksum = overlay_packet(inner, 100);
    bad_outer_checksum[24] ^= 1;
    Bytes bad_version = overlay_packet(inner, 100);
    bad_version[42] = 0x20;
    Bytes bad_inner_checksum = inner;
    bad_inner_checksum[24] ^= 1;
    Ipv4Spec from_node1_endpoint = blue20_to_10();
    from_node1_endpoint.src = ipv4("10.0.0.11");  // lives on node1, not on the sender
    Ipv4Spec from_outside = blue20_to_10();
    from_outside.src = ipv4("8.8.8.8");  // blue has no NAT node to vouch for it
    Ipv4Spec to_remote = blue20_to_10();
    to_remote.dst = ipv4("10.0.0.30");
    Ipv4Spec to_nobody = blue20_to_10();
    to_nobody.dst = ipv4("10.0.0.99");
    Ipv4Spec to_unbound = blue20_to_10();
    to_unbound.dst = ipv4("10.0.0.12");
    Bytes inner_arp = arp_request(kBlue20Mac, ipv4("10.0.0.20"), ipv4("10.0.0.10"));
    Bytes udp_to_other_port = overlay_packet(inner, 100);
    wire::store_be16(&udp_to_other_port[36], 22);
    return {
        {"host ARP on the underlay", arp_request(kNode2Mac, kNode2Ip, kNode1Ip), DropReason::underlay_not_overlay},
        {"UDP to another port", udp_to_other_port, DropReason::underlay_not_overlay},
        {"bad outer checksum", bad_outer_checksum, DropReason::malformed_overlay},
        {"bad Andromeda version", bad_version, DropReason::malformed_overlay},
        {"runt", Bytes(10, 0), DropReason::malformed_overlay},
        {"for another node", overlay_packet(inner, 100, kNode2Ip, kNode2Ip), DropReason::not_for_this_node},
        {"from a stranger", overlay_packet(inner, 100, ipv4("192.168.1.77")), DropReason::unknown_peer},
        {"from ourselves", overlay_packet(inner, 100, kNode1Ip), DropReason::unknown_peer},
        {"control flag", overlay_packet(inner, 100, kNode2Ip, kNode1Ip, 64, 0x8), DropReason::overlay_control_unsupported},
        {"hop limit 0", overlay_packet(inner, 100, kNode2Ip, kNode1Ip, 0), DropReason::overlay_hop_limit_exceeded},
        {"unknown VNI", overlay_packet(inner, 999), DropReason::unknown_vni},
        {"inner ARP", overlay_packet(inner_arp, 100), DropReason::inner_not_ipv4},
        {"inner runt IPv4", overlay_packet(Bytes(inner.begin(), inner.begin() + 20), 100), DropReason::malformed_inner_frame},
        {"inner bad checksum", overlay_packet(bad_inner_checksum, 100), DropReason::malformed_inner_frame},
        {"source on another node", overlay_packet(ipv4_frame(from_node1_endpoint), 100), DropReason::fabric_spoofed_source},
        {"outside source, no NAT", overlay_packet(ipv4_frame(from_outside), 100), DropReason::fabric_spoofed_source},
        {"to a remote endpoint", overlay_packet(ipv4_frame(to_remote), 100), DropReason::not_local_endpoint},
        {"to no endpoint", overlay_packet(ipv4_frame(to_nobody), 100), DropReason::not_local_endpoint},
        {"to an unbound port", overlay_packet(ipv4_frame(to_unbound), 100), DropReason::endpoint_port_unbound},
    };
}

TEST_F(FabricPathTest, EveryUnderlayDropHasItsReasonAndCounter) {
    for (const DropCase& c : underlay_drop_cases()) {
        SCOPED_TRACE(c.name);
        const std::uint64_t before = drops(c.reason);
        const auto r = run(kUnderlayPort, c.packet);
        EXPECT_EQ(r.verdict, Verdict::drop);
        EXPECT_EQ(r.drop_reason, c.reason) << to_string(r.drop_reason);
        EXPECT_TRUE(out_.emissions().empty());
        EXPECT_EQ(drops(c.reason), before + 1);
    }
    const auto& decap = pipeline_.counters().decap_errors;
    EXPECT_EQ(decap.not_ipv4, 1u);
    EXPECT_EQ(decap.wrong_udp_port, 1u);
    EXPECT_EQ(decap.bad_ip_checksum, 1u);
    EXPECT_EQ(decap.bad_overlay_version, 1u);
    EXPECT_EQ(decap.truncated_ethernet, 1u);
}

TEST_F(FabricPathTest, OutsideTrafficReachesNatOnTheNatNode) {
    Ipv4Spec s;
    s.src_mac = mac("02:00:00:32:00:14");
    s.dst_mac = kGatewayMac;
    s.src = ipv4("192.168.50.20");
    s.dst = ipv4("8.8.8.8");
    const Bytes inner = ipv4_frame(s);
    const Bytes packet = overlay_packet(inner, 400);
    const auto r = run(kUnderlayPort, packet);
    ASSERT_EQ(r.verdict, Verdict::to_nat) << to_string(r.drop_reason);
    EXPECT_EQ(r.nat.direction, dataplane::NatDirection::outbound);
    EXPECT_EQ(r.nat.vni, 400u);
    EXPECT_EQ(r.nat.frame_offset, 50u);
    EXPECT_EQ(r.nat.frame_length, inner.size());
    EXPECT_TRUE(std::equal(inner.begin(), inner.end(), packet.begin() + 50));
}

TEST_F(FabricPathTest, NatNodeMaySpeakForOutsideAddresses) {
    // Red's NAT node is node2: its translated replies carry outside sources.
    Ipv4Spec s;
    s.src_mac = kGatewayMac;
    s.dst_mac = kRed10Mac;
    s.src = ipv4("8.8.8.8");
    s.dst = ipv4("172.16.0.10");
    ASSERT_EQ(run(kUnderlayPort, overlay_packet(ipv4_frame(s), 300)).verdict, Verdict::deliver);
    EXPECT_EQ(out_.emissions()[0].port, kRed10Port);
    // node3 is not red's NAT node.
    pipeline_.set_next_hop(kNode3Ip, mac("02:00:00:00:a1:03"));
    EXPECT_EQ(run(kUnderlayPort, overlay_packet(ipv4_frame(s), 300, kNode3Ip)).drop_reason,
              DropReason::fabric_spoofed_source);
}

TEST_F(FabricPathTest, UplinkFramesGoToNatOnlyOnANatNode) {
    const Bytes frame = ipv4_frame(blue10_to("203.0.113.10"));
    const auto r = run(kUplinkPort, frame);
    ASSERT_EQ(r.verdict, Verdict::to_nat);
    EXPECT_EQ(r.nat.direction, dataplane::NatDirection::inbound);
    EXPECT_EQ(r.nat.frame_length, frame.size());
    EXPECT_EQ(run(kUplinkPort, Bytes(5, 0)).drop_reason, DropReason::malformed_ethernet);

    std::string text = fabric_text("node1");
    for (const std::string cut : {"[vpc.nat]\ngateway_node = \"node2\"\naddress = \"203.0.113.20\"\n",
                                  "[vpc.nat]\ngateway_node = \"node1\"\naddress = \"203.0.113.10\"\n"})
        text.erase(text.find(cut), cut.size());
    auto no_nat = load_fabric(text);
    EXPECT_EQ(pipeline_.process(kUplinkPort, frame, *no_nat, out_.fresh()).drop_reason, DropReason::uplink_without_nat);
}

TEST_F(FabricPathTest, RouteFromNatDeliversOrEncapsulatesButNeverLoops) {
    Ipv4Spec s;
    s.src_mac = kGatewayMac;
    s.dst_mac = kGatewayMac;
    s.src = ipv4("8.8.8.8");
    s.dst = ipv4("192.168.50.10");
    ASSERT_EQ(pipeline_.route_from_nat(400, ipv4_frame(s), *fabric_, out_.fresh()).verdict, Verdict::deliver);
    EXPECT_EQ(out_.emissions()[0].port, kOrange10Port);
    EXPECT_EQ(wire::EthernetView::parse(out_.frame(0))->destination(), kOrange10Mac);
    s.dst = ipv4("192.168.50.20");
    ASSERT_EQ(pipeline_.route_from_nat(400, ipv4_frame(s), *fabric_, out_.fresh()).verdict, Verdict::forward);
    expect_valid_emissions();
    s.dst = ipv4("9.9.9.9");
    EXPECT_EQ(pipeline_.route_from_nat(400, ipv4_frame(s), *fabric_, out_.fresh()).drop_reason, DropReason::no_route);
    EXPECT_EQ(pipeline_.route_from_nat(12345, ipv4_frame(s), *fabric_, out_.fresh()).drop_reason,
              DropReason::unknown_vni);
    EXPECT_EQ(pipeline_.counters().rx_from_nat, 4u);
}

}  // namespace
}  // namespace andromeda::testing
