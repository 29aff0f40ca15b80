// The sample fabric and the "fabric" request: the sample is one fixture
// (web/playground/sample_fabric.toml) that the engine serves as it stands and whose views load
// with the daemon's loader; what the page shows of a fabric (nodes, VPCs, gateway MACs, ports,
// presets, or the loader's own errors) is what the loader read.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "fabric/loader.hpp"
#include "unit/playground/requests.hpp"

namespace andromeda::playground {
namespace {

using nlohmann::json;
using namespace testing_requests;

const std::string kFixture = std::string(ANDROMEDA_SOURCE_DIR) + "/web/playground/sample_fabric.toml";

// From the first array of tables on ([[nodes]]...): what a view keeps of the fixture but its VNIs.
std::string tables_without_vnis(const std::string& text) {
    std::string out;
    for (std::size_t at = text.find("\n[[") + 1; at != 0 && at < text.size();) {
        const std::size_t end = std::min(text.find('\n', at), text.size());
        const std::string line = text.substr(at, end - at);
        out += (line.rfind("vni = ", 0) == 0 ? "vni = *" : line) + "\n";
        at = end + 1;
    }
    return out;
}

TEST(PlaygroundSample, TheDefaultViewIsTheFixtureByteForByteAndLoadsAsAndromedadWould) {
    const auto fixture = fabric::read_text_file(kFixture);
    ASSERT_TRUE(fixture) << kFixture;
    const json view = sample();
    EXPECT_EQ(view.at("fabric"), *fixture) << "the engine's embedded sample is not web/playground/sample_fabric.toml";
    EXPECT_EQ(view.at("node"), "node1");
    EXPECT_EQ(view.at("encap"), "andromeda");
    EXPECT_EQ(view.at("vni"), 100);
    EXPECT_EQ(view.at("nodes"), json({"node1", "node2"}));
    // Its own MAC is the one node2 pins for it.
    EXPECT_EQ(view.at("underlay_mac"), "02:00:00:00:a1:01");
    EXPECT_EQ(sample({{"node", "node2"}}).at("underlay_mac"), "02:00:00:00:a1:02");

    const fabric::LoadResult loaded = fabric::load_fabric_file(kFixture);
    ASSERT_TRUE(loaded.ok()) << fabric::to_string(loaded.errors);
    EXPECT_EQ(loaded.snapshot->local().name, "node1");
}

// Every view: [node] names the node (the uplink only on the NAT gateway node), the encapsulation
// is the one asked for, the first VPC has the VNI asked for and the others distinct ones; every
// other line is the fixture's.
TEST(PlaygroundSample, EveryViewLoadsAndDiffersFromTheFixtureOnlyInNodeAndVnis) {
    const std::string fixture = sample().at("fabric");
    ASSERT_NE(tables_without_vnis(fixture).find("[[vpc.endpoint]]"), std::string::npos);
    for (const std::string node : {"node1", "node2"}) {
        for (const std::string encap : {"andromeda", "vxlan"}) {
            for (const std::uint32_t vni : {1u, 100u, 200u, 201u, 400u, 4242u, 0xfffffeu}) {
                const json view = sample({{"node", node}, {"encap", encap}, {"vni", vni}});
                const std::string text = view.at("fabric");
                const fabric::LoadResult loaded = fabric::load_fabric_string(text, "view.toml");
                ASSERT_TRUE(loaded.ok()) << node << " " << encap << " " << vni << ":\n"
                                         << fabric::to_string(loaded.errors);
                const fabric::FabricSnapshot& f = *loaded.snapshot;
                EXPECT_EQ(f.local().name, node);
                EXPECT_EQ(f.local().encap,
                          encap == "vxlan" ? overlay::EncapKind::vxlan : overlay::EncapKind::andromeda);
                EXPECT_EQ(f.local_node().address->to_string(), node == "node1" ? "192.168.1.1" : "192.168.1.2");
                EXPECT_EQ(f.local().uplink.has_value(), node == "node1") << "node1 serves orange's NAT, node2 nothing";
                ASSERT_EQ(f.vpcs().size(), 3u);
                EXPECT_EQ(f.vpcs()[0].vni, vni);
                std::set<std::uint32_t> vnis;
                for (const auto& vpc : f.vpcs()) vnis.insert(vpc.vni);
                EXPECT_EQ(vnis.size(), 3u);
                if (vni != 200 && vni != 400) {
                    EXPECT_EQ(f.vpcs()[1].vni, 200u);
                }
                EXPECT_EQ(tables_without_vnis(text), tables_without_vnis(fixture));
                EXPECT_EQ(f.endpoints().size(), 7u);
            }
        }
    }
}

TEST(PlaygroundFabric, AnswersWhatTheLoaderReadWithTheDerivedGatewayMacs) {
    const std::string text = sample().at("fabric");
    const json d = describe(text);
    EXPECT_EQ(d.at("node"), "node1");
    EXPECT_EQ(d.at("encap"), "andromeda");
    ASSERT_EQ(d.at("nodes").size(), 2u);
    EXPECT_EQ(d.at("nodes")[0].at("name"), "node1");
    EXPECT_EQ(d.at("nodes")[0].at("local"), true);
    EXPECT_EQ(d.at("nodes")[0].at("nat_gateway"), true);
    EXPECT_EQ(d.at("nodes")[1].at("mac"), "02:00:00:00:a1:02");
    EXPECT_EQ(d.at("nodes")[1].at("nat_gateway"), false);
    // node.toml gives no gateway_mac: every VPC has the default, as the loader derives it.
    ASSERT_EQ(d.at("vpcs").size(), 3u);
    for (const auto& vpc : d.at("vpcs")) EXPECT_EQ(vpc.at("gateway_mac"), "02:00:00:00:00:ff") << vpc.dump();
    EXPECT_EQ(d.at("vpcs")[0].at("endpoints").size(), 3u);
    EXPECT_EQ(d.at("vpcs")[2].at("nat").at("address"), "203.0.113.10");
    EXPECT_TRUE(d.at("vpcs")[0].at("nat").is_null());
    // The ports are the ones a run reports, and each tenant port says what its tenant sends to.
    const json readme = d.at("examples").at("readme");
    const json r = run(readme);
    EXPECT_EQ(d.at("ports"), r.at("ports"));
    EXPECT_EQ(d.at("ports")[2].at("name"), "tap-blue-10");
    EXPECT_EQ(d.at("ports")[2].at("gateway_mac"), "02:00:00:00:00:ff");
    EXPECT_EQ(d.at("ports")[2].at("gateway"), "10.0.0.1");
    EXPECT_EQ(readme.at("packet").at("dst_mac"), "02:00:00:00:00:ff");

    // A gateway_mac of its own: the description, the presets and the pipeline's answer follow.
    std::string own = text;
    const std::string gateway = "gateway = \"10.0.0.1\"\n";
    own.insert(own.find(gateway) + gateway.size(), "gateway_mac = \"02:00:00:00:00:fe\"\n");
    const json d2 = describe(own);
    EXPECT_EQ(d2.at("vpcs")[0].at("gateway_mac"), "02:00:00:00:00:fe");
    EXPECT_EQ(d2.at("vpcs")[1].at("gateway_mac"), "02:00:00:00:00:ff");
    EXPECT_EQ(d2.at("ports")[2].at("gateway_mac"), "02:00:00:00:00:fe");
    const json arp = d2.at("examples").at("arp");
    EXPECT_EQ(arp.at("packet").at("dst_mac"), "ff:ff:ff:ff:ff:ff");
    const json reply = ok({{"op", "run"}, {"fabric", own}, {"port", arp.at("port")}, {"hex", build(arp.at("packet"))}});
    EXPECT_NE(reply.at("emissions")[0].at("frame").at("text").get<std::string>().find("is-at 02:00:00:00:00:fe"),
              std::string::npos)
        << reply.dump(2);
}

TEST(PlaygroundFabric, AFabricThatDoesNotLoadGetsTheLoadersOwnErrors) {
    std::string text = sample().at("fabric");
    text.replace(text.find("cidr = \"10.0.0.0/24\""), 20, "cidr = \"10.0.0.0/33\"");
    text += "\n[[vpc]]\nname = \"red\"\ncolour = \"red\"\n";
    const fabric::LoadResult loaded = fabric::load_fabric_string(text, "node.toml");
    ASSERT_FALSE(loaded.ok());
    ASSERT_GE(loaded.errors.size(), 2u);
    for (const json& request : {json{{"op", "fabric"}, {"fabric", text}},
                                json{{"op", "run"}, {"fabric", text}, {"port", "underlay"}, {"hex", "00"}}}) {
        const json r = handle(request);
        EXPECT_FALSE(r.at("ok"));
        EXPECT_EQ(r.at("error"), "the fabric does not load:\n" + fabric::to_string(loaded.errors));
        ASSERT_EQ(r.at("errors").size(), loaded.errors.size());
        for (std::size_t i = 0; i < loaded.errors.size(); ++i) {
            EXPECT_EQ(r.at("errors")[i], loaded.errors[i].to_string());
            EXPECT_EQ(r.at("errors")[i].get<std::string>().rfind("node.toml:", 0), 0u) << r.at("errors")[i];
        }
    }
}

// The presets come from the fabric the page holds, and say why when it has nothing for one.
TEST(PlaygroundFabric, ThePresetsFollowTheFabricAndSayWhyOneIsMissing) {
    const json examples = describe(sample().at("fabric")).at("examples");
    EXPECT_EQ(examples.at("readme").at("port"), "tap-blue-10");
    EXPECT_EQ(examples.at("readme").at("packet").at("dst_ip"), "10.0.0.20");  // blue's endpoint on node2
    EXPECT_EQ(examples.at("ping").at("packet").at("dst_ip"), "10.0.0.1");     // blue's gateway
    EXPECT_EQ(examples.at("arp").at("packet").at("dst_ip"), "10.0.0.20");
    EXPECT_EQ(examples.at("spoof").at("packet").at("src_ip"), "10.0.0.254");  // held by no endpoint
    EXPECT_EQ(examples.at("nat").at("packet").at("src_ip"), "192.168.50.10");

    // One VPC of a /30 on one node, no NAT: the README example goes to the gateway, no address
    // is left to spoof, nothing reaches the Internet.
    const std::string small =
        "[node]\nname = \"a\"\nunderlay = \"eth1\"\naddress = \"192.168.1.1\"\n"
        "[[vpc]]\nname = \"v\"\nvni = 7\ncidr = \"10.1.0.0/30\"\ngateway = \"10.1.0.1\"\n"
        "[[vpc.endpoint]]\nip = \"10.1.0.2\"\nmac = \"02:00:00:00:01:02\"\nnode = \"a\"\nport = \"tap-a\"\n";
    const json e = describe(small).at("examples");
    EXPECT_EQ(e.at("readme").at("port"), "tap-a");
    EXPECT_EQ(e.at("readme").at("packet").at("dst_ip"), "10.1.0.1");
    EXPECT_EQ(e.at("spoof").at("error"), "VPC v has no address left that no endpoint holds.");
    EXPECT_EQ(e.at("nat").at("error"), "The fabric has no VPC with [vpc.nat]: nothing here reaches the Internet.");
    // A node with no endpoint has no tenant port to send from.
    const std::string empty = "[node]\nname = \"a\"\nunderlay = \"eth1\"\naddress = \"192.168.1.1\"\n";
    const json none = describe(empty);
    EXPECT_EQ(none.at("ports").size(), 1u);
    EXPECT_EQ(none.at("examples").at("readme").at("error"),
              "a has no tenant port: no endpoint of the fabric is on it.");
}

}  // namespace
}  // namespace andromeda::playground
