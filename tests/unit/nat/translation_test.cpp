// Round trips through the NAT: UDP, TCP, ICMP echo, tenants sharing ports and echo ids, two VPCs
// with the same private addresses, endpoint-independent mapping, filtering, port forwards,
// hairpinning, and what is refused. Every translated packet's checksums are fully recomputed.
#include <gtest/gtest.h>

#include "nat_test_packets.hpp"

namespace andromeda::nat {
namespace {

using namespace test;
namespace flag = wire::tcp_flag;

class NatTranslation : public ::testing::Test {
protected:
    static constexpr std::uint32_t kVni = 100;
    const Ipv4Address kNat = ip("198.51.100.1");
    const Ipv4Address kTenantA = ip("10.0.0.10");
    const Ipv4Address kTenantB = ip("10.0.0.11");
    const Ipv4Address kServer = ip("10.0.0.20");
    const Ipv4Address kRemote = ip("203.0.113.7");
    const Ipv4Address kRemote2 = ip("203.0.113.99");

    NatEngine nat{small_settings()};

    void SetUp() override { nat.set_rules(one_vpc_rules(kVni, kNat)); }

    NatResult out(Bytes& packet, double t = 1, std::uint32_t vni = kVni) {
        const NatResult r = nat.outbound(vni, packet, at(t));
        if (r.translated()) {
            EXPECT_TRUE(checksums_valid(packet));
        }
        return r;
    }
    NatResult in(Bytes& packet, double t = 1) {
        const NatResult r = nat.inbound(packet, at(t));
        if (r.translated()) {
            EXPECT_TRUE(checksums_valid(packet));
        }
        return r;
    }
    // Sends tenant -> remote and returns the NAT port it left from.
    std::uint16_t open_udp(Ipv4Address tenant, std::uint16_t port, Ipv4Address remote, std::uint16_t remote_port) {
        Bytes p = udp_packet(tenant, port, remote, remote_port);
        EXPECT_TRUE(out(p).translated());
        EXPECT_EQ(endpoints(p).source, kNat);
        return endpoints(p).source_port;
    }
};

TEST_F(NatTranslation, UdpRoundTripKeepsTheTenantPort) {
    Bytes request = udp_packet(kTenantA, 40000, kRemote, 53);
    const NatResult r = out(request);
    ASSERT_TRUE(r.translated());
    EXPECT_FALSE(r.to_tenant);
    EXPECT_EQ(endpoints(request), (Endpoints{kNat, 40000, kRemote, 53}));

    Bytes reply = udp_packet(kRemote, 53, kNat, 40000);
    const NatResult back = in(reply);
    ASSERT_TRUE(back.translated());
    EXPECT_TRUE(back.to_tenant);
    EXPECT_EQ(back.vni, kVni);
    EXPECT_EQ(back.tenant, kTenantA);
    EXPECT_EQ(endpoints(reply), (Endpoints{kRemote, 53, kTenantA, 40000}));
    EXPECT_EQ(nat.counters().ports_preserved, 1u);
    const auto flows = nat.flows(at(1));
    ASSERT_EQ(flows.size(), 1u);
    EXPECT_EQ(flows[0].state, FlowState::replied);
}

TEST_F(NatTranslation, UdpWithoutChecksumStaysWithoutBothWays) {
    Bytes request = udp_packet(kTenantA, 40000, kRemote, 53, 20, false);
    ASSERT_TRUE(out(request).translated());
    EXPECT_EQ(udp_checksum_field(request), 0);
    Bytes reply = udp_packet(kRemote, 53, kNat, 40000, 20, false);
    ASSERT_TRUE(in(reply).translated());
    EXPECT_EQ(udp_checksum_field(reply), 0);
}

TEST_F(NatTranslation, TwoTenantsWithTheSameSourcePortGetDistinctPorts) {
    for (const bool tcp : {false, true}) {
        Bytes a = tcp ? tcp_packet(kTenantA, 40000, kRemote, 443, flag::kSyn) : udp_packet(kTenantA, 40000, kRemote, 443);
        Bytes b = tcp ? tcp_packet(kTenantB, 40000, kRemote, 443, flag::kSyn) : udp_packet(kTenantB, 40000, kRemote, 443);
        ASSERT_TRUE(out(a).translated());
        ASSERT_TRUE(out(b).translated());
        const std::uint16_t port_a = endpoints(a).source_port, port_b = endpoints(b).source_port;
        EXPECT_EQ(port_a, 40000);  // first come keeps its port
        EXPECT_NE(port_b, port_a);
        EXPECT_GE(port_b, kDefaultPortMin);
        // Each reply finds its own tenant.
        for (const auto& [port, tenant] : {std::pair{port_a, kTenantA}, std::pair{port_b, kTenantB}}) {
            Bytes reply = tcp ? tcp_packet(kRemote, 443, kNat, port, flag::kSyn | flag::kAck)
                              : udp_packet(kRemote, 443, kNat, port);
            const NatResult r = in(reply);
            ASSERT_TRUE(r.translated());
            EXPECT_EQ(endpoints(reply), (Endpoints{kRemote, 443, tenant, 40000}));
        }
    }
}

TEST_F(NatTranslation, MappingIsEndpointIndependent) {
    const std::uint16_t first = open_udp(kTenantA, 40000, kRemote, 53);
    EXPECT_EQ(open_udp(kTenantA, 40000, kRemote2, 123), first);   // any destination: same port
    EXPECT_EQ(open_udp(kTenantA, 40000, kRemote, 5353), first);
    EXPECT_NE(open_udp(kTenantB, 40000, kRemote2, 53), first);     // another tenant: another port
    EXPECT_EQ(nat.mapping_count(), 2u);
    EXPECT_EQ(nat.flow_count(), 4u);
}

TEST_F(NatTranslation, FilteringIsAddressAndPortDependentByDefault) {
    const std::uint16_t port = open_udp(kTenantA, 40000, kRemote, 53);
    Bytes other_port = udp_packet(kRemote, 54, kNat, port);
    Bytes other_host = udp_packet(kRemote2, 53, kNat, port);
    const Bytes before = other_host;
    EXPECT_EQ(in(other_port).drop, DropReason::no_flow);
    EXPECT_EQ(in(other_host).drop, DropReason::no_flow);
    EXPECT_EQ(other_host, before);
    EXPECT_EQ(nat.counters().drop_no_flow, 2u);
}

TEST(NatFiltering, EndpointIndependentFilteringLetsAnyoneReachAnExistingMapping) {
    NatSettings settings = small_settings();
    settings.udp_filtering = UdpFiltering::endpoint_independent;
    NatEngine nat(settings);
    nat.set_rules(one_vpc_rules(1, ip("198.51.100.1")));
    Bytes hello = udp_packet(ip("10.0.0.10"), 40000, ip("203.0.113.7"), 3478);  // STUN
    ASSERT_TRUE(nat.outbound(1, hello, at(1)).translated());
    Bytes peer = udp_packet(ip("192.0.2.50"), 9999, ip("198.51.100.1"), 40000);  // a third party
    const NatResult r = nat.inbound(peer, at(2));
    ASSERT_TRUE(r.translated());
    EXPECT_EQ(endpoints(peer), (Endpoints{ip("192.0.2.50"), 9999, ip("10.0.0.10"), 40000}));
    EXPECT_TRUE(checksums_valid(peer));
    // The tenant's answer uses the same mapping and the flow the peer opened.
    Bytes answer = udp_packet(ip("10.0.0.10"), 40000, ip("192.0.2.50"), 9999);
    ASSERT_TRUE(nat.outbound(1, answer, at(3)).translated());
    EXPECT_EQ(endpoints(answer).source_port, 40000);
    EXPECT_EQ(nat.mapping_count(), 1u);
    // TCP stays address-and-port dependent; a port with no mapping stays closed.
    Bytes syn = tcp_packet(ip("192.0.2.50"), 9999, ip("198.51.100.1"), 40000, flag::kSyn);
    EXPECT_EQ(nat.inbound(syn, at(3)).drop, DropReason::no_flow);
    Bytes closed = udp_packet(ip("192.0.2.50"), 9999, ip("198.51.100.1"), 40001);
    EXPECT_EQ(nat.inbound(closed, at(3)).drop, DropReason::no_flow);
}

TEST_F(NatTranslation, TcpFlowFollowsTheHandshakeAndTeardown) {
    auto state = [&] { return nat.flows(at(5)).at(0).state; };
    Bytes syn = tcp_packet(kTenantA, 40000, kRemote, 80, flag::kSyn);
    ASSERT_TRUE(out(syn, 1).translated());
    EXPECT_EQ(state(), FlowState::tcp_syn_sent);
    Bytes syn_ack = tcp_packet(kRemote, 80, kNat, 40000, flag::kSyn | flag::kAck);
    ASSERT_TRUE(in(syn_ack, 1.1).translated());
    EXPECT_EQ(state(), FlowState::tcp_syn_received);
    Bytes ack = tcp_packet(kTenantA, 40000, kRemote, 80, flag::kAck, 100);
    ASSERT_TRUE(out(ack, 1.2).translated());
    EXPECT_EQ(state(), FlowState::tcp_established);
    EXPECT_NEAR(std::chrono::duration<double>(nat.flows(at(1.2))[0].expires_in).count(), 7440.0, 1e-6);
    Bytes fin = tcp_packet(kTenantA, 40000, kRemote, 80, flag::kFin | flag::kAck);
    ASSERT_TRUE(out(fin, 2).translated());
    EXPECT_EQ(state(), FlowState::tcp_fin_wait);
    Bytes fin_back = tcp_packet(kRemote, 80, kNat, 40000, flag::kFin | flag::kAck);
    ASSERT_TRUE(in(fin_back, 3).translated());
    EXPECT_EQ(endpoints(fin_back), (Endpoints{kRemote, 80, kTenantA, 40000}));
    EXPECT_EQ(state(), FlowState::tcp_closing);
    Bytes last_ack = tcp_packet(kTenantA, 40000, kRemote, 80, flag::kAck);
    ASSERT_TRUE(out(last_ack, 4).translated());
    // Closing timeout (30 s) from the last packet, then gone: the next segment is refused.
    Bytes late = tcp_packet(kRemote, 80, kNat, 40000, flag::kAck);
    Bytes in_time = late;
    ASSERT_TRUE(in(in_time, 4 + 30 - 1e-6).translated());  // refreshes to 64 s - 1 us
    EXPECT_EQ(in(late, 64).drop, DropReason::no_flow);
    EXPECT_EQ(nat.expire(at(65)), 0u);  // already reclaimed when found expired
    EXPECT_EQ(nat.flow_count(), 0u);
    EXPECT_EQ(nat.mapping_count(), 0u);
}

TEST_F(NatTranslation, RstMovesTheFlowToClosingTimeoutAndASynReopensIt) {
    Bytes syn = tcp_packet(kTenantA, 40000, kRemote, 80, flag::kSyn);
    ASSERT_TRUE(out(syn, 1).translated());
    Bytes rst = tcp_packet(kRemote, 80, kNat, 40000, flag::kRst | flag::kAck);
    ASSERT_TRUE(in(rst, 2).translated());
    EXPECT_EQ(nat.flows(at(2))[0].state, FlowState::tcp_reset);
    Bytes again = tcp_packet(kTenantA, 40000, kRemote, 80, flag::kSyn);
    ASSERT_TRUE(out(again, 3).translated());
    EXPECT_EQ(nat.flows(at(3))[0].state, FlowState::tcp_syn_sent);
    EXPECT_EQ(nat.flow_count(), 1u);
}

TEST_F(NatTranslation, TcpFlowMustStartWithSyn) {
    Bytes stray = tcp_packet(kTenantA, 40000, kRemote, 80, flag::kAck, 10);
    const Bytes before = stray;
    EXPECT_EQ(out(stray).drop, DropReason::tcp_not_syn);
    EXPECT_EQ(stray, before);  // never forwarded untranslated: the pipeline drops it
    EXPECT_EQ(nat.flow_count(), 0u);
}

TEST_F(NatTranslation, IcmpEchoRoundTripTranslatesTheIdentifier) {
    Bytes ping = icmp_echo(kTenantA, kRemote, wire::icmpv4_type::kEchoRequest, 7, 1);
    ASSERT_TRUE(out(ping).translated());
    const Endpoints sent = endpoints(ping);
    EXPECT_EQ(sent.source, kNat);
    Bytes pong = icmp_echo(kRemote, kNat, wire::icmpv4_type::kEchoReply, sent.source_port, 1);
    const NatResult r = in(pong);
    ASSERT_TRUE(r.translated());
    EXPECT_EQ(endpoints(pong), (Endpoints{kRemote, 7, kTenantA, 7}));
    EXPECT_EQ(nat.flows(at(1))[0].state, FlowState::replied);
}

TEST_F(NatTranslation, TwoTenantsPingingTheSameHostWithTheSameIdBothGetReplies) {
    Bytes ping_a = icmp_echo(kTenantA, kRemote, wire::icmpv4_type::kEchoRequest, 7, 1);
    Bytes ping_b = icmp_echo(kTenantB, kRemote, wire::icmpv4_type::kEchoRequest, 7, 1);
    ASSERT_TRUE(out(ping_a).translated());
    ASSERT_TRUE(out(ping_b).translated());
    const std::uint16_t id_a = endpoints(ping_a).source_port, id_b = endpoints(ping_b).source_port;
    ASSERT_NE(id_a, id_b);
    Bytes pong_b = icmp_echo(kRemote, kNat, wire::icmpv4_type::kEchoReply, id_b, 1);
    Bytes pong_a = icmp_echo(kRemote, kNat, wire::icmpv4_type::kEchoReply, id_a, 1);
    EXPECT_EQ(in(pong_b).tenant, kTenantB);
    EXPECT_EQ(in(pong_a).tenant, kTenantA);
    EXPECT_EQ(endpoints(pong_a).destination_port, 7);
    EXPECT_EQ(endpoints(pong_b).destination_port, 7);
}

TEST(NatVpcs, TenantsOfTwoVpcsWithTheSameAddressAndPortStayApart) {
    for (const bool shared_address : {false, true}) {
        NatEngine nat(small_settings());
        const Ipv4Address nat_blue = ip("198.51.100.1"), nat_red = shared_address ? nat_blue : ip("198.51.100.2");
        nat.set_rules(std::make_shared<const NatRules>(
            std::vector<VpcNatConfig>{{100, nat_blue, 1024, 65535, {}}, {200, nat_red, 1024, 65535, {}}}));
        Bytes blue = udp_packet(ip("10.0.0.10"), 40000, ip("203.0.113.7"), 53);
        Bytes red = udp_packet(ip("10.0.0.10"), 40000, ip("203.0.113.7"), 53);
        ASSERT_TRUE(nat.outbound(100, blue, at(1)).translated());
        ASSERT_TRUE(nat.outbound(200, red, at(1)).translated());
        EXPECT_EQ(endpoints(blue).source, nat_blue);
        EXPECT_EQ(endpoints(red).source, nat_red);
        if (shared_address) {
            EXPECT_NE(endpoints(blue).source_port, endpoints(red).source_port);
        }
        Bytes to_red = udp_packet(ip("203.0.113.7"), 53, nat_red, endpoints(red).source_port);
        Bytes to_blue = udp_packet(ip("203.0.113.7"), 53, nat_blue, endpoints(blue).source_port);
        EXPECT_EQ(nat.inbound(to_red, at(2)).vni, 200u);
        EXPECT_EQ(nat.inbound(to_blue, at(2)).vni, 100u);
        EXPECT_EQ(endpoints(to_red).destination, ip("10.0.0.10"));
    }
}

TEST_F(NatTranslation, RefusesWhatItCannotTranslateAndLeavesItUntouched) {
    Bytes gre = ipv4_packet(kTenantA, kRemote, 47, 24);
    Bytes frag = udp_packet(kTenantA, 40000, kRemote, 53);
    frag[6] |= 0x20;  // MF
    Bytes truncated = udp_packet(kTenantA, 40000, kRemote, 53);
    truncated.resize(24);
    Bytes redirect = icmp_echo(kTenantA, kRemote, wire::icmpv4_type::kRedirect, 0, 0);
    Bytes unknown_vpc = udp_packet(kTenantA, 40000, kRemote, 53);
    for (auto [packet, vni, reason] : {std::tuple{&gre, kVni, DropReason::unsupported_protocol},
                                       std::tuple{&frag, kVni, DropReason::fragment},
                                       std::tuple{&truncated, kVni, DropReason::malformed},
                                       std::tuple{&redirect, kVni, DropReason::unsupported_icmp},
                                       std::tuple{&unknown_vpc, 999u, DropReason::no_nat_config}}) {
        const Bytes before = *packet;
        EXPECT_EQ(out(*packet, 1, vni).drop, reason);
        EXPECT_EQ(*packet, before);
    }
    Bytes not_ours = udp_packet(kRemote, 53, ip("198.51.100.77"), 40000);
    EXPECT_EQ(in(not_ours).drop, DropReason::not_nat_address);
    Bytes ping_nat = icmp_echo(kRemote, kNat, wire::icmpv4_type::kEchoRequest, 1, 1);
    EXPECT_EQ(in(ping_nat).drop, DropReason::no_flow);
    const NatCounters c = nat.counters();
    EXPECT_EQ(c.total_drops(), 7u);
    EXPECT_EQ(c.translated_outbound + c.translated_inbound, 0u);
}

TEST(NatNoRules, DropsEverythingUntilRulesArrive) {
    NatEngine nat(small_settings());
    Bytes p = udp_packet(ip("10.0.0.10"), 40000, ip("203.0.113.7"), 53);
    EXPECT_EQ(nat.outbound(1, p, at(1)).drop, DropReason::no_nat_config);
    EXPECT_EQ(nat.inbound(p, at(1)).drop, DropReason::no_nat_config);
}

}  // namespace
}  // namespace andromeda::nat
