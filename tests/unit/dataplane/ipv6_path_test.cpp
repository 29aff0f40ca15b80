// IPv6 through the pipeline (issue 30, docs/ipv6.md): in a dual-stack VPC the gateway answers
// Neighbor and Router Solicitations and pings of its addresses, and packets between endpoints are
// delivered locally or carried over the overlay, checked at both ends; an IPv4-only VPC still
// drops IPv6. The tenants' frames are built byte by byte (tests/support), the gateway's answers
// read back with the wire library's validators (the builders' golden tests are the gateway's own).
#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <string>

#include "overlay/flow_hash.hpp"
#include "overlay/outer_template.hpp"
#include "support/icmpv6_frame_builder.hpp"
#include "unit/dataplane/pipeline_fixture.hpp"
#include "wire/ipv6_addressing.hpp"
#include "wire/ndp.hpp"

namespace andromeda::testing {
namespace {

namespace ts = test_support;
using dataplane::DropReason;
using dataplane::Verdict;

const wire::Ipv6Address kBlue10 = ipv6("fd00:0:0:1:0:ff:fe00:10");
const wire::Ipv6Address kBlue10LinkLocal = ipv6("fe80::ff:fe00:10");
const wire::Ipv6Address kBlue11 = ipv6("fd00:0:0:1::11");
const wire::Ipv6Address kBlue20 = ipv6("fd00:0:0:1:0:ff:fe00:20");
const wire::Ipv6Address kGreen10 = ipv6("fd00:0:0:1:0:ff:fec8:a");
const wire::Ipv6Address kGreen20 = ipv6("fd00:0:0:1:0:ff:fec8:14");
const wire::Ipv6Address kGatewayLinkLocal = ipv6("fe80::ff:fe00:ff");  // of 02:00:00:00:00:ff

ts::Mac raw(const wire::MacAddress& m) { return m.bytes(); }
ts::Ipv6Address raw(const wire::Ipv6Address& a) { return a.bytes(); }

// A Neighbor Solicitation for `target` from `source` (:: for DAD), to its solicited-node group.
Bytes neighbor_solicitation(const wire::Ipv6Address& source, const wire::Ipv6Address& target,
                            const wire::MacAddress& from = kBlue10Mac) {
    ts::Icmpv6Frame s;
    s.src_mac = raw(from);
    s.dst = ts::solicited_node(raw(target));
    s.dst_mac = ts::multicast_mac(s.dst);
    s.src = raw(source);
    s.type = ts::icmpv6::kNeighborSolicitation;
    s.body = wire::is_unspecified(source) ? ts::ns_body(raw(target))
                                          : ts::ns_body(raw(target), ts::link_layer_option(1, raw(from)));
    return ts::icmpv6_frame(s);
}

Bytes router_solicitation(const wire::Ipv6Address& source = kBlue10LinkLocal) {
    ts::Icmpv6Frame s;
    s.src_mac = raw(kBlue10Mac);
    s.dst = ts::ipv6("ff02::2");
    s.dst_mac = ts::multicast_mac(s.dst);
    s.src = raw(source);
    s.type = ts::icmpv6::kRouterSolicitation;
    s.body = ts::rs_body(ts::link_layer_option(1, raw(kBlue10Mac)));
    return ts::icmpv6_frame(s);
}

Bytes echo_request(const wire::Ipv6Address& source, const wire::Ipv6Address& destination) {
    ts::Icmpv6Frame s;
    s.src_mac = raw(kBlue10Mac);
    s.dst_mac = raw(kGatewayMac);
    s.src = raw(source);
    s.dst = raw(destination);
    s.hop_limit = 64;
    s.type = ts::icmpv6::kEchoRequest;
    s.body = {0x12, 0x34, 0x00, 0x01, 'p', 'i', 'n', 'g'};
    return ts::icmpv6_frame(s);
}

// `inner` as node2 would send it to node1 over VXLAN (VNI 100).
Bytes vxlan_from_node2(const Bytes& inner) {
    return overlay_packet(inner, 100, kNode2Ip, kNode1Ip, 64, 0, overlay::EncapKind::vxlan);
}

std::optional<wire::Ipv6View> ipv6_of(wire::ByteSpan frame) {
    const auto ethernet = wire::EthernetView::parse(frame);
    if (!ethernet || ethernet->ethertype() != wire::ethertype::kIpv6) return std::nullopt;
    const auto ip = wire::Ipv6View::parse(ethernet->payload());
    if (!ip) return std::nullopt;
    return *ip;
}

class Ipv6PathTest : public PipelineTest {
protected:
    Ipv6PathTest() { fabric_ = load_fabric(dual_stack_fabric("node1")); }

    // Runs `frame` from `port` and returns emission 0, expecting exactly one with `verdict`.
    Bytes one(PortId port, const Bytes& frame, Verdict verdict) {
        const dataplane::FrameResult r = run(port, frame);
        EXPECT_EQ(r.verdict, verdict) << to_string(r.drop_reason);
        EXPECT_EQ(r.emissions, 1);
        return r.emissions == 1 ? out_.frame(0) : Bytes{};
    }
};

TEST_F(Ipv6PathTest, NeighborSolicitationsForTheVpcAreAnsweredWithTheGatewayMac) {
    for (const wire::Ipv6Address& target : {kBlue20, kBlue11, kGatewayLinkLocal, ipv6("fd00:0:0:1::99")}) {
        const Bytes reply = one(kBlue10Port, neighbor_solicitation(kBlue10LinkLocal, target), Verdict::reply);
        ASSERT_FALSE(reply.empty()) << target.to_string();
        EXPECT_EQ(out_.emissions()[0].port, kBlue10Port);
        const auto ip = ipv6_of(reply);
        ASSERT_TRUE(ip);
        EXPECT_EQ(ip->destination(), kBlue10LinkLocal);
        EXPECT_EQ(ip->hop_limit(), 255);
        const auto na = wire::validate_neighbor_advertisement(*ip);
        ASSERT_TRUE(na) << target.to_string();
        EXPECT_EQ(na->target(), target);
        EXPECT_TRUE(na->router());
        EXPECT_TRUE(na->solicited());
        EXPECT_EQ(na->options().target_link_layer_address(), kGatewayMac);
        EXPECT_EQ(wire::EthernetView::parse(reply)->source(), kGatewayMac);
    }
    EXPECT_EQ(pipeline_.counters().neighbor_advertisements, 4u);
}

TEST_F(Ipv6PathTest, NeighborSolicitationsTheProxyMustNotAnswerAreDroppedAndCounted) {
    // Duplicate address detection for the asker's own address, another endpoint's, or outside.
    EXPECT_EQ(run(kBlue10Port, neighbor_solicitation(ipv6("::"), kBlue10)).drop_reason, DropReason::nd_not_answered);
    EXPECT_EQ(run(kBlue10Port, neighbor_solicitation(ipv6("::"), kBlue20)).drop_reason, DropReason::nd_not_answered);
    EXPECT_EQ(run(kBlue10Port, neighbor_solicitation(kBlue10, ipv6("2001:db8::1"))).drop_reason,
              DropReason::nd_not_answered);
    // From an address that is not the port's (another endpoint's, a made-up link-local).
    EXPECT_EQ(run(kBlue10Port, neighbor_solicitation(kBlue11, kBlue20)).drop_reason, DropReason::spoofed_source_ip);
    EXPECT_EQ(run(kBlue10Port, neighbor_solicitation(ipv6("fe80::1"), kBlue20)).drop_reason,
              DropReason::spoofed_source_ip);
    // A hop limit other than 255 (forwarded from off-link) breaks RFC 4861 7.1.1.
    Bytes routed = neighbor_solicitation(kBlue10LinkLocal, kBlue20);
    routed[14 + 7] = 254;
    EXPECT_EQ(run(kBlue10Port, routed).drop_reason, DropReason::malformed_ndp);
    EXPECT_EQ(drops(DropReason::nd_not_answered), 3u);
    EXPECT_EQ(pipeline_.counters().neighbor_advertisements, 0u);
}

TEST_F(Ipv6PathTest, ARouterSolicitationGetsTheVpcsPrefixRouterAndMtuOncePerThreeSeconds) {
    const Bytes reply = one(kBlue10Port, router_solicitation(), Verdict::reply);
    const auto ip = ipv6_of(reply);
    ASSERT_TRUE(ip);
    EXPECT_EQ(ip->source(), kGatewayLinkLocal);
    EXPECT_EQ(ip->destination(), kBlue10LinkLocal);
    const auto ra = wire::validate_router_advertisement(*ip);
    ASSERT_TRUE(ra);
    EXPECT_GT(ra->router_lifetime(), 0);
    EXPECT_EQ(ra->options().source_link_layer_address(), kGatewayMac);
    EXPECT_EQ(ra->options().mtu(), 1450u);  // the VPC's inner MTU (underlay 1500 - 50)
    const auto prefix_option = ra->options().find(3);
    ASSERT_TRUE(prefix_option);
    const auto prefix = wire::decode_prefix_information(*prefix_option);
    ASSERT_TRUE(prefix);
    EXPECT_EQ(prefix->prefix, ipv6("fd00:0:0:1::"));
    EXPECT_EQ(prefix->prefix_length, 64);
    EXPECT_TRUE(prefix->autonomous);
    EXPECT_TRUE(prefix->on_link);
    // At once again: within 3 s of the last advertisement, the next scheduled one answers.
    EXPECT_EQ(run(kBlue10Port, router_solicitation()).drop_reason, DropReason::router_solicitation_deferred);
    EXPECT_EQ(pipeline_.counters().router_advertisements, 1u);
    // An IPv4-only VPC's tenant gets no advertisement: its VPC has no IPv6.
    Bytes red = router_solicitation(wire::link_local_address(kRed10Mac));
    std::copy(kRed10Mac.bytes().begin(), kRed10Mac.bytes().end(), red.begin() + 6);
    EXPECT_EQ(run(kRed10Port, red).drop_reason, DropReason::multicast_or_broadcast);
}

TEST_F(Ipv6PathTest, TheGatewayAnswersPingsOfItsLinkLocalAddressAndNothingElseToIt) {
    for (const bool in_place : {false, true}) {
        const Bytes request = echo_request(kBlue10, kGatewayLinkLocal);
        ChunkFrame chunk(request);
        const dataplane::FrameResult r = in_place ? run_in_place(kBlue10Port, chunk) : run(kBlue10Port, request);
        ASSERT_EQ(r.verdict, Verdict::reply) << to_string(r.drop_reason);
        const auto ip = ipv6_of(out_.view(0));
        ASSERT_TRUE(ip);
        EXPECT_EQ(ip->source(), kGatewayLinkLocal);
        EXPECT_EQ(ip->destination(), kBlue10);
        const wire::ByteSpan message = ip->upper_layer_payload();
        EXPECT_EQ(message[0], 129);  // echo reply
        EXPECT_TRUE(wire::checksum_verifies(message, ip->pseudo_header_sum()));
    }
    EXPECT_EQ(pipeline_.counters().echo_replies, 2u);
    EXPECT_EQ(run(kBlue10Port, ipv6_udp_frame(kBlue10Mac, kGatewayMac, kBlue10, kGatewayLinkLocal, 10)).drop_reason,
              DropReason::gateway_unsupported);
}

TEST_F(Ipv6PathTest, PacketsToAnotherHostsEndpointAreEncapsulatedWithTheFramesFlowHash) {
    const Bytes frame = ipv6_udp_frame(kBlue10Mac, kGatewayMac, kBlue10, kBlue20, 200);
    const Bytes outer = one(kBlue10Port, frame, Verdict::forward);
    ASSERT_EQ(outer.size(), frame.size() + 50);
    EXPECT_EQ(out_.emissions()[0].port, kUnderlayPort);
    const auto decap = overlay::decapsulate(outer, {});
    ASSERT_TRUE(decap.ok());
    EXPECT_EQ(decap.packet.vni, 100u);
    EXPECT_EQ(decap.packet.outer_dst_ip, kNode2Ip);
    const Bytes inner(decap.packet.inner.begin(), decap.packet.inner.end());
    EXPECT_EQ(wire::EthernetView::parse(inner)->destination(), kBlue20Mac);  // the endpoint's real MAC
    EXPECT_EQ(Bytes(inner.begin() + 12, inner.end()), Bytes(frame.begin() + 12, frame.end()));
    EXPECT_EQ(decap.packet.flow_hash, overlay::flow_hash_of_frame(frame));
    EXPECT_NE(decap.packet.flow_hash, 0);
}

TEST_F(Ipv6PathTest, PacketsToAnEndpointOfThisHostAreDeliveredIntoItsPort) {
    const Bytes frame = ipv6_udp_frame(kBlue10Mac, kGatewayMac, kBlue10, kBlue11, 100);
    const Bytes delivered = one(kBlue10Port, frame, Verdict::deliver);
    EXPECT_EQ(out_.emissions()[0].port, kBlue11Port);
    EXPECT_EQ(wire::EthernetView::parse(delivered)->destination(), kBlue11Mac);
    EXPECT_EQ(wire::EthernetView::parse(delivered)->source(), kGatewayMac);
    EXPECT_EQ(Bytes(delivered.begin() + 12, delivered.end()), Bytes(frame.begin() + 12, frame.end()));
}

TEST_F(Ipv6PathTest, WhatIsNotAnEndpointOfTheVpcOrNotTheSendersIsDroppedWithItsReason) {
    auto from_blue10 = [&](const wire::Ipv6Address& src, const wire::Ipv6Address& dst) {
        return run(kBlue10Port, ipv6_udp_frame(kBlue10Mac, kGatewayMac, src, dst, 10)).drop_reason;
    };
    EXPECT_EQ(from_blue10(kBlue10, ipv6("fd00:0:0:1::99")), DropReason::no_such_endpoint);
    EXPECT_EQ(from_blue10(kBlue10, ipv6("2001:db8::1")), DropReason::ipv6_not_routed);  // no IPv6 NAT
    EXPECT_EQ(from_blue10(kBlue10LinkLocal, kBlue20), DropReason::ipv6_not_routed);     // link-local is the link's
    EXPECT_EQ(from_blue10(kBlue10, ipv6("fe80::ff:fe00:20")), DropReason::ipv6_not_routed);
    EXPECT_EQ(from_blue10(kBlue11, kBlue20), DropReason::spoofed_source_ip);
    EXPECT_EQ(from_blue10(ipv6("fd00:0:0:1::10"), kBlue20), DropReason::spoofed_source_ip);
    EXPECT_EQ(from_blue10(kBlue10, ipv6("ff02::1")), DropReason::multicast_or_broadcast);
    // A tenant is no router, and MLD has no multicast to join here.
    ts::Icmpv6Frame ra;
    ra.src_mac = raw(kBlue10Mac);
    ra.dst = ts::ipv6("ff02::1");
    ra.dst_mac = ts::multicast_mac(ra.dst);
    ra.src = raw(kBlue10LinkLocal);
    ra.type = ts::icmpv6::kRouterAdvertisement;
    ra.body = Bytes(12, 0);
    EXPECT_EQ(run(kBlue10Port, ts::icmpv6_frame(ra)).drop_reason, DropReason::tenant_router_message);
    ra.type = 143;  // MLDv2 report
    ra.dst = ts::ipv6("ff02::16");
    ra.dst_mac = ts::multicast_mac(ra.dst);
    ra.hop_limit = 1;
    EXPECT_EQ(run(kBlue10Port, ts::icmpv6_frame(ra)).drop_reason, DropReason::mld_ignored);
}

TEST_F(Ipv6PathTest, APacketTooBigForTheOverlayGetsPacketTooBigAndIsNeverFragmented) {
    // The VPC MTU is the overlay's here, so the tenant's own stack would stop it first: a frame
    // one byte over is what a tenant ignoring the RA's MTU sends.
    const Bytes big = ipv6_udp_frame(kBlue10Mac, kGatewayMac, kBlue10, kBlue20, 1450 - 48 + 1);
    const Bytes reply = one(kBlue10Port, big, Verdict::reply);
    const auto ip = ipv6_of(reply);
    ASSERT_TRUE(ip);
    EXPECT_EQ(ip->destination(), kBlue10);
    const wire::ByteSpan message = ip->upper_layer_payload();
    EXPECT_EQ(message[0], 2);  // Packet Too Big
    EXPECT_EQ(wire::load_be32(message.data() + 4), 1450u);
    EXPECT_EQ(pipeline_.counters().packet_too_big_sent, 1u);
    EXPECT_EQ(pipeline_.counters().packets_fragmented, 0u);
}

TEST_F(Ipv6PathTest, AnIpv4OnlyVpcStillDropsIpv6) {
    const Bytes frame = ipv6_udp_frame(kRed10Mac, kGatewayMac, ipv6("fd00::10"), ipv6("fd00::20"), 10);
    Bytes red = frame;
    EXPECT_EQ(run(kRed10Port, red).drop_reason, DropReason::ipv6_not_routed);
}

// node1's overlay packet arriving at node2: delivered into the endpoint's port with the gateway
// MAC as source; another node speaking for an endpoint that is not its own is refused; the same
// addresses in green reach green's endpoint only.
TEST(Ipv6Underlay, OverlayPacketsAreDeliveredOnlyFromTheSendersEndpointsAndWithinTheirVni) {
    const auto node1_fabric = load_fabric(dual_stack_fabric("node1"));
    const auto node2_fabric = load_fabric(dual_stack_fabric("node2"));
    dataplane::Pipeline node1(node_config("node1"));
    dataplane::Pipeline node2(node_config("node2"));
    SinkStorage out1, out2;
    auto across = [&](PortId port, const Bytes& frame) {
        const auto sent = node1.process(port, frame, *node1_fabric, out1.fresh());
        EXPECT_EQ(sent.verdict, Verdict::forward) << to_string(sent.drop_reason);
        return sent.verdict == Verdict::forward ? out1.frame(0) : Bytes{};
    };
    const Bytes blue = across(kBlue10Port, ipv6_udp_frame(kBlue10Mac, kGatewayMac, kBlue10, kBlue20, 300));
    auto r = node2.process(kUnderlayPort, blue, *node2_fabric, out2.fresh());
    ASSERT_EQ(r.verdict, Verdict::deliver) << to_string(r.drop_reason);
    EXPECT_EQ(out2.emissions()[0].port, kBlue20Port);
    const Bytes delivered = out2.frame(0);
    EXPECT_EQ(wire::EthernetView::parse(delivered)->destination(), kBlue20Mac);
    EXPECT_EQ(wire::EthernetView::parse(delivered)->source(), kGatewayMac);
    EXPECT_EQ(ipv6_of(delivered)->destination(), kBlue20);

    const Bytes green = across(kGreen10Port, ipv6_udp_frame(kGreen10Mac, kGatewayMac, kGreen10, kGreen20, 300));
    r = node2.process(kUnderlayPort, green, *node2_fabric, out2.fresh());
    ASSERT_EQ(r.verdict, Verdict::deliver) << to_string(r.drop_reason);
    EXPECT_EQ(out2.emissions()[0].port, kGreen10Port);  // node2's green tenant, not blue's

    // node1 claiming node2's own endpoint as the source: built by hand, as no pipeline sends it.
    Bytes spoofed = blue;
    const std::size_t inner_ip = 50 + 14;
    std::copy(kBlue20.bytes().begin(), kBlue20.bytes().end(), spoofed.begin() + inner_ip + 8);
    r = node2.process(kUnderlayPort, spoofed, *node2_fabric, out2.fresh());
    EXPECT_EQ(r.drop_reason, DropReason::fabric_spoofed_source);
}

// A kernel VXLAN peer's tenant (blue .20 behind node2's bridge) solicits blue .10's address: node1
// answers as .10 would, with .10's MAC, back over VXLAN to node2. DAD, a spoofed asker and a target
// elsewhere are not answered.
TEST(Ipv6Underlay, ASolicitationFromAVxlanPeersTenantIsAnsweredForTheLocalEndpoint) {
    const auto fabric = load_fabric(dual_stack_vxlan_fabric("node1"));
    dataplane::Pipeline node1(node_config("node1"));
    SinkStorage out;
    auto r = node1.process(kUnderlayPort, vxlan_from_node2(neighbor_solicitation(kBlue20, kBlue10, kBlue20Mac)), *fabric,
                           out.fresh());
    ASSERT_EQ(r.verdict, Verdict::forward) << to_string(r.drop_reason);
    ASSERT_EQ(out.emissions().size(), 1u);
    EXPECT_EQ(out.emissions()[0].port, kUnderlayPort);
    const Bytes sent = out.frame(0);
    EXPECT_EQ(frame_problems(sent), std::vector<std::string>{});
    expect_vxlan_from_node1_to_node2(sent, 100);
    const wire::ByteSpan inner = wire::ByteSpan(sent).subspan(50);
    EXPECT_EQ(wire::EthernetView::parse(inner)->source(), kBlue10Mac);
    EXPECT_EQ(wire::EthernetView::parse(inner)->destination(), kBlue20Mac);
    const auto ip = ipv6_of(inner);
    ASSERT_TRUE(ip);
    EXPECT_EQ(ip->source(), kBlue10);
    EXPECT_EQ(ip->destination(), kBlue20);
    EXPECT_EQ(ip->hop_limit(), 255);
    const auto na = wire::validate_neighbor_advertisement(*ip);  // checksum, hop limit, options
    ASSERT_TRUE(na);
    EXPECT_EQ(na->target(), kBlue10);
    EXPECT_FALSE(na->router());
    EXPECT_TRUE(na->solicited());
    EXPECT_TRUE(na->override_flag());
    EXPECT_EQ(na->options().target_link_layer_address(), kBlue10Mac);
    EXPECT_EQ(node1.counters().overlay_neighbor_advertisements, 1u);

    const auto drop = [&](const Bytes& inner_frame) {
        return node1.process(kUnderlayPort, vxlan_from_node2(inner_frame), *fabric, out.fresh()).drop_reason;
    };
    EXPECT_EQ(drop(neighbor_solicitation(ipv6("::"), kBlue10, kBlue20Mac)), DropReason::nd_not_answered);
    EXPECT_EQ(drop(neighbor_solicitation(kBlue20, kBlue20, kBlue20Mac)), DropReason::nd_not_answered);
    EXPECT_EQ(drop(neighbor_solicitation(kBlue10, kBlue11, kBlue10Mac)), DropReason::fabric_spoofed_source);
    EXPECT_EQ(drop(neighbor_solicitation(kBlue20, kBlue11, kBlue10Mac)), DropReason::fabric_spoofed_source);
    EXPECT_EQ(drop(neighbor_solicitation(kBlue20, ipv6("fd00:0:0:1::99"), kBlue20Mac)),
              DropReason::overlay_resolution_not_ours);
    Bytes forwarded = neighbor_solicitation(kBlue20, kBlue10, kBlue20Mac);
    forwarded[14 + 7] = 254;  // not from on-link
    EXPECT_EQ(drop(forwarded), DropReason::malformed_ndp);
    EXPECT_EQ(node1.counters().overlay_neighbor_advertisements, 1u);
    // With Andromeda's own encapsulation no peer is a bridge: the solicitation is no endpoint's.
    const auto andromeda_fabric = load_fabric(dual_stack_fabric("node1"));
    const Bytes packet = overlay_packet(neighbor_solicitation(kBlue20, kBlue10, kBlue20Mac), 100);
    EXPECT_NE(node1.process(kUnderlayPort, packet, *andromeda_fabric, out.fresh()).verdict, Verdict::forward);
}

// With ipv6_gateway and dns6: the gateway's global address is answered like its link-local one,
// and the RA names the VPC's DNS servers (RDNSS, RFC 8106).
TEST(Ipv6GlobalGateway, TheGlobalAddressIsAnsweredAndTheRaCarriesTheDnsServers) {
    std::string text = dual_stack_fabric("node1");
    const std::string prefix = "ipv6_prefix = \"fd00:0:0:1::/64\"";
    text.replace(text.find(prefix), prefix.size(),
                 prefix + "\nipv6_gateway = \"fd00:0:0:1::1\"\ndns6 = [\"fd00:0:0:1::53\"]");
    const auto fabric = load_fabric(text);
    ASSERT_TRUE(fabric);
    const wire::Ipv6Address global = ipv6("fd00:0:0:1::1");
    dataplane::Pipeline pipeline(node_config("node1"));
    SinkStorage out;

    auto r = pipeline.process(kBlue10Port, router_solicitation(), *fabric, out.fresh());
    ASSERT_EQ(r.verdict, Verdict::reply) << to_string(r.drop_reason);
    const auto ra_ip = ipv6_of(out.view(0));
    ASSERT_TRUE(ra_ip);
    const auto ra = wire::validate_router_advertisement(*ra_ip);
    ASSERT_TRUE(ra);
    const auto rdnss_option = ra->options().find(25);
    ASSERT_TRUE(rdnss_option);
    const auto rdnss = wire::RdnssView::parse(*rdnss_option);
    ASSERT_TRUE(rdnss);
    ASSERT_EQ(rdnss->address_count(), 1u);
    EXPECT_EQ(rdnss->address(0), ipv6("fd00:0:0:1::53"));

    r = pipeline.process(kBlue10Port, neighbor_solicitation(kBlue10, global), *fabric, out.fresh());
    ASSERT_EQ(r.verdict, Verdict::reply) << to_string(r.drop_reason);
    const auto na_ip = ipv6_of(out.view(0));
    ASSERT_TRUE(na_ip);
    const auto na = wire::validate_neighbor_advertisement(*na_ip);
    ASSERT_TRUE(na);
    EXPECT_EQ(na->target(), global);
    EXPECT_TRUE(na->override_flag());  // the gateway's own address
    EXPECT_EQ(na_ip->source(), global);

    r = pipeline.process(kBlue10Port, echo_request(kBlue10, global), *fabric, out.fresh());
    ASSERT_EQ(r.verdict, Verdict::reply) << to_string(r.drop_reason);
    EXPECT_EQ(ipv6_of(out.view(0))->source(), global);
}

// The per-port schedules the workers and the daemon share: the first advertisement at once, none
// again before its time; a reload that changes the VPC's RA settings starts the port's schedule
// again (an advertisement with the new settings at once); ports that left are forgotten.
TEST(RouterAdvertisementSchedules, APortsScheduleFollowsItsVpcsSettingsAndForgetsPortsThatLeft) {
    gateway::Ipv6GatewayConfig config;
    config.mac = kGatewayMac;
    config.prefix = *wire::Ipv6Prefix::parse("fd00:0:0:1::/64");
    config.mtu = 1450;
    const gateway::Ipv6Gateway before(config);
    config.router_advertisements.max_interval_s = 30;
    const gateway::Ipv6Gateway after(config);
    dataplane::GatewayRouterAdvertisements schedules;
    std::array<std::uint8_t, gateway::kMaxRouterAdvertisementFrame> frame{};
    constexpr std::uint64_t kSecond = 1'000'000'000;
    EXPECT_GT(schedules.advertise_if_due(kBlue10Port, before, 10 * kSecond, frame), 0u);
    EXPECT_EQ(schedules.advertise_if_due(kBlue10Port, before, 11 * kSecond, frame), 0u);  // under 3 s since
    EXPECT_GT(schedules.advertise_if_due(kBlue11Port, before, 11 * kSecond, frame), 0u);  // its own schedule
    EXPECT_GT(schedules.advertise_if_due(kBlue10Port, after, 11 * kSecond, frame), 0u);   // new settings
    EXPECT_EQ(schedules.advertise_if_due(kBlue10Port, after, 12 * kSecond, frame), 0u);
    EXPECT_EQ(schedules.ports(), 2u);
    schedules.retain([](PortId port) { return port == kBlue11Port; });
    EXPECT_EQ(schedules.ports(), 1u);
    EXPECT_GT(schedules.advertise_if_due(kBlue10Port, after, 12 * kSecond, frame), 0u);  // forgotten: anew
}

// Writes tests/fuzz/corpus/pipeline/ipv6-*: the frames of these tests as pipeline_fuzz seeds
// (its fabric 0 is dual_stack_fabric("node1")). Run by hand with --gtest_also_run_disabled_tests.
TEST(Ipv6PathSeeds, DISABLED_WriteIpv6FuzzSeeds) {
    const std::filesystem::path dir = std::filesystem::path(ANDROMEDA_SOURCE_DIR) / "tests/fuzz/corpus/pipeline";
    std::filesystem::create_directories(dir);
    auto write = [&](const std::string& name, std::uint8_t port_index, const Bytes& frame) {
        Bytes seed{port_index};
        seed.insert(seed.end(), frame.begin(), frame.end());
        std::ofstream(dir / ("ipv6-" + name), std::ios::binary)
            .write(reinterpret_cast<const char*>(seed.data()), static_cast<std::streamsize>(seed.size()));
    };
    // pipeline_fuzz's kPorts: 0 is blue .10's port, 6 the underlay.
    write("ns", 0, neighbor_solicitation(kBlue10LinkLocal, kBlue20));
    write("dad", 0, neighbor_solicitation(ipv6("::"), kBlue10));
    write("rs", 0, router_solicitation());
    write("echo", 0, echo_request(kBlue10, kGatewayLinkLocal));
    write("remote", 0, ipv6_udp_frame(kBlue10Mac, kGatewayMac, kBlue10, kBlue20, 64));
    write("local", 0, ipv6_udp_frame(kBlue10Mac, kGatewayMac, kBlue10, kBlue11, 64));
    write("too-big", 0, ipv6_udp_frame(kBlue10Mac, kGatewayMac, kBlue10, kBlue20, 1450));
    // An overlay packet from node2's blue .20 to .10, as node2's pipeline sends it.
    const auto node2_fabric = load_fabric(dual_stack_fabric("node2"));
    dataplane::Pipeline node2(node_config("node2"));
    SinkStorage out;
    const auto r = node2.process(kBlue20Port, ipv6_udp_frame(kBlue20Mac, kGatewayMac, kBlue20, kBlue10, 64),
                                 *node2_fabric, out.fresh());
    ASSERT_EQ(r.verdict, Verdict::forward) << to_string(r.drop_reason);
    write("overlay", 6, out.frame(0));
    // On the VXLAN fabric (a sequence: 0xff switches to it), a kernel VXLAN peer's tenant's ARP
    // request and Neighbor Solicitation for blue .10, flooded to node1.
    const auto on_vxlan = [&](const std::string& name, const Bytes& inner) {
        const Bytes packet = vxlan_from_node2(inner);
        Bytes seed{0x80, 0xff, 6, static_cast<std::uint8_t>(packet.size() >> 8), static_cast<std::uint8_t>(packet.size())};
        seed.insert(seed.end(), packet.begin(), packet.end());
        std::ofstream(dir / ("vxlan-" + name), std::ios::binary)
            .write(reinterpret_cast<const char*>(seed.data()), static_cast<std::streamsize>(seed.size()));
    };
    on_vxlan("arp", arp_request(kBlue20Mac, ipv4("10.0.0.20"), ipv4("10.0.0.10")));
    on_vxlan("ns", neighbor_solicitation(kBlue20, kBlue10, kBlue20Mac));
}

}  // namespace
}  // namespace andromeda::testing
