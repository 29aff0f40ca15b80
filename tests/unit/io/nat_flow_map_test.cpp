// NatFlowMap against a fake map and a real NAT engine with offload on: the kernel's NAT flows are
// written with the keys the BPF programs look up (the packet as it arrives, both directions), a
// full or taken map leaves the flow with the pipeline, removals delete only what still holds the
// flow, the kernel's use keeps a busy flow alive and entries the engine no longer knows go, and a
// new engine adopts the map after a restart without handing out a port in use.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include "../nat/offload_fixture.hpp"
#include "fake_map_writer.hpp"
#include "io/plan/nat_flow_map.hpp"

namespace andromeda::io {
namespace {

using nat::test::at;
using nat::test::Bytes;
using nat::test::ip;
using testing::FakeMapWriter;

class NatFlowMapTest : public nat::test::OffloadTest {
protected:
    void apply(double t) {
        const auto changes = drain();
        map.apply(changes, nat, at(t));
    }
    const andromeda_nat_entry* entry(const nat::OffloadKey& key) const {
        return fake.find<andromeda_nat_key, andromeda_nat_entry>(MapId::nat_flows, nat_flow_key(key));
    }
    std::size_t entries() const { return fake.table(MapId::nat_flows).size(); }
    // What the kernel does when it translates a packet of a flow: its entry records the use.
    void kernel_uses(const nat::OffloadKey& key, double t, std::uint64_t packets = 1) {
        auto value = *fake.lookup(MapId::nat_flows, std::as_bytes(std::span(&nat_key_of(key), 1)));
        andromeda_nat_entry e{};
        std::memcpy(&e, value.data(), sizeof e);
        e.last_used_ns = static_cast<__u64>(nat::to_ns(at(t)));
        e.packets += packets;
        e.bytes += packets * 100;
        const auto k = nat_flow_key(key);
        fake.upsert(MapId::nat_flows, std::as_bytes(std::span(&k, 1)), std::as_bytes(std::span(&e, 1)));
    }
    const andromeda_nat_key& nat_key_of(const nat::OffloadKey& key) {
        scratch = nat_flow_key(key);
        return scratch;
    }

    FakeMapWriter fake;
    NatFlowMap map{fake};
    andromeda_nat_key scratch{};
};

TEST_F(NatFlowMapTest, AnInstallWritesBothDirectionsKeyedAsTheKernelLooksThemUp) {
    const std::uint16_t nat_port = open_udp(kTenant, 40000, kRemote, 53);
    apply(kT0);
    ASSERT_EQ(entries(), 2u);
    // Outbound: (tenant, remote, ports, VNI) in network order, direction OUTBOUND.
    andromeda_nat_key out{};
    out.src = htonl(kTenant.value());
    out.dst = htonl(kRemote.value());
    out.sport = htons(40000);
    out.dport = htons(53);
    out.vni = kVni;
    out.protocol = IPPROTO_UDP;
    out.direction = ANDROMEDA_NAT_OUTBOUND;
    andromeda_nat_key in{};
    in.src = htonl(kRemote.value());
    in.dst = htonl(kNat.value());
    in.sport = htons(53);
    in.dport = htons(nat_port);
    in.protocol = IPPROTO_UDP;
    in.direction = ANDROMEDA_NAT_INBOUND;
    const auto* o = fake.find<andromeda_nat_key, andromeda_nat_entry>(MapId::nat_flows, out);
    const auto* i = fake.find<andromeda_nat_key, andromeda_nat_entry>(MapId::nat_flows, in);
    ASSERT_NE(o, nullptr);
    ASSERT_NE(i, nullptr);
    EXPECT_EQ(o->tenant_ip, htonl(kTenant.value()));
    EXPECT_EQ(o->nat_ip, htonl(kNat.value()));
    EXPECT_EQ(o->nat_port, htons(nat_port));
    EXPECT_EQ(o->tenant_port, htons(40000));
    EXPECT_EQ(o->vni, kVni);
    EXPECT_EQ(std::memcmp(o, i, sizeof *o), 0);
    EXPECT_EQ(map.counters().installs, 1u);
}

TEST_F(NatFlowMapTest, IcmpEchoKeysCarryTheIdentifierOnTheNatsSide) {
    ASSERT_TRUE(out(nat::test::icmp_echo(kTenant, kRemote, wire::icmpv4_type::kEchoRequest, 4000, 1), kT0).translated());
    apply(kT0);
    const nat::OffloadedFlow flow{kVni, nat::Protocol::icmp, nat::Origin::outbound, false, kTenant, 4000, kNat, 4000,
                                  kRemote, 0};
    const auto out_key = nat_flow_key(flow.outbound_key());
    const auto in_key = nat_flow_key(flow.inbound_key());
    EXPECT_EQ(out_key.sport, htons(4000));
    EXPECT_EQ(out_key.dport, 0);
    EXPECT_EQ(in_key.sport, 0);
    EXPECT_EQ(in_key.dport, htons(4000));
    EXPECT_NE(entry(flow.outbound_key()), nullptr);
    EXPECT_NE(entry(flow.inbound_key()), nullptr);
}

TEST_F(NatFlowMapTest, AFullMapLeavesTheFlowWithThePipelineAndNothingHalfWritten) {
    fake.capacity[static_cast<std::size_t>(MapId::nat_flows)] = 3;
    open_udp(kTenant, 40000, kRemote, 53);
    open_udp(kTenant, 40001, kRemote, 53);  // its second entry does not fit
    apply(kT0);
    EXPECT_EQ(entries(), 2u);
    EXPECT_EQ(map.counters().installs, 1u);
    EXPECT_EQ(map.counters().install_full, 1u);
    EXPECT_EQ(nat.counters().offload_install_failed, 1u);
    // The refused flow still translates in the pipeline, and is never offered again.
    EXPECT_TRUE(out(nat::test::udp_packet(kTenant, 40001, kRemote, 53), kT0 + 1).translated());
    EXPECT_TRUE(drain().empty());
}

TEST_F(NatFlowMapTest, AnInstallNeverOverwritesAnotherFlowsEntry) {
    const std::uint16_t nat_port = open_udp(kTenant, 40000, kRemote, 53);
    // Another flow's entry on the same outbound key (a leftover of an older flow).
    nat::OffloadedFlow other = udp_flow(40000, nat_port);
    other.nat_port = static_cast<std::uint16_t>(nat_port + 1);
    const auto k = nat_flow_key(other.outbound_key());
    const auto e = nat_flow_entry(other);
    fake.upsert(MapId::nat_flows, std::as_bytes(std::span(&k, 1)), std::as_bytes(std::span(&e, 1)));
    apply(kT0);
    EXPECT_EQ(map.counters().install_conflict, 1u);
    EXPECT_EQ(entry(other.outbound_key())->nat_port, htons(static_cast<std::uint16_t>(nat_port + 1)));
    EXPECT_EQ(entries(), 1u);
}

TEST_F(NatFlowMapTest, ARemovalDeletesBothEntriesButLeavesAKeyANewerFlowTook) {
    const std::uint16_t nat_port = open_tcp(50000, 443);
    apply(kT0);
    ASSERT_EQ(entries(), 2u);
    // An RST: the engine asks for the removal; meanwhile another flow's entry sits on the inbound
    // key (as if installed out of order).
    nat::OffloadedFlow newer = tcp_flow(50001, nat_port, 443);
    const auto k = nat_flow_key(tcp_flow(50000, nat_port, 443).inbound_key());
    const auto e = nat_flow_entry(newer);
    fake.upsert(MapId::nat_flows, std::as_bytes(std::span(&k, 1)), std::as_bytes(std::span(&e, 1)));
    ASSERT_TRUE(out(nat::test::tcp_packet(kTenant, 50000, kRemote, 443, nat::test::flag::kRst), kT0 + 1).translated());
    apply(kT0 + 1);
    EXPECT_EQ(map.counters().removals, 1u);
    EXPECT_EQ(entry(tcp_flow(50000, nat_port, 443).outbound_key()), nullptr);
    ASSERT_NE(entry(tcp_flow(50000, nat_port, 443).inbound_key()), nullptr);
    EXPECT_EQ(entry(tcp_flow(50000, nat_port, 443).inbound_key())->tenant_port, htons(50001));
}

TEST_F(NatFlowMapTest, TheKernelsUseKeepsABusyFlowAliveAndAnIdleOneGoesWithItsEntries) {
    const std::uint16_t busy = open_udp(kTenant, 40000, kRemote, 53);
    const std::uint16_t idle = open_udp(kTenant, 40001, kRemote, 53);
    apply(kT0);
    ASSERT_EQ(entries(), 4u);
    // The kernel carries the busy flow for 10 minutes (UDP times out after 120 s idle); the
    // daemon syncs every second, expires and applies what the engine drains.
    for (int s = 1; s <= 600; ++s) {
        kernel_uses(udp_flow(40000, busy).outbound_key(), kT0 + s);
        map.sync(nat, at(kT0 + s));
        nat.expire(at(kT0 + s), 1u << 20);
        apply(kT0 + s);
    }
    EXPECT_NE(entry(udp_flow(40000, busy).outbound_key()), nullptr);
    EXPECT_NE(entry(udp_flow(40000, busy).inbound_key()), nullptr);
    EXPECT_EQ(entry(udp_flow(40001, idle).outbound_key()), nullptr);
    EXPECT_EQ(entry(udp_flow(40001, idle).inbound_key()), nullptr);
    EXPECT_EQ(map.counters().removals, 1u);
    // The kernel's counts reach the engine's listing.
    const auto flows = nat.flows(at(kT0 + 600));
    ASSERT_EQ(flows.size(), 1u);
    EXPECT_TRUE(flows[0].offloaded);
    EXPECT_EQ(flows[0].kernel_original.packets, 600u);
}

TEST_F(NatFlowMapTest, ASyncDeletesEntriesTheEngineDoesNotKnow) {
    open_udp(kTenant, 40000, kRemote, 53);
    apply(kT0);
    const nat::OffloadedFlow stray = udp_flow(41000, 41000, 123);
    const auto k = nat_flow_key(stray.outbound_key());
    const auto e = nat_flow_entry(stray);
    fake.upsert(MapId::nat_flows, std::as_bytes(std::span(&k, 1)), std::as_bytes(std::span(&e, 1)));
    EXPECT_EQ(map.sync(nat, at(kT0 + 1)), 3u);
    EXPECT_EQ(map.counters().stale_deleted, 1u);
    EXPECT_EQ(entries(), 2u);
    EXPECT_EQ(entry(stray.outbound_key()), nullptr);
}

TEST_F(NatFlowMapTest, ANewEngineAdoptsTheMapAndNeverHandsOutAPortInUse) {
    const std::uint16_t a = open_udp(kTenant, 40000, kRemote, 53);
    const std::uint16_t b = open_tcp(50000, 443);
    apply(kT0);
    ASSERT_EQ(entries(), 4u);
    kernel_uses(tcp_flow(50000, b, 443).outbound_key(), kT0 + 5);
    // Half an install: a daemon killed between the two writes.
    const nat::OffloadedFlow half = udp_flow(40002, 40002, 99);
    const auto hk = nat_flow_key(half.outbound_key());
    const auto he = nat_flow_entry(half);
    fake.upsert(MapId::nat_flows, std::as_bytes(std::span(&hk, 1)), std::as_bytes(std::span(&he, 1)));

    // kill -9; the next daemon's engine is new, its rules the same.
    nat::NatEngine fresh(nat::test::offload_settings());
    fresh.set_rules(rules());
    NatFlowMap next(fake);
    EXPECT_EQ(next.adopt(fresh, at(kT0 + 6)), 3u);
    EXPECT_EQ(next.counters().adopted, 3u);
    EXPECT_EQ(entries(), 6u);  // the half-installed flow got its inbound twin
    EXPECT_NE(entry(half.inbound_key()), nullptr);
    // Replies translate in the new engine as in the old one.
    Bytes reply = nat::test::udp_packet(kRemote, 53, kNat, a);
    EXPECT_TRUE(fresh.inbound(reply, at(kT0 + 7)).translated());
    EXPECT_EQ(nat::test::endpoints(reply).destination_port, 40000);
    // A new tenant flow asking for an adopted port gets another one.
    Bytes p = nat::test::udp_packet(ip("10.0.0.11"), a, kRemote, 53);
    ASSERT_TRUE(fresh.outbound(kVni, p, at(kT0 + 7)).translated());
    EXPECT_NE(nat::test::endpoints(p).source_port, a);
    EXPECT_NE(nat::test::endpoints(p).source_port, b);
}

TEST_F(NatFlowMapTest, AdoptionDeletesWhatTheNewEngineRefuses) {
    open_udp(kTenant, 40000, kRemote, 53);
    apply(kT0);
    // The restarted daemon's VPC translates to another address: the flow is stale.
    nat::NatEngine fresh(nat::test::offload_settings());
    fresh.set_rules(nat::test::one_vpc_rules(kVni, ip("198.51.100.9")));
    NatFlowMap next(fake);
    EXPECT_EQ(next.adopt(fresh, at(kT0 + 1)), 0u);
    EXPECT_EQ(next.counters().adopt_refused, 1u);
    EXPECT_EQ(entries(), 0u);
}

}  // namespace
}  // namespace andromeda::io
