// The NAT gateway end-to-end fixture: two daemons, a tenant on node1 and one on the gateway
// node, an "outside" namespace behind the gateway's uplink.
//
//   t10 ns: eth0 10.0.0.10 ── host1 ns [node1]: tap-blue-10, eth1 192.168.1.1 ─┐ bridge
//   t20 ns: eth0 10.0.0.20 ── host2 ns [gw]:    tap-blue-20, eth1 192.168.1.2 ─┘
//                                                eth2 203.0.113.2 (+ NAT address .10) ── outside ns: eth0 203.0.113.1
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <initializer_list>
#include <random>
#include <thread>

#include "daemon_fixture.hpp"
#include "inet_sockets.hpp"
#include "support/fabric_builder.hpp"

namespace andromeda::testing {

// The fabric as `self` (node1 or gw) sees it: blue's NAT on gw, with a TCP port forward to 10.0.0.10:80.
inline test_support::FabricBuilder nat_fabric(const std::string& self, const std::string& node1, const std::string& gw) {
    test_support::FabricBuilder b(self, self == gw ? "192.168.1.2" : "192.168.1.1");
    b.peer(node1, "192.168.1.1")
        .peer(gw, "192.168.1.2")
        .vpc("blue", 100, "10.0.0.0/24", "10.0.0.1")
        .nat(gw, "203.0.113.10", "port_range = [20000, 29999]\n[[vpc.nat.forward]]\nprotocol = \"tcp\"\nnat_port = 8080\nto = \"10.0.0.10:80\"\n")
        .endpoint("10.0.0.10", "02:00:00:00:00:10", node1, "tap-blue-10")
        .endpoint("10.0.0.20", "02:00:00:00:00:20", gw, "tap-blue-20");
    return b;
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
        // The outside at the kernel's defaults, like the tenants: a veth peer in the same kernel
        // hands the uplink CHECKSUM_PARTIAL and GSO packets, which the uplink's tc program
        // translates as they are, and its punt pair finishes for the pipeline (docs/nat.md).
        topo_.add_address(*gw_, "eth2", "203.0.113.2/24");
        topo_.add_address(*gw_, "eth2", "203.0.113.10/32");  // so the kernel answers ARP for it
        topo_.add_address(*outside_, "eth0", "203.0.113.1/24");
        tenant_ = &add_tenant(*host1_, "10");
        tenant20_ = &add_tenant(*gw_, "20");  // on the gateway node itself

        configs_[0] = write("node1", nat_fabric(names_[0], names_[0], names_[1]).toml());
        configs_[1] = write("gw", nat_fabric(names_[1], names_[0], names_[1]).uplink("eth2", "203.0.113.2", "203.0.113.1").toml());
    }

    Netns& add_tenant(const Netns& host, const std::string& octet) {
        Netns& tenant = topo_.add_namespace("t" + octet);
        VethOptions veth;
        veth.mac_b = "02:00:00:00:00:" + octet;
        topo_.add_veth(host, "tap-blue-" + octet, tenant, "eth0", veth);
        topo_.add_address(tenant, "eth0", "10.0.0." + octet + "/24");
        tenant.run({"ip", "route", "add", "default", "via", "10.0.0.1"});
        return tenant;
    }

    // Whether the daemons run the kernel fast path (fast_path_mode.hpp).
    virtual bool fast_path() const { return fast_path_on(); }

    void TearDown() override {
        for (int i = 0; i < 2; ++i) stop_and_check_daemon(daemons_[i], names_[i]);
        for (const auto& path : configs_)
            if (!path.empty()) std::filesystem::remove(path);
    }

    std::string write(const std::string& tag, const std::string& text) {
        const std::string path = "/tmp/" + topo_.prefix() + tag + ".toml";
        std::ofstream(path) << with_path_mode(text, fast_path());
        return path;
    }

    void start() {
        Netns* hosts[2] = {host1_, gw_};
        for (int i = 0; i < 2; ++i) {
            daemons_[i] = &topo_.spawn(*hosts[i], {kDaemon, "-c", configs_[i]});
            ASSERT_TRUE(daemons_[i]->wait_for_output(" ready: ", 20s)) << daemons_[i]->output();
        }
    }

    // Starts both daemons and waits until each of `tenants` pings the outside through the NAT.
    void start_and_reach_outside(std::initializer_list<Netns*> tenants) {
        start();
        for (Netns* t : tenants)
            ASSERT_TRUE(
                eventually([&] { return t->try_run({"ping", "-c", "1", "-W", "1", "203.0.113.1"}, 5s).ok(); }, 10s))
                << t->name() << "\n" << logs();
    }

    // A TCP server on the outside, listening on 203.0.113.1:8000.
    InetSocket outside_listener() const {
        InetSocket server(*outside_, SOCK_STREAM, "203.0.113.1", 8000);
        server.listen_now();
        return server;
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
    Netns* tenant_ = nullptr;    // 10.0.0.10 on node1
    Netns* tenant20_ = nullptr;  // 10.0.0.20 on the gateway node
};

inline std::uint64_t stat(const nlohmann::json& stats, const std::string& pointer) {
    return stats.value(nlohmann::json::json_pointer(pointer), std::uint64_t{0});
}


// How much counters moved between two `andromedactl stats --json`.
struct StatsDelta {
    nlohmann::json before, after;
    std::uint64_t operator()(const std::string& pointer) const { return stat(after, pointer) - stat(before, pointer); }
};



}  // namespace andromeda::testing
