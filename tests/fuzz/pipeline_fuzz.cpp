// The whole pipeline under arbitrary input: a node1 pipeline of the test fabric
// (tests/unit/dataplane/pipeline_world.hpp) gets the input as one frame or as a sequence of
// frames on its ports, through the copy and the in-place variants and the general path alone
// (express lanes off) in lockstep. It must never crash, never emit a malformed frame
// (tests/unit/dataplane/frame_validator.hpp), keep verdicts and emissions consistent, and all
// three must emit the same bytes and count the same.
//
// Input: byte 0 < 0x80 picks the port (its low 6 bits: index into kPorts), the rest is the frame.
//        byte 0 >= 0x80: a sequence of records [selector][length, big-endian u16][frame]; a
//        selector of 0xff switches the fabric snapshot (Andromeda's encapsulation or VXLAN),
//        0xfe advances the clock one second, 0xfd moves the fabric to the other underlay family,
//        any other picks the port as above.
//        Either way bit 0x40 of byte 0 starts on the IPv6 underlay (pipeline_world.hpp's
//        with_ipv6_underlay: outer IPv6 packets, which the validator checks as it does IPv4's).
// Seeds: tests/fuzz/corpus/pipeline, written by dataplane_property_test's DISABLED_WriteFuzzSeeds
// and (ipv6-*: ND, RS, echo, routed and overlay IPv6; ARP and ND from a VXLAN peer's tenant on the
// VXLAN fabric) dataplane_ipv6_path_test's DISABLED_WriteIpv6FuzzSeeds; vxlan-flood-*: a tenant's
// IPv4 broadcast and IPv6 multicast, and a peer's broadcast, on the VXLAN fabric (scapy, by hand);
// ipv6-underlay-*: outer IPv6 overlay packets and tenant traffic over the IPv6 underlay,
// dataplane_ipv6_underlay_paths_test's DISABLED_WriteIpv6UnderlayFuzzSeeds.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "unit/dataplane/frame_validator.hpp"
#include "unit/dataplane/pipeline_world.hpp"

namespace {

using namespace andromeda;
using namespace andromeda::testing;

constexpr PortId kPorts[] = {kBlue10Port,  kBlue11Port,   kGreen10Port, kRed10Port, kOrange10Port,
                             kUnboundPort, kUnderlayPort, kUplinkPort,  kUnknownPort};

[[noreturn]] void violation(const char* what, const std::string& detail = "") {
    std::fprintf(stderr, "pipeline_fuzz: %s %s\n", what, detail.c_str());
    std::abort();
}

std::shared_ptr<const fabric::FabricSnapshot> load_or_die(const std::string& text, std::uint64_t generation) {
    std::string errors;
    auto snapshot = try_load_fabric(text, generation, errors);
    if (!snapshot) violation("test fabric does not load:", errors);
    return snapshot;
}

const fabric::FabricSnapshot& snapshot(int which, bool ipv6_underlay) {
    // All dual-stack (blue and green share an IPv6 prefix); the VXLAN ones answer their peers'
    // tenants' ARP and Neighbor Solicitations over the overlay.
    static const auto andromeda_fabric = load_or_die(dual_stack_fabric("node1"), 1);
    static const auto vxlan_fabric = load_or_die(dual_stack_vxlan_fabric("node1"), 2);
    static const auto andromeda_fabric6 = load_or_die(with_ipv6_underlay(dual_stack_fabric("node1")), 3);
    static const auto vxlan_fabric6 = load_or_die(with_ipv6_underlay(dual_stack_vxlan_fabric("node1")), 4);
    if (ipv6_underlay) return which == 0 ? *andromeda_fabric6 : *vxlan_fabric6;
    return which == 0 ? *andromeda_fabric : *vxlan_fabric;
}

// A fresh world (fresh pipelines, clock and counters) per input keeps every run reproducible
// from its input alone.
struct World {
    explicit World(bool ipv6) : ipv6_underlay(ipv6) {
        auto config = node_config("node1");
        config.next_hops.push_back({kNode2Ip6, kNode2Mac});  // for the IPv6 underlay's snapshots
        config.clock = [this] { return now; };
        copy = std::make_unique<dataplane::Pipeline>(config);
        in_place = std::make_unique<dataplane::Pipeline>(config);
        config.express_lanes = false;
        general = std::make_unique<dataplane::Pipeline>(config);
    }
    std::uint64_t now = 1;
    int fabric = 0;
    bool ipv6_underlay = false;
    std::unique_ptr<dataplane::Pipeline> copy, in_place, general;
    SinkStorage& copy_out = sink(0);
    SinkStorage& in_place_out = sink(1);
    SinkStorage& general_out = sink(2);

    // The sinks' spare chunks (3 x 64 KB, zero-filled when allocated) are allocated once for the
    // campaign, not per input: fresh() empties a sink for every frame, and the pipeline writes a
    // spare's bytes before any emission exposes them.
    static SinkStorage& sink(int which) {
        static SinkStorage sinks[3] = {SinkStorage{16, 4096, 256}, SinkStorage{16, 4096, 256}, SinkStorage{16, 4096, 256}};
        return sinks[which];
    }
};

std::vector<Bytes> checked_emissions(PortId port, wire::ByteSpan frame, const dataplane::FrameResult& r,
                                     const SinkStorage& out) {
    const auto emissions = out.emissions();
    if (emissions.size() != r.emissions) violation("emission count disagrees with the result");
    if ((r.verdict == dataplane::Verdict::drop) != (r.drop_reason != dataplane::DropReason::none))
        violation("drop reason set without a drop, or missing");
    if ((r.verdict == dataplane::Verdict::drop || r.verdict == dataplane::Verdict::to_nat) && !emissions.empty())
        violation("a dropped or NAT-bound frame emitted something");
    if (r.verdict == dataplane::Verdict::to_nat && std::size_t{r.nat.frame_offset} + r.nat.frame_length > frame.size())
        violation("NAT request outside the frame");
    const bool strict = r.verdict == dataplane::Verdict::reply || frame_problems(frame).empty();
    std::vector<Bytes> frames;
    for (std::size_t i = 0; i < emissions.size(); ++i) {
        const auto& e = emissions[i];
        if (std::size_t{e.frame.offset} + e.frame.length > e.frame.size) violation("emission outside its chunk");
        if (r.verdict == dataplane::Verdict::reply && e.port != port) violation("reply on another port");
        frames.push_back(out.frame(i));
        const auto problems = frame_problems(frames.back(), {strict});
        if (!problems.empty()) violation("malformed emission:", problems.front());
    }
    return frames;
}

void run_frame(World& world, PortId port, wire::ByteSpan frame) {
    const auto& fabric = snapshot(world.fabric, world.ipv6_underlay);
    const auto a = world.copy->process(port, frame, fabric, world.copy_out.fresh());
    ChunkFrame chunk(Bytes(frame.begin(), frame.end()));
    const auto b = world.in_place->process_in_place(port, chunk.buffer, fabric, world.in_place_out.fresh());
    const auto c = world.general->process(port, frame, fabric, world.general_out.fresh());
    if (a.verdict != b.verdict || a.drop_reason != b.drop_reason || a.verdict != c.verdict ||
        a.drop_reason != c.drop_reason)
        violation("verdicts differ (copy, in place, general):", std::string(to_string(a.drop_reason)) + " " +
                                                                    std::string(to_string(b.drop_reason)) + " " +
                                                                    std::string(to_string(c.drop_reason)));
    const auto copied = checked_emissions(port, frame, a, world.copy_out);
    if (copied != checked_emissions(port, frame, b, world.in_place_out)) violation("in place emitted other bytes");
    if (copied != checked_emissions(port, frame, c, world.general_out)) violation("general path emitted other bytes");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0 || size > 20000) return 0;
    World world((data[0] & 0x40) != 0);
    if (data[0] < 0x80) {
        run_frame(world, kPorts[(data[0] & 0x3f) % std::size(kPorts)], wire::ByteSpan(data + 1, size - 1));
        return 0;
    }
    for (std::size_t at = 1; at < size;) {
        const std::uint8_t selector = data[at++];
        if (selector == 0xff) {
            world.fabric ^= 1;
            continue;
        }
        if (selector == 0xfe) {
            world.now += 1'000'000'000;
            continue;
        }
        if (selector == 0xfd) {
            world.ipv6_underlay = !world.ipv6_underlay;
            continue;
        }
        if (at + 2 > size) break;
        const std::size_t length = std::min<std::size_t>(wire::load_be16(data + at), size - at - 2);
        at += 2;
        run_frame(world, kPorts[selector % std::size(kPorts)], wire::ByteSpan(data + at, length));
        at += length;
    }
    const auto& c = world.copy->counters();
    if (c.forwarded + c.delivered + c.replied + c.to_nat + c.dropped !=
        c.rx_tenant + c.rx_underlay + c.rx_uplink + c.drops.unknown_port)
        violation("verdict counters do not sum to the frames in");
    const auto general = world.general->counters();
    if (std::memcmp(&c, &general, sizeof c) != 0) violation("express lanes and the general path count differently");
    return 0;
}
