// andromedad end to end, life cycle: live reloads (an endpoint added becomes reachable, removed
// becomes unreachable, and a 1000-packet ping at 5 ms intervals across both loses nothing), a
// bad reload changes nothing, SIGKILL then restart recovers, a stop leaves nothing behind, and
// startup errors say what to fix.
#include <sched.h>
#include <sys/wait.h>

#include <string>

#include "daemon_fixture.hpp"
#include "io/bpf/tc_attach.hpp"
#include "io/netlink/interfaces.hpp"
#include "long_ping.hpp"

namespace andromeda::testing {
namespace {

bool has_xdp(const Netns& ns, const std::string& ifname) {
    return contains(ns.run({"ip", "link", "show", ifname}), "prog/xdp");
}

// Whether an andromedad tc program runs on `ifname`'s ingress (a tenant port's entry), attached
// either way (tcx link or cls_bpf filter).
bool has_tc(const Netns& ns, const std::string& ifname) {
    NetnsGuard in(ns);
    const auto link = io::find_interface(ifname);
    if (!link) return false;
    for (const auto& program : io::tc_ingress_programs(link->ifindex))
        if (program.name.rfind("andromeda_tc", 0) == 0) return true;
    return false;
}

// Interfaces in `ns` whose name starts with `prefix` (punt pairs: anp<N>, anx<N>).
std::size_t links_named(const Netns& ns, const std::string& prefix) {
    const auto j = nlohmann::json::parse(ns.run({"ip", "-j", "link", "show"}), nullptr, false);
    std::size_t n = 0;
    if (j.is_array())
        for (const auto& link : j)
            if (link.value("ifname", std::string()).rfind(prefix, 0) == 0) ++n;
    return n;
}

TEST_F(TwoNodes, ReloadAddsAndRemovesAnEndpointWhileAPingLosesNothing) {
    start_both();
    ASSERT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.20"); }, 5s)) << logs();
    EXPECT_FALSE(ping_once(*t10_, "10.0.0.30")) << "10.0.0.30 is in no config yet";

    Process& ping = start_long_ping(topo_, *t10_, "10.0.0.20", "0.005");
    const std::uint64_t before = counter(0, encapsulated_counter());
    ASSERT_TRUE(eventually([&] { return counter(0, encapsulated_counter()) > before + 50; }, 5s));

    const std::string added[2] = {write_config(0, config_with_third_endpoint(0), "-added"),
                                  write_config(1, config_with_third_endpoint(1), "-added")};
    for (int i = 0; i < 2; ++i) {
        const auto r = ctl(i, {"reload", added[i]});
        ASSERT_TRUE(r.ok()) << r.output << logs();
        EXPECT_TRUE(contains(r.output, "+ endpoint vni 100 10.0.0.30")) << r.output;
    }
    EXPECT_TRUE(contains(ctl(1, {"reload", added[1]}).output, "no change")) << "a second identical reload writes nothing";
    EXPECT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.30"); }, 5s)) << logs();
    EXPECT_TRUE(has_tc(*nodes_[1].host, "tap-blue-30"));
    EXPECT_EQ(links_named(*nodes_[1].host, "anp"), 2u) << "a punt pair each for tap-blue-20 and tap-blue-30";
    EXPECT_TRUE(contains(ctl(1, {"status"}).output, "tap-blue-30"));

    for (int i = 0; i < 2; ++i) {
        const auto r = ctl(i, {"reload", nodes_[i].config});
        ASSERT_TRUE(r.ok()) << r.output << logs();
        EXPECT_TRUE(contains(r.output, "- endpoint vni 100 10.0.0.30")) << r.output;
    }
    EXPECT_FALSE(ping_once(*t10_, "10.0.0.30")) << "a removed endpoint must be unreachable";
    EXPECT_FALSE(has_tc(*nodes_[1].host, "tap-blue-30")) << "a removed port loses its tc program";
    EXPECT_EQ(links_named(*nodes_[1].host, "anp"), 1u) << "... and its punt pair";
    EXPECT_FALSE(contains(ctl(1, {"status"}).output, "tap-blue-30"));

    const PingTally tally = stop_long_ping(ping);
    EXPECT_TRUE(tally.stopped) << "both reloads must happen while the ping runs: " << tally.output;
    EXPECT_GT(tally.answered_through, 200u) << tally.output;
    EXPECT_EQ(tally.first_lost, 0u) << "an echo lost across the reloads\n" << tally.output << logs();
    EXPECT_EQ(counter(0, "daemon", "reloads_ok"), 2u);
    EXPECT_EQ(counter(1, "io", "ledger_violations"), 0u);
}

TEST_F(TwoNodes, BadReloadChangesNothingAndSaysWhy) {
    start_both();
    ASSERT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.20"); }, 5s)) << logs();
    const auto generation = ctl_json(0, "status").value("fabric_generation", std::uint64_t{0});
    std::string text = config_with_third_endpoint(0);
    replace_all(text, "mac = \"02:00:00:00:00:30\"", "mca = \"02:00:00:00:00:30\"");
    const std::string bad = write_config(0, text, "-bad");

    const auto r = ctl(0, {"reload", bad});
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_TRUE(contains(r.output, "unknown key \"mca\"; did you mean \"mac\"")) << r.output;
    EXPECT_TRUE(contains(r.output, "-bad.toml:")) << "the error names the file and line: " << r.output;
    EXPECT_EQ(ctl_json(0, "status").value("fabric_generation", std::uint64_t{0}), generation);
    EXPECT_FALSE(contains(ctl(0, {"fabric"}).output, "10.0.0.30"));
    EXPECT_EQ(counter(0, "daemon", "reloads_failed"), 1u);
    EXPECT_TRUE(ping_once(*t10_, "10.0.0.20"));

    // SIGHUP re-reads the running (good) config: a new generation, same fabric.
    kill(nodes_[0].daemon->pid(), SIGHUP);
    EXPECT_TRUE(eventually([&] { return counter(0, "daemon", "reloads_ok") == 1; }, 5s)) << logs();
    EXPECT_EQ(ctl_json(0, "status").value("fabric_generation", std::uint64_t{0}), generation + 1);
}

TEST_F(TwoNodes, SigkillThenRestartRecovers) {
    start_both();
    ASSERT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.20"); }, 5s)) << logs();
    Process& first = *nodes_[0].daemon;
    kill(first.pid(), SIGKILL);
    ASSERT_NE(first.wait(5s), -1);
    EXPECT_TRUE(std::filesystem::exists(pin_dir(0))) << "a SIGKILLed daemon leaves its pins";
    EXPECT_TRUE(has_xdp(*nodes_[0].host, "eth1")) << "... and its XDP program";

    Process& second = start_daemon(0);
    EXPECT_TRUE(contains(second.output(), "recovered from a previous instance")) << second.output();
    EXPECT_TRUE(contains(second.output(), "replaced")) << second.output();
    EXPECT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.20"); }, 5s)) << logs();
    EXPECT_TRUE(ctl(0, {"status"}).ok()) << "the stale control socket was replaced";
}

TEST_F(TwoNodes, StopRemovesEveryTrace) {
    start_both();
    ASSERT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.20"); }, 5s)) << logs();
    for (int i = 0; i < 2; ++i) {
        ASSERT_TRUE(std::filesystem::exists(pin_dir(i) + "/fabric"));
        ASSERT_TRUE(std::filesystem::exists(control_socket(i)));
        const int status = nodes_[i].daemon->stop(5s);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status << logs();
        EXPECT_FALSE(std::filesystem::exists(pin_dir(i))) << pin_dir(i);
        EXPECT_FALSE(std::filesystem::exists(control_socket(i))) << control_socket(i);
        EXPECT_FALSE(has_xdp(*nodes_[i].host, "eth1"));
    }
    EXPECT_FALSE(has_tc(*nodes_[0].host, "tap-blue-10"));
    EXPECT_FALSE(has_tc(*nodes_[1].host, "tap-blue-20"));
    EXPECT_FALSE(has_tc(*nodes_[0].host, "eth1"));
    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(links_named(*nodes_[i].host, "anp"), 0u) << "punt pairs are deleted on a clean stop";
        EXPECT_EQ(links_named(*nodes_[i].host, "anx"), 0u);
    }
    EXPECT_TRUE(nodes_[0].host->try_run({"ping", "-c", "1", "-W", "1", "192.168.1.2"}).ok()) << "host traffic after stop";
}

TEST_F(TwoNodes, StartupErrorsSayWhatToFix) {
    // --check: fine as shipped; a missing interface is named with the fix.
    const auto ok = nodes_[0].host->try_run({kDaemon, "-c", nodes_[0].config, "--check"});
    EXPECT_TRUE(ok.ok() && contains(ok.output, "OK")) << ok.output;
    std::string text = base_config(0);
    replace_all(text, "underlay = \"eth1\"", "underlay = \"eth9\"");
    const std::string missing = write_config(0, text, "-eth9");
    const auto check = nodes_[0].host->try_run({kDaemon, "-c", missing, "--check"});
    EXPECT_EQ(check.exit_code, 1) << check.output;
    EXPECT_TRUE(contains(check.output, "interface eth9 does not exist")) << check.output;
    const auto start = nodes_[0].host->try_run({kDaemon, "-c", missing}, 20s);
    EXPECT_EQ(start.exit_code, 1) << start.output;
    EXPECT_TRUE(contains(start.output, "eth9 does not exist") && contains(start.output, "nsenter --net")) << start.output;

    // Without root: what is missing, before anything is touched.
    const auto unprivileged = nodes_[0].host->try_run(
        {"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", kDaemon, "-c", nodes_[0].config}, 20s);
    EXPECT_EQ(unprivileged.exit_code, 1) << unprivileged.output;
    EXPECT_TRUE(contains(unprivileged.output, "andromedad needs root")) << unprivileged.output;

    start_daemon(0);

    // A second instance of a running node is refused, and the first keeps running.
    const auto twice = nodes_[0].host->try_run({kDaemon, "-c", nodes_[0].config}, 20s);
    EXPECT_EQ(twice.exit_code, 1) << twice.output;
    EXPECT_TRUE(contains(twice.output, "another andromedad for this node is running")) << twice.output;
    EXPECT_TRUE(nodes_[0].daemon->running());
    EXPECT_TRUE(ctl(0, {"status"}).ok());
}

// The threads of a daemon's process named `comm`, each with its Cpus_allowed_list.
std::vector<std::string> allowed_cpus_of_threads(pid_t pid, const std::string& comm) {
    std::vector<std::string> out;
    for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
        std::string name = read_text(task.path().string() + "/comm");
        if (!name.empty() && name.back() == '\n') name.pop_back();
        if (name != comm) continue;
        std::istringstream status(read_text(task.path().string() + "/status"));
        for (std::string line; std::getline(status, line);)
            if (line.rfind("Cpus_allowed_list:", 0) == 0) out.push_back(line.substr(line.find_first_not_of(" \t", 18)));
    }
    return out;
}

// [node] worker_cpus pins the packet worker (a named thread) to that CPU, status says so, and a
// CPU the daemon may not use is refused before anything is attached.
TEST_F(TwoNodes, WorkerCpusPinTheWorkerThreads) {
    cpu_set_t allowed;
    ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
    int cpu = -1;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &allowed)) cpu = c;  // the last CPU we may use: not the default first one
    ASSERT_GE(cpu, 0);
    std::string text = base_config(0);
    replace_all(text, "[node]\n", "[node]\nworker_cpus = [" + std::to_string(cpu) + "]\n");
    nodes_[0].config = write_config(0, text, "-pinned-cpu");
    start_both();
    const auto cpus = ctl_json(0, "status").value("worker_cpus", nlohmann::json::array());
    ASSERT_EQ(cpus.size(), 1u) << cpus.dump();
    EXPECT_EQ(cpus[0].value("cpu", -1), cpu);
    EXPECT_TRUE(cpus[0].value("pinned", false));
    EXPECT_TRUE(contains(ctl(0, {"status"}).output, "worker cpus 0:cpu" + std::to_string(cpu) + "\n"));
    EXPECT_EQ(allowed_cpus_of_threads(nodes_[0].daemon->pid(), "andromeda-w0"),
              std::vector<std::string>{std::to_string(cpu)});
    EXPECT_TRUE(ctl_json(1, "status").value("worker_cpus", nlohmann::json::array())[0].is_null()) << "node2: unpinned";
    EXPECT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.20"); }, 5s)) << logs();

    replace_all(text, "worker_cpus = [" + std::to_string(cpu) + "]", "worker_cpus = [1023]");
    const std::string bad = write_config(0, text, "-bad-cpu");
    const auto check = nodes_[0].host->try_run({kDaemon, "-c", bad, "--check"});
    EXPECT_EQ(check.exit_code, 1) << check.output;
    EXPECT_TRUE(contains(check.output, "[node] worker_cpus: CPU 1023 is not available to andromedad")) << check.output;
}

// A [[nodes]] mac pins the next hop: no neighbour lookup for that peer, and traffic uses it.
TEST_F(TwoNodes, PinnedPeerMacIsUsedWithoutTheNeighbourTable) {
    // ip, not /sys/class/net: under nsenter --net, /sys shows the root namespace's interfaces.
    const std::string link = nodes_[1].host->run({"ip", "-o", "link", "show", "eth1"});
    const auto at = link.find("link/ether ");
    ASSERT_NE(at, std::string::npos) << link;
    const std::string mac = link.substr(at + 11, 17);
    std::string text = base_config(0);
    replace_all(text, "# mac = \"02:00:00:00:a1:02\"", "mac = \"" + mac + "\"");
    ASSERT_TRUE(contains(text, "mac = \"" + mac)) << text;
    nodes_[0].config = write_config(0, text, "-pinned");
    start_both();
    const auto peers = ctl_json(0, "status").value("peers", nlohmann::json::array());
    ASSERT_EQ(peers.size(), 1u);
    EXPECT_EQ(peers[0].value("source", ""), "pinned");
    EXPECT_EQ(peers[0].value("mac", ""), mac);
    EXPECT_EQ(ctl_json(1, "status").value("peers", nlohmann::json::array())[0].value("source", ""), "neighbour");
    EXPECT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.20"); }, 5s)) << logs();
}

// `fastpath = false` on a VPC, applied by reload while a ping runs: the VPC's traffic moves to
// the pipeline (punted with punt_fastpath_off, encapsulated by the workers), status names why,
// and a reload back moves it to the fast path again; no ping is lost on the way. The nodes run
// the fast path on both registrations (the VPC knob is what this test is about).

TEST_F(TwoNodesFastPath, VpcFastpathKnobMovesItsTrafficBetweenPathsByReload) {
    start_both();
    ASSERT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.20"); }, 5s)) << logs();
    const auto port_paths = [&](int i, const std::string& port) {
        for (const auto& p : ctl_json(i, "status").value("ports", nlohmann::json::array()))
            if (p.value("name", std::string()) == port) return p.value("paths", std::string());
        return std::string("(no port ") + port + ")";
    };
    EXPECT_EQ(port_paths(0, "tap-blue-10").rfind("fast path (tc) + pipeline via anx", 0), 0u) << port_paths(0, "tap-blue-10");
    for (const auto& p : ctl_json(0, "status").value("ports", nlohmann::json::array()))
        if (p.value("name", std::string()) == "tap-blue-10") {
            EXPECT_TRUE(p.value("tc", std::string()) == "andromeda_tc_tenant (tcx)" ||
                        p.value("tc", std::string()) == "andromeda_tc_tenant (clsact)")
                << p.dump();
        }

    Process& ping = start_long_ping(topo_, *t10_, "10.0.0.20");
    std::string off[2];
    for (int i = 0; i < 2; ++i) {
        std::string text = base_config(i);
        replace_all(text, "gateway = \"10.0.0.1\"", "gateway = \"10.0.0.1\"\nfastpath = false");
        off[i] = write_config(i, text, "-vpc-off");
    }
    const std::uint64_t slow_before = counter(0, "dataplane", "encapsulated");
    for (int i = 0; i < 2; ++i) {
        const auto r = ctl(i, {"reload", off[i]});
        ASSERT_TRUE(r.ok()) << r.output << logs();
    }
    EXPECT_TRUE(contains(port_paths(0, "tap-blue-10"), "fast path off: VPC blue fastpath = false"))
        << port_paths(0, "tap-blue-10");
    EXPECT_TRUE(eventually([&] { return counter(0, "dataplane", "encapsulated") > slow_before + 50; }, 5s))
        << "the pipeline carries the VPC's traffic now\n" << logs();
    // Each daemon publishes its counters on its own schedule: the far side's count catches up.
    EXPECT_TRUE(eventually([&] { return counter(0, "fastpath", "punt_fastpath_off") > 50; }, 5s))
        << "punted because the VPC's fast path is off\n" << logs();
    EXPECT_TRUE(eventually([&] { return counter(1, "dataplane", "delivered_from_fabric") > 50; }, 5s))
        << "and decapsulated on the far side\n" << logs();

    const std::uint64_t fast_before = counter(0, "fastpath", "encap_packets");
    for (int i = 0; i < 2; ++i) {
        const auto r = ctl(i, {"reload", nodes_[i].config});
        ASSERT_TRUE(r.ok()) << r.output << logs();
    }
    EXPECT_TRUE(eventually([&] { return counter(0, "fastpath", "encap_packets") > fast_before + 50; }, 5s))
        << "back on the fast path\n" << logs();
    std::this_thread::sleep_for(200ms);  // pings on the fast path again
    const PingTally tally = stop_long_ping(ping);
    EXPECT_TRUE(tally.stopped) << "the ping ended on its own: " << tally.output;
    EXPECT_GT(tally.answered_through, 100u) << tally.output;
    EXPECT_EQ(tally.first_lost, 0u) << "an echo lost across the two reloads\n" << tally.output << logs();
}

}  // namespace
}  // namespace andromeda::testing
