// NatPipeline at its edges: ICMP errors for translated flows, checked byte for byte against
// scapy's packets (tests/data/nat/make_icmp_errors.py); port exhaustion and a full table, which
// drop by name and never leak an untranslated packet; a reload removing an endpoint.
#include <fstream>

#include "fabric/diff.hpp"
#include "unit/dataplane/nat_pipeline_fixture.hpp"

namespace andromeda::testing::natworld {
namespace {

using dataplane::NatPath;
using dataplane::Verdict;
using nat::test::Endpoints;
using nat::test::endpoints;

const wire::Ipv4Address kNat = ipv4("198.51.100.1");
const wire::Ipv4Address kRemote = ipv4("203.0.113.7");
const wire::Ipv4Address kBlue10 = ipv4("10.0.0.10");
const wire::Ipv4Address kBlue11 = ipv4("10.0.0.11");

Bytes load_hex(const std::string& name) {
    std::ifstream in(std::string(ANDROMEDA_SOURCE_DIR) + "/tests/data/nat/" + name + ".hex");
    std::string hex;
    in >> hex;
    Bytes out;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
        out.push_back(static_cast<std::uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
    if (out.empty()) ADD_FAILURE() << "missing or empty golden packet " << name;
    return out;
}

// The scapy packets assume one port to allocate: 61000.
class NatIcmpErrors : public NatPipelineTest {
protected:
    NatIcmpErrors() : NatPipelineTest("[61000, 61000]") {}
};

TEST_P(NatIcmpErrors, ErrorsForTranslatedFlowsReachTheTenantTranslatedBack) {
    for (const std::string scenario : {"udp", "tcp", "ping"}) {
        SCOPED_TRACE(scenario);
        const Bytes out = expect_on_uplink(from_tenant(kBlue10Port, kBlue10Mac, load_hex(scenario + "_tenant")));
        EXPECT_EQ(out, load_hex(scenario + "_translated"));
        const std::string error = scenario == "udp" ? "udp_frag_needed" : scenario + "_time_exceeded";
        const Sent back = from_outside(load_hex(error));
        // Outer header, quoted header and port/id, quoted and outer checksums: as scapy made them.
        EXPECT_EQ(expect_delivered(back, kBlue10Port, kBlue10Mac), load_hex(error + "_to_tenant"));
    }
    EXPECT_EQ(engine_.counters().icmp_errors_translated, 3u);
}

TEST_P(NatIcmpErrors, PortExhaustionDropsByNameAndTheExistingFlowKeepsWorking) {
    const Bytes first = expect_on_uplink(from_tenant(kBlue10Port, kBlue10Mac, nat::test::udp_packet(kBlue10, 40000, kRemote, 53)));
    EXPECT_EQ(endpoints(first).source_port, 61000);
    const Sent refused = from_tenant(kBlue11Port, kBlue11Mac, nat::test::udp_packet(kBlue11, 40000, kRemote, 53));
    EXPECT_EQ(refused.result.verdict, Verdict::drop);
    EXPECT_EQ(refused.result.nat_drop, nat::DropReason::ports_exhausted);
    EXPECT_TRUE(refused.frames.empty()) << "an untranslated packet left";
    EXPECT_EQ(node2_.stage.counters().nat_drop(nat::DropReason::ports_exhausted), 1u);
    EXPECT_EQ(engine_.counters().drop_ports_exhausted, 1u);
    // The mapped flow still works both ways.
    expect_on_uplink(from_tenant(kBlue10Port, kBlue10Mac, nat::test::udp_packet(kBlue10, 40000, kRemote, 53)));
    const Bytes in = expect_delivered(from_outside(nat::test::udp_packet(kRemote, 53, kNat, 61000)), kBlue10Port, kBlue10Mac);
    EXPECT_EQ(endpoints(in), (Endpoints{kRemote, 53, kBlue10, 40000}));
}

// PMTUD for inbound traffic: a DF packet from outside that fits the uplink but not the overlay
// towards its endpoint's node is answered with Fragmentation Needed (mtu 1450) out of the uplink,
// translated as if it came from the NAT address about the packet as the outside sent it; the
// sender can then lower its segment size. A packet for an endpoint on the gateway node itself
// has no overlay to cross and is delivered whole.
TEST_P(NatIcmpErrors, InboundTooBigForTheOverlayGetsFragNeededBackOutOfTheUplink) {
    const Bytes syn = expect_on_uplink(from_tenant(kBlue10Port, kBlue10Mac, nat::test::tcp_packet(kBlue10, 40000, kRemote, 80, wire::tcp_flag::kSyn)));
    const std::uint16_t nat_port = endpoints(syn).source_port;
    // 1500 bytes, DF set (the test packets always set it): fits the uplink, not the overlay (1450).
    const Bytes big = nat::test::tcp_packet(kRemote, 80, kNat, nat_port, wire::tcp_flag::kAck, 1460);
    ASSERT_EQ(big.size(), 1500u);
    const Sent sent = send(node2_, kUplink, ethernet_around(kUplinkMac, kRouterMac, big));
    EXPECT_EQ(sent.result.verdict, Verdict::reply);
    EXPECT_EQ(sent.result.path, NatPath::to_uplink);
    ASSERT_EQ(sent.frames.size(), 1u);
    ASSERT_EQ(sent.frames[0].first, kUplink) << "nothing may go towards the tenant";
    const Bytes& frame = sent.frames[0].second;
    EXPECT_TRUE(std::equal(kRouterMac.bytes().begin(), kRouterMac.bytes().end(), frame.begin()));
    EXPECT_TRUE(std::equal(kUplinkMac.bytes().begin(), kUplinkMac.bytes().end(), frame.begin() + 6));
    const Bytes error = ip_of(frame);
    EXPECT_TRUE(nat::test::checksums_valid(error));
    for (const char* private_ip : {"10.0.0.1", "10.0.0.10"})
        EXPECT_FALSE(contains_address(error, ipv4(private_ip))) << private_ip << " leaked to the uplink";
    const auto outer = wire::Ipv4View::parse(error);
    ASSERT_TRUE(outer);
    EXPECT_EQ(outer->source(), kNat);
    EXPECT_EQ(outer->destination(), kRemote);
    ASSERT_EQ(outer->protocol(), wire::ip_protocol::kIcmp);
    const auto icmp = outer->payload();
    EXPECT_EQ(icmp[0], 3);  // destination unreachable
    EXPECT_EQ(icmp[1], 4);  // fragmentation needed and DF set
    EXPECT_EQ(wire::load_be16(&icmp[6]), 1450);
    // The quote is the packet as the outside sent it: remote:80 -> NAT address:nat port.
    const Bytes quoted(icmp.begin() + 8, icmp.end());
    EXPECT_TRUE(std::equal(big.begin(), big.begin() + 28, quoted.begin()))
        << "the quoted header and ports differ from what the outside sent";
    EXPECT_EQ(engine_.counters().icmp_errors_translated, 1u);
    EXPECT_EQ(node2_.pipeline.counters().frag_needed_sent, 1u);

    // Without DF it is fragmented and delivered, as before.
    Bytes no_df = big;
    no_df[6] = 0;
    no_df[10] = no_df[11] = 0;
    wire::store_be16(&no_df[10], wire::internet_checksum(wire::ByteSpan(no_df).first(20)));
    const Sent fragmented = send(node2_, kUplink, ethernet_around(kUplinkMac, kRouterMac, no_df));
    EXPECT_EQ(fragmented.result.verdict, Verdict::forward);
    EXPECT_EQ(fragmented.result.path, NatPath::to_tenant);
    EXPECT_EQ(fragmented.frames.size(), 2u);

    // The UDP forward 5353 -> 10.0.0.20:53 is on the gateway node: delivered whole, no error.
    const Bytes local = nat::test::udp_packet(kRemote, 999, kNat, 5353, 1472);
    const Sent delivered = send(node2_, kUplink, ethernet_around(kUplinkMac, kRouterMac, local));
    EXPECT_EQ(delivered.result.verdict, Verdict::deliver);
    ASSERT_EQ(delivered.frames.size(), 1u);
    EXPECT_EQ(delivered.frames[0].first, kBlue20Port);
    EXPECT_EQ(delivered.frames[0].second.size(), 14u + 1500u);
    EXPECT_EQ(node2_.pipeline.counters().frag_needed_sent, 1u);
}

class NatTableFull : public NatPipelineTest {
protected:
    NatTableFull() : NatPipelineTest("[1024, 65535]", 2) {}
};

TEST_P(NatTableFull, NewFlowsDropByNameAndExistingFlowsKeepWorking) {
    expect_on_uplink(from_tenant(kBlue10Port, kBlue10Mac, nat::test::udp_packet(kBlue10, 5000, kRemote, 53)));
    const Bytes second = expect_on_uplink(from_tenant(kBlue10Port, kBlue10Mac, nat::test::udp_packet(kBlue10, 5001, kRemote, 53)));
    ASSERT_EQ(endpoints(second).source_port, 5001);
    const Sent refused = from_tenant(kBlue11Port, kBlue11Mac, nat::test::udp_packet(kBlue11, 5002, kRemote, 53));
    EXPECT_EQ(refused.result.verdict, Verdict::drop);
    EXPECT_EQ(refused.result.nat_drop, nat::DropReason::table_full);
    EXPECT_TRUE(refused.frames.empty()) << "an untranslated packet left";
    EXPECT_EQ(node2_.stage.counters().nat_drop(nat::DropReason::table_full), 1u);
    const Sent reply = from_outside(nat::test::udp_packet(kRemote, 53, kNat, 5001));
    EXPECT_EQ(reply.result.nat_drop, nat::DropReason::none) << nat::to_string(reply.result.nat_drop);
    const Bytes in = expect_delivered(reply, kBlue10Port, kBlue10Mac);
    EXPECT_EQ(endpoints(in), (Endpoints{kRemote, 53, kBlue10, 5001}));
}

using NatReload = NatPipelineTest;

TEST_P(NatReload, RemovingAnEndpointExpiresItsFlowsAndOnlyThose) {
    expect_on_uplink(from_tenant(kBlue10Port, kBlue10Mac, nat::test::udp_packet(kBlue10, 2000, kRemote, 53)));
    expect_on_uplink(from_tenant(kBlue11Port, kBlue11Mac, nat::test::udp_packet(kBlue11, 2001, kRemote, 53)));
    ASSERT_EQ(engine_.flow_count(), 2u);

    auto reloaded = load_fabric(nat_fabric_text("node2", "[1024, 65535]", /*drop_blue10=*/true), 2);
    ASSERT_NE(reloaded, nullptr);
    const fabric::FabricDiff diff = fabric::diff_fabrics(node2_.fabric.get(), *reloaded);
    ASSERT_EQ(diff.endpoints_removed.size(), 1u);
    node2_.fabric = reloaded;
    EXPECT_EQ(node2_.stage.on_reload(diff), 1u);
    EXPECT_EQ(engine_.flow_count(), 1u);
    EXPECT_EQ(node2_.stage.counters().endpoint_flows_expired, 1u);

    const Sent dead = from_outside(nat::test::udp_packet(kRemote, 53, kNat, 2000));
    EXPECT_EQ(dead.result.verdict, Verdict::drop);
    EXPECT_EQ(dead.result.nat_drop, nat::DropReason::no_flow);
    EXPECT_TRUE(dead.frames.empty());
    const Bytes alive = expect_delivered(from_outside(nat::test::udp_packet(kRemote, 53, kNat, 2001)), kBlue11Port, kBlue11Mac);
    EXPECT_EQ(endpoints(alive), (Endpoints{kRemote, 53, kBlue11, 2001}));
    // The new generation's rules were installed when node2 first saw it.
    EXPECT_EQ(node2_.stage.counters().rules_installed, 2u);
}

TEST_P(NatReload, RulesFollowTheSnapshot) {
    // A reload that moves blue's NAT address: new flows leave from the new one.
    std::string text = nat_fabric_text("node2");
    text.replace(text.find("address = \"198.51.100.1\""), 24, "address = \"198.51.100.9\"");
    auto reloaded = load_fabric(text, 2);
    ASSERT_NE(reloaded, nullptr);
    node2_.fabric = reloaded;
    const Sent sent = send(node2_, kBlue20Port,
                           ethernet_around(kGatewayMac, kBlue20Mac, nat::test::udp_packet(ipv4("10.0.0.20"), 3000, kRemote, 53)));
    EXPECT_EQ(endpoints(expect_on_uplink(sent)).source, ipv4("198.51.100.9"));
}

const auto kModes = ::testing::Values(Mode::copy, Mode::in_place, Mode::batch);
INSTANTIATE_TEST_SUITE_P(Modes, NatIcmpErrors, kModes, mode_name);
INSTANTIATE_TEST_SUITE_P(Modes, NatTableFull, kModes, mode_name);
INSTANTIATE_TEST_SUITE_P(Modes, NatReload, kModes, mode_name);

}  // namespace
}  // namespace andromeda::testing::natworld
