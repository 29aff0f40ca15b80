// Fabric -> map sync against the real, pinned BPF maps: the first sync fills them, a reload
// writes only what changed, and bpftool reads the result by field name.
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <gtest/gtest.h>

#include "fabric/fabric.hpp"
#include "io/bpf/bpf_instance.hpp"
#include "io/plan/map_plan.hpp"
#include "io/plan/map_sync.hpp"
#include "io_test_support.hpp"
#include "support/fabric_builder.hpp"
#include "support/root.hpp"

namespace andromeda::io {
namespace {

using testing::contains;

std::string fabric_text(const std::string& node, bool with_fourth) {
    test_support::FabricBuilder b(node, "192.168.1.1");
    b.peer("node2", "192.168.1.2")
        .vpc("blue", 100, "10.0.0.0/24", "10.0.0.1")
        .endpoint("10.0.0.10", "02:00:00:00:00:10", node, "tap1")
        .endpoint("10.0.0.20", "02:00:00:00:00:20", "node2")
        .endpoint("10.0.0.30", "02:00:00:00:00:30", "node2");
    if (with_fourth) b.endpoint("10.0.0.40", "02:00:00:00:00:40", "node2");
    return b.toml();
}

std::size_t entries(int map_fd, std::size_t key_size) {
    std::vector<std::uint8_t> key(key_size), next(key_size);
    std::size_t n = 0;
    for (void* prev = nullptr; bpf_map_get_next_key(map_fd, prev, next.data()) == 0; prev = key.data()) {
        key = next;
        ++n;
    }
    return n;
}

TEST(MapSyncBpf, ReloadWritesOnlyTheDiffToThePinnedMaps) {
    ANDROMEDA_REQUIRE_ROOT();
    testing::sweep_stale_test_pins();
    BpfInstance bpf(testing::instance_config("mapsync"));
    const std::string node = bpf.config().node_name;
    const LocalContext local{wire::Ipv4Address(0xc0a80101), {}};
    FabricMapSync sync(bpf.map_writer());

    auto first = fabric::load_fabric_string(fabric_text(node, false), "a.toml");
    ASSERT_TRUE(first.ok()) << fabric::to_string(first.errors);
    const auto start = sync.reconcile(plan_full(*first.snapshot, local));
    EXPECT_EQ(start.total().writes(), 6u) << start.summary();  // 1 peer, 1 VNI, its prefix, 3 endpoints
    EXPECT_EQ(entries(bpf.map_fd(MapId::fabric), sizeof(andromeda_fabric_key)), 3u);

    auto second = fabric::load_fabric_string(fabric_text(node, true), "b.toml");
    ASSERT_TRUE(second.ok());
    const auto diff = fabric::diff_fabrics(first.snapshot.get(), *second.snapshot);
    const auto reload = sync.apply(plan_diff(*second.snapshot, diff, local));
    EXPECT_EQ(reload.total().writes(), 1u) << reload.summary();
    EXPECT_EQ(reload[MapId::fabric].upserts, 1u);
    EXPECT_EQ(entries(bpf.map_fd(MapId::fabric), sizeof(andromeda_fabric_key)), 4u);
    EXPECT_EQ(sync.totals().total().writes(), 7u);

    andromeda_fabric_key key{100, htonl(0x0a000028)};
    andromeda_fabric_entry entry{};
    ASSERT_EQ(bpf_map_lookup_elem(bpf.map_fd(MapId::fabric), &key, &entry), 0);
    EXPECT_EQ(ntohl(entry.node_ip), 0xc0a80102u);
    EXPECT_EQ(entry.local, 0);

    const auto same = sync.apply(plan_diff(*second.snapshot, fabric::diff_fabrics(second.snapshot.get(), *second.snapshot), local));
    EXPECT_EQ(same.total().writes(), 0u);

    const auto dump = andromeda::testing::run_command({"bpftool", "map", "dump", "pinned", bpf.pin_path(MapId::fabric)});
    ASSERT_TRUE(dump.ok()) << dump.output;
    for (const char* field : {"\"vni\": 100", "\"node_ip\"", "\"mac\"", "\"local\": 1"})
        EXPECT_TRUE(contains(dump.output, field)) << field << " in\n" << dump.output;
}

}  // namespace
}  // namespace andromeda::io
