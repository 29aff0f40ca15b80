// ns/packet and Mpps of the whole data-plane pipeline on one core: a tenant frame through
// anti-spoofing, the fabric lookup, the MTU check and encapsulation (copy, in place, and bursts
// of 32 in place), and an overlay packet through decap, the peer/VNI/source checks and delivery,
// at 60-byte and 1396-byte inner frames (the sizes of the Light-Andromeda reference figures).
//
//   build-pipeline/bench/pipeline_bench --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <memory>
#include <new>
#include <stdexcept>
#include <vector>

#include "dataplane/pipeline.hpp"
#include "fabric/loader.hpp"
#include "io/plan/config.hpp"
#include "overlay/outer_template.hpp"
#include "support/fabric_builder.hpp"
#include "support/frame_builder.hpp"
#include "wire/bytes.hpp"

namespace {

using namespace andromeda;
using Bytes = std::vector<std::uint8_t>;

// The daemon's UMEM as io::UmemConfig's defaults lay it out: 4 KiB chunks, data behind both
// headrooms (64 + 256 bytes) and the chunk's stagger (64 * (chunk % 16) bytes, unaligned-chunk mode).
constexpr io::UmemConfig kUmemConfig{};
constexpr std::uint32_t kHeadroom = kUmemConfig.frame_headroom + io::kKernelRxHeadroom;
constexpr std::uint32_t kChunk = kUmemConfig.frame_size;
std::uint32_t stagger_of(std::size_t chunk) { return kUmemConfig.stagger_of(static_cast<std::uint32_t>(chunk)); }
constexpr std::size_t kBurst = 32;
constexpr dataplane::PortId kUnderlay = 1;
constexpr dataplane::PortId kTenant = 10;

// node1's view: 10.0.0.10 is local, 10.0.0.20 is on node2 (next-hop MAC known).
const std::string kFabric = test_support::two_node_blue("node1", "02:00:00:00:a1:02")
                                .endpoint("10.0.0.10", "02:00:00:00:00:10", "node1", "tap-blue-10")
                                .endpoint("10.0.0.20", "02:00:00:00:00:20", "node2")
                                .toml();

const wire::MacAddress kGatewayMac{{2, 0, 0, 0, 0, 0xff}};

// A UDP frame of exactly `size` bytes from `src` to `dst` with the given MACs.
Bytes udp_frame(std::size_t size, const wire::MacAddress& dst_mac, const wire::MacAddress& src_mac, std::uint32_t src,
                std::uint32_t dst) {
    return test_support::udp_frame(size, src_mac.bytes(), dst_mac.bytes(), src, dst);
}

Bytes tenant_frame(std::size_t size) {
    return udp_frame(size, kGatewayMac, wire::MacAddress({2, 0, 0, 0, 0, 0x10}), 0x0a00000a, 0x0a000014);
}

// node2's encapsulation of 10.0.0.20 -> 10.0.0.10.
Bytes overlay_packet(std::size_t inner_size) {
    const Bytes inner = udp_frame(inner_size, wire::MacAddress({2, 0, 0, 0, 0, 0x10}),
                                  wire::MacAddress({2, 0, 0, 0, 0, 0x20}), 0x0a000014, 0x0a00000a);
    overlay::OuterTemplateConfig c;
    c.src_mac = wire::MacAddress({2, 0, 0, 0, 0xa1, 2});
    c.dst_mac = wire::MacAddress({2, 0, 0, 0, 0xa1, 1});
    c.src_ip = wire::Ipv4Address(0xc0a80102);
    c.dst_ip = wire::Ipv4Address(0xc0a80101);
    overlay::OuterTemplate t(c);
    Bytes packet(inner.size() + overlay::kOuterHeadersSize);
    t.encapsulate(inner, packet, {100, 0x1234, overlay::kDefaultHopLimit, 0});
    return packet;
}

// Chunks as the daemon's AF_XDP UMEM lays them out: back to back from a page boundary, so every
// frame sits where it would in the daemon. (Frames in heap vectors sat wherever the allocator
// put them, which moved the copy variants' costs by about 10 % from run to run.)
class Umem {
public:
    explicit Umem(std::size_t chunks)
        : base_(static_cast<std::uint8_t*>(std::aligned_alloc(4096, chunks * kChunk))), chunks_(chunks) {
        if (base_ == nullptr) throw std::bad_alloc();
        std::fill(base_, base_ + chunks * kChunk, std::uint8_t{0});
    }
    ~Umem() { std::free(base_); }
    Umem(const Umem&) = delete;
    Umem& operator=(const Umem&) = delete;
    [[nodiscard]] std::uint8_t* chunk(std::size_t i) const {
        if (i >= chunks_) throw std::out_of_range("UMEM chunk index");
        return base_ + i * kChunk;
    }

private:
    std::uint8_t* base_;
    std::size_t chunks_;
};

struct Bench {
    Bench() : fabric(fabric::load_fabric_string(kFabric, "bench.toml").snapshot), pipeline(config()) {
        for (std::size_t i = 0; i < kBurst; ++i) spares.push_back({umem.chunk(i), kChunk, kHeadroom + stagger_of(i), 0});
        sink = dataplane::FrameSink(slots, spares);
    }
    static dataplane::PipelineConfig config() {
        dataplane::PipelineConfig c;
        c.underlay_mac = wire::MacAddress({2, 0, 0, 0, 0xa1, 1});
        c.ports = {{kUnderlay, dataplane::PortRole::underlay, ""}, {kTenant, dataplane::PortRole::tenant, "tap-blue-10"}};
        return c;
    }
    // Received frame `i` (below kBurst): `frame` copied behind the headroom of its own chunk and,
    // when `staggered` (as the daemon receives them), behind the chunk's stagger.
    [[nodiscard]] dataplane::PacketBuffer input(std::size_t i, const Bytes& frame, bool staggered = true) const {
        std::uint8_t* chunk = umem.chunk(kBurst + i);
        const std::uint32_t offset = kHeadroom + (staggered ? stagger_of(kBurst + i) : 0);
        if (offset + frame.size() > kChunk) throw std::out_of_range("frame does not fit its chunk");
        std::copy(frame.begin(), frame.end(), chunk + offset);
        return {chunk, kChunk, offset, static_cast<std::uint32_t>(frame.size())};
    }

    std::shared_ptr<const fabric::FabricSnapshot> fabric;
    dataplane::Pipeline pipeline;
    Umem umem{2 * kBurst};  // spares, then received frames
    std::vector<dataplane::PacketBuffer> spares;
    std::array<dataplane::Emission, dataplane::kMaxBatch> slots{};
    dataplane::FrameSink sink;
};

void report_per_packet(benchmark::State& state, std::size_t packets_per_iteration) {
    const auto packets = static_cast<double>(state.iterations() * packets_per_iteration);
    state.SetItemsProcessed(static_cast<std::int64_t>(packets));
    state.counters["ns_per_pkt"] =
        benchmark::Counter(static_cast<double>(packets_per_iteration),
                           benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void expect(benchmark::State& state, const dataplane::FrameResult& r, dataplane::Verdict verdict) {
    if (r.verdict != verdict) state.SkipWithError(std::string(to_string(r.drop_reason)).c_str());
}

void BM_PipelineEncapCopy(benchmark::State& state) {
    Bench b;
    const dataplane::PacketBuffer in = b.input(0, tenant_frame(static_cast<std::size_t>(state.range(0))));
    const wire::ByteSpan frame(in.data(), in.length);
    expect(state, b.pipeline.process(kTenant, frame, *b.fabric, b.sink), dataplane::Verdict::forward);
    for (auto _ : state) {
        b.sink.reset();
        benchmark::DoNotOptimize(b.pipeline.process(kTenant, frame, *b.fabric, b.sink));
        benchmark::ClobberMemory();
    }
    report_per_packet(state, 1);
}

void BM_PipelineEncapInPlace(benchmark::State& state) {
    Bench b;
    const dataplane::PacketBuffer in = b.input(0, tenant_frame(static_cast<std::size_t>(state.range(0))));
    std::uint8_t* destination_mac = in.data();
    expect(state, b.pipeline.process_in_place(kTenant, in, *b.fabric, b.sink), dataplane::Verdict::forward);
    for (auto _ : state) {
        // Encap rewrote the inner destination MAC to the endpoint's: put the gateway's back.
        kGatewayMac.copy_to(destination_mac);
        b.sink.reset();
        benchmark::DoNotOptimize(b.pipeline.process_in_place(kTenant, in, *b.fabric, b.sink));
        benchmark::ClobberMemory();
    }
    report_per_packet(state, 1);
}

// A burst of 32 as the AF_XDP RX ring hands it over, frames staggered as the daemon's UMEM has
// them; unstaggered (a kernel without unaligned chunks), every frame sits at the same offset of
// its chunk and their header lines share a few L1 sets.
void encap_batch_in_place(benchmark::State& state, bool staggered) {
    Bench b;
    const Bytes frame = tenant_frame(static_cast<std::size_t>(state.range(0)));
    std::vector<dataplane::RxFrame> burst;
    for (std::size_t i = 0; i < kBurst; ++i) burst.push_back({kTenant, b.input(i, frame, staggered)});
    std::array<dataplane::FrameResult, kBurst> results{};
    for (auto _ : state) {
        for (const auto& rx : burst) kGatewayMac.copy_to(rx.buffer.data());
        b.sink.reset();
        benchmark::DoNotOptimize(b.pipeline.process_batch(burst, *b.fabric, b.sink, results));
        benchmark::ClobberMemory();
    }
    expect(state, results[kBurst - 1], dataplane::Verdict::forward);
    report_per_packet(state, kBurst);
}

void BM_PipelineEncapBatchInPlace(benchmark::State& state) { encap_batch_in_place(state, true); }
void BM_PipelineEncapBatchInPlaceUnstaggered(benchmark::State& state) { encap_batch_in_place(state, false); }

void BM_PipelineDecapCopy(benchmark::State& state) {
    Bench b;
    const dataplane::PacketBuffer in = b.input(0, overlay_packet(static_cast<std::size_t>(state.range(0))));
    const wire::ByteSpan packet(in.data(), in.length);
    expect(state, b.pipeline.process(kUnderlay, packet, *b.fabric, b.sink), dataplane::Verdict::deliver);
    for (auto _ : state) {
        b.sink.reset();
        benchmark::DoNotOptimize(b.pipeline.process(kUnderlay, packet, *b.fabric, b.sink));
        benchmark::ClobberMemory();
    }
    report_per_packet(state, 1);
}

void BM_PipelineDecapInPlace(benchmark::State& state) {
    Bench b;
    const dataplane::PacketBuffer in = b.input(0, overlay_packet(static_cast<std::size_t>(state.range(0))));
    expect(state, b.pipeline.process_in_place(kUnderlay, in, *b.fabric, b.sink), dataplane::Verdict::deliver);
    for (auto _ : state) {
        b.sink.reset();  // delivery only moved the offset and rewrote the inner MACs: the packet stays valid
        benchmark::DoNotOptimize(b.pipeline.process_in_place(kUnderlay, in, *b.fabric, b.sink));
        benchmark::ClobberMemory();
    }
    report_per_packet(state, 1);
}

}  // namespace

BENCHMARK(BM_PipelineEncapCopy)->Arg(60)->Arg(1396);
BENCHMARK(BM_PipelineEncapInPlace)->Arg(60)->Arg(1396);
BENCHMARK(BM_PipelineEncapBatchInPlace)->Arg(60)->Arg(1396);
BENCHMARK(BM_PipelineEncapBatchInPlaceUnstaggered)->Arg(60)->Arg(1396);
BENCHMARK(BM_PipelineDecapCopy)->Arg(60)->Arg(1396);
BENCHMARK(BM_PipelineDecapInPlace)->Arg(60)->Arg(1396);

BENCHMARK_MAIN();
