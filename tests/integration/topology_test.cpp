// The namespace fixture itself: names, connectivity, processes, and cleanup on destruction, on
// Ctrl-C (SIGINT) and after a SIGKILLed run.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "netns_topology.hpp"
#include "support/root.hpp"

namespace andromeda::testing {
namespace {

bool netns_exists(const std::string& name) { return std::filesystem::exists("/run/netns/" + name); }

TEST(NetnsTopology, NamesCarryThePidAndEverythingGoesAway) {
    ANDROMEDA_REQUIRE_ROOT();
    std::string a_name, b_name;
    {
        Topology topo;
        Netns& a = topo.add_namespace("a");
        Netns& b = topo.add_namespace("b");
        a_name = a.name();
        b_name = b.name();
        EXPECT_EQ(a_name, "andro-" + std::to_string(getpid()) + "-a");
        VethOptions options;
        options.queues = 2;
        options.mac_a = "02:00:00:00:aa:01";
        topo.add_veth(a, "eth1", b, "eth1", options);
        topo.add_address(a, "eth1", "192.168.77.1/24");
        topo.add_address(b, "eth1", "192.168.77.2/24");
        const auto ping = a.try_run({"ping", "-c", "1", "-W", "2", "192.168.77.2"});
        EXPECT_TRUE(ping.ok()) << ping.output;
        EXPECT_NE(a.run({"ip", "link", "show", "eth1"}).find("02:00:00:00:aa:01"), std::string::npos);
        EXPECT_TRUE(netns_exists(a_name));
        EXPECT_EQ(a.try_run({"ip", "link", "show", "eth0"}).exit_code, 1) << "a fresh namespace has no eth0";
    }
    EXPECT_FALSE(netns_exists(a_name));
    EXPECT_FALSE(netns_exists(b_name));
}

TEST(NetnsTopology, HostsOnABridgeReachEachOther) {
    ANDROMEDA_REQUIRE_ROOT();
    Topology topo;
    const auto hosts = topo.add_hosts_on_bridge(3, "eth1", "192.168.78");
    ASSERT_EQ(hosts.size(), 3u);
    EXPECT_EQ(hosts[2]->name(), topo.prefix() + "host3");
    for (const char* peer : {"192.168.78.2", "192.168.78.3"}) {
        const auto ping = hosts[0]->try_run({"ping", "-c", "1", "-W", "2", peer});
        EXPECT_TRUE(ping.ok()) << peer << ": " << ping.output;
    }
}

TEST(NetnsTopology, ProcessesRunInsideAndAreStopped) {
    ANDROMEDA_REQUIRE_ROOT();
    Topology topo;
    Netns& ns = topo.add_namespace("p");
    Process& p = topo.spawn(ns, {"sh", "-c", "ip -o link show lo; exec sleep 30"});
    EXPECT_TRUE(p.wait_for_output("lo:", std::chrono::seconds(5))) << p.output();
    EXPECT_TRUE(p.running());
    const int status = p.stop(std::chrono::seconds(2));
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
}

// A run interrupted with Ctrl-C: the handler removes its namespaces before the process dies.
TEST(NetnsTopology, SigintRemovesTheNamespaces) {
    ANDROMEDA_REQUIRE_ROOT();
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        Topology topo;
        Netns& a = topo.add_namespace("a");
        Netns& b = topo.add_namespace("b");
        topo.add_veth(a, "x", b, "y");
        topo.spawn(a, {"sleep", "30"});
        raise(SIGINT);
        _exit(0);  // not reached: the handler re-raises SIGINT with its default action
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << status;
    const std::string prefix = "andro-" + std::to_string(child) + "-";
    EXPECT_FALSE(netns_exists(prefix + "a"));
    EXPECT_FALSE(netns_exists(prefix + "b"));
}

// A SIGKILLed run cannot clean up; the next Topology sweeps its namespaces.
TEST(NetnsTopology, NextRunSweepsASigkilledRunsNamespaces) {
    ANDROMEDA_REQUIRE_ROOT();
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        Topology topo;
        topo.add_namespace("orphan");
        raise(SIGKILL);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    const std::string orphan = "andro-" + std::to_string(child) + "-orphan";
    ASSERT_TRUE(netns_exists(orphan));
    Topology next;
    EXPECT_FALSE(netns_exists(orphan));
}

}  // namespace
}  // namespace andromeda::testing
