// Snapshot lookups and the RCU publisher's single-threaded behaviour.
#include <gtest/gtest.h>

#include "fabric_test_support.hpp"

namespace andromeda::fabric {
namespace {

using testing::kBaseFabric;
using testing::replace_once;

Ipv4Address ip(const char* text) { return *Ipv4Address::parse(text); }

TEST(FabricSnapshot, PortResolverBindsLocalEndpointsToIfindexes) {
    LoadOptions options;
    options.ports = fabric::resolve_port_names([](std::string_view port) -> std::optional<std::uint32_t> {
        if (port == "tap1") return 7;
        return std::nullopt;
    });
    const auto fabric = load_fabric_string(kBaseFabric, "t.toml", options).snapshot;
    ASSERT_TRUE(fabric);
    const Endpoint* local = fabric->find_local_endpoint_by_ifindex(7);
    ASSERT_NE(local, nullptr);
    EXPECT_EQ(local->ip, ip("10.0.0.10"));
    EXPECT_EQ(local->port_ifindex, 7u);
    EXPECT_EQ(fabric->find_local_endpoint_by_ifindex(8), nullptr);
}

TEST(FabricSnapshot, LookupsOverManyEndpoints) {
    std::string text = replace_once(kBaseFabric, "10.0.0.0/24", "10.0.0.0/16");
    for (int i = 0; i < 2000; ++i) {
        char entry[160];
        std::snprintf(entry, sizeof entry, "[[vpc.endpoint]]\nip = \"10.0.%d.%d\"\nmac = \"02:00:00:01:%02x:%02x\"\nnode = \"node2\"\n",
                      100 + i / 200, i % 200 + 1, i >> 8, i & 255);
        text += entry;
    }
    const auto fabric = load_fabric_string(text, "t.toml").snapshot;
    ASSERT_TRUE(fabric);
    EXPECT_EQ(fabric->endpoints().size(), 2001u);
    for (int i = 0; i < 2000; ++i) {
        const Ipv4Address address((10u << 24) | (static_cast<std::uint32_t>(100 + i / 200) << 8) | (i % 200 + 1));
        const Endpoint* e = fabric->find_endpoint(100, address);
        ASSERT_NE(e, nullptr) << address.to_string();
        EXPECT_EQ(e->ip, address);
        EXPECT_EQ(fabric->find_endpoint(101, address), nullptr);
    }
    EXPECT_GT(fabric->memory_bytes(), 2000u * sizeof(Endpoint));
}

TEST(FabricSnapshot, NodeLookups) {
    const auto fabric = load_fabric_string(kBaseFabric, "t.toml").snapshot;
    ASSERT_TRUE(fabric);
    EXPECT_EQ(fabric->find_node("node2")->address, ip("192.168.1.2"));
    EXPECT_TRUE(fabric->find_node("node1")->is_local);
    EXPECT_EQ(fabric->find_node("node3"), nullptr);
    EXPECT_EQ(fabric->find_node_by_address(ip("192.168.1.1")), &fabric->local_node());
    EXPECT_EQ(fabric->find_node_by_address(ip("192.168.1.3")), nullptr);
}

// Who translates a VPC is asked of the snapshot: the same file read as node2 and as node1.
TEST(FabricSnapshot, TheNatGatewayIsTheNodeTheVpcNames) {
    const auto text = [](const std::string& local) {
        auto fabric = test_support::two_node_blue(local);
        if (local == "node2") fabric.uplink("eth2", "203.0.113.7");  // a NAT gateway needs one
        return fabric.nat("node2", "203.0.113.7").vpc("green", 200, "10.1.0.0/24", "10.1.0.1").toml();
    };
    const auto node2 = load_fabric_string(text("node2"), "t.toml").snapshot;
    const auto node1 = load_fabric_string(text("node1"), "t.toml").snapshot;
    ASSERT_TRUE(node2);
    ASSERT_TRUE(node1);
    EXPECT_EQ(&node2->local_node(), &node2->nodes()[kLocalNodeIndex]);
    EXPECT_EQ(node2->local_node().name, "node2");
    EXPECT_TRUE(FabricSnapshot::translates_here(*node2->find_vpc(100)));
    EXPECT_FALSE(FabricSnapshot::translates_here(*node2->find_vpc(200)));  // no NAT at all
    EXPECT_TRUE(node2->serves_nat());
    EXPECT_FALSE(FabricSnapshot::translates_here(*node1->find_vpc(100)));
    EXPECT_FALSE(node1->serves_nat());
}

TEST(SnapshotPublisher, ReaderSeesNothingBeforePublishThenTheCurrentSnapshot) {
    SnapshotPublisher publisher;
    FabricReader reader = publisher.make_reader();
    EXPECT_EQ(reader.read().get(), nullptr);
    const auto first = load_fabric_string(kBaseFabric, "t.toml").snapshot;
    publisher.publish(first);
    EXPECT_EQ(reader.read().get(), first.get());
    EXPECT_EQ(publisher.current(), first);
}

TEST(SnapshotPublisher, RetiredSnapshotIsKeptWhileAReaderHoldsIt) {
    SnapshotPublisher publisher;
    FabricReader reader = publisher.make_reader();
    auto first = load_fabric_string(kBaseFabric, "t.toml").snapshot;
    std::weak_ptr<const FabricSnapshot> first_alive = first;
    publisher.publish(std::move(first));
    {
        auto guard = reader.read();
        auto nested = reader.read();  // nested sections see the same snapshot
        publisher.publish(load_fabric_string(kBaseFabric, "t2.toml").snapshot);
        EXPECT_EQ(publisher.reclaim(), 1u);
        EXPECT_FALSE(first_alive.expired());
        EXPECT_EQ(guard->source_name(), "t.toml");
        EXPECT_EQ(nested.get(), guard.get());
    }
    EXPECT_EQ(publisher.reclaim(), 0u);
    EXPECT_TRUE(first_alive.expired());
    EXPECT_EQ(reader.read()->source_name(), "t2.toml");
}

TEST(SnapshotPublisher, ReaderSlotsAreReused) {
    SnapshotPublisher publisher;
    for (std::size_t i = 0; i < 3 * SnapshotPublisher::kMaxReaders; ++i) {
        FabricReader reader = publisher.make_reader();
        (void)reader.read();
    }
    std::vector<FabricReader> readers;
    for (std::size_t i = 0; i < SnapshotPublisher::kMaxReaders; ++i) readers.push_back(publisher.make_reader());
    EXPECT_THROW((void)publisher.make_reader(), std::length_error);
}

TEST(FabricStore, FailedReloadChangesNothingAndReportsWhy) {
    FabricStore store;
    const ReloadResult first = store.load_string(kBaseFabric, "t.toml");
    ASSERT_TRUE(first.applied) << first.message();
    EXPECT_EQ(first.snapshot->generation(), 1u);
    const ReloadResult bad = store.load_string(replace_once(kBaseFabric, "vni = 100", "vni = -1"), "t.toml");
    EXPECT_FALSE(bad.applied);
    ASSERT_EQ(bad.errors.size(), 1u);
    EXPECT_EQ(bad.message(),
              "t.toml:12: vpc[0].vni: -1 is out of range; a VNI has 24 bits; valid is 1 to 16777215\n"
              "fabric not changed: 1 error(s)\n");
    EXPECT_EQ(store.current(), first.snapshot);
    const ReloadResult again = store.load_string(kBaseFabric, "t.toml");
    ASSERT_TRUE(again.applied);
    EXPECT_EQ(again.snapshot->generation(), 2u);
    EXPECT_TRUE(again.diff.empty());
    EXPECT_EQ(again.message(), "fabric generation 2 from t.toml: no changes\n");
}

// The daemon checks a fabric against the BPF maps and writes them before it is published: a
// refusal or a failure there leaves the running snapshot and the generation count as they were.
TEST(FabricStore, BeforePublishRefusesOrFailsAndNothingIsPublished) {
    FabricStore store;
    const ReloadResult first = store.load_string(kBaseFabric, "t.toml");
    ASSERT_TRUE(first.applied) << first.message();
    const std::string next = replace_once(kBaseFabric, "10.0.0.0/24", "10.0.0.0/23");
    ASSERT_NE(next, kBaseFabric);

    std::size_t asked = 0;
    const BeforePublish refuse = [&](const FabricSnapshot& s, const FabricDiff& diff) {
        ++asked;
        EXPECT_EQ(s.generation(), 2u);
        EXPECT_EQ(diff.vpcs_changed.size(), 1u);
        return ValidationErrors{{"t.toml", 0, "vpc", "too many", "fewer"}};
    };
    const ReloadResult refused = store.load_string(next, "t.toml", refuse);
    EXPECT_EQ(asked, 1u);
    EXPECT_FALSE(refused.applied);
    EXPECT_EQ(refused.message(), "t.toml: vpc: too many; fewer\nfabric not changed: 1 error(s)\n");
    EXPECT_EQ(store.current(), first.snapshot);
    EXPECT_EQ(refused.snapshot, first.snapshot) << "a refused result names the running snapshot";

    const BeforePublish fail = [](const FabricSnapshot&, const FabricDiff&) -> ValidationErrors {
        throw std::runtime_error("the map is full");
    };
    EXPECT_THROW((void)store.load_string(next, "t.toml", fail), std::runtime_error);
    EXPECT_EQ(store.current(), first.snapshot);
    EXPECT_THROW(
        (void)store.load_with([&](const LoadOptions& o) { return load_fabric_string(next, "t.toml", o); }, fail),
        std::runtime_error);
    EXPECT_EQ(store.current(), first.snapshot);

    const auto derive = [&](const FabricSnapshot& now, const LoadOptions& o) -> std::optional<DerivedFabric> {
        auto built = load_fabric_string(next, "t.toml", o);
        return DerivedFabric{built.snapshot, diff_fabrics(&now, *built.snapshot)};
    };
    const auto derived = store.derive(derive, refuse);
    ASSERT_TRUE(derived.has_value());
    EXPECT_FALSE(derived->applied);
    EXPECT_EQ(store.current(), first.snapshot);

    const BeforePublish accept = [](const FabricSnapshot&, const FabricDiff&) { return ValidationErrors{}; };
    const ReloadResult applied = store.load_string(next, "t.toml", accept);
    ASSERT_TRUE(applied.applied) << applied.message();
    EXPECT_EQ(applied.snapshot->generation(), 2u) << "the refused loads used no generation";
    EXPECT_EQ(store.current(), applied.snapshot);
}

}  // namespace
}  // namespace andromeda::fabric
