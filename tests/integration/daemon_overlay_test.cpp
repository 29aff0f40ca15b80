// andromedad end to end, traffic: two nodes carry a VPC over the overlay between tenant
// namespaces (ping with no static ARP, 100 MB over TCP byte-exact), while the hosts' own
// traffic on the underlay keeps flowing through the kernel.
#include <cstring>
#include <filesystem>
#include <string>

#include "daemon_fixture.hpp"
#include "io/bpf/kernel_probe.hpp"
#include "io/netlink/rps.hpp"

namespace andromeda::testing {
namespace {

TEST_F(TwoNodes, TenantsPingThroughTheOverlayWithoutStaticArp) {
    start_both();
    ASSERT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.20"); }, 5s)) << logs();
    const auto ping = t10_->try_run({"ping", "-c", "5", "-i", "0.2", "-W", "1", "10.0.0.20"});
    EXPECT_TRUE(ping.ok() && contains(ping.output, " 0% packet loss")) << ping.output << logs();

    // The tenant learned the peer's address by ARP, answered by the distributed gateway.
    const auto neigh = t10_->run({"ip", "neigh", "show", "10.0.0.20"});
    EXPECT_TRUE(contains(neigh, "02:00:00:00:00:ff")) << neigh;
    EXPECT_FALSE(contains(neigh, "PERMANENT")) << neigh;

    // Both directions crossed the overlay: encapsulated here, decapsulated there, on this run's
    // path (the kernel fast path, or the pipeline with it off).
    EXPECT_GE(counter(0, encapsulated_counter()), 6u);
    EXPECT_GE(counter(1, delivered_from_fabric_counter()), 6u);
    EXPECT_GE(counter(1, overlay_steered_counter()), 6u);
    EXPECT_GE(counter(0, "dataplane", "arp_replies"), 1u);
    EXPECT_EQ(counter(0, "io", "ledger_violations"), 0u);
}

// Two tenants of one VPC on the same node (t20 and t30 on node2, once a reload adds 10.0.0.30):
// ping and TCP between them never touch the underlay; on the fast path the tenant port's tc
// program delivers into the other port (local_packets), on the slow path the pipeline does.
TEST_F(TwoNodes, TenantsOnOneNodeReachEachOtherLocally) {
    start_both();
    const auto r = ctl(1, {"reload", write_config(1, config_with_third_endpoint(1), "-local")});
    ASSERT_TRUE(r.ok()) << r.output << logs();
    ASSERT_TRUE(eventually([&] { return ping_once(*t20_, "10.0.0.30"); }, 5s)) << logs();
    const auto ping = t30_->try_run({"ping", "-c", "20", "-i", "0.05", "-W", "1", "10.0.0.20"});
    EXPECT_TRUE(ping.ok() && contains(ping.output, " 0% packet loss")) << ping.output << logs();

    Process& server = topo_.spawn(*t30_, {"sh", "-c", "nc -l 5009 </dev/null | sha256sum"});
    ASSERT_TRUE(eventually([&] { return contains(t30_->try_run({"ss", "-Hltn", "sport = :5009"}).output, "5009"); }, 5s));
    const std::string blob = "/tmp/" + topo_.prefix() + "local-blob";
    ASSERT_TRUE(run_command({"sh", "-c", "head -c 20000000 /dev/urandom > " + blob}).ok());
    const auto digest = run_command({"sha256sum", blob});
    const auto client = t20_->try_run({"sh", "-c", "nc -N 10.0.0.30 5009 < " + blob}, 30s);
    std::filesystem::remove(blob);
    ASSERT_TRUE(client.ok()) << client.output << logs();
    ASSERT_NE(server.wait(20s), -1);
    EXPECT_TRUE(contains(server.output(), digest.output.substr(0, 64))) << server.output();

    const PathCounter local = fast_path_on() ? PathCounter{"fastpath", "local_packets"} : PathCounter{"dataplane", "delivered_local"};
    EXPECT_GT(counter(1, local), 20u);
    EXPECT_EQ(counter(1, encapsulated_counter()), 0u) << "nothing of it crossed the underlay";
}

TEST_F(TwoNodes, HundredMegabytesOverTcpArriveByteExact) {
    start_both();
    ASSERT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.20"); }, 5s)) << logs();
    const std::string blob = "/tmp/" + topo_.prefix() + "blob";
    files_.push_back(blob);
    ASSERT_TRUE(run_command({"sh", "-c", "head -c 100000000 /dev/urandom > " + blob}, 60s).ok());
    const auto sent = run_command({"sha256sum", blob});
    ASSERT_TRUE(sent.ok()) << sent.output;
    const std::string digest = sent.output.substr(0, 64);

    Process& receiver = topo_.spawn(*t20_, {"sh", "-c", "nc -l 5001 </dev/null | sha256sum"});
    ASSERT_TRUE(eventually([&] { return contains(t20_->try_run({"ss", "-Hltn", "sport = :5001"}).output, "5001"); }, 5s));
    const auto start = std::chrono::steady_clock::now();
    const auto sender = t10_->try_run({"sh", "-c", "nc -N 10.0.0.20 5001 < " + blob}, 120s);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(sender.ok()) << sender.output << logs();
    ASSERT_NE(receiver.wait(30s), -1) << "the receiver never saw the end of the stream";
    EXPECT_TRUE(contains(receiver.output(), digest)) << "sent " << digest << ", received " << receiver.output();
    std::printf("100 MB tenant to tenant over TCP in %.2f s (%.0f Mbit/s)\n", seconds, 800.0 / seconds);
    EXPECT_EQ(counter(0, "io", "ledger_violations"), 0u);
    if (fast_path_on()) {
        // Every packet decapsulated on node 2 came with the underlay XDP program's finding in its
        // metadata (generic XDP on a veth keeps it), so tc looked nothing up a second time.
        const auto decapsulated = counter(1, "fastpath", "decap_packets");
        EXPECT_GT(decapsulated, 1000u);
        // (A kernel that refuses bpf_xdp_adjust_meta to XDP programs hands nothing over: tc
        // checks every packet itself, io/bpf/kernel_probe.hpp.)
        EXPECT_EQ(counter(1, "fastpath", "decap_handed_over"),
                  io::probe_kernel_features().xdp_metadata ? decapsulated : 0u);
        // TSO segments are non-linear: generic XDP on node 2's veth underlay copies them whatever
        // their headroom, and the counter sees it.
        EXPECT_GT(counter(1, "fastpath", "decap_xdp_copied"), 0u);
    }
}

// With `tenant_rps = true`, tenant ports get RPS over every online CPU (io/netlink/rps.hpp): each
// of a tenant's flows is queued on the one CPU its hash picks, in the order the tenant sent it,
// however many CPUs its TCP sends from. A port whose mask an operator set keeps it; a stop empties
// only what the daemon set; by default ports stay as the kernel made them. The daemons run under nsenter,
// whose /sys shows the root namespace's devices: what is checked here went through the sysfs the
// daemon mounts for its own namespace.
TEST_F(TwoNodesFastPath, TenantPortsKeepEachFlowOnOneCpu) {
    const io::CpuMask cpus = io::RpsSteering::online_cpus();
    if (cpus.empty()) GTEST_SKIP() << "one CPU online: RPS has nothing to steer between";
    const std::string ours = io::format_cpu_mask(cpus);
    const auto sysfs = [](const std::string& port) { return "/sys/class/net/" + port + "/queues/rx-0/rps_cpus"; };
    const auto mask = [&](const Netns& host, const std::string& port) {
        const auto r = run_command({"ip", "netns", "exec", host.name(), "cat", sysfs(port)});
        EXPECT_TRUE(r.ok()) << r.output;
        const auto parsed = io::parse_cpu_mask(r.output);
        return parsed ? io::format_cpu_mask(*parsed) : "unreadable: " + r.output;
    };
    const auto r = run_command({"ip", "netns", "exec", nodes_[1].host->name(), "sh", "-c", "echo 1 > " + sysfs("tap-blue-20")});
    ASSERT_TRUE(r.ok()) << r.output;  // an operator's mask: CPU 0
    for (int i = 0; i < 2; ++i) {
        std::string text = read_text(nodes_[i].config);
        replace_all(text, "underlay = \"eth1\"", "underlay = \"eth1\"\ntenant_rps = true");
        std::ofstream(nodes_[i].config) << text;
    }
    start_both();
    EXPECT_EQ(mask(*nodes_[0].host, "tap-blue-10"), ours) << logs();
    EXPECT_EQ(mask(*nodes_[1].host, "tap-blue-20"), "1") << logs();
    EXPECT_TRUE(contains(nodes_[0].daemon->output(), "RPS over CPUs " + io::format_cpu_list(cpus) + " (rps_cpus " + ours + ") on 1 RX queue(s)")) << logs();
    EXPECT_TRUE(contains(nodes_[1].daemon->output(), "RPS as found on 1 RX queue(s)")) << logs();
    EXPECT_FALSE(contains(logs(), "RPS not set")) << logs();

    // 1 GB from t10 to t20, which queues next to none of it out of order. Measured here: with RPS
    // 0, and 1 in two runs of fifteen (50 MB or 1 GB alike: an event per flow, not per byte);
    // without (the default, `tenant_rps = false`) 258 to 336 in each of four 1 GB runs, for the
    // fast path runs on the CPU a segment was sent from, and the application's CPU and the one
    // taking its ACKs send side by side.
    ASSERT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.20"); }, 5s)) << logs();
    Process& receiver = topo_.spawn(*t20_, {"sh", "-c", "nc -l 5001 </dev/null >/dev/null"});
    ASSERT_TRUE(eventually([&] { return contains(t20_->try_run({"ss", "-Hltn", "sport = :5001"}).output, "5001"); }, 5s));
    const auto sender = t10_->try_run({"sh", "-c", "head -c 1000000000 /dev/zero | nc -N 10.0.0.20 5001"}, 120s);
    ASSERT_TRUE(sender.ok()) << sender.output << logs();
    ASSERT_NE(receiver.wait(30s), -1) << "the receiver never saw the end of the stream";
    // t20's namespace is this test's, so its counter holds this transfer alone (and the pings).
    const auto ofo = t20_->try_run({"nstat", "-az", "TcpExtTCPOFOQueue"});
    ASSERT_TRUE(ofo.ok()) << ofo.output;
    const auto at = ofo.output.find("TcpExtTCPOFOQueue");
    ASSERT_NE(at, std::string::npos) << ofo.output;
    EXPECT_LT(std::stoull(ofo.output.substr(at + std::strlen("TcpExtTCPOFOQueue"))), 16u)
        << "segments t20 queued out of order:\n" << ofo.output;

    nodes_[0].daemon->stop(20s);
    EXPECT_EQ(mask(*nodes_[0].host, "tap-blue-10"), "0") << "a stop empties the masks the daemon set";
    nodes_[1].daemon->stop(20s);
    EXPECT_EQ(mask(*nodes_[1].host, "tap-blue-20"), "1") << "an operator's mask outlives the daemon";

    std::string text = read_text(nodes_[0].config);
    replace_all(text, "\ntenant_rps = true", "");  // the default
    std::ofstream(nodes_[0].config) << text;
    start_daemon(0);
    EXPECT_EQ(mask(*nodes_[0].host, "tap-blue-10"), "0") << logs();
    EXPECT_FALSE(contains(nodes_[0].daemon->output(), "RPS over")) << logs();
}

// A small frame leaves node 1's encap with the headroom generic XDP wants (256 bytes in front of
// its Ethernet header), so node 2's veth underlay runs its XDP program on the skb as it came
// instead of on a copy. Without that room every echo below would count in decap_xdp_copied.
// The nodes run the fast path on both registrations (its encap is what this test is about).

TEST_F(TwoNodesFastPath, SmallFramesReachTheReceiversXdpWithoutACopy) {
    start_both();
    ASSERT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.20"); }, 5s)) << logs();
    // Deltas over the pings alone: what crossed before (the first ping, while a next hop was
    // still being resolved) may have been encapsulated by the pipeline, whose frames get no room.
    const auto encap_before = counter(0, "fastpath", "encap_packets");
    const auto decap_before = counter(1, "fastpath", "decap_packets");
    const auto copied_before = counter(1, "fastpath", "decap_xdp_copied");
    const auto replies_copied_before = counter(0, "fastpath", "decap_xdp_copied");
    const auto ping = t10_->try_run({"ping", "-c", "50", "-i", "0.01", "-s", "64", "-W", "1", "10.0.0.20"}, 10s);
    EXPECT_TRUE(ping.ok() && contains(ping.output, " 0% packet loss")) << ping.output << logs();
    EXPECT_GE(counter(0, "fastpath", "encap_packets") - encap_before, 50u) << "node 1's fast path encapsulated the echoes";
    EXPECT_GE(counter(1, "fastpath", "decap_packets") - decap_before, 50u) << "node 2's fast path decapsulated them";
    EXPECT_EQ(counter(1, "fastpath", "decap_xdp_copied") - copied_before, 0u);
    EXPECT_EQ(counter(0, "fastpath", "decap_xdp_copied") - replies_copied_before, 0u)
        << "the replies: node 2's encap, node 1's XDP";
}

// Host traffic on the underlay is not Andromeda's: a kernel TCP stream to the underlay address
// that started before the XDP programs went on keeps going, byte for byte, and new ones open.
TEST_F(TwoNodes, KernelTcpToTheUnderlayAddressKeepsWorkingWhileAttached) {
    const std::string lines = "i=0; while [ $i -lt 100 ]; do echo line-$i-abcdefghijklmnopqrstuvwxyz; ";
    const auto expected = run_command({"sh", "-c", lines + "i=$((i+1)); done | sha256sum"});
    ASSERT_TRUE(expected.ok());
    Netns& host1 = *nodes_[0].host;
    Netns& host2 = *nodes_[1].host;
    Process& receiver = topo_.spawn(host2, {"sh", "-c", "nc -l 192.168.1.2 6000 </dev/null | sha256sum"});
    ASSERT_TRUE(eventually([&] { return contains(host2.try_run({"ss", "-Hltn", "sport = :6000"}).output, "6000"); }, 5s));
    Process& sender = topo_.spawn(host1, {"sh", "-c", lines + "i=$((i+1)); sleep 0.05; done | nc -N 192.168.1.2 6000"});
    ASSERT_TRUE(eventually([&] { return contains(host2.try_run({"ss", "-Htn", "state", "established"}).output, ":6000"); }, 5s));

    start_both();  // attaches XDP to both ends of the stream's path mid-stream
    EXPECT_TRUE(sender.running()) << "the stream ended before Andromeda attached: the test proves nothing";
    EXPECT_EQ(sender.wait(20s), 0) << sender.output();
    ASSERT_NE(receiver.wait(10s), -1);
    EXPECT_TRUE(contains(receiver.output(), expected.output.substr(0, 64))) << receiver.output();

    // A new kernel connection, and the overlay, both work at the same time.
    Process& listener = topo_.spawn(host2, {"nc", "-l", "192.168.1.2", "6001"});
    ASSERT_TRUE(eventually([&] { return contains(host2.try_run({"ss", "-Hltn", "sport = :6001"}).output, "6001"); }, 5s));
    EXPECT_TRUE(host1.try_run({"sh", "-c", "echo hello | nc -N 192.168.1.2 6001"}, 10s).ok());
    EXPECT_NE(listener.wait(10s), -1);
    EXPECT_TRUE(contains(listener.output(), "hello"));
    EXPECT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.20"); }, 5s)) << logs();
    EXPECT_GT(counter(1, "xdp", "pass_host"), 0u);
}

// Two-queue underlay veths: two workers per node, each with its queue of the underlay; the
// single-queue tenant port's socket lives in worker 0, so worker 1 hands what it decapsulates
// for the tenant over as a copy (handler_tx_copied).
class TwoNodesTwoQueues : public TwoNodes {
protected:
    unsigned underlay_queues() const override { return 2; }
    // What it tests is the pipeline's spread over queues and workers, so its traffic must take
    // the pipeline.
    bool fast_path() const override { return false; }
};

TEST_F(TwoNodesTwoQueues, OneWorkerPerUnderlayQueueAndEveryQueueCarriesTraffic) {
    start_both();
    const auto status = ctl_json(1, "status");
    EXPECT_EQ(status.value("workers", 0), 2) << status.dump(2);
    ASSERT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.20"); }, 5s)) << logs();

    // Sixteen flows: their outer UDP source ports differ (flow hash), so the bridge spreads them
    // over both queues (all on one queue: 2^-16).
    Process& server = topo_.spawn(*t20_, {"iperf3", "-s", "-1"});
    ASSERT_TRUE(eventually([&] { return contains(t20_->try_run({"ss", "-Hltn", "sport = :5201"}).output, "5201"); }, 5s));
    const auto client = t10_->try_run({"iperf3", "-c", "10.0.0.20", "-P", "16", "-t", "2", "-f", "m"}, 30s);
    EXPECT_TRUE(client.ok()) << client.output << logs();
    EXPECT_TRUE(contains(client.output, "receiver")) << client.output;
    EXPECT_NE(server.wait(10s), -1);

    for (int i = 0; i < 2; ++i) {
        const auto per_worker = ctl_json(i, "status").value("worker_rx_frames", nlohmann::json::array());
        ASSERT_EQ(per_worker.size(), 2u);
        EXPECT_GT(per_worker[0].get<std::uint64_t>(), 0u) << nodes_[i].name;
        EXPECT_GT(per_worker[1].get<std::uint64_t>(), 0u) << nodes_[i].name;
        EXPECT_EQ(counter(i, "io", "ledger_violations"), 0u);
    }
    EXPECT_GT(counter(1, "io", "handler_tx_copied"), 0u) << "worker 1 has no socket on the tenant port";
    EXPECT_EQ(counter(1, "io", "handler_tx_copy_failed"), 0u);
}

}  // namespace
}  // namespace andromeda::testing
