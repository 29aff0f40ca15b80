// ns/packet of the NAT on the per-packet path, and the cost of expiry:
//  - BM_NatExistingFlow/N: outbound SNAT of a packet of an existing flow picked at random among
//    N live flows (1 / 1k / 100k / 1M: the lookup cost as the table outgrows the caches);
//  - BM_NatExistingFlowBurst/N: the same in bursts of 32 (translate_burst: one lock per shard);
//  - BM_NatSnatEncap/size/flows: SNAT of an inner frame then Andromeda encapsulation by copy, at
//    60 B and 1396 B inner frames (the Light-Andromeda reference: 51.5 ns and 63.7 ns), over one
//    flow and over 1000 flows visited at random;
//  - BM_NatSnatEncapInPlace/size/flows: the same with the encapsulation written into the frame's
//    headroom (no copy), as the pipeline's in-place path does;
//  - BM_NatNewFlow: setting up a flow with a new mapping (port allocation included);
//  - BM_NatWheelTick/N: one tick of the wheel in which N flows expire (per tick and per flow);
//  - BM_NatWheelTickIdle/N: one tick with N live flows of which none expires (should not grow).
// Offload to the kernel (docs/nat.md):
//  - BM_NatExistingFlowOffloaded/N: BM_NatExistingFlow with offload on and every flow offloaded
//    (the packets the kernel punts, or all of them before the daemon installs a flow);
//  - BM_NatOffloadDrain: handing one install to the daemon (drain_offload_changes, 64 a call);
//  - BM_NatOffloadTouch/N: the daemon's sync of one kernel entry among N (touch_offloaded);
//  - BM_NatRemoveStale/N: a reload's walk of N flows when nothing is stale (remove_stale).
// Translation is in place: see FramePool for how frames are reused.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "nat/nat_engine.hpp"
#include "overlay/outer_template.hpp"
#include "support/frame_builder.hpp"
#include "wire/ipv4.hpp"

namespace {

using namespace andromeda;
using namespace andromeda::nat;
using Bytes = std::vector<std::uint8_t>;

constexpr std::uint32_t kVni = 100;
const wire::Ipv4Address kNatAddress(0xC6336401);  // 198.51.100.1
constexpr std::size_t kEthernet = 14;

TimePoint at(std::int64_t seconds) { return TimePoint{} + std::chrono::seconds(seconds); }

// Ethernet + IPv4 + UDP frame of `size` bytes from tenant:port to remote:53.
Bytes udp_frame(std::size_t size, std::uint32_t tenant, std::uint16_t port, std::uint32_t remote) {
    test_support::Ipv4Frame f;
    f.src = tenant;
    f.dst = remote;
    f.src_port = port;
    f.dst_port = 53;
    f.id = 0;
    f.fill = 0x5a;
    f.fill_step = 0;
    return test_support::ipv4_frame(f.frame_length(size));
}

// `flows` live flows: 1000 tenant endpoints (EIM: 1000 mappings) each to flows/1000 remotes.
struct LoadedNat {
    std::unique_ptr<NatEngine> nat;
    std::vector<Bytes> frames;  // one frame per flow, untranslated

    explicit LoadedNat(std::size_t flows, std::size_t frame_size = 60,
                       std::chrono::seconds udp_timeout = NatTimeouts{}.udp, bool offload = false) {
        NatSettings s;
        s.timeouts.udp = udp_timeout;
        s.offload.enabled = offload;
        s.max_flows = std::max<std::size_t>(flows, 1024);
        s.hash_seed = 7;
        nat = std::make_unique<NatEngine>(s);
        nat->set_rules(std::make_shared<const NatRules>(std::vector<VpcNatConfig>{{kVni, kNatAddress, kDefaultPortMin, kDefaultPortMax, {}}}));
        const std::size_t endpoints = std::min<std::size_t>(flows, 1000);
        frames.reserve(flows);
        for (std::size_t i = 0; i < flows; ++i) {
            const auto tenant = static_cast<std::uint32_t>(0x0a000000 + i % endpoints / 100);
            const auto port = static_cast<std::uint16_t>(20000 + i % endpoints % 100);
            const auto remote = static_cast<std::uint32_t>(0xcb000000 + i / endpoints);
            frames.push_back(udp_frame(frame_size, tenant, port, remote));
            Bytes copy = frames.back();
            if (!nat->outbound(kVni, wire::MutableByteSpan(copy).subspan(kEthernet), at(1)).translated()) std::abort();
        }
    }
};

// Frames translated in place, visited in turn. Before each translation the fields SNAT rewrites
// (IPv4 source and checksum, UDP source port and checksum) are put back with stores of their
// own widths (about 1 ns, included in the figures): restoring whole frames with memcpy would
// make the NAT's narrower loads stall on store forwarding, which NIC-written packets do not.
class FramePool {
public:
    // Each frame sits `headroom` bytes into its slot, as in an AF_XDP UMEM frame.
    FramePool(const std::vector<Bytes>& frames, std::size_t frame_size, std::size_t headroom = 0)
        : frame_size_(frame_size), headroom_(headroom), slot_size_(headroom + frame_size),
          work_(frames.size() * slot_size_) {
        for (std::size_t i = 0; i < frames.size(); ++i) {
            std::memcpy(&work_[i * slot_size_ + headroom], frames[i].data(), frame_size);
            const std::uint8_t* f = frames[i].data();
            pristine_.push_back({load32(f + 26), load16(f + 24), load16(f + 34), load16(f + 40)});
        }
    }
    wire::MutableByteSpan next() {
        if (next_ == pristine_.size()) next_ = 0;
        slot_ = &work_[next_ * slot_size_];
        std::uint8_t* f = slot_ + headroom_;
        const Fields& p = pristine_[next_++];
        std::memcpy(f + 26, &p.source, 4);
        std::memcpy(f + 24, &p.ip_checksum, 2);
        std::memcpy(f + 34, &p.source_port, 2);
        std::memcpy(f + 40, &p.udp_checksum, 2);
        return wire::MutableByteSpan(f + kEthernet, frame_size_ - kEthernet);
    }
    // The whole slot (headroom and frame) of the frame next() returned last.
    wire::MutableByteSpan slot() const { return wire::MutableByteSpan(slot_, slot_size_); }

private:
    struct Fields {  // raw wire bytes
        std::uint32_t source;
        std::uint16_t ip_checksum, source_port, udp_checksum;
    };
    static std::uint32_t load32(const std::uint8_t* p) { std::uint32_t v; std::memcpy(&v, p, 4); return v; }
    static std::uint16_t load16(const std::uint8_t* p) { std::uint16_t v; std::memcpy(&v, p, 2); return v; }

    std::size_t frame_size_;
    std::size_t headroom_;
    std::size_t slot_size_;
    Bytes work_;
    std::vector<Fields> pristine_;
    std::size_t next_ = 0;
    std::uint8_t* slot_ = nullptr;
};

FramePool random_frames(const LoadedNat& loaded, std::size_t count, std::size_t frame_size, std::size_t headroom = 0) {
    std::vector<Bytes> frames;
    std::mt19937 rng(1);
    for (std::size_t i = 0; i < count; ++i) frames.push_back(loaded.frames[rng() % loaded.frames.size()]);
    return FramePool(frames, frame_size, headroom);
}

overlay::OuterTemplate outer_template() {
    overlay::OuterTemplateConfig c;
    c.src_mac = *wire::MacAddress::parse("02:00:00:00:a1:01");
    c.dst_mac = *wire::MacAddress::parse("02:00:00:00:a1:02");
    c.src_ip = wire::Ipv4Address(0xc0a80101);
    c.dst_ip = wire::Ipv4Address(0xc0a80102);
    return overlay::OuterTemplate(c);
}

void BM_NatExistingFlow(benchmark::State& state) {
    const auto flows = static_cast<std::size_t>(state.range(0));
    LoadedNat loaded(flows);
    FramePool pool = random_frames(loaded, 8192, 60);
    loaded.frames.clear();
    for (auto _ : state) {
        const NatResult r = loaded.nat->outbound(kVni, pool.next(), at(2));
        benchmark::DoNotOptimize(r);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NatExistingFlow)->Arg(1)->Arg(1000)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kNanosecond);

void BM_NatExistingFlowBurst(benchmark::State& state) {
    constexpr std::size_t kBurst = 32;
    const auto flows = static_cast<std::size_t>(state.range(0));
    LoadedNat loaded(flows);
    FramePool pool = random_frames(loaded, 8192, 60);
    loaded.frames.clear();
    std::array<NatBurstPacket, kBurst> burst{};
    for (auto _ : state) {
        for (auto& b : burst) {
            b.ipv4 = pool.next();
            b.vni = kVni;
        }
        loaded.nat->translate_burst(burst, at(2));
        benchmark::DoNotOptimize(burst.data());
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kBurst));
    state.counters["ns_per_pkt"] = benchmark::Counter(static_cast<double>(kBurst),
                                                      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_NatExistingFlowBurst)->Arg(1)->Arg(1000)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kNanosecond);

void BM_NatSnatEncap(benchmark::State& state) {
    const auto size = static_cast<std::size_t>(state.range(0));
    LoadedNat loaded(static_cast<std::size_t>(state.range(1)), size);
    FramePool pool = random_frames(loaded, 64, size);
    overlay::OuterTemplate outer = outer_template();
    Bytes out(size + 64);
    overlay::OverlayFields fields;
    fields.vni = kVni;
    for (auto _ : state) {
        const wire::MutableByteSpan ip = pool.next();
        const NatResult r = loaded.nat->outbound(kVni, ip, at(2));
        benchmark::DoNotOptimize(r);
        benchmark::DoNotOptimize(outer.encapsulate(wire::ByteSpan(ip.data() - kEthernet, size), out, fields));
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NatSnatEncap)->ArgsProduct({{60, 1396}, {1, 1000}})->Unit(benchmark::kNanosecond);

// SNAT then encapsulation in place, into the frame's headroom (no copy), as the pipeline does it.
void BM_NatSnatEncapInPlace(benchmark::State& state) {
    constexpr std::size_t kHeadroom = 256;
    const auto size = static_cast<std::size_t>(state.range(0));
    LoadedNat loaded(static_cast<std::size_t>(state.range(1)), size);
    FramePool pool = random_frames(loaded, 64, size, kHeadroom);
    overlay::OuterTemplate outer = outer_template();
    overlay::OverlayFields fields;
    fields.vni = kVni;
    for (auto _ : state) {
        const wire::MutableByteSpan ip = pool.next();
        const NatResult r = loaded.nat->outbound(kVni, ip, at(2));
        benchmark::DoNotOptimize(r);
        benchmark::DoNotOptimize(outer.encapsulate_in_place(pool.slot(), kHeadroom, size, fields));
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NatSnatEncapInPlace)->ArgsProduct({{60, 1396}, {1, 1000}})->Unit(benchmark::kNanosecond);

void BM_NatNewFlow(benchmark::State& state) {
    constexpr std::size_t kBatch = 60'000;  // fits one NAT address's port range
    std::vector<Bytes> frames;
    frames.reserve(kBatch);
    for (std::size_t i = 0; i < kBatch; ++i)
        frames.push_back(udp_frame(60, static_cast<std::uint32_t>(0x0a000000 + i / 60), static_cast<std::uint16_t>(30000 + i % 60),
                                   0xcb007107));
    NatSettings s;
    s.max_flows = kBatch;
    s.hash_seed = 7;
    auto rules = std::make_shared<const NatRules>(std::vector<VpcNatConfig>{{kVni, kNatAddress, kDefaultPortMin, kDefaultPortMax, {}}});
    std::unique_ptr<NatEngine> nat;
    std::size_t i = kBatch;
    Bytes work(60);
    for (auto _ : state) {
        if (i == kBatch) {
            state.PauseTiming();
            nat = std::make_unique<NatEngine>(s);
            nat->set_rules(rules);
            i = 0;
            state.ResumeTiming();
        }
        std::memcpy(work.data(), frames[i++].data(), work.size());
        const NatResult r = nat->outbound(kVni, wire::MutableByteSpan(work).subspan(kEthernet), at(2));
        if (!r.translated()) state.SkipWithError("new flow refused");
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NatNewFlow)->Unit(benchmark::kNanosecond);

void BM_NatWheelTick(benchmark::State& state) {
    const auto flows = static_cast<std::size_t>(state.range(0));
    for (auto _ : state) {
        state.PauseTiming();
        auto loaded = std::make_unique<LoadedNat>(flows);  // all created at 1 s: due at 121 s
        loaded->frames.clear();
        loaded->nat->expire(at(120));  // every tick before the deadline: nothing due
        state.ResumeTiming();
        const std::size_t expired = loaded->nat->expire(at(121));
        state.PauseTiming();
        if (expired != flows) state.SkipWithError("not every flow expired");
        loaded.reset();
        state.ResumeTiming();
    }
    state.counters["ns_per_expired_flow"] = benchmark::Counter(
        static_cast<double>(flows), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_NatWheelTick)->Arg(1000)->Arg(100'000)->Arg(1'000'000)->Iterations(3)->Unit(benchmark::kMicrosecond);

void BM_NatWheelTickIdle(benchmark::State& state) {
    // Flows due in a day: every tick measured here has nothing to expire.
    LoadedNat loaded(static_cast<std::size_t>(state.range(0)), 60, std::chrono::seconds(86'400));
    loaded.frames.clear();
    std::int64_t second = 2;
    for (auto _ : state) benchmark::DoNotOptimize(loaded.nat->expire(at(second++)));
    if (loaded.nat->flow_count() != static_cast<std::size_t>(state.range(0))) state.SkipWithError("flows expired");
}
BENCHMARK(BM_NatWheelTickIdle)->Arg(1000)->Arg(1'000'000)->Iterations(50'000)->Unit(benchmark::kNanosecond);

// `andromedactl conntrack`'s copy of the table (the daemon filters and pages the copy): the whole
// table, one shard lock at a time. What a query costs the daemon, and how long it holds a shard.
void BM_NatFlowsCopy(benchmark::State& state) {
    LoadedNat loaded(static_cast<std::size_t>(state.range(0)));
    loaded.frames.clear();
    for (auto _ : state) {
        auto flows = loaded.nat->flows(at(2));
        if (flows.size() != static_cast<std::size_t>(state.range(0))) state.SkipWithError("flows missing");
        benchmark::DoNotOptimize(flows.data());
    }
    state.counters["bytes_copied"] = static_cast<double>(state.range(0) * sizeof(FlowInfo));
}
BENCHMARK(BM_NatFlowsCopy)->Arg(10'000)->Arg(1'000'000)->Iterations(5)->Unit(benchmark::kMillisecond);

// Every install the engine has queued, handed out (and kept: the flows the kernel would hold).
std::vector<OffloadedFlow> drain_all(NatEngine& nat) {
    std::vector<OffloadedFlow> flows;
    std::array<OffloadChange, 64> out;
    for (std::size_t n = out.size(); n == out.size();) {
        n = nat.drain_offload_changes(out);
        for (std::size_t i = 0; i < n; ++i) flows.push_back(out[i].flow);
    }
    return flows;
}

void BM_NatExistingFlowOffloaded(benchmark::State& state) {
    LoadedNat loaded(static_cast<std::size_t>(state.range(0)), 60, NatTimeouts{}.udp, true);
    if (drain_all(*loaded.nat).size() != static_cast<std::size_t>(state.range(0))) state.SkipWithError("not offloaded");
    FramePool pool = random_frames(loaded, 8192, 60);
    loaded.frames.clear();
    for (auto _ : state) {
        const NatResult r = loaded.nat->outbound(kVni, pool.next(), at(2));
        benchmark::DoNotOptimize(r);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NatExistingFlowOffloaded)->Arg(1)->Arg(1000)->Unit(benchmark::kNanosecond);

void BM_NatOffloadDrain(benchmark::State& state) {
    constexpr std::size_t kFlows = 50'000;
    std::unique_ptr<LoadedNat> loaded;
    std::array<OffloadChange, 64> out;
    std::size_t handed_out = 0;
    for (auto _ : state) {
        state.PauseTiming();
        loaded = std::make_unique<LoadedNat>(kFlows, 60, NatTimeouts{}.udp, true);  // 50k installs queued
        loaded->frames.clear();
        state.ResumeTiming();
        for (std::size_t n = out.size(); n == out.size();) {
            n = loaded->nat->drain_offload_changes(out);
            handed_out += n;
            benchmark::DoNotOptimize(out.data());
        }
    }
    if (handed_out != kFlows * state.iterations()) state.SkipWithError("not every install handed out");
    state.counters["ns_per_change"] = benchmark::Counter(
        static_cast<double>(kFlows), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_NatOffloadDrain)->Iterations(5)->Unit(benchmark::kMicrosecond);

void BM_NatOffloadTouch(benchmark::State& state) {
    LoadedNat loaded(static_cast<std::size_t>(state.range(0)), 60, NatTimeouts{}.udp, true);
    loaded.frames.clear();
    const std::vector<OffloadedFlow> flows = drain_all(*loaded.nat);
    std::size_t next = 0;
    for (auto _ : state) {
        const bool known = loaded.nat->touch_offloaded(flows[next], OffloadDirection::outbound, at(2), {10, 1000}, at(2));
        benchmark::DoNotOptimize(known);
        if (++next == flows.size()) next = 0;
    }
    if (loaded.nat->counters().offload_touch_unknown != 0) state.SkipWithError("a touch missed");
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NatOffloadTouch)->Arg(1000)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kNanosecond);

void BM_NatRemoveStale(benchmark::State& state) {
    const auto flows = static_cast<std::size_t>(state.range(0));
    LoadedNat loaded(flows, 60, NatTimeouts{}.udp, true);
    loaded.frames.clear();
    const auto rules =
        std::make_shared<const NatRules>(std::vector<VpcNatConfig>{{kVni, kNatAddress, kDefaultPortMin, kDefaultPortMax, {}}});
    for (auto _ : state) {
        loaded.nat->set_rules(rules);  // a reload that changes nothing: every flow is checked, none ends
        benchmark::DoNotOptimize(loaded.nat->remove_stale(at(2)));
    }
    if (loaded.nat->flow_count() != flows) state.SkipWithError("flows ended");
    state.counters["ns_per_flow"] = benchmark::Counter(
        static_cast<double>(flows), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_NatRemoveStale)->Arg(1000)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
