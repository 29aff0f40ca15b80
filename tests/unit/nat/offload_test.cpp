// Offload to the kernel, what is requested and when: off by default; UDP and ICMP echo flows
// once created, TCP once established, port forwards with their origin, never hairpins; each
// flow requested once; FIN / RST / endpoint removal hand out a removal (the flow living on
// where it should); a flow that ends before the daemon drains costs nothing; an ended flow
// keeps its NAT port until its removal is out; the queue's limit defers installs, never
// removals, and removals come out first.
#include <gtest/gtest.h>

#include <set>

#include "offload_fixture.hpp"

namespace andromeda::nat {
namespace {

using namespace test;
using Kind = OffloadChange::Kind;

TEST(OffloadOff, IsTheDefaultAndChangesNothing) {
    NatEngine nat(small_settings());
    nat.set_rules(one_vpc_rules(100, ip("198.51.100.1")));
    EXPECT_FALSE(NatSettings{}.offload.enabled);
    Bytes p = udp_packet(ip("10.0.0.10"), 40000, ip("203.0.113.7"), 53);
    ASSERT_TRUE(nat.outbound(100, p, at(1)).translated());
    std::vector<OffloadChange> out(8);
    EXPECT_EQ(nat.drain_offload_changes(out), 0u);
    EXPECT_EQ(nat.pending_offload_changes(), 0u);
    EXPECT_FALSE(nat.flows(at(1))[0].offloaded);
    const OffloadedFlow flow{100, Protocol::udp, Origin::outbound, false, ip("10.0.0.10"), 40000,
                             ip("198.51.100.1"), 40000, ip("203.0.113.7"), 53};
    EXPECT_FALSE(nat.touch_offloaded(flow, OffloadDirection::outbound, at(1), {}, at(1)));
    EXPECT_FALSE(nat.adopt(flow, FlowState::replied, at(1), at(1)));
    // Exact timeout, no grace.
    Bytes reply = udp_packet(ip("203.0.113.7"), 53, ip("198.51.100.1"), 40000);
    EXPECT_EQ(nat.inbound(reply, at(121)).drop, DropReason::no_flow);
}

using Offload = OffloadTest;

TEST_F(Offload, UdpFlowIsRequestedOnceWhenCreated) {
    const std::uint16_t nat_port = open_udp(kTenant, 40000, kRemote, 53);
    const auto changes = drain();
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].kind, Kind::install);
    EXPECT_EQ(changes[0].reason, OffloadReason::new_flow);
    EXPECT_EQ(changes[0].flow, udp_flow(40000, nat_port));
    // The keys are the packets as they arrive.
    EXPECT_EQ(changes[0].flow.outbound_key(),
              (OffloadKey{OffloadDirection::outbound, kVni, Protocol::udp, kTenant, 40000, kRemote, 53}));
    EXPECT_EQ(changes[0].flow.inbound_key(),
              (OffloadKey{OffloadDirection::inbound, 0, Protocol::udp, kRemote, 53, kNat, nat_port}));
    // More packets either way: no second request.
    ASSERT_TRUE(out(udp_packet(kTenant, 40000, kRemote, 53), kT0 + 1).translated());
    ASSERT_TRUE(in(udp_packet(kRemote, 53, kNat, nat_port), kT0 + 1).translated());
    EXPECT_TRUE(drain().empty());
    const auto flows = nat.flows(at(kT0 + 1));
    ASSERT_EQ(flows.size(), 1u);
    EXPECT_TRUE(flows[0].offloaded);
    EXPECT_EQ(nat.counters().offload_installs, 1u);
}

TEST_F(Offload, IcmpEchoCarriesTheIdentifierAsTenantAndNatPort) {
    ASSERT_TRUE(out(icmp_echo(kTenant, kRemote, wire::icmpv4_type::kEchoRequest, 4000, 1), kT0).translated());
    ASSERT_TRUE(out(icmp_echo(ip("10.0.0.11"), kRemote, wire::icmpv4_type::kEchoRequest, 4000, 1), kT0).translated());
    const std::uint16_t second_id = endpoints(last).source_port;
    ASSERT_NE(second_id, 4000);  // the first tenant kept its own id
    const auto changes = drain();
    ASSERT_EQ(changes.size(), 2u);
    const OffloadedFlow first{kVni, Protocol::icmp, Origin::outbound, false, kTenant, 4000, kNat, 4000, kRemote, 0};
    const OffloadedFlow second{kVni, Protocol::icmp, Origin::outbound, false, ip("10.0.0.11"), 4000, kNat, second_id,
                               kRemote, 0};
    EXPECT_EQ(changes[0].flow, first);
    EXPECT_EQ(changes[1].flow, second);
    EXPECT_EQ(second.outbound_key(),
              (OffloadKey{OffloadDirection::outbound, kVni, Protocol::icmp, ip("10.0.0.11"), 4000, kRemote, 0}));
    EXPECT_EQ(second.inbound_key(),
              (OffloadKey{OffloadDirection::inbound, 0, Protocol::icmp, kRemote, 0, kNat, second_id}));
}

TEST_F(Offload, TcpIsRequestedOnlyOnceEstablished) {
    ASSERT_TRUE(out(tcp_packet(kTenant, 40000, kRemote, 443, flag::kSyn), kT0).translated());
    const std::uint16_t nat_port = endpoints(last).source_port;
    EXPECT_TRUE(drain().empty());
    ASSERT_TRUE(in(tcp_packet(kRemote, 443, kNat, nat_port, flag::kSyn | flag::kAck), kT0).translated());
    EXPECT_TRUE(drain().empty());
    EXPECT_FALSE(nat.flows(at(kT0))[0].offloaded);
    ASSERT_TRUE(out(tcp_packet(kTenant, 40000, kRemote, 443, flag::kAck), kT0).translated());
    const auto changes = drain();
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].kind, Kind::install);
    EXPECT_EQ(changes[0].reason, OffloadReason::tcp_established);
    EXPECT_EQ(changes[0].flow, tcp_flow(40000, nat_port, 443));
}

TEST_F(Offload, PortForwardFlowsCarryTheirOriginOnEveryShardCount) {
    for (const std::size_t shards : {1u, 4u}) {  // 8088 and 80: shards 3 and 2 of four
        NatEngine engine(offload_settings(shards));
        engine.set_rules(rules());
        Bytes syn = tcp_packet(kRemote, 5555, kNat, 8088, flag::kSyn);
        ASSERT_TRUE(engine.inbound(syn, at(kT0)).translated());
        Bytes syn_ack = tcp_packet(kServer, 80, kRemote, 5555, flag::kSyn | flag::kAck);
        ASSERT_TRUE(engine.outbound(kVni, syn_ack, at(kT0)).translated());
        Bytes ack = tcp_packet(kRemote, 5555, kNat, 8088, flag::kAck);
        ASSERT_TRUE(engine.inbound(ack, at(kT0)).translated());
        std::vector<OffloadChange> out(8);
        ASSERT_EQ(engine.drain_offload_changes(out), 1u) << shards;
        const OffloadedFlow expected{kVni, Protocol::tcp, Origin::inbound, true, kServer, 80, kNat, 8088, kRemote, 5555};
        EXPECT_EQ(out[0].flow, expected);
        EXPECT_EQ(out[0].reason, OffloadReason::tcp_established);
        EXPECT_TRUE(engine.touch_offloaded(expected, OffloadDirection::outbound, at(kT0), {3, 300}, at(kT0)));
    }
}

// One endpoint port behind three forwards, over four shards: a remote reaching it through each
// gets three flows with the same tenant-side tuple, one per shard. The engine answers with the
// one in the endpoint port's shard; only that one goes to the kernel (whose key is that tuple).
TEST(OffloadForwards, OnlyTheFlowTheEngineAnswersWithIsOffloaded) {
    NatEngine nat(offload_settings(4));
    const Ipv4Address server = ip("10.0.0.20"), remote = ip("203.0.113.7"), nat_address = ip("198.51.100.1");
    // Shards of four: 53 -> 2, 5353 -> 1, 6008 -> 3, 6032 -> 2.
    nat.set_rules(one_vpc_rules(100, nat_address, 1024, 65535,
                                {{Protocol::udp, 5353, server, 53}, {Protocol::udp, 6008, server, 53},
                                 {Protocol::udp, 6032, server, 53}}));
    for (const std::uint16_t port : {5353, 6008, 6032}) {
        Bytes query = udp_packet(remote, 5555, nat_address, port);
        ASSERT_TRUE(nat.inbound(query, at(1)).translated());
    }
    std::vector<OffloadChange> out(8);
    ASSERT_EQ(nat.drain_offload_changes(out), 1u);
    EXPECT_EQ(out[0].flow.nat_port, 6032);
    Bytes answer = udp_packet(server, 53, remote, 5555);
    ASSERT_TRUE(nat.outbound(100, answer, at(1)).translated());
    EXPECT_EQ(endpoints(answer).source_port, 6032);
    // A single forward to an endpoint port of another shard is offloaded.
    nat.set_rules(one_vpc_rules(100, nat_address, 1024, 65535, {{Protocol::udp, 5353, server, 53}}));
    EXPECT_EQ(nat.remove_stale(at(2)), 2u);  // the 6008 and 6032 flows
    Bytes query = udp_packet(ip("203.0.113.8"), 5555, nat_address, 5353);
    ASSERT_TRUE(nat.inbound(query, at(2)).translated());
    ASSERT_EQ(nat.drain_offload_changes(out), 2u);  // the 6032 flow's stale removal, and this one
    EXPECT_EQ(out[0].kind, OffloadChange::Kind::remove);
    EXPECT_EQ(out[1].kind, OffloadChange::Kind::install);
    EXPECT_EQ(out[1].flow.nat_port, 5353);
}

TEST_F(Offload, HairpinsAreNeverOffloaded) {
    // A tenant reaching the UDP forward and the TCP forward through the NAT address.
    const NatResult udp = out(udp_packet(kTenant, 40000, kNat, 5353), kT0);
    ASSERT_TRUE(udp.translated());
    EXPECT_TRUE(udp.to_tenant);
    ASSERT_TRUE(out(tcp_packet(kTenant, 40001, kNat, 8088, flag::kSyn), kT0).to_tenant);
    const Endpoints at_server = endpoints(last);
    ASSERT_TRUE(out(tcp_packet(kServer, 80, at_server.source, at_server.source_port, flag::kSyn | flag::kAck), kT0)
                    .to_tenant);
    ASSERT_TRUE(out(tcp_packet(kTenant, 40001, kNat, 8088, flag::kAck), kT0).to_tenant);
    EXPECT_EQ(nat.flow_count(), 4u);  // both halves of both hairpins
    EXPECT_TRUE(drain().empty());
    for (const FlowInfo& f : nat.flows(at(kT0))) EXPECT_FALSE(f.offloaded);
}

TEST_F(Offload, FinRemovesItFromTheKernelAndTheFlowLivesOnClosing) {
    const std::uint16_t nat_port = open_tcp(40000, 443);
    ASSERT_EQ(drain().size(), 1u);
    ASSERT_TRUE(out(tcp_packet(kTenant, 40000, kRemote, 443, flag::kFin | flag::kAck), kT0 + 5).translated());
    auto changes = drain();
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].kind, Kind::remove);
    EXPECT_EQ(changes[0].reason, OffloadReason::tcp_fin);
    EXPECT_EQ(changes[0].flow, tcp_flow(40000, nat_port, 443));
    auto flows = nat.flows(at(kT0 + 5));
    ASSERT_EQ(flows.size(), 1u);
    EXPECT_EQ(flows[0].state, FlowState::tcp_fin_wait);
    EXPECT_FALSE(flows[0].offloaded);
    EXPECT_EQ(flows[0].expires_in, std::chrono::seconds(30));  // the closing timeout, no grace
    // The other side's FIN and ACK still go through the engine.
    EXPECT_TRUE(in(tcp_packet(kRemote, 443, kNat, nat_port, flag::kFin | flag::kAck), kT0 + 6).translated());
    EXPECT_EQ(nat.flows(at(kT0 + 6))[0].state, FlowState::tcp_closing);
    // Nothing more is requested, also when it expires.
    EXPECT_EQ(nat.expire(at(kT0 + 40)), 1u);
    EXPECT_TRUE(drain().empty());
    EXPECT_EQ(nat.counters().offload_removals, 1u);
}

TEST_F(Offload, ResetRemovesItAndANewConnectionOnTheTupleIsOffloadedAgain) {
    const std::uint16_t nat_port = open_tcp(40000, 443);
    ASSERT_EQ(drain().size(), 1u);
    ASSERT_TRUE(in(tcp_packet(kRemote, 443, kNat, nat_port, flag::kRst), kT0 + 1).translated());
    auto changes = drain();
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].reason, OffloadReason::tcp_reset);
    EXPECT_EQ(nat.flows(at(kT0 + 1))[0].state, FlowState::tcp_reset);
    EXPECT_EQ(open_tcp(40000, 443, kT0 + 2), nat_port);  // TIME_WAIT reuse: the same flow starts over
    changes = drain();
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].kind, Kind::install);
    EXPECT_EQ(changes[0].flow, tcp_flow(40000, nat_port, 443));
}

TEST_F(Offload, AFinAndARestartBeforeTheDrainLeaveTheKernelAsItWas) {
    const std::uint16_t nat_port = open_tcp(40000, 443);
    ASSERT_EQ(drain().size(), 1u);
    ASSERT_TRUE(out(tcp_packet(kTenant, 40000, kRemote, 443, flag::kRst), kT0 + 1).translated());
    EXPECT_EQ(open_tcp(40000, 443, kT0 + 2), nat_port);
    EXPECT_TRUE(drain().empty());  // same translation, still in the kernel
    EXPECT_TRUE(nat.flows(at(kT0 + 2))[0].offloaded);
}

TEST_F(Offload, AFlowThatEndsBeforeTheDrainCostsTheDaemonNothing) {
    open_udp(kTenant, 40000, kRemote, 53);
    EXPECT_EQ(nat.pending_offload_changes(), 1u);
    EXPECT_EQ(nat.expire_endpoint(kVni, kTenant), 1u);
    EXPECT_EQ(nat.flow_count(), 0u);
    EXPECT_TRUE(drain().empty());
    EXPECT_EQ(nat.mapping_count(), 0u);
    const NatCounters c = nat.counters();
    EXPECT_EQ(c.offload_installs, 0u);
    EXPECT_EQ(c.offload_removals, 0u);
    EXPECT_EQ(c.flows_removed_endpoint, 1u);
}

TEST_F(Offload, AnEndedFlowKeepsItsPortUntilItsRemovalIsDrained) {
    ASSERT_EQ(open_udp(kTenant, 40000, kRemote, 53), 40000);
    ASSERT_EQ(drain().size(), 1u);
    EXPECT_EQ(nat.expire_endpoint(kVni, kTenant), 1u);
    EXPECT_EQ(nat.flow_count(), 0u);
    EXPECT_TRUE(nat.flows(at(kT0)).empty());
    EXPECT_EQ(nat.mapping_count(), 1u);  // the kernel may still translate to port 40000
    EXPECT_NE(open_udp(ip("10.0.0.11"), 40000, kRemote, 53), 40000);
    const auto changes = drain();
    ASSERT_EQ(changes.size(), 2u);  // the removal first, then the new flow's install
    EXPECT_EQ(changes[0].kind, Kind::remove);
    EXPECT_EQ(changes[0].reason, OffloadReason::endpoint_removed);
    EXPECT_EQ(changes[0].flow, udp_flow(40000, 40000));
    EXPECT_EQ(changes[1].kind, Kind::install);
    EXPECT_EQ(nat.mapping_count(), 1u);  // released with its flow
    EXPECT_EQ(open_udp(ip("10.0.0.12"), 40000, kRemote, 53), 40000);
}

// Under endpoint-independent filtering, a mapping held only by flows whose removal has not been
// drained lets nobody in: the engine alone would have released it.
TEST(OffloadFiltering, AMappingHeldOnlyForTheKernelTakesNobodyIn) {
    NatSettings settings = offload_settings();
    settings.udp_filtering = UdpFiltering::endpoint_independent;
    NatEngine nat(settings);
    nat.set_rules(one_vpc_rules(100, ip("198.51.100.1")));
    Bytes p = udp_packet(ip("10.0.0.10"), 40000, ip("203.0.113.7"), 53);
    ASSERT_TRUE(nat.outbound(100, p, at(1)).translated());
    std::vector<OffloadChange> out(4);
    ASSERT_EQ(nat.drain_offload_changes(out), 1u);
    Bytes stranger = udp_packet(ip("192.0.2.77"), 9999, ip("198.51.100.1"), 40000);
    ASSERT_TRUE(nat.inbound(stranger, at(2)).translated());  // full cone while the flow lives
    ASSERT_EQ(nat.drain_offload_changes(out), 1u);
    nat.expire_endpoint(100, ip("10.0.0.10"));
    EXPECT_EQ(nat.mapping_count(), 1u);
    Bytes another = udp_packet(ip("192.0.2.78"), 9999, ip("198.51.100.1"), 40000);
    EXPECT_EQ(nat.inbound(another, at(3)).drop, DropReason::no_flow);
    EXPECT_EQ(nat.drain_offload_changes(out), 2u);
    EXPECT_EQ(nat.mapping_count(), 0u);
}

TEST(OffloadQueue, ItsLimitDefersInstallsButNeverRemovalsAndRemovalsComeFirst) {
    NatSettings settings = offload_settings();
    settings.offload.queue_limit = 2;
    NatEngine nat(settings);
    nat.set_rules(one_vpc_rules(100, ip("198.51.100.1")));
    auto send = [&](std::uint16_t port, double t) {
        Bytes p = udp_packet(ip("10.0.0.10"), port, ip("203.0.113.7"), 53);
        return nat.outbound(100, p, at(t)).translated();
    };
    for (std::uint16_t port = 40000; port < 40003; ++port) ASSERT_TRUE(send(port, 1));
    EXPECT_EQ(nat.counters().offload_queue_full, 1u);
    EXPECT_EQ(nat.pending_offload_changes(), 2u);
    std::vector<OffloadChange> out(1);  // one at a time
    std::vector<std::uint16_t> installed;
    while (nat.drain_offload_changes(out) == 1) installed.push_back(out[0].flow.tenant_port);
    EXPECT_EQ(installed, (std::vector<std::uint16_t>{40000, 40001}));
    // The deferred flow is asked again with its next packet.
    ASSERT_TRUE(send(40002, 2));
    ASSERT_EQ(nat.drain_offload_changes(out), 1u);
    EXPECT_EQ(out[0].flow.tenant_port, 40002);
    // With the queue full, a FIN still queues its flow's removal.
    Bytes syn = tcp_packet(ip("10.0.0.11"), 41000, ip("203.0.113.7"), 80, wire::tcp_flag::kSyn);
    ASSERT_TRUE(nat.outbound(100, syn, at(2)).translated());
    Bytes syn_ack = tcp_packet(ip("203.0.113.7"), 80, ip("198.51.100.1"), endpoints(syn).source_port,
                               wire::tcp_flag::kSyn | wire::tcp_flag::kAck);
    ASSERT_TRUE(nat.inbound(syn_ack, at(2)).translated());
    Bytes ack = tcp_packet(ip("10.0.0.11"), 41000, ip("203.0.113.7"), 80, wire::tcp_flag::kAck);
    ASSERT_TRUE(nat.outbound(100, ack, at(2)).translated());
    ASSERT_EQ(nat.drain_offload_changes(out), 1u);
    ASSERT_TRUE(send(40005, 2));
    ASSERT_TRUE(send(40006, 2));
    EXPECT_EQ(nat.pending_offload_changes(), 2u);
    Bytes fin = tcp_packet(ip("10.0.0.11"), 41000, ip("203.0.113.7"), 80, wire::tcp_flag::kFin | wire::tcp_flag::kAck);
    ASSERT_TRUE(nat.outbound(100, fin, at(2)).translated());
    EXPECT_EQ(nat.pending_offload_changes(), 3u);
    ASSERT_EQ(nat.drain_offload_changes(out), 1u);
    EXPECT_EQ(out[0].kind, OffloadChange::Kind::remove);
    EXPECT_EQ(out[0].reason, OffloadReason::tcp_fin);
    nat.expire_endpoint(100, ip("10.0.0.11"));
    // Two new flows fill the queue; removing the endpoint queues all five removals anyway.
    ASSERT_EQ(nat.drain_offload_changes(out), 1u);  // 40005
    ASSERT_EQ(nat.drain_offload_changes(out), 1u);  // 40006
    ASSERT_TRUE(send(40003, 3));
    ASSERT_TRUE(send(40004, 3));
    EXPECT_EQ(nat.expire_endpoint(100, ip("10.0.0.10")), 7u);
    std::vector<OffloadChange> all(8);
    ASSERT_EQ(nat.drain_offload_changes(all), 5u);  // the two latest installs vanished with their flows
    for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(all[i].kind, OffloadChange::Kind::remove);
    EXPECT_EQ(nat.mapping_count(), 0u);
    EXPECT_EQ(nat.flow_count(), 0u);
    const NatCounters c = nat.counters();
    EXPECT_EQ(c.offload_installs, 6u);
    EXPECT_EQ(c.offload_removals, 6u);
}

TEST(OffloadQueue, RemovalsOfEveryShardComeBeforeAnyInstall) {
    NatEngine nat(offload_settings(4));
    nat.set_rules(one_vpc_rules(100, ip("198.51.100.1")));
    for (std::uint16_t port = 40000; port < 40064; port += 4) {  // over all four shards
        Bytes p = udp_packet(ip("10.0.0.10"), port, ip("203.0.113.7"), 53);
        ASSERT_TRUE(nat.outbound(100, p, at(1)).translated());
    }
    std::vector<OffloadChange> out(64);
    ASSERT_EQ(nat.drain_offload_changes(out), 16u);
    nat.expire_endpoint(100, ip("10.0.0.10"));
    for (std::uint16_t port = 40000; port < 40064; port += 4) {
        Bytes p = udp_packet(ip("10.0.0.11"), port, ip("203.0.113.7"), 53);
        ASSERT_TRUE(nat.outbound(100, p, at(2)).translated());
    }
    ASSERT_EQ(nat.drain_offload_changes(out), 32u);
    for (std::size_t i = 0; i < 32; ++i)
        EXPECT_EQ(out[i].kind, i < 16 ? OffloadChange::Kind::remove : OffloadChange::Kind::install) << i;
}

}  // namespace
}  // namespace andromeda::nat
