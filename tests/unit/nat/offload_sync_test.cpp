// Offload to the kernel, keeping the engine and the kernel in step: an offloaded flow expires
// only after the grace, and the daemon's syncs (touch_offloaded) keep a busy one alive, record
// the kernel's counts and say which kernel entries to delete; a failed install leaves the flow
// to the pipeline; remove_stale ends what a reload no longer allows; adopt() rebuilds flows the
// kernel carried for a previous daemon, refusing any that conflict.
#include <gtest/gtest.h>

#include "fake_kernel.hpp"
#include "offload_fixture.hpp"

namespace andromeda::nat {
namespace {

using namespace test;
using Kind = OffloadChange::Kind;
using std::chrono::seconds;

using OffloadExpiry = OffloadTest;

TEST_F(OffloadExpiry, AnUntouchedFlowExpiresAfterItsTimeoutAndTheGrace) {
    const std::uint16_t a = open_udp(kTenant, 40000, kRemote, 53);
    const std::uint16_t b = open_udp(kTenant, 40001, kRemote, 53);
    ASSERT_EQ(drain().size(), 2u);
    EXPECT_EQ(nat.flows(at(kT0))[0].expires_in, seconds(122));  // udp 120 s + grace 2 s
    EXPECT_EQ(nat.expire(at(kT0 + 121.5)), 0u);                  // past the timeout, inside the grace
    EXPECT_EQ(nat.flows(at(kT0 + 122 - kNs)).size(), 2u);
    EXPECT_TRUE(in(udp_packet(kRemote, 53, kNat, a), kT0 + 122 - kNs).translated());  // punted reply: refreshed
    EXPECT_EQ(in(udp_packet(kRemote, 53, kNat, b), kT0 + 122).drop, DropReason::no_flow);
    auto changes = drain();
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].kind, Kind::remove);
    EXPECT_EQ(changes[0].reason, OffloadReason::expired);
    EXPECT_EQ(changes[0].flow, udp_flow(40001, b));
    // The wheel ends the other one the same way, at its refreshed deadline plus the grace.
    EXPECT_EQ(nat.expire(at(kT0 + 122 + 122 - 1)), 0u);
    EXPECT_EQ(nat.expire(at(kT0 + 122 + 122 + 1)), 1u);
    changes = drain();
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].reason, OffloadReason::expired);
    EXPECT_EQ(nat.mapping_count(), 0u);
    EXPECT_EQ(nat.counters().flows_expired, 2u);
}

TEST_F(OffloadExpiry, TouchesKeepABusyFlowAliveAndRecordTheKernelsCounts) {
    const std::uint16_t nat_port = open_udp(kTenant, 40000, kRemote, 53);
    ASSERT_EQ(drain().size(), 1u);
    const OffloadedFlow flow = udp_flow(40000, nat_port);
    for (double t = kT0 + 1; t < kT0 + 600; t += 1) {  // a sync each second for ten minutes
        ASSERT_TRUE(nat.touch_offloaded(flow, OffloadDirection::outbound, at(t - 0.5), {10, 1000}, at(t)));
        ASSERT_EQ(nat.expire(at(t)), 0u);
    }
    ASSERT_TRUE(nat.touch_offloaded(flow, OffloadDirection::inbound, at(kT0 + 590), {5, 400}, at(kT0 + 600)));
    auto flows = nat.flows(at(kT0 + 600));
    ASSERT_EQ(flows.size(), 1u);
    EXPECT_TRUE(flows[0].offloaded);
    EXPECT_EQ(flows[0].state, FlowState::replied);  // the reply direction carried packets
    EXPECT_EQ(flows[0].kernel_original, (KernelCounts{10, 1000}));
    EXPECT_EQ(flows[0].kernel_reply, (KernelCounts{5, 400}));
    EXPECT_EQ(flows[0].expires_in, std::chrono::milliseconds(120'500));  // last use 598.5 + 120 + 2
    // An older last use never shortens the deadline.
    ASSERT_TRUE(nat.touch_offloaded(flow, OffloadDirection::outbound, at(kT0), {10, 1000}, at(kT0 + 600)));
    flows = nat.flows(at(kT0 + 600));
    ASSERT_EQ(flows.size(), 1u);
    EXPECT_EQ(flows[0].expires_in, std::chrono::milliseconds(120'500));
    // The kernel goes quiet: expired at its last use + timeout + grace.
    EXPECT_EQ(nat.expire(at(kT0 + 598.5 + 122 - 0.5)), 0u);
    EXPECT_EQ(nat.expire(at(kT0 + 598.5 + 122 + 1)), 1u);
    EXPECT_EQ(drain().size(), 1u);
    EXPECT_EQ(nat.counters().offload_touched, 601u);
}

// One touch per flow with both entries' counts: `original` is the direction of the first packet,
// outbound for a tenant's flow, inbound for a forwarded one.
TEST_F(OffloadExpiry, BothDirectionsAtOnceFillOriginalAndReplyByOrigin) {
    const std::uint16_t nat_port = open_udp(kTenant, 40000, kRemote, 53);
    ASSERT_TRUE(in(udp_packet(kRemote, 5555, kNat, 5353), kT0).translated());  // the UDP forward
    ASSERT_EQ(drain().size(), 2u);
    const OffloadedFlow forwarded{kVni, Protocol::udp, Origin::inbound, true, kServer, 53, kNat, 5353, kRemote, 5555};
    ASSERT_TRUE(nat.touch_offloaded(udp_flow(40000, nat_port), at(kT0 + 1), {7, 700}, {3, 300}, at(kT0 + 1)));
    ASSERT_TRUE(nat.touch_offloaded(forwarded, at(kT0 + 1), {2, 200}, {9, 900}, at(kT0 + 1)));
    const auto flows = nat.flows(at(kT0 + 1));
    const FlowInfo* mine = find(flows, Protocol::udp, 40000);
    const FlowInfo* theirs = find(flows, Protocol::udp, 53);
    ASSERT_NE(mine, nullptr);
    ASSERT_NE(theirs, nullptr);
    EXPECT_EQ(mine->kernel_original, (KernelCounts{7, 700}));
    EXPECT_EQ(mine->kernel_reply, (KernelCounts{3, 300}));
    EXPECT_EQ(mine->state, FlowState::replied);
    EXPECT_EQ(theirs->kernel_original, (KernelCounts{9, 900}));
    EXPECT_EQ(theirs->kernel_reply, (KernelCounts{2, 200}));
    EXPECT_EQ(theirs->state, FlowState::replied);
    EXPECT_EQ(theirs->expires_in, seconds(122));  // from the touch's last use, kT0 + 1
}

TEST_F(OffloadExpiry, TcpTouchesUseTheEstablishedTimeout) {
    const std::uint16_t nat_port = open_tcp(40000, 443);
    ASSERT_EQ(drain().size(), 1u);
    ASSERT_TRUE(nat.touch_offloaded(tcp_flow(40000, nat_port, 443), OffloadDirection::inbound, at(kT0 + 100), {},
                                    at(kT0 + 101)));
    EXPECT_EQ(nat.flows(at(kT0 + 100))[0].expires_in, seconds(7440 + 2));
}

TEST_F(OffloadExpiry, TouchSaysWhichKernelEntriesToDelete) {
    const std::uint16_t nat_port = open_tcp(40000, 443);
    ASSERT_EQ(drain().size(), 1u);
    const OffloadedFlow flow = tcp_flow(40000, nat_port, 443);
    OffloadedFlow other = flow;
    other.tenant_port = 40001;  // same outside key, another translation
    EXPECT_FALSE(nat.touch_offloaded(other, OffloadDirection::outbound, at(kT0), {}, at(kT0)));
    other = flow;
    other.remote_port = 444;    // no such flow
    EXPECT_FALSE(nat.touch_offloaded(other, OffloadDirection::outbound, at(kT0), {}, at(kT0)));
    EXPECT_TRUE(nat.touch_offloaded(flow, OffloadDirection::outbound, at(kT0), {}, at(kT0)));
    // After a FIN the flow is no longer the kernel's: delete. Having heard that, the engine
    // hands out no removal for it, and a restarted connection is installed afresh.
    ASSERT_TRUE(in(tcp_packet(kRemote, 443, kNat, nat_port, flag::kFin | flag::kAck), kT0 + 1).translated());
    EXPECT_FALSE(nat.touch_offloaded(flow, OffloadDirection::outbound, at(kT0), {}, at(kT0 + 1)));
    EXPECT_TRUE(drain().empty());
    open_tcp(40000, 443, kT0 + 2);
    const auto changes = drain();
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].kind, Kind::install);
    const NatCounters c = nat.counters();
    EXPECT_EQ(c.offload_touched, 1u);
    EXPECT_EQ(c.offload_touch_unknown, 3u);
}

TEST_F(OffloadExpiry, AFailedInstallLeavesTheFlowToThePipelineForGood) {
    const std::uint16_t nat_port = open_udp(kTenant, 40000, kRemote, 53);
    ASSERT_EQ(drain().size(), 1u);
    const OffloadedFlow flow = udp_flow(40000, nat_port);
    EXPECT_TRUE(nat.offload_failed(flow, at(kT0)));
    const auto flows = nat.flows(at(kT0));
    EXPECT_FALSE(flows[0].offloaded);
    EXPECT_EQ(flows[0].expires_in, seconds(120));  // no grace any more
    ASSERT_TRUE(out(udp_packet(kTenant, 40000, kRemote, 53), kT0 + 1).translated());
    EXPECT_TRUE(drain().empty());  // not offered again
    EXPECT_FALSE(nat.touch_offloaded(flow, OffloadDirection::outbound, at(kT0 + 1), {}, at(kT0 + 1)));
    nat.expire_endpoint(kVni, kTenant);
    EXPECT_TRUE(drain().empty());  // the kernel never had it: no removal
    EXPECT_EQ(nat.counters().offload_install_failed, 1u);
    EXPECT_FALSE(nat.offload_failed(flow, at(kT0 + 1)));
}

// ---- remove_stale ----------------------------------------------------------------------

TEST_F(OffloadTest, RemoveStaleEndsWhatAReloadNoLongerAllows) {
    const auto two_vpcs = [&](std::vector<PortForward> forwards, Ipv4Address red_nat, bool blue = true) {
        std::vector<VpcNatConfig> vpcs{{200, red_nat, 1024, 65535, {}}};
        if (blue) vpcs.push_back({kVni, kNat, 1024, 65535, std::move(forwards)});
        return std::make_shared<const NatRules>(std::move(vpcs));
    };
    const std::vector<PortForward> forward{{Protocol::tcp, 8088, kServer, 80}};
    nat.set_rules(two_vpcs(forward, ip("198.51.100.2")));
    open_udp(kTenant, 40000, kRemote, 53);                      // blue
    open_udp(kTenant, 40001, ip("192.0.2.9"), 53);              // blue, to what becomes a NAT address
    Bytes red = udp_packet(kTenant, 40002, kRemote, 53);        // red
    ASSERT_TRUE(nat.outbound(200, red, at(kT0)).translated());
    ASSERT_TRUE(in(tcp_packet(kRemote, 5555, kNat, 8088, flag::kSyn), kT0).translated());
    ASSERT_TRUE(out(tcp_packet(kServer, 80, kRemote, 5555, flag::kSyn | flag::kAck), kT0).translated());
    ASSERT_TRUE(in(tcp_packet(kRemote, 5555, kNat, 8088, flag::kAck), kT0).translated());
    ASSERT_EQ(drain().size(), 4u);

    const auto removal_of = [&](std::uint16_t tenant_port) {
        const auto changes = drain();
        EXPECT_EQ(changes.size(), 1u);
        if (changes.empty()) return OffloadReason::none;
        EXPECT_EQ(changes[0].kind, Kind::remove);
        EXPECT_EQ(changes[0].flow.tenant_port, tenant_port);
        return changes[0].reason;
    };
    // The forward goes: its flow ends at once.
    nat.set_rules(two_vpcs({}, ip("198.51.100.2")));
    EXPECT_EQ(nat.remove_stale(at(kT0 + 1)), 1u);
    EXPECT_EQ(removal_of(80), OffloadReason::stale);
    // Red's NAT address changes.
    nat.set_rules(two_vpcs({}, ip("198.51.100.3")));
    EXPECT_EQ(nat.remove_stale(at(kT0 + 2)), 1u);
    EXPECT_EQ(removal_of(40002), OffloadReason::stale);
    // 192.0.2.9 becomes a NAT address: that flow leaves the kernel but lives on (hairpinned).
    nat.set_rules(std::make_shared<const NatRules>(std::vector<VpcNatConfig>{
        {kVni, kNat, 1024, 65535, {}}, {200, ip("198.51.100.3"), 1024, 65535, {}}, {300, ip("192.0.2.9"), 1024, 65535, {}}}));
    EXPECT_EQ(nat.remove_stale(at(kT0 + 3)), 0u);
    EXPECT_EQ(removal_of(40001), OffloadReason::hairpin);
    EXPECT_EQ(nat.flow_count(), 2u);
    const auto listed = nat.flows(at(kT0 + 3));
    const FlowInfo* hairpinned = find(listed, Protocol::udp, 40001);
    ASSERT_NE(hairpinned, nullptr);
    EXPECT_FALSE(hairpinned->offloaded);
    EXPECT_EQ(hairpinned->expires_in, seconds(117));  // the pipeline's timeout again, no grace
    // Blue loses NAT altogether.
    nat.set_rules(two_vpcs({}, ip("198.51.100.3"), false));
    EXPECT_EQ(nat.remove_stale(at(kT0 + 4)), 2u);
    const auto changes = drain();
    ASSERT_EQ(changes.size(), 1u);  // the hairpinned one had already left the kernel
    EXPECT_EQ(changes[0].flow.tenant_port, 40000);
    EXPECT_EQ(nat.flow_count(), 0u);
    EXPECT_EQ(nat.mapping_count(), 0u);
    EXPECT_EQ(nat.counters().flows_removed_stale, 4u);
}

TEST(RemovedForward, ItsFlowsEndWhenNextSeenWithoutOffloadToo) {
    NatEngine nat(small_settings());
    const auto with_forward = one_vpc_rules(100, ip("198.51.100.1"), 1024, 65535, {{Protocol::udp, 5353, ip("10.0.0.20"), 53}});
    nat.set_rules(with_forward);
    Bytes query = udp_packet(ip("203.0.113.7"), 5555, ip("198.51.100.1"), 5353);
    ASSERT_TRUE(nat.inbound(query, at(1)).translated());
    nat.set_rules(one_vpc_rules(100, ip("198.51.100.1"), 1024, 65535, {{Protocol::udp, 5353, ip("10.0.0.21"), 53}}));
    Bytes answer = udp_packet(ip("10.0.0.20"), 53, ip("203.0.113.7"), 5555);
    ASSERT_TRUE(nat.outbound(100, answer, at(2)).translated());
    EXPECT_NE(endpoints(answer).source_port, 5353);  // the forward leads elsewhere now: a plain SNAT flow
    EXPECT_EQ(nat.counters().flows_removed_stale, 1u);
    Bytes again = udp_packet(ip("203.0.113.7"), 5555, ip("198.51.100.1"), 5353);
    const NatResult r = nat.inbound(again, at(3));
    ASSERT_TRUE(r.translated());
    EXPECT_EQ(r.tenant, ip("10.0.0.21"));
}

// The forwarded port is the endpoint port's static mapping (docs/nat.md): once a forward covers
// it, the flows it had through a dynamic mapping are stale, and its new flows leave from the
// forward, on one shard or several (the forward's and the endpoint port's shards differ).
TEST(AddedForward, EndsTheEndpointPortsDynamicFlows) {
    for (const std::size_t shards : {1u, 4u}) {
        NatEngine nat(small_settings(1024, shards));
        nat.set_rules(one_vpc_rules(100, ip("198.51.100.1")));
        Bytes before = udp_packet(ip("10.0.0.20"), 53, ip("203.0.113.7"), 5555);
        ASSERT_TRUE(nat.outbound(100, before, at(1)).translated());
        const std::uint16_t dynamic_port = endpoints(before).source_port;
        ASSERT_NE(dynamic_port, 5353);
        nat.set_rules(one_vpc_rules(100, ip("198.51.100.1"), 1024, 65535, {{Protocol::udp, 5353, ip("10.0.0.20"), 53}}));
        EXPECT_EQ(nat.remove_stale(at(2)), 1u) << shards;
        Bytes reply = udp_packet(ip("203.0.113.7"), 5555, ip("198.51.100.1"), dynamic_port);
        EXPECT_EQ(nat.inbound(reply, at(2)).drop, DropReason::no_flow);
        Bytes after = udp_packet(ip("10.0.0.20"), 53, ip("203.0.113.7"), 5555);
        ASSERT_TRUE(nat.outbound(100, after, at(3)).translated());
        EXPECT_EQ(endpoints(after).source_port, 5353) << shards;
        EXPECT_EQ(nat.mapping_count(), 0u);
    }
}

// ---- adoption --------------------------------------------------------------------------

class OffloadAdoption : public OffloadTest {
protected:
    OffloadAdoption() : OffloadTest(offload_settings(4)) {}
};

TEST_F(OffloadAdoption, ANewEngineRebuildsTheKernelsFlowsAndTheirReplies) {
    // The first daemon's flows, carried into the kernel.
    open_udp(kTenant, 40000, kRemote, 53);
    open_udp(kTenant, 40000, ip("192.0.2.1"), 123);  // the same mapping to a second remote
    const std::uint16_t tcp_port = open_tcp(40001, 443);
    ASSERT_TRUE(out(icmp_echo(kTenant, kRemote, wire::icmpv4_type::kEchoRequest, 7, 1), kT0).translated());
    ASSERT_TRUE(in(tcp_packet(kRemote, 5555, kNat, 8088, flag::kSyn), kT0).translated());
    ASSERT_TRUE(out(tcp_packet(kServer, 80, kRemote, 5555, flag::kSyn | flag::kAck), kT0).translated());
    ASSERT_TRUE(in(tcp_packet(kRemote, 5555, kNat, 8088, flag::kAck), kT0).translated());
    FakeKernel kernel;
    ASSERT_TRUE(kernel.drain(nat, at(kT0)));
    ASSERT_EQ(kernel.flows().size(), 5u);

    // kill -9; the next daemon adopts every kernel entry before its workers start.
    NatSettings settings = offload_settings(4);
    settings.hash_seed = 999;
    NatEngine next(settings);
    next.set_rules(rules());
    for (const OffloadedFlow& f : kernel.flows()) {
        const FlowState state = f.protocol == Protocol::tcp ? FlowState::tcp_established : FlowState::replied;
        EXPECT_TRUE(next.adopt(f, state, at(kT0 + 5), at(kT0 + 6))) << f.tenant_port;
    }
    EXPECT_EQ(next.flow_count(), 5u);
    EXPECT_EQ(next.mapping_count(), 3u);  // udp 40000 (two flows), tcp 40001, icmp 7; the forward has none
    std::vector<OffloadChange> changes(8);
    EXPECT_EQ(next.drain_offload_changes(changes), 0u);  // already in the kernel
    for (const FlowInfo& f : next.flows(at(kT0 + 6))) EXPECT_TRUE(f.offloaded);
    // Punted packets of adopted flows translate as before.
    Bytes fin = tcp_packet(kRemote, 443, kNat, tcp_port, flag::kFin | flag::kAck);
    const NatResult r = next.inbound(fin, at(kT0 + 7));
    ASSERT_TRUE(r.translated());
    EXPECT_EQ(r.tenant, kTenant);
    EXPECT_EQ(endpoints(fin).destination_port, 40001);
    Bytes server_fin = tcp_packet(kServer, 80, kRemote, 5555, flag::kFin | flag::kAck);
    ASSERT_TRUE(next.outbound(kVni, server_fin, at(kT0 + 7)).translated());
    EXPECT_EQ(endpoints(server_fin).source_port, 8088);
    ASSERT_EQ(next.drain_offload_changes(changes), 2u);  // both FINs: out of the kernel
    // The adopted ports are never handed out again.
    for (const std::uint16_t port : {40000, 40001}) {
        Bytes udp = udp_packet(ip("10.0.0.77"), port, kRemote, 53);
        Bytes tcp = tcp_packet(ip("10.0.0.77"), port, kRemote, 443, flag::kSyn);
        ASSERT_TRUE(next.outbound(kVni, udp, at(kT0 + 8)).translated());
        ASSERT_TRUE(next.outbound(kVni, tcp, at(kT0 + 8)).translated());
        EXPECT_NE(port == 40000 ? endpoints(udp).source_port : endpoints(tcp).source_port, port);
    }
    const NatCounters c = next.counters();
    EXPECT_EQ(c.offload_adopted, 5u);
    EXPECT_EQ(c.flows_created, 5u + 4u);  // adopted flows count as created
    // Untouched, an adopted flow expires at its last use + timeout + grace (ICMP: 60 s).
    EXPECT_NE(find(next.flows(at(kT0 + 5 + 60 + 2 - kNs)), Protocol::icmp, 7), nullptr);
    EXPECT_EQ(find(next.flows(at(kT0 + 5 + 60 + 2)), Protocol::icmp, 7), nullptr);
}

TEST_F(OffloadAdoption, ConflictsAndFlowsNoRuleAllowsAreRefusedChangingNothing) {
    const OffloadedFlow good = udp_flow(40000, 40000);
    ASSERT_TRUE(nat.adopt(good, FlowState::replied, at(kT0), at(kT0)));
    const std::size_t flows = nat.flow_count(), mappings = nat.mapping_count();
    std::vector<std::pair<const char*, OffloadedFlow>> refused;
    refused.emplace_back("the same flow again", good);
    OffloadedFlow f = udp_flow(40000, 40032, 54);  // 40032: the same shard of four as 40000
    refused.emplace_back("the tenant port already maps to another NAT port", f);
    f = udp_flow(40000, 40000, 54);
    f.tenant = ip("10.0.0.11");
    refused.emplace_back("the NAT port belongs to another tenant", f);
    f = udp_flow(40016, 40016);
    f.nat = ip("198.51.100.9");
    refused.emplace_back("not the VPC's NAT address", f);
    f = udp_flow(40016, 40016);
    f.vni = 999;
    refused.emplace_back("no such VPC", f);
    f = {kVni, Protocol::tcp, Origin::inbound, true, kServer, 81, kNat, 8088, kRemote, 5555};
    refused.emplace_back("a forward that does not lead there", f);
    f = udp_flow(40016, 40024);  // 40016 -> shard 1 of four, 40024 -> shard 3
    refused.emplace_back("ports in two shards", f);
    f = udp_flow(40016, 40016);
    f.remote = kNat;
    refused.emplace_back("a hairpin", f);
    f = {kVni, Protocol::icmp, Origin::outbound, false, kTenant, 9, kNat, 9, kRemote, 1};
    refused.emplace_back("an echo flow with a remote port", f);
    for (const auto& [why, flow] : refused) {
        const FlowState state = flow.protocol == Protocol::tcp ? FlowState::tcp_established : FlowState::replied;
        EXPECT_FALSE(nat.adopt(flow, state, at(kT0), at(kT0))) << why;
    }
    EXPECT_FALSE(nat.adopt(tcp_flow(40016, 40016, 443), FlowState::tcp_syn_sent, at(kT0), at(kT0))) << "handshake";
    EXPECT_FALSE(nat.adopt(udp_flow(40016, 40016), FlowState::tcp_established, at(kT0), at(kT0))) << "udp state";
    EXPECT_FALSE(nat.adopt(udp_flow(40016, 40016), FlowState::replied, at(kT0), at(kT0 + 122))) << "expired";
    EXPECT_EQ(nat.flow_count(), flows);
    EXPECT_EQ(nat.mapping_count(), mappings);
    EXPECT_EQ(nat.counters().offload_adopt_refused, refused.size() + 3);
    // Not refused: another remote on the adopted mapping, and a flow that expires a bit later.
    EXPECT_TRUE(nat.adopt(udp_flow(40000, 40000, 54), FlowState::unreplied, at(kT0), at(kT0 + 121)));
    EXPECT_EQ(nat.mapping_count(), mappings);
}

}  // namespace
}  // namespace andromeda::nat
