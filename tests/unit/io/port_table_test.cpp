// Port slots stay with their port across reloads; the port map follows the local endpoints.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <set>

#include "fabric/fabric.hpp"
#include "fake_map_writer.hpp"
#include "io/plan/port_table.hpp"
#include "support/fabric_builder.hpp"

namespace andromeda::io {
namespace {

const std::string kFabric = test_support::two_node_blue("node1")
                                .endpoint("10.0.0.10", "02:00:00:00:00:10", "node1", "tap-a")
                                .endpoint("10.0.0.11", "02:00:00:00:00:11", "node1", "tap-b")
                                .endpoint("10.0.0.12", "02:00:00:00:00:12", "node1", "tap-missing")
                                .endpoint("10.0.0.20", "02:00:00:00:00:20", "node2")
                                .toml();

std::shared_ptr<const fabric::FabricSnapshot> load(const std::string& text) {
    fabric::LoadOptions options;
    options.ports = [](std::string_view port) -> std::optional<std::uint32_t> {
        if (port == "tap-a") return 11;
        if (port == "tap-b") return 12;
        if (port == "tap-c") return 13;
        return std::nullopt;
    };
    auto result = fabric::load_fabric_string(text, "t.toml", options);
    EXPECT_TRUE(result.ok()) << fabric::to_string(result.errors);
    return result.snapshot;
}

TEST(PortSlots, LowestFreeSlotStaysWithItsPort) {
    PortSlots slots;
    EXPECT_EQ(slots.slot_for("eth1"), 0u);
    EXPECT_EQ(slots.tenant_slot_for("tap-a"), 1u);
    EXPECT_EQ(slots.tenant_slot_for("tap-b"), 2u);
    EXPECT_EQ(slots.tenant_slot_for("tap-a"), 1u);
    slots.retain_tenants(std::set<std::string>{"tap-b"});
    EXPECT_EQ(slots.find("tap-a"), std::nullopt);
    EXPECT_EQ(slots.find("eth1"), 0u);  // not a tenant port: kept
    EXPECT_EQ(slots.tenant_slot_for("tap-c"), 1u);  // reuses the freed slot
    EXPECT_EQ(slots.find("tap-b"), 2u);
}

TEST(PortSlots, RunsOutWithAClearError) {
    PortSlots slots;
    for (int i = 0; i < ANDROMEDA_MAX_PORTS; ++i) slots.tenant_slot_for("p" + std::to_string(i));
    EXPECT_THROW(slots.tenant_slot_for("one-too-many"), std::exception);
}

TEST(TenantPorts, FollowTheLocalEndpointsThatHaveAnInterface) {
    PortSlots slots;
    EXPECT_EQ(slots.slot_for("eth1"), 0u);
    std::map<std::string, std::uint32_t> unresolved;
    const auto ports = tenant_ports(*load(kFabric), slots, &unresolved);
    ASSERT_EQ(ports.size(), 2u);
    const andromeda_port& a = ports.at(11);
    EXPECT_EQ(a.role, static_cast<__u32>(ANDROMEDA_PORT_TENANT));
    EXPECT_EQ(a.slot, 1u);
    EXPECT_EQ(a.vni, 100u);
    EXPECT_EQ(ntohl(a.ip), 0x0a00000au);
    EXPECT_EQ(a.mac[5], 0x10);
    EXPECT_EQ(ports.at(12).slot, 2u);
    EXPECT_EQ(unresolved, (std::map<std::string, std::uint32_t>{{"tap-missing", 100}}));
}

TEST(TenantPorts, ReloadKeepsSlotsAndThePortMapWritesOnlyChanges) {
    PortSlots slots;
    const std::uint32_t underlay_slot = slots.slot_for("eth1");
    testing::FakeMapWriter writer;
    FabricMapSync sync(writer);
    auto desired = tenant_ports(*load(kFabric), slots);
    desired[2] = make_port(ANDROMEDA_PORT_UNDERLAY, underlay_slot);
    EXPECT_EQ(sync.sync_ports(desired)[MapId::ports].upserts, 3u);

    // tap-a goes, tap-c comes: tap-b keeps slot 2, tap-c takes tap-a's slot 1.
    std::string next = kFabric;
    next.replace(next.find("\"tap-a\""), 7, "\"tap-c\"");
    desired = tenant_ports(*load(next), slots);
    desired[2] = make_port(ANDROMEDA_PORT_UNDERLAY, underlay_slot);
    EXPECT_EQ(desired.at(12).slot, 2u);
    EXPECT_EQ(desired.at(13).slot, 1u);
    const auto counts = sync.sync_ports(desired);
    EXPECT_EQ(counts[MapId::ports].upserts, 1u);
    EXPECT_EQ(counts[MapId::ports].erases, 1u);
    EXPECT_EQ(counts[MapId::ports].unchanged, 2u);
    EXPECT_EQ(writer.table(MapId::ports).size(), 3u);
}

TEST(XskKey, MatchesTheXdpProgram) {
    EXPECT_EQ(xsk_key(0, 0), 0u);
    EXPECT_EQ(xsk_key(3, 1), 3u * ANDROMEDA_MAX_QUEUES + 1);
}

}  // namespace
}  // namespace andromeda::io
