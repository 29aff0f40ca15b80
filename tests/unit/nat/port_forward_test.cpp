// DNAT port forwards (`nat address:port (tcp|udp) -> endpoint ip:port`), both ways, on one and on
// several shards (the forwarded port and the endpoint's port may belong to different shards),
// and hairpinning (a tenant reaching a forward through the NAT address).
#include <gtest/gtest.h>

#include "nat_test_packets.hpp"

namespace andromeda::nat {
namespace {

using namespace test;
namespace flag = wire::tcp_flag;

constexpr std::uint32_t kVni = 100;
const Ipv4Address kNat = ip("198.51.100.1");
const Ipv4Address kServer = ip("10.0.0.20");
const Ipv4Address kClient = ip("10.0.0.10");
const Ipv4Address kRemote = ip("203.0.113.7");

// 8088 and 80 are owned by different shards of four ((port >> 3) % 4: 3 and 2).
class PortForward : public ::testing::TestWithParam<std::size_t> {
protected:
    NatEngine nat{small_settings(1024, GetParam())};

    void SetUp() override {
        nat.set_rules(one_vpc_rules(kVni, kNat, kDefaultPortMin, kDefaultPortMax,
                                    {{Protocol::tcp, 8088, kServer, 80}, {Protocol::udp, 5353, kServer, 53}}));
    }
    NatResult in(Bytes& p, double t = 1) {
        const NatResult r = nat.inbound(p, at(t));
        if (r.translated()) {
            EXPECT_TRUE(checksums_valid(p));
        }
        return r;
    }
    NatResult out(Bytes& p, double t = 1) {
        const NatResult r = nat.outbound(kVni, p, at(t));
        if (r.translated()) {
            EXPECT_TRUE(checksums_valid(p));
        }
        return r;
    }
};

TEST_P(PortForward, TcpForwardBothWays) {
    Bytes syn = tcp_packet(kRemote, 5555, kNat, 8088, flag::kSyn);
    const NatResult r = in(syn);
    ASSERT_TRUE(r.translated()) << to_string(r.drop);
    EXPECT_TRUE(r.to_tenant);
    EXPECT_EQ(r.vni, kVni);
    EXPECT_EQ(r.tenant, kServer);
    EXPECT_EQ(endpoints(syn), (Endpoints{kRemote, 5555, kServer, 80}));

    Bytes syn_ack = tcp_packet(kServer, 80, kRemote, 5555, flag::kSyn | flag::kAck);
    const NatResult back = out(syn_ack);
    ASSERT_TRUE(back.translated()) << to_string(back.drop);
    EXPECT_FALSE(back.to_tenant);
    EXPECT_EQ(endpoints(syn_ack), (Endpoints{kNat, 8088, kRemote, 5555}));

    Bytes ack = tcp_packet(kRemote, 5555, kNat, 8088, flag::kAck);
    ASSERT_TRUE(in(ack).translated());
    const auto flows = nat.flows(at(1));
    ASSERT_EQ(flows.size(), 1u);
    EXPECT_EQ(flows[0].origin, Origin::inbound);
    EXPECT_TRUE(flows[0].port_forward);
    EXPECT_EQ(flows[0].state, FlowState::tcp_established);
    EXPECT_EQ(flows[0].original, (FlowEndpoints{kRemote, 5555, kNat, 8088}));
    EXPECT_EQ(flows[0].translated, (FlowEndpoints{kRemote, 5555, kServer, 80}));
}

TEST_P(PortForward, UdpForwardBothWaysAndOnlyItsProtocol) {
    Bytes query = udp_packet(kRemote, 40000, kNat, 5353);
    ASSERT_TRUE(in(query).translated());
    EXPECT_EQ(endpoints(query), (Endpoints{kRemote, 40000, kServer, 53}));
    Bytes answer = udp_packet(kServer, 53, kRemote, 40000);
    ASSERT_TRUE(out(answer).translated());
    EXPECT_EQ(endpoints(answer), (Endpoints{kNat, 5353, kRemote, 40000}));
    Bytes wrong_protocol = tcp_packet(kRemote, 40000, kNat, 5353, flag::kSyn);
    EXPECT_EQ(in(wrong_protocol).drop, DropReason::no_flow);
}

TEST_P(PortForward, EndpointsIcmpErrorLeavesThroughTheForward) {
    Bytes query = udp_packet(kRemote, 40000, kNat, 5353);
    ASSERT_TRUE(in(query).translated());
    Bytes unreachable = icmp_error(kServer, kRemote, wire::icmpv4_type::kDestinationUnreachable, 3, 0, query, 28);
    const NatResult r = out(unreachable);
    ASSERT_TRUE(r.translated()) << to_string(r.drop);
    EXPECT_EQ(endpoints(unreachable).source, kNat);
    const auto quoted = wire::Ipv4View::parse_quoted(wire::ByteSpan(unreachable).subspan(28));
    ASSERT_TRUE(quoted);
    EXPECT_EQ(quoted->destination(), kNat);
    EXPECT_EQ(wire::load_be16(&quoted->payload()[2]), 5353);
}

TEST_P(PortForward, ForwardNeedsASynForTcp) {
    Bytes ack = tcp_packet(kRemote, 5555, kNat, 8088, flag::kAck);
    EXPECT_EQ(in(ack).drop, DropReason::tcp_not_syn);
}

TEST_P(PortForward, ForwardedEndpointOpensOutboundFlowsFromItsForwardedPort) {
    // The endpoint's own connection from port 80 uses the static mapping (8088), so an outside
    // peer sees one consistent address for the service.
    Bytes syn = tcp_packet(kServer, 80, kRemote, 443, flag::kSyn);
    ASSERT_TRUE(out(syn).translated());
    EXPECT_EQ(endpoints(syn), (Endpoints{kNat, 8088, kRemote, 443}));
    Bytes reply = tcp_packet(kRemote, 443, kNat, 8088, flag::kSyn | flag::kAck);
    ASSERT_TRUE(in(reply).translated());
    EXPECT_EQ(endpoints(reply).destination, kServer);
    EXPECT_EQ(endpoints(reply).destination_port, 80);
}

TEST_P(PortForward, ForwardedPortsAreNeverAllocatedToOthers) {
    // A tenant asking for source port 8088 or 5353 must not get it: they are forwarded.
    Bytes a = tcp_packet(kClient, 8088, kRemote, 80, flag::kSyn);
    Bytes b = udp_packet(kClient, 5353, kRemote, 53);
    ASSERT_TRUE(out(a).translated());
    ASSERT_TRUE(out(b).translated());
    EXPECT_NE(endpoints(a).source_port, 8088);
    EXPECT_NE(endpoints(b).source_port, 5353);
}

TEST_P(PortForward, HairpinReachesTheForwardWithTheNatAddressAsSource) {
    Bytes syn = tcp_packet(kClient, 40000, kNat, 8088, flag::kSyn);
    const NatResult r = out(syn);
    ASSERT_TRUE(r.translated()) << to_string(r.drop);
    EXPECT_TRUE(r.to_tenant);
    EXPECT_EQ(r.tenant, kServer);
    EXPECT_EQ(r.vni, kVni);
    const Endpoints delivered = endpoints(syn);
    EXPECT_EQ(delivered.source, kNat);  // RFC 4787 REQ-9b: external source address
    EXPECT_EQ(delivered.destination, kServer);
    EXPECT_EQ(delivered.destination_port, 80);
    // The server answers the NAT address; the answer hairpins back to the client.
    Bytes syn_ack = tcp_packet(kServer, 80, kNat, delivered.source_port, flag::kSyn | flag::kAck);
    const NatResult back = out(syn_ack);
    ASSERT_TRUE(back.translated()) << to_string(back.drop);
    EXPECT_TRUE(back.to_tenant);
    EXPECT_EQ(back.tenant, kClient);
    EXPECT_EQ(endpoints(syn_ack), (Endpoints{kNat, 8088, kClient, 40000}));
    EXPECT_EQ(nat.counters().hairpinned, 2u);
}

INSTANTIATE_TEST_SUITE_P(Shards, PortForward, ::testing::Values(1u, 4u),
                         [](const auto& test_info) { return std::to_string(test_info.param) + "_shards"; });

}  // namespace
}  // namespace andromeda::nat
