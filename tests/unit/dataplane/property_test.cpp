// Properties over random frames and random sequences on every port: the pipeline never crashes,
// never emits a malformed frame, keeps its verdicts and counters consistent, and its copy and
// in-place variants agree byte for byte.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "dataplane/frame_bytes.hpp"
#include "overlay/flow_hash.hpp"
#include "unit/dataplane/pipeline_fixture.hpp"
#include "unit/dataplane/random_frames.hpp"

namespace andromeda::testing {
namespace {

using dataplane::FrameResult;
using dataplane::Verdict;

bool well_formed(PortId port, const Bytes& frame) {
    (void)port;
    return frame_problems(frame).empty();
}

// Checks one result against the invariants; returns the emitted frames.
std::vector<Bytes> check_result(const RandomInput& in, const FrameResult& r, const SinkStorage& out) {
    std::vector<Bytes> frames;
    const auto emissions = out.emissions();
    EXPECT_EQ(emissions.size(), r.emissions);
    EXPECT_EQ(r.verdict == Verdict::drop, r.drop_reason != dataplane::DropReason::none);
    switch (r.verdict) {
        case Verdict::drop:
        case Verdict::to_nat: EXPECT_TRUE(emissions.empty()); break;
        case Verdict::forward:
            EXPECT_GE(emissions.size(), 1u);
            for (const auto& e : emissions) EXPECT_EQ(e.port, kUnderlayPort);
            break;
        case Verdict::deliver:
            EXPECT_EQ(emissions.size(), 1u);
            for (const auto& e : emissions) EXPECT_TRUE(e.port != kUnderlayPort && e.port != kUplinkPort);
            break;
        case Verdict::reply:
            EXPECT_EQ(emissions.size(), 1u);
            for (const auto& e : emissions) EXPECT_EQ(e.port, in.port);
            break;
    }
    if (r.verdict == Verdict::to_nat) {
        EXPECT_LE(std::size_t{r.nat.frame_offset} + r.nat.frame_length, in.frame.size());
    }
    // Replies are the gateway's own work; forwarded frames carry the sender's transport checksums.
    const bool strict = r.verdict == Verdict::reply || well_formed(in.port, in.frame);
    for (std::size_t i = 0; i < emissions.size(); ++i) {
        const auto& f = emissions[i].frame;
        EXPECT_LE(std::size_t{f.offset} + f.length, f.size);
        frames.push_back(out.frame(i));
        const auto problems = frame_problems(frames.back(), {strict});
        EXPECT_TRUE(problems.empty()) << problems.front() << " (verdict " << to_string(r.verdict) << ")";
    }
    return frames;
}

// Three pipelines fed the same inputs: copy and in-place with the express lanes, and copy through
// the general path only.
struct Lockstep {
    explicit Lockstep(std::uint64_t* now, dataplane::PipelineConfig config = node_config("node1")) {
        config.clock = [now] { return *now; };
        copy = std::make_unique<dataplane::Pipeline>(config);
        in_place = std::make_unique<dataplane::Pipeline>(config);
        config.express_lanes = false;
        general = std::make_unique<dataplane::Pipeline>(config);
    }
    std::unique_ptr<dataplane::Pipeline> copy, in_place, general;
};

// 20000 random inputs through the Lockstep of `config` over `fabric`: every emission valid, the
// three agreeing byte for byte and counting alike, every verdict reached.
void expect_random_frames_property(const fabric::FabricSnapshot& fabric, const dataplane::PipelineConfig& config,
                                   RandomFrames random) {
    std::uint64_t now = 1;
    Lockstep pipelines(&now, config);
    SinkStorage copy_out, in_place_out, general_out;
    std::map<Verdict, int> seen;
    for (int i = 0; i < 20000; ++i) {
        const RandomInput in = random.next();
        now += 1000;
        const FrameResult a = pipelines.copy->process(in.port, in.frame, fabric, copy_out.fresh());
        ChunkFrame chunk(in.frame);
        const FrameResult b = pipelines.in_place->process_in_place(in.port, chunk.buffer, fabric, in_place_out.fresh());
        const FrameResult c = pipelines.general->process(in.port, in.frame, fabric, general_out.fresh());
        SCOPED_TRACE("input " + std::to_string(i) + " on port " + std::to_string(in.port));
        const auto copied = check_result(in, a, copy_out);
        const auto in_placed = check_result(in, b, in_place_out);
        const auto general = check_result(in, c, general_out);
        EXPECT_EQ(a.verdict, b.verdict);
        EXPECT_EQ(a.drop_reason, b.drop_reason);
        EXPECT_EQ(copied, in_placed);
        EXPECT_EQ(a.verdict, c.verdict);
        EXPECT_EQ(a.drop_reason, c.drop_reason);
        EXPECT_EQ(copied, general);
        ++seen[a.verdict];
        if (::testing::Test::HasFailure()) break;
    }
    // The generator reaches every verdict, so the properties were exercised on each.
    for (const Verdict v : {Verdict::forward, Verdict::deliver, Verdict::reply, Verdict::to_nat, Verdict::drop})
        EXPECT_GT(seen[v], 20) << to_string(v);
    const auto& c = pipelines.copy->counters();
    EXPECT_EQ(c.forwarded + c.delivered + c.replied + c.to_nat + c.dropped, 20000u);
    EXPECT_EQ(dataplane::total_drops(c.drops), c.dropped);
    // The express lanes count exactly what the general path counts.
    const auto& g = pipelines.general->counters();
    EXPECT_EQ(std::memcmp(&c, &g, sizeof c), 0);
    EXPECT_GT(c.encapsulated, 500u);
    EXPECT_GT(c.delivered_from_fabric, 30u);
}

TEST(PipelinePropertyTest, RandomFramesOnEveryPortNeverYieldMalformedOutput) {
    const auto fabric = load_fabric(fabric_text("node1"));
    expect_random_frames_property(*fabric, node_config("node1"), RandomFrames(1234));
}

// The same world over an IPv6 underlay, overlay packets mostly outer IPv6 (a few outer IPv4: the
// other family), in place and by copy in lockstep. The copy variant's outer UDP checksum once
// covered the frame before its MAC was rewritten, which this found.
TEST(PipelinePropertyTest, RandomFramesOverAnIpv6UnderlayNeverYieldMalformedOutput) {
    const auto fabric = load_fabric(with_ipv6_underlay(fabric_text("node1")));
    expect_random_frames_property(*fabric, ipv6_node_config("node1"), RandomFrames(4321, true));
}

TEST(PipelinePropertyTest, ExpressLaneHeaderChecksumEqualsTheWireCheck) {
    std::mt19937 rng(11);
    int valid = 0;
    for (int i = 0; i < 200000; ++i) {
        Bytes header(20);
        for (auto& b : header) b = static_cast<std::uint8_t>(rng());
        header[0] = 0x45;
        wire::store_be16(&header[2], 20);
        if (i % 2 == 0) {  // a valid header, sometimes damaged a little
            wire::MutableIpv4View::parse(header)->update_checksum();
            // Any byte but version/IHL and total length, which would make it unparseable.
            if (i % 6 == 0) header[4 + rng() % 16] ^= static_cast<std::uint8_t>(1 + rng() % 255);
        }
        const bool expected = wire::checksum_verifies(header);  // the generic RFC 1071 sum
        ASSERT_EQ(wire::ipv4_header_checksum_ok(header.data(), 20), expected) << i;
        valid += expected ? 1 : 0;
    }
    EXPECT_GT(valid, 50000);
}

TEST(PipelinePropertyTest, ExpressLaneFlowHashEqualsTheOverlayFlowHash) {
    RandomFrames random(5);
    int compared = 0;
    for (int i = 0; i < 5000; ++i) {
        const RandomInput in = random.next();
        const auto eth = wire::EthernetView::parse(in.frame);
        if (!eth || eth->ethertype() != wire::ethertype::kIpv4) continue;
        const auto ip = wire::Ipv4View::parse(eth->payload());
        if (!ip) continue;
        EXPECT_EQ(dataplane::detail::ipv4_flow_hash(ip->packet().data(), ip->header_length(), ip->packet().size()),
                  overlay::flow_hash_of_frame(in.frame));
        ++compared;
    }
    EXPECT_GT(compared, 1000);
}

TEST(PipelinePropertyTest, RandomSequencesWithReloadsKeepCountersConsistent) {
    auto gen1 = load_fabric(fabric_text("node1"), 1);
    std::string moved = fabric_text("node1");
    moved.replace(moved.find("node = \"node2\"\nport = \"tap-blue-20\""), 14, "node = \"node3\"");
    auto gen2 = load_fabric(moved, 2);
    auto gen3 = load_fabric(fabric_text("node1", "encap = \"vxlan\"\n"), 3);
    const fabric::FabricSnapshot* snapshots[] = {gen1.get(), gen2.get(), gen3.get()};
    dataplane::Pipeline pipeline(node_config("node1"));
    SinkStorage out(32);
    RandomFrames random(99);
    std::uint64_t emitted = 0;
    std::size_t processed = 0;
    const fabric::FabricSnapshot* current = gen1.get();
    for (int step = 0; step < 3000; ++step) {
        if (random.chance(2)) current = snapshots[random.pick(3)];
        if (random.chance(1)) pipeline.set_next_hop(kNode3Ip, mac("02:00:00:00:a1:03"));
        // A burst of in-place frames or a single copied one.
        if (random.chance(30)) {
            std::vector<std::unique_ptr<ChunkFrame>> chunks;
            std::vector<dataplane::RxFrame> burst;
            std::vector<RandomInput> inputs;
            for (std::uint32_t i = 0, n = 1 + random.pick(dataplane::kMaxBatch); i < n; ++i) {
                inputs.push_back(random.next());
                chunks.push_back(std::make_unique<ChunkFrame>(inputs.back().frame));
                burst.push_back({inputs.back().port, chunks.back()->buffer});
            }
            std::vector<FrameResult> results(burst.size());
            ASSERT_EQ(pipeline.process_batch(burst, *current, out.fresh(), results), burst.size());
            std::size_t emissions = 0;
            for (const auto& r : results) emissions += r.emissions;
            EXPECT_EQ(emissions, out.emissions().size());
            for (std::size_t i = 0; i < out.emissions().size(); ++i)
                EXPECT_TRUE(frame_problems(out.frame(i), {false}).empty()) << frame_problems(out.frame(i), {false})[0];
            emitted += emissions;
            processed += burst.size();
        } else {
            const RandomInput in = random.next();
            const FrameResult r = pipeline.process(in.port, in.frame, *current, out.fresh());
            check_result(in, r, out);
            emitted += r.emissions;
            ++processed;
        }
        if (::testing::Test::HasFailure()) break;
    }
    const auto& c = pipeline.counters();
    EXPECT_EQ(c.forwarded + c.delivered + c.replied + c.to_nat + c.dropped, processed);
    EXPECT_EQ(c.encapsulated + c.delivered_local + c.delivered_from_fabric + c.arp_replies + c.echo_replies +
                  c.frag_needed_sent + c.packet_too_big_sent,
              emitted);
    EXPECT_GT(c.fabric_rebuilds, 3u);
}

// Stores `value` at `offset` of the IPv4 header at `ip` (a length field) and recomputes the
// header checksum, so that only the length is wrong.
void set_ipv4_field(Bytes& frame, std::size_t ip, std::size_t offset, std::uint16_t value) {
    wire::store_be16(&frame[ip + offset], value);
    frame[ip + 10] = frame[ip + 11] = 0;
    wire::store_be16(&frame[ip + 10], wire::internet_checksum(wire::ByteSpan(&frame[ip], 20)));
}

// The express lanes check lengths with single unsigned compares (20 <= total <= size - 14 and the
// like): walk every boundary they guard, for tenant frames and overlay packets, with each length
// field off by up to 2 either way and frames cut short or padded, and require the express lanes
// (copy and in place) to do exactly what the general path does.
TEST(PipelinePropertyTest, ExpressLanesAgreeWithTheGeneralPathAtEveryLengthBoundary) {
    auto fabric = load_fabric(fabric_text("node1"));
    std::uint64_t now = 1;
    Lockstep pipelines(&now);
    SinkStorage copy_out, in_place_out, general_out;
    std::vector<RandomInput> inputs;
    const auto variants = [&](PortId port, const Bytes& frame, std::size_t ip) {
        const std::uint16_t total = wire::load_be16(&frame[ip + 2]);
        for (int delta = -2; delta <= 2; ++delta) {
            Bytes f = frame;
            set_ipv4_field(f, ip, 2, static_cast<std::uint16_t>(total + delta));
            inputs.push_back({port, f});
        }
        if (port == kUnderlayPort) {  // the UDP length
            const std::uint16_t udp_length = wire::load_be16(&frame[ip + 24]);
            for (int delta = -2; delta <= 2; ++delta) {
                Bytes f = frame;
                wire::store_be16(&f[ip + 24], static_cast<std::uint16_t>(udp_length + delta));
                inputs.push_back({port, f});
            }
        }
        for (std::size_t cut = 1; cut <= 2; ++cut) inputs.push_back({port, Bytes(frame.begin(), frame.end() - cut)});
        Bytes padded = frame;
        padded.resize(frame.size() + 2, 0);
        inputs.push_back({port, padded});
    };
    overlay::OuterTemplateConfig c;
    c.src_mac = kNode2Mac;
    c.dst_mac = kNode1Mac;
    c.src_ip = kNode2Ip;
    c.dst_ip = kNode1Ip;
    overlay::OuterTemplate outer(c);
    for (std::size_t payload = 0; payload <= 24; ++payload) {
        Ipv4Spec tenant = blue10_to("10.0.0.20");
        tenant.payload = payload;
        variants(kBlue10Port, ipv4_frame(tenant), 14);
        Ipv4Spec inner = blue10_to("10.0.0.10");
        inner.src_mac = kBlue20Mac;
        inner.src = ipv4("10.0.0.20");
        inner.payload = payload;
        const Bytes full = ipv4_frame(inner);
        // Inner frames from 14 bytes (no IPv4 header at all) up to whole.
        for (std::size_t length = payload == 0 ? 14 : full.size(); length <= full.size(); ++length) {
            Bytes packet(length + overlay::kOuterHeadersSize);
            ASSERT_EQ(outer.encapsulate(wire::ByteSpan(full.data(), length), packet, {100, 1, 64, 0}), packet.size());
            variants(kUnderlayPort, packet, 14);
        }
    }
    std::map<Verdict, int> seen;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const RandomInput& in = inputs[i];
        SCOPED_TRACE("input " + std::to_string(i) + " on port " + std::to_string(in.port) + ", " +
                     std::to_string(in.frame.size()) + " bytes");
        const FrameResult a = pipelines.copy->process(in.port, in.frame, *fabric, copy_out.fresh());
        ChunkFrame chunk(in.frame);
        const FrameResult b = pipelines.in_place->process_in_place(in.port, chunk.buffer, *fabric, in_place_out.fresh());
        const FrameResult g = pipelines.general->process(in.port, in.frame, *fabric, general_out.fresh());
        const auto copied = check_result(in, a, copy_out);
        const auto in_placed = check_result(in, b, in_place_out);
        const auto general = check_result(in, g, general_out);
        EXPECT_EQ(a.verdict, g.verdict);
        EXPECT_EQ(a.drop_reason, g.drop_reason) << to_string(a.drop_reason) << " vs " << to_string(g.drop_reason);
        EXPECT_EQ(b.verdict, g.verdict);
        EXPECT_EQ(b.drop_reason, g.drop_reason);
        EXPECT_EQ(copied, general);
        EXPECT_EQ(in_placed, general);
        ++seen[g.verdict];
        if (::testing::Test::HasFailure()) break;
    }
    // Both outcomes occur: the boundaries were crossed both ways.
    EXPECT_GT(seen[Verdict::forward], 20);
    EXPECT_GT(seen[Verdict::deliver], 20);
    EXPECT_GT(seen[Verdict::drop], 100);
    const auto& fast = pipelines.copy->counters();
    const auto& slow = pipelines.general->counters();
    EXPECT_EQ(std::memcmp(&fast, &slow, sizeof fast), 0);
}

// Regenerates the libFuzzer seeds (tests/fuzz/corpus/pipeline) from this generator:
//   dataplane_property_test --gtest_also_run_disabled_tests --gtest_filter='*WriteFuzzSeeds*'
// Seed format (tests/fuzz/pipeline_fuzz.cpp): byte 0 < 0x80 picks the port, the rest is the frame;
// byte 0 >= 0x80 starts a sequence of [port][length, 2 bytes big-endian][frame] records.
TEST(PipelinePropertyTest, DISABLED_WriteFuzzSeeds) {
    const std::filesystem::path dir = std::filesystem::path(ANDROMEDA_SOURCE_DIR) / "tests/fuzz/corpus/pipeline";
    std::filesystem::create_directories(dir);
    static constexpr PortId kFuzzPorts[] = {kBlue10Port, kBlue11Port, kGreen10Port, kRed10Port, kOrange10Port,
                                            kUnboundPort, kUnderlayPort, kUplinkPort, kUnknownPort};
    const auto selector = [](PortId port) {
        return static_cast<std::uint8_t>(std::find(std::begin(kFuzzPorts), std::end(kFuzzPorts), port) - std::begin(kFuzzPorts));
    };
    RandomFrames random(2024);
    int written = 0;
    for (int i = 0; written < 24; ++i) {
        RandomInput in = random.next();
        if (in.frame.size() > 1600) continue;
        Bytes seed{selector(in.port)};
        seed.insert(seed.end(), in.frame.begin(), in.frame.end());
        std::ofstream(dir / ("single-" + std::to_string(written++)), std::ios::binary)
            .write(reinterpret_cast<const char*>(seed.data()), static_cast<std::streamsize>(seed.size()));
    }
    for (int s = 0; s < 6; ++s) {
        Bytes seed{0x80};
        for (int k = 0; k < 4; ++k) {
            RandomInput in = random.next();
            in.frame.resize(std::min<std::size_t>(in.frame.size(), 1500));
            seed.push_back(selector(in.port));
            seed.push_back(static_cast<std::uint8_t>(in.frame.size() >> 8));
            seed.push_back(static_cast<std::uint8_t>(in.frame.size()));
            seed.insert(seed.end(), in.frame.begin(), in.frame.end());
        }
        std::ofstream(dir / ("sequence-" + std::to_string(s)), std::ios::binary)
            .write(reinterpret_cast<const char*>(seed.data()), static_cast<std::streamsize>(seed.size()));
    }
}

}  // namespace
}  // namespace andromeda::testing
