// Tenant port -> fabric: encapsulation, local delivery, isolation between VPCs with the same
// CIDR, NAT hand-off, and every drop a tenant frame can meet (anti-spoofing included).
#include <gtest/gtest.h>

#include "overlay/decap.hpp"
#include "overlay/flow_hash.hpp"
#include "unit/dataplane/pipeline_fixture.hpp"

namespace andromeda::testing {
namespace {

using dataplane::DropReason;
using dataplane::Verdict;

class TenantPathTest : public PipelineTest {};

TEST_F(TenantPathTest, RemoteEndpointIsEncapsulatedFieldByField) {
    const Bytes frame = ipv4_frame(blue10_to("10.0.0.20"));
    const auto r = run(kBlue10Port, frame);
    ASSERT_EQ(r.verdict, Verdict::forward) << to_string(r.drop_reason);
    ASSERT_EQ(out_.emissions().size(), 1u);
    EXPECT_EQ(out_.emissions()[0].port, kUnderlayPort);
    EXPECT_EQ(out_.emissions()[0].input_index, -1);
    const Bytes outer = out_.frame(0);
    ASSERT_EQ(outer.size(), frame.size() + 50);

    const auto eth = wire::EthernetView::parse(outer);
    EXPECT_EQ(eth->destination(), kNode2Mac);
    EXPECT_EQ(eth->source(), kNode1Mac);
    EXPECT_EQ(eth->ethertype(), wire::ethertype::kIpv4);
    const auto ip = wire::Ipv4View::parse(eth->payload());
    ASSERT_TRUE(ip);
    EXPECT_EQ(ip->ihl(), 5);
    EXPECT_TRUE(ip->dont_fragment());
    EXPECT_EQ(ip->ttl(), 64);
    EXPECT_EQ(ip->protocol(), wire::ip_protocol::kUdp);
    EXPECT_EQ(ip->total_length(), frame.size() + 36);
    EXPECT_EQ(ip->identification(), 1);
    EXPECT_TRUE(ip->checksum_valid());
    EXPECT_EQ(ip->source(), kNode1Ip);
    EXPECT_EQ(ip->destination(), kNode2Ip);
    const auto udp = wire::UdpView::parse(ip->payload());
    const std::uint16_t hash = overlay::flow_hash({0x0a00000a, 0x0a000014, 40000, 4242, 17});
    EXPECT_EQ(udp->source_port(), overlay::flow_source_port(hash));
    EXPECT_EQ(udp->destination_port(), overlay::kAndromedaUdpPort);
    EXPECT_EQ(udp->checksum(), 0);
    EXPECT_EQ(udp->length(), frame.size() + 16);
    const auto header = overlay::AndromedaHeader::decode(udp->payload());
    ASSERT_TRUE(header);
    EXPECT_EQ(header->vni, 100u);
    EXPECT_EQ(header->hop_limit, 64);
    EXPECT_EQ(header->flow_hash, hash);
    EXPECT_EQ(header->flags, 0);

    // The inner frame: destination MAC now the endpoint's real one, everything else as sent
    // (inner TTL included: the overlay is one hop, as in the reference implementation).
    Bytes expected = frame;
    kBlue20Mac.copy_to(expected.data());
    EXPECT_EQ(Bytes(outer.begin() + 50, outer.end()), expected);
    expect_valid_emissions();
    EXPECT_EQ(pipeline_.counters().forwarded, 1u);
    EXPECT_EQ(pipeline_.counters().encapsulated, 1u);
    EXPECT_EQ(pipeline_.counters().rx_tenant, 1u);
}

TEST_F(TenantPathTest, IpIdIncrementsPerPacketTowardsOneNode) {
    const Bytes frame = ipv4_frame(blue10_to("10.0.0.20"));
    for (std::uint16_t expected_id = 1; expected_id <= 3; ++expected_id) {
        ASSERT_EQ(run(kBlue10Port, frame).verdict, Verdict::forward);
        EXPECT_EQ(wire::load_be16(out_.frame(0).data() + 18), expected_id);
    }
}

TEST_F(TenantPathTest, TcpAndIcmpToRemoteEndpointAreForwarded) {
    for (const std::uint8_t protocol : {wire::ip_protocol::kTcp, wire::ip_protocol::kIcmp}) {
        const Bytes frame = ipv4_frame(blue10_to("10.0.0.20", protocol));
        ASSERT_EQ(run(kBlue10Port, frame).verdict, Verdict::forward);
        const auto decap = overlay::decapsulate(out_.view(0), {});
        ASSERT_TRUE(decap.ok());
        EXPECT_EQ(decap.packet.flow_hash, overlay::flow_hash_of_frame(frame));
        expect_valid_emissions();
    }
}

TEST_F(TenantPathTest, LocalEndpointIsDeliveredDirectlyWithMacRewrite) {
    const Bytes frame = ipv4_frame(blue10_to("10.0.0.11", wire::ip_protocol::kTcp));
    const auto r = run(kBlue10Port, frame);
    ASSERT_EQ(r.verdict, Verdict::deliver) << to_string(r.drop_reason);
    ASSERT_EQ(out_.emissions().size(), 1u);
    EXPECT_EQ(out_.emissions()[0].port, kBlue11Port);
    Bytes expected = frame;
    kBlue11Mac.copy_to(expected.data());
    kGatewayMac.copy_to(expected.data() + 6);
    EXPECT_EQ(out_.frame(0), expected);
    EXPECT_EQ(pipeline_.counters().delivered_local, 1u);
    EXPECT_EQ(pipeline_.counters().encapsulated, 0u);
}

TEST_F(TenantPathTest, EthernetPaddingIsTrimmed) {
    Bytes frame = ipv4_frame(blue10_to("10.0.0.11"));
    const std::size_t unpadded = frame.size();
    frame.resize(unpadded + 12, 0xee);
    ASSERT_EQ(run(kBlue10Port, frame).verdict, Verdict::deliver);
    EXPECT_EQ(out_.frame(0).size(), unpadded);
}

TEST_F(TenantPathTest, TwoVpcsWithTheSameCidrStayIsolated) {
    Ipv4Spec green = blue10_to("10.0.0.20");
    green.src_mac = kGreen10Mac;
    ASSERT_EQ(run(kGreen10Port, ipv4_frame(green)).verdict, Verdict::forward);
    auto decap = overlay::decapsulate(out_.view(0), {});
    ASSERT_TRUE(decap.ok());
    EXPECT_EQ(decap.packet.vni, 200u);
    EXPECT_EQ(wire::EthernetView::parse(decap.packet.inner)->destination(), kGreen20Mac);

    ASSERT_EQ(run(kBlue10Port, ipv4_frame(blue10_to("10.0.0.20"))).verdict, Verdict::forward);
    decap = overlay::decapsulate(out_.view(0), {});
    EXPECT_EQ(decap.packet.vni, 100u);
    EXPECT_EQ(wire::EthernetView::parse(decap.packet.inner)->destination(), kBlue20Mac);

    // 10.0.0.11 exists in blue only: green's tenant cannot reach it.
    Ipv4Spec green_to_11 = green;
    green_to_11.dst = ipv4("10.0.0.11");
    const auto r = run(kGreen10Port, ipv4_frame(green_to_11));
    EXPECT_EQ(r.verdict, Verdict::drop);
    EXPECT_EQ(r.drop_reason, DropReason::no_such_endpoint);
    EXPECT_TRUE(out_.emissions().empty());
    // Blue's 10.0.0.10 MAC on green's port is a spoof, even though the IP matches.
    EXPECT_EQ(run(kGreen10Port, ipv4_frame(blue10_to("10.0.0.20"))).drop_reason, DropReason::spoofed_source_mac);
}

TEST_F(TenantPathTest, VlanTaggedFrameIsCarriedWithItsTag) {
    Ipv4Spec s = blue10_to("10.0.0.20");
    s.tags = {wire::VlanTag{wire::ethertype::kVlan, 0, false, 7}};
    const Bytes frame = ipv4_frame(s);
    ASSERT_EQ(run(kBlue10Port, frame).verdict, Verdict::forward);
    const auto decap = overlay::decapsulate(out_.view(0), {});
    ASSERT_TRUE(decap.ok());
    EXPECT_EQ(wire::EthernetView::parse(decap.packet.inner)->vlan_id(), 7);
    EXPECT_EQ(decap.packet.inner.size(), frame.size());
    expect_valid_emissions();
}

TEST_F(TenantPathTest, OutsideAddressGoesToNatOnTheNatNode) {
    Ipv4Spec s = blue10_to("8.8.8.8");
    s.src_mac = kOrange10Mac;
    s.src = ipv4("192.168.50.10");
    const Bytes frame = ipv4_frame(s);
    const auto r = run(kOrange10Port, frame);
    ASSERT_EQ(r.verdict, Verdict::to_nat) << to_string(r.drop_reason);
    EXPECT_TRUE(out_.emissions().empty());
    EXPECT_EQ(r.nat.direction, dataplane::NatDirection::outbound);
    EXPECT_EQ(r.nat.vni, 400u);
    EXPECT_EQ(fabric_->vpcs()[r.nat.vpc_index].name, "orange");
    EXPECT_EQ(r.nat.frame_offset, 0u);
    EXPECT_EQ(r.nat.frame_length, frame.size());
    EXPECT_EQ(pipeline_.counters().to_nat, 1u);
}

TEST_F(TenantPathTest, OutsideAddressIsEncapsulatedTowardsARemoteNatNode) {
    Ipv4Spec s = blue10_to("8.8.8.8");
    s.src_mac = kRed10Mac;
    s.src = ipv4("172.16.0.10");
    const Bytes frame = ipv4_frame(s);
    ASSERT_EQ(run(kRed10Port, frame).verdict, Verdict::forward);
    const auto decap = overlay::decapsulate(out_.view(0), {});
    ASSERT_TRUE(decap.ok());
    EXPECT_EQ(decap.packet.outer_dst_ip, kNode2Ip);
    EXPECT_EQ(decap.packet.vni, 300u);
    // No endpoint MAC to rewrite to: the NAT node routes it by address.
    EXPECT_EQ(Bytes(decap.packet.inner.begin(), decap.packet.inner.end()), frame);
    EXPECT_EQ(pipeline_.counters().sent_to_nat_gateway, 1u);
}

struct DropCase {
    const char* name;
    PortId port;
    Bytes frame;
    DropReason reason;
};

Bytes with_byte(Bytes frame, std::size_t offset, std::uint8_t value) {
    frame[offset] = value;
    return frame;
}

std::vector<DropCase> tenant_drop_cases() {
    const Bytes good = ipv4_frame(blue10_to("10.0.0.20"));
    Ipv4Spec spoofed_mac = blue10_to("10.0.0.20");
    spoofed_mac.src_mac = mac("02:00:00:00:00:66");
    Ipv4Spec spoofed_ip = blue10_to("10.0.0.20");
    spoofed_ip.src = ipv4("10.0.0.66");
    Ipv4Spec other_mac = blue10_to("10.0.0.20");
    other_mac.dst_mac = kBlue20Mac;
    Ipv4Spec multicast = blue10_to("224.0.0.5");
    Ipv4Spec multicast_mac = blue10_to("10.0.0.20");
    multicast_mac.dst_mac = mac("01:00:5e:00:00:05");
    Ipv4Spec to_gateway_tcp = blue10_to("10.0.0.1", wire::ip_protocol::kTcp);
    Ipv4Spec no_endpoint = blue10_to("10.0.0.99");
    Ipv4Spec outside = blue10_to("8.8.8.8");
    Ipv4Spec unbound = blue10_to("10.0.0.12");
    Ipv4Spec no_next_hop = blue10_to("10.0.0.30");
    const wire::Ipv4Address me = ipv4("10.0.0.10");
    const auto arp = [&](wire::ArpPacket p) { return arp_frame(kBlue10Mac, kBroadcast, p); };
    wire::ArpPacket reply = wire::make_arp_request(kBlue10Mac, me, ipv4("10.0.0.20"));
    reply.operation = wire::arp_op::kReply;
    Bytes not_arp_body = arp(wire::make_arp_request(kBlue10Mac, me, ipv4("10.0.0.20")));
    not_arp_body[14 + 5] = 16;  // protocol address length
    Bytes ipv4_bad_version = with_byte(good, 14, 0x55);
    return {
        {"unknown port", kUnknownPort, good, DropReason::unknown_port},
        {"unbound tenant port", kUnboundPort, good, DropReason::tenant_port_unbound},
        {"runt", kBlue10Port, Bytes(good.begin(), good.begin() + 10), DropReason::malformed_ethernet},
        {"spoofed MAC", kBlue10Port, ipv4_frame(spoofed_mac), DropReason::spoofed_source_mac},
        {"spoofed IP", kBlue10Port, ipv4_frame(spoofed_ip), DropReason::spoofed_source_ip},
        {"spoofed ARP sender MAC", kBlue10Port,
         arp(wire::make_arp_request(mac("02:00:00:00:00:66"), me, ipv4("10.0.0.20"))), DropReason::spoofed_arp_sender},
        {"spoofed ARP sender IP", kBlue10Port,
         arp(wire::make_arp_request(kBlue10Mac, ipv4("10.0.0.20"), ipv4("10.0.0.11"))), DropReason::spoofed_arp_sender},
        {"ARP reply", kBlue10Port, arp(reply), DropReason::arp_not_request},
        {"ARP probe", kBlue10Port, arp(wire::make_arp_request(kBlue10Mac, wire::Ipv4Address(0), me)),
         DropReason::arp_probe},
        {"ARP for own address", kBlue10Port, arp(wire::make_arp_request(kBlue10Mac, me, me)),
         DropReason::arp_for_own_address},
        {"malformed ARP", kBlue10Port, not_arp_body, DropReason::malformed_arp},
        {"truncated ARP", kBlue10Port, Bytes(not_arp_body.begin(), not_arp_body.begin() + 30), DropReason::malformed_arp},
        {"unicast to another MAC", kBlue10Port, ipv4_frame(other_mac), DropReason::not_to_gateway_mac},
        {"multicast IP", kBlue10Port, ipv4_frame(multicast), DropReason::multicast_or_broadcast},
        {"multicast MAC", kBlue10Port, ipv4_frame(multicast_mac), DropReason::multicast_or_broadcast},
        {"unsupported ethertype", kBlue10Port, with_byte(with_byte(good, 12, 0x88), 13, 0xcc),
         DropReason::unsupported_ethertype},
        {"bad IPv4 version", kBlue10Port, ipv4_bad_version, DropReason::malformed_ipv4},
        {"IPv4 truncated", kBlue10Port, Bytes(good.begin(), good.end() - 1), DropReason::malformed_ipv4},
        {"bad IPv4 checksum", kBlue10Port, with_byte(good, 14 + 8, 63), DropReason::bad_ipv4_checksum},
        {"TCP to the gateway", kBlue10Port, ipv4_frame(to_gateway_tcp), DropReason::gateway_unsupported},
        {"no such endpoint", kBlue10Port, ipv4_frame(no_endpoint), DropReason::no_such_endpoint},
        {"outside, no NAT", kBlue10Port, ipv4_frame(outside), DropReason::no_route},
        {"local endpoint without port", kBlue10Port, ipv4_frame(unbound), DropReason::endpoint_port_unbound},
        {"peer without next hop", kBlue10Port, ipv4_frame(no_next_hop), DropReason::no_next_hop},
    };
}

TEST_F(TenantPathTest, EveryTenantDropHasItsReasonAndCounter) {
    for (const DropCase& c : tenant_drop_cases()) {
        SCOPED_TRACE(c.name);
        const std::uint64_t before = drops(c.reason);
        const auto r = run(c.port, c.frame);
        EXPECT_EQ(r.verdict, Verdict::drop);
        EXPECT_EQ(r.drop_reason, c.reason) << to_string(r.drop_reason);
        EXPECT_EQ(r.emissions, 0);
        EXPECT_TRUE(out_.emissions().empty());
        EXPECT_EQ(drops(c.reason), before + 1);
    }
    const auto& counters = pipeline_.counters();
    EXPECT_EQ(counters.dropped, tenant_drop_cases().size());
    EXPECT_EQ(dataplane::total_drops(counters.drops), counters.dropped);
}

// A VPC in 224.0.0.0/24 (the loader accepts it) with a remote endpoint at 224.0.0.20: the general
// path drops traffic to it as multicast before any route lookup, and the express lanes, which do not
// test the destination themselves, must not encapsulate it either (FabricState gives such an
// endpoint no express-lane template).
TEST(TenantPathConfigTest, EndpointsAtMulticastAddressesAreDroppedByTheExpressLanesToo) {
    const std::string odd_vpc = R"(
[[vpc]]
name = "odd"
vni = 4242
cidr = "224.0.0.0/24"
gateway = "224.0.0.1"
gateway_mac = "02:00:00:00:00:ff"
[[vpc.endpoint]]
ip = "224.0.0.10"
mac = "02:00:00:00:30:10"
node = "node1"
port = "tap-odd-10"
[[vpc.endpoint]]
ip = "224.0.0.20"
mac = "02:00:00:00:30:20"
node = "node2"
)";
    auto fabric = load_fabric(fabric_text("node1") + odd_vpc);
    ASSERT_TRUE(fabric);
    constexpr PortId kOddPort = 777;
    auto config = node_config("node1");
    config.ports.push_back({kOddPort, dataplane::PortRole::tenant, "tap-odd-10"});
    Ipv4Spec spec;
    spec.src_mac = mac("02:00:00:00:30:10");
    spec.dst_mac = kGatewayMac;
    spec.src = ipv4("224.0.0.10");
    spec.dst = ipv4("224.0.0.20");
    const Bytes frame = ipv4_frame(spec);
    for (const bool express : {true, false}) {
        SCOPED_TRACE(express ? "express lanes on" : "general path only");
        config.express_lanes = express;
        dataplane::Pipeline pipeline(config);
        SinkStorage out;
        const auto copied = pipeline.process(kOddPort, frame, *fabric, out.fresh());
        EXPECT_EQ(copied.drop_reason, DropReason::multicast_or_broadcast) << to_string(copied.drop_reason);
        ChunkFrame chunk(frame);
        const auto in_place = pipeline.process_in_place(kOddPort, chunk.buffer, *fabric, out.fresh());
        EXPECT_EQ(in_place.drop_reason, DropReason::multicast_or_broadcast) << to_string(in_place.drop_reason);
        EXPECT_EQ(pipeline.counters().encapsulated, 0u);
    }
}

TEST(TenantPathConfigTest, NoUnderlayPortOrAddressIsNamed) {
    auto fabric = load_fabric(fabric_text("node1"));
    auto config = node_config("node1");
    config.ports.erase(config.ports.begin());  // the underlay port
    dataplane::Pipeline no_port(config);
    SinkStorage out;
    EXPECT_EQ(no_port.process(kBlue10Port, ipv4_frame(blue10_to("10.0.0.20")), *fabric, out.fresh()).drop_reason,
              DropReason::no_underlay_port);

    std::string text = fabric_text("node1");
    // Neither [node] nor [[nodes]] gives node1 an address.
    for (const std::string cut : {"[[nodes]]\nname = \"node1\"\naddress = \"192.168.1.1\"\n",
                                  "address = \"192.168.1.1\"\n"})
        text.erase(text.find(cut), cut.size());
    auto addressless = load_fabric(text);
    ASSERT_TRUE(addressless);
    dataplane::Pipeline no_address(node_config("node1"));
    EXPECT_EQ(no_address.process(kBlue10Port, ipv4_frame(blue10_to("10.0.0.20")), *addressless, out.fresh()).drop_reason,
              DropReason::no_underlay_address);
}

TEST(TenantPathVxlanTest, VxlanEncapsulationUsesItsPortAndHeader) {
    auto fabric = load_fabric(fabric_text("node1", "encap = \"vxlan\"\nvxlan_port = 8472\n"));
    dataplane::Pipeline pipeline(node_config("node1"));
    SinkStorage out;
    const Bytes frame = ipv4_frame(blue10_to("10.0.0.20"));
    ASSERT_EQ(pipeline.process(kBlue10Port, frame, *fabric, out.fresh()).verdict, Verdict::forward);
    const Bytes outer = out.frame(0);
    EXPECT_EQ(wire::load_be16(outer.data() + 36), 8472);
    EXPECT_EQ(outer[42], 0x08);  // VXLAN I flag
    EXPECT_EQ(wire::load_be24(outer.data() + 46), 100u);
    const auto decap = overlay::decapsulate(outer, {overlay::EncapKind::vxlan, 8472});
    ASSERT_TRUE(decap.ok()) << to_string(decap.error);
    EXPECT_EQ(decap.packet.inner.size(), frame.size());
    EXPECT_EQ(frame_problems(outer, {true, overlay::kAndromedaUdpPort, 8472}), std::vector<std::string>{});
}

}  // namespace
}  // namespace andromeda::testing
