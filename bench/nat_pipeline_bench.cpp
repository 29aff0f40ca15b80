// ns/packet of NatPipeline at the NAT gateway node (node2 of tests/unit/dataplane/nat_world.hpp),
// in place as the AF_XDP worker runs it, over one established UDP flow:
//   outbound: an overlay packet from node1 (tenant 10.0.0.10 -> 203.0.113.7) -> decap, checks,
//             SNAT, new L2 header -> out of the uplink; single frames and bursts of 32;
//   inbound:  a reply on the uplink -> DNAT back -> route_from_nat -> encapsulated to node1.
// Inner frames of 60 and 1396 bytes. Each iteration first restores the headers the previous one
// rewrote (a ~100-byte copy, included in the time).
//
//   build-natpipe/bench/nat_pipeline_bench --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <array>
#include <cstring>
#include <vector>

#include "unit/dataplane/nat_world.hpp"
#include "wire/udp.hpp"

namespace {

using namespace andromeda;
using namespace andromeda::testing;
using namespace andromeda::testing::natworld;

constexpr std::size_t kBurst = 32;
constexpr std::size_t kRestore = 128;  // outer + inner headers: everything a packet's trip rewrites

// A UDP packet of `ip_size` bytes (IPv4 total length) with a valid checksum.
Bytes udp_ipv4(wire::Ipv4Address src, std::uint16_t sport, wire::Ipv4Address dst, std::uint16_t dport,
               std::size_t ip_size) {
    Bytes packet(ip_size, 0x5a);
    wire::Ipv4Header h;
    h.total_length = static_cast<std::uint16_t>(ip_size);
    h.protocol = wire::ip_protocol::kUdp;
    h.source = src;
    h.destination = dst;
    wire::write_ipv4_header(packet, h);
    auto l4 = wire::MutableByteSpan(packet).subspan(20);
    wire::write_udp_header(l4, {sport, dport, static_cast<std::uint16_t>(ip_size - 20), 0});
    wire::MutableUdpView::parse(l4)->update_checksum(src, dst);
    return packet;
}

struct Gateway {
    Gateway()
        : engine(small_nat_settings(4096)),
          node1(load(nat_fabric_text("node1")), "node1", nullptr),
          node2(load(nat_fabric_text("node2")), "node2", &engine) {}

    static std::shared_ptr<const fabric::FabricSnapshot> load(const std::string& text) {
        std::string errors;
        auto snapshot = try_load_fabric(text, 1, errors);
        if (!snapshot) throw std::runtime_error(errors);
        return snapshot;
    }

    // The overlay packet node1 sends for a tenant frame of `inner_size` bytes.
    Bytes overlay_from_node1(std::size_t inner_size) {
        const Bytes frame = ethernet_around(kGatewayMac, kBlue10Mac,
                                            udp_ipv4(ipv4("10.0.0.10"), 40000, ipv4("203.0.113.7"), 4242, inner_size - 14));
        node1.stage.process(kBlue10, frame, *node1.fabric, node1.out.fresh(), now);
        return node1.out.frame(0);
    }

    nat::NatEngine engine;
    NatNode node1;
    NatNode node2;
    nat::TimePoint now = nat::TimePoint{} + std::chrono::seconds(1000);
};

// A frame in a UMEM-like chunk, restorable to its original bytes.
struct Chunk {
    explicit Chunk(const Bytes& frame) : original(frame), bytes(2048 + 256) {
        buffer = {bytes.data(), static_cast<std::uint32_t>(bytes.size()), 256, static_cast<std::uint32_t>(frame.size())};
        std::memcpy(buffer.data(), frame.data(), frame.size());
    }
    void restore() noexcept {
        buffer.offset = 256;
        buffer.length = static_cast<std::uint32_t>(original.size());
        std::memcpy(buffer.data(), original.data(), std::min(kRestore, original.size()));
    }
    Bytes original;
    Bytes bytes;
    dataplane::PacketBuffer buffer;
};

void BM_OutboundOverlayToUplink(benchmark::State& state) {
    Gateway gw;
    Chunk chunk(gw.overlay_from_node1(static_cast<std::size_t>(state.range(0))));
    for (auto _ : state) {
        chunk.restore();
        const auto r = gw.node2.stage.process_in_place(kUnderlay, chunk.buffer, *gw.node2.fabric, gw.node2.out.fresh(), gw.now);
        benchmark::DoNotOptimize(r);
        if (r.path != dataplane::NatPath::to_uplink) state.SkipWithError("not sent to the uplink");
    }
    state.SetItemsProcessed(state.iterations());
}

void BM_OutboundOverlayToUplinkBurst(benchmark::State& state) {
    Gateway gw;
    std::vector<Chunk> chunks;
    chunks.reserve(kBurst);
    for (std::size_t i = 0; i < kBurst; ++i) chunks.emplace_back(gw.overlay_from_node1(static_cast<std::size_t>(state.range(0))));
    std::array<dataplane::RxFrame, kBurst> rx{};
    std::array<dataplane::NatFrameResult, kBurst> results{};
    for (auto _ : state) {
        for (std::size_t i = 0; i < kBurst; ++i) {
            chunks[i].restore();
            rx[i] = {kUnderlay, chunks[i].buffer};
        }
        gw.node2.stage.process_batch(rx, *gw.node2.fabric, gw.node2.out.fresh(), results, gw.now);
        benchmark::DoNotOptimize(results);
        if (results[kBurst - 1].path != dataplane::NatPath::to_uplink) state.SkipWithError("not sent to the uplink");
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kBurst));
}

void BM_InboundUplinkToNode1(benchmark::State& state) {
    Gateway gw;
    Chunk out(gw.overlay_from_node1(60));  // opens the flow
    gw.node2.stage.process_in_place(kUnderlay, out.buffer, *gw.node2.fabric, gw.node2.out.fresh(), gw.now);
    const auto size = static_cast<std::size_t>(state.range(0));
    Chunk chunk(ethernet_around(kUplinkMac, kRouterMac,
                                udp_ipv4(ipv4("203.0.113.7"), 4242, ipv4("198.51.100.1"), 40000, size - 14)));
    for (auto _ : state) {
        chunk.restore();
        const auto r = gw.node2.stage.process_in_place(kUplink, chunk.buffer, *gw.node2.fabric, gw.node2.out.fresh(), gw.now);
        benchmark::DoNotOptimize(r);
        if (r.verdict != dataplane::Verdict::forward) state.SkipWithError("reply not encapsulated to node1");
    }
    state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_OutboundOverlayToUplink)->Arg(60)->Arg(1396);
BENCHMARK(BM_OutboundOverlayToUplinkBurst)->Arg(60)->Arg(1396);
BENCHMARK(BM_InboundUplinkToNode1)->Arg(60)->Arg(1396);

}  // namespace

BENCHMARK_MAIN();
