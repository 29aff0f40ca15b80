// Fabric control-plane costs at 1k/10k/100k endpoints over up to 1,000 nodes: parse (TOML text
// to decoded model), validate (cross-checks and snapshot indexes), the two end to end, diff
// against a fabric with 1% of endpoints changed/added/removed, the atomic swap, and the
// per-packet lookup. bytes_per_endpoint is the snapshot's heap footprint, counted twice: by
// the snapshot's own accounting and by a counting operator new around the build.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <new>

#include "fabric/decode.hpp"
#include "fabric/fabric.hpp"

// The counting operator new/delete pair below trips GCC's heuristic once inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace {

std::atomic<std::int64_t> g_live_bytes{0};

}  // namespace

void* operator new(std::size_t size) {
    void* p = std::malloc(size == 0 ? 1 : size);
    if (p == nullptr) throw std::bad_alloc();
    g_live_bytes.fetch_add(static_cast<std::int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
    return p;
}
void operator delete(void* p) noexcept {
    if (p == nullptr) return;
    g_live_bytes.fetch_sub(static_cast<std::int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }

namespace andromeda::fabric {
namespace {

constexpr int kVpcs = 10;

// `variant` 1 changes the MAC of 1% of endpoints, drops 1% and moves 1% to new addresses.
std::string generate_fabric(int endpoints, int variant = 0) {
    const int nodes = std::min(1000, std::max(2, endpoints / 10));
    std::string text = "[node]\nname = \"n0\"\nunderlay = \"eth1\"\naddress = \"10.255.0.1\"\n";
    char buf[200];
    for (int n = 1; n < nodes; ++n) {
        std::snprintf(buf, sizeof buf, "\n[[nodes]]\nname = \"n%d\"\naddress = \"10.255.%d.%d\"\n", n, n / 250, n % 250 + 1);
        text += buf;
    }
    const int per_vpc = endpoints / kVpcs;
    for (int v = 0; v < kVpcs; ++v) {
        std::snprintf(buf, sizeof buf, "\n[[vpc]]\nname = \"vpc%d\"\nvni = %d\ncidr = \"10.%d.0.0/16\"\ngateway = \"10.%d.0.1\"\n",
                      v, 1000 + v, v, v);
        text += buf;
        for (int e = 0; e < per_vpc; ++e) {
            if (variant == 1 && e % 100 == 1) continue;                // removed
            const int host = (variant == 1 && e % 100 == 2) ? e + 60000 - per_vpc : e;  // added
            const int mac_tag = (variant == 1 && e % 100 == 3) ? 0xee : v;               // changed
            const int node = e % nodes;
            std::snprintf(buf, sizeof buf,
                          "\n[[vpc.endpoint]]\nip = \"10.%d.%d.%d\"\nmac = \"02:01:%02x:%02x:%02x:%02x\"\nnode = \"n%d\"\n",
                          v, (host + 2) / 256, (host + 2) % 256, mac_tag, (e >> 16) & 255, (e >> 8) & 255, e & 255, node);
            text += buf;
            if (node == 0) text += "port = \"t" + std::to_string(v) + "-" + std::to_string(e) + "\"\n";
        }
    }
    return text;
}

const std::string& fabric_text(int endpoints, int variant = 0) {
    static std::map<std::pair<int, int>, std::string> cache;
    auto& text = cache[{endpoints, variant}];
    if (text.empty()) text = generate_fabric(endpoints, variant);
    return text;
}

std::shared_ptr<const FabricSnapshot> load_or_die(const std::string& text) {
    LoadResult result = load_fabric_string(text, "bench.toml");
    if (!result.ok()) {
        std::fputs(to_string(result.errors).c_str(), stderr);
        std::abort();
    }
    return result.snapshot;
}

void per_endpoint(benchmark::State& state) {
    state.counters["endpoints"] = static_cast<double>(state.range(0));
    state.counters["ns_per_endpoint"] = benchmark::Counter(
        static_cast<double>(state.range(0)), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_Parse(benchmark::State& state) {
    const std::string& text = fabric_text(static_cast<int>(state.range(0)));
    for (auto _ : state) {
        ValidationError error;
        auto tree = detail::parse_toml(text, "bench.toml", error);
        auto decoded = detail::decode_fabric(*tree, "bench.toml");
        benchmark::DoNotOptimize(decoded.config.endpoints.data());
    }
    per_endpoint(state);
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}

// toml11 alone, for comparison: the loader's fallback for TOML beyond the plain subset.
void BM_ParseToml11(benchmark::State& state) {
    const std::string& text = fabric_text(static_cast<int>(state.range(0)));
    for (auto _ : state) {
        ValidationError error;
        auto tree = detail::parse_toml_full(text, "bench.toml", error);
        benchmark::DoNotOptimize(tree->members.data());
    }
    per_endpoint(state);
}

void BM_Validate(benchmark::State& state) {
    const std::string& text = fabric_text(static_cast<int>(state.range(0)));
    ValidationError error;
    const auto tree = detail::parse_toml(text, "bench.toml", error);
    const auto decoded = detail::decode_fabric(*tree, "bench.toml");
    for (auto _ : state) {
        state.PauseTiming();
        auto copy = decoded;
        state.ResumeTiming();
        detail::validate_fabric(copy);
        FabricSnapshot snapshot(std::move(copy.config));
        benchmark::DoNotOptimize(snapshot.endpoints().size());
    }
    per_endpoint(state);
}

void BM_LoadEndToEnd(benchmark::State& state) {
    const std::string& text = fabric_text(static_cast<int>(state.range(0)));
    for (auto _ : state) benchmark::DoNotOptimize(load_or_die(text));
    per_endpoint(state);
    const std::int64_t before = g_live_bytes.load();
    auto snapshot = load_or_die(text);
    const double counted = static_cast<double>(g_live_bytes.load() - before);
    state.counters["bytes_per_endpoint"] = counted / static_cast<double>(state.range(0));
    state.counters["self_reported_bytes_per_endpoint"] =
        static_cast<double>(snapshot->memory_bytes()) / static_cast<double>(state.range(0));
}

void BM_Diff(benchmark::State& state) {
    const auto before = load_or_die(fabric_text(static_cast<int>(state.range(0))));
    const auto after = load_or_die(fabric_text(static_cast<int>(state.range(0)), 1));
    std::size_t changes = 0;
    for (auto _ : state) {
        FabricDiff diff = diff_fabrics(before.get(), *after);
        changes = diff.endpoints_added.size() + diff.endpoints_removed.size() + diff.endpoints_changed.size();
        benchmark::DoNotOptimize(diff);
    }
    per_endpoint(state);
    state.counters["endpoint_changes"] = static_cast<double>(changes);
}

// publish() with four idle registered readers; the retired snapshot stays owned by the bench.
void BM_Swap(benchmark::State& state) {
    const std::shared_ptr<const FabricSnapshot> snapshots[2] = {
        load_or_die(fabric_text(static_cast<int>(state.range(0)))),
        load_or_die(fabric_text(static_cast<int>(state.range(0)), 1))};
    SnapshotPublisher publisher;
    std::vector<FabricReader> readers;
    for (int i = 0; i < 4; ++i) readers.push_back(publisher.make_reader());
    std::size_t i = 0;
    for (auto _ : state) publisher.publish(snapshots[++i & 1]);
}

// The per-packet path: enter a read section and resolve one (vni, ip).
void BM_ReadAndLookup(benchmark::State& state) {
    const int endpoints = static_cast<int>(state.range(0));
    SnapshotPublisher publisher;
    publisher.publish(load_or_die(fabric_text(endpoints)));
    FabricReader reader = publisher.make_reader();
    const int per_vpc = endpoints / kVpcs;
    std::uint32_t n = 0;
    for (auto _ : state) {
        const std::uint32_t e = (n++ * 2654435761u) % static_cast<std::uint32_t>(per_vpc);
        auto fabric = reader.read();
        benchmark::DoNotOptimize(fabric->find_endpoint(1000 + n % kVpcs, Ipv4Address(0x0a000000u | (n % kVpcs) << 16 | (e + 2))));
    }
}

BENCHMARK(BM_Parse)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ParseToml11)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Validate)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LoadEndToEnd)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Diff)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Swap)->Arg(1000)->Arg(100000);
BENCHMARK(BM_ReadAndLookup)->Arg(1000)->Arg(100000);

}  // namespace
}  // namespace andromeda::fabric

BENCHMARK_MAIN();
