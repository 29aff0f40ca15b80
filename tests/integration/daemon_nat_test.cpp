// andromedad as a NAT gateway, end to end: a tenant on node1 reaches a server in an "outside"
// namespace behind the gateway node's uplink; the server sees only the NAT address.
//
//   t10 ns: eth0 10.0.0.10 ── host1 ns [node1]: tap-blue-10, eth1 192.168.1.1 ─┐ bridge
//                              host2 ns [gw]:    eth1 192.168.1.2 ───────────────┘
//                                                eth2 203.0.113.2 (+ NAT address .10) ── outside ns: eth0 203.0.113.1
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "daemon_fixture.hpp"

namespace andromeda::testing {
namespace {

std::string fabric_text(const std::string& node1, const std::string& gw) {
    return "[[nodes]]\nname = \"" + node1 + "\"\naddress = \"192.168.1.1\"\n"
           "[[nodes]]\nname = \"" + gw + "\"\naddress = \"192.168.1.2\"\n"
           "[[vpc]]\nname = \"blue\"\nvni = 100\ncidr = \"10.0.0.0/24\"\ngateway = \"10.0.0.1\"\n"
           "[vpc.nat]\ngateway_node = \"" + gw + "\"\naddress = \"203.0.113.10\"\nport_range = [20000, 29999]\n"
           "[[vpc.endpoint]]\nip = \"10.0.0.10\"\nmac = \"02:00:00:00:00:10\"\nnode = \"" + node1 +
           "\"\nport = \"tap-blue-10\"\n";
}

class NatGateway : public ::testing::Test {
protected:
    void SetUp() override {
        ANDROMEDA_REQUIRE_ROOT();
        io::testing::sweep_stale_test_pins();
        const std::string id = "t" + std::to_string(getpid());
        names_[0] = id + "-node1";
        names_[1] = id + "-gw";
        auto hosts = topo_.add_hosts_on_bridge(2, "eth1", "192.168.1");
        host1_ = hosts[0];
        gw_ = hosts[1];
        outside_ = &topo_.add_namespace("outside");
        topo_.add_veth(*gw_, "eth2", *outside_, "eth0");
        topo_.add_address(*gw_, "eth2", "203.0.113.2/24");
        topo_.add_address(*gw_, "eth2", "203.0.113.10/32");  // so the kernel answers ARP for it
        topo_.add_address(*outside_, "eth0", "203.0.113.1/24");
        tenant_ = &topo_.add_namespace("t10");
        VethOptions veth;
        veth.mac_b = "02:00:00:00:00:10";
        topo_.add_veth(*host1_, "tap-blue-10", *tenant_, "eth0", veth);
        topo_.add_address(*tenant_, "eth0", "10.0.0.10/24");
        tenant_->run({"ip", "route", "add", "default", "via", "10.0.0.1"});

        const std::string fabric = fabric_text(names_[0], names_[1]);
        configs_[0] = write("node1", "[node]\nname = \"" + names_[0] + "\"\nunderlay = \"eth1\"\n" + fabric);
        configs_[1] = write("gw", "[node]\nname = \"" + names_[1] + "\"\nunderlay = \"eth1\"\n"
                                  "[node.uplink]\ninterface = \"eth2\"\naddress = \"203.0.113.2\"\n"
                                  "next_hop = \"203.0.113.1\"\n" + fabric);
    }

    void TearDown() override {
        for (const auto& path : configs_)
            if (!path.empty()) std::filesystem::remove(path);
    }

    std::string write(const std::string& tag, const std::string& text) {
        const std::string path = "/tmp/" + topo_.prefix() + tag + ".toml";
        std::ofstream(path) << text;
        return path;
    }

    void start() {
        Netns* hosts[2] = {host1_, gw_};
        for (int i = 0; i < 2; ++i) {
            daemons_[i] = &topo_.spawn(*hosts[i], {kDaemon, "-c", configs_[i]});
            ASSERT_TRUE(daemons_[i]->wait_for_output(" ready: ", 20s)) << daemons_[i]->output();
        }
    }

    nlohmann::json ctl_json(int i, const std::string& command) const {
        const auto r = run_command({kCtl, "--node", names_[i], command, "--json"});
        EXPECT_TRUE(r.ok()) << r.output;
        return nlohmann::json::parse(r.output, nullptr, false);
    }

    std::string logs() const {
        std::string out;
        for (int i = 0; i < 2; ++i)
            if (daemons_[i] != nullptr) out += "---- " + names_[i] + " ----\n" + daemons_[i]->output();
        return out;
    }

    Topology topo_;
    std::string names_[2];
    std::string configs_[2];
    Process* daemons_[2] = {nullptr, nullptr};
    Netns* host1_ = nullptr;
    Netns* gw_ = nullptr;
    Netns* outside_ = nullptr;
    Netns* tenant_ = nullptr;
};

TEST_F(NatGateway, TenantReachesTheOutsideAsTheNatAddress) {
    start();
    ASSERT_TRUE(eventually([&] { return tenant_->try_run({"ping", "-c", "1", "-W", "1", "203.0.113.1"}, 5s).ok(); }, 10s))
        << logs();

    Process& server = topo_.spawn(*outside_, {"nc", "-l", "-n", "-v", "8080"});
    ASSERT_TRUE(eventually([&] { return contains(outside_->try_run({"ss", "-Hltn", "sport = :8080"}).output, "8080"); }, 5s));
    const auto client = tenant_->try_run({"sh", "-c", "echo hello-from-the-vpc | nc -N 203.0.113.1 8080"}, 10s);
    EXPECT_TRUE(client.ok()) << client.output << logs();
    ASSERT_NE(server.wait(10s), -1);
    EXPECT_TRUE(contains(server.output(), "hello-from-the-vpc")) << server.output();
    EXPECT_TRUE(contains(server.output(), "203.0.113.10")) << "the server must see the NAT address: " << server.output();
    EXPECT_FALSE(contains(server.output(), "10.0.0.10")) << server.output();

    const auto flows = ctl_json(1, "conntrack");
    EXPECT_GE(flows.value("count", 0), 2) << flows.dump(2);  // the echo and the TCP connection
    const auto stats = ctl_json(1, "stats");
    EXPECT_GT(stats.value(nlohmann::json::json_pointer("/nat/translated_outbound"), std::uint64_t{0}), 0u);
    EXPECT_GT(stats.value(nlohmann::json::json_pointer("/nat/translated_inbound"), std::uint64_t{0}), 0u);
    EXPECT_GT(stats.value(nlohmann::json::json_pointer("/xdp/redirect_uplink"), std::uint64_t{0}), 0u);
    EXPECT_GT(ctl_json(0, "stats").value(nlohmann::json::json_pointer("/dataplane/sent_to_nat_gateway"), std::uint64_t{0}),
              0u);
}

}  // namespace
}  // namespace andromeda::testing
