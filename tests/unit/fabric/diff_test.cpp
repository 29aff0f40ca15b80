// Diffs of every kind between two snapshots, and the summary `andromedactl reload` prints.
#include <gtest/gtest.h>

#include "fabric_test_support.hpp"

namespace andromeda::fabric {
namespace {

using testing::kBaseFabric;
using testing::replace_once;

const std::string kSecondEndpoint = R"(
[[vpc.endpoint]]
ip = "10.0.0.20"
mac = "02:00:00:00:00:20"
node = "node2"
)";

const std::string kNat = R"(
[vpc.nat]
gateway_node = "node2"
address = "203.0.113.10"

[[vpc.nat.forward]]
protocol = "tcp"
nat_port = 8080
to = "10.0.0.10:80"
)";

std::shared_ptr<const FabricSnapshot> load(const std::string& text) {
    LoadResult result = load_fabric_string(text, "t.toml");
    EXPECT_TRUE(result.ok()) << to_string(result.errors);
    return result.snapshot;
}

FabricDiff diff(const std::string& before, const std::string& after) {
    const auto a = load(before);
    const auto b = load(after);
    return diff_fabrics(a.get(), *b);
}

const std::string kBase = kBaseFabric + kSecondEndpoint;

TEST(FabricDiff, IdenticalFabricsHaveNoDiff) {
    const FabricDiff d = diff(kBase, kBase);
    EXPECT_TRUE(d.empty());
    EXPECT_EQ(d.summary(), "no changes\n");
}

TEST(FabricDiff, FirstLoadAddsEverything) {
    const auto b = load(kBase);
    const FabricDiff d = diff_fabrics(nullptr, *b);
    EXPECT_EQ(d.nodes_added.size(), 2u);
    EXPECT_EQ(d.vpcs_added.size(), 1u);
    EXPECT_EQ(d.endpoints_added.size(), 2u);
    EXPECT_FALSE(d.local_settings_changed);
}

TEST(FabricDiff, EndpointAddedRemovedChanged) {
    const std::string third = replace_once(replace_once(kSecondEndpoint, "10.0.0.20", "10.0.0.30"), ":20\"", ":30\"");
    FabricDiff d = diff(kBase, kBaseFabric + third);
    ASSERT_EQ(d.endpoints_added.size(), 1u);
    ASSERT_EQ(d.endpoints_removed.size(), 1u);
    EXPECT_EQ(d.endpoints_added[0].ip.to_string(), "10.0.0.30");
    EXPECT_EQ(d.endpoints_removed[0].ip.to_string(), "10.0.0.20");
    EXPECT_TRUE(d.endpoints_changed.empty());

    d = diff(kBase, kBaseFabric + replace_once(kSecondEndpoint, "00:20", "00:21"));
    ASSERT_EQ(d.endpoints_changed.size(), 1u);
    EXPECT_EQ(d.endpoints_changed[0].before.mac.to_string(), "02:00:00:00:00:20");
    EXPECT_EQ(d.endpoints_changed[0].after.mac.to_string(), "02:00:00:00:00:21");

    // Migration to this node: node, locality and port change together.
    d = diff(kBase, kBaseFabric + replace_once(kSecondEndpoint, "node = \"node2\"", "node = \"node1\"\nport = \"tap2\""));
    ASSERT_EQ(d.endpoints_changed.size(), 1u);
    EXPECT_FALSE(d.endpoints_changed[0].before.is_local);
    EXPECT_TRUE(d.endpoints_changed[0].after.is_local);
    EXPECT_EQ(d.endpoints_changed[0].after.port, "tap2");
}

TEST(FabricDiff, NodeAddedRemovedChanged) {
    const std::string node3 = "\n[[nodes]]\nname = \"node3\"\naddress = \"192.168.1.3\"\n";
    FabricDiff d = diff(kBase, kBase + node3);
    ASSERT_EQ(d.nodes_added.size(), 1u);
    EXPECT_EQ(d.nodes_added[0].name, "node3");
    d = diff(kBase + node3, kBase);
    ASSERT_EQ(d.nodes_removed.size(), 1u);
    EXPECT_EQ(d.nodes_removed[0].name, "node3");
    d = diff(kBase, replace_once(kBase, "address = \"192.168.1.2\"", "address = \"192.168.1.2\"\nmac = \"02:00:00:00:a1:02\""));
    ASSERT_EQ(d.nodes_changed.size(), 1u);
    EXPECT_FALSE(d.nodes_changed[0].before.mac.has_value());
    EXPECT_TRUE(d.nodes_changed[0].after.mac.has_value());
    EXPECT_TRUE(d.endpoints_changed.empty()) << "endpoints refer to the node by name";
}

TEST(FabricDiff, VpcAddedRemovedChanged) {
    const std::string green = "\n[[vpc]]\nname = \"green\"\nvni = 200\ncidr = \"10.0.0.0/24\"\ngateway = \"10.0.0.1\"\n";
    FabricDiff d = diff(kBase, kBase + green);
    ASSERT_EQ(d.vpcs_added.size(), 1u);
    EXPECT_EQ(d.vpcs_added[0].vni, 200u);
    d = diff(kBase + green, kBase);
    ASSERT_EQ(d.vpcs_removed.size(), 1u);
    d = diff(kBase, replace_once(kBase, "gateway = \"10.0.0.1\"", "gateway = \"10.0.0.1\"\nmtu = 1400"));
    ASSERT_EQ(d.vpcs_changed.size(), 1u);
    EXPECT_EQ(d.vpcs_changed[0].before.mtu, 1450u);
    EXPECT_EQ(d.vpcs_changed[0].after.mtu, 1400u);
    // Security groups change a VPC too: gaining them takes it off the fast path (its VNI entry).
    d = diff(kBase, replace_once(kBase, "gateway = \"10.0.0.1\"", "gateway = \"10.0.0.1\"\ndefault_ingress = \"allow\""));
    ASSERT_EQ(d.vpcs_changed.size(), 1u);
    EXPECT_TRUE(d.vpcs_changed[0].after.firewall());
    const std::string group = "gateway = \"10.0.0.1\"\n[[vpc.security_group]]\nname = \"web\"\n";
    const std::string with_rule = "gateway = \"10.0.0.1\"\n[[vpc.security_group]]\nname = \"web\"\n"
                                  "[[vpc.security_group.rule]]\ndirection = \"ingress\"\n";
    d = diff(replace_once(kBase, "gateway = \"10.0.0.1\"\n", group), replace_once(kBase, "gateway = \"10.0.0.1\"\n", with_rule));
    EXPECT_EQ(d.vpcs_changed.size(), 1u);
}

TEST(FabricDiff, NewVniRemovesAndAddsTheVpcAndItsEndpoints) {
    const FabricDiff d = diff(kBase, replace_once(kBase, "vni = 100", "vni = 101"));
    EXPECT_EQ(d.vpcs_removed.size(), 1u);
    EXPECT_EQ(d.vpcs_added.size(), 1u);
    EXPECT_EQ(d.endpoints_removed.size(), 2u) << "NAT flows to these get expired";
    EXPECT_EQ(d.endpoints_added.size(), 2u);
}

TEST(FabricDiff, NatRules) {
    const auto with = [](const std::string& nat) {
        return replace_once(kBase, "gateway = \"10.0.0.1\"\n", "gateway = \"10.0.0.1\"\n" + nat);
    };
    FabricDiff d = diff(kBase, with(kNat));
    ASSERT_EQ(d.vpcs_changed.size(), 1u) << "NAT configuration is part of the VPC";
    ASSERT_EQ(d.nat_forwards_added.size(), 1u);
    EXPECT_EQ(d.nat_forwards_added[0].forward.nat_port, 8080);
    d = diff(with(kNat), kBase);
    EXPECT_EQ(d.nat_forwards_removed.size(), 1u);
    d = diff(with(kNat), with(replace_once(kNat, "10.0.0.10:80", "10.0.0.20:80")));
    ASSERT_EQ(d.nat_forwards_changed.size(), 1u);
    EXPECT_TRUE(d.vpcs_changed.empty());
    EXPECT_EQ(d.nat_forwards_changed[0].after.forward.endpoint_ip.to_string(), "10.0.0.20");
    d = diff(with(kNat), with(replace_once(kNat, "nat_port = 8080", "nat_port = 8081")));
    EXPECT_EQ(d.nat_forwards_added.size(), 1u);
    EXPECT_EQ(d.nat_forwards_removed.size(), 1u);
}

TEST(FabricDiff, LocalSettingsChange) {
    const FabricDiff d = diff(kBase, replace_once(kBase, "underlay = \"eth1\"", "underlay = \"eth2\""));
    EXPECT_TRUE(d.local_settings_changed);
    EXPECT_EQ(d.local_before.underlay, "eth1");
    EXPECT_EQ(d.local_after.underlay, "eth2");
    EXPECT_NE(d.summary().find("take effect when andromedad restarts"), std::string::npos);
}

TEST(FabricDiff, Summary) {
    const std::string third = replace_once(replace_once(kSecondEndpoint, "10.0.0.20", "10.0.0.30"), ":20\"", ":30\"");
    const FabricDiff d = diff(kBase, replace_once(kBaseFabric, "00:00:10", "00:00:11") + third);
    EXPECT_EQ(d.summary(),
              "nodes +0 -0 ~0, vpcs +0 -0 ~0, endpoints +1 -1 ~1, nat forwards +0 -0 ~0\n"
              "  + endpoint vni 100 10.0.0.30 02:00:00:00:00:30 on node2\n"
              "  - endpoint vni 100 10.0.0.20 02:00:00:00:00:20 on node2\n"
              "  ~ endpoint vni 100 10.0.0.10 02:00:00:00:00:10 on node1 port tap1\n"
              "    => endpoint vni 100 10.0.0.10 02:00:00:00:00:11 on node1 port tap1\n");
    EXPECT_EQ(d.summary(0),
              "nodes +0 -0 ~0, vpcs +0 -0 ~0, endpoints +1 -1 ~1, nat forwards +0 -0 ~0\n"
              "    ... and 1 more\n    ... and 1 more\n    ... and 1 more\n");
}

}  // namespace
}  // namespace andromeda::fabric
