// ns/packet of the overlay codecs on the per-packet path: encap by copy, in place, in bursts of
// 32, and decap, at 60-byte (minimum) and 1396-byte inner frames, the sizes the Light-Andromeda
// reference figures were taken at. Encap includes computing the flow hash from the inner frame,
// since the pipeline must do that for every packet too.
#include <benchmark/benchmark.h>

#include <array>
#include <vector>

#include "overlay/decap.hpp"
#include "overlay/flow_hash.hpp"
#include "overlay/outer_template.hpp"
#include "wire/bytes.hpp"
#include "support/frame_builder.hpp"

namespace {

using namespace andromeda;
using Bytes = std::vector<std::uint8_t>;

constexpr std::size_t kHeadroom = 256;  // as an AF_XDP UMEM frame reserves
constexpr std::size_t kBurst = 32;

// A UDP 10.0.0.10:40000 -> 10.0.0.20:4242 frame of exactly `size` bytes.
Bytes inner_udp_frame(std::size_t size) {
    return test_support::udp_frame(size, test_support::mac("02:00:00:00:00:10"), test_support::mac("02:00:00:00:00:20"),
                                   0x0a00000a, 0x0a000014);
}

overlay::OuterTemplate make_template() {
    overlay::OuterTemplateConfig c;
    c.src_mac = *wire::MacAddress::parse("02:00:00:00:a1:01");
    c.dst_mac = *wire::MacAddress::parse("02:00:00:00:a1:02");
    c.src_ip = wire::Ipv4Address(0xc0a80101);
    c.dst_ip = wire::Ipv4Address(0xc0a80102);
    return overlay::OuterTemplate(c);
}

void report_per_packet(benchmark::State& state, std::size_t packets_per_iteration) {
    const auto packets = static_cast<double>(state.iterations() * packets_per_iteration);
    state.SetItemsProcessed(static_cast<std::int64_t>(packets));
    state.counters["ns_per_pkt"] =
        benchmark::Counter(static_cast<double>(packets_per_iteration),
                           benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_EncapCopy(benchmark::State& state) {
    const Bytes inner = inner_udp_frame(static_cast<std::size_t>(state.range(0)));
    Bytes out(inner.size() + overlay::kOuterHeadersSize);
    auto t = make_template();
    for (auto _ : state) {
        const overlay::OverlayFields fields{100, overlay::flow_hash_of_frame(inner), overlay::kDefaultHopLimit, 0};
        benchmark::DoNotOptimize(t.encapsulate(inner, out, fields));
        benchmark::ClobberMemory();
    }
    report_per_packet(state, 1);
}

void BM_EncapInPlace(benchmark::State& state) {
    const Bytes inner = inner_udp_frame(static_cast<std::size_t>(state.range(0)));
    Bytes buffer(kHeadroom + inner.size());
    std::copy(inner.begin(), inner.end(), buffer.begin() + kHeadroom);
    const wire::ByteSpan inner_in_buffer(buffer.data() + kHeadroom, inner.size());
    auto t = make_template();
    for (auto _ : state) {
        const overlay::OverlayFields fields{100, overlay::flow_hash_of_frame(inner_in_buffer),
                                            overlay::kDefaultHopLimit, 0};
        benchmark::DoNotOptimize(t.encapsulate_in_place(buffer, kHeadroom, inner.size(), fields).data());
        benchmark::ClobberMemory();
    }
    report_per_packet(state, 1);
}

void BM_EncapBurstInPlace(benchmark::State& state) {
    const Bytes inner = inner_udp_frame(static_cast<std::size_t>(state.range(0)));
    std::vector<Bytes> buffers(kBurst, Bytes(kHeadroom + inner.size()));
    for (auto& b : buffers) std::copy(inner.begin(), inner.end(), b.begin() + kHeadroom);
    std::array<overlay::InPlaceFrame, kBurst> frames{};
    auto t = make_template();
    for (auto _ : state) {
        for (std::size_t i = 0; i < kBurst; ++i) {
            frames[i] = {buffers[i].data() + kHeadroom, static_cast<std::uint32_t>(inner.size()), kHeadroom};
        }
        benchmark::DoNotOptimize(t.encapsulate_burst_in_place(frames, 100));
        benchmark::ClobberMemory();
    }
    report_per_packet(state, kBurst);
}

void BM_Decap(benchmark::State& state) {
    const Bytes inner = inner_udp_frame(static_cast<std::size_t>(state.range(0)));
    Bytes packet(inner.size() + overlay::kOuterHeadersSize);
    auto t = make_template();
    t.encapsulate(inner, packet, {100, overlay::flow_hash_of_frame(inner), overlay::kDefaultHopLimit, 0});
    const overlay::DecapConfig config{};
    for (auto _ : state) {
        const overlay::DecapResult r = overlay::decapsulate(packet, config);
        benchmark::DoNotOptimize(r.packet.inner.data());
        benchmark::DoNotOptimize(r.error);
    }
    if (!overlay::decapsulate(packet, config).ok()) state.SkipWithError("decap refused the bench packet");
    report_per_packet(state, 1);
}

}  // namespace

BENCHMARK(BM_EncapCopy)->Arg(60)->Arg(1396);
BENCHMARK(BM_EncapInPlace)->Arg(60)->Arg(1396);
BENCHMARK(BM_EncapBurstInPlace)->Arg(60)->Arg(1396);
BENCHMARK(BM_Decap)->Arg(60)->Arg(1396);

BENCHMARK_MAIN();
