// A fabric is held to the BPF maps' sizes before anything is written: each map's count is what
// the map planning writes into it, and a fabric beyond any of them is refused with an error that
// names the map, its size and the count.
#include "io/plan/map_capacity.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <set>

#include "fabric/fabric.hpp"
#include "io/plan/map_plan.hpp"
#include "io/plan/port_table.hpp"
#include "random_fabric.hpp"
#include "support/fabric_builder.hpp"

namespace andromeda::io {
namespace {

std::shared_ptr<const fabric::FabricSnapshot> load(const std::string& text) {
    auto result = fabric::load_fabric_string(text, "t.toml");
    EXPECT_TRUE(result.ok()) << fabric::to_string(result.errors);
    return result.snapshot;
}

// Two peers; three VPCs (one with two CIDRs, two translated here, one by node2); five
// endpoints, two of them on tenant ports of this node, which has an uplink.
std::string small_fabric() {
    std::string text = test_support::FabricBuilder("node1", "192.168.1.1")
                           .uplink("eth2")
                           .peer("node1", "192.168.1.1")  // this node listed too: not a peer
                           .peer("node2", "192.168.1.2")
                           .peer("node3", "192.168.1.3")
                           .vpc("blue", 100, "10.0.0.0/24", "10.0.0.1")
                           .nat("node1", "203.0.113.10")
                           .endpoint("10.0.0.10", "02:00:00:00:00:10", "node1", "tap1")
                           .endpoint("10.0.0.20", "02:00:00:00:00:20", "node2")
                           .vpc("green", 200, "10.0.0.0/24", "10.0.0.1")
                           .nat("node1", "203.0.113.20")
                           .endpoint("10.0.0.10", "02:00:00:00:01:10", "node1", "tap2")
                           .endpoint("10.0.0.30", "02:00:00:00:01:30", "node3")
                           .vpc("red", 300, "10.3.0.0/24", "10.3.0.1")
                           .nat("node2", "203.0.113.30")
                           .endpoint("10.3.0.20", "02:00:00:00:02:20", "node2")
                           .toml();
    const std::string blue_cidr = "cidr = \"10.0.0.0/24\"";  // blue's, the first
    text.replace(text.find(blue_cidr), blue_cidr.size(), "cidr = [\"10.0.0.0/24\", \"10.9.0.0/16\"]");
    return text;
}

TEST(MapCapacity, CountsWhatEachMapWillHold) {
    const auto snapshot = load(small_fabric());
    ASSERT_TRUE(snapshot);
    const MapEntryCounts n = planned_entries(*snapshot);
    EXPECT_EQ(n.peers, 2u);
    EXPECT_EQ(n.vnis, 3u);
    EXPECT_EQ(n.fabric, 5u);
    EXPECT_EQ(n.nat_addrs, 2u) << "red's NAT address is node2's to answer";
    EXPECT_EQ(n.vpc_cidrs, 4u);
    EXPECT_EQ(n.ports, 3u * 2 + kUnderlayPortEntries + kUplinkPortEntries);
    EXPECT_TRUE(capacity_errors(*snapshot).empty());
    EXPECT_TRUE(capacity_errors(*snapshot, n).empty()) << "a map exactly full is not over its size";
}

// With each map one entry smaller than the fabric needs, that map's error and no other.
TEST(MapCapacity, EachMapOneEntryShortIsRefusedNamingTheMapItsSizeAndTheCount) {
    const auto snapshot = load(small_fabric());
    ASSERT_TRUE(snapshot);
    const MapEntryCounts needed = planned_entries(*snapshot);
    struct Case {
        std::size_t MapEntryCounts::*field;
        const char* key;
        std::string problem;
    };
    const Case cases[] = {
        {&MapEntryCounts::peers, "nodes", "2 peer nodes, but andromeda_peers holds at most 1"},
        {&MapEntryCounts::vnis, "vpc", "3 VPCs, but andromeda_vnis holds at most 2"},
        {&MapEntryCounts::fabric, "vpc.endpoint", "5 endpoints, but andromeda_fabric holds at most 4"},
        {&MapEntryCounts::nat_addrs, "vpc.nat.address",
         "2 NAT addresses translated by this node (node1), but andromeda_nat_addrs holds at most 1"},
        {&MapEntryCounts::vpc_cidrs, "vpc.cidr", "4 CIDRs over all VPCs, but andromeda_vpc_cidrs holds at most 3"},
        {&MapEntryCounts::ports, "vpc.endpoint.port",
         "2 tenant ports on this node (node1), but andromeda_ports holds at most 10 entries: 3 for each tenant port "
         "(it "
         "and its punt pair) and 5 for the underlay and uplink"},
    };
    for (const Case& c : cases) {
        MapEntryCounts capacities = needed;
        capacities.*(c.field) -= 1;
        const auto errors = capacity_errors(*snapshot, capacities);
        ASSERT_EQ(errors.size(), 1u) << c.key << ": " << fabric::to_string(errors);
        EXPECT_EQ(errors[0].file, "t.toml");
        EXPECT_EQ(errors[0].key, c.key);
        EXPECT_EQ(errors[0].problem, c.problem);
        EXPECT_FALSE(errors[0].expected.empty());
    }
}

TEST(MapCapacity, FiveThousandVpcsAreRefusedAsAndromedaVnisHoldsFourThousandNinetySix) {
    test_support::FabricBuilder b("node1", "192.168.1.1");
    b.peer("node2", "192.168.1.2");
    for (std::uint32_t v = 1; v <= 5000; ++v) b.vpc("v" + std::to_string(v), v, "10.0.0.0/24", "10.0.0.1");
    const auto snapshot = load(b.toml());
    ASSERT_TRUE(snapshot);
    const auto errors = capacity_errors(*snapshot);
    ASSERT_EQ(errors.size(), 1u) << fabric::to_string(errors);
    EXPECT_EQ(errors[0].to_string(),
              "t.toml: vpc: 5000 VPCs, but andromeda_vnis holds at most 4096; every node holds every VPC: at most 4096 "
              "VPCs in a fabric (904 too many)");
}

TEST(MapCapacity, MorePeersThanAndromedaPeersHoldsAreRefused) {
    test_support::FabricBuilder b("node1", "192.168.1.1");
    for (std::uint32_t n = 0; n <= ANDROMEDA_MAX_PEERS; ++n)
        b.peer("n" + std::to_string(n), "10.1." + std::to_string(n / 250) + "." + std::to_string(n % 250 + 1));
    const auto snapshot = load(b.toml());
    ASSERT_TRUE(snapshot);
    const auto errors = capacity_errors(*snapshot);
    ASSERT_EQ(errors.size(), 1u) << fabric::to_string(errors);
    EXPECT_EQ(errors[0].key, "nodes");
    EXPECT_EQ(errors[0].problem, "4097 peer nodes, but andromeda_peers holds at most 4096");
}

TEST(MapCapacity, MoreTenantPortsThanAndromedaPortsHoldsAreRefused) {
    // 256 entries: 85 tenant ports and the underlay's one fit, not 86; with an uplink, 83.
    for (const bool uplink : {false, true}) {
        const std::size_t fit = uplink ? 83 : 85;
        for (const std::size_t ports : {fit, fit + 1}) {
            test_support::FabricBuilder b("node1", "192.168.1.1");
            if (uplink) b.uplink("eth2");
            b.peer("node2", "192.168.1.2").vpc("blue", 100, "10.0.0.0/16", "10.0.0.1");
            for (std::size_t p = 0; p < ports; ++p) {
                const std::string mac =
                    wire::MacAddress({0x02, 0, 0, 0, 0, static_cast<std::uint8_t>(p + 1)}).to_string();
                b.endpoint("10.0.1." + std::to_string(p + 1), mac, "node1", "tap" + std::to_string(p));
            }
            const auto snapshot = load(b.toml());
            ASSERT_TRUE(snapshot);
            const auto errors = capacity_errors(*snapshot);
            if (ports == fit) {
                EXPECT_TRUE(errors.empty()) << fabric::to_string(errors);
                continue;
            }
            ASSERT_EQ(errors.size(), 1u) << fabric::to_string(errors);
            EXPECT_EQ(errors[0].key, "vpc.endpoint.port");
            EXPECT_NE(errors[0].problem.find(std::to_string(ports) + " tenant ports on this node (node1)"),
                      std::string::npos)
                << errors[0].problem;
            EXPECT_NE(errors[0].expected.find("at most " + std::to_string(fit) + " tenant ports on one node"),
                      std::string::npos)
                << errors[0].expected;
        }
    }
}

// Fabrics too big to write out as TOML in a unit test are built as the loader would leave them.
fabric::FabricConfig big_config() {
    fabric::FabricConfig config;
    config.source_name = "big.toml";
    config.local.name = "node1";
    config.local.underlay = "eth1";
    config.nodes.push_back({"node1", wire::Ipv4Address(0xc0a80101), std::nullopt, true});
    config.nodes.push_back({"node2", wire::Ipv4Address(0xc0a80102), std::nullopt, false});
    return config;
}

fabric::Vpc vpc(std::uint32_t vni, std::vector<wire::Ipv4Prefix> cidrs) {
    fabric::Vpc v;
    v.name = "v" + std::to_string(vni);
    v.vni = vni;
    v.cidrs = std::move(cidrs);
    v.gateway = wire::Ipv4Address(v.cidrs.at(0).network().value() + 1);
    return v;
}

TEST(MapCapacity, MoreEndpointsThanAndromedaFabricHoldsAreRefused) {
    for (const std::size_t count :
         {std::size_t{ANDROMEDA_MAX_FABRIC_ENTRIES}, std::size_t{ANDROMEDA_MAX_FABRIC_ENTRIES} + 1}) {
        fabric::FabricConfig config = big_config();
        config.vpcs.push_back(vpc(100, {wire::Ipv4Prefix(wire::Ipv4Address(0x0a000000), 8)}));
        config.endpoints.reserve(count);
        for (std::uint32_t i = 0; i < count; ++i) {
            fabric::Endpoint e;
            e.vni = 100;
            e.ip = wire::Ipv4Address(0x0a000002 + i);
            e.mac = wire::MacAddress({0x02, 0, 0, static_cast<std::uint8_t>(i >> 16), static_cast<std::uint8_t>(i >> 8),
                                      static_cast<std::uint8_t>(i)});
            e.node = "node2";
            e.vpc_index = 0;
            e.node_index = 1;
            config.endpoints.push_back(std::move(e));
        }
        const fabric::FabricSnapshot snapshot(std::move(config));
        const auto errors = capacity_errors(snapshot);
        if (count == ANDROMEDA_MAX_FABRIC_ENTRIES) {
            EXPECT_TRUE(errors.empty()) << fabric::to_string(errors);
            continue;
        }
        ASSERT_EQ(errors.size(), 1u) << fabric::to_string(errors);
        EXPECT_EQ(errors[0].to_string(),
                  "big.toml: vpc.endpoint: 262145 endpoints, but andromeda_fabric holds at most 262144; every node "
                  "holds every endpoint: at most 262144 endpoints in a fabric (1 too many)");
    }
}

TEST(MapCapacity, MoreCidrsThanAndromedaVpcCidrsHoldsAreRefused) {
    fabric::FabricConfig config = big_config();
    // Four VPCs of 4097 /24s each: 16388 prefixes.
    for (std::uint32_t v = 0; v < 4; ++v) {
        std::vector<wire::Ipv4Prefix> cidrs;
        for (std::uint32_t c = 0; c < 4097; ++c) cidrs.emplace_back(wire::Ipv4Address(0x0a000000 + (c << 8)), 24);
        config.vpcs.push_back(vpc(100 + v, std::move(cidrs)));
    }
    const fabric::FabricSnapshot snapshot(std::move(config));
    const auto errors = capacity_errors(snapshot);
    ASSERT_EQ(errors.size(), 1u) << fabric::to_string(errors);
    EXPECT_EQ(errors[0].key, "vpc.cidr");
    EXPECT_EQ(errors[0].problem, "16388 CIDRs over all VPCs, but andromeda_vpc_cidrs holds at most 16384");
}

std::size_t distinct_keys(const auto& table) {
    std::set<std::string> keys;
    for (const auto& [key, value] : table.upserts)
        keys.insert(std::string(reinterpret_cast<const char*>(&key), sizeof key));
    return keys.size();
}

// The counts are the planner's: for random fabrics, each is the number of distinct keys
// plan_full() gives its map.
TEST(MapCapacity, CountsAreTheKeysTheFullPlanWrites) {
    testing::RandomFabric fabrics(3);
    const LocalContext local{wire::Ipv4Address(0xc0a80101), {}};
    for (int i = 0; i < 300; ++i) {
        const std::string text = fabrics.next();
        const auto snapshot = load(text);
        ASSERT_TRUE(snapshot) << text;
        const FabricMapPlan plan = plan_full(*snapshot, local);
        const MapEntryCounts n = planned_entries(*snapshot);
        EXPECT_EQ(n.peers, distinct_keys(plan.peers)) << text;
        EXPECT_EQ(n.vnis, distinct_keys(plan.vnis)) << text;
        EXPECT_EQ(n.fabric, distinct_keys(plan.fabric)) << text;
        EXPECT_EQ(n.nat_addrs, distinct_keys(plan.nat_addrs)) << text;
        EXPECT_EQ(n.vpc_cidrs, distinct_keys(plan.vpc_cidrs)) << text;
    }
}

// The port map as the daemon fills it: each tenant port, its punt pair's two ends, the underlay.
TEST(MapCapacity, PortCountIsThePortMapTheDaemonWrites) {
    const std::string text = test_support::two_node_blue("node1")
                                 .endpoint("10.0.0.10", "02:00:00:00:00:10", "node1", "tap-a")
                                 .endpoint("10.0.0.11", "02:00:00:00:00:11", "node1", "tap-b")
                                 .endpoint("10.0.0.20", "02:00:00:00:00:20", "node2")
                                 .toml();
    fabric::LoadOptions options;
    options.ports = fabric::resolve_port_names([](std::string_view port) -> std::optional<std::uint32_t> { return port == "tap-a" ? 11 : 12; });
    const auto snapshot = fabric::load_fabric_string(text, "t.toml", options).snapshot;
    ASSERT_TRUE(snapshot);
    PortSlots slots;
    PortTable table = tenant_ports(*snapshot, slots);
    table[2] = make_port(ANDROMEDA_PORT_UNDERLAY, slots.slot_for("eth1"));
    add_punt_ports(table, {{11, {"anp11", 21, "anx11", 31}}, {12, {"anp12", 22, "anx12", 32}}});
    EXPECT_EQ(table.size(), 7u);
    EXPECT_EQ(planned_entries(*snapshot).ports, table.size());
}

}  // namespace
}  // namespace andromeda::io
