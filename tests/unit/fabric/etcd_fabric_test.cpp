// The fabric in etcd: the key layout, node.toml's fabric imported as keys and built back into
// the same fabric, and bad keys left out one by one (named, with the reason) while the rest of
// the fabric is built.
#include "fabric/etcd_fabric.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>

#include "fabric/diff.hpp"
#include "support/fabric_builder.hpp"

namespace andromeda::fabric {
namespace {

const EtcdLayout kLayout("/andromeda");

const std::string kLocal = R"([node]
name = "node1"
underlay = "eth1"
address = "192.168.1.1"

[etcd]
endpoints = ["http://127.0.0.1:2379"]
)";

std::map<std::string, std::string> import_of(const std::string& toml) {
    const EtcdImport imported = etcd_values_of(toml, "fabric.toml", kLayout);
    EXPECT_TRUE(imported.errors.empty()) << to_string(imported.errors);
    return {imported.values.begin(), imported.values.end()};
}

std::string reasons(const EtcdFabric& f) {
    std::string out;
    for (const auto& r : f.rejected) out += r.key + ": " + r.reason + "\n";
    return out;
}

const std::string kFabric = test_support::two_node_blue("node1")
                                .nat("node2", "203.0.113.10", "forward = [{protocol = \"tcp\", nat_port = 8080, to = \"10.0.0.20:80\"}]\n")
                                .endpoint("10.0.0.10", "02:00:00:00:00:10", "node1", "tap1")
                                .endpoint("10.0.0.20", "02:00:00:00:00:20", "node2")
                                .vpc("green", 200, "10.0.0.0/24", "10.0.0.1")
                                .vpc_key("fastpath = false")
                                .endpoint("10.0.0.20", "02:00:00:c8:00:14", "node1", "tap2")
                                .toml();

TEST(EtcdLayout, NamesAndParsesItsKeys) {
    EXPECT_EQ(kLayout.root(), "/andromeda/v1/");
    EXPECT_EQ(kLayout.endpoint_key("blue", "10.0.0.10"), "/andromeda/v1/endpoints/blue/10.0.0.10");
    const auto e = kLayout.parse("/andromeda/v1/endpoints/blue/10.0.0.10");
    EXPECT_EQ(e.kind, EtcdLayout::Kind::endpoint);
    EXPECT_EQ(e.vpc, "blue");
    EXPECT_EQ(e.name, "10.0.0.10");
    EXPECT_EQ(kLayout.parse("/andromeda/v1/nodes/node2").kind, EtcdLayout::Kind::node);
    EXPECT_EQ(kLayout.parse("/andromeda/v1/vpcs/blue").name, "blue");
    for (const char* other : {"/andromeda/v2/nodes/a", "/andromeda/v1/nodes/", "/andromeda/v1/nodes/a/b", "/andromeda/v1/vpcs",
                              "/andromeda/v1/endpoints/blue", "/andromeda/v1/endpoints/blue/", "/andromeda/v1/endpoints//1",
                              "/andromeda/v1/endpoints/a/b/c", "/andromeda/v1/other/x", "/elsewhere"})
        EXPECT_EQ(kLayout.parse(other).kind, EtcdLayout::Kind::unknown) << other;
}

TEST(EtcdFabric, AnImportedNodeTomlBuildsBackIntoTheSameFabric) {
    const auto kvs = import_of(kFabric);
    EXPECT_EQ(kvs.size(), 2u + 2u + 3u) << "node1 (from [node]) and node2, two VPCs, three endpoints";
    EXPECT_TRUE(kvs.count("/andromeda/v1/endpoints/green/10.0.0.20"));
    const EtcdFabric built = build_etcd_fabric(kLocal, "node.toml", kvs, kLayout);
    ASSERT_TRUE(built.loaded.ok()) << to_string(built.loaded.errors);
    EXPECT_TRUE(built.rejected.empty()) << reasons(built);
    EXPECT_EQ(built.keys_used, kvs.size());
    const auto direct = load_fabric_string(kFabric, "fabric.toml");
    ASSERT_TRUE(direct.ok());
    const FabricSnapshot& a = *built.loaded.snapshot;
    const FabricSnapshot& b = *direct.snapshot;
    EXPECT_EQ(a.vpcs().size(), b.vpcs().size());
    for (std::size_t i = 0; i < b.vpcs().size(); ++i) {
        const Vpc* v = a.find_vpc(b.vpcs()[i].vni);
        ASSERT_NE(v, nullptr);
        EXPECT_EQ(v->name, b.vpcs()[i].name);
        EXPECT_EQ(v->fastpath, b.vpcs()[i].fastpath);
        EXPECT_EQ(v->nat.has_value(), b.vpcs()[i].nat.has_value());
        if (v->nat) {
            EXPECT_EQ(v->nat->forwards, b.vpcs()[i].nat->forwards);
        }
    }
    EXPECT_EQ(a.endpoints().size(), b.endpoints().size());
    for (const Endpoint& e : b.endpoints()) {
        const Endpoint* got = a.find_endpoint(e.vni, e.ip);
        ASSERT_NE(got, nullptr) << e.ip.to_string();
        EXPECT_EQ(got->mac, e.mac);
        EXPECT_EQ(got->node, e.node);
        EXPECT_EQ(got->port, e.port);
    }
    ASSERT_TRUE(a.local().etcd);
    EXPECT_EQ(a.local().etcd->endpoints, std::vector<std::string>{"http://127.0.0.1:2379"});
}

TEST(EtcdFabric, EachBadKeyIsLeftOutWithItsReasonAndTheRestIsBuilt) {
    auto kvs = import_of(kFabric);
    const std::string root = kLayout.root();
    kvs[root + "endpoints/blue/10.0.0.30"] = R"({"mac": "02:00:00:00:00:30", "node": "node2")";            // not JSON
    kvs[root + "endpoints/blue/10.0.0.31"] = R"({"mac": "02:00:00:00:00:31", "node": "node2", "ip": "10.0.0.32"})";
    kvs[root + "endpoints/blue/10.0.9.9"] = R"({"mac": "02:00:00:00:09:09", "node": "node2"})";           // outside the CIDR
    kvs[root + "endpoints/blue/10.0.0.33"] = R"({"mac": 5, "node": "node2"})";                            // wrong type
    kvs[root + "endpoints/red/10.0.0.34"] = R"({"mac": "02:00:00:00:00:34", "node": "node2"})";           // no such VPC
    kvs[root + "vpcs/orange"] = R"({"vni": 100, "cidr": "10.9.0.0/24", "gateway": "10.9.0.1"})";           // blue's VNI
    kvs[root + "endpoints/orange/10.9.0.10"] = R"({"mac": "02:00:00:00:09:10", "node": "node2"})";         // its VPC is out
    kvs[root + "nodes/node3"] = R"({"address": "192.168.1.3", "encap": "vxlan"})";                          // other encap
    kvs[root + "whatever/x"] = "{}";
    kvs[root + "endpoints/blue/10.0.0.40"] = R"({"mac": "02:00:00:00:00:40", "node": "node2"})";          // fine
    const EtcdFabric built = build_etcd_fabric(kLocal, "node.toml", kvs, kLayout);
    ASSERT_TRUE(built.loaded.ok()) << to_string(built.loaded.errors);
    std::map<std::string, std::string> why;
    for (const auto& r : built.rejected) why[r.key.substr(root.size())] = r.reason;
    EXPECT_EQ(why.size(), 9u) << reasons(built);
    if (std::getenv("SHOW")) std::cout << reasons(built);
    EXPECT_EQ(why["endpoints/blue/10.0.0.30"], "its value is not JSON");
    EXPECT_NE(why["endpoints/blue/10.0.0.31"].find("its \"ip\" (10.0.0.32) is not the one its key names (10.0.0.31)"), std::string::npos);
    EXPECT_EQ(why["endpoints/blue/10.0.9.9"].rfind("ip: 10.0.9.9 is outside VPC \"blue\" (10.0.0.0/24)", 0), 0u) << why["endpoints/blue/10.0.9.9"];
    EXPECT_EQ(why["endpoints/blue/10.0.0.33"].rfind("mac: ", 0), 0u) << why["endpoints/blue/10.0.0.33"];
    EXPECT_NE(why["endpoints/red/10.0.0.34"].find("its VPC red is not in the fabric"), std::string::npos);
    EXPECT_NE(why["vpcs/orange"].find("vni: VNI 100 is already used by VPC \"blue\" (key /andromeda/v1/vpcs/blue)"), std::string::npos) << why["vpcs/orange"];
    EXPECT_NE(why["endpoints/orange/10.9.0.10"].find("vpcs/orange is rejected"), std::string::npos)
        << why["endpoints/orange/10.9.0.10"];
    EXPECT_NE(why["nodes/node3"].find("encap (vxlan) is not this node's (andromeda)"), std::string::npos);
    EXPECT_NE(why["whatever/x"].find("not a key of the fabric's layout"), std::string::npos);
    const FabricSnapshot& f = *built.loaded.snapshot;
    EXPECT_NE(f.find_endpoint(100, wire::Ipv4Address(0x0a000028)), nullptr) << "10.0.0.40 is in";
    EXPECT_NE(f.find_endpoint(100, wire::Ipv4Address(0x0a00000a)), nullptr) << "the imported fabric is in";
    EXPECT_NE(f.find_endpoint(200, wire::Ipv4Address(0x0a000014)), nullptr);
    EXPECT_EQ(f.find_endpoint(100, wire::Ipv4Address(0x0a000921)), nullptr);
    EXPECT_EQ(built.keys_used, kvs.size() - 9);
}

TEST(EtcdFabric, SecurityGroupsTravelInTheVpcsValueAndBadOnesAreLeftOut) {
    const std::string groups = R"([[vpc.security_group]]
name = "web"
[[vpc.security_group.rule]]
direction = "ingress"
protocol = "tcp"
ports = [80]
remote_groups = ["web"]
)";
    const std::string toml = test_support::two_node_blue("node1")
                                 .vpc_key(groups)
                                 .endpoint("10.0.0.10", "02:00:00:00:00:10", "node1", "tap1", "groups = [\"web\"]\n")
                                 .endpoint("10.0.0.20", "02:00:00:00:00:20", "node2")
                                 .toml();
    auto kvs = import_of(toml);
    const std::string root = kLayout.root();
    EXPECT_NE(kvs[root + "vpcs/blue"].find("\"security_group\""), std::string::npos) << kvs[root + "vpcs/blue"];
    EXPECT_NE(kvs[root + "endpoints/blue/10.0.0.10"].find("\"groups\":[\"web\"]"), std::string::npos);
    const EtcdFabric built = build_etcd_fabric(kLocal, "node.toml", kvs, kLayout);
    ASSERT_TRUE(built.loaded.ok()) << to_string(built.loaded.errors);
    EXPECT_TRUE(built.rejected.empty()) << reasons(built);
    const auto direct = load_fabric_string(toml, "fabric.toml");
    ASSERT_TRUE(direct.ok()) << to_string(direct.errors);
    EXPECT_EQ(built.loaded.snapshot->vpcs()[0].security_groups, direct.snapshot->vpcs()[0].security_groups);
    EXPECT_EQ(built.loaded.snapshot->find_endpoint(100, wire::Ipv4Address(0x0a00000a))->groups,
              std::vector<std::string>{"web"});

    // An endpoint naming a group its VPC lacks is left out alone; a VPC with a bad rule is left
    // out with its endpoints, and says why.
    kvs[root + "endpoints/blue/10.0.0.30"] = R"({"mac": "02:00:00:00:00:30", "node": "node2", "groups": ["db"]})";
    kvs[root + "vpcs/green"] =
        R"({"vni": 200, "cidr": "10.1.0.0/24", "gateway": "10.1.0.1", "security_group": [{"name": "x", "rule": [{"direction": "sideways"}]}]})";
    kvs[root + "endpoints/green/10.1.0.10"] = R"({"mac": "02:00:00:00:01:10", "node": "node2"})";
    const EtcdFabric partly = build_etcd_fabric(kLocal, "node.toml", kvs, kLayout);
    ASSERT_TRUE(partly.loaded.ok()) << to_string(partly.loaded.errors);
    std::map<std::string, std::string> why;
    for (const auto& r : partly.rejected) why[r.key.substr(root.size())] = r.reason;
    EXPECT_EQ(why.size(), 3u) << reasons(partly);
    EXPECT_NE(why["endpoints/blue/10.0.0.30"].find("no security group \"db\" in VPC \"blue\""), std::string::npos)
        << why["endpoints/blue/10.0.0.30"];
    EXPECT_NE(why["vpcs/green"].find("\"sideways\" is not a direction"), std::string::npos) << why["vpcs/green"];
    EXPECT_NE(why["endpoints/green/10.1.0.10"].find("vpcs/green is rejected"), std::string::npos);
    EXPECT_NE(partly.loaded.snapshot->find_endpoint(100, wire::Ipv4Address(0x0a00000a)), nullptr);
}

TEST(EtcdFabric, TheBuilderParsesOnlyWhatChangedAndBuildsWhatAFreshBuildWould) {
    auto kvs = import_of(kFabric);
    EtcdFabricBuilder builder(kLayout);
    EXPECT_EQ(builder.update(kvs), kvs.size());
    EXPECT_EQ(builder.update(kvs), 0u) << "nothing changed";
    const std::string root = kLayout.root();
    kvs[root + "endpoints/blue/10.0.0.30"] = R"({"mac": "02:00:00:00:00:30", "node": "node2"})";
    kvs[root + "endpoints/blue/10.0.0.20"] = R"({"mac": "02:00:00:00:00:21", "node": "node2"})";  // changed
    kvs.erase(root + "endpoints/green/10.0.0.20");
    kvs[root + "vpcs/red"] = "{broken";
    EXPECT_EQ(builder.update(kvs), 3u) << "one added, one changed, one bad: parsed; the removed one dropped";
    for (int round = 0; round < 2; ++round) {  // a second build from the same cache gives the same
        const EtcdFabric cached = builder.build(kLocal, "node.toml");
        const EtcdFabric fresh = build_etcd_fabric(kLocal, "node.toml", kvs, kLayout);
        ASSERT_TRUE(cached.loaded.ok() && fresh.loaded.ok());
        EXPECT_EQ(cached.rejected, fresh.rejected);
        ASSERT_EQ(cached.rejected.size(), 1u);
        EXPECT_EQ(cached.rejected[0].key, root + "vpcs/red");
        const auto diff = diff_fabrics(cached.loaded.snapshot.get(), *fresh.loaded.snapshot);
        EXPECT_TRUE(diff.empty()) << diff.summary();
        EXPECT_EQ(cached.loaded.snapshot->find_endpoint(100, wire::Ipv4Address(0x0a000014))->mac.to_string(), "02:00:00:00:00:21");
        EXPECT_EQ(cached.loaded.snapshot->find_endpoint(200, wire::Ipv4Address(0x0a000014)), nullptr);
    }
}

TEST(EtcdFabric, ADaemonsOwnUnderlayMacIsNotTakenForTheNextHop) {
    auto kvs = import_of(kFabric);
    const std::string root = kLayout.root();
    kvs[root + "nodes/node2"] = R"({"address": "192.168.1.2", "encap": "andromeda", "underlay_mac": "02:00:00:00:a1:02"})";
    kvs[root + "nodes/node3"] = R"({"address": "192.168.1.3", "underlay_mac": "nope"})";
    const EtcdFabric built = build_etcd_fabric(kLocal, "node.toml", kvs, kLayout);
    ASSERT_TRUE(built.loaded.ok()) << to_string(built.loaded.errors);
    ASSERT_EQ(built.rejected.size(), 1u) << reasons(built);
    EXPECT_EQ(built.rejected[0].key, root + "nodes/node3");
    EXPECT_EQ(built.rejected[0].reason, "underlay_mac: not a MAC address");
    bool found = false;
    for (const Node& n : built.loaded.snapshot->nodes())
        if (n.name == "node2") {
            found = true;
            EXPECT_FALSE(n.mac) << "no pinned next hop: peers resolve it (a router's, on a routed underlay)";
        }
    EXPECT_TRUE(found);
}

// Nodes of an IPv6 underlay register IPv6 addresses; a node entry of the other family is left
// out with the reason, the rest of the fabric built.
TEST(EtcdFabric, NodesOfAnIpv6UnderlayAndAnEntryOfTheOtherFamilyLeftOut) {
    auto kvs = import_of(kFabric);
    const std::string root = kLayout.root();
    kvs[root + "nodes/node1"] = R"({"address": "fd00:1::1"})";
    kvs[root + "nodes/node2"] = R"({"address": "fd00:1::2", "encap": "andromeda"})";
    kvs[root + "nodes/node3"] = R"({"address": "192.168.1.3"})";
    std::string local = kLocal;
    local.replace(local.find("192.168.1.1"), 11, "fd00:1::1");
    const EtcdFabric built = build_etcd_fabric(local, "node.toml", kvs, kLayout);
    ASSERT_TRUE(built.loaded.ok()) << to_string(built.loaded.errors);
    ASSERT_EQ(built.rejected.size(), 1u) << reasons(built);
    EXPECT_EQ(built.rejected[0].key, root + "nodes/node3");
    EXPECT_NE(built.rejected[0].reason.find("an underlay is one family"), std::string::npos) << built.rejected[0].reason;
    const Node* node2 = built.loaded.snapshot->find_node("node2");
    ASSERT_NE(node2, nullptr);
    EXPECT_EQ(node2->address, wire::IpAddress(*wire::Ipv6Address::parse("fd00:1::2")));
    EXPECT_EQ(built.loaded.snapshot->find_node_by_address(*wire::Ipv6Address::parse("fd00:1::2")), node2);
    EXPECT_EQ(built.loaded.snapshot->vpcs()[0].mtu, 1430u);
}

TEST(EtcdFabric, NodeTomlsOwnErrorsStopEverything) {
    const auto kvs = import_of(kFabric);
    const std::string with_vpc = kLocal + "\n[[vpc]]\nname = \"x\"\nvni = 1\ncidr = \"10.1.0.0/24\"\ngateway = \"10.1.0.1\"\n";
    const EtcdFabric built = build_etcd_fabric(with_vpc, "node.toml", kvs, kLayout);
    ASSERT_FALSE(built.loaded.ok());
    EXPECT_NE(to_string(built.loaded.errors).find("with [etcd] the fabric lives in etcd"), std::string::npos)
        << to_string(built.loaded.errors);
    const std::string bad_endpoint = R"([node]
name = "node1"
underlay = "eth1"
[etcd]
endpoints = ["127.0.0.1:2379"]
lease_ttl = 1
)";
    const auto errors = to_string(build_etcd_fabric(bad_endpoint, "node.toml", kvs, kLayout).loaded.errors);
    EXPECT_NE(errors.find("node.toml:5: etcd.endpoints: \"127.0.0.1:2379\" is not an etcd URL"), std::string::npos) << errors;
    EXPECT_NE(errors.find("etcd.lease_ttl"), std::string::npos) << errors;
}

TEST(EtcdFabric, AnImportOfABadFileSaysWhyAndConvertsNothing) {
    const EtcdImport imported = etcd_values_of(test_support::two_node_blue().endpoint("10.0.1.5", "02:00:00:00:00:10", "node2").toml(),
                                               "bad.toml", kLayout);
    EXPECT_TRUE(imported.values.empty());
    ASSERT_FALSE(imported.errors.empty());
    EXPECT_EQ(imported.errors[0].file, "bad.toml");
}

// Everything a snapshot says of its nodes, VPCs and endpoints, endpoints in (VNI, IP) order:
// two snapshots with equal texts are the same fabric, whatever order their vectors keep.
std::string fabric_text(const FabricSnapshot& s) {
    std::string out = s.local().name + " first: " + s.nodes()[0].name + "\n";
    std::vector<std::string> nodes;
    for (const Node& n : s.nodes())
        nodes.push_back("node " + n.name + " " + (n.address ? n.address->to_string() : "-") + " " +
                        (n.mac ? n.mac->to_string() : "-") + (n.is_local ? " local" : "") + "\n");
    std::sort(nodes.begin(), nodes.end());
    for (const auto& n : nodes) out += n;
    for (const Vpc& v : s.vpcs())
        out += "vpc " + v.name + " " + std::to_string(v.vni) + (v.nat ? " nat " + std::to_string(v.nat->forwards.size()) : "") + "\n";
    std::vector<std::string> endpoints;
    for (const Endpoint& e : s.endpoints()) {
        char line[160];
        // The indexes by what they point at: a fabric derived in place may keep its nodes in
        // another order than a build.
        std::snprintf(line, sizeof line, "%08u %08x %s %s %s %s vpc %s node %s", e.vni, e.ip.value(), e.mac.to_string().c_str(),
                      e.node.c_str(), e.port.c_str(), e.is_local ? "local" : "remote", s.vpcs()[e.vpc_index].name.c_str(),
                      s.nodes()[e.node_index].name.c_str());
        endpoints.push_back(line);
    }
    std::sort(endpoints.begin(), endpoints.end());
    for (const auto& e : endpoints) out += e + "\n";
    return out;
}

// A diff's endpoint changes, each kind sorted: derive() states them from the change, diff_fabrics()
// from the two snapshots; they must agree.
std::string endpoint_changes(const FabricDiff& d) {
    const auto line = [](const Endpoint& e) { return std::to_string(e.vni) + "/" + e.ip.to_string() + " " + e.mac.to_string() + " " + e.node; };
    std::vector<std::string> lines;
    for (const auto& e : d.endpoints_added) lines.push_back("+ " + line(e));
    for (const auto& e : d.endpoints_removed) lines.push_back("- " + line(e));
    for (const auto& c : d.endpoints_changed) lines.push_back("~ " + line(c.before) + " -> " + line(c.after));
    std::sort(lines.begin(), lines.end());
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
}

// A daemon's way with a watch: endpoint and node changes applied to the running fabric when
// derive() takes them, a build otherwise. After every one of many random changes (endpoints added,
// moved, re-addressed, deleted; nodes joining and moving, some onto a taken address; duplicate
// MACs, bad values, local endpoints, forward targets, VPC changes), the running fabric is exactly
// a fresh build of etcd's keys, and a derivation's diff is what diff_fabrics() says of it.
TEST(EtcdFabric, ChangesAppliedInPlaceGiveExactlyWhatAFreshBuildGives) {
    const std::string root = kLayout.root();
    auto kvs = import_of(test_support::two_node_blue("node1")
                             .nat("node2", "203.0.113.10", "forward = [{protocol = \"tcp\", nat_port = 8080, to = \"10.0.0.20:80\"}]\n")
                             .endpoint("10.0.0.10", "02:00:00:00:00:10", "node1", "tap1")
                             .endpoint("10.0.0.20", "02:00:00:00:00:20", "node2")
                             .vpc("green", 200, "10.0.0.0/24", "10.0.0.1")
                             .endpoint("10.0.0.20", "02:00:00:c8:00:14", "node2")
                             .toml());
    EtcdFabricBuilder builder(kLayout);
    builder.update(kvs);
    EtcdFabric first = builder.build(kLocal, "node.toml", LoadOptions{1, {}});
    ASSERT_TRUE(first.loaded.ok() && first.rejected.empty()) << reasons(first);
    std::shared_ptr<const FabricSnapshot> running = first.loaded.snapshot;

    std::mt19937 rng(20261202);
    const auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    const auto endpoint_keys = [&] {
        std::vector<std::string> keys;
        for (const auto& [k, v] : kvs)
            if (k.starts_with(root + "endpoints/")) keys.push_back(k);
        return keys;
    };
    std::size_t derived = 0, built = 0, nodes_in_place = 0;
    std::vector<RejectedKey> left_out;
    for (std::uint64_t generation = 2; generation < 402; ++generation) {
        EtcdChanges changes;
        // What the last build left out is taken away again (as an operator would), so the
        // fabric comes clean and endpoint changes can be applied in place again.
        // A VPC left out has lost its port forward's target: that endpoint comes back.
        for (const auto& r : left_out) {
            if (!r.key.starts_with(root + "vpcs/")) changes[r.key] = std::nullopt;
            else changes[root + "endpoints/blue/10.0.0.20"] = R"({"mac": "02:00:00:00:00:20", "node": "node2"})";
        }
        const int count = 1 + pick(4);
        for (int c = 0; c < count; ++c) {
            const std::string vpc = pick(2) == 0 ? "blue" : "green";
            const std::string ip = "10.0.0." + std::to_string(2 + pick(40));
            char mac_text[18];  // 512 MACs: now and then one is taken already in its VPC
            std::snprintf(mac_text, sizeof mac_text, "02:00:00:00:%02x:%02x", 1 + pick(2), pick(256));
            const std::string mac = mac_text;
            const std::string key = root + "endpoints/" + vpc + "/" + ip;
            switch (pick(40)) {
                case 0: changes[key] = R"({"mac": "zz", "node": "node2"})"; break;                 // a bad value
                case 1: changes[root + "endpoints/blue/10.0.1.5"] = R"({"mac": "02:00:00:00:02:01", "node": "node2"})"; break;
                case 2: changes[key] = R"({"mac": ")" + mac + R"(", "node": "node1", "port": "tap-)" + ip + R"("})"; break;
                case 3: changes[root + "endpoints/blue/10.0.0.20"] = std::nullopt; break;         // a forward's target
                case 4: changes[root + "vpcs/green"] = R"({"vni": 200, "cidr": "10.0.0.0/24", "gateway": "10.0.0.1", "mtu": )" +
                                                       std::to_string(1300 + pick(100)) + "}";
                    break;
                case 5: case 6: case 7: case 8: case 9: case 10: {
                    const auto keys = endpoint_keys();
                    if (!keys.empty()) changes[keys[rng() % keys.size()]] = std::nullopt;
                    break;
                }
                case 11: case 12: {  // a node joins, or moves (its address may be taken: rejected)
                    const std::string node = "node" + std::to_string(3 + pick(3));
                    changes[root + "nodes/" + node] = R"({"address": "192.168.1.)" + std::to_string(2 + pick(12)) + R"("})";
                    break;
                }
                case 13: changes[root + "nodes/node2"] = R"({"address": "192.168.1.2", "mac": "02:00:00:00:a1:0)" +
                                                         std::to_string(pick(10)) + R"("})";
                    break;
                case 14: case 15: case 16:  // an endpoint of a node that may or may not be there
                    changes[key] = R"({"mac": ")" + mac + R"(", "node": "node)" + std::to_string(3 + pick(3)) + R"("})";
                    break;
                default: changes[key] = R"({"mac": ")" + mac + R"(", "node": "node2"})"; break;
            }
        }
        for (const auto& [k, v] : changes) {
            if (v) kvs[k] = *v;
            else kvs.erase(k);
        }
        builder.update(changes);
        const LoadOptions options{generation, {}};
        const EtcdFabric fresh = build_etcd_fabric(kLocal, "node.toml", kvs, kLayout, options);
        ASSERT_TRUE(fresh.loaded.ok()) << to_string(fresh.loaded.errors);
        left_out = fresh.rejected;
        if (auto d = builder.derive(*running, changes, kLocal, "node.toml", options)) {
            ++derived;
            EXPECT_TRUE(fresh.rejected.empty()) << "derived although a build leaves keys out:\n" << reasons(fresh);
            EXPECT_EQ(d->snapshot->generation(), generation);
            EXPECT_EQ(endpoint_changes(d->diff), endpoint_changes(diff_fabrics(running.get(), *d->snapshot)));
            const FabricDiff full = diff_fabrics(running.get(), *d->snapshot);
            EXPECT_EQ(d->diff.nodes_added.size(), full.nodes_added.size());
            EXPECT_EQ(d->diff.nodes_changed.size(), full.nodes_changed.size());
            EXPECT_TRUE(full.nodes_removed.empty() && full.vpcs_changed.empty() && !d->diff.local_settings_changed);
            nodes_in_place += d->diff.nodes_added.size() + d->diff.nodes_changed.size();
            running = d->snapshot;
        } else {
            ++built;
            const EtcdFabric b = builder.build(kLocal, "node.toml", options);
            ASSERT_TRUE(b.loaded.ok());
            EXPECT_EQ(b.rejected, fresh.rejected);
            running = b.loaded.snapshot;
        }
        ASSERT_EQ(fabric_text(*running), fabric_text(*fresh.loaded.snapshot)) << "after generation " << generation;
    }
    EXPECT_GT(derived, 100u) << "most rounds are plain endpoint changes";
    EXPECT_GT(built, 30u) << "and the rest is built";
    EXPECT_GT(nodes_in_place, 10u) << "nodes joined and moved in place too";
}

// Every reason plan_change() hands a change to build() is named, and counted by name.
TEST(EtcdFabric, EachReasonAChangeIsNotAppliedInPlaceIsNamedAndCounted) {
    const std::string root = kLayout.root();
    const auto base = import_of(
        test_support::two_node_blue("node1")
            .nat("node2", "203.0.113.10", "forward = [{protocol = \"tcp\", nat_port = 8080, to = \"10.0.0.20:80\"}]\n")
            .endpoint("10.0.0.10", "02:00:00:00:00:10", "node1", "tap1")
            .endpoint("10.0.0.20", "02:00:00:00:00:20", "node2")
            .vpc("green", 200, "10.0.0.0/24", "10.0.0.1")
            .toml());
    const std::string node2_endpoint = R"({"mac": "02:00:00:00:00:55", "node": "node2"})";
    struct Case {
        InPlaceDecline expected;
        EtcdChanges changes;
        std::string local = kLocal;
        std::map<std::string, std::string> extra_keys = {};  // in the base build
    };
    const std::vector<Case> cases = {
        {InPlaceDecline::none, {{root + "endpoints/blue/10.0.0.5", node2_endpoint}}},
        {InPlaceDecline::keys_rejected,
         {{root + "endpoints/blue/10.0.0.5", node2_endpoint}},
         kLocal,
         {{root + "endpoints/blue/10.0.0.99", R"({"mac": "zz", "node": "node2"})"}}},
        {InPlaceDecline::node_deleted, {{root + "nodes/node2", std::nullopt}}},
        {InPlaceDecline::own_node_key, {{root + "nodes/node1", R"({"address": "192.168.1.1"})"}}},
        {InPlaceDecline::node_unparsed, {{root + "nodes/node3", "{not json"}}},
        {InPlaceDecline::node_encap, {{root + "nodes/node3", R"({"address": "192.168.1.3", "encap": "vxlan"})"}}},
        {InPlaceDecline::local_toml_unparsed, {{root + "nodes/node3", R"({"address": "192.168.1.3"})"}}, "[node\n"},
        {InPlaceDecline::nodes_invalid, {{root + "nodes/node3", R"({"address": "192.168.1.2"})"}}},
        {InPlaceDecline::not_endpoint_key,
         {{root + "vpcs/green", R"({"vni": 200, "cidr": "10.0.0.0/24", "gateway": "10.0.0.1", "mtu": 1300})"}}},
        {InPlaceDecline::endpoint_address, {{root + "endpoints/blue/10.0.0.05", node2_endpoint}}},
        {InPlaceDecline::vpc_not_running, {{root + "endpoints/red/10.0.0.5", node2_endpoint}}},
        {InPlaceDecline::local_endpoint, {{root + "endpoints/blue/10.0.0.10", node2_endpoint}}},
        {InPlaceDecline::local_endpoint,
         {{root + "endpoints/blue/10.0.0.5", R"({"mac": "02:00:00:00:00:55", "node": "node1", "port": "tap5"})"}}},
        {InPlaceDecline::forward_target_removed, {{root + "endpoints/blue/10.0.0.20", std::nullopt}}},
        {InPlaceDecline::endpoint_unparsed, {{root + "endpoints/blue/10.0.0.5", "{not json"}}},
        {InPlaceDecline::endpoint_invalid, {{root + "endpoints/blue/10.0.1.5", node2_endpoint}}},
        {InPlaceDecline::mac_taken,
         {{root + "endpoints/blue/10.0.0.5", R"({"mac": "02:00:00:00:00:20", "node": "node2"})"}}},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(std::string(to_string(c.expected)) + ": " + c.changes.begin()->first);
        auto kvs = base;
        kvs.insert(c.extra_keys.begin(), c.extra_keys.end());
        EtcdFabricBuilder builder(kLayout);
        builder.update(kvs);
        const EtcdFabric first = builder.build(kLocal, "node.toml", LoadOptions{1, {}});
        ASSERT_TRUE(first.loaded.ok());
        EXPECT_EQ(first.rejected.size(), c.extra_keys.size());
        builder.update(c.changes);
        const PlannedChange planned = builder.plan_change(*first.loaded.snapshot, c.changes, c.local, "node.toml");
        EXPECT_EQ(planned.declined, c.expected) << to_string(planned.declined) << ": " << describe(planned.declined);
        EXPECT_EQ(planned.plan.has_value(), c.expected == InPlaceDecline::none);
        std::map<std::string, std::uint64_t> counted;
        builder.for_each_decline([&](std::string_view name, std::uint64_t n) { counted.emplace(name, n); });
        EXPECT_EQ(counted.size(), kInPlaceDeclineCount);
        for (const auto& [name, n] : counted)
            EXPECT_EQ(n, name == "declined_" + std::string(to_string(c.expected)) ? 1u : 0u) << name;
    }
}

}  // namespace
}  // namespace andromeda::fabric
