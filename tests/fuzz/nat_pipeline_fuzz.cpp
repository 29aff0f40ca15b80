// NatPipeline under arbitrary input: the two-node NAT world of tests/unit/dataplane/nat_world.hpp
// (node2 the NAT gateway with its uplink). Frames arrive on every port: node1's tenant ports
// (carried on to node2 through the overlay, as in production), node2's underlay, uplink and
// tenant port, and a port nobody knows; between them the clock advances (with expiry) and the
// fabric is reloaded (an endpoint removed and restored). It must never crash, never emit a
// malformed frame (frame_validator.hpp), keep results consistent with the emissions, and never
// put on the uplink anything but an untagged IPv4 frame from a NAT address, L2 from the uplink's
// MAC to the next hop's.
//
// Input: byte 0 < 0x80 picks the port (index into kPorts), the rest is the frame.
//        byte 0 >= 0x80: records [selector][length, big-endian u16][frame]; selector 0xff
//        reloads the fabric, 0xfe advances the clock 31 s and expires flows, any other picks the
//        port as above. Odd records run in place, even ones by copy, every fourth as a batch.
// Seeds: tests/fuzz/corpus/nat_pipeline, written by tests/data/nat/make_nat_pipeline_seeds.py.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "fabric/diff.hpp"
#include "unit/dataplane/frame_validator.hpp"
#include "unit/dataplane/nat_world.hpp"

namespace {

using namespace andromeda;
using namespace andromeda::testing;
using namespace andromeda::testing::natworld;

struct Target {
    bool via_node1;
    PortId port;
};
constexpr Target kPorts[] = {{true, kBlue10}, {true, kBlue11}, {true, kGreen10}, {false, kUnderlay},
                             {false, kUplink}, {false, kBlue20}, {false, 4321}};

[[noreturn]] void violation(const char* what, const std::string& detail = "") {
    std::fprintf(stderr, "nat_pipeline_fuzz: %s %s\n", what, detail.c_str());
    std::abort();
}

std::shared_ptr<const fabric::FabricSnapshot> load_or_die(const std::string& text, std::uint64_t generation) {
    std::string errors;
    auto snapshot = try_load_fabric(text, generation, errors);
    if (!snapshot) violation("test fabric does not load:", errors);
    return snapshot;
}

// The fabric snapshots, loaded once for the whole campaign (parsing and validating TOML per input
// was about a third of an input's cost): node1's, and node2's at each generation, with endpoint
// 10.0.0.10 dropped at the even ones. Snapshots are immutable, so sharing them keeps each input
// reproducible.
const std::shared_ptr<const fabric::FabricSnapshot>& node1_fabric() {
    static const auto snapshot = load_or_die(nat_fabric_text("node1"), 1);
    return snapshot;
}

std::shared_ptr<const fabric::FabricSnapshot> node2_fabric(std::uint64_t generation) {
    const auto load = [generation] {
        return load_or_die(nat_fabric_text("node2", "[61000, 61063]", generation % 2 == 0), generation);
    };
    static std::vector<std::shared_ptr<const fabric::FabricSnapshot>> cache(256);  // generations 0-255
    if (generation >= cache.size()) return load();
    if (!cache[generation]) cache[generation] = load();
    return cache[generation];
}

// A fresh world per input keeps every run reproducible from its input alone.
struct World {
    nat::NatEngine engine{small_nat_settings(64)};
    NatNode node1{node1_fabric(), "node1", nullptr};
    NatNode node2{node2_fabric(1), "node2", &engine};
    nat::TimePoint now = nat::TimePoint{} + std::chrono::seconds(1000);
    std::uint64_t generation = 1;
    std::size_t record = 0;
};

bool is_nat_address(wire::Ipv4Address a) { return a == ipv4("198.51.100.1") || a == ipv4("198.51.100.2"); }

void check_uplink_frame(wire::ByteSpan frame) {
    if (frame.size() < 34) violation("runt frame on the uplink");
    if (!std::equal(kRouterMac.bytes().begin(), kRouterMac.bytes().end(), frame.data()) ||
        !std::equal(kUplinkMac.bytes().begin(), kUplinkMac.bytes().end(), frame.data() + 6))
        violation("uplink frame with the wrong MACs");
    if (wire::load_be16(frame.data() + 12) != wire::ethertype::kIpv4) violation("non-IPv4 frame on the uplink");
    const auto ip = wire::Ipv4View::parse(frame.subspan(14));
    if (!ip) violation("unparseable IPv4 on the uplink");
    if (!is_nat_address(ip->source())) violation("a source other than a NAT address on the uplink:", ip->source().to_string());
}

void check(NatNode& node, wire::ByteSpan input, const dataplane::NatFrameResult& r) {
    using dataplane::Verdict;
    const auto emissions = node.out.emissions();
    if (r.verdict == Verdict::to_nat) violation("to_nat escaped the NAT stage");
    if (emissions.size() != r.emissions) violation("emission count disagrees with the result");
    const int reasons = (r.drop_reason != dataplane::DropReason::none) + (r.nat_drop != nat::DropReason::none) +
                        (r.stage_drop != dataplane::NatStageDrop::none);
    if ((r.verdict == Verdict::drop) != (reasons == 1) || reasons > 1) violation("drop reasons inconsistent");
    if (r.verdict == Verdict::drop && !emissions.empty()) violation("a dropped frame emitted something");
    const bool strict = frame_problems(input).empty();
    for (std::size_t i = 0; i < emissions.size(); ++i) {
        const auto& e = emissions[i];
        if (std::size_t{e.frame.offset} + e.frame.length > e.frame.size) violation("emission outside its chunk");
        const auto frame = node.out.view(i);
        const auto problems = frame_problems(frame, {strict});
        if (!problems.empty()) violation("malformed emission:", problems.front());
        if (e.port == kUplink) check_uplink_frame(frame);
    }
}

// Runs one frame; copies what went to the underlay into `underlay` (while an in-place input's
// chunk, which those frames may live in, still exists).
void run(World& world, NatNode& node, PortId port, wire::ByteSpan frame, std::vector<Bytes>* underlay = nullptr) {
    const std::size_t mode = world.record++ % 4;
    dataplane::FrameSink& sink = node.out.fresh();
    ChunkFrame chunk(Bytes(frame.begin(), frame.end()));
    dataplane::NatFrameResult r;
    if (mode == 3) {
        const dataplane::RxFrame rx{port, chunk.buffer};
        node.stage.process_batch({&rx, 1}, *node.fabric, sink, {&r, 1}, world.now);
    } else if (mode % 2 == 1) {
        r = node.stage.process_in_place(port, chunk.buffer, *node.fabric, sink, world.now);
    } else {
        r = node.stage.process(port, frame, *node.fabric, sink, world.now);
    }
    check(node, frame, r);
    if (underlay == nullptr) return;
    for (std::size_t i = 0; i < node.out.emissions().size(); ++i)
        if (node.out.emissions()[i].port == kUnderlay) underlay->push_back(node.out.frame(i));
}

void run_frame(World& world, const Target& target, wire::ByteSpan frame) {
    if (!target.via_node1) {
        run(world, world.node2, target.port, frame);
        return;
    }
    std::vector<Bytes> overlay;
    run(world, world.node1, target.port, frame, &overlay);
    for (const Bytes& packet : overlay) run(world, world.node2, kUnderlay, packet);
}

void reload(World& world) {
    auto next = node2_fabric(++world.generation);
    const fabric::FabricDiff diff = fabric::diff_fabrics(world.node2.fabric.get(), *next);
    world.node2.fabric = next;
    world.node2.stage.on_reload(diff);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0 || size > 20000) return 0;
    World world;
    if (data[0] < 0x80) {
        run_frame(world, kPorts[data[0] % std::size(kPorts)], wire::ByteSpan(data + 1, size - 1));
        return 0;
    }
    for (std::size_t at = 1; at < size;) {
        const std::uint8_t selector = data[at++];
        if (selector == 0xff) {
            reload(world);
            continue;
        }
        if (selector == 0xfe) {
            world.now += std::chrono::seconds(31);
            world.engine.expire(world.now);
            continue;
        }
        if (at + 2 > size) break;
        const std::size_t length = std::min<std::size_t>(wire::load_be16(data + at), size - at - 2);
        at += 2;
        run_frame(world, kPorts[selector % std::size(kPorts)], wire::ByteSpan(data + at, length));
        at += length;
    }
    (void)world.engine.flows(world.now);
    return 0;
}
