// Port slots stay with their port across reloads; the port map follows the local endpoints.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "fabric/fabric.hpp"
#include "fake_map_writer.hpp"
#include "io/plan/map_plan.hpp"
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
    options.ports = fabric::resolve_port_names([](std::string_view port) -> std::optional<std::uint32_t> {
        if (port == "tap-a") return 11;
        if (port == "tap-b") return 12;
        if (port == "tap-c") return 13;
        return std::nullopt;
    });
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

// What a killed predecessor left: the underlay (ifindex 2), tap-a (11) and tap-b (12) with
// their punt devices (visible 21/22, steering 31/32), as add_punt_ports writes them.
PortTable predecessor_ports(const fabric::FabricSnapshot& snapshot) {
    PortSlots slots;
    PortTable table = tenant_ports(snapshot, slots);
    add_punt_ports(table, {{11, {"anp11", 21, "anx11", 31}}, {12, {"anp12", 22, "anx12", 32}}});
    table[2] = make_port(ANDROMEDA_PORT_UNDERLAY, slots.slot_for("eth1"));
    return table;
}

bool same_entries(const PortTable& a, const PortTable& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](const auto& x, const auto& y) {
               return x.first == y.first && std::memcmp(&x.second, &y.second, sizeof x.second) == 0;
           });
}

TEST(ReconcileAdoptedPorts, ARemovedPortLosesEveryEntryTheOthersTakeTheConfiguration) {
    const PortTable adopted = predecessor_ports(*load(kFabric));
    ASSERT_EQ(adopted.size(), 7u);
    // While no daemon ran, tap-a's endpoint was removed and tap-b's moved to another address.
    std::string next = kFabric;
    next.erase(next.find("[[vpc.endpoint]]\nip = \"10.0.0.10\""),
               next.find("[[vpc.endpoint]]\nip = \"10.0.0.11\"") - next.find("[[vpc.endpoint]]\nip = \"10.0.0.10\""));
    next.replace(next.find("\"10.0.0.11\""), 11, "\"10.0.0.77\"");
    PortSlots scratch;
    const PortTable wanted = tenant_ports(*load(next), scratch);
    ASSERT_EQ(wanted.size(), 1u) << next;

    const PortTable out = reconcile_adopted_ports(adopted, wanted);
    for (const std::uint32_t gone : {11u, 21u, 31u}) EXPECT_EQ(out.count(gone), 0u) << "tap-a's entry " << gone;
    ASSERT_EQ(out.size(), 4u);
    EXPECT_EQ(out.at(2).role, static_cast<__u32>(ANDROMEDA_PORT_UNDERLAY));
    for (const std::uint32_t tap_b : {12u, 32u}) {
        const andromeda_port& p = out.at(tap_b);
        EXPECT_EQ(ntohl(p.ip), 0x0a00004du) << tap_b << " takes the new address";
        EXPECT_EQ(p.slot, adopted.at(tap_b).slot) << "the slot stays until the workers start";
        EXPECT_EQ(p.link, adopted.at(tap_b).link);
    }
    EXPECT_EQ(out.at(22).role, static_cast<__u32>(ANDROMEDA_PORT_PUNT));
    EXPECT_EQ(out.at(22).link, 12u);

    EXPECT_TRUE(same_entries(reconcile_adopted_ports(adopted, tenant_ports(*load(kFabric), scratch)), adopted))
        << "an unchanged configuration changes nothing";
    const PortTable none = reconcile_adopted_ports(adopted, {});
    ASSERT_EQ(none.size(), 1u) << "no tenant left: the underlay alone";
    EXPECT_EQ(none.count(2), 1u);
}

TEST(XskKey, MatchesTheXdpProgram) {
    EXPECT_EQ(xsk_key(0, 0), 0u);
    EXPECT_EQ(xsk_key(3, 1), 3u * ANDROMEDA_MAX_QUEUES + 1);
}

// A tap tenant port (a VM's): its port entry says so, its punt device sends the pipeline's frames
// out of the tap (EGRESS) rather than into a veth's peer, and its fabric entry tells the tc
// programs to deliver with bpf_redirect; a veth beside it keeps the defaults.
TEST(TenantPorts, ATapPortIsMarkedWhereTheKernelDeliversIntoIt) {
    fabric::LoadOptions options;
    options.ports = [](const fabric::Endpoint& e) -> std::optional<fabric::PortBinding> {
        if (e.port == "tap-a") return fabric::PortBinding{11, true};
        if (e.port == "tap-b") return fabric::PortBinding{12, false};
        return std::nullopt;
    };
    const auto result = fabric::load_fabric_string(kFabric, "t.toml", options);
    ASSERT_TRUE(result.ok()) << fabric::to_string(result.errors);
    const fabric::FabricSnapshot& snapshot = *result.snapshot;
    EXPECT_TRUE(snapshot.find_local_endpoint("tap-a")->port_is_tap);
    EXPECT_FALSE(snapshot.find_local_endpoint("tap-b")->port_is_tap);

    PortSlots slots;
    PortTable table = tenant_ports(snapshot, slots);
    EXPECT_NE(table.at(11).flags & ANDROMEDA_PORT_F_TAP, 0);
    EXPECT_EQ(table.at(12).flags & ANDROMEDA_PORT_F_TAP, 0);
    add_punt_ports(table, {{11, {"anp11", 21, "anx11", 31}}, {12, {"anp12", 22, "anx12", 32}}});
    EXPECT_EQ(table.at(21).role, ANDROMEDA_PORT_PUNT);
    EXPECT_NE(table.at(21).flags & ANDROMEDA_PORT_F_EGRESS, 0) << "the tap's punt device sends out of the tap";
    EXPECT_EQ(table.at(22).flags & ANDROMEDA_PORT_F_EGRESS, 0) << "the veth's punt device sends into its peer";

    const FabricMapPlan plan = plan_full(snapshot, LocalContext{wire::Ipv4Address(0xc0a80101), {}});
    int seen = 0;
    for (const auto& [key, entry] : plan.fabric.upserts) {
        if (entry.ifindex == 11) {
            EXPECT_EQ(entry.flags, ANDROMEDA_FABRIC_F_TAP);
            ++seen;
        } else {
            EXPECT_EQ(entry.flags, 0) << "ifindex " << entry.ifindex;
            if (entry.ifindex == 12) ++seen;
        }
    }
    EXPECT_EQ(seen, 2);
}

}  // namespace
}  // namespace andromeda::io
