// NAT in the kernel against the pipeline (nat_test.cpp says how): proof that the comparison can
// fail. Real outputs of both sides broken one way at a time, and the kernel's NAT entries, fast
// path configuration and ports broken under the real programs, must each be reported.
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

// The comparison is not vacuous: real translations by both sides in every direction, then the
// kernel's output, its place, the pipeline's verdict or the flow entry's accounting broken one way
// at a time, must each be reported.
TEST_P(NatDifferential, ComparatorRejectsMutatedOutputs) {
    World& w = *world_;
    Tally tally;
    std::vector<NatFlow> flows = {{"orange", 10, kUdp, 40600, kGoogle, 53}, {"orange", 20, kUdp, 40601, kGoogle, 53}};
    open(flows, tally);
    const NatFlow &here = flows[0], &there = flows[1];
    const auto drop = [](PipelineOut& p) { p = pipeline_drop(dataplane::DropReason::no_route); };

    // A local tenant's packet out of the uplink.
    const Bytes out_frame = ipv4(outbound_spec(here));
    const std::uint32_t port = w.tenant(here.endpoint_def().port);
    const TenantBpf out = w.run_tenant(port, out_frame);
    const PipelineOut out_p = w.run_pipeline(port, out_frame);
    ASSERT_EQ(tenant_outcome(out, out_frame).name, "nat_out");
    ASSERT_EQ(check_tenant(out_frame, out, out_p, w.underlay(), w.uplink()), std::vector<std::string>{});
    std::vector<Mutation<TenantBpf>> tenant_mutations;
    for (const auto& [what, at] : std::vector<std::pair<std::string, std::size_t>>{{"destination MAC", 5},
                                                                                   {"source MAC", 11},
                                                                                   {"IPv4 total length", 17},
                                                                                   {"IPv4 header checksum", 25},
                                                                                   {"IPv4 source", 29},
                                                                                   {"byte 34", 34},
                                                                                   {"byte 35", 35},
                                                                                   {"byte 40", 40},
                                                                                   {"byte 41", 41}})
        tenant_mutations.push_back(
            {what, [offset = at](TenantBpf& b, PipelineOut&) { b.run.out[offset] ^= 0x01; }, what});
    const std::vector<Mutation<TenantBpf>> more = {
        {"a byte short", [](TenantBpf& b, PipelineOut&) { b.run.out.pop_back(); }, "lengths"},
        {"the pipeline drops it", [&](TenantBpf&, PipelineOut& p) { drop(p); }, "translated it out of the uplink"},
        {"the pipeline sends it elsewhere", [&](TenantBpf&, PipelineOut& p) { p.emitted[0].first = w.underlay(); },
         "translated it out of the uplink"},
        {"not counted on its entry", [](TenantBpf& b, PipelineOut&) { b.nat.after = b.nat.before; },
         "counted 0 packet(s)"},
        {"counted twice", [](TenantBpf& b, PipelineOut&) { ++b.nat.after->packets; }, "counted 2 packet(s)"},
        {"a byte too many counted", [](TenantBpf& b, PipelineOut&) { ++b.nat.after->bytes; }, "counted 1 packet(s) of"},
        {"its use not recorded",
         [](TenantBpf& b, PipelineOut&) { b.nat.after->last_used_ns = b.nat.before->last_used_ns; }, "last use"},
        {"translated without an entry", [](TenantBpf& b, PipelineOut&) { b.nat.before.reset(), b.nat.after.reset(); },
         "no flow entry"},
        {"its entry's flow changed", [](TenantBpf& b, PipelineOut&) { b.nat.after->nat_port ^= 1; },
         "changed the flow"},
    };
    tenant_mutations.insert(tenant_mutations.end(), more.begin(), more.end());
    expect_mutations_reported(out, out_p, tenant_mutations, [&](const TenantBpf& b, const PipelineOut& p) {
        return check_tenant(out_frame, b, p, w.underlay(), w.uplink());
    });

    // A packet of a tenant on node2, decapsulated and out of the uplink.
    const Bytes overlay_frame = from_tenant(GetParam(), there, ipv4(outbound_spec(there)), "", "").frame;
    const UnderlayBpf under = w.run_underlay(overlay_frame);
    const PipelineOut under_p = w.run_pipeline(w.underlay(), overlay_frame);
    ASSERT_EQ(check_underlay(overlay_frame, under, under_p, w.uplink()), std::vector<std::string>{});
    ASSERT_EQ(tc_underlay_outcome(under, overlay_frame).name, "nat_out");
    expect_mutations_reported(
        under, under_p,
        {{"its source port", [](UnderlayBpf& b, PipelineOut&) { b.tc.out[35] ^= 0x01; }, "byte 35"},
         {"its UDP checksum", [](UnderlayBpf& b, PipelineOut&) { b.tc.out[41] ^= 0x01; }, "byte 41"},
         {"left encapsulated", [&](UnderlayBpf& b, PipelineOut&) { b.tc.out = overlay_frame; }, "differ"},
         {"the pipeline drops it", [&](UnderlayBpf&, PipelineOut& p) { drop(p); }, "translated it out of the uplink"},
         {"metadata handed over",
          [](UnderlayBpf& b, PipelineOut&) { b.xdp.meta.assign(sizeof(andromeda_fp_handoff), 1); },
          "XDP handed over metadata"},
         {"not counted on its entry", [](UnderlayBpf& b, PipelineOut&) { b.nat.after = b.nat.before; }, "counted 0"}},
        [&](const UnderlayBpf& b, const PipelineOut& p) { return check_underlay(overlay_frame, b, p, w.uplink()); });

    // The outside's replies: into the local tenant, and through the overlay to node2.
    for (const NatFlow* f : {&here, &there}) {
        const Bytes frame = ipv4(inbound_spec(*f));
        const UplinkBpf b = w.run_uplink(frame);
        const PipelineOut p = w.run_pipeline(w.uplink(), frame);
        const auto check = [&](const UplinkBpf& x, const PipelineOut& y) {
            return check_uplink(frame, x, y, w.underlay());
        };
        ASSERT_EQ(check(b, p), std::vector<std::string>{}) << f->name();
        const bool local = f == &here;
        ASSERT_EQ(uplink_outcome(b, frame).name, local ? "nat_local" : "nat_encap");
        const std::size_t ip = local ? 14 : 64;  // the translated packet's IPv4 header
        const std::string differ = local ? "the translated frames differ" : "the encapsulated packets differ";
        const std::uint16_t other_id = static_cast<std::uint16_t>(test_support::get16(&b.run.out[18]) + 99);
        std::vector<Mutation<UplinkBpf>> mutations = {
            {"its destination port", [ip](UplinkBpf& x, PipelineOut&) { x.run.out[ip + 23] ^= 0x01; }, differ},
            {"its UDP checksum", [ip](UplinkBpf& x, PipelineOut&) { x.run.out[ip + 27] ^= 0x01; }, differ},
            {"its IPv4 destination", [ip](UplinkBpf& x, PipelineOut&) { x.run.out[ip + 19] ^= 0x01; }, differ},
            {"its destination MAC", [ip](UplinkBpf& x, PipelineOut&) { x.run.out[ip - 14 + 5] ^= 0x01; }, differ},
            {"its source MAC", [ip](UplinkBpf& x, PipelineOut&) { x.run.out[ip - 14 + 11] ^= 0x01; }, differ},
            {"the pipeline drops it", [&](UplinkBpf&, PipelineOut& y) { drop(y); },
             local ? "translated it into ifindex" : "translated and encapsulated"},
            {"passed to the host",
             [&frame](UplinkBpf& x, PipelineOut&) {
                 x.run.retval = TC_ACT_UNSPEC;
                 x.run.out = frame;
                 x.delta = {};
                 x.nat.after = x.nat.before;
             },
             "passed it to the host"},
            {"not counted on its entry", [](UplinkBpf& x, PipelineOut&) { x.nat.after = x.nat.before; }, "counted 0"},
        };
        if (local)
            mutations.push_back({"into another port",
                                 [&](UplinkBpf& x, PipelineOut&) { x.local_target = w.underlay(); },
                                 "translated it into ifindex"});
        else
            mutations.push_back({"another outer ID, its checksum updated",
                                 [other_id](UplinkBpf& x, PipelineOut&) { set_ipv4_id(x.run.out, 14, other_id); }, ""});
        expect_mutations_reported(b, p, mutations, check);
    }
    EXPECT_EQ(tally.failures, 0) << tally.report();
}

// Deliberately broken NAT entries, fast path configuration and ports, run through the real
// programs: the differential check must catch each that changes what the kernel does (and find
// nothing with the maps put back). Fields the programs do not translate with change nothing.
TEST_P(NatDifferential, BrokenEntriesAreCaught) {
    World& w = *world_;
    Tally tally;
    std::vector<NatFlow> flows = {{"orange", 10, kUdp, 40700, kGoogle, 53}, {"orange", 20, kUdp, 40701, kGoogle, 53}};
    open(flows, tally);
    const NatFlow &here = flows[0], &there = flows[1];
    const int nat = World::fd(w.skel().maps.andromeda_nat_flows);
    const int config = World::fd(w.skel().maps.andromeda_fp_config);
    const int vnis = World::fd(w.skel().maps.andromeda_vnis);
    const int ports = World::fd(w.skel().maps.andromeda_ports);
    const __u32 zero = 0, orange = 500;
    const std::uint32_t uplink = w.uplink(), underlay = w.underlay();

    const Case here_out = from_tenant(GetParam(), here, ipv4(outbound_spec(here)), "data", "");
    const Case here_in = from_outside(ipv4(inbound_spec(here)), here.name() + ", in", "");
    const Case there_out = from_tenant(GetParam(), there, ipv4(outbound_spec(there)), "data", "");
    const Case there_in = from_outside(ipv4(inbound_spec(there)), there.name() + ", in", "");
    const Case there_in_too_big = from_outside(ipv4(inbound_spec(there, vpc_named("orange").inner_mtu() + 1)),
                                               there.name() + ", in: a byte over the MTU (punted)", "");
    const Case there_fragment =
        from_tenant(GetParam(), there, ipv4(fragment(outbound_spec(there), kMf)), "a fragment (punted)", "");
    const auto problems_of = [&](const Case& c) {
        if (c.port == kUplink)
            return check_uplink(c.frame, w.run_uplink(c.frame), w.run_pipeline(uplink, c.frame), underlay);
        if (c.port == kUnderlay)
            return check_underlay(c.frame, w.run_underlay(c.frame), w.run_pipeline(underlay, c.frame), uplink);
        const std::uint32_t p = w.tenant(c.port);
        return check_tenant(c.frame, w.run_tenant(p, c.frame), w.run_pipeline(p, c.frame), underlay, uplink);
    };
    const std::vector<const Case*> all = {&here_out, &here_in,          &there_out,
                                          &there_in, &there_in_too_big, &there_fragment};
    const auto expect_agreement = [&](const char* maps) {
        for (const Case* c : all) EXPECT_EQ(problems_of(*c), std::vector<std::string>{}) << maps << ": " << c->name;
    };
    expect_agreement("the maps as written");

    using Entry = andromeda_nat_entry;
    using Break = std::function<std::unique_ptr<MapEntryOverride>()>;
    const auto entry = [&](const andromeda_nat_key& key, std::function<void(Entry&)> edit) -> Break {
        return [&, key, edit] { return MapEntryOverride::edited<Entry>(nat, key, edit); };
    };
    const auto fp = [&](std::function<void(andromeda_fp_config&)> edit) -> Break {
        return [&, edit] { return MapEntryOverride::edited<andromeda_fp_config>(config, zero, edit); };
    };
    const auto port_entry = [&](std::uint32_t ifindex, std::function<void(andromeda_port&)> edit) -> Break {
        return [&, ifindex, edit] { return MapEntryOverride::edited<andromeda_port>(ports, ifindex, edit); };
    };
    struct Row {
        std::string what;
        Break broken;
        const Case* c;
        std::string problem;  // empty: both sides still agree
        // On a CHECKSUM_COMPLETE skb, when not the same: a wrong old value makes the checksum
        // update wrong, and the kernel finds skb->csum stale before the bytes are compared.
        std::string complete_problem = "";
    };
    const std::string stale = "BPF_PROG_TEST_RUN failed: Bad message";
    const auto out_key = here.outbound_key(), in_key = here.inbound_key();
    const auto there_out_key = there.outbound_key(), there_in_key = there.inbound_key();
    const std::vector<Row> rows = {
        {"the NAT port going out", entry(out_key, [](Entry& e) { e.nat_port ^= htons(0x0100); }), &here_out, "byte 34"},
        {"the NAT address going out", entry(out_key, [](Entry& e) { e.nat_ip ^= htonl(1); }), &here_out,
         "translated frames differ"},
        {"the tenant's address going out (the checksum's old value)",
         entry(out_key, [](Entry& e) { e.tenant_ip ^= htonl(1); }), &here_out, "IPv4 header checksum", stale},
        {"the tenant's port going out (the checksum's old value)", entry(out_key, [](Entry& e) { e.tenant_port ^= 1; }),
         &here_out, "byte 4", stale},
        {"the tenant's port coming in", entry(in_key, [](Entry& e) { e.tenant_port ^= htons(0x0100); }), &here_in,
         "byte 36"},
        {"the NAT address coming in (the checksum's old value)", entry(in_key, [](Entry& e) { e.nat_ip ^= htonl(1); }),
         &here_in, "IPv4 header checksum", "(tc uplink) failed: Bad message"},
        {"the tenant coming in: another local endpoint",
         entry(in_key, [](Entry& e) { e.tenant_ip = htonl(ip4(10, 5, 0, 11)); }), &here_in,
         "translated it into ifindex"},
        {"the VPC coming in: purple's endpoint of that address", entry(in_key, [](Entry& e) { e.vni = 600; }), &here_in,
         "translated it into ifindex"},
        {"the tenant coming in: another endpoint on node2",
         entry(there_in_key, [](Entry& e) { e.tenant_ip = htonl(ip4(10, 5, 0, 21)); }), &there_in,
         "encapsulated packets differ"},
        {"the VPC coming in: purple's endpoint on node2", entry(there_in_key, [](Entry& e) { e.vni = 600; }), &there_in,
         "encapsulated packets differ"},
        {"the NAT port of a tenant on node2", entry(there_out_key, [](Entry& e) { e.nat_port ^= htons(0x0100); }),
         &there_out, "byte 34"},
        {"the entry's protocol (the packet's is used)", entry(out_key, [](Entry& e) { e.protocol = kTcp; }), &here_out,
         ""},
        {"the remote (not translated)", entry(in_key, [](Entry& e) { e.remote_ip ^= htonl(1); }), &here_in, ""},
        {"the VPC's MTU a byte more (the overlay's bound)",
         [&] { return MapEntryOverride::edited<andromeda_vni>(vnis, orange, [](andromeda_vni& v) { ++v.mtu; }); },
         &there_in_too_big, "the fast path translated and encapsulated it, the pipeline: reply"},
        {"the router's MAC", fp([](andromeda_fp_config& c) { c.uplink_next_hop_mac[5] ^= 1; }), &here_out,
         "destination MAC"},
        {"the uplink's MAC", fp([](andromeda_fp_config& c) { c.uplink_mac[5] ^= 1; }), &there_out, "source MAC"},
        {"the router's MAC unknown", fp([](andromeda_fp_config& c) { c.uplink_next_hop_known = 0; }), &here_out, ""},
        {"no uplink", fp([](andromeda_fp_config& c) { c.uplink_ifindex = 0; }), &there_out, ""},
        {"the VPC's gateway MAC",
         [&] {
             return MapEntryOverride::edited<andromeda_vni>(vnis, orange,
                                                            [](andromeda_vni& v) { v.gateway_mac[0] ^= 2; });
         },
         &here_in, "source MAC"},
        {"the uplink without its punt device", port_entry(uplink, [](andromeda_port& p) { p.link = 0; }), &here_in,
         "never should here: drop_no_port"},
        // (XDP then keeps the NAT's overlay packets from tc: the pipeline's, through the socket.)
        {"the underlay without its punt device", port_entry(underlay, [](andromeda_port& p) { p.link = 0; }),
         &there_fragment, ""},
        {"an entry gone (punted)", [&] { return MapEntryOverride::erased<Entry>(nat, out_key); }, &here_out, ""},
    };
    // Each on plain skbs, where the bytes tell, and on CHECKSUM_COMPLETE ones (where this kernel
    // makes them), where skb->csum may tell first.
    const SkbShape complete = w.skb_shape();
    for (const bool checksum_complete : {false, complete.checksum_complete}) {
        w.set_skb_shape(checksum_complete ? complete : SkbShape{});
        for (const Row& row : rows) {
            const auto broken = row.broken();
            ASSERT_EQ(broken->error(), "") << row.what;
            const auto problems = problems_of(*row.c);
            const std::string expected =
                checksum_complete && !row.complete_problem.empty() ? row.complete_problem : row.problem;
            const std::string context = row.what + ", " + row.c->name +
                                        (checksum_complete ? " (CHECKSUM_COMPLETE)" : "") + ": " + joined(problems);
            if (expected.empty()) {
                EXPECT_EQ(problems, std::vector<std::string>{}) << context;
            } else {
                ASSERT_EQ(problems.size(), 1u) << context;
                EXPECT_NE(problems[0].find(expected), std::string::npos) << context;
            }
        }
        expect_agreement("the maps put back");
    }
    EXPECT_EQ(tally.failures, 0) << tally.report();
}

}  // namespace
}  // namespace andromeda::fast_path_test
