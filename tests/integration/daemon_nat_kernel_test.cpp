// NAT in the kernel, end to end (issue 28): tenants and the outside at the kernel's defaults
// (TSO, TX checksum offload: the outside is a veth peer in the same kernel, so the uplink sees
// CHECKSUM_PARTIAL and GSO packets), with the fast path on and off (the .slowpath registration).
// 50 MB cross the NAT each way byte for byte, from a tenant behind node1 and from one on the
// gateway node; with the fast path, the kernel translates the established flows (the fastpath
// counters, conntrack's PATH). The gateway's daemon killed mid-ping loses no ping; a reload that
// removes the NAT ends a flow at once; UDP exchanges and a port forward's connection cross it
// too; a kernel map too small for every flow leaves the rest with the pipeline, and none is lost.
#include <sys/socket.h>

#include "long_ping.hpp"
#include "nat_fixture.hpp"

namespace andromeda::testing {
namespace {

constexpr std::size_t kBulk = 50u << 20;

// One TCP connection across the NAT, `bytes` from `from` to `to` (one of them the server), the
// bytes compared whole at the far end.
void expect_transfer(InetSocket& from, InetSocket& to, const std::vector<std::uint8_t>& bytes, const std::string& what) {
    const Transfer moved = transfer(from, to, bytes, 60s);
    EXPECT_EQ(moved.received.size(), bytes.size()) << what;
    EXPECT_TRUE(moved.received == bytes) << what << ": the bytes differ";
}

// The same, the connection left open.
void exchange(InetSocket& from, InetSocket& to, const std::vector<std::uint8_t>& bytes, const std::string& what) {
    std::thread sender([&] { from.send_all(bytes.data(), bytes.size(), 60s); });
    const auto received = to.receive_all(bytes.size(), 60s);
    sender.join();
    EXPECT_EQ(received.size(), bytes.size()) << what;
    EXPECT_TRUE(received == bytes) << what << ": the bytes differ";
}

// With the fast path, more than `out` and `in` of the NAT's packets or bytes (`unit`) crossed
// the kernel's NAT each way; without it, none did.
void expect_kernel_nat(bool fast_path, const StatsDelta& moved, const std::string& unit, std::uint64_t out,
                       std::uint64_t in) {
    if (fast_path) {
        EXPECT_GT(moved("/fastpath/nat_out_" + unit), out) << moved.after.dump(2);
        EXPECT_GT(moved("/fastpath/nat_in_" + unit), in) << moved.after.dump(2);
    } else {
        EXPECT_EQ(moved("/fastpath/nat_out_packets"), 0u);
        EXPECT_EQ(moved("/fastpath/nat_in_packets"), 0u);
    }
}

class NatKernel : public NatGateway {};

TEST_F(NatKernel, FiftyMegabytesEachWayByteExactWithTheOutsideAtItsDefaults) {
    ASSERT_NO_FATAL_FAILURE(start_and_reach_outside({tenant_, tenant20_}));
    EXPECT_TRUE(contains(outside_->run({"ethtool", "-k", "eth0"}), "tx-checksumming: on"))
        << "the outside must run at the kernel's defaults";
    const auto before = ctl_json(1, "stats");
    InetSocket server = outside_listener();
    const auto up = random_bytes(kBulk, 21);
    const auto down = random_bytes(kBulk, 22);
    for (Netns* t : {tenant_, tenant20_}) {
        SCOPED_TRACE(t->name());
        for (const bool upload : {true, false}) {
            Connection c = connect_through(*t, server, "203.0.113.1", 8000);
            ASSERT_TRUE(c.established()) << logs();
            EXPECT_EQ(c.peer.ip, "203.0.113.10") << "the outside sees the NAT address";
            if (upload) expect_transfer(c.client, c.served, up, t->name() + " -> outside");
            else expect_transfer(c.served, c.client, down, "outside -> " + t->name());
        }
    }
    const auto after = ctl_json(1, "stats");
    // Each tenant's 50 MB each way crossed the kernel's NAT, but for its first packets and its
    // FIN, which are the pipeline's by design: more than 1.5 x 50 MB each way.
    expect_kernel_nat(fast_path(), {before, after}, "bytes", kBulk * 3 / 2, kBulk * 3 / 2);
    if (fast_path()) {
        EXPECT_GE(stat(after, "/nat_offload/installs"), 4u) << after.dump(2);
        EXPECT_GE(stat(after, "/nat_offload/removals"), 4u) << "each connection's FIN took it out of the kernel";
    }
}

// UDP request/response, 300 exchanges from each tenant, every answer back in order; with the
// fast path most of them cross the kernel's NAT both ways.
TEST_F(NatKernel, UdpRequestsAndAnswersCrossTheKernelsNatBothWays) {
    ASSERT_NO_FATAL_FAILURE(start_and_reach_outside({tenant_, tenant20_}));
    InetSocket server(*outside_, SOCK_DGRAM, "203.0.113.1", 5300);
    constexpr int kExchanges = 300;
    const auto before = ctl_json(1, "stats");
    for (Netns* t : {tenant_, tenant20_}) {
        SCOPED_TRACE(t->name());
        InetSocket client(*t, SOCK_DGRAM, "0.0.0.0", 0);
        for (int i = 0; i < kExchanges; ++i) {
            const std::string request = "request " + std::to_string(i) + std::string(1000, 'q');
            ASSERT_TRUE(client.send_datagram(request, "203.0.113.1", 5300));
            std::string got;
            InetAddress from;
            ASSERT_TRUE(server.receive_datagram(got, from, 5s)) << "request " << i << logs();
            ASSERT_EQ(got, request);
            EXPECT_EQ(from.ip, "203.0.113.10");
            ASSERT_TRUE(server.send_datagram("answer " + std::to_string(i), from.ip, from.port));
            ASSERT_TRUE(client.receive_datagram(got, from, 5s)) << "answer " << i << logs();
            ASSERT_EQ(got, "answer " + std::to_string(i));
        }
    }
    // The first exchanges of each flow go through the pipeline until the offload thread (every
    // 2 ms) has installed it: how many depends on the machine's load, so "most" is asserted.
    expect_kernel_nat(fast_path(), {before, ctl_json(1, "stats")}, "packets", kExchanges, kExchanges);
}

// A port forward's connection, opened from the outside, is translated in the kernel once
// established, both ways: 20 MB in and 20 MB out, byte for byte.
TEST_F(NatKernel, APortForwardedConnectionFromOutsideMovesTwentyMegabytesEachWay) {
    ASSERT_NO_FATAL_FAILURE(start_and_reach_outside({tenant_}));
    InetSocket service(*tenant_, SOCK_STREAM, "10.0.0.10", 80);
    service.listen_now();
    Connection c = connect_through(*outside_, service, "203.0.113.10", 8080);
    ASSERT_TRUE(c.established()) << logs();
    EXPECT_EQ(c.peer.ip, "203.0.113.1") << "the tenant sees the outside client's own address";
    const auto before = ctl_json(1, "stats");
    constexpr std::size_t kForwarded = 20u << 20;
    // No FIN until both directions are done: a FIN takes the flow out of the kernel.
    exchange(c.client, c.served, random_bytes(kForwarded, 31), "outside -> forward");
    exchange(c.served, c.client, random_bytes(kForwarded, 32), "forward -> outside");
    expect_kernel_nat(fast_path(), {before, ctl_json(1, "stats")}, "bytes", kForwarded / 2, kForwarded / 2);
}

// An established connection is in the kernel (conntrack's PATH) while it lives, with the
// packets the kernel translated, and out of it after its FIN.
TEST_F(NatKernel, ConntrackSaysWhichFlowsTheKernelCarries) {
    ASSERT_NO_FATAL_FAILURE(start_and_reach_outside({tenant_}));
    InetSocket server = outside_listener();
    Connection c = connect_through(*tenant_, server, "203.0.113.1", 8000);
    ASSERT_TRUE(c.established()) << logs();
    InetSocket& client = c.client;
    InetSocket& served = c.served;
    const std::string chunk(100000, 'x');
    for (int i = 0; i < 10; ++i) {
        ASSERT_TRUE(client.send_all(chunk.data(), chunk.size(), 5s));
        ASSERT_EQ(served.receive_all(chunk.size(), 5s).size(), chunk.size());
    }
    const auto tcp_flow = [&]() -> nlohmann::json {
        for (const auto& f : ctl_json(1, "conntrack").value("flows", nlohmann::json::array()))
            if (f.value("protocol", "") == "tcp" && f.value("state", "") == "established") return f;
        return nlohmann::json::object();
    };
    if (fast_path()) {
        // The kernel's counts reach conntrack with the next sync (every second).
        ASSERT_TRUE(eventually([&] { return tcp_flow().value("kernel_packets", 0u) > 0; }, 5s))
            << ctl_json(1, "conntrack").dump(2) << logs();
        EXPECT_TRUE(tcp_flow().value("kernel", false));
        const auto text = run_command({kCtl, "--node", names_[1], "conntrack"});
        EXPECT_TRUE(contains(text.output, "kernel")) << text.output;
    } else {
        ASSERT_FALSE(tcp_flow().empty()) << ctl_json(1, "conntrack").dump(2);
        EXPECT_FALSE(tcp_flow().value("kernel", true));
    }
    client.shutdown_write();
    served.shutdown_write();
    EXPECT_TRUE(eventually([&] { return !tcp_flow().value("kernel", false); }, 5s))
        << "a FIN takes the flow out of the kernel: " << ctl_json(1, "conntrack").dump(2);
}

// The datapath outlives the gateway's daemon: it is killed (SIGKILL) in the middle of a
// 5-second ping -i 0.01 from t10 through the NAT, and a new one started while the ping runs.
// The kernel translated the echo flow throughout; the new daemon adopts it (and a TCP
// connection, which goes on carrying data), handing out neither of their ports again.
class NatKilledFastPath : public NatGateway {
protected:
    bool fast_path() const override { return true; }
};

TEST_F(NatKilledFastPath, TheGatewaysDaemonKilledMidPingLosesNothingAndTheNextAdoptsItsFlows) {
    ASSERT_NO_FATAL_FAILURE(start_and_reach_outside({tenant_}));
    InetSocket server = outside_listener();
    Connection c = connect_through(*tenant_, server, "203.0.113.1", 8000);
    ASSERT_TRUE(c.established()) << logs();
    InetSocket& client = c.client;
    InetSocket& served = c.served;
    ASSERT_TRUE(client.send_all("before", 5s));
    ASSERT_EQ(served.receive_text(6, 5s), "before");

    Process& ping = start_long_ping(topo_, *tenant_, "203.0.113.1");
    const auto translated = [&] { return stat(ctl_json(1, "stats"), "/fastpath/nat_out_packets"); };
    const std::uint64_t before = translated();
    ASSERT_TRUE(eventually([&] { return translated() > before + 50; }, 5s)) << "the ping crosses the kernel's NAT";

    Process& old = *daemons_[1];
    ASSERT_EQ(kill(old.pid(), SIGKILL), 0);
    ASSERT_NE(old.wait(10s), -1);
    std::this_thread::sleep_for(1500ms);  // 150 pings with no andromedad on the gateway
    EXPECT_TRUE(ping.running()) << "the ping ended before the restart: the test proves less than it says";
    ASSERT_TRUE(client.send_all("during", 5s));  // the kernel carries the connection alone
    EXPECT_EQ(served.receive_text(6, 5s), "during");

    daemons_[1] = &topo_.spawn(*gw_, {kDaemon, "-c", configs_[1]});
    ASSERT_TRUE(daemons_[1]->wait_for_output(" ready: ", 20s)) << daemons_[1]->output();
    const std::string restarted = daemons_[1]->output();
    EXPECT_TRUE(contains(restarted, "NAT: adopted ")) << restarted;
    std::this_thread::sleep_for(500ms);  // pings through the adopting daemon's datapath
    const PingTally tally = stop_long_ping(ping);
    EXPECT_TRUE(tally.stopped) << "the restart must happen while the ping runs: " << tally.output;
    EXPECT_GT(tally.answered_through, 150u) << tally.output;
    EXPECT_EQ(tally.first_lost, 0u) << "an echo lost across the kill and the restart\n" << tally.output << logs();

    ASSERT_TRUE(client.send_all("after", 5s));
    EXPECT_EQ(served.receive_text(5, 5s), "after") << logs();
    const auto stats = ctl_json(1, "stats");
    EXPECT_GE(stat(stats, "/nat/offload_adopted"), 2u) << stats.dump(2);  // the echo flow and the connection
    // A new connection from the same tenant gets a port of its own, not one the kernel still uses.
    InetSocket second(*tenant_, SOCK_STREAM);
    ASSERT_TRUE(second.connect_to("203.0.113.1", 8000, 10s)) << logs();
    InetAddress first_peer = client.local(), second_peer;
    InetSocket served2 = server.accept_one(10s, &second_peer);
    ASSERT_TRUE(served2.valid());
    std::uint16_t first_nat_port = 0;
    for (const auto& f : ctl_json(1, "conntrack").value("flows", nlohmann::json::array()))
        if (f.value("protocol", "") == "tcp" && f["original"].value("source_port", 0) == first_peer.port)
            first_nat_port = static_cast<std::uint16_t>(f["translated"].value("source_port", 0));
    EXPECT_NE(first_nat_port, 0) << ctl_json(1, "conntrack").dump(2);
    EXPECT_NE(second_peer.port, first_nat_port);
}

// A reload that takes the VPC's NAT away ends its flows at once: they leave the kernel before the
// reload reports success, and the connection carries nothing more.
TEST_F(NatKernel, AReloadThatRemovesTheNatEndsItsFlows) {
    ASSERT_NO_FATAL_FAILURE(start_and_reach_outside({tenant_}));
    InetSocket server = outside_listener();
    Connection c = connect_through(*tenant_, server, "203.0.113.1", 8000);
    ASSERT_TRUE(c.established()) << logs();
    InetSocket& client = c.client;
    InetSocket& served = c.served;
    ASSERT_TRUE(client.send_all("ping", 5s));
    ASSERT_EQ(served.receive_text(4, 5s), "ping");
    if (fast_path()) {
        ASSERT_TRUE(eventually([&] { return stat(ctl_json(1, "stats"), "/nat_offload/installs") > 0; }, 5s));
    }

    test_support::FabricBuilder without_nat(names_[1], "192.168.1.2");
    without_nat.peer(names_[0], "192.168.1.1")
        .peer(names_[1], "192.168.1.2")
        .vpc("blue", 100, "10.0.0.0/24", "10.0.0.1")
        .endpoint("10.0.0.10", "02:00:00:00:00:10", names_[0], "tap-blue-10")
        .endpoint("10.0.0.20", "02:00:00:00:00:20", names_[1], "tap-blue-20");
    std::ofstream(configs_[1]) << with_path_mode(without_nat.uplink("eth2", "203.0.113.2", "203.0.113.1").toml(),
                                                fast_path());
    const auto reload = run_command({kCtl, "--node", names_[1], "reload"});
    ASSERT_TRUE(reload.ok()) << reload.output;
    // Out of the kernel before the reload answered.
    const auto flows = ctl_json(1, "conntrack");
    for (const auto& f : flows.value("flows", nlohmann::json::array()))
        EXPECT_FALSE(f.value("kernel", false)) << flows.dump(2);
    if (fast_path()) {
        EXPECT_GE(stat(ctl_json(1, "stats"), "/nat_offload/removals"), 1u);
    }
    ASSERT_TRUE(client.send_all("more", 5s));
    EXPECT_EQ(served.receive_text(4, 2s), "") << "the flow must end with its NAT";
}

// The kernel translates at most [node.uplink] kernel_flows flows; here one. The second
// connection's install is refused (the map is full) and the pipeline carries it, byte for byte.
class NatSmallMapFastPath : public NatGateway {
protected:
    bool fast_path() const override { return true; }
    void SetUp() override {
        NatGateway::SetUp();
        if (IsSkipped()) return;
        std::ofstream(configs_[1]) << with_path_mode(nat_fabric(names_[1], names_[0], names_[1])
                                                        .uplink("eth2", "203.0.113.2", "203.0.113.1", "kernel_flows = 1")
                                                        .toml(),
                                                    true);
    }
};

TEST_F(NatSmallMapFastPath, AFullMapLeavesTheRestWithThePipelineAndLosesNoFlow) {
    start();
    ASSERT_TRUE(eventually([&] { return tenant_->try_run({"ping", "-c", "1", "-W", "1", "203.0.113.1"}, 5s).ok(); }, 10s))
        << logs();  // the echo flow takes the kernel's one place
    InetSocket server = outside_listener();
    const auto bytes = random_bytes(8u << 20, 31);
    for (int i = 0; i < 2; ++i) {
        Connection c = connect_through(*tenant_, server, "203.0.113.1", 8000);
        ASSERT_TRUE(c.established()) << logs();
        InetSocket& client = c.client;
        InetSocket& served = c.served;
        expect_transfer(client, served, bytes, "connection " + std::to_string(i));
    }
    const auto stats = ctl_json(1, "stats");
    EXPECT_GE(stat(stats, "/nat_offload/install_full"), 1u) << stats.dump(2);
    EXPECT_GE(stat(stats, "/nat/offload_install_failed"), 1u) << stats.dump(2);
}

}  // namespace
}  // namespace andromeda::testing
