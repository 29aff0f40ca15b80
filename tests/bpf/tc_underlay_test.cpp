// Overlay packets on the underlay: andromeda_xdp (the prefilter, which hands a packet for a local
// endpoint to the fast path with its findings in the metadata) and andromeda_tc_underlay (which
// decapsulates it) against the pipeline, packet by packet, with both encapsulations
// (differential_check.hpp says what agreeing means): a table of crafted packets, each with the
// outcome XDP must reach; random packets; stale map entries; and proof that the comparison of a
// decapsulation and of the hand-over is not vacuous.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "differential_check.hpp"
#include "io/bpf/kernel_probe.hpp"
#include "random_frames.hpp"

namespace andromeda::fast_path_test {
namespace {

// Packets both encapsulations treat alike.
std::vector<Case> crafted_overlay_packets(Encap kind) {
    const auto blue = [kind](std::uint32_t from = 20, std::uint32_t to = 10, std::size_t total = 100,
                             std::uint8_t protocol = kUdp) {
        return overlay_spec(kind, "blue", from, to, total, protocol);
    };
    const auto edit = [&](auto change) { return overlay(with(blue(), change)); };
    const auto edit_inner = [&](auto change) {
        return overlay(with(blue(), [&](OverlayPacket& s) { change(s.inner); }));
    };
    const auto sent_by = [](std::uint32_t node) { return [node](OverlayPacket& s) { s.src = node; }; };
    const auto carrying = [](Bytes inner) { return [inner](OverlayPacket& s) { s.inner = inner; }; };
    const Bytes plain = overlay(blue());
    const Mac b10_mac = endpoint("blue", 10).mac, b20_mac = endpoint("blue", 20).mac;
    const std::uint32_t b10 = ip4(10, 0, 0, 10), b20 = ip4(10, 0, 0, 20);
    std::vector<Case> cases = {
        // Handed to the fast path.
        {"from node2's endpoint to a local one", kUnderlay, plain, "fastpath"},
        {"TCP", kUnderlay, overlay(blue(20, 11, 800, kTcp)), "fastpath"},
        {"ICMP", kUnderlay, overlay(blue(21, 10, 84, kIcmp)), "fastpath"},
        {"a 20-byte inner packet", kUnderlay, overlay(blue(20, 10, 20)), "fastpath"},
        {"from node3's endpoint (its next hop unknown: not needed to receive)", kUnderlay, overlay(blue(30, 10)),
         "fastpath"},
        {"green (blue's addresses, another VNI)", kUnderlay, overlay(overlay_spec(kind, "green", 20, 40)), "fastpath"},
        {"red", kUnderlay, overlay(overlay_spec(kind, "red", 20, 10)), "fastpath"},
        {"outer TTL 1", kUnderlay, edit([](auto& s) { s.ttl = 1; }), "fastpath"},
        {"inner TTL 0", kUnderlay, edit_inner([](Bytes& in) { in = with_byte(in, 22, 0, Ipv4Checksum::refreshed); }),
         "fastpath"},
        {"any UDP source port", kUnderlay, edit([](auto& s) { s.src_port = 1234; }), "fastpath"},
        {"outer without DF", kUnderlay, overlay(fragment(blue(), 0)), "fastpath"},
        {"inner destination MAC someone else's (both rewrite it)", kUnderlay,
         edit_inner([](Bytes& in) { in[0] = 0x0e; }), "fastpath"},

        // Dropped by XDP, or steered to AF_XDP: the pipeline's to judge.
        {"wrong VNI (no VPC)", kUnderlay, edit([](auto& s) { s.vni = 999; }), "drop_unknown_vni"},
        // Broadcast and multicast are the pipeline's to flood (VXLAN) or drop, whatever the address.
        {"inner destination MAC broadcast", kUnderlay,
         edit_inner([](Bytes& in) { std::fill(in.begin(), in.begin() + 6, std::uint8_t{0xff}); }), "socket"},
        {"inner destination MAC multicast", kUnderlay, edit_inner([](Bytes& in) { in[0] = 0x01; }), "socket"},
        {"green's VNI around blue's endpoints", kUnderlay, overlay(with(blue(21, 11), [](auto& s) { s.vni = 200; })),
         "socket"},
        {"grey's VNI (fast path off)", kUnderlay, overlay(overlay_spec(kind, "grey", 20, 10)), "socket"},
        {"from an unknown peer", kUnderlay, edit(sent_by(kStranger)), "drop_unknown_peer"},
        {"from this node's own address", kUnderlay, edit(sent_by(kNode1)), "drop_unknown_peer"},
        {"node2's endpoint sent by node3", kUnderlay, edit(sent_by(kNode3)), "socket"},
        {"inner source a local endpoint", kUnderlay,
         overlay(with(with(blue(11, 10), sent_by(kNode2)), [](auto& s) { s.src_mac = kNode2Mac; })), "socket"},
        {"inner source unknown", kUnderlay,
         edit(carrying(ipv4(frame_spec(mac_of(0, 0x99), ip4(10, 0, 0, 99), b10_mac, b10, 100)))), "socket"},
        {"to the local endpoint without a device", kUnderlay, overlay(blue(20, 12)), "socket"},
        {"to a remote endpoint", kUnderlay, overlay(blue(20, 21)), "socket"},
        {"to the gateway", kUnderlay,
         edit(carrying(ipv4(frame_spec(b20_mac, b20, kDefaultGatewayMac, ip4(10, 0, 0, 1), 84, kIcmp)))), "socket"},
        {"to an unknown address", kUnderlay,
         edit(carrying(ipv4(frame_spec(b20_mac, b20, b10_mac, ip4(10, 0, 0, 77), 100)))), "socket"},
        // The outside's reply, from the VPC's NAT node: decapsulated into its tenant like east-west;
        // from any other node it is the pipeline's (fabric_spoofed_source).
        {"red's Internet traffic (NAT at node2 answering)", kUnderlay,
         overlay(with(overlay_spec(kind, "red", 20, 10),
                      carrying(ipv4(frame_spec(endpoint("red", 20).mac, ip4(8, 8, 8, 8), endpoint("red", 10).mac,
                                               ip4(10, 3, 0, 10), 100))))),
         "fastpath"},
        {"the outside's traffic from a node that is not red's NAT node", kUnderlay,
         overlay(with(with(overlay_spec(kind, "red", 20, 10), sent_by(kNode3)),
                      carrying(ipv4(frame_spec(endpoint("red", 20).mac, ip4(8, 8, 8, 8), endpoint("red", 10).mac,
                                               ip4(10, 3, 0, 10), 100))))),
         "socket"},
        {"a valid non-zero outer UDP checksum", kUnderlay, edit([](auto& s) { s.udp_checksum = true; }), "socket"},
        {"a wrong non-zero outer UDP checksum", kUnderlay,
         flipped(edit([](auto& s) { s.udp_checksum = true; }), 40, 0x10), "socket"},
        {"outer MF fragment", kUnderlay, overlay(fragment(blue(), kMf)), "drop_overlay_fragment"},
        {"outer fragment offset", kUnderlay, overlay(fragment(blue(), 100)), "drop_overlay_fragment"},

        // Outer headers the fast path does not take.
        {"outer destination another node's", kUnderlay, flipped(plain, 33, 0x01, Ipv4Checksum::refreshed), "socket"},
        {"outer IPv4 options", kUnderlay, edit([](auto& s) { s.options = nop_options(8); }), "socket"},
        {"outer IPv4 header checksum wrong", kUnderlay, flipped(plain, 24, 0x40), "socket"},
        {"outer padding (6 bytes)", kUnderlay, resized(plain, plain.size() + 6), "socket"},
        {"outer total length one past the frame", kUnderlay, with_ipv4_total_length(plain, plain.size() - 14 + 1),
         "socket"},
        {"outer UDP length one short", kUnderlay, with_udp_length(plain, plain.size() - 34 - 1), "socket"},
        {"outer UDP length one long", kUnderlay, with_udp_length(plain, plain.size() - 34 + 1), "socket"},
        {"outer 802.1Q tag", kUnderlay, tagged(plain, 0x8100, 7), "socket"},
        // (Outer destination MACs other than the underlay's: XDP does not look at them, and steers
        // them to the pipeline, which delivers them. The random packets are all to the underlay's MAC.)
        {"outer destination MAC ff:ff:ff:ff:ff:ff", kUnderlay, edit([](auto& s) { s.dst_mac = kBroadcastMac; }),
         "socket"},
        {"outer destination MAC 01:00:5e:00:00:01", kUnderlay,
         edit([](auto& s) { s.dst_mac = {0x01, 0x00, 0x5e, 0x00, 0x00, 0x01}; }), "socket"},
        {"outer destination MAC 02:00:00:a1:00:77", kUnderlay, edit([](auto& s) { s.dst_mac = mac_of(0xa1, 0x77); }),
         "socket"},
        {"no room for an inner Ethernet header", kUnderlay,
         with_udp_length(with_ipv4_total_length(resized(plain, 14 + 20 + 8 + 8 + 10), 20 + 8 + 8 + 10), 8 + 8 + 10),
         "drop_truncated"},
        {"a runt UDP header", kUnderlay, resized(plain, 14 + 20 + 4), "host"},
        {"an IPv4 header cut short", kUnderlay, resized(plain, 14 + 10), "drop_truncated"},

        // Inner frames the fast path does not take.
        {"inner IPv4 options", kUnderlay,
         edit(carrying(
             ipv4(with(frame_spec(b20_mac, b20, b10_mac, b10, 100), [](auto& s) { s.options = nop_options(4); })))),
         "socket"},
        {"inner IPv4 header checksum wrong", kUnderlay, edit_inner([](Bytes& in) { in = flipped(in, 24, 0x01); }),
         "socket"},
        {"inner padding (2 bytes)", kUnderlay, edit_inner([](Bytes& in) { in.resize(in.size() + 2, 0); }), "socket"},
        {"inner total length past the inner frame", kUnderlay,
         edit_inner([](Bytes& in) { in = with_ipv4_total_length(in, in.size() - 14 + 2); }), "socket"},
        {"inner 802.1Q tag", kUnderlay, edit_inner([](Bytes& in) { in = tagged(in, 0x8100, 3); }), "socket"},
        {"inner ARP", kUnderlay, edit_inner([&](Bytes& in) { in = arp(b20_mac, kBroadcastMac, 1, b20_mac, b20, b10); }),
         "socket"},
        {"inner IPv6 from nobody's address", kUnderlay,
         edit_inner([&](Bytes& in) { in = ethertype_frame(b20_mac, b10_mac, 0x86dd, 60, 0); }), "socket"},
        // Inner IPv6 of a dual-stack VPC (blue, green).
        {"IPv6: from node2's endpoint to a local one", kUnderlay, overlay(overlay6_spec(kind, "blue", 20, 10)), "fastpath"},
        {"IPv6: TCP", kUnderlay, overlay(overlay6_spec(kind, "blue", 20, 11, 800, kTcp)), "fastpath"},
        {"IPv6: echo request", kUnderlay, overlay(overlay6_spec(kind, "blue", 21, 10, 64, kIcmpv6)), "fastpath"},
        {"IPv6: from node3's endpoint", kUnderlay, overlay(overlay6_spec(kind, "blue", 30, 10)), "fastpath"},
        {"IPv6: green (blue's addresses, another VNI)", kUnderlay, overlay(overlay6_spec(kind, "green", 20, 40)),
         "fastpath"},
        {"IPv6: green's VNI around blue's endpoints", kUnderlay,
         overlay(with(overlay6_spec(kind, "blue", 21, 11), [](auto& s) { s.vni = 200; })), "socket"},
        {"IPv6: node2's endpoint sent by node3", kUnderlay,
         overlay(with(overlay6_spec(kind, "blue", 20, 10), sent_by(kNode3))), "socket"},
        {"IPv6: speaking for a local endpoint", kUnderlay,
         overlay(with(overlay6_spec(kind, "blue", 20, 10), [](OverlayPacket& s) {
             for (std::size_t i = 0; i < 16; ++i) s.inner[14 + 8 + i] = ip6_of(11)[i];
         })), "socket"},
        {"IPv6: to the local endpoint without a device", kUnderlay, overlay(overlay6_spec(kind, "blue", 20, 12)), "socket"},
        {"IPv6: to an address no endpoint has", kUnderlay,
         overlay(with(overlay6_spec(kind, "blue", 20, 10), [](OverlayPacket& s) { s.inner[14 + 39] = 0x99; })), "socket"},
        {"IPv6: a Neighbor Solicitation", kUnderlay,
         overlay(with(overlay6_spec(kind, "blue", 20, 10, 32, kIcmpv6), [](OverlayPacket& s) { s.inner[14 + 40] = 135; })),
         "socket"},
        {"IPv6: behind a hop-by-hop header", kUnderlay, overlay(overlay6_spec(kind, "blue", 20, 10, 60, 0)), "socket"},
        {"IPv6: inner padding", kUnderlay,
         overlay(with(overlay6_spec(kind, "blue", 20, 10), [](OverlayPacket& s) { s.inner.resize(s.inner.size() + 2, 0); })),
         "socket"},
        {"inner IPv4 cut at 19 bytes", kUnderlay, edit_inner([](Bytes& in) { in.resize(14 + 19); }), "socket"},

        // Not overlay traffic: the host's.
        {"the other encapsulation's port (host traffic here)", kUnderlay,
         edit([kind](auto& s) { s.dst_port = overlay_port(other_encap(kind)); }), "host"},
        {"UDP to port 22", kUnderlay, edit([](auto& s) { s.dst_port = 22; }), "host"},
        {"host TCP", kUnderlay,
         ipv4(with(frame_spec(kNode2Mac, kNode2, kUnderlayMac, kNode1, 60, kTcp), [](auto& s) { s.dst_port = 22; })),
         "host"},
        {"host ARP", kUnderlay, arp(kNode2Mac, kBroadcastMac, 1, kNode2Mac, kNode2, kNode1), "host"},
    };
    for (std::size_t total = 1446; total <= 1452; ++total)
        cases.push_back(
            {"an inner packet of " + std::to_string(total) + " bytes (outer " + std::to_string(total + 14 + 50) + ")",
             kUnderlay, overlay(blue(20, 10, total)), "fastpath"});
    return cases;
}

// The header's own fields, which the two encapsulations lay out differently.
std::vector<Case> crafted_header_packets(Encap kind) {
    const auto header = [kind](auto change) { return overlay(with(overlay_spec(kind, "blue", 20, 10), change)); };
    if (kind == Encap::vxlan)
        return {
            {"VXLAN I flag clear", kUnderlay, header([](auto& s) { s.first_byte = 0x00; }), "drop_bad_overlay_header"},
            {"VXLAN I flag and another flag", kUnderlay, header([](auto& s) { s.first_byte = 0x0c; }), "socket"},
            {"VXLAN reserved bytes set", kUnderlay, with_byte(header([](auto& s) { s.protocol = 0x55; }), 49, 0x66),
             "fastpath"},
        };
    return {
        {"version 2", kUnderlay, header([](auto& s) { s.first_byte = 0x20; }), "drop_bad_overlay_header"},
        {"version 0", kUnderlay, header([](auto& s) { s.first_byte = 0x00; }), "drop_bad_overlay_header"},
        {"control flag set", kUnderlay, header([](auto& s) { s.first_byte = 0x11; }), "socket"},
        {"inner protocol 1", kUnderlay, header([](auto& s) { s.protocol = 1; }), "drop_bad_overlay_header"},
        {"hop limit 0", kUnderlay, header([](auto& s) { s.hop_limit = 0; }), "socket"},
        {"hop limit 1", kUnderlay, header([](auto& s) { s.hop_limit = 1; }), "fastpath"},
    };
}

class TcUnderlay : public DifferentialTest {};

TEST_P(TcUnderlay, CraftedPackets) {
    std::vector<Case> cases = crafted_overlay_packets(GetParam());
    for (Case& c : crafted_header_packets(GetParam())) cases.push_back(std::move(c));
    run_table(cases, "crafted overlay packet");
}

constexpr int kRandomPackets = 20000;  // per encapsulation

TEST_P(TcUnderlay, RandomPackets) {
    const std::uint32_t seed = seed_for(GetParam() == Encap::vxlan ? 0x0a1a0002 : 0x0a1a0001);
    Gen g(seed);
    const Tally tally =
        run_random("random overlay packets", seed, kRandomPackets, [&](int) { return random_overlay(g, GetParam()); });
    // Not vacuous: every kind of outcome occurs often.
    EXPECT_GE(tally.count("fastpath"), kRandomPackets / 10);
    EXPECT_GE(tally.count("socket"), kRandomPackets / 10);
    EXPECT_GE(tally.count_prefix("drop_"), kRandomPackets / 50);
}

// First the window of a reload that removes an endpoint: its fabric entry is erased before the
// pipeline sees the new snapshot, so XDP steers its packets to the pipeline, which still
// delivers them. Then the reload itself: the endpoints removed are gone from both sides.
TEST_P(TcUnderlay, StaleEntries) {
    const Encap kind = GetParam();
    Gen g(seed_for(0x57a1f));
    run_stale_entries(*world_, {.erased = {.vni = 100, .ip = htonl(ip4(10, 0, 0, 20))},
                                .while_erased = {{"from an endpoint whose entry is already erased", kUnderlay,
                                                  overlay(overlay_spec(kind, "blue", 20, 10)), "socket"}},
                                .removed_by_reload = {{100, ip4(10, 0, 0, 21)}, {200, ip4(10, 0, 0, 40)}},
                                .after_reload = {{"from a remote endpoint removed by the reload", kUnderlay,
                                                  overlay(overlay_spec(kind, "blue", 21, 10)), "socket"},
                                                 {"to a local endpoint removed by the reload", kUnderlay,
                                                  overlay(overlay_spec(kind, "green", 20, 40)), "socket"},
                                                 {"from a remote endpoint the reload kept", kUnderlay,
                                                  overlay(overlay_spec(kind, "blue", 20, 10)), "fastpath"}},
                                .random_after_reload = [&] { return random_overlay(g, kind); },
                                .random_frames = 500});
}

// The comparison is not vacuous: a real decapsulation by both sides, then the fast path's output,
// the pipeline's verdict or what XDP handed tc broken one way at a time, must each be reported.
TEST_P(TcUnderlay, ComparatorRejectsMutatedOutputs) {
    World& w = *world_;
    const Bytes packet = overlay(overlay_spec(GetParam(), "blue", 20, 10));
    const UnderlayBpf decap = w.run_underlay(packet);
    const PipelineOut decapsulated = w.run_pipeline(w.underlay(), packet);
    ASSERT_EQ(check_underlay(packet, decap, decapsulated), std::vector<std::string>{});
    // A kernel that refuses bpf_xdp_adjust_meta to XDP programs gets no hand-over (tc checks the
    // packet itself); then only the frame and verdict mutations apply.
    const bool metadata = io::probe_kernel_features().xdp_metadata;
    ASSERT_EQ(decap.xdp.meta.size(), metadata ? sizeof(andromeda_fp_handoff) : 0u);

    const auto meta_flipped = [](std::size_t at, std::string problem) {
        return Mutation<UnderlayBpf>{"handed-over byte " + std::to_string(at),
                                     [at](UnderlayBpf& b, PipelineOut&) { b.xdp.meta[at] ^= 0x01; },
                                     std::move(problem)};
    };
    std::vector<Mutation<UnderlayBpf>> mutations = {
            {"the inner IPv4 header checksum", [](UnderlayBpf& b, PipelineOut&) { b.tc.out[24] ^= 0x01; },
             "IPv4 header checksum"},
            {"a trailing byte", [](UnderlayBpf& b, PipelineOut&) { b.tc.out.push_back(0); }, "differ at lengths"},
            {"decapsulated where the pipeline drops",
             [](UnderlayBpf&, PipelineOut& p) { p = pipeline_drop(dataplane::DropReason::not_local_endpoint); },
             "the fast path decapsulated it for ifindex"},
    };
    if (metadata) {
        for (auto& m : std::vector<Mutation<UnderlayBpf>>{
            // What XDP hands tc in the metadata: each field broken, or none handed over.
            meta_flipped(offsetof(andromeda_fp_handoff, cookie), "another cookie"),
            meta_flipped(offsetof(andromeda_fp_handoff, ifindex), "XDP handed over ifindex"),
            meta_flipped(offsetof(andromeda_fp_handoff, mac), "other MACs"),
            meta_flipped(offsetof(andromeda_fp_handoff, mac) + 5, "other MACs"),
            meta_flipped(offsetof(andromeda_fp_handoff, gateway_mac), "other MACs"),
            meta_flipped(offsetof(andromeda_fp_handoff, gateway_mac) + 5, "other MACs"),
            meta_flipped(offsetof(andromeda_fp_handoff, dev), "XDP handed over device"),
            {"nothing handed over", [](UnderlayBpf& b, PipelineOut&) { b.xdp.meta.clear(); }, "bytes of metadata"},
        })
            mutations.push_back(std::move(m));
    }
    expect_mutations_reported(decap, decapsulated, mutations,
                              [&](const UnderlayBpf& b, const PipelineOut& p) { return check_underlay(packet, b, p); });
}

// The decapsulation asks bpf_skb_adjust_room to clear the tunnel's offload state
// (BPF_F_ADJ_ROOM_DECAP_L4_UDP) only where the loader's probe found the kernel takes it (the
// rodata flag decap_l4_udp): loaded as probed, the object decapsulates; loaded with the flag
// forced on, it decapsulates just the same where the kernel has the flag and fails every
// decapsulation where it has not (drop_adjust_failed). So the flag reaches the program, and the
// probe is what keeps older kernels working.
TEST_P(TcUnderlay, TheDecapAsksOnlyForFlagsTheKernelTakes) {
    const bool kernel_has_it = io::probe_kernel_features().decap_l4_udp;
    std::printf("this kernel %s BPF_F_ADJ_ROOM_DECAP_L4_UDP\n", kernel_has_it ? "takes" : "does not take");
    const Bytes packet = overlay(overlay_spec(GetParam(), "blue", 20, 10, 600, kTcp));
    const UnderlayBpf as_probed = world_->run_underlay(packet);
    ASSERT_TRUE(as_probed.tc_ran);
    EXPECT_EQ(as_probed.tc_delta.decap_packets, 1u);
    EXPECT_EQ(check_underlay(packet, as_probed, world_->run_pipeline(world_->underlay(), packet)),
              std::vector<std::string>{});

    World forced(GetParam(), fabric_toml(GetParam()), /*decap_l4_udp=*/true);
    ASSERT_EQ(forced.error(), "");
    const UnderlayBpf decap = forced.run_underlay(packet);
    ASSERT_TRUE(decap.tc_ran);
    EXPECT_EQ(decap.tc_delta.decap_packets, kernel_has_it ? 1u : 0u);
    EXPECT_EQ(decap.tc_delta.drop_adjust_failed, kernel_has_it ? 0u : 1u);
}

// XDP hands its finding over in the packet's metadata only where the loader's probe found the
// kernel lets XDP programs call bpf_xdp_adjust_meta (the rodata flag xdp_metadata): loaded as
// probed, the object loads and a packet for a local endpoint is decapsulated (handed over or
// not); with the flag forced on, the object loads where the kernel allows the helper and is
// refused where it does not (kernel 6.18 refuses it). So the probe is what keeps such kernels
// working, and it says no only where the kernel does.
TEST_P(TcUnderlay, TheHandOverIsWrittenOnlyWhereTheKernelAllowsIt) {
    const bool kernel_allows = io::probe_kernel_features().xdp_metadata;
    std::printf("this kernel %s XDP programs bpf_xdp_adjust_meta\n", kernel_allows ? "allows" : "refuses");
    const Bytes packet = overlay(overlay_spec(GetParam(), "blue", 20, 10));
    const UnderlayBpf as_probed = world_->run_underlay(packet);
    ASSERT_TRUE(as_probed.tc_ran);
    EXPECT_EQ(as_probed.tc_delta.decap_packets, 1u);
    EXPECT_EQ(as_probed.xdp.meta.size(), kernel_allows ? sizeof(andromeda_fp_handoff) : 0u);

    World forced(GetParam(), fabric_toml(GetParam()), std::nullopt, /*xdp_metadata=*/true);
    EXPECT_EQ(forced.error().empty(), kernel_allows) << forced.error();
}

ANDROMEDA_FOR_BOTH_ENCAPSULATIONS(TcUnderlay);

}  // namespace
}  // namespace andromeda::fast_path_test
