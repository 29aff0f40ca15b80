// An IPv6 underlay on the pipeline's path (docs/wire-format.md, "IPv6 underlay"), for both
// encapsulations: node1 at fd00:1::1 sends its tenants' IPv4 and IPv6 frames as outer IPv6 packets
// (70 outer bytes, the UDP checksum always there), checked byte by byte against values computed
// here, and the same bytes with the express lanes on (they stay off over IPv6) as with them off;
// it takes the peer's outer IPv6 packets and refuses strangers, other destinations, the other
// family and a zero checksum; next hops are found by the peer's IPv6 address. The MTU and the other
// paths that encapsulate are in ipv6_underlay_paths_test.cpp.
//
// Encapsulation runs in place (the daemon's way), and by copy in the tests at the end, which
// caught the copy variant checksumming the inner frame before it rewrote the destination MAC.
#include <gtest/gtest.h>

#include <cstring>

#include "overlay/decap.hpp"
#include "overlay/outer_template.hpp"
#include "unit/dataplane/ipv6_underlay_world.hpp"

namespace andromeda::testing {
namespace {

using dataplane::DropReason;
using dataplane::FrameResult;
using dataplane::RxFrame;
using dataplane::Verdict;

// The DESIGN's flow hash test vector: 10.0.0.10 -> 10.0.0.20, UDP 40000 -> 4242 (blue10_to's ports).
constexpr std::uint16_t kBlue10ToBlue20Hash = 0x60d1;

// Blue .20 (node2) to .10 (here), as node2 hands it to the overlay.
Bytes blue20_to_blue10() {
    Ipv4Spec s = blue10_to("10.0.0.10");
    s.src_mac = kBlue20Mac;
    s.dst_mac = kBlue10Mac;
    s.src = ipv4("10.0.0.20");
    return ipv4_frame(s);
}

TEST_P(Ipv6UnderlayTest, ATenantsIpv4FrameToAPeersEndpointLeavesAsAnOuterIpv6Packet) {
    const Bytes frame = ipv4_frame(blue10_to("10.0.0.20"));
    const Sent sent = send(kBlue10Port, frame);
    ASSERT_EQ(sent.result.verdict, Verdict::forward) << to_string(sent.result.drop_reason);
    ASSERT_EQ(sent.frames.size(), 1u);
    EXPECT_EQ(sent.ports[0], kUnderlayPort);
    expect_ipv6_overlay(sent.frames[0], with_destination(frame, kBlue20Mac), 100, kind(), {}, kBlue10ToBlue20Hash);
    EXPECT_EQ(frame_problems(sent.frames[0]), std::vector<std::string>{});
    expect_as_over_ipv4(sent.frames[0], kBlue10Port, frame);
    const auto c = pipeline_.counters();
    EXPECT_EQ(c.encapsulated, 1u);
    EXPECT_EQ(c.forwarded, 1u);
}

TEST_P(Ipv6UnderlayTest, ATenantsIpv6FrameInADualStackVpcLeavesAsAnOuterIpv6Packet) {
    const Bytes frame = ipv6_udp_frame(kBlue10Mac, kGatewayMac, kBlue10v6, kBlue20v6, 200);
    const Bytes sent = one(kBlue10Port, frame, Verdict::forward);
    expect_ipv6_overlay(sent, with_destination(frame, kBlue20Mac), 100, kind());
    EXPECT_EQ(frame_problems(sent), std::vector<std::string>{});
    expect_as_over_ipv4(sent, kBlue10Port, frame);
    // Green has the same addresses on other ports: its own VNI, its own endpoint's MAC.
    const Bytes green = ipv6_udp_frame(kGreen10Mac, kGatewayMac, kGreen10v6, kGreen20v6, 64);
    expect_ipv6_overlay(one(kGreen10Port, green, Verdict::forward), with_destination(green, kGreen20Mac), 200, kind());
}

TEST_P(Ipv6UnderlayTest, InPlaceTheSeventyOuterBytesGoIntoTheHeadroom) {
    const Bytes frame = ipv4_frame(blue10_to("10.0.0.20", wire::ip_protocol::kTcp));
    for (const std::size_t headroom : {std::size_t{256}, std::size_t{70}}) {
        SCOPED_TRACE("headroom " + std::to_string(headroom));
        ChunkFrame chunk(frame, headroom);
        ASSERT_EQ(run_in_place(kBlue10Port, chunk).verdict, Verdict::forward);
        ASSERT_EQ(out_.emissions().size(), 1u);
        const auto& e = out_.emissions()[0];
        EXPECT_EQ(e.input_index, 0);
        EXPECT_EQ(e.frame.chunk, chunk.chunk.data());
        EXPECT_EQ(e.frame.offset, headroom - 70);
        expect_ipv6_overlay(out_.frame(0), with_destination(frame, kBlue20Mac), 100, kind());
    }
    EXPECT_EQ(pipeline_.counters().in_place_fallback_copies, 0u);
}

// Over IPv4 the express lanes take these frames; over IPv6 they must leave them to the general
// path (FabricState::prepare_express_lanes), never writing an IPv4 header.
TEST_P(Ipv6UnderlayTest, TheExpressLanesOnGiveTheBytesAndCountsOfTheGeneralPathAlone) {
    dataplane::Pipeline express(config(true));
    dataplane::Pipeline general(config(false));
    Ipv4Spec big = blue10_to("10.0.0.20");
    big.payload = 3000;  // fragmented: DF clear
    Ipv4Spec icmp = blue10_to("10.0.0.20", wire::ip_protocol::kIcmp);
    icmp.dont_fragment = true;
    const std::vector<std::pair<PortId, Bytes>> inputs = {
        {kBlue10Port, ipv4_frame(blue10_to("10.0.0.20"))},
        {kBlue10Port, ipv4_frame(blue10_to("10.0.0.20", wire::ip_protocol::kTcp))},
        {kBlue10Port, ipv4_frame(icmp)},
        {kBlue10Port, ipv4_frame(big)},
        {kBlue10Port, ipv4_frame(blue10_to("10.0.0.11"))},
        {kBlue10Port, ipv6_udp_frame(kBlue10Mac, kGatewayMac, kBlue10v6, kBlue20v6, 500)},
        {kUnderlayPort, from_peer(blue20_to_blue10())},
        {kUnderlayPort, from_peer(ipv6_udp_frame(kBlue20Mac, kBlue10Mac, kBlue20v6, kBlue10v6, 300))},
        {kUnderlayPort, overlay_packet(blue20_to_blue10(), 100, kNode2Ip, kNode1Ip, 64, 0, kind())},
    };
    std::size_t outer_ipv6 = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const auto& [port, frame] = inputs[i];
        // The copy variant is compared too (the same bytes either way), checked in the copy tests below.
        for (const bool copy : {false, true}) {
            SCOPED_TRACE("input " + std::to_string(i) + (copy ? " copied" : " in place"));
            const Sent x = send(port, frame, copy, &express);
            const Sent y = send(port, frame, copy, &general);
            EXPECT_EQ(x.result.verdict, y.result.verdict);
            EXPECT_EQ(x.result.drop_reason, y.result.drop_reason);
            EXPECT_EQ(x.frames, y.frames);
            EXPECT_EQ(x.ports, y.ports);
            for (std::size_t k = 0; k < x.frames.size(); ++k) {
                if (!copy) {
                    EXPECT_EQ(frame_problems(x.frames[k]), std::vector<std::string>{}) << "emission " << k;
                }
                if (x.ports[k] != kUnderlayPort) continue;
                EXPECT_EQ(wire::load_be16(x.frames[k].data() + 12), 0x86dd) << "emission " << k;
                ++outer_ipv6;
            }
        }
    }
    EXPECT_EQ(outer_ipv6, 2u * (3 + 3 + 1));  // UDP, TCP, ICMP; three fragments; IPv6
    // Input 0 byte for byte, from the express-lane pipeline.
    const Bytes udp = inputs[0].second;
    expect_ipv6_overlay(one(kBlue10Port, udp, Verdict::forward, false, &express), with_destination(udp, kBlue20Mac), 100,
                        kind(), {}, kBlue10ToBlue20Hash);
    one(kBlue10Port, udp, Verdict::forward, false, &general);
    const auto e = express.counters();
    const auto g = general.counters();
    EXPECT_EQ(std::memcmp(&e, &g, sizeof e), 0);
    EXPECT_EQ(e.delivered_from_fabric, 4u);
    EXPECT_EQ(e.drops.not_for_this_node, 2u);  // the outer IPv4 packet
}

TEST_P(Ipv6UnderlayTest, ABatchSendsEveryOuterPacketOverIpv6) {
    std::vector<ChunkFrame> chunks;
    chunks.emplace_back(ipv4_frame(blue10_to("10.0.0.20")));
    chunks.emplace_back(ipv4_frame(blue10_to("10.0.0.11")));  // local: delivered as it is
    Ipv4Spec big = blue10_to("10.0.0.20");
    big.payload = 3000;
    chunks.emplace_back(ipv4_frame(big));
    chunks.emplace_back(ipv6_udp_frame(kBlue10Mac, kGatewayMac, kBlue10v6, kBlue20v6, 100));
    chunks.emplace_back(ipv4_frame(blue10_to("10.0.0.20", wire::ip_protocol::kTcp)));
    std::vector<RxFrame> burst;
    for (auto& c : chunks) burst.push_back({kBlue10Port, c.buffer});
    std::vector<FrameResult> results(burst.size());
    ASSERT_EQ(pipeline_.process_batch(burst, *fabric_, out_.fresh(), results), burst.size());
    EXPECT_EQ(results[1].verdict, Verdict::deliver);
    EXPECT_EQ(results[2].emissions, 3);
    std::size_t tunnelled = 0;
    for (std::size_t i = 0; i < out_.emissions().size(); ++i) {
        const Bytes f = out_.frame(i);
        EXPECT_EQ(frame_problems(f), std::vector<std::string>{}) << "emission " << i;
        if (out_.emissions()[i].port != kUnderlayPort) continue;
        ASSERT_EQ(wire::load_be16(f.data() + 12), 0x86dd) << "emission " << i;
        const auto decap = overlay::decapsulate(f, decap_config());
        ASSERT_TRUE(decap.ok()) << "emission " << i << ": " << to_string(decap.error);
        EXPECT_TRUE(decap.packet.outer_ipv6);
        EXPECT_EQ(decap.packet.outer_dst_ip6, kNode2Ip6);
        EXPECT_EQ(decap.packet.inner_offset, 70u);
        EXPECT_LE(f.size() - 14, 1500u);
        ++tunnelled;
    }
    EXPECT_EQ(tunnelled, 6u);
    EXPECT_EQ(pipeline_.counters().encapsulated, 6u);
}

TEST_P(Ipv6UnderlayTest, AnOverlayPacketFromThePeerIsDeliveredToTheLocalTenant) {
    const Bytes inner4 = blue20_to_blue10();
    const Bytes inner6 = ipv6_udp_frame(kBlue20Mac, kBlue10Mac, kBlue20v6, kBlue10v6, 120);
    for (const bool express : {true, false}) {
        dataplane::Pipeline node1(config(express));
        for (const Bytes& inner : {inner4, inner6}) {
            const Bytes packet = from_peer(inner);
            ASSERT_EQ(frame_problems(packet), std::vector<std::string>{});
            const Bytes over_ipv4 = delivered_over_ipv4(inner);
            for (const bool copy : {false, true}) {
                SCOPED_TRACE(std::string(express ? "express lanes, " : "general path, ") + (copy ? "copied" : "in place") +
                             (inner == inner4 ? ", IPv4" : ", IPv6"));
                const Sent sent = send(kUnderlayPort, packet, copy, &node1);
                ASSERT_EQ(sent.result.verdict, Verdict::deliver) << to_string(sent.result.drop_reason);
                ASSERT_EQ(sent.frames.size(), 1u);
                EXPECT_EQ(sent.ports[0], kBlue10Port);
                const Bytes& delivered = sent.frames[0];
                EXPECT_EQ(delivered, over_ipv4);
                EXPECT_EQ(wire::MacAddress::from_bytes(delivered.data()), kBlue10Mac);
                EXPECT_EQ(wire::MacAddress::from_bytes(delivered.data() + 6), kGatewayMac);
                EXPECT_EQ(Bytes(delivered.begin() + 12, delivered.end()), Bytes(inner.begin() + 12, inner.end()));
            }
        }
        EXPECT_EQ(node1.counters().delivered_from_fabric, 4u);
        EXPECT_EQ(node1.counters().dropped, 0u);
    }
    // In place, the inner frame is handed over where it lies, 70 bytes into the packet.
    ChunkFrame chunk(from_peer(inner4));
    ASSERT_EQ(run_in_place(kUnderlayPort, chunk).verdict, Verdict::deliver);
    EXPECT_EQ(out_.emissions()[0].frame.offset, chunk.buffer.offset + 70);
}

TEST_P(Ipv6UnderlayTest, OverlayPacketsFromStrangersOrForSomeoneElseAreDropped) {
    const Bytes inner = blue20_to_blue10();  // a good inner frame: the outer decides
    struct Case {
        const char* name;
        Bytes packet;
        DropReason reason;
    };
    const std::vector<Case> cases = {
        {"an IPv6 source that is no node", from_peer(inner, ipv6("fd00:1::77")), DropReason::unknown_peer},
        {"this node's own address as the source", from_peer(inner, kNode1Ip6), DropReason::unknown_peer},
        {"to another node's address", from_peer(inner, kNode2Ip6, kNode2Ip6), DropReason::not_for_this_node},
        {"to an address of no node", from_peer(inner, kNode2Ip6, ipv6("fd00:1::99")), DropReason::not_for_this_node},
        {"outer IPv4, as over an IPv4 underlay", overlay_packet(inner, 100, kNode2Ip, kNode1Ip, 64, 0, kind()),
         DropReason::not_for_this_node},
        {"outer IPv4 to 0.0.0.0", overlay_packet(inner, 100, kNode2Ip, wire::Ipv4Address(0), 64, 0, kind()),
         DropReason::not_for_this_node},
    };
    for (const bool express : {true, false}) {
        dataplane::Pipeline node1(config(express));
        for (const Case& c : cases) {
            for (const bool copy : {false, true}) {
                SCOPED_TRACE(std::string(c.name) + (express ? ", express lanes" : ", general path") +
                             (copy ? ", copied" : ""));
                const Sent sent = send(kUnderlayPort, c.packet, copy, &node1);
                EXPECT_EQ(sent.result.verdict, Verdict::drop);
                EXPECT_EQ(sent.result.drop_reason, c.reason) << to_string(sent.result.drop_reason);
                EXPECT_TRUE(sent.frames.empty());
            }
        }
        const auto counters = node1.counters();
        EXPECT_EQ(counters.drops.unknown_peer, 4u);
        EXPECT_EQ(counters.drops.not_for_this_node, 8u);
        EXPECT_EQ(counters.dropped, 12u);
        EXPECT_EQ(send(kUnderlayPort, from_peer(inner), false, &node1).result.verdict, Verdict::deliver);
    }
}

TEST_P(Ipv6UnderlayTest, AZeroOrWrongOuterUdpChecksumIsDroppedAndCounted) {
    const Bytes good = from_peer(blue20_to_blue10());
    constexpr std::size_t kUdpChecksum = 14 + 40 + 6;
    Bytes zero = good;
    zero[kUdpChecksum] = zero[kUdpChecksum + 1] = 0;
    Bytes wrong = good;
    wrong[kUdpChecksum + 1] ^= 0x01;
    for (const bool express : {true, false}) {
        dataplane::Pipeline node1(config(express));
        for (const bool copy : {false, true}) {
            for (const Bytes* packet : {&zero, &wrong}) {
                const Sent sent = send(kUnderlayPort, *packet, copy, &node1);
                EXPECT_EQ(sent.result.drop_reason, DropReason::malformed_overlay) << to_string(sent.result.drop_reason);
                EXPECT_TRUE(sent.frames.empty());
            }
        }
        const auto c = node1.counters();
        EXPECT_EQ(c.decap_errors.udp_zero_checksum_ipv6, 2u);
        EXPECT_EQ(c.decap_errors.bad_udp_checksum, 2u);
        EXPECT_EQ(c.drops.malformed_overlay, 4u);
        EXPECT_EQ(send(kUnderlayPort, good, false, &node1).result.verdict, Verdict::deliver);
    }
}

// The next hop of a peer comes from PipelineConfig::next_hops (or set_next_hop, as the daemon's
// Neighbor Discovery gives it) by the peer's IPv6 address, or from a pinned [[nodes]] mac.
TEST_P(Ipv6UnderlayTest, APeerWithoutANextHopMacIsNoNextHopUntilItsIpv6AddressGetsOne) {
    // node_config names node2's next hop by its IPv4 address, which is no node here.
    dataplane::Pipeline by_ipv4(node_config("node1"));
    const Bytes frame = ipv4_frame(blue10_to("10.0.0.20"));
    EXPECT_EQ(send(kBlue10Port, frame, false, &by_ipv4).result.drop_reason, DropReason::no_next_hop);
    EXPECT_EQ(by_ipv4.counters().drops.no_next_hop, 1u);
    const wire::MacAddress learned = mac("02:00:00:00:b2:02");
    by_ipv4.set_next_hop(kNode2Ip6, learned);
    expect_ipv6_overlay(one(kBlue10Port, frame, Verdict::forward, false, &by_ipv4), with_destination(frame, kBlue20Mac),
                        100, kind(), {.dst_mac = learned});

    // node3 (blue .30) has no MAC in the fabric: none until the config names fd00:1::3.
    const Bytes to_node3 = ipv4_frame(blue10_to("10.0.0.30"));
    const Bytes inner = with_destination(to_node3, mac("02:00:00:00:00:30"));
    EXPECT_EQ(send(kBlue10Port, to_node3).result.drop_reason, DropReason::no_next_hop);
    const wire::MacAddress node3_mac = mac("02:00:00:00:a1:03");
    dataplane::PipelineConfig c = config(true);
    c.next_hops.push_back({kNode3Ip6, node3_mac});
    dataplane::Pipeline with_node3(c);
    expect_ipv6_overlay(one(kBlue10Port, to_node3, Verdict::forward, false, &with_node3), inner, 100, kind(),
                        {.dst_mac = node3_mac, .dst = kNode3Ip6});

    // A pinned [[nodes]] mac does too.
    std::string pinned = ipv6_fabric(kind());
    const std::string node3 = "name = \"node3\"\naddress = \"fd00:1::3\"\n";
    ASSERT_NE(pinned.find(node3), std::string::npos);
    pinned.insert(pinned.find(node3) + node3.size(), "mac = \"02:00:00:00:a1:03\"\n");
    const auto pinned_fabric = load_fabric(pinned, 2);
    expect_ipv6_overlay(one(kBlue10Port, to_node3, Verdict::forward, false, nullptr, pinned_fabric.get()), inner, 100,
                        kind(), {.dst_mac = node3_mac, .dst = kNode3Ip6});
}

// node1 and node2, both over the IPv6 underlay.
class Ipv6UnderlayTwoNodesTest : public Ipv6UnderlayTest {
protected:
    // node1 to node2 and back, in both families of the tenants; `copy` picks the senders' variant.
    void exchange(bool copy) {
        const auto node2_fabric = load_fabric(ipv6_fabric(kind(), "node2"));
        dataplane::Pipeline node2(ipv6_node_config("node2"));
        const auto across = [&](dataplane::Pipeline& from, const fabric::FabricSnapshot& from_fabric, PortId port,
                                const Bytes& frame, dataplane::Pipeline& to, const fabric::FabricSnapshot& to_fabric,
                                PortId expected_port) {
            const Sent sent = send(port, frame, copy, &from, &from_fabric);
            ASSERT_EQ(sent.result.verdict, Verdict::forward) << to_string(sent.result.drop_reason);
            EXPECT_EQ(frame_problems(sent.frames[0]), std::vector<std::string>{});
            const Sent got = send(kUnderlayPort, sent.frames[0], false, &to, &to_fabric);
            ASSERT_EQ(got.result.verdict, Verdict::deliver) << to_string(got.result.drop_reason);
            EXPECT_EQ(got.ports[0], expected_port);
            EXPECT_EQ(Bytes(got.frames[0].begin() + 12, got.frames[0].end()), Bytes(frame.begin() + 12, frame.end()));
        };
        across(pipeline_, *fabric_, kBlue10Port, ipv4_frame(blue10_to("10.0.0.20")), node2, *node2_fabric, kBlue20Port);
        across(pipeline_, *fabric_, kBlue10Port, ipv6_udp_frame(kBlue10Mac, kGatewayMac, kBlue10v6, kBlue20v6, 40),
               node2, *node2_fabric, kBlue20Port);
        Ipv4Spec back = blue10_to("10.0.0.10");
        back.src_mac = kBlue20Mac;
        back.src = ipv4("10.0.0.20");
        across(node2, *node2_fabric, kBlue20Port, ipv4_frame(back), pipeline_, *fabric_, kBlue10Port);
        across(node2, *node2_fabric, kBlue20Port, ipv6_udp_frame(kBlue20Mac, kGatewayMac, kBlue20v6, kBlue10v6, 40),
               pipeline_, *fabric_, kBlue10Port);
    }
};

TEST_P(Ipv6UnderlayTwoNodesTest, TheyCarryTheirTenantsBothWays) { exchange(false); }

// The copy variant of the general path's encapsulation (Pipeline::execute_encap's spare-buffer
// branch: process(), an in-place input without 70 bytes of headroom, route_from_nat) rewrites the
// inner destination MAC (gateway MAC -> the endpoint's) before the outer UDP checksum is computed
// over the inner frame, as the in-place branch does. It once did so after, and over IPv6, where the
// checksum is always there, the peer (Linux too) dropped every such packet as bad_udp_checksum.
TEST_P(Ipv6UnderlayTest, TheCopyVariantsChecksumTheInnerFrameAsSent) {
    const Bytes frame = ipv4_frame(blue10_to("10.0.0.20"));
    const Bytes expected = one(kBlue10Port, frame, Verdict::forward);  // in place
    // process(): a copy into a spare buffer.
    const Bytes copied = one(kBlue10Port, frame, Verdict::forward, true);
    expect_ipv6_overlay(copied, with_destination(frame, kBlue20Mac), 100, kind(), {}, kBlue10ToBlue20Hash);
    EXPECT_EQ(frame_problems(copied), std::vector<std::string>{});
    EXPECT_EQ(copied, expected);
    const Bytes frame6 = ipv6_udp_frame(kBlue10Mac, kGatewayMac, kBlue10v6, kBlue20v6, 200);
    const Bytes copied6 = one(kBlue10Port, frame6, Verdict::forward, true);
    expect_ipv6_overlay(copied6, with_destination(frame6, kBlue20Mac), 100, kind());
    // In place with 69 bytes of headroom (IPv4's 50 would fit): the fallback copy.
    ChunkFrame tight(frame, 69);
    ASSERT_EQ(run_in_place(kBlue10Port, tight).verdict, Verdict::forward);
    EXPECT_EQ(out_.emissions()[0].input_index, -1);
    EXPECT_EQ(pipeline_.counters().in_place_fallback_copies, 1u);
    EXPECT_EQ(out_.frame(0), expected);
    // A batch with one such frame.
    std::vector<ChunkFrame> chunks;
    chunks.emplace_back(frame);
    chunks.emplace_back(frame, 60);
    std::vector<RxFrame> burst = {{kBlue10Port, chunks[0].buffer}, {kBlue10Port, chunks[1].buffer}};
    std::vector<FrameResult> results(burst.size());
    ASSERT_EQ(pipeline_.process_batch(burst, *fabric_, out_.fresh(), results), burst.size());
    ASSERT_EQ(out_.emissions().size(), 2u);
    EXPECT_EQ(out_.frame(0), expected);
    EXPECT_EQ(out_.frame(1), expected);
    // The NAT stage's way back, always a copy: orange's 192.168.50.20 is on node2.
    Ipv4Spec s;
    s.src_mac = kGatewayMac;
    s.dst_mac = kGatewayMac;
    s.src = ipv4("8.8.8.8");
    s.dst = ipv4("192.168.50.20");
    const Bytes translated = ipv4_frame(s);
    ASSERT_EQ(pipeline_.route_from_nat(400, translated, *fabric_, out_.fresh()).verdict, Verdict::forward);
    expect_ipv6_overlay(out_.frame(0), with_destination(translated, mac("02:00:00:32:00:14")), 400, kind());
    EXPECT_EQ(frame_problems(out_.frame(0)), std::vector<std::string>{});
}

// The same end to end: node2 takes what node1's copy variant sends (it dropped it as
// malformed_overlay, decap_bad_udp_checksum, while the checksum was of the unrewritten frame).
TEST_P(Ipv6UnderlayTwoNodesTest, TheyCarryTheirTenantsBothWaysFromTheCopyVariant) { exchange(true); }

// The same over IPv4 with PipelineConfig::outer_udp_checksum (off by default): the general path's
// copy and the encapsulating express lane's copy (Pipeline::express_encapsulate) checksum the
// frame as sent, its destination MAC rewritten.
TEST(Ipv4UnderlayOuterUdpChecksum, TheCopyVariantsChecksumTheInnerFrameAsSent) {
    const auto fabric = load_fabric(fabric_text("node1"));
    for (const bool express : {true, false}) {
        dataplane::PipelineConfig c = node_config("node1");
        c.outer_udp_checksum = true;
        c.express_lanes = express;
        dataplane::Pipeline node1(c);
        SinkStorage out;
        const Bytes frame = ipv4_frame(blue10_to("10.0.0.20"));
        for (const bool copy : {false, true}) {
            SCOPED_TRACE(std::string(express ? "express lanes, " : "general path, ") + (copy ? "copied" : "in place"));
            ChunkFrame chunk(frame);
            const FrameResult r = copy ? node1.process(kBlue10Port, frame, *fabric, out.fresh())
                                       : node1.process_in_place(kBlue10Port, chunk.buffer, *fabric, out.fresh());
            ASSERT_EQ(r.verdict, Verdict::forward);
            const Bytes sent = out.frame(0);
            EXPECT_NE(wire::load_be16(sent.data() + 40), 0) << "the checksum was asked for";
            EXPECT_EQ(frame_problems(sent), std::vector<std::string>{});
            EXPECT_TRUE(overlay::decapsulate(sent, {}).ok());
        }
    }
}

INSTANTIATE_TEST_SUITE_P(BothEncapsulations, Ipv6UnderlayTest,
                         ::testing::Values(overlay::EncapKind::andromeda, overlay::EncapKind::vxlan),
                         [](const auto& test_info) { return std::string(overlay::to_string(test_info.param)); });
INSTANTIATE_TEST_SUITE_P(BothEncapsulations, Ipv6UnderlayTwoNodesTest,
                         ::testing::Values(overlay::EncapKind::andromeda, overlay::EncapKind::vxlan),
                         [](const auto& test_info) { return std::string(overlay::to_string(test_info.param)); });

}  // namespace
}  // namespace andromeda::testing
