// NAT in the kernel against the pipeline (issue 28). node1 is the NAT gateway of orange and purple
// (differential_fabric.hpp), with an uplink whose punt pair, like the underlay's, is in the port
// map as the daemon writes it, and fp_config's uplink (its device, its MAC, its router's MAC).
// Every flow is opened as the daemon sees it: its first packets go through both sides (the kernel
// has no entry and punts them; the NatPipeline, the authority, decides the flow), the NAT engine's
// changes are drained and written into andromeda_nat_flows by io::NatFlowMap, and from then on
// each packet goes through both sides: a local tenant's through andromeda_tc_tenant on its port, a
// tenant's on node2 (or node3) through andromeda_xdp and andromeda_tc_underlay, the outside's
// through andromeda_tc_uplink, against the NatPipeline from that port. They must agree byte for
// byte and on the place (differential_check.hpp), or the kernel punts (to the port's punt device,
// with its punt_* reason) or passes to the host what is not NAT's; and every translation is counted
// on its flow's entry, which the daemon's sync reads back into the engine.
//
// Here: crafted flows (TCP, UDP, ICMP echo; tenants here, on node2 and on node3; port forwards;
// one tuple in two VPCs and under three protocols), each with every shape of its packets
// (nat_cases.hpp); checksums at their edges; GSO packets; random flows and packets. Flows living
// and dying are nat_state_test.cpp's; proof that the comparison can fail, nat_mutation_test.cpp's.
//
// The tc programs run on CHECKSUM_COMPLETE skbs (NatDifferential): beyond the bytes, the kernel
// checks after each run that skb->csum still sums the packet, which holds only when every
// pseudo-header change was declared as one (BPF_F_PSEUDO_HDR) and every other change was offset by
// a checksum update or added to skb->csum. BPF_PROG_TEST_RUN cannot make CHECKSUM_PARTIAL skbs:
// their one difference, only the pseudo-header's changes patched into the checksum field, rests on
// the same flag, and the NAT end-to-end tests (tenants and the outside at their offload defaults)
// run them for real. GSO packets it makes with a size but no type, enough for the translations
// that do not resize the packet (GsoPackets).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/pkt_cls.h>

#include <algorithm>
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

void add(Tally& into, const Tally& from) {
    for (const auto& [k, n] : from.pairs) into.pairs[k] += n;
    for (const auto& [k, n] : from.fast_path) into.fast_path[k] += n;
    into.cases += from.cases;
    into.failures += from.failures;
}

// clang-format off
std::vector<NatFlow> crafted_flows() {
    return {
        {"orange", 10, kUdp, 40000, kGoogle, 53},
        {"orange", 20, kUdp, 40001, ip4(8, 8, 4, 4), 123},
        {"orange", 30, kUdp, 40002, kQuad9, 53},                    // its tenant on node3 (no next hop)
        {"orange", 11, kTcp, 50000, kWeb, 443},
        {"orange", 21, kTcp, 50001, kWeb, 80},
        {"orange", 10, kIcmp, 0x1234, ip4(1, 1, 1, 1), 0},
        {"orange", 20, kIcmp, 0x4321, ip4(1, 0, 0, 1), 0},
        {"orange", 10, kTcp, 80, ip4(203, 0, 113, 77), 33333, 8080},    // port forwards
        {"orange", 20, kUdp, 53, ip4(203, 0, 113, 78), 44444, 5353},
        {"orange", 21, kTcp, 22, ip4(203, 0, 113, 79), 55555, 2222},
        {"orange", 30, kUdp, 6000, ip4(203, 0, 113, 80), 6001, 6000},
        {"purple", 10, kUdp, 40000, kGoogle, 53},                   // orange .10's tuple, another VPC
        {"purple", 20, kUdp, 40001, ip4(8, 8, 4, 4), 123},
        {"orange", 10, kTcp, 40000, kGoogle, 53},                   // the UDP flow's tuple, TCP
        {"orange", 10, kIcmp, 40000, kGoogle, 0},                   // ... its port as an echo identifier
    };
}
// clang-format on

// The kernel counted `out` packets going out and `in` coming in on the flow's entries, and the
// daemon's sync (io::NatFlowMap::sync) shows them on the engine's flow (`andromedactl conntrack`).
void expect_kernel_counts(World& w, const NatFlow& f, std::uint64_t out, std::uint64_t in) {
    const auto out_entry = w.nat_entry(f.outbound_key());
    const auto in_entry = w.nat_entry(f.inbound_key());
    ASSERT_TRUE(out_entry && in_entry) << f.name();
    EXPECT_EQ(out_entry->packets, out) << f.name();
    EXPECT_EQ(in_entry->packets, in) << f.name();
    w.nat_flow_map().sync(w.nat(), w.now());
    const bool inbound_origin = f.forward != 0;
    int found = 0;
    for (const nat::FlowInfo& info : w.nat().flows(w.now())) {
        const auto& o = info.original;
        const bool ours =
            info.vni == f.vpc_def().vni && static_cast<std::uint8_t>(info.protocol) == f.protocol &&
            (inbound_origin
                 ? o.source.value() == f.remote && o.source_port == f.remote_port &&
                       o.destination.value() == f.vpc_def().nat_address && o.destination_port == f.nat_port
                 : o.source.value() == f.endpoint_def().ip && o.destination.value() == f.remote &&
                       o.source_port == f.tenant_port && (f.protocol == kIcmp || o.destination_port == f.remote_port));
        if (!ours) continue;
        ++found;
        EXPECT_TRUE(info.offloaded) << f.name();
        EXPECT_EQ(info.kernel_original.packets, inbound_origin ? in : out) << f.name();
        EXPECT_EQ(info.kernel_reply.packets, inbound_origin ? out : in) << f.name();
    }
    EXPECT_EQ(found, 1) << f.name() << ": the engine's flows";
}

// The kernel's run of a GSO packet: its outcome, what it sent (or punted) and its flow entry.
struct GsoRun {
    Outcome outcome;
    Bytes out;
    NatUse use;
    dataplane::PortId target = 0;  // where a translated packet goes
};

// Runs the GSO packet `c` of `segments` segments of `mss` bytes through the kernel.
GsoRun run_gso_kernel(World& w, const Case& c, std::uint16_t mss, std::size_t segments) {
    const SkbShape plain = w.skb_shape();
    SkbShape gso = plain;
    gso.gso_size = mss;
    gso.gso_segs = static_cast<std::uint16_t>(segments);
    w.set_skb_shape(gso);
    GsoRun r;
    r.target = w.uplink();
    if (c.port == kUplink) {
        const UplinkBpf b = w.run_uplink(c.frame);
        r.outcome = uplink_outcome(b, c.frame);
        r.out = b.run.out, r.use = b.nat;
        r.target = r.outcome.name == "nat_local" ? b.local_target : w.underlay();
    } else if (c.port == kUnderlay) {
        const UnderlayBpf b = w.run_underlay(c.frame);
        r.outcome = xdp_outcome(b);
        if (r.outcome.problem.empty() && r.outcome.name == "fastpath") r.outcome = tc_underlay_outcome(b, c.frame);
        r.out = b.tc.out, r.use = b.nat;
    } else {
        const TenantBpf b = w.run_tenant(w.tenant(c.port), c.frame);
        r.outcome = tenant_outcome(b, c.frame);
        r.out = b.run.out, r.use = b.nat;
    }
    w.set_skb_shape(plain);
    return r;
}

// Where the first difference of `a` and `b` is, for a report.
std::string difference(const Bytes& a, const Bytes& b) {
    const auto [i, j] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
    if (i == a.end() && j == b.end()) return "";
    return "byte " + std::to_string(i - a.begin()) + " of " + std::to_string(a.size()) + " vs " +
           std::to_string(b.size());
}

// The kernel's run `k` of the GSO packet `c` of `mss`-byte segments against the pipeline's runs of
// its segments (what the punt pair's GSO hands the pipeline): the kernel translates the packet
// whole where the pipeline translates each segment, to the same place; the kernel's packet,
// segmented as the kernel's GSO segments it later (gso_segments), is the pipeline's, segment for
// segment, and its own checksums hold over all of it. Or the kernel punts it, unchanged. Every
// way they disagree; empty when they agree.
std::vector<std::string> check_gso(World& w, const Case& c, std::uint16_t mss, const GsoRun& k) {
    if (!k.outcome.problem.empty()) return {k.outcome.problem};
    std::vector<std::string> problems;
    const std::string& outcome = k.outcome.name;
    const bool translated = outcome == "nat_out" || outcome == "nat_local" || outcome == "nat_encap";
    if (const std::string n = check_nat_use(k.use, translated); !n.empty()) problems.push_back(n);
    if (!translated) {
        if (outcome.starts_with("punt_") && k.out != c.frame) problems.push_back("the punted packet was changed");
        return problems;
    }
    const std::size_t ip = c.port == kUnderlay ? ANDROMEDA_ENCAP_OVERHEAD + 14 : 14;
    const std::size_t out_ip = outcome == "nat_encap" ? ANDROMEDA_ENCAP_OVERHEAD + 14 : 14;
    if (!checksums_hold(k.out, out_ip))
        problems.push_back("the translated packet's checksums do not hold over all of it");
    const std::vector<Bytes> segments = gso_segments(c.frame, ip, mss), out = gso_segments(k.out, out_ip, mss);
    if (out.size() != segments.size())
        problems.push_back("the translated packet makes " + std::to_string(out.size()) + " segments, not " +
                           std::to_string(segments.size()));
    const dataplane::PortId port = c.port == kUplink     ? w.uplink()
                                   : c.port == kUnderlay ? w.underlay()
                                                         : w.tenant(c.port);
    for (std::size_t i = 0; i < std::min(segments.size(), out.size()); ++i) {
        const PipelineOut p = w.run_pipeline(port, segments[i]);
        const std::string segment = "segment " + std::to_string(i) + ": ";
        if (p.emitted.size() != 1 || p.emitted[0].first != k.target) {
            problems.push_back(segment + "the fast path sent the packet to " + std::to_string(k.target) +
                               ", the pipeline: " + describe(p));
            continue;
        }
        Bytes mine = out[i];
        if (out_ip != 14) set_ipv4_id(mine, 14, test_support::get16(&p.emitted[0].second[18]));  // (as run_case)
        if (const std::string d = difference(mine, p.emitted[0].second); !d.empty())
            problems.push_back(segment + "differs from the pipeline's at " + d);
    }
    return problems;
}

TEST_P(NatDifferential, CraftedFlows) {
    World& w = *world_;
    std::vector<NatFlow> flows = crafted_flows();
    Tally tally;
    open(flows, tally);
    for (const NatFlow& f : flows) {
        Tally flow;
        for (const Case& c : flow_cases(GetParam(), f)) run_case(w, c, flow, "crafted");
        const bool in_translated = translated_in(f) != "punt_no_next_hop";
        expect_kernel_counts(w, f, static_cast<std::uint64_t>(flow.count(kTranslatedOut)),
                             in_translated ? static_cast<std::uint64_t>(flow.count(translated_in(f))) : 0);
        add(tally, flow);
    }
    EXPECT_EQ(tally.failures, 0) << tally.report();
    std::printf("crafted NAT flows (%s):\n%s", to_string(GetParam()), tally.report().c_str());
    RecordProperty("frames", tally.cases);
    // Both distinct tuples of one flow in two VPCs, and of one tuple under three protocols, went
    // into the kernel as flows of their own.
    EXPECT_EQ(w.nat_flow_map().counters().install_conflict, 0u);
    EXPECT_GE(tally.count("nat_encap"), 20);
    EXPECT_GE(tally.count("nat_local"), 20);
}

// The translated packet's checksum, worked out from the packet alone (nat_cases.hpp), is what
// both sides emit: a zero sum (UDP 0xffff, TCP and ICMP 0), UDP's "none" kept, 0xffff taken in.
TEST_P(NatDifferential, ChecksumEdges) {
    std::vector<NatFlow> flows = {{"orange", 10, kUdp, 40010, kGoogle, 53},  {"orange", 20, kUdp, 40011, kGoogle, 53},
                                  {"orange", 11, kTcp, 50010, kWeb, 443},    {"orange", 21, kTcp, 50011, kWeb, 443},
                                  {"orange", 10, kIcmp, 0x7000, kGoogle, 0}, {"orange", 20, kIcmp, 0x7001, kGoogle, 0}};
    Tally tally;
    open(flows, tally);
    int checked = 0;
    for (const NatFlow& f : flows)
        for (const ChecksumCase& c : checksum_cases(GetParam(), f)) {
            const PipelineOut p = run(c.c, tally, "checksums");
            ASSERT_EQ(p.emitted.size(), 1u) << c.c.name;
            const Bytes& out = p.emitted[0].second;
            ASSERT_GE(out.size(), c.checksum_at + 2) << c.c.name;
            EXPECT_EQ(test_support::get16(&out[c.checksum_at]), c.expected) << c.c.name;
            ++checked;
        }
    EXPECT_EQ(tally.failures, 0) << tally.report();
    EXPECT_EQ(checked, 6 * 2 * 3 + 2 * 2);
}

// GSO packets, as a tenant's TSO or GRO on the uplink make them, of TCP and UDP flows both ways:
// the kernel translates them whole (its checksum helpers patch the whole packet's checksum; the
// punt pair would have handed the pipeline their segments), or punts those whose segments do not
// fit the overlay.
TEST_P(NatDifferential, GsoPackets) {
    World& w = *world_;
    std::vector<NatFlow> flows = {
        {"orange", 10, kTcp, 50800, kWeb, 443},   {"orange", 20, kTcp, 50801, kWeb, 443},
        {"orange", 30, kTcp, 50802, kWeb, 443},   {"orange", 10, kUdp, 40800, kGoogle, 53},
        {"orange", 20, kUdp, 40801, kGoogle, 53}, {"orange", 10, kTcp, 80, ip4(203, 0, 113, 95), 40900, 8080}};
    Tally tally;
    open(flows, tally);
    const std::uint32_t mtu = vpc_named("orange").inner_mtu();
    struct Row {
        const NatFlow& f;
        bool outbound;
        std::uint16_t mss;
        std::size_t payload;
        std::string expect;
    };
    std::vector<Row> rows;
    for (const NatFlow& f : flows) {
        const std::uint16_t fits = static_cast<std::uint16_t>(mtu - 20 - (f.protocol == kTcp ? 20 : 8));
        for (const bool outbound : {true, false}) {
            const std::string translated = outbound ? kTranslatedOut : translated_in(f);
            // A test run's GSO packet has no GSO type, and bpf_skb_adjust_room resizes no GSO
            // packet of a type it does not know: the paths that decapsulate (a tenant on another
            // node, going out) or encapsulate (coming in to one) cannot take them here. Their
            // length checks, which come first, can.
            const bool resized = outbound ? !f.local() : translated == "nat_encap";
            const std::vector<Row> sizes = {
                {f, outbound, 1000, 3000, translated},  // three whole segments
                {f, outbound, 1000, 2001, translated},  // the last of one byte
                {f, outbound, 536, 2000, translated},
                {f, outbound, fits, 2u * fits, translated},  // segments of the VPC's MTU
                // One byte more per segment than the overlay carries: the pipeline's, for a
                // tenant on another node (Fragmentation Needed, or fragments); a local tenant's
                // packets take no overlay.
                {f, outbound, static_cast<std::uint16_t>(fits + 1), 2u * fits + 2,
                 translated == "nat_encap" ? "punt_too_big" : translated},
            };
            for (const Row& r : sizes)
                if (!resized || r.expect.starts_with("punt_")) rows.push_back(r);
        }
    }
    std::vector<std::string> problems;
    int translated = 0;
    for (const Row& r : rows) {
        const std::size_t header = 20 + (r.f.protocol == kTcp ? 20 : 8);
        const Ipv4Frame spec =
            r.outbound ? outbound_spec(r.f, header + r.payload) : inbound_spec(r.f, header + r.payload);
        const std::string name = "GSO, " + std::to_string(r.payload) + " bytes in segments of " + std::to_string(r.mss);
        const Case c = r.outbound ? from_tenant(GetParam(), r.f, ipv4(spec), name, r.expect)
                                  : from_outside(ipv4(spec), r.f.name() + ", in: " + name, r.expect);
        const GsoRun k = run_gso_kernel(w, c, r.mss, (r.payload + r.mss - 1) / r.mss);
        std::vector<std::string> found = check_gso(w, c, r.mss, k);
        if (k.outcome.name != c.expect)
            found.push_back("expected the fast path's outcome " + c.expect + ", got " + k.outcome.name);
        translated += k.outcome.name == c.expect && c.expect.starts_with("nat_");
        for (const std::string& p : found) problems.push_back(c.name + ": " + p);
    }
    EXPECT_EQ(problems, std::vector<std::string>{});
    EXPECT_EQ(translated, 3 * 2 * 5) << "the local tenant's flows, both ways, every size";
    EXPECT_EQ(tally.failures, 0) << tally.report();

    // Not vacuous: a real translation, then broken one way at a time.
    const NatFlow& f = flows[0];
    const Case c = from_tenant(GetParam(), f, ipv4(outbound_spec(f, 40 + 3000)), "GSO, mutated", kTranslatedOut);
    const GsoRun k = run_gso_kernel(w, c, 1000, 3);
    ASSERT_EQ(check_gso(w, c, 1000, k), std::vector<std::string>{});
    const std::vector<std::tuple<std::string, std::function<void(GsoRun&)>, std::vector<std::string>>> mutations = {
        {"its TCP checksum",
         [](GsoRun& m) { m.out[14 + 20 + 16] ^= 1; },
         {"the translated packet's checksums do not hold over all of it"}},
        {"a byte of its last segment's payload",
         [](GsoRun& m) { m.out.back() ^= 1; },
         {"the translated packet's checksums do not hold over all of it",
          "segment 2: differs from the pipeline's at byte 51 of 1054 vs 1054"}},
        {"its source port, the checksum along",
         [](GsoRun& m) {
             m.out[14 + 20 + 1] ^= 1;
             test_support::refresh_transport_checksum(m.out, 14);
         },
         {"segment 0: differs from the pipeline's at byte 35 of 1054 vs 1054",
          "segment 1: differs from the pipeline's at byte 35 of 1054 vs 1054",
          "segment 2: differs from the pipeline's at byte 35 of 1054 vs 1054"}},
        {"a byte short", [](GsoRun& m) { m.out.pop_back(); }, {}},
        {"not counted on its entry", [](GsoRun& m) { m.use.after = m.use.before; }, {}},
    };
    for (const auto& [what, mutate, expected] : mutations) {
        GsoRun m = k;
        mutate(m);
        const std::vector<std::string> found = check_gso(w, c, 1000, m);
        if (expected.empty())
            EXPECT_FALSE(found.empty()) << what;
        else
            EXPECT_EQ(found, expected) << what;
    }
}

constexpr int kRandomFlows = 40;
constexpr int kRandomPackets = 3000;  // per encapsulation

// Random flows, opened, then random packets of them (and of no flow) both ways; the engine's
// changes applied every few packets (FIN and RST take flows out, new tuples come in) and the
// kernel's counts synced back now and then, as the daemon does.
TEST_P(NatDifferential, RandomFlows) {
    World& w = *world_;
    const std::uint32_t seed = seed_for(GetParam() == Encap::vxlan ? 0x4a7f0002 : 0x4a7f0001);
    Gen g(seed);
    std::vector<NatFlow> flows;
    std::set<std::tuple<std::string, std::uint32_t, std::uint8_t, std::uint16_t, std::uint32_t, std::uint16_t,
                        std::uint16_t>>
        seen;
    Tally opening;
    for (int attempt = 0; attempt < 10 * kRandomFlows && static_cast<int>(flows.size()) < kRandomFlows; ++attempt) {
        NatFlow f = random_flow(g);
        // (A tenant port that a forward leads to sends through the forward: not a flow of its own.)
        if (f.forward == 0 &&
            (f.tenant_port == 80 || f.tenant_port == 53 || f.tenant_port == 22 || f.tenant_port == 6000))
            continue;
        const auto key =
            f.forward != 0
                ? std::tuple{std::string(), 0u, f.protocol, f.forward, f.remote, f.remote_port, f.forward}
                : std::tuple{f.vpc, f.tenant, f.protocol, f.tenant_port, f.remote, f.remote_port, std::uint16_t{0}};
        if (!seen.insert(key).second) continue;
        ASSERT_TRUE(open_flow(w, f, opening)) << f.name() << " (seed " << seed << ")";
        flows.push_back(f);
    }
    ASSERT_EQ(static_cast<int>(flows.size()), kRandomFlows);
    const Tally tally = run_random("random NAT packets", seed, kRandomPackets, [&](int i) {
        if (i % 20 == 19) w.apply_nat_changes();
        if (i % 500 == 499) w.nat_flow_map().sync(w.nat(), w.now());
        return random_nat_packet(g, GetParam(), flows);
    });
    // Not vacuous: every kind of outcome occurs often.
    EXPECT_GE(tally.count("nat_out"), kRandomPackets / 8);
    EXPECT_GE(tally.count("nat_local") + tally.count("nat_encap"), kRandomPackets / 10);
    EXPECT_GE(tally.count("punt_nat_no_flow"), kRandomPackets / 50);
    EXPECT_GE(tally.count("punt_nat_control"), kRandomPackets / 50);
    EXPECT_GE(tally.count_prefix("punt_ip_header") + tally.count("socket"), kRandomPackets / 50);
}

ANDROMEDA_FOR_BOTH_ENCAPSULATIONS(NatDifferential);

}  // namespace
}  // namespace andromeda::fast_path_test
