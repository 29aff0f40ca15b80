// The fabric in etcd, end to end (issue 16): a real etcd runs in the underlay namespace
// (192.168.1.250 on the bridge), node.toml of each andromedad holds only [node] and [etcd], and
// the fabric is imported with `andromedactl fabric import`.
//
//   tenant blue10 (10.0.0.10) ── node1 ──┐                    ┌── node2 ── blue20 (10.0.0.20)
//                                        └── underlay bridge ─┘           (blue21 added later)
//                                              etcd 192.168.1.250
#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "fabric_fixture.hpp"
#include "pinned_map.hpp"
#include "support/etcd_server.hpp"

namespace andromeda::testing {
namespace {

class EtcdFabric : public Fabric {
protected:
    void SetUp() override {
        Fabric::SetUp();
        if (IsSkipped()) return;
        ANDROMEDA_REQUIRE_ETCD();
        add_nodes(2);
        underlay_ = topo_.find("underlay");
        topo_.add_address(*underlay_, "br0", "192.168.1.250/24");
        {
            NetnsGuard in_underlay(*underlay_);  // etcd is spawned, and probed, in there
            etcd_ = std::make_unique<EtcdServer>(std::vector<std::string>{}, "192.168.1.250");
        }
        blue_ = add_vpc("blue", 100);
        add_endpoint(blue_, 0, "10.0.0.10", "02:00:00:00:00:10");
        add_endpoint(blue_, 1, "10.0.0.20", "02:00:00:00:00:20");
        // The whole fabric, as a node.toml would hold it, goes into etcd.
        const std::string fabric_file = "/tmp/" + topo_.prefix() + "fabric-import.toml";
        std::ofstream(fabric_file) << config_text(0);
        files_.push_back(fabric_file);
        const auto imported = ctl_in_underlay({"fabric", "import", "--etcd", etcd_->endpoint(), fabric_file});
        ASSERT_TRUE(imported.ok()) << imported.output;
        // Each node.toml: the node's own part and where etcd is.
        for (std::size_t i = 0; i < nodes_.size(); ++i) {
            files_.push_back("/run/andromeda/" + nodes_[i].name + ".etcd-fabric.json");  // the daemons' caches
            nodes_[i].config = write_config(i, "[node]\nname = \"" + nodes_[i].name + "\"\nunderlay = \"eth1\"\naddress = \"" +
                                                   nodes_[i].address + "\"\n" + node_extra_ + "\n[etcd]\nendpoints = [\"" +
                                                   etcd_->endpoint() + "\"]\nlease_ttl = 3\n");
        }
        start_all();
        for (std::size_t i = 0; i < nodes_.size(); ++i)
            ASSERT_TRUE(eventually([&] { return etcd_status(i).value("keys", 0) >= 5; }, 10s)) << logs();
    }

    void TearDown() override {
        Fabric::TearDown();
        etcd_.reset();
    }

    CommandResult ctl_in_underlay(const std::vector<std::string>& args) const {
        std::vector<std::string> argv = {kCtl};
        argv.insert(argv.end(), args.begin(), args.end());
        return underlay_->try_run(argv, 20s);
    }

    nlohmann::json etcd_status(std::size_t i) const {
        const auto status = ctl_json(i, "status");
        return status.contains("etcd") && status["etcd"].is_object() ? status["etcd"] : nlohmann::json::object();
    }

    // `ping -c count -i 0.01` from `from` to `to` in the background; the loss when it ends.
    struct Pinger {
        std::thread thread;
        std::string output;
    };
    std::unique_ptr<Pinger> start_pings(const Endpoint& from, const std::string& to, int count) {
        auto p = std::make_unique<Pinger>();
        p->thread = std::thread([&from, to, count, out = &p->output] {
            *out = from.ns->try_run({"ping", "-c", std::to_string(count), "-i", "0.01", "-W", "1", to}, 60s).output;
        });
        return p;
    }

    Netns* underlay_ = nullptr;
    std::unique_ptr<EtcdServer> etcd_;
    std::size_t blue_ = 0;
};

TEST_F(EtcdFabric, AnEndpointPutIntoEtcdIsReachableWithNoReloadAnywhere) {
    ASSERT_TRUE(eventually([&] { return ping_once(*endpoints_[0].ns, "10.0.0.20"); }, 10s)) << logs();
    const auto generation = ctl_json(0, "status").value("fabric_generation", std::uint64_t{0});

    const Endpoint& added = add_endpoint(blue_, 1, "10.0.0.21", "02:00:00:00:00:21");
    EXPECT_FALSE(ping_once(*endpoints_[0].ns, "10.0.0.21")) << "not in the fabric yet";
    const auto put = ctl_in_underlay({"fabric", "put", "--etcd", etcd_->endpoint(), "endpoint", "blue/10.0.0.21",
                                      R"({"mac": "02:00:00:00:00:21", "node": ")" + nodes_[1].name + R"(", "port": ")" +
                                          added.port + "\"}"});
    ASSERT_TRUE(put.ok()) << put.output;
    EXPECT_TRUE(eventually([&] { return ping_once(*endpoints_[0].ns, "10.0.0.21"); }, 10s)) << logs();
    EXPECT_TRUE(ping_once(*added.ns, "10.0.0.10"));
    EXPECT_GT(ctl_json(0, "status").value("fabric_generation", std::uint64_t{0}), generation);
    EXPECT_EQ(counter(0, "daemon", "reloads_failed"), 0u);
    EXPECT_GE(counter(0, "etcd", "events"), 1u);
    EXPECT_EQ(counter(0, "etcd", "lists"), 1u) << "one listing, then the watch";
    // A remote endpoint for node 0: applied to its running fabric in place; a local one for
    // node 1 (its tenant port is plumbed): built in full.
    const std::uint64_t in_place = counter(0, "etcd", "applied_incremental");
    EXPECT_GE(in_place, 1u);
    EXPECT_GE(counter(1, "etcd", "applied_full"), 2u) << "the listing, then the local endpoint";

    // And out again: a delete stops its forwarding.
    const auto gone = ctl_in_underlay({"fabric", "delete", "--etcd", etcd_->endpoint(), "endpoint", "blue/10.0.0.21"});
    ASSERT_TRUE(gone.ok()) << gone.output;
    EXPECT_TRUE(eventually([&] { return !ping_once(*endpoints_[0].ns, "10.0.0.21"); }, 10s));
    EXPECT_TRUE(ping_once(*endpoints_[0].ns, "10.0.0.20"));
    EXPECT_GT(counter(0, "etcd", "applied_incremental"), in_place) << "the delete too, in place";
}

TEST_F(EtcdFabric, ABadValueIsRejectedByNameAndTheRestOfTheFabricKeepsWorking) {
    ASSERT_TRUE(eventually([&] { return ping_once(*endpoints_[0].ns, "10.0.0.20"); }, 10s)) << logs();
    // Written behind andromedactl's back (it would refuse it): etcdctl, as any other writer could.
    const std::string key = "/andromeda/v1/endpoints/blue/10.0.0.77";
    const auto put = underlay_->try_run({"etcdctl", "--endpoints", etcd_->endpoint(), "put", key,
                                         R"({"mac": "not-a-mac", "node": ")" + nodes_[1].name + "\"}"});
    ASSERT_TRUE(put.ok()) << put.output;
    ASSERT_TRUE(eventually([&] { return !etcd_status(0).value("rejected", nlohmann::json::array()).empty(); }, 10s)) << logs();
    const auto rejected = etcd_status(0)["rejected"];
    ASSERT_EQ(rejected.size(), 1u) << rejected.dump();
    EXPECT_EQ(rejected[0].value("key", ""), key);
    EXPECT_TRUE(contains(rejected[0].value("reason", ""), "mac: \"not-a-mac\"")) << rejected.dump();
    const auto text = ctl(0, {"status"});
    EXPECT_TRUE(contains(text.output, "rejected " + key + ": mac:")) << text.output;
    EXPECT_TRUE(contains(logs(), "key rejected")) << logs();
    // Everything else still forwards, and a good change after the bad one still applies.
    const auto pings = endpoints_[0].ns->try_run({"ping", "-c", "20", "-i", "0.02", "-W", "1", "10.0.0.20"});
    EXPECT_TRUE(contains(pings.output, " 0% packet loss")) << pings.output;
    const auto fixed = underlay_->try_run({"etcdctl", "--endpoints", etcd_->endpoint(), "del", key});
    ASSERT_TRUE(fixed.ok()) << fixed.output;
    EXPECT_TRUE(eventually([&] { return etcd_status(0).value("rejected", nlohmann::json::array()).empty(); }, 10s));
}

TEST_F(EtcdFabric, EtcdKilledAndRestartedWhileAPingRunsLosesNoPing) {
    ASSERT_TRUE(eventually([&] { return ping_once(*endpoints_[0].ns, "10.0.0.20"); }, 10s)) << logs();
    auto pinger = start_pings(endpoints_[0], "10.0.0.20", 500);  // 5 s
    std::this_thread::sleep_for(1s);
    etcd_->kill_now();
    ASSERT_TRUE(eventually([&] { return !etcd_status(0).value("connected", true); }, 5s)) << logs();
    EXPECT_TRUE(contains(ctl(0, {"status"}).output, "DISCONNECTED"));
    std::this_thread::sleep_for(1s);
    {
        NetnsGuard in_underlay(*underlay_);
        etcd_->start();
    }
    pinger->thread.join();
    EXPECT_TRUE(contains(pinger->output, "500 received")) << pinger->output;
    EXPECT_TRUE(eventually([&] { return etcd_status(0).value("connected", false); }, 15s)) << logs();
    EXPECT_GE(counter(0, "etcd", "disconnects"), 1u);
    EXPECT_GE(counter(0, "etcd", "lists"), 2u) << "resynchronised by listing again";
    // After the outage the watch works again: a change applies.
    const Endpoint& added = add_endpoint(blue_, 1, "10.0.0.22", "02:00:00:00:00:22");
    const auto put = ctl_in_underlay({"fabric", "put", "--etcd", etcd_->endpoint(), "endpoint", "blue/10.0.0.22",
                                      R"({"mac": "02:00:00:00:00:22", "node": ")" + nodes_[1].name + R"(", "port": ")" +
                                          added.port + "\"}"});
    ASSERT_TRUE(put.ok()) << put.output;
    EXPECT_TRUE(eventually([&] { return ping_once(*endpoints_[0].ns, "10.0.0.22"); }, 10s)) << logs();
}

TEST_F(EtcdFabric, ADaemonRestartedWhileEtcdIsAwayForwardsWithTheFabricItCached) {
    ASSERT_TRUE(eventually([&] { return ping_once(*endpoints_[0].ns, "10.0.0.20"); }, 10s)) << logs();
    // Written once the changes have been quiet for 2 s (and when the daemon stops).
    ASSERT_TRUE(eventually([&] { return std::filesystem::exists("/run/andromeda/" + nodes_[0].name + ".etcd-fabric.json"); }, 10s));
    etcd_->kill_now();
    // A graceful stop takes node1's whole data path down; the new daemon cannot reach etcd.
    nodes_[0].daemon->stop(20s);
    EXPECT_FALSE(ping_once(*endpoints_[0].ns, "10.0.0.20"));
    nodes_[0].daemon = nullptr;
    start_daemon(0);
    EXPECT_TRUE(contains(nodes_[0].daemon->output(), "starting with the cached fabric")) << logs();
    EXPECT_TRUE(eventually([&] { return ping_once(*endpoints_[0].ns, "10.0.0.20"); }, 10s)) << logs();
    EXPECT_FALSE(etcd_status(0).value("connected", true));
    {
        NetnsGuard in_underlay(*underlay_);
        etcd_->start();
    }
    EXPECT_TRUE(eventually([&] { return etcd_status(0).value("connected", false); }, 15s)) << logs();
    EXPECT_TRUE(ping_once(*endpoints_[0].ns, "10.0.0.20"));
}

TEST_F(EtcdFabric, ANodeWhoseLeaseExpiresDisappearsFromItsPeers) {
    ASSERT_TRUE(eventually([&] { return ping_once(*endpoints_[0].ns, "10.0.0.20"); }, 10s)) << logs();
    const auto has_node2 = [&] {
        for (const auto& n : ctl_json(0, "fabric").value("nodes", nlohmann::json::array()))
            if (n.value("name", "") == nodes_[1].name) return true;
        return false;
    };
    ASSERT_TRUE(has_node2());
    ASSERT_TRUE(etcd_status(1).value("lease_alive", false)) << logs();
    // node2's daemon dies without a word (its lease is not revoked): the entry outlives it by
    // lease_ttl (3 s), then node1 drops the node, and its endpoints with it.
    kill(nodes_[1].daemon->pid(), SIGKILL);
    nodes_[1].daemon->wait(5s);
    EXPECT_TRUE(has_node2()) << "the lease has not run out yet";
    EXPECT_TRUE(eventually([&] { return !has_node2(); }, 10s)) << logs();
    const auto rejected = etcd_status(0).value("rejected", nlohmann::json::array());
    EXPECT_TRUE(contains(rejected.dump(), "/andromeda/v1/endpoints/blue/10.0.0.20")) << rejected.dump();
    EXPECT_FALSE(ping_once(*endpoints_[0].ns, "10.0.0.20"));
    // Back: the restarted daemon publishes its node again, and node1 takes it back.
    start_daemon(1);
    EXPECT_TRUE(eventually([&] { return has_node2(); }, 10s)) << logs();
    EXPECT_TRUE(eventually([&] { return ping_once(*endpoints_[0].ns, "10.0.0.20"); }, 10s)) << logs();
}

// More VPCs put into etcd than andromeda_vnis holds: each change that would overfill it is
// refused, logged and counted, the last fabric that fit keeps forwarding, and the maps hold
// exactly that fabric. Put right in etcd, the fabric applies again.
TEST_F(EtcdFabric, AFabricBeyondTheMapsIsRefusedAndTheLastOneThatFitForwardsOn) {
    ASSERT_TRUE(eventually([&] { return ping_once(*endpoints_[0].ns, "10.0.0.20"); }, 10s)) << logs();
    std::string big = config_text(0);
    for (int v = 0; v < 4999; ++v)
        big += "\n[[vpc]]\nname = \"x" + std::to_string(v) + "\"\nvni = " + std::to_string(1000 + v) +
               "\ncidr = \"10.200.0.0/24\"\ngateway = \"10.200.0.1\"\n";
    const std::string big_file = "/tmp/" + topo_.prefix() + "fabric-5000.toml";
    std::ofstream(big_file) << big;
    files_.push_back(big_file);
    const auto imported = ctl_in_underlay({"fabric", "import", "--etcd", etcd_->endpoint(), big_file});
    ASSERT_TRUE(imported.ok()) << imported.output;

    ASSERT_TRUE(eventually([&] { return counter(0, "etcd", "apply_failures") >= 1; }, 30s)) << logs();
    const auto logged = [&] { return contains(nodes_[0].daemon->output(), "but andromeda_vnis holds at most 4096"); };
    EXPECT_TRUE(eventually(logged, 5s)) << logs();
    EXPECT_TRUE(nodes_[0].daemon->running()) << logs();
    // The watch may have applied the first of the import's transactions before the VPCs
    // overfilled the map: what runs is the last fabric that fit, and the map holds it.
    const auto vpcs_now = [&] { return ctl_json(0, "fabric").value("vpcs", nlohmann::json::array()).size(); };
    const std::size_t vpcs = vpcs_now();
    EXPECT_GE(vpcs, 1u);
    EXPECT_LE(vpcs, 4096u);
    PinnedMap vnis("/sys/fs/bpf/andromeda/" + nodes_[0].name + "/vnis");
    ASSERT_TRUE(vnis.ok());
    EXPECT_EQ(vnis.keys<std::uint32_t>().size(), vpcs);
    const auto pings = endpoints_[0].ns->try_run({"ping", "-c", "20", "-i", "0.02", "-W", "1", "10.0.0.20"});
    EXPECT_TRUE(contains(pings.output, " 0% packet loss")) << pings.output;
    const auto health = ctl(0, {"health"});
    EXPECT_EQ(health.exit_code, 3) << health.output;
    EXPECT_TRUE(contains(health.output, "etcd: ")) << health.output;

    // The extra VPCs (x0 ... x4998) deleted in one go.
    const auto deleted =
        underlay_->try_run({"etcdctl", "--endpoints", etcd_->endpoint(), "del", "--prefix", "/andromeda/v1/vpcs/x"});
    ASSERT_TRUE(deleted.ok()) << deleted.output;
    EXPECT_TRUE(eventually([&] { return vpcs_now() == 1; }, 30s)) << logs();
    EXPECT_TRUE(eventually([&] { return ctl(0, {"health"}).exit_code == 0; }, 10s)) << ctl(0, {"health"}).output;
    EXPECT_EQ(vnis.keys<std::uint32_t>().size(), 1u);
    EXPECT_TRUE(ping_once(*endpoints_[0].ns, "10.0.0.20"));
}

}  // namespace
}  // namespace andromeda::testing
