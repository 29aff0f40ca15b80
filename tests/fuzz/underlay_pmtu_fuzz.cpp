// ICMP on the underlay port, as the XDP prefilter hands "fragmentation needed" about our outer
// packets to the pipeline: arbitrary bytes through parse_outer_frag_needed (and, as an IPv6
// underlay's Packet Too Big, parse_outer_packet_too_big) and a node1 pipeline of
// the test fabric (tests/unit/dataplane/pipeline_world.hpp), then a blue tenant frame to node2 of
// the size byte 0 picks. Never a crash or an out-of-bounds read (ASan); a report called "ours"
// holds a whole quote; whatever was learned is a plausible MTU towards a peer node; and no outer
// packet towards node2 is larger than the path MTU learned for it.
//
// Input: byte 0 picks the tenant frame's IP length (1000 + 2 * byte 0, DF clear so it is always
// sent, fragmented if need be); the rest is the frame on the underlay port.
// Seeds: tests/fuzz/corpus/underlay_pmtu, written by make_seeds.py there (scapy).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "dataplane/underlay_pmtu.hpp"
#include "unit/dataplane/pipeline_world.hpp"

namespace {

using namespace andromeda;
using namespace andromeda::testing;

[[noreturn]] void violation(const char* what) {
    std::fprintf(stderr, "underlay_pmtu_fuzz: %s\n", what);
    std::abort();
}

const fabric::FabricSnapshot& node1_fabric() {
    static const auto snapshot = [] {
        std::string errors;
        auto s = try_load_fabric(fabric_text("node1"), 1, errors);
        if (!s) violation("test fabric does not load");
        return s;
    }();
    return *snapshot;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const wire::ByteSpan frame(data + 1, size - 1);
    const auto report = dataplane::parse_outer_frag_needed(frame, kNode1Ip, 43481);
    if (report.kind == dataplane::OuterFragNeeded::ours && frame.size() < 14 + 20 + 8 + 20 + 8)
        violation("a report without a whole quote was called ours");
    // The same bytes as an IPv6 underlay's Packet Too Big to node1's fd00:1::1.
    const auto report6 = dataplane::parse_outer_packet_too_big(frame, kNode1Ip6, 43481);
    if (report6.kind == dataplane::OuterFragNeeded::ours &&
        (frame.size() < 14 + 40 + 8 + 40 + 8 || !report6.peer.is_ipv6()))
        violation("a Packet Too Big without a whole quote was called ours");

    std::uint64_t now = 1'000'000'000;
    auto config = node_config("node1");
    config.clock = [&now] { return now; };
    dataplane::Pipeline pipeline(config);
    SinkStorage out;
    (void)pipeline.process(kUnderlayPort, frame, node1_fabric(), out.fresh());
    if (!out.emissions().empty()) violation("an ICMP report on the underlay emitted a frame");
    const auto counters = pipeline.counters();
    const auto learned = pipeline.peer_path_mtu()->entries(now);
    if (learned.size() != counters.underlay_pmtu_learned) violation("learned entries and the counter disagree");
    for (const auto& e : learned) {
        if (!dataplane::plausible_path_mtu(e.mtu, 1500)) violation("learned an implausible MTU");
        if (e.peer != kNode2Ip && e.peer != kNode3Ip) violation("learned an MTU for no peer node");
    }

    Ipv4Spec s;
    s.src_mac = kBlue10Mac;
    s.dst_mac = kGatewayMac;
    s.src = ipv4("10.0.0.10");
    s.dst = ipv4("10.0.0.20");
    s.payload = 1000u + 2u * data[0] - 28u;
    (void)pipeline.process(kBlue10Port, ipv4_frame(s), node1_fabric(), out.fresh());
    const std::uint32_t path_mtu = pipeline.peer_path_mtu()->mtu(kNode2Ip, now);
    for (std::size_t i = 0; i < out.emissions().size(); ++i) {
        const Bytes f = out.frame(i);
        if (f.size() - 14 > (path_mtu != 0 ? path_mtu : 1500)) violation("an outer packet exceeds the path MTU");
    }
    return 0;
}
