// Several workers on one NatEngine at once, as andromedad's queues do. Run under ThreadSanitizer
// by scripts/test.sh (build-tsan): no data race; and checked here: no lost or duplicated mapping
// (every thread sees the same NAT port for one tenant port, no two tenant ports share one),
// replies always reach the right tenant (one by one and in bursts) while expiry, listing, endpoint
// removal and reloads run; with offload on, the daemon's drains, syncs and stale removals racing
// with the packets leave the kernel holding exactly the engine's offloaded flows.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <tuple>

#include "fake_kernel.hpp"

namespace andromeda::nat {
namespace {

using namespace test;

constexpr std::size_t kWorkers = 4;
const Ipv4Address kNatBlue = ip("198.51.100.1");
const Ipv4Address kNatRed = ip("198.51.100.2");
namespace flag = wire::tcp_flag;

std::shared_ptr<const NatRules> rules() {
    return std::make_shared<const NatRules>(std::vector<VpcNatConfig>{
        {100, kNatBlue, 1024, 65535, {{Protocol::tcp, 8080, ip("10.0.0.200"), 80}}}, {200, kNatRed, 1024, 65535, {}}});
}

// (vni, protocol, tenant ip, tenant port)
using InsideEndpoint = std::tuple<std::uint32_t, std::uint8_t, std::uint32_t, std::uint16_t>;

Bytes tenant_packet(std::mt19937& rng, std::uint32_t& vni, InsideEndpoint& who, Ipv4Address& remote,
                    std::uint16_t& remote_port) {
    vni = rng() % 2 ? 100 : 200;
    const Ipv4Address tenant(0x0a000000u + 1 + rng() % 8);
    const std::uint16_t port = static_cast<std::uint16_t>(30000 + rng() % 64);
    remote = Ipv4Address(0xcb007100u + 1 + rng() % 16);
    remote_port = static_cast<std::uint16_t>(1 + rng() % 4);
    const int kind = static_cast<int>(rng() % 3);
    Bytes p = kind == 0   ? udp_packet(tenant, port, remote, remote_port)
              : kind == 1 ? tcp_packet(tenant, port, remote, remote_port, wire::tcp_flag::kSyn)
                          : icmp_echo(tenant, remote, wire::icmpv4_type::kEchoRequest, port, 1);
    if (kind == 2) remote_port = 0;
    who = {vni, p[9], tenant.value(), port};
    return p;
}

TEST(NatConcurrency, WorkersShareMappingsConsistentlyAndRepliesFindTheirTenant) {
    NatSettings settings = small_settings(200'000, 8);
    NatEngine nat(settings);
    nat.set_rules(rules());

    // Phase 1: all workers open flows for the same tenant ports at once (racing to create each
    // mapping) to many destinations.
    std::mutex seen_lock;
    std::map<InsideEndpoint, std::set<std::uint16_t>> nat_ports_of;
    std::vector<std::tuple<Bytes, InsideEndpoint>> sent;
    std::atomic<int> failures{0};
    auto opener = [&](std::uint32_t seed) {
        std::mt19937 rng(seed);
        std::vector<std::tuple<Bytes, InsideEndpoint>> mine;
        for (int i = 0; i < 4000; ++i) {
            std::uint32_t vni;
            InsideEndpoint who;
            Ipv4Address remote;
            std::uint16_t remote_port;
            Bytes p = tenant_packet(rng, vni, who, remote, remote_port);
            const NatResult r = nat.outbound(vni, p, at(1));
            if (!r.translated() || !checksums_valid(p) || endpoints(p).source != (vni == 100 ? kNatBlue : kNatRed)) {
                ++failures;
                continue;
            }
            mine.emplace_back(std::move(p), who);
        }
        std::lock_guard guard(seen_lock);
        for (auto& [p, who] : mine) {
            nat_ports_of[who].insert(endpoints(p).source_port);
            sent.emplace_back(std::move(p), who);
        }
    };
    std::vector<std::thread> workers;
    for (std::uint32_t w = 0; w < kWorkers; ++w) workers.emplace_back(opener, w + 1);
    for (auto& t : workers) t.join();
    workers.clear();
    ASSERT_EQ(failures.load(), 0);

    // Endpoint-independent mapping held under the race: one NAT port per tenant port, and no
    // NAT port (per address and protocol) given to two tenant ports.
    std::set<std::tuple<std::uint32_t, std::uint8_t, std::uint16_t>> taken;
    for (const auto& [who, ports] : nat_ports_of) {
        ASSERT_EQ(ports.size(), 1u) << "tenant port mapped to several NAT ports";
        const Ipv4Address nat_address = std::get<0>(who) == 100 ? kNatBlue : kNatRed;
        ASSERT_TRUE(taken.insert({nat_address.value(), std::get<1>(who), *ports.begin()}).second)
            << "NAT port " << *ports.begin() << " given to two tenant ports";
    }
    EXPECT_EQ(nat.mapping_count(), nat_ports_of.size());

    // Phase 2: replies from every worker while others expire, list, reload and remove an
    // endpoint (10.0.0.8 of VNI 200, whose replies may then be refused; all others must arrive).
    std::atomic<bool> done{false};
    auto check_reply = [&](const NatResult& r, const Bytes& reply, const InsideEndpoint& who) {
        const bool removable = std::get<0>(who) == 200 && std::get<2>(who) == 0x0a000008u;
        if (!r.translated()) {
            if (!removable) ++failures;
            return;
        }
        if (r.vni != std::get<0>(who) || r.tenant.value() != std::get<2>(who) ||
            endpoints(reply).destination_port != std::get<3>(who) || !checksums_valid(reply))
            ++failures;
    };
    auto reply_to = [](const Bytes& p) {
        const Endpoints e = endpoints(p);
        return p[9] == wire::ip_protocol::kUdp ? udp_packet(e.destination, e.destination_port, e.source, e.source_port)
               : p[9] == wire::ip_protocol::kTcp
                   ? tcp_packet(e.destination, e.destination_port, e.source, e.source_port,
                                wire::tcp_flag::kSyn | wire::tcp_flag::kAck)
                   : icmp_echo(e.destination, e.source, wire::icmpv4_type::kEchoReply, e.source_port, 1);
    };
    // Worker 0 answers one packet at a time, worker 1 in bursts of 16.
    auto replier = [&](std::size_t first) {
        constexpr std::size_t kBurst = 16;
        std::vector<Bytes> replies;
        std::vector<NatBurstPacket> burst;
        std::vector<const InsideEndpoint*> owners;
        for (std::size_t i = first; i < sent.size(); i += 2) {
            const auto& [p, who] = sent[i];
            if (first == 0) {
                Bytes reply = reply_to(p);
                check_reply(nat.inbound(reply, at(2)), reply, who);
                continue;
            }
            replies.push_back(reply_to(p));
            owners.push_back(&who);
            if (replies.size() < kBurst && i + 2 < sent.size()) continue;
            burst.clear();
            for (Bytes& reply : replies) burst.push_back({reply, false, 0, {}});
            nat.translate_burst(burst, at(2));
            for (std::size_t k = 0; k < burst.size(); ++k) check_reply(burst[k].result, replies[k], *owners[k]);
            replies.clear();
            owners.clear();
        }
    };
    auto housekeeper = [&] {
        std::size_t rounds = 0;
        while (!done.load()) {
            nat.expire(at(2));  // nothing is due yet: must not remove anything
            if (nat.flows(at(2), 50).size() != 50) ++failures;
            (void)nat.counters();
            if (++rounds % 8 == 0) nat.set_rules(rules());
        }
    };
    std::thread keeper(housekeeper);
    std::thread remover([&] { nat.expire_endpoint(200, ip("10.0.0.8")); });
    workers.emplace_back(replier, 0);
    workers.emplace_back(replier, 1);
    for (auto& t : workers) t.join();
    remover.join();
    done = true;
    keeper.join();
    EXPECT_EQ(failures.load(), 0);

    // Phase 3: everything expires, from all workers at once; the books balance.
    std::vector<std::thread> expirers;
    for (std::size_t s = 0; s < kWorkers; ++s)
        expirers.emplace_back([&, s] {
            for (std::size_t shard = s; shard < nat.shard_count(); shard += kWorkers) nat.expire_shard(shard, at(10'000));
        });
    for (auto& t : expirers) t.join();
    const NatCounters c = nat.counters();
    EXPECT_EQ(nat.flow_count(), 0u);
    EXPECT_EQ(nat.mapping_count(), 0u);
    EXPECT_EQ(c.flows_created, c.flows_expired + c.flows_removed_endpoint + c.flows_removed_stale);
    EXPECT_EQ(c.mappings_created, c.mappings_released);
}

// Workers open, answer and close flows (UDP, ICMP echo, TCP through its handshake, some FIN or
// RST) while the daemon drains changes into the kernel as fast as it can and syncs it, reloads
// come with remove_stale, and another thread expires, lists and removes an endpoint.
TEST(NatConcurrency, OffloadDrainsAndSyncsRaceWithPackets) {
    NatSettings settings = small_settings(200'000, 8);
    settings.offload.enabled = true;
    settings.offload.queue_limit = 64;  // some installs deferred under the race
    NatEngine nat(settings);
    nat.set_rules(rules());
    std::atomic<bool> done{false};
    std::atomic<int> failures{0};
    auto worker = [&](std::uint32_t seed) {
        std::mt19937 rng(seed);
        for (int i = 0; i < 3000; ++i) {
            const TimePoint now = at(1 + i * 0.001);
            std::uint32_t vni;
            InsideEndpoint who;
            Ipv4Address remote;
            std::uint16_t remote_port;
            Bytes p = tenant_packet(rng, vni, who, remote, remote_port);
            const auto tenant = Ipv4Address(std::get<2>(who));
            const std::uint16_t port = std::get<3>(who);
            const NatResult r = nat.outbound(vni, p, now);
            if (!r.translated()) {
                if (vni != 200 || tenant != ip("10.0.0.8")) ++failures;  // the removed endpoint may lose some
                continue;
            }
            const Endpoints out = endpoints(p);
            if (p[9] != wire::ip_protocol::kTcp) {
                Bytes reply = p[9] == wire::ip_protocol::kUdp
                                  ? udp_packet(remote, remote_port, out.source, out.source_port)
                                  : icmp_echo(remote, out.source, wire::icmpv4_type::kEchoReply, out.source_port, 1);
                (void)nat.inbound(reply, now);
                continue;
            }
            Bytes syn_ack = tcp_packet(remote, remote_port, out.source, out.source_port, flag::kSyn | flag::kAck);
            (void)nat.inbound(syn_ack, now);
            Bytes ack = tcp_packet(tenant, port, remote, remote_port, flag::kAck);
            (void)nat.outbound(vni, ack, now);  // established: offered to the kernel
            if (rng() % 3 == 0) {
                Bytes end = tcp_packet(tenant, port, remote, remote_port, rng() % 2 ? flag::kRst : flag::kFin | flag::kAck);
                (void)nat.outbound(vni, end, now);
            }
        }
    };
    FakeKernel kernel;  // the daemon's thread only
    std::string daemon_error;
    std::thread daemon([&] {
        for (std::size_t round = 0; !done.load(); ++round) {
            if (auto r = kernel.drain(nat, at(2), 1 + round % 32); !r) {
                daemon_error = r.message();
                ++failures;
                return;
            }
            if (round % 4 == 0) kernel.sync(nat, at(2));
            if (round % 64 == 0) {
                nat.set_rules(rules());
                (void)nat.remove_stale(at(2));
            }
        }
    });
    std::thread keeper([&] {
        for (std::size_t round = 0; !done.load(); ++round) {
            nat.expire(at(2));
            (void)nat.flows(at(2), 100);
            (void)nat.counters();
            (void)nat.pending_offload_changes();
            if (round % 256 == 0) nat.expire_endpoint(200, ip("10.0.0.8"));
        }
    });
    std::vector<std::thread> workers;
    for (std::uint32_t w = 0; w < kWorkers; ++w) workers.emplace_back(worker, 100 + w);
    for (auto& t : workers) t.join();
    done = true;
    daemon.join();
    keeper.join();
    EXPECT_EQ(failures.load(), 0) << daemon_error;

    // The kernel holds exactly the flows the engine has offloaded...
    ASSERT_TRUE(kernel.drain(nat, at(2)));
    std::set<FlowTuple> offloaded, in_kernel;
    for (const FlowInfo& f : nat.flows(at(2)))
        if (f.offloaded) offloaded.insert(tuple_of(f));
    for (const OffloadedFlow& f : kernel.flows()) in_kernel.insert(tuple_of(f));
    EXPECT_EQ(offloaded, in_kernel);
    EXPECT_GT(in_kernel.size(), 300u);
    // ...and once everything has expired, nothing is left anywhere.
    EXPECT_GT(nat.expire(at(10'000)), 0u);
    ASSERT_TRUE(kernel.drain(nat, at(10'000)));
    kernel.sync(nat, at(10'000));
    EXPECT_TRUE(kernel.entries().empty());
    EXPECT_EQ(nat.flow_count(), 0u);
    EXPECT_EQ(nat.mapping_count(), 0u);
    const NatCounters c = nat.counters();
    EXPECT_GT(c.offload_installs, 300u);
    EXPECT_EQ(c.flows_created, c.flows_expired + c.flows_removed_endpoint + c.flows_removed_stale);
    EXPECT_EQ(c.mappings_created, c.mappings_released);
}

}  // namespace
}  // namespace andromeda::nat
