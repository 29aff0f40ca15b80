// PMTUD through the pipeline: DF -> Fragmentation Needed from the gateway, DF clear -> fragments
// that reassemble to the original, IPv6 -> Packet Too Big, all rate-limited per source.
#include <gtest/gtest.h>

#include "gateway/icmp_error.hpp"
#include "overlay/decap.hpp"
#include "unit/dataplane/pipeline_fixture.hpp"
#include "unit/dataplane/reassembly.hpp"

namespace andromeda::testing {
namespace {

using dataplane::DropReason;
using dataplane::Verdict;

// A blue 10.0.0.10 -> 10.0.0.20 UDP packet whose IP total length is `ip_length`.
Ipv4Spec sized(std::size_t ip_length, bool dont_fragment) {
    Ipv4Spec s = blue10_to("10.0.0.20");
    s.payload = ip_length - 28;
    s.dont_fragment = dont_fragment;
    return s;
}

struct FakeClock {
    std::uint64_t now = 1'000'000'000;
};

class PmtudTest : public PipelineTest {
protected:
    // The next-hop MTU of the Fragmentation Needed in emission 0, after checking it field by field.
    std::uint16_t frag_needed_mtu(const Bytes& offending) {
        EXPECT_EQ(out_.emissions().size(), 1u);
        if (out_.emissions().empty()) return 0;
        EXPECT_EQ(out_.emissions()[0].port, kBlue10Port);
        const Bytes reply = out_.frame(0);
        EXPECT_EQ(frame_problems(reply), std::vector<std::string>{});
        const auto eth = wire::EthernetView::parse(reply);
        EXPECT_EQ(eth->source(), kGatewayMac);
        EXPECT_EQ(eth->destination(), kBlue10Mac);
        const auto ip = wire::Ipv4View::parse(eth->payload());
        EXPECT_EQ(ip->source(), ipv4("10.0.0.1"));
        EXPECT_EQ(ip->destination(), ipv4("10.0.0.10"));
        const auto icmp = wire::Icmpv4View::parse(ip->payload());
        EXPECT_TRUE(icmp->is_fragmentation_needed());
        const auto quote = icmp->original_datagram();
        const std::size_t eth_length = wire::EthernetView::parse(offending)->header_length();
        EXPECT_EQ(quote.size(), std::min(gateway::kMaxIcmpv4Quote, offending.size() - eth_length));
        EXPECT_TRUE(std::equal(quote.begin(), quote.end(), offending.begin() + static_cast<std::ptrdiff_t>(eth_length)));
        return icmp->next_hop_mtu();
    }
};

TEST_F(PmtudTest, ExactFitIsForwardedAndTheOuterPacketIsTheUnderlayMtu) {
    const Bytes frame = ipv4_frame(sized(1450, true));
    ASSERT_EQ(run(kBlue10Port, frame).verdict, Verdict::forward);
    EXPECT_EQ(wire::Ipv4View::parse(wire::ByteSpan(out_.frame(0)).subspan(14))->total_length(), 1500);
}

TEST_F(PmtudTest, DontFragmentOversizeGetsFragmentationNeededFromTheGateway) {
    const Bytes frame = ipv4_frame(sized(1451, true));
    const auto r = run(kBlue10Port, frame);
    ASSERT_EQ(r.verdict, Verdict::reply) << to_string(r.drop_reason);
    EXPECT_EQ(frag_needed_mtu(frame), 1450);
    EXPECT_EQ(pipeline_.counters().frag_needed_sent, 1u);
    EXPECT_EQ(pipeline_.counters().encapsulated, 0u);
}

TEST_F(PmtudTest, InnerVlanTagLowersTheReportedMtu) {
    Ipv4Spec s = sized(1450, true);
    s.tags = {wire::VlanTag{wire::ethertype::kVlan, 0, false, 5}};
    const Bytes frame = ipv4_frame(s);
    ASSERT_EQ(run(kBlue10Port, frame).verdict, Verdict::reply);
    EXPECT_EQ(frag_needed_mtu(frame), 1446);
    EXPECT_EQ(wire::EthernetView::parse(out_.frame(0))->vlan_id(), 5);
}

TEST_F(PmtudTest, IcmpErrorsAreNotAnsweredWithErrors) {
    Ipv4Spec s = sized(1500, true);
    s.protocol = wire::ip_protocol::kIcmp;
    s.payload = 1500 - 28;
    s.icmp_type = wire::icmpv4_type::kTimeExceeded;
    EXPECT_EQ(run(kBlue10Port, ipv4_frame(s)).drop_reason, DropReason::too_big_no_icmp);
}

TEST_F(PmtudTest, OversizeWithoutDontFragmentIsFragmentedAndReassembles) {
    Ipv4Spec s = sized(4000, false);
    s.options = {0x94, 0x04, 0x00, 0x00, 0x44, 0x08, 0x05, 0x00, 0, 0, 0, 0};  // router alert (copied), timestamp
    const Bytes frame = ipv4_frame(s);
    const auto r = run(kBlue10Port, frame);
    ASSERT_EQ(r.verdict, Verdict::forward) << to_string(r.drop_reason);
    ASSERT_EQ(r.emissions, 3);
    std::vector<Bytes> inner_frames;
    std::optional<std::uint16_t> flow_hash;
    for (std::size_t i = 0; i < out_.emissions().size(); ++i) {
        SCOPED_TRACE(i);
        const Bytes outer = out_.frame(i);
        EXPECT_EQ(out_.emissions()[i].port, kUnderlayPort);
        EXPECT_EQ(frame_problems(outer), std::vector<std::string>{});
        EXPECT_LE(outer.size() - 14, 1500u);
        const auto decap = overlay::decapsulate(outer, {});
        ASSERT_TRUE(decap.ok());
        EXPECT_EQ(decap.packet.vni, 100u);
        if (!flow_hash) flow_hash = decap.packet.flow_hash;
        EXPECT_EQ(decap.packet.flow_hash, *flow_hash);
        const auto eth = wire::EthernetView::parse(decap.packet.inner);
        EXPECT_EQ(eth->destination(), kBlue20Mac);
        EXPECT_EQ(eth->source(), kBlue10Mac);
        const auto ip = wire::Ipv4View::parse(eth->payload());
        EXPECT_LE(ip->total_length(), 1450);
        EXPECT_FALSE(ip->dont_fragment());
        EXPECT_EQ(ip->header_length(), i == 0 ? 32u : 24u);  // the timestamp option is not copied
        inner_frames.emplace_back(decap.packet.inner.begin(), decap.packet.inner.end());
    }
    std::string error;
    const auto packet = reassemble_ipv4(inner_frames, error);
    ASSERT_TRUE(packet) << error;
    EXPECT_EQ(*packet, Bytes(frame.begin() + 14, frame.end()));
    EXPECT_EQ(pipeline_.counters().packets_fragmented, 1u);
    EXPECT_EQ(pipeline_.counters().fragments_sent, 3u);
    EXPECT_EQ(pipeline_.counters().encapsulated, 3u);
}

TEST_F(PmtudTest, AFragmentIsFragmentedFurtherKeepingItsOffsetAndMoreFragments) {
    Ipv4Spec s = sized(3020, false);
    s.protocol = 200;  // opaque payload: only offsets matter
    s.payload = 3000;
    s.more_fragments = true;
    s.fragment_offset = 100;
    const Bytes frame = ipv4_frame(s);
    ASSERT_EQ(run(kBlue10Port, frame).verdict, Verdict::forward);
    ASSERT_EQ(out_.emissions().size(), 3u);
    std::size_t expected_offset = 100;
    for (std::size_t i = 0; i < 3; ++i) {
        const auto decap = overlay::decapsulate(out_.view(i), {});
        const auto ip = wire::Ipv4View::parse(wire::EthernetView::parse(decap.packet.inner)->payload());
        EXPECT_EQ(ip->fragment_offset(), expected_offset);
        EXPECT_TRUE(ip->more_fragments());  // the original was not the last piece either
        expected_offset += ip->payload().size() / 8;
    }
    EXPECT_EQ(expected_offset, 100u + 3000 / 8);
}

TEST_F(PmtudTest, FragmentsNeedEnoughSpareBuffers) {
    SinkStorage two_spares(2);
    const auto r = pipeline_.process(kBlue10Port, ipv4_frame(sized(4000, false)), *fabric_, two_spares.fresh());
    EXPECT_EQ(r.drop_reason, DropReason::no_tx_buffer);
    EXPECT_TRUE(two_spares.emissions().empty());
    EXPECT_EQ(two_spares.sink().spares_used(), 0u);
}

TEST_F(PmtudTest, Ipv6OversizeGetsPacketTooBigAndTheRestIsNotRouted) {
    const wire::Ipv6Address tenant = ipv6("fd00::10");
    const Bytes big = ipv6_udp_frame(kBlue10Mac, kGatewayMac, tenant, ipv6("fd00::20"), 1450 - 48 + 1);
    const auto r = run(kBlue10Port, big);
    ASSERT_EQ(r.verdict, Verdict::reply) << to_string(r.drop_reason);
    const Bytes reply = out_.frame(0);
    EXPECT_EQ(frame_problems(reply), std::vector<std::string>{});
    const auto ip = wire::Ipv6View::parse(wire::EthernetView::parse(reply)->payload());
    EXPECT_EQ(ip->source(), ipv6("fe80::ff:fe00:ff"));
    EXPECT_EQ(ip->destination(), tenant);
    const auto icmp = wire::Icmpv6View::parse(ip->upper_layer_payload());
    EXPECT_EQ(icmp->type(), wire::icmpv6_type::kPacketTooBig);
    EXPECT_EQ(icmp->mtu(), 1450u);
    EXPECT_EQ(icmp->invoking_packet().size(), gateway::kMaxIcmpv6Quote);
    EXPECT_EQ(pipeline_.counters().packet_too_big_sent, 1u);

    const Bytes fits = ipv6_udp_frame(kBlue10Mac, kGatewayMac, tenant, ipv6("fd00::20"), 1450 - 48);
    EXPECT_EQ(run(kBlue10Port, fits).drop_reason, DropReason::ipv6_not_routed);
    Bytes broken = fits;
    broken[14] = 0x40;
    EXPECT_EQ(run(kBlue10Port, broken).drop_reason, DropReason::malformed_ipv6);
}

TEST(PmtudVpcMtuTest, TheVpcMtuIsTheLimitWhenSmaller) {
    std::string text = fabric_text("node1");
    text.replace(text.find("name = \"blue\"\n"), 14, "name = \"blue\"\nmtu = 1400\n");
    auto fabric = load_fabric(text);
    dataplane::Pipeline pipeline(node_config("node1"));
    SinkStorage out;
    ASSERT_EQ(pipeline.process(kBlue10Port, ipv4_frame(sized(1400, true)), *fabric, out.fresh()).verdict, Verdict::forward);
    ASSERT_EQ(pipeline.process(kBlue10Port, ipv4_frame(sized(1401, true)), *fabric, out.fresh()).verdict, Verdict::reply);
    const Bytes reply = out.frame(0);
    const auto ip = wire::Ipv4View::parse(wire::ByteSpan(reply).subspan(14));
    EXPECT_EQ(wire::Icmpv4View::parse(ip->payload())->next_hop_mtu(), 1400);
}

TEST(PmtudRateLimitTest, ErrorsAreRateLimitedPerSourceAndVpc) {
    auto fabric = load_fabric(fabric_text("node1"));
    FakeClock time;
    auto config = node_config("node1");
    config.icmp_error_rate = {2, 3, 64};
    config.clock = [&time] { return time.now; };
    dataplane::Pipeline pipeline(config);
    SinkStorage out;
    const Bytes blue = ipv4_frame(sized(1500, true));
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(pipeline.process(kBlue10Port, blue, *fabric, out.fresh()).verdict, Verdict::reply) << i;
    const auto limited = pipeline.process(kBlue10Port, blue, *fabric, out.fresh());
    EXPECT_EQ(limited.drop_reason, DropReason::icmp_error_rate_limited);
    EXPECT_TRUE(out.emissions().empty());
    // Green's 10.0.0.10 is another tenant with its own budget.
    Ipv4Spec green = sized(1500, true);
    green.src_mac = kGreen10Mac;
    EXPECT_EQ(pipeline.process(kGreen10Port, ipv4_frame(green), *fabric, out.fresh()).verdict, Verdict::reply);
    time.now += 500'000'000;  // one token at 2 per second
    EXPECT_EQ(pipeline.process(kBlue10Port, blue, *fabric, out.fresh()).verdict, Verdict::reply);
    EXPECT_EQ(pipeline.process(kBlue10Port, blue, *fabric, out.fresh()).drop_reason, DropReason::icmp_error_rate_limited);
    const Bytes ipv6_big = ipv6_udp_frame(kBlue10Mac, kGatewayMac, ipv6("fd00::10"), ipv6("fd00::20"), 1500);
    EXPECT_EQ(pipeline.process(kBlue10Port, ipv6_big, *fabric, out.fresh()).drop_reason,
              DropReason::icmp_error_rate_limited);
    EXPECT_EQ(dataplane::drop_count(pipeline.counters().drops, DropReason::icmp_error_rate_limited), 3u);
}

TEST_F(PmtudTest, TranslatedTrafficFromNatIsFragmentedButNeverAnsweredWithErrors) {
    Ipv4Spec s = sized(2000, true);
    s.src = ipv4("8.8.8.8");
    s.src_mac = kGatewayMac;
    EXPECT_EQ(pipeline_.route_from_nat(100, ipv4_frame(s), *fabric_, out_.fresh()).drop_reason,
              DropReason::too_big_no_icmp);
    s.dont_fragment = false;
    const auto r = pipeline_.route_from_nat(100, ipv4_frame(s), *fabric_, out_.fresh());
    EXPECT_EQ(r.verdict, Verdict::forward);
    EXPECT_EQ(r.emissions, 2);
    expect_valid_emissions();
}

}  // namespace
}  // namespace andromeda::testing
