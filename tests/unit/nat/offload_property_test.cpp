// Properties of offload over random traffic and random housekeeping:
//  - the kernel (tests/unit/nat/fake_kernel.hpp) carrying what the engine installs, in front of
//    an offloading engine, translates every packet exactly as one engine alone does: same
//    verdicts, same bytes (checksums aside, every one valid), in either direction, TCP, UDP,
//    ICMP echo and errors, port forwards, hairpins, endpoint removals and reloads;
//  - every install handed out is matched by exactly one removal, or by a reported install
//    failure, or the flow is alive and offloaded; no removal is handed out for a flow never
//    installed; no install over a key the kernel holds; a flow the kernel keeps busy is never
//    expired while the daemon syncs; when everything has expired, nothing is left anywhere.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>

#include "fake_kernel.hpp"

namespace andromeda::nat {
namespace {

using namespace test;
namespace flag = wire::tcp_flag;

const Ipv4Address kNatBlue = ip("198.51.100.1");
const std::uint32_t kSeeds = std::getenv("NAT_PROPERTY_SEEDS") ? static_cast<std::uint32_t>(std::atoi(std::getenv("NAT_PROPERTY_SEEDS"))) : 4;
const Ipv4Address kServer = ip("10.0.0.1");

std::shared_ptr<const NatRules> random_rules(bool red_moved, bool udp_forward) {
    // 8080 and 8096, 53 and 61 share their endpoint port (the engine answers through one of them).
    std::vector<PortForward> forwards{{Protocol::tcp, 8080, kServer, 80}, {Protocol::tcp, 8096, kServer, 80}};
    if (udp_forward) forwards.insert(forwards.end(), {{Protocol::udp, 53, kServer, 5353}, {Protocol::udp, 61, kServer, 5353}});
    return std::make_shared<const NatRules>(std::vector<VpcNatConfig>{
        {100, kNatBlue, 20000, 40000, forwards}, {200, ip(red_moved ? "198.51.100.3" : "198.51.100.2"), 1024, 65535, {}}});
}

// Conversations between tenants and remote hosts, each packet plausible for its conversation's
// state: TCP handshakes, data, FIN, RST and restarts, UDP both ways, pings, ICMP errors quoting
// what the NAT sent, connections to port forwards, and hairpins.
class Conversations {
public:
    struct Packet {
        bool outbound;
        std::uint32_t vni;
        Bytes bytes;
        std::size_t conversation;
    };

    explicit Conversations(std::uint32_t seed) : rng_(seed) {}

    Packet next() {
        const std::uint32_t roll = pick(0, 99);
        if (roll < 12 || all_.empty()) return open();
        if (roll < 16) return to_forward();
        if (roll < 19) return hairpin();
        Conversation& c = all_[pick(0, static_cast<std::uint32_t>(all_.size() - 1))];
        const std::size_t index = static_cast<std::size_t>(&c - all_.data());
        if (roll < 22 && c.last_out.size() > 28) return icmp_error(c, index);
        return pick(0, 1) || !c.nat_known ? from_tenant(c, index) : from_remote(c, index);
    }
    // What the NAT made of an outbound packet: the conversation's NAT side.
    void learned(const Packet& p, const NatResult& r, const Bytes& translated) {
        if (p.conversation == kNone || !p.outbound || !r.translated() || r.to_tenant) return;
        Conversation& c = all_[p.conversation];
        const Endpoints e = endpoints(translated);
        c.nat = e.source;
        c.nat_port = e.source_port;
        c.nat_known = true;
        c.last_out = translated;
    }
    std::uint32_t pick(std::uint32_t lo, std::uint32_t hi) { return lo + rng_() % (hi - lo + 1); }
    Ipv4Address tenant(std::uint32_t i) const { return Ipv4Address(0x0a000000u + 10 + i); }

private:
    static constexpr std::size_t kNone = ~std::size_t{0};
    struct Conversation {
        std::uint32_t vni;
        Protocol protocol;
        Ipv4Address tenant;
        std::uint16_t tenant_port;
        Ipv4Address remote;
        std::uint16_t remote_port;
        bool nat_known = false;
        Ipv4Address nat;
        std::uint16_t nat_port = 0;
        int tcp_phase = 0;  // 0 SYN sent, 1 SYN+ACK seen, 2 established, 3 finished
        Bytes last_out;
    };

    Packet open() {
        Conversation c;
        c.vni = pick(0, 1) ? 100 : 200;
        c.protocol = std::array{Protocol::udp, Protocol::tcp, Protocol::icmp}[pick(0, 2)];
        c.tenant = tenant(pick(0, 5));
        c.tenant_port = static_cast<std::uint16_t>(30000 + pick(0, 40));
        c.remote = Ipv4Address(0xcb007100u + pick(1, 4));
        c.remote_port = c.protocol == Protocol::icmp ? 0 : static_cast<std::uint16_t>(pick(1, 3) * 1000);
        all_.push_back(c);
        return from_tenant(all_.back(), all_.size() - 1);
    }
    Packet to_forward() {
        Conversation c;
        c.vni = 100;
        c.protocol = pick(0, 1) ? Protocol::tcp : Protocol::udp;
        c.tenant = kServer;
        c.tenant_port = c.protocol == Protocol::tcp ? 80 : 5353;
        c.remote = Ipv4Address(0xcb007100u + pick(1, 4));
        c.remote_port = static_cast<std::uint16_t>(50000 + pick(0, 20));
        c.nat_known = true;
        c.nat = kNatBlue;
        c.nat_port = static_cast<std::uint16_t>(c.protocol == Protocol::tcp ? (pick(0, 1) ? 8080 : 8096) : (pick(0, 1) ? 53 : 61));
        all_.push_back(c);
        return from_remote(all_.back(), all_.size() - 1, flag::kSyn);
    }
    Packet hairpin() {
        const Ipv4Address t = tenant(pick(0, 5));
        const auto port = static_cast<std::uint16_t>(30000 + pick(0, 40));
        return {true, 100, pick(0, 1) ? udp_packet(t, port, kNatBlue, 53) : tcp_packet(t, port, kNatBlue, 8080, flag::kSyn),
                kNone};
    }
    std::uint8_t tcp_flags(Conversation& c, bool from_opener) {
        switch (c.tcp_phase) {
            case 0:
                if (!from_opener) c.tcp_phase = 1;
                return from_opener ? flag::kSyn : flag::kSyn | flag::kAck;
            case 1:
                if (from_opener) c.tcp_phase = 2;
                return from_opener ? flag::kAck : flag::kSyn | flag::kAck;
            case 2: {
                const std::uint32_t r = pick(0, 19);
                if (r <= 2) c.tcp_phase = 3;  // RST or FIN
                return r == 0   ? flag::kRst
                       : r <= 2 ? flag::kFin | flag::kAck
                       : r == 3 ? flag::kSyn                  // a stray SYN
                                : flag::kAck | flag::kPsh;    // data
            }
            default:
                if (from_opener && pick(0, 2) == 0) {
                    c.tcp_phase = 0;  // starts over on the same tuple
                    return flag::kSyn;
                }
                return pick(0, 3) ? flag::kAck : flag::kFin | flag::kAck;
        }
    }
    Packet from_tenant(Conversation& c, std::size_t index) {
        const bool opener = c.tenant != kServer;
        Bytes b = c.protocol == Protocol::udp ? udp_packet(c.tenant, c.tenant_port, c.remote, c.remote_port, pick(0, 40))
                  : c.protocol == Protocol::tcp
                      ? tcp_packet(c.tenant, c.tenant_port, c.remote, c.remote_port, tcp_flags(c, opener), pick(0, 40))
                      : icmp_echo(c.tenant, c.remote, wire::icmpv4_type::kEchoRequest, c.tenant_port,
                                  static_cast<std::uint16_t>(pick(0, 9)));
        return {true, c.vni, std::move(b), index};
    }
    Packet from_remote(Conversation& c, std::size_t index, std::uint8_t flags = 0) {
        const bool opener = c.tenant == kServer;
        if (c.protocol == Protocol::tcp && flags == 0) flags = tcp_flags(c, opener);
        Bytes b = c.protocol == Protocol::udp ? udp_packet(c.remote, c.remote_port, c.nat, c.nat_port, pick(0, 40))
                  : c.protocol == Protocol::tcp ? tcp_packet(c.remote, c.remote_port, c.nat, c.nat_port, flags, pick(0, 40))
                                                : icmp_echo(c.remote, c.nat, wire::icmpv4_type::kEchoReply, c.nat_port, 1);
        return {false, 0, std::move(b), index};
    }
    Packet icmp_error(const Conversation& c, std::size_t index) {
        const Endpoints out = endpoints(c.last_out);
        return {false, 0,
                test::icmp_error(ip("192.0.2.1"), out.source, pick(0, 1) ? 3 : 11, static_cast<std::uint8_t>(pick(0, 4)),
                                 1280, c.last_out, pick(28, static_cast<std::uint32_t>(c.last_out.size()))),
                index};
    }

    std::mt19937 rng_;
    std::vector<Conversation> all_;
};

// The packet with its checksum fields zeroed (IPv4 header and transport), to compare two
// translations that differ only in how a checksum was computed.
Bytes without_checksums(Bytes p) {
    const auto v = wire::Ipv4View::parse(p);
    if (!v) return p;
    p[10] = p[11] = 0;
    const std::size_t l4 = v->ihl() * 4u;
    const std::size_t field = v->protocol() == wire::ip_protocol::kTcp   ? 16
                              : v->protocol() == wire::ip_protocol::kUdp ? 6
                                                                         : 2;
    if (l4 + field + 2 <= p.size()) p[l4 + field] = p[l4 + field + 1] = 0;
    return p;
}

TEST(OffloadProperty, KernelAndOffloadingEngineTranslateLikeTheEngineAlone) {
    for (std::uint32_t seed = 1; seed <= kSeeds; ++seed) {
        NatSettings settings = small_settings(8192, seed % 3 + 1);
        if (seed % 2) settings.udp_filtering = UdpFiltering::endpoint_independent;
        NatEngine alone(settings);
        settings.offload.enabled = true;
        NatEngine offloading(settings);
        FakeKernel kernel;
        bool red_moved = false, udp_forward = true;
        for (NatEngine* e : {&alone, &offloading}) e->set_rules(random_rules(red_moved, udp_forward));
        Conversations traffic(seed);
        std::size_t by_kernel = 0, by_engine = 0, translated = 0;
        for (int i = 0; i < 6000; ++i) {
            const TimePoint now = at(1 + i * 0.01);  // a minute: nothing offloaded reaches its timeout
            if (i % 100 == 0) kernel.sync(offloading, now);
            if (i % 50 == 0) {
                ASSERT_EQ(alone.expire(now), offloading.expire(now));
            }
            if (i % 900 == 450) {
                const Ipv4Address who = traffic.tenant(traffic.pick(0, 5));
                ASSERT_EQ(alone.expire_endpoint(100, who), offloading.expire_endpoint(100, who));
            }
            if (i % 1000 == 999) {  // a reload: red's NAT address moves, the UDP forward comes and goes
                red_moved = !red_moved;
                udp_forward = !udp_forward;
                for (NatEngine* e : {&alone, &offloading}) e->set_rules(random_rules(red_moved, udp_forward));
                ASSERT_EQ(alone.remove_stale(now), offloading.remove_stale(now));
            }
            ASSERT_TRUE(kernel.drain(offloading, now, 1 + i % 7)) << "seed " << seed << " op " << i;

            const Conversations::Packet p = traffic.next();
            Bytes one = p.bytes, two = p.bytes;
            const NatResult r1 = p.outbound ? alone.outbound(p.vni, one, now) : alone.inbound(one, now);
            NatResult r2;
            if (kernel.translate(p.outbound, p.vni, two, now, r2)) {
                ++by_kernel;
            } else {
                r2 = p.outbound ? offloading.outbound(p.vni, two, now) : offloading.inbound(two, now);
                ++by_engine;
            }
            ASSERT_EQ(r1.drop, r2.drop) << "seed " << seed << " op " << i;
            ASSERT_EQ(r1.to_tenant, r2.to_tenant) << "seed " << seed << " op " << i;
            ASSERT_EQ(r1.vni, r2.vni);
            ASSERT_EQ(r1.tenant, r2.tenant);
            ASSERT_EQ(without_checksums(one), without_checksums(two)) << "seed " << seed << " op " << i;
            if (r1.translated()) {
                ++translated;
                ASSERT_TRUE(checksums_valid(two)) << "seed " << seed << " op " << i;
            }
            traffic.learned(p, r1, one);
        }
        // Both paths really carried traffic, and the engines agree on what exists.
        EXPECT_GT(by_kernel, 1500u) << seed;
        EXPECT_GT(by_engine, 1500u) << seed;
        EXPECT_GT(translated, 3000u) << seed;
        ASSERT_TRUE(kernel.drain(offloading, at(61)));
        EXPECT_EQ(alone.flow_count(), offloading.flow_count());
        EXPECT_EQ(alone.mapping_count(), offloading.mapping_count());
        std::set<FlowTuple> offloaded, in_kernel;
        for (const FlowInfo& f : offloading.flows(at(61)))
            if (f.offloaded) offloaded.insert(tuple_of(f));
        for (const OffloadedFlow& f : kernel.flows()) in_kernel.insert(tuple_of(f));
        EXPECT_EQ(offloaded, in_kernel) << seed;
        EXPECT_GT(in_kernel.size(), 50u) << seed;
    }
}

// ---- installs and removals pair up ------------------------------------------------------

// What the daemon saw handed out. An install is matched by one removal, by the daemon's own
// report that it could not write it, or by the sync deleting it (touch_offloaded said false:
// the engine then hands out a removal only if the flow ended, which the ledger tolerates once).
class Ledger {
public:
    ::testing::AssertionResult record(const OffloadChange& c, const std::set<FlowTuple>& heartbeats) {
        const FlowTuple t = tuple_of(c.flow);
        int& n = outstanding_[t];
        if (c.kind == OffloadChange::Kind::install) {
            if (n != 0) return ::testing::AssertionFailure() << "installed twice";
            ++n;
            deleted_by_sync_.erase(t);
        } else {
            if (n != 1 && !deleted_by_sync_.erase(t)) return ::testing::AssertionFailure() << "removal of a flow not installed";
            n = 0;
            if (c.reason == OffloadReason::expired && heartbeats.contains(tuple_of(c.flow)))
                return ::testing::AssertionFailure() << "a flow busy in the kernel expired";
        }
        return ::testing::AssertionSuccess();
    }
    void failed(const OffloadedFlow& f) { --outstanding_[tuple_of(f)]; }
    void deleted_by_sync(const std::vector<OffloadedFlow>& flows) {
        for (const OffloadedFlow& f : flows) {
            int& n = outstanding_[tuple_of(f)];
            if (n == 1) deleted_by_sync_.insert(tuple_of(f));
            n = 0;
        }
    }
    std::set<FlowTuple> outstanding() const {
        std::set<FlowTuple> s;
        for (const auto& [t, n] : outstanding_)
            if (n) s.insert(t);
        return s;
    }

private:
    std::map<FlowTuple, int> outstanding_;
    std::set<FlowTuple> deleted_by_sync_;
};

TEST(OffloadProperty, EveryInstallIsMatchedByOneRemovalOrTheFlowIsStillOffloaded) {
    for (std::uint32_t seed = 11; seed <= 10 + kSeeds; ++seed) {
        const bool failed_before = ::testing::Test::HasFailure();
        NatSettings settings = small_settings(4096, seed % 3 + 1);
        settings.offload.enabled = true;
        settings.offload.grace = std::chrono::milliseconds(2000);
        settings.offload.queue_limit = 4;
        settings.wheel_tick = std::chrono::milliseconds(100);
        settings.timeouts = {std::chrono::seconds(2), std::chrono::seconds(20), std::chrono::seconds(2),
                             std::chrono::seconds(5), std::chrono::seconds(3)};
        NatEngine nat(settings);
        bool red_moved = false, udp_forward = true;
        nat.set_rules(random_rules(red_moved, udp_forward));
        FakeKernel kernel;
        Ledger ledger;
        Conversations traffic(seed);
        std::mt19937 rng(seed);
        std::set<FlowTuple> heartbeats;
        std::int64_t ms = 0, last_sync = 0;
        const auto now = [&] { return TimePoint{} + std::chrono::milliseconds(ms); };
        const Ipv4Address busy = ip("10.0.9.9");  // keeps three UDP flows busy, only in the kernel
        auto drain = [&](std::size_t span) -> ::testing::AssertionResult {
            std::vector<OffloadChange> out(span);
            for (;;) {
                const std::size_t n = nat.drain_offload_changes(out);
                for (std::size_t i = 0; i < n; ++i) {
                    if (auto r = ledger.record(out[i], heartbeats); !r) return r;
                    if (out[i].kind == OffloadChange::Kind::install && out[i].flow.tenant != busy && rng() % 20 == 0) {
                        // The map was full: never written. Unless the flow ended meanwhile (its removal
                        // follows, and deletes nothing), it stays in the pipeline.
                        if (nat.offload_failed(out[i].flow, now())) {
                            ledger.failed(out[i].flow);
                        } else {
                            kernel.not_written(out[i].flow);
                        }
                        continue;
                    }
                    if (auto r = kernel.apply(out[i], now()); !r) return r;
                }
                if (n < span || rng() % 2) return ::testing::AssertionSuccess();  // sometimes leave some queued
            }
        };
        auto heartbeat = [&] {
            for (std::uint16_t port = 1; port <= 3; ++port) {
                Bytes p = udp_packet(busy, port, ip("203.0.113.1"), 9);
                NatResult r;
                if (!kernel.translate(true, 100, p, now(), r)) {
                    ASSERT_TRUE(nat.outbound(100, p, now()).translated());
                } else {
                    heartbeats.insert(tuple_of(kernel.entries().at(FakeKernel::key_of(
                        {OffloadDirection::outbound, 100, Protocol::udp, busy, port, ip("203.0.113.1"), 9})).flow));
                }
            }
        };
        for (int i = 0; i < 5000; ++i) {
            const std::uint32_t step = rng() % 10 == 0 ? 1000 : rng() % 300;  // at most a second between ops
            ms += step;
            if (ms - last_sync >= 1000) {  // the daemon's sync, before anything else of this instant
                ledger.deleted_by_sync(kernel.sync(nat, now()));
                last_sync = ms;
            }
            heartbeat();
            const std::uint32_t op = rng() % 100;
            if (op < 70) {
                const Conversations::Packet p = traffic.next();
                Bytes b = p.bytes;
                NatResult r;
                if (!kernel.translate(p.outbound, p.vni, b, now(), r))
                    r = p.outbound ? nat.outbound(p.vni, b, now()) : nat.inbound(b, now());
                traffic.learned(p, r, b);
            } else if (op < 85) {
                nat.expire(now(), rng() % 4 ? NatEngine::kUnbounded : 2);
            } else if (op < 88) {
                nat.expire_endpoint(rng() % 2 ? 100 : 200, traffic.tenant(traffic.pick(0, 5)));
            } else if (op < 90) {
                red_moved ^= rng() % 2 == 0;
                udp_forward ^= rng() % 2 == 0;
                nat.set_rules(random_rules(red_moved, udp_forward));
                nat.remove_stale(now());
            }
            if (rng() % 3 == 0) {
                ASSERT_TRUE(drain(1 + rng() % 8)) << "seed " << seed << " op " << i;
            }
            if (ms % 100 == 0 && rng() % 10 == 0) {  // at a wheel tick: the whole picture
                while (nat.pending_offload_changes() > 0) ASSERT_TRUE(drain(64));
                nat.expire(now());
                while (nat.pending_offload_changes() > 0) ASSERT_TRUE(drain(64));
                std::set<FlowTuple> offloaded;
                for (const FlowInfo& f : nat.flows(now()))
                    if (f.offloaded) offloaded.insert(tuple_of(f));
                ASSERT_EQ(offloaded, ledger.outstanding()) << "seed " << seed << " op " << i;
            }
        }
        EXPECT_EQ(heartbeats.size(), 3u) << "the busy flows lived in the kernel";
        // Everything ends: the books balance and nothing is left in the engine or the kernel.
        heartbeats.clear();
        ms += 100'000;
        nat.expire(now());
        while (nat.pending_offload_changes() > 0) ASSERT_TRUE(drain(64));
        ledger.deleted_by_sync(kernel.sync(nat, now()));
        EXPECT_TRUE(ledger.outstanding().empty());
        EXPECT_TRUE(kernel.entries().empty());
        EXPECT_EQ(nat.flow_count(), 0u);
        EXPECT_EQ(nat.mapping_count(), 0u);
        const NatCounters c = nat.counters();
        EXPECT_LE(c.offload_removals + c.offload_install_failed, c.offload_installs) << seed;
        EXPECT_GT(c.offload_installs, 300u);
        EXPECT_GT(c.offload_queue_full, 0u);
        EXPECT_GT(c.offload_touched, 1000u);
        if (::testing::Test::HasFailure() && !failed_before) {
            c.for_each([](std::string_view name, std::uint64_t v) { std::printf("%s=%llu ", std::string(name).c_str(), static_cast<unsigned long long>(v)); });
            std::printf("\n");
        }
        EXPECT_EQ(c.flows_created, c.flows_expired + c.flows_removed_endpoint + c.flows_removed_stale);
    }
}

}  // namespace
}  // namespace andromeda::nat
