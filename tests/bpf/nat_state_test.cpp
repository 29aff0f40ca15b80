// NAT in the kernel against the pipeline (nat_test.cpp says how), as flows live and die: TCP
// teardowns and reopenings, expiry past the grace, a reload that removes an endpoint and the
// forwards, entries colliding with a new flow, a full map, and the punt pairs that carry what the
// kernel leaves to the pipeline.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/pkt_cls.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "nat_cases.hpp"

namespace andromeda::fast_path_test {
namespace {

// A FIN or RST leaves the kernel (the flow stays in the pipeline, which translates what follows),
// and the tuple's next connection is installed again once established.
TEST_P(NatDifferential, TcpTeardown) {
    World& w = *world_;
    struct Teardown {
        NatFlow flow;
        std::uint8_t flags;
        bool from_tenant;
    };
    std::vector<Teardown> rows = {{{"orange", 10, kTcp, 50100, kWeb, 443}, kFin | kAck, true},
                                  {{"orange", 20, kTcp, 50101, kWeb, 443}, kFin | kAck, false},
                                  {{"orange", 11, kTcp, 50102, kWeb, 443}, kRst, false},
                                  {{"orange", 21, kTcp, 50103, kWeb, 443}, kRst | kAck, true},
                                  {{"orange", 10, kTcp, 80, ip4(203, 0, 113, 90), 40000, 8080}, kFin | kAck, false}};
    Tally tally;
    for (Teardown& row : rows) {
        NatFlow& f = row.flow;
        ASSERT_TRUE(open_flow(w, f, tally));
        const std::string in_ok = translated_in(f);
        using Send = std::function<PipelineOut(std::uint8_t flags, const std::string& expect)>;
        const Send out = [&](std::uint8_t flags, const std::string& expect) {
            return run(
                from_tenant(GetParam(), f, ipv4(with(outbound_spec(f), [&](Ipv4Frame& s) { s.tcp_flags = flags; })),
                            "flags " + std::to_string(flags), expect),
                tally);
        };
        const Send in = [&](std::uint8_t flags, const std::string& expect) {
            return run(from_outside(ipv4(with(inbound_spec(f), [&](Ipv4Frame& s) { s.tcp_flags = flags; })),
                                    f.name() + ", in: flags " + std::to_string(flags), expect),
                       tally);
        };
        out(kPsh | kAck, kTranslatedOut);
        in(kPsh | kAck, in_ok);
        (row.from_tenant ? out : in)(row.flags, "punt_nat_control");
        const auto changes = w.apply_nat_changes();
        ASSERT_EQ(changes.size(), 1u) << f.name();
        EXPECT_EQ(changes[0].kind, nat::OffloadChange::Kind::remove);
        EXPECT_EQ(changes[0].reason, row.flags & kRst ? nat::OffloadReason::tcp_reset : nat::OffloadReason::tcp_fin);
        EXPECT_FALSE(w.nat_entry(f.outbound_key()) || w.nat_entry(f.inbound_key())) << f.name();
        // The pipeline carries the rest of the connection.
        const PipelineOut after_out = out(kAck, "punt_nat_no_flow");
        const PipelineOut after_in = in(kAck, "punt_nat_no_flow");
        EXPECT_EQ(after_out.nat_path, dataplane::NatPath::to_uplink) << f.name();
        EXPECT_EQ(after_in.nat_path, dataplane::NatPath::to_tenant) << f.name();
        // A new connection on the tuple: the kernel again once it is established.
        const bool outbound_origin = f.forward == 0;
        (outbound_origin ? out : in)(kSyn, "punt_nat_control");
        (outbound_origin ? in : out)(kSyn | kAck, "punt_nat_control");
        (outbound_origin ? out : in)(kAck, "punt_nat_no_flow");
        w.apply_nat_changes();
        EXPECT_TRUE(w.nat_entry(f.outbound_key()) && w.nat_entry(f.inbound_key())) << f.name() << ": reinstalled";
        out(kPsh | kAck, kTranslatedOut);
        in(kPsh | kAck, in_ok);
    }
    EXPECT_EQ(tally.failures, 0) << tally.report();
}

// An offloaded flow outlives its timeout by the grace (both sides still translate it), then
// expires: its entries leave the kernel, its packets are the pipeline's, and the next packet out
// opens it again. ICMP (60 s) expires first, UDP (120 s) later.
TEST_P(NatDifferential, ExpiredFlows) {
    World& w = *world_;
    const nat::NatTimeouts timeouts;
    const auto grace = w.nat().settings().offload.grace;
    std::vector<NatFlow> icmp = {{"orange", 11, kIcmp, 0x2000, kGoogle, 0}, {"orange", 21, kIcmp, 0x2001, kGoogle, 0}};
    std::vector<NatFlow> udp = {{"orange", 10, kUdp, 40200, kGoogle, 53}, {"orange", 20, kUdp, 40201, kGoogle, 53}};
    Tally tally;
    open(icmp, tally);
    open(udp, tally);
    const auto in = [&](const NatFlow& f, const std::string& expect) {
        run(from_outside(ipv4(inbound_spec(f)), f.name() + ", in", expect), tally);
    };
    const auto installed = [&](const NatFlow& f) {
        return w.nat_entry(f.outbound_key()).has_value() && w.nat_entry(f.inbound_key()).has_value();
    };
    const auto gone = [&](const NatFlow& f) {
        return !w.nat_entry(f.outbound_key()).has_value() && !w.nat_entry(f.inbound_key()).has_value();
    };
    // Expired and removed: punted; the next packet out opens it again through the pipeline, and
    // once its install is applied the kernel translates it again.
    const auto reopen = [&](NatFlow& f) {
        in(f, "punt_nat_no_flow");
        const PipelineOut p =
            run(from_tenant(GetParam(), f, ipv4(outbound_spec(f)), "after expiry", "punt_nat_no_flow"), tally);
        ASSERT_EQ(p.emitted.size(), 1u) << f.name();
        f.nat_port = test_support::get16(&p.emitted[0].second[f.protocol == kIcmp ? 38 : 34]);
        w.apply_nat_changes();
        EXPECT_TRUE(installed(f)) << f.name();
        run(from_tenant(GetParam(), f, ipv4(outbound_spec(f)), "reopened", kTranslatedOut), tally);
        in(f, translated_in(f));
    };

    w.advance(timeouts.icmp + grace / 2);  // ICMP past its timeout, inside the grace
    EXPECT_EQ(w.nat().expire(w.now()), 0u);
    EXPECT_TRUE(w.apply_nat_changes().empty());
    for (const auto* group : {&icmp, &udp})
        for (const NatFlow& f : *group) in(f, translated_in(f));
    w.advance(timeouts.icmp + grace + std::chrono::seconds(1));  // ICMP past the grace, UDP not
    EXPECT_EQ(w.nat().expire(w.now()), icmp.size());
    for (const nat::OffloadChange& c : w.apply_nat_changes()) EXPECT_EQ(c.reason, nat::OffloadReason::expired);
    for (NatFlow& f : icmp) {
        EXPECT_TRUE(gone(f)) << f.name();
        reopen(f);
    }
    for (const NatFlow& f : udp) {
        EXPECT_TRUE(installed(f)) << f.name();
        in(f, translated_in(f));
    }
    w.advance(timeouts.udp + grace / 2);  // UDP inside its grace
    w.nat().expire(w.now());
    w.apply_nat_changes();
    for (const NatFlow& f : udp) in(f, translated_in(f));
    w.advance(timeouts.udp + grace + std::chrono::seconds(1));
    EXPECT_GE(w.nat().expire(w.now()), udp.size());
    w.apply_nat_changes();
    for (NatFlow& f : udp) {
        EXPECT_TRUE(gone(f)) << f.name();
        reopen(f);
    }
    EXPECT_EQ(tally.failures, 0) << tally.report();
}

// A reload that removes an endpoint and the port forwards takes their flows out of the kernel
// before it returns; the other flows stay there.
TEST_P(NatDifferential, ReloadRemovesFlows) {
    World& w = *world_;
    std::vector<NatFlow> gone = {{"orange", 11, kUdp, 40300, kGoogle, 53},
                                 {"orange", 11, kTcp, 50300, kWeb, 443},
                                 {"orange", 10, kTcp, 80, ip4(203, 0, 113, 91), 40001, 8080},
                                 {"orange", 20, kUdp, 53, ip4(203, 0, 113, 92), 40002, 5353}};
    std::vector<NatFlow> kept = {{"orange", 10, kUdp, 40301, kGoogle, 53}, {"orange", 20, kTcp, 50301, kWeb, 443}};
    Tally tally;
    open(gone, tally);
    open(kept, tally);
    const std::uint64_t removals = w.nat_flow_map().counters().removals;
    ASSERT_TRUE(w.reload(fabric_toml(GetParam(), {{500, ip4(10, 5, 0, 11)}}, false))) << w.error();
    EXPECT_EQ(w.nat_flow_map().counters().removals - removals, gone.size());
    for (const NatFlow& f : gone) {
        EXPECT_FALSE(w.nat_entry(f.outbound_key()) || w.nat_entry(f.inbound_key())) << f.name();
        run(from_outside(ipv4(inbound_spec(f)), f.name() + ", in", "punt_nat_no_flow"), tally);
        // (The removed endpoint's port is no port any more: its tc program drops what it sends.)
        run(from_tenant(GetParam(), f, ipv4(outbound_spec(f)), "after the reload",
                        f.tenant == 11 ? "drop_no_port" : "punt_nat_no_flow"),
            tally);
    }
    for (const NatFlow& f : kept) {
        EXPECT_TRUE(w.nat_entry(f.outbound_key()) && w.nat_entry(f.inbound_key())) << f.name();
        run(from_tenant(GetParam(), f, ipv4(outbound_spec(f)), "after the reload", kTranslatedOut), tally);
        run(from_outside(ipv4(inbound_spec(f)), f.name() + ", in", translated_in(f)), tally);
    }
    EXPECT_EQ(tally.failures, 0) << tally.report();
}

// An entry holding another flow on a new flow's key (the engine never makes one; a lost removal or
// a foreign writer could): the install is refused and the flow stays with the pipeline; until the
// daemon's next sync deletes the stale entry the kernel translates by it, which the comparison
// reports; from then on the kernel punts the flow.
TEST_P(NatDifferential, CollidingEntries) {
    World& w = *world_;
    const int flows_map = World::fd(w.skel().maps.andromeda_nat_flows);
    Tally tally;
    const auto counters = [&] { return w.nat_flow_map().counters(); };
    const auto problems_of = [&](const Case& c) {
        if (c.port == kUplink) {
            const UplinkBpf b = w.run_uplink(c.frame);
            return check_uplink(c.frame, b, w.run_pipeline(w.uplink(), c.frame), w.underlay());
        }
        const std::uint32_t port = w.tenant(c.port);
        const TenantBpf b = w.run_tenant(port, c.frame);
        return check_tenant(c.frame, b, w.run_pipeline(port, c.frame), w.underlay(), w.uplink());
    };
    const auto expect_caught = [&](const Case& c, const std::string& problem) {
        const auto problems = problems_of(c);
        ASSERT_EQ(problems.size(), 1u) << c.name << ": " << joined(problems);
        EXPECT_NE(problems[0].find(problem), std::string::npos) << problems[0];
    };

    // On the outbound key: another NAT port for the same tenant tuple.
    NatFlow f{"orange", 10, kUdp, 41000, kGoogle, 53};
    andromeda_nat_entry stale{};
    stale.vni = 500;
    stale.tenant_ip = htonl(f.endpoint_def().ip);
    stale.nat_ip = htonl(f.vpc_def().nat_address);
    stale.remote_ip = htonl(f.remote);
    stale.tenant_port = htons(f.tenant_port);
    stale.nat_port = htons(static_cast<std::uint16_t>(f.tenant_port ^ 0x5555));
    stale.remote_port = htons(f.remote_port);
    stale.protocol = kUdp;
    const andromeda_nat_key out_key = f.outbound_key();
    ASSERT_EQ(bpf_map_update_elem(flows_map, &out_key, &stale, BPF_NOEXIST), 0);
    const Case first = from_tenant(GetParam(), f, ipv4(outbound_spec(f)), "data", "");
    expect_caught(first, "the translated frames differ at byte 34");
    const auto before = counters();
    w.apply_nat_changes();
    EXPECT_EQ(counters().install_conflict, before.install_conflict + 1);
    EXPECT_EQ(counters().installs, before.installs);
    expect_caught(first, "the translated frames differ at byte 34");
    // (No inbound entry was written: the pipeline answers.)
    const PipelineOut sent = w.run_pipeline(w.tenant(f.endpoint_def().port), first.frame);
    ASSERT_EQ(sent.emitted.size(), 1u);
    f.nat_port = test_support::get16(&sent.emitted[0].second[34]);
    EXPECT_NE(f.nat_port, ntohs(stale.nat_port));
    run(from_outside(ipv4(inbound_spec(f)), f.name() + ", in", "punt_nat_no_flow"), tally);
    // The daemon's sync deletes what the engine does not know; the flow stays the pipeline's.
    w.nat_flow_map().sync(w.nat(), w.now());
    EXPECT_EQ(counters().stale_deleted, before.stale_deleted + 1);
    w.apply_nat_changes();
    run(Case{first.name, first.port, first.frame, "punt_nat_no_flow"}, tally);
    run(from_outside(ipv4(inbound_spec(f)), f.name() + ", in", "punt_nat_no_flow"), tally);

    // On the inbound key: another tenant behind the same NAT port and remote.
    NatFlow g{"orange", 11, kUdp, 42000, ip4(8, 8, 4, 4), 53};
    const PipelineOut opened =
        run(from_tenant(GetParam(), g, ipv4(outbound_spec(g)), "first", "punt_nat_no_flow"), tally);
    ASSERT_EQ(opened.emitted.size(), 1u);
    g.nat_port = test_support::get16(&opened.emitted[0].second[34]);
    stale.tenant_ip = htonl(ip4(10, 5, 0, 10));
    stale.tenant_port = htons(g.tenant_port);
    stale.nat_port = htons(g.nat_port);
    stale.remote_ip = htonl(g.remote);
    const andromeda_nat_key in_key = g.inbound_key();
    ASSERT_EQ(bpf_map_update_elem(flows_map, &in_key, &stale, BPF_NOEXIST), 0);
    const auto before_g = counters();
    w.apply_nat_changes();
    EXPECT_EQ(counters().install_conflict, before_g.install_conflict + 1);
    EXPECT_FALSE(w.nat_entry(g.outbound_key())) << "the half written is deleted";
    run(from_tenant(GetParam(), g, ipv4(outbound_spec(g)), "data", "punt_nat_no_flow"), tally);
    const Case reply = from_outside(ipv4(inbound_spec(g)), g.name() + ", in", "punt_nat_no_flow");
    expect_caught(reply, "the fast path translated it into ifindex");
    w.nat_flow_map().sync(w.nat(), w.now());
    run(reply, tally);
    EXPECT_EQ(tally.failures, 0) << tally.report();
}

// The map full: an install is refused whole (a half written is deleted), the flow stays with the
// pipeline (the kernel punts it), and it is not offered again; flows installed before keep going.
TEST_P(NatDifferential, FullMap) {
    World& w = *world_;
    const int flows_map = World::fd(w.skel().maps.andromeda_nat_flows);
    Tally tally;
    std::vector<NatFlow> before = {{"orange", 10, kUdp, 40400, kGoogle, 53}};
    open(before, tally);
    // Fillers up to one entry short of the map's size: keys of no direction, never looked up.
    std::size_t present = 0;
    andromeda_nat_key k{}, next{};
    for (const void* prev = nullptr; bpf_map_get_next_key(flows_map, prev, &next) == 0; prev = &k) k = next, ++present;
    const auto fill = [&](std::uint32_t from, std::uint32_t count) {
        std::vector<andromeda_nat_key> keys(count);
        std::vector<andromeda_nat_entry> values(count);
        for (std::uint32_t i = 0; i < count; ++i) {
            keys[i].src = from + i;
            keys[i].direction = 3;
        }
        __u32 n = count;
        LIBBPF_OPTS(bpf_map_batch_opts, opts);
        return bpf_map_update_batch(flows_map, keys.data(), values.data(), &n, &opts) == 0 && n == count;
    };
    const std::uint32_t fillers = ANDROMEDA_MAX_NAT_FLOWS - 1 - static_cast<std::uint32_t>(present);
    ASSERT_TRUE(fill(0, fillers)) << std::strerror(errno);

    // Room for one direction: the second insert fails, the first is taken back.
    NatFlow half{"orange", 11, kUdp, 40401, kGoogle, 53};
    const PipelineOut opened =
        run(from_tenant(GetParam(), half, ipv4(outbound_spec(half)), "first", "punt_nat_no_flow"), tally);
    ASSERT_EQ(opened.emitted.size(), 1u);
    half.nat_port = test_support::get16(&opened.emitted[0].second[34]);
    const auto counts = w.nat_flow_map().counters();
    w.apply_nat_changes();
    EXPECT_EQ(w.nat_flow_map().counters().install_full, counts.install_full + 1);
    EXPECT_FALSE(w.nat_entry(half.outbound_key()) || w.nat_entry(half.inbound_key()));
    // No room at all.
    ASSERT_TRUE(fill(fillers, 1));
    NatFlow none{"orange", 20, kUdp, 40402, kGoogle, 53};
    const PipelineOut opened2 =
        run(from_tenant(GetParam(), none, ipv4(outbound_spec(none)), "first", "punt_nat_no_flow"), tally);
    ASSERT_EQ(opened2.emitted.size(), 1u);
    none.nat_port = test_support::get16(&opened2.emitted[0].second[34]);
    w.apply_nat_changes();
    EXPECT_EQ(w.nat_flow_map().counters().install_full, counts.install_full + 2);
    for (int round = 0; round < 2; ++round) {
        for (const NatFlow& f : {half, none}) {
            run(from_tenant(GetParam(), f, ipv4(outbound_spec(f)), "map full", "punt_nat_no_flow"), tally);
            run(from_outside(ipv4(inbound_spec(f)), f.name() + ", in", "punt_nat_no_flow"), tally);
        }
        run(from_tenant(GetParam(), before[0], ipv4(outbound_spec(before[0])), "installed before", kTranslatedOut),
            tally);
        run(from_outside(ipv4(inbound_spec(before[0])), "installed before, in", "nat_local"), tally);
        // Room again: the refused flows are not offered again, a new one is installed.
        std::vector<andromeda_nat_key> keys(fillers + 1);
        for (std::uint32_t i = 0; i <= fillers; ++i) {
            keys[i].src = i;
            keys[i].direction = 3;
        }
        __u32 n = fillers + 1;
        LIBBPF_OPTS(bpf_map_batch_opts, opts);
        if (round == 0) {
            ASSERT_EQ(bpf_map_delete_batch(flows_map, keys.data(), &n, &opts), 0);
        }
        EXPECT_TRUE(w.apply_nat_changes().empty());
    }
    std::vector<NatFlow> after = {{"orange", 21, kUdp, 40403, kGoogle, 53}};
    open(after, tally);
    EXPECT_EQ(tally.failures, 0) << tally.report();
}

// The punt pairs of the underlay and the uplink, as the daemon writes them into the port map: what
// tc punts reaches the pipeline's socket on the far end (XDP there does not hand it back to tc),
// and what the pipeline sends into the uplink's pair leaves out of the uplink.
TEST_P(NatDifferential, PuntPairs) {
    World& w = *world_;
    Tally tally;
    std::vector<NatFlow> flows = {{"orange", 20, kUdp, 40500, kGoogle, 53}};
    open(flows, tally);
    const NatFlow& f = flows[0];
    const Bytes overlay_out = from_tenant(GetParam(), f, ipv4(outbound_spec(f)), "", "").frame;
    const Bytes reply = ipv4(inbound_spec(f));
    const auto xdp = [&](std::uint32_t ifindex, const Bytes& frame) {
        andromeda_xdp_stats delta{};
        const TestRun r = w.run_xdp(ifindex, frame, delta);
        EXPECT_EQ(r.error, 0);
        return joined(moved(delta, "rx_packets")) + " / " + std::to_string(r.retval);
    };
    const std::string passed = "pass_fastpath / " + std::to_string(XDP_PASS);
    const std::string steered = "drop_no_socket / " + std::to_string(XDP_DROP);  // no socket bound here
    EXPECT_EQ(xdp(w.underlay(), overlay_out), passed) << "on the underlay: for tc";
    EXPECT_EQ(xdp(w.punt_pair(w.underlay()).steering_ifindex, overlay_out), steered) << "punted: to the pipeline";
    EXPECT_EQ(xdp(w.punt_pair(w.uplink()).steering_ifindex, reply), steered) << "punted from the uplink";
    // The pipeline's frame on the uplink's pair: out of the uplink (bpf_redirect, not into a peer).
    const PuntBpf back = w.run_punt(w.punt_pair(w.uplink()).visible_ifindex, reply);
    EXPECT_EQ(back.run.retval, static_cast<std::uint32_t>(TC_ACT_REDIRECT));
    EXPECT_EQ(joined(moved(back.delta)), "return_packets");
    // tc uplink on a device that is no uplink: not its business.
    UplinkBpf elsewhere;
    {
        const auto ports = World::fd(w.skel().maps.andromeda_ports);
        const std::uint32_t uplink = w.uplink();
        const auto moved_away = MapEntryOverride::edited<andromeda_port>(
            ports, uplink, [](andromeda_port& p) { p.role = ANDROMEDA_PORT_TENANT; });
        ASSERT_EQ(moved_away->error(), "");
        elsewhere = w.run_uplink(reply);
    }
    EXPECT_EQ(uplink_outcome(elsewhere, reply).name, "pass");
    EXPECT_EQ(tally.failures, 0) << tally.report();
}

}  // namespace
}  // namespace andromeda::fast_path_test
