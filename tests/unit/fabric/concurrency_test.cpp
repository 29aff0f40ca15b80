// Readers resolve endpoints without pause while a writer reloads the fabric thousands of times.
// Each fabric variant stamps its number into every endpoint's MAC and its VPC's name, so a
// reader that saw a missing endpoint or a mix of two fabrics would notice. Built separately
// under ThreadSanitizer by scripts/test.sh, which also checks the publisher's memory ordering.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "fabric/fabric.hpp"
#include "support/fabric_builder.hpp"
#include "support/sanitizer_scale.hpp"

namespace andromeda::fabric {
namespace {

constexpr int kStableEndpoints = 64;
constexpr int kVariants = 8;

std::string fabric_variant(int variant) {
    test_support::FabricBuilder b("node1", "192.168.1.1");
    b.peer("node2", "192.168.1.2").vpc("variant-" + std::to_string(variant), 100, "10.0.0.0/16", "10.0.0.1");
    char ip[32], mac[32];
    // Stable endpoints exist in every variant; their MAC's last byte names the variant.
    for (int i = 0; i < kStableEndpoints; ++i) {
        std::snprintf(ip, sizeof ip, "10.0.1.%d", i + 1);
        std::snprintf(mac, sizeof mac, "02:00:00:00:%02x:%02x", i, variant);
        b.endpoint(ip, mac, i % 2 ? "node2" : "node1", i % 2 ? "" : "t" + std::to_string(i));
    }
    // Endpoints that come and go between variants.
    for (int i = 0; i < variant * 4; ++i) {
        std::snprintf(ip, sizeof ip, "10.0.2.%d", i + 1);
        std::snprintf(mac, sizeof mac, "02:00:00:01:%02x:%02x", i, variant);
        b.endpoint(ip, mac, "node2");
    }
    return b.toml();
}

// Returns an empty string when the snapshot is whole and of one variant, else what is wrong.
std::string check_snapshot(const FabricSnapshot& fabric) {
    const std::string& name = fabric.vpcs()[0].name;
    const int variant = std::stoi(name.substr(name.find('-') + 1));
    for (int i = 0; i < kStableEndpoints; ++i) {
        const Endpoint* e = fabric.find_endpoint(100, Ipv4Address(0x0a000100u + static_cast<std::uint32_t>(i) + 1));
        if (e == nullptr) return "missing endpoint " + std::to_string(i);
        if (e->mac.bytes()[5] != variant) return "endpoint from another fabric";
        if (fabric.node_of(*e).name != (i % 2 ? "node2" : "node1")) return "endpoint on the wrong node";
        if (i % 2 == 0 && fabric.find_local_endpoint(e->port) != e) return "local port index mismatch";
    }
    const auto transient = static_cast<std::uint32_t>(variant * 4);
    if (fabric.find_endpoint(100, Ipv4Address(0x0a000200u + transient)) == nullptr && transient != 0)
        return "missing transient endpoint";
    if (fabric.find_endpoint(100, Ipv4Address(0x0a000200u + transient + 1)) != nullptr)
        return "transient endpoint of another fabric";
    return "";
}

TEST(FabricConcurrency, ReadersNeverSeeAMissingOrMixedFabricWhileReloading) {
    std::vector<std::string> variants;
    for (int v = 0; v < kVariants; ++v) variants.push_back(fabric_variant(v));
    FabricStore store;
    ASSERT_TRUE(store.load_string(variants[0], "v0.toml").applied);

    constexpr int kReaders = 3;
    constexpr int kReloads = andromeda::test::sanitizer_scaled(2000);
    std::atomic<bool> done{false};
    std::atomic<long> reads{0};
    std::vector<std::string> failures(kReaders);
    std::vector<FabricReader> readers;
    for (int r = 0; r < kReaders; ++r) readers.push_back(store.make_reader());

    std::vector<std::thread> threads;
    for (int r = 0; r < kReaders; ++r) {
        threads.emplace_back([&, r] {
            std::uint64_t last_generation = 0;
            long local_reads = 0;
            while (!done.load(std::memory_order_relaxed) && failures[r].empty()) {
                auto fabric = readers[r].read();
                if (fabric->generation() < last_generation) failures[r] = "generation went backwards";
                last_generation = fabric->generation();
                if (auto problem = check_snapshot(*fabric); !problem.empty()) failures[r] = problem;
                ++local_reads;
            }
            reads += local_reads;
        });
    }
    for (int i = 1; i <= kReloads; ++i) {
        const ReloadResult result = store.load_string(variants[i % kVariants], "v.toml");
        ASSERT_TRUE(result.applied) << result.message();
    }
    done = true;
    for (auto& t : threads) t.join();
    for (int r = 0; r < kReaders; ++r) EXPECT_EQ(failures[r], "") << "reader " << r;
    EXPECT_GT(reads.load(), kReaders);
    std::printf("%ld reads during %d reloads\n", reads.load(), kReloads);
    readers.clear();
    store.publisher().synchronize();
    EXPECT_EQ(store.current()->generation(), static_cast<std::uint64_t>(kReloads + 1));
}

}  // namespace
}  // namespace andromeda::fabric
