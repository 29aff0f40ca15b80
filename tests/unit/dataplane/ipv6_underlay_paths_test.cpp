// An IPv6 underlay on the pipeline's other paths (ipv6_underlay_world.hpp's world, both
// encapsulations): the inner MTU is the underlay MTU less 70 (1430 for 1500) for DF IPv4, IPv6 and
// the NAT stage's inbound traffic, oversize DF-clear packets are fragmented to fit it; with an
// 802.1Q tag the outer headers are 74 bytes; a VXLAN flood, an answer to a VXLAN peer's tenant and
// traffic towards a NAT node are all outer IPv6. And pipeline_fuzz's seeds for the IPv6 underlay.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "dataplane/underlay_pmtu.hpp"
#include "gateway/icmp_error.hpp"
#include "unit/dataplane/ipv6_underlay_world.hpp"
#include "unit/dataplane/reassembly.hpp"

namespace andromeda::testing {
namespace {

using dataplane::DropReason;
using dataplane::FrameResult;
using dataplane::Verdict;

// A blue 10.0.0.10 -> 10.0.0.20 UDP packet whose IP total length is `ip_length`.
Bytes blue_to_node2(std::size_t ip_length, bool dont_fragment = true) {
    Ipv4Spec s = blue10_to("10.0.0.20");
    s.payload = ip_length - 28;
    s.dont_fragment = dont_fragment;
    return ipv4_frame(s);
}

// A blue .10 -> .20 IPv6 UDP packet whose IP packet is `ip_length` bytes.
Bytes blue6_to_node2(std::size_t ip_length) {
    return ipv6_udp_frame(kBlue10Mac, kGatewayMac, kBlue10v6, kBlue20v6, ip_length - 48);
}

class Ipv6UnderlayMtuTest : public Ipv6UnderlayTest {
protected:
    // `frame` from blue .10, in place (the daemon's way): forwarded as one outer packet of
    // `outer_ip` bytes (its IPv6 header and payload), or nothing when it is not forwarded.
    void expect_forwarded_whole(const Bytes& frame, std::size_t outer_ip) {
        ChunkFrame chunk(frame);
        const FrameResult r = run_in_place(kBlue10Port, chunk);
        ASSERT_EQ(r.verdict, Verdict::forward) << to_string(r.drop_reason);
        ASSERT_EQ(out_.emissions().size(), 1u);
        const Bytes sent = out_.frame(0);
        EXPECT_EQ(sent.size() - 14, outer_ip);
        EXPECT_EQ(wire::load_be16(sent.data() + 18), outer_ip - 40) << "IPv6 payload length";
        EXPECT_EQ(frame_problems(sent), std::vector<std::string>{});
    }
    // The MTU that the ICMP error in emission 0 (to blue .10, from the gateway) reports.
    std::uint32_t reported_mtu(const Bytes& offending) {
        EXPECT_EQ(out_.emissions().size(), 1u);
        if (out_.emissions().size() != 1) return 0;
        EXPECT_EQ(out_.emissions()[0].port, kBlue10Port);
        const Bytes reply = out_.frame(0);
        EXPECT_EQ(frame_problems(reply), std::vector<std::string>{});
        const auto eth = wire::EthernetView::parse(reply);
        EXPECT_EQ(eth->destination(), kBlue10Mac);
        EXPECT_EQ(eth->source(), kGatewayMac);
        if (eth->ethertype() == wire::ethertype::kIpv6) {
            const auto ip = wire::Ipv6View::parse(eth->payload());
            EXPECT_EQ(ip->destination(), kBlue10v6);
            const wire::ByteSpan icmp = ip->upper_layer_payload();
            EXPECT_EQ(icmp[0], 2) << "Packet Too Big";
            return wire::load_be32(icmp.data() + 4);
        }
        const auto ip = wire::Ipv4View::parse(eth->payload());
        EXPECT_EQ(ip->destination(), ipv4("10.0.0.10"));
        const auto icmp = wire::Icmpv4View::parse(ip->payload());
        EXPECT_TRUE(icmp->is_fragmentation_needed());
        const auto quote = icmp->original_datagram();
        EXPECT_TRUE(std::equal(quote.begin(), quote.end(), offending.begin() + 14));
        return icmp->next_hop_mtu();
    }
};

TEST_P(Ipv6UnderlayMtuTest, ADontFragmentIpv4PacketFitsAt1430AndOneByteMoreGetsFragNeeded1430) {
    EXPECT_EQ(fabric_->vpcs()[0].mtu, 1430u) << "the VPC's MTU defaults to underlay_mtu - 70";
    expect_forwarded_whole(blue_to_node2(1430), 1500);
    const Bytes big = blue_to_node2(1431);
    const FrameResult r = run(kBlue10Port, big);
    ASSERT_EQ(r.verdict, Verdict::reply) << to_string(r.drop_reason);
    EXPECT_EQ(reported_mtu(big), 1430u);
    EXPECT_EQ(pipeline_.counters().frag_needed_sent, 1u);
    EXPECT_EQ(pipeline_.counters().encapsulated, 1u);
}

TEST_P(Ipv6UnderlayMtuTest, AnIpv6PacketFitsAt1430AndOneByteMoreGetsPacketTooBig1430) {
    expect_forwarded_whole(blue6_to_node2(1430), 1500);
    const Bytes big = blue6_to_node2(1431);
    ASSERT_EQ(run(kBlue10Port, big).verdict, Verdict::reply);
    EXPECT_EQ(reported_mtu(big), 1430u);
    EXPECT_EQ(pipeline_.counters().packet_too_big_sent, 1u);
}

// Not the VPC's MTU (1430 from the fabric) but the underlay's as this pipeline is configured:
// FabricState::encap_mtu() takes IPv6's 20 extra bytes off it.
TEST_P(Ipv6UnderlayMtuTest, TheConfiguredUnderlayMtuLess70IsTheLimitToo) {
    dataplane::PipelineConfig c = config(true);
    c.underlay_mtu = 1400;
    dataplane::Pipeline narrow(c);
    ChunkFrame fits(blue_to_node2(1330));
    ASSERT_EQ(narrow.process_in_place(kBlue10Port, fits.buffer, *fabric_, out_.fresh()).verdict, Verdict::forward);
    EXPECT_EQ(out_.frame(0).size() - 14, 1400u);
    const Bytes big = blue_to_node2(1331);
    ASSERT_EQ(narrow.process(kBlue10Port, big, *fabric_, out_.fresh()).verdict, Verdict::reply);
    EXPECT_EQ(reported_mtu(big), 1330u);
    const Bytes big6 = blue6_to_node2(1331);
    ASSERT_EQ(narrow.process(kBlue10Port, big6, *fabric_, out_.fresh()).verdict, Verdict::reply);
    EXPECT_EQ(reported_mtu(big6), 1330u);
}

TEST_P(Ipv6UnderlayMtuTest, ADontFragmentClearPacketIsFragmentedToFitTheIpv6Overlay) {
    const Bytes frame = blue_to_node2(4000, false);
    for (const bool in_place : {false, true}) {
        SCOPED_TRACE(in_place ? "in place" : "copied");
        ChunkFrame chunk(frame);
        const FrameResult r = in_place ? run_in_place(kBlue10Port, chunk) : run(kBlue10Port, frame);
        ASSERT_EQ(r.verdict, Verdict::forward) << to_string(r.drop_reason);
        ASSERT_EQ(r.emissions, 3);
        std::vector<Bytes> inner_frames;
        for (std::size_t i = 0; i < out_.emissions().size(); ++i) {
            SCOPED_TRACE(i);
            const Bytes outer = out_.frame(i);
            EXPECT_EQ(out_.emissions()[i].port, kUnderlayPort);
            EXPECT_EQ(frame_problems(outer), std::vector<std::string>{});
            EXPECT_LE(outer.size() - 14, 1500u);
            const auto decap = overlay::decapsulate(outer, decap_config());
            ASSERT_TRUE(decap.ok()) << to_string(decap.error);
            ASSERT_TRUE(decap.packet.outer_ipv6);
            const Bytes inner(decap.packet.inner.begin(), decap.packet.inner.end());
            expect_ipv6_overlay(outer, inner, 100, kind());
            EXPECT_EQ(wire::EthernetView::parse(inner)->destination(), kBlue20Mac);
            const auto ip = wire::Ipv4View::parse(wire::ByteSpan(inner).subspan(14));
            EXPECT_LE(ip->total_length(), 1430);
            if (i == 0) {
                EXPECT_EQ(ip->total_length(), 1428) << "the largest multiple of 8 of payload that fits";
            }
            inner_frames.push_back(inner);
        }
        std::string error;
        const auto packet = reassemble_ipv4(inner_frames, error);
        ASSERT_TRUE(packet) << error;
        EXPECT_EQ(*packet, Bytes(frame.begin() + 14, frame.end()));
    }
}

// The NAT stage's inbound traffic for orange's 192.168.50.20 on node2 (NAT at node1).
TEST_P(Ipv6UnderlayMtuTest, TranslatedInboundTrafficIsSizedForTheIpv6Overlay) {
    Ipv4Spec s;
    s.src_mac = kNode1Mac;
    s.dst_mac = kGatewayMac;
    s.src = ipv4("8.8.8.8");
    s.dst = ipv4("192.168.50.20");
    s.dont_fragment = true;
    s.payload = 1430 - 28;
    Bytes error(600);
    EXPECT_EQ(pipeline_.frag_needed_for_nat(400, ipv4_frame(s), *fabric_, error), 0u);  // fits
    s.payload = 1431 - 28;
    const std::size_t length = pipeline_.frag_needed_for_nat(400, ipv4_frame(s), *fabric_, error);
    ASSERT_GT(length, 0u);
    const auto ip = wire::Ipv4View::parse(wire::ByteSpan(error.data(), length).subspan(14));
    ASSERT_TRUE(ip);
    EXPECT_EQ(ip->destination(), ipv4("8.8.8.8"));
    EXPECT_EQ(wire::Icmpv4View::parse(ip->payload())->next_hop_mtu(), 1430);
}

// Red's NAT is node2's: a red tenant's packet to the outside goes there over IPv6.
TEST_P(Ipv6UnderlayMtuTest, TrafficForTheNatNodeIsSentOverIpv6) {
    Ipv4Spec s;
    s.src_mac = kRed10Mac;
    s.dst_mac = kGatewayMac;
    s.src = ipv4("172.16.0.10");
    s.dst = ipv4("8.8.8.8");
    const Bytes frame = ipv4_frame(s);
    ChunkFrame chunk(frame);
    const FrameResult r = run_in_place(kRed10Port, chunk);
    ASSERT_EQ(r.verdict, Verdict::forward) << to_string(r.drop_reason);
    const Bytes sent = out_.frame(0);
    expect_ipv6_overlay(sent, Bytes(sent.begin() + 70, sent.end()), 300, kind());
    EXPECT_EQ(Bytes(sent.begin() + 70 + 12, sent.end()), Bytes(frame.begin() + 12, frame.end()));
    EXPECT_EQ(frame_problems(sent), std::vector<std::string>{});
    EXPECT_EQ(pipeline_.counters().sent_to_nat_gateway, 1u);
}

TEST_P(Ipv6UnderlayMtuTest, WithAVlanTheOuterHeadersAre74Bytes) {
    std::string text = ipv6_fabric(kind());
    text.insert(text.find('\n', text.find("address = \"fd00:1::1\"")) + 1, "underlay_vlan = 100\n");
    for (const char* node : {"fd00:1::2\"\n", "fd00:1::3\"\n"}) {
        const std::size_t at = text.find(node, text.find("[[nodes]]"));
        ASSERT_NE(at, std::string::npos);
        text.insert(at + std::strlen(node), std::string("mac = \"02:00:00:00:a1:0") + node[8] + "\"\n");
    }
    const auto tagged = load_fabric(text, 2);
    ASSERT_NE(tagged, nullptr);
    const Bytes frame = ipv4_frame(blue10_to("10.0.0.20"));
    ChunkFrame chunk(frame);
    ASSERT_EQ(pipeline_.process_in_place(kBlue10Port, chunk.buffer, *tagged, out_.fresh()).verdict, Verdict::forward);
    EXPECT_EQ(out_.emissions()[0].frame.offset, chunk.buffer.offset - 74);
    Outer6 outer;
    outer.vlan = 100;
    expect_ipv6_overlay(out_.frame(0), with_destination(frame, kBlue20Mac), 100, kind(), outer);
    const auto decap = overlay::decapsulate(out_.frame(0), decap_config());
    ASSERT_TRUE(decap.ok()) << to_string(decap.error);
    EXPECT_EQ(decap.packet.outer_vlan_id, 100);
    // 1430 still fits: the tag is not part of the IP MTU.
    ChunkFrame fits(blue_to_node2(1430));
    ASSERT_EQ(pipeline_.process_in_place(kBlue10Port, fits.buffer, *tagged, out_.fresh()).verdict, Verdict::forward);
    EXPECT_EQ(out_.frame(0).size(), 1500u + 18);
    // The peer's tagged outer IPv6 packet is taken.
    Ipv4Spec back = blue10_to("10.0.0.10");
    back.src_mac = kBlue20Mac;
    back.dst_mac = kBlue10Mac;
    back.src = ipv4("10.0.0.20");
    overlay::OuterTemplateConfig c;
    c.kind = kind();
    c.src_mac = kNode2Mac;
    c.dst_mac = kNode1Mac;
    c.ipv6 = true;
    c.src_ip6 = kNode2Ip6;
    c.dst_ip6 = kNode1Ip6;
    c.vlan_id = 100;
    overlay::OuterTemplate t(c);
    const Bytes inner = ipv4_frame(back);
    Bytes packet(inner.size() + 74);
    overlay::OverlayFields fields;
    fields.vni = 100;
    packet.resize(t.encapsulate(inner, packet, fields));
    const FrameResult r = pipeline_.process(kUnderlayPort, packet, *tagged, out_.fresh());
    EXPECT_EQ(r.verdict, Verdict::deliver) << to_string(r.drop_reason);
}

// A router of the underlay at fd00:1::fe whose next link is narrower: ICMPv6 Packet Too Big to node1
// about `offending` (an outer packet as node1 sent it, from its IPv6 header on), quoting as much as
// fits in 1280 bytes (RFC 4443 section 3.2). `corrupt` breaks the checksum.
Bytes packet_too_big(const Bytes& offending, std::uint32_t mtu, const wire::Ipv6Address& to = kNode1Ip6,
                     bool corrupt = false) {
    const wire::Ipv6Address router = ipv6("fd00:1::fe");
    const std::size_t quote = std::min<std::size_t>(offending.size(), 1280 - 40 - 8);
    Bytes icmp(8 + quote);
    icmp[0] = 2;  // Packet Too Big, code 0
    wire::store_be32(icmp.data() + 4, mtu);
    std::copy_n(offending.begin(), quote, icmp.begin() + 8);
    const std::uint64_t pseudo =
        wire::pseudo_header_sum(router, to, wire::ip_protocol::kIcmpv6, static_cast<std::uint32_t>(icmp.size()));
    wire::store_be16(icmp.data() + 2, wire::checksum_finish(wire::checksum_add(icmp, pseudo)));
    if (corrupt) icmp[2] ^= 0x40;
    Bytes frame(14 + 40);
    std::copy_n(kNode1Mac.bytes().begin(), 6, frame.begin());
    std::copy_n(kNode2Mac.bytes().begin(), 6, frame.begin() + 6);
    wire::store_be16(frame.data() + 12, wire::ethertype::kIpv6);
    wire::Ipv6Header h;
    h.payload_length = static_cast<std::uint16_t>(icmp.size());
    h.next_header = wire::ip_protocol::kIcmpv6;
    h.source = router;
    h.destination = to;
    wire::write_ipv6_header(wire::MutableByteSpan(frame).subspan(14), h);
    frame.insert(frame.end(), icmp.begin(), icmp.end());
    return frame;
}

class Ipv6UnderlayPathMtuTest : public Ipv6UnderlayMtuTest {
protected:
    // The outer packet (IPv6 header on) that carries blue .10's 1430-byte packet to node2.
    Bytes outer_to_node2() {
        const Bytes sent = one(kBlue10Port, blue_to_node2(1430), Verdict::forward);
        return Bytes(sent.begin() + 14, sent.end());
    }
    // `frame` on the underlay port: read for the path MTU, never forwarded.
    void read_on_underlay(const Bytes& frame) {
        const Sent sent = send(kUnderlayPort, frame);
        EXPECT_EQ(sent.result.verdict, Verdict::drop);
        EXPECT_EQ(sent.result.drop_reason, DropReason::underlay_icmp_read) << to_string(sent.result.drop_reason);
        EXPECT_TRUE(sent.frames.empty());
    }
    // What every worker's pipeline has learned (the daemon's clock: the pipeline's default).
    std::vector<dataplane::PeerPathMtu::Entry> learned() const {
        const auto now = std::chrono::steady_clock::now().time_since_epoch();
        return pipeline_.peer_path_mtu()->entries(
            static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()));
    }
};

// RFC 8201 over the underlay: a router's Packet Too Big about node1's outer packet to node2 lowers
// node2's path to 1400, so blue's packets to node2 are sized by 1400 - 70 = 1330 (frag-needed for
// DF IPv4, Packet Too Big for IPv6) while node3's path keeps 1430.
TEST_P(Ipv6UnderlayPathMtuTest, APacketTooBigAboutOurOuterPacketLowersThatPeersPathTo1400Less70) {
    const Bytes offending = outer_to_node2();
    ASSERT_EQ(offending.size(), 1500u);
    const auto report = dataplane::parse_outer_packet_too_big(packet_too_big(offending, 1400), kNode1Ip6,
                                                              overlay::default_udp_port(kind()));
    EXPECT_EQ(report.kind, dataplane::OuterFragNeeded::ours);
    EXPECT_EQ(report.peer, kNode2Ip6);
    EXPECT_EQ(report.mtu, 1400u);

    read_on_underlay(packet_too_big(offending, 1400));
    EXPECT_EQ(pipeline_.counters().underlay_pmtu_learned, 1u);
    const auto entries = learned();
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_EQ(entries[0].peer, kNode2Ip6);
    EXPECT_EQ(entries[0].mtu, 1400u);

    expect_forwarded_whole(blue_to_node2(1330), 1400);
    const Bytes big = blue_to_node2(1331);
    EXPECT_EQ(run(kBlue10Port, big).verdict, Verdict::reply);
    EXPECT_EQ(reported_mtu(big), 1330u);
    expect_forwarded_whole(blue6_to_node2(1330), 1400);
    const Bytes big6 = blue6_to_node2(1331);
    EXPECT_EQ(run(kBlue10Port, big6).verdict, Verdict::reply);
    EXPECT_EQ(reported_mtu(big6), 1330u);
}

// What is not believed: a broken checksum, a quote of someone else's packet, a report to another
// address, an MTU below IPv6's 1280 or not below underlay_mtu, a peer outside the fabric, and a
// truncated quote. Each is read (counted, never forwarded) and changes nothing.
TEST_P(Ipv6UnderlayPathMtuTest, ReportsThatAreNotAboutOurPacketToAPeerChangeNothing) {
    const Bytes offending = outer_to_node2();
    Bytes from_someone_else = offending;
    from_someone_else[8 + 15] ^= 1;  // the quoted source is not node1
    Bytes to_a_stranger = offending;
    to_a_stranger[24 + 15] = 0x77;   // fd00:1::77, no node of the fabric
    const std::uint16_t port = overlay::default_udp_port(kind());
    const struct {
        const char* what;
        Bytes frame;
        dataplane::OuterFragNeeded kind;
    } cases[] = {
        {"bad checksum", packet_too_big(offending, 1400, kNode1Ip6, true), dataplane::OuterFragNeeded::bad_checksum},
        {"not our packet", packet_too_big(from_someone_else, 1400), dataplane::OuterFragNeeded::not_our_packet},
        {"below 1280", packet_too_big(offending, 1200), dataplane::OuterFragNeeded::ours},
        {"not below underlay_mtu", packet_too_big(offending, 1500), dataplane::OuterFragNeeded::ours},
        {"a stranger", packet_too_big(to_a_stranger, 1400), dataplane::OuterFragNeeded::ours},
        {"a quote without UDP", packet_too_big(Bytes(offending.begin(), offending.begin() + 44), 1400),
         dataplane::OuterFragNeeded::truncated},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.what);
        EXPECT_EQ(dataplane::parse_outer_packet_too_big(c.frame, kNode1Ip6, port).kind, c.kind);
        read_on_underlay(c.frame);
    }
    EXPECT_EQ(pipeline_.counters().underlay_pmtu_learned, 0u);
    EXPECT_EQ(pipeline_.counters().underlay_pmtu_ignored, std::size(cases));
    EXPECT_TRUE(learned().empty());
    expect_forwarded_whole(blue_to_node2(1430), 1500);
    // Addressed to another node: not a Packet Too Big for this one (the host's, were it steered).
    EXPECT_EQ(dataplane::parse_outer_packet_too_big(packet_too_big(offending, 1400, kNode2Ip6), kNode1Ip6, port).kind,
              dataplane::OuterFragNeeded::not_frag_needed);
    // Every truncation of a valid report is refused or read whole; none is read past its end.
    const Bytes whole = packet_too_big(offending, 1400);
    for (std::size_t n = 0; n < whole.size(); n += 7) {
        const Bytes cut(whole.begin(), whole.begin() + static_cast<long>(n));
        EXPECT_NE(dataplane::parse_outer_packet_too_big(cut, kNode1Ip6, port).kind, dataplane::OuterFragNeeded::ours)
            << n << " bytes";
    }
}

INSTANTIATE_TEST_SUITE_P(BothEncapsulations, Ipv6UnderlayPathMtuTest,
                         ::testing::Values(overlay::EncapKind::andromeda, overlay::EncapKind::vxlan),
                         [](const auto& test_info) { return std::string(overlay::to_string(test_info.param)); });

INSTANTIATE_TEST_SUITE_P(BothEncapsulations, Ipv6UnderlayMtuTest,
                         ::testing::Values(overlay::EncapKind::andromeda, overlay::EncapKind::vxlan),
                         [](const auto& test_info) { return std::string(overlay::to_string(test_info.param)); });

// VXLAN's own paths: head-end replication and answers to a kernel peer's tenants.
class Ipv6UnderlayVxlanTest : public Ipv6UnderlayTest {};

TEST_P(Ipv6UnderlayVxlanTest, ATenantsBroadcastIsFloodedToThePeerOverIpv6) {
    Ipv4Spec s;
    s.src_mac = kBlue10Mac;
    s.dst_mac = kBroadcast;
    s.src = ipv4("10.0.0.10");
    s.dst = ipv4("10.0.0.255");
    s.dst_port = 5353;
    const Bytes frame = ipv4_frame(s);
    const FrameResult r = run(kBlue10Port, frame);
    ASSERT_EQ(r.verdict, Verdict::forward) << to_string(r.drop_reason);
    ASSERT_EQ(out_.emissions().size(), 2u);  // blue .11 here and node2 (node3 has no next hop)
    std::size_t tunnelled = 0;
    for (std::size_t i = 0; i < 2; ++i) {
        if (out_.emissions()[i].port != kUnderlayPort) continue;
        expect_ipv6_overlay(out_.frame(i), frame, 100, kind());
        EXPECT_EQ(frame_problems(out_.frame(i)), std::vector<std::string>{});
        ++tunnelled;
    }
    EXPECT_EQ(tunnelled, 1u);
    // The flood's size limit is the IPv6 overlay's.
    s.payload = 1430 - 28;
    EXPECT_EQ(run(kBlue10Port, ipv4_frame(s)).verdict, Verdict::forward);
    s.payload = 1431 - 28;
    EXPECT_EQ(run(kBlue10Port, ipv4_frame(s)).drop_reason, DropReason::too_big_no_icmp);
}

TEST_P(Ipv6UnderlayVxlanTest, APeersTenantsArpOverIpv6IsAnsweredBackOverIpv6) {
    const Bytes request = arp_request(kBlue20Mac, ipv4("10.0.0.20"), ipv4("10.0.0.10"));
    const FrameResult r = run(kUnderlayPort, from_peer(request));
    ASSERT_EQ(r.verdict, Verdict::forward) << to_string(r.drop_reason);
    ASSERT_EQ(out_.emissions().size(), 1u);
    EXPECT_EQ(out_.emissions()[0].port, kUnderlayPort);
    const Bytes sent = out_.frame(0);
    const Bytes reply = arp_frame(kBlue10Mac, kBlue20Mac,
                                  {wire::arp_op::kReply, kBlue10Mac, ipv4("10.0.0.10"), kBlue20Mac, ipv4("10.0.0.20")});
    expect_ipv6_overlay(sent, reply, 100, kind());
    EXPECT_EQ(frame_problems(sent), std::vector<std::string>{});
    EXPECT_EQ(pipeline_.counters().overlay_arp_replies, 1u);
}

INSTANTIATE_TEST_SUITE_P(Vxlan, Ipv6UnderlayVxlanTest, ::testing::Values(overlay::EncapKind::vxlan),
                         [](const auto& test_info) { return std::string(overlay::to_string(test_info.param)); });

// Regenerates pipeline_fuzz's seeds for the IPv6 underlay (tests/fuzz/pipeline_fuzz.cpp: bit 0x40 of
// byte 0 starts on it, selector 0xfd switches family, 0xff the encapsulation):
//   dataplane_ipv6_underlay_paths_test --gtest_also_run_disabled_tests --gtest_filter='*WriteIpv6UnderlayFuzzSeeds*'
TEST(Ipv6UnderlayFuzzSeeds, DISABLED_WriteIpv6UnderlayFuzzSeeds) {
    const std::filesystem::path dir = std::filesystem::path(ANDROMEDA_SOURCE_DIR) / "tests/fuzz/corpus/pipeline";
    std::filesystem::create_directories(dir);
    constexpr std::uint8_t kIpv6 = 0x40, kSequence = 0x80, kSwitchFabric = 0xff, kSwitchFamily = 0xfd;
    constexpr std::uint8_t kBlue10 = 0, kUnderlay = 6;  // pipeline_fuzz's kPorts
    const auto write = [&](const std::string& name, const Bytes& seed) {
        std::ofstream(dir / name, std::ios::binary)
            .write(reinterpret_cast<const char*>(seed.data()), static_cast<std::streamsize>(seed.size()));
    };
    const auto single = [&](std::uint8_t port, const Bytes& frame) {
        Bytes seed{static_cast<std::uint8_t>(kIpv6 | port)};
        seed.insert(seed.end(), frame.begin(), frame.end());
        return seed;
    };
    const auto record = [](Bytes& seed, std::uint8_t selector, const Bytes& frame) {
        seed.push_back(selector);
        seed.push_back(static_cast<std::uint8_t>(frame.size() >> 8));
        seed.push_back(static_cast<std::uint8_t>(frame.size()));
        seed.insert(seed.end(), frame.begin(), frame.end());
    };
    Ipv4Spec back = blue10_to("10.0.0.10");
    back.src_mac = kBlue20Mac;
    back.dst_mac = kBlue10Mac;
    back.src = ipv4("10.0.0.20");
    const Bytes blue20 = ipv4_frame(back);
    const Bytes blue20v6 = ipv6_udp_frame(kBlue20Mac, kBlue10Mac, kBlue20v6, kBlue10v6, 100);
    const Bytes to_node2 = ipv4_frame(blue10_to("10.0.0.20"));
    constexpr auto andromeda = overlay::EncapKind::andromeda;
    constexpr auto vxlan = overlay::EncapKind::vxlan;
    write("ipv6-underlay-overlay", single(kUnderlay, overlay_packet6(blue20, andromeda)));
    write("ipv6-underlay-overlay-ipv6", single(kUnderlay, overlay_packet6(blue20v6, andromeda)));
    write("ipv6-underlay-tenant", single(kBlue10, to_node2));
    write("ipv6-underlay-outer-ipv4", single(kUnderlay, overlay_packet(blue20, 100)));
    Bytes zero_checksum = overlay_packet6(blue20, andromeda);
    zero_checksum[14 + 40 + 6] = zero_checksum[14 + 40 + 7] = 0;
    write("ipv6-underlay-zero-checksum", single(kUnderlay, zero_checksum));
    // Both encapsulations and both families in one run: reloads across the family.
    Bytes sequence{static_cast<std::uint8_t>(kSequence | kIpv6)};
    record(sequence, kBlue10, to_node2);
    record(sequence, kUnderlay, overlay_packet6(blue20, andromeda));
    sequence.push_back(kSwitchFabric);
    record(sequence, kUnderlay, overlay_packet6(arp_request(kBlue20Mac, ipv4("10.0.0.20"), ipv4("10.0.0.10")), vxlan));
    Ipv4Spec broadcast = blue10_to("10.0.0.255");
    broadcast.dst_mac = kBroadcast;
    record(sequence, kBlue10, ipv4_frame(broadcast));
    record(sequence, kUnderlay, overlay_packet6(blue20v6, vxlan));
    sequence.push_back(kSwitchFamily);
    record(sequence, kBlue10, to_node2);
    record(sequence, kUnderlay, overlay_packet(blue20, 100, kNode2Ip, kNode1Ip, 64, 0, vxlan));
    write("ipv6-underlay-sequence", sequence);
}

}  // namespace
}  // namespace andromeda::testing
