// What a daemon spends on the fabric from etcd's keys: a whole build (fabric::build_etcd_fabric:
// the first listing, and any change that is not a remote endpoint's), and an endpoint change
// applied to the running fabric in place (EtcdFabricBuilder::derive), which bounds how fast a
// change reaches the maps at fleet scale. 20 nodes, 10 VPCs, N endpoints spread over them.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "fabric/etcd_fabric.hpp"

namespace {

using namespace andromeda::fabric;

const EtcdLayout kLayout("/andromeda");
constexpr int kNodes = 20;
constexpr int kVpcs = 10;

std::map<std::string, std::string> fleet(int endpoints) {
    std::map<std::string, std::string> kvs;
    char buf[256];
    for (int n = 0; n < kNodes; ++n) {
        std::snprintf(buf, sizeof buf, R"({"address": "10.255.0.%d"})", n + 1);
        kvs[kLayout.node_key("n" + std::to_string(n))] = buf;
    }
    for (int v = 0; v < kVpcs; ++v) {
        std::snprintf(buf, sizeof buf, R"({"vni": %d, "cidr": "10.%d.0.0/16", "gateway": "10.%d.0.1"})", 1000 + v, v, v);
        kvs[kLayout.vpc_key("vpc" + std::to_string(v))] = buf;
    }
    for (int e = 0; e < endpoints; ++e) {
        const int v = e % kVpcs, host = e / kVpcs + 2;
        const std::string ip = "10." + std::to_string(v) + "." + std::to_string(host / 256) + "." + std::to_string(host % 256);
        std::snprintf(buf, sizeof buf, R"({"mac": "02:01:%02x:%02x:%02x:%02x", "node": "n%d"%s})", v, (e >> 16) & 255, (e >> 8) & 255,
                      e & 255, e % kNodes, e % kNodes == 0 ? (R"(, "port": "t)" + std::to_string(e) + "\"").c_str() : "");
        kvs[kLayout.endpoint_key("vpc" + std::to_string(v), ip)] = buf;
    }
    return kvs;
}

const std::string kLocal = "[node]\nname = \"n0\"\nunderlay = \"eth1\"\naddress = \"10.255.0.1\"\n"
                           "[etcd]\nendpoints = [\"http://127.0.0.1:2379\"]\n";

void build(benchmark::State& state) {
    const auto kvs = fleet(static_cast<int>(state.range(0)));
    for (auto _ : state) {
        const EtcdFabric f = build_etcd_fabric(kLocal, "node.toml", kvs, kLayout);
        if (!f.loaded.ok() || !f.rejected.empty()) {
            state.SkipWithError("the fleet does not build");
            return;
        }
        benchmark::DoNotOptimize(f.loaded.snapshot.get());
    }
    state.counters["keys"] = static_cast<double>(kvs.size());
}
BENCHMARK(build)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

// What a daemon does per watch response: one key changed, the fabric built again from the values
// it already parsed (EtcdFabricBuilder).
void rebuild_after_one_change(benchmark::State& state) {
    auto kvs = fleet(static_cast<int>(state.range(0)));
    EtcdFabricBuilder builder(kLayout);
    builder.update(kvs);
    const std::string key = kLayout.endpoint_key("vpc3", "10.3.0.200");
    int i = 0;
    for (auto _ : state) {
        kvs[key] = R"({"mac": "02:02:00:00:00:)" + std::to_string(10 + i++ % 80) + R"(", "node": "n3"})";
        if (builder.update(kvs) != 1) {
            state.SkipWithError("more than the one changed key was parsed");
            return;
        }
        const EtcdFabric f = builder.build(kLocal, "node.toml");
        if (!f.loaded.ok() || !f.rejected.empty()) {
            state.SkipWithError("the fleet does not build");
            return;
        }
        benchmark::DoNotOptimize(f.loaded.snapshot.get());
    }
}
BENCHMARK(rebuild_after_one_change)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

// What a daemon does per watch response now when the change is a remote endpoint's: the change
// applied to the running fabric in place (EtcdFabricBuilder::derive: that value parsed and
// validated, the snapshot's vectors copied and indexed again), no build.
void derive_one_change(benchmark::State& state) {
    const auto kvs = fleet(static_cast<int>(state.range(0)));
    EtcdFabricBuilder builder(kLayout);
    builder.update(kvs);
    const EtcdFabric first = builder.build(kLocal, "node.toml");
    if (!first.loaded.ok() || !first.rejected.empty()) {
        state.SkipWithError("the fleet does not build");
        return;
    }
    std::shared_ptr<const FabricSnapshot> running = first.loaded.snapshot;
    const std::string key = kLayout.endpoint_key("vpc3", "10.3.0.2");  // endpoint 3, on node n3
    int i = 0;
    for (auto _ : state) {
        EtcdChanges changes;
        char value[96];
        std::snprintf(value, sizeof value, R"({"mac": "02:02:00:00:00:%02x", "node": "n3"})", 16 + i++ % 200);
        changes[key] = value;
        builder.update(changes);
        auto derived = builder.derive(*running, changes, kLocal, "node.toml");
        if (!derived || derived->diff.endpoints_changed.size() != 1) {
            state.SkipWithError("the change was not applied in place");
            return;
        }
        running = std::move(derived->snapshot);
    }
}
BENCHMARK(derive_one_change)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
