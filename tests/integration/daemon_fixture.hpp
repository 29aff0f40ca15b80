// Two andromedad instances on real namespaces, as a user runs them (docs/operations.md):
//
//   t10 ns: eth0 10.0.0.10 ──veth── host1 ns: tap-blue-10  eth1 192.168.1.1 ─┐
//                                                                           bridge (underlay ns)
//   t20 ns: eth0 10.0.0.20 ──veth── host2 ns: tap-blue-20  eth1 192.168.1.2 ─┘
//   t30 ns: eth0 10.0.0.30 ──veth── host2 ns: tap-blue-30   (in no config until a reload adds it)
//
// Each daemon runs the shipped configs/node<N>.toml with the node names made unique per run
// (t<pid>-node1, ...), so pin directories and control sockets never collide with another run.
// Everything is created inside namespaces of the Topology and removed with it.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fast_path_mode.hpp"
#include "io_test_support.hpp"
#include "netns_topology.hpp"
#include "support/root.hpp"

namespace andromeda::testing {

using namespace std::chrono_literals;

inline const std::string kDaemon = ANDROMEDAD_PATH;
inline const std::string kCtl = ANDROMEDACTL_PATH;

// Polls `done` until it holds or `timeout` passes; the result of the last poll.
inline bool eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (done()) return true;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(20ms);
    }
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

inline std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

inline void replace_all(std::string& text, const std::string& from, const std::string& to) {
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
}

// Control sockets of earlier runs (t<pid>-*) that were killed before they could clean up.
inline void sweep_stale_control_sockets() {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/run/andromeda", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.size() < 2 || name[0] != 't' || entry.path().extension() != ".sock") continue;
        const auto pid = static_cast<pid_t>(std::strtol(name.c_str() + 1, nullptr, 10));
        if (pid > 0 && pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH) std::filesystem::remove(entry.path(), ec);
    }
}

// A sanitizer's report in a daemon's output (the ASan+UBSan and TSan builds run the daemons
// instrumented too): its first line, or empty.
inline std::string sanitizer_report(const std::string& output) {
    for (const char* marker : {"WARNING: ThreadSanitizer", "ERROR: AddressSanitizer", "runtime error:"}) {
        if (const auto at = output.find(marker); at != std::string::npos)
            return output.substr(at, output.find('\n', at) - at);
    }
    return "";
}

// Stops a daemon the test left running (SIGTERM, as an operator would; the sanitizers report
// on the way out too) and fails the test if a sanitizer reported anything while it ran.
inline void stop_and_check_daemon(Process* daemon, const std::string& name) {
    if (daemon == nullptr) return;
    if (daemon->running()) daemon->stop(std::chrono::seconds(20));
    const std::string output = daemon->output();
    if (const auto report = sanitizer_report(output); !report.empty())
        ADD_FAILURE() << name << ": " << report << "\n" << output;
}

class TwoNodes : public ::testing::Test {
protected:
    struct Node {
        std::string name;        // t<pid>-node<N>
        std::string config;      // the running config file
        Netns* host = nullptr;
        Process* daemon = nullptr;
    };

    void SetUp() override {
        ANDROMEDA_REQUIRE_ROOT();
        sweep_stale_control_sockets();
        io::testing::sweep_stale_test_pins();
        VethOptions underlay;
        underlay.queues = underlay_queues();
        auto hosts = topo_.add_hosts_on_bridge(2, "eth1", "192.168.1", underlay);
        for (int i = 0; i < 2; ++i) {
            nodes_[i].name = "t" + std::to_string(getpid()) + "-node" + std::to_string(i + 1);
            nodes_[i].host = hosts[i];
        }
        for (int i = 0; i < 2; ++i) nodes_[i].config = write_config(i, base_config(i));
        t10_ = &add_tenant(*hosts[0], "tap-blue-10", "10");
        t20_ = &add_tenant(*hosts[1], "tap-blue-20", "20");
        t30_ = &add_tenant(*hosts[1], "tap-blue-30", "30");
    }

    // RX (and TX) queues of each host's underlay veth: andromedad runs one worker per RX queue.
    virtual unsigned underlay_queues() const { return 1; }
    // Whether the daemons run the kernel fast path (fast_path_mode.hpp).
    virtual bool fast_path() const { return fast_path_on(); }

    void TearDown() override {
        for (const auto& n : nodes_) stop_and_check_daemon(n.daemon, n.name);
        for (const auto& path : files_) std::filesystem::remove(path);
    }

    Netns& add_tenant(const Netns& host, const std::string& port, const std::string& octet) {
        Netns& tenant = topo_.add_namespace("t" + octet);
        VethOptions veth;
        veth.mac_b = "02:00:00:00:00:" + octet;  // the endpoint's MAC in the configs
        topo_.add_veth(host, port, tenant, "eth0", veth);
        topo_.add_address(tenant, "eth0", "10.0.0." + octet + "/24");
        return tenant;
    }

    // configs/node<i+1>.toml with this run's node names.
    std::string base_config(int i) const {
        std::string text = read_text(std::string(ANDROMEDA_SOURCE_DIR) + "/configs/node" + std::to_string(i + 1) + ".toml");
        for (int n = 0; n < 2; ++n) replace_all(text, "\"node" + std::to_string(n + 1) + "\"", "\"" + nodes_[n].name + "\"");
        return text;
    }

    // The same fabric plus endpoint 10.0.0.30 on node2 (port tap-blue-30).
    std::string config_with_third_endpoint(int i) const {
        return base_config(i) + "\n[[vpc.endpoint]]\nip = \"10.0.0.30\"\nmac = \"02:00:00:00:00:30\"\nnode = \"" +
               nodes_[1].name + "\"\nport = \"tap-blue-30\"\n";
    }

    // Node i's address on an IPv6 underlay (move_underlay_to_ipv6).
    static std::string underlay6(int i) { return "fd00:1::" + std::to_string(i + 1); }

    // Moves the underlay to IPv6: each host's eth1 (and only it) gets IPv6 and fd00:1::<n>/64, and
    // both configs name those addresses instead of 192.168.1.<n>. Call once the configs are written.
    void move_underlay_to_ipv6() {
        // No MLD querier on the test bed's bridge: Neighbor Solicitations are flooded, not snooped.
        topo_.find("underlay")->run({"ip", "link", "set", "br0", "type", "bridge", "mcast_snooping", "0"});
        for (int i = 0; i < 2; ++i) {
            Netns& host = *nodes_[i].host;
            host.run({"sysctl", "-q", "-w", "net.ipv6.conf.eth1.accept_dad=0", "net.ipv6.conf.eth1.disable_ipv6=0"});
            host.run({"ip", "-6", "addr", "add", underlay6(i) + "/64", "dev", "eth1", "nodad"});
            std::string text = read_text(nodes_[i].config);
            for (int n = 0; n < 2; ++n)
                replace_all(text, "\"192.168.1." + std::to_string(n + 1) + "\"", "\"" + underlay6(n) + "\"");
            std::ofstream(nodes_[i].config) << text;
        }
    }

    // Written with this run's path (fast_path_mode.hpp; fast_path() of the fixture).
    std::string write_config(int i, const std::string& text, const std::string& tag = "") {
        const std::string path = "/tmp/" + topo_.prefix() + "node" + std::to_string(i + 1) + tag + ".toml";
        std::ofstream(path) << with_path_mode(text, fast_path());
        files_.push_back(path);
        return path;
    }

    Process& start_daemon(int i) {
        Process& p = topo_.spawn(*nodes_[i].host, {kDaemon, "-c", nodes_[i].config});
        nodes_[i].daemon = &p;
        if (!p.wait_for_output(" ready: ", 20s)) ADD_FAILURE() << nodes_[i].name << " did not start:\n" << p.output();
        return p;
    }

    void start_both() {
        start_daemon(0);
        start_daemon(1);
    }

    CommandResult ctl(int i, const std::vector<std::string>& args, std::chrono::milliseconds timeout = 20s) const {
        std::vector<std::string> argv = {kCtl, "--node", nodes_[i].name};
        argv.insert(argv.end(), args.begin(), args.end());
        return run_command(argv, timeout);
    }

    nlohmann::json ctl_json(int i, const std::string& command) const {
        const auto r = ctl(i, {command, "--json"});
        // status and health exit 3 when the daemon is degraded; their JSON is whole all the same.
        const bool degraded = r.exit_code == 3 && (command == "status" || command == "health");
        if (!r.ok() && !degraded) {
            ADD_FAILURE() << "andromedactl " << command << ": " << r.output;
            return nlohmann::json::object();
        }
        return nlohmann::json::parse(r.output, nullptr, false);
    }

    std::uint64_t counter(int i, const std::string& group, const std::string& name) const {
        const auto stats = ctl_json(i, "stats");
        return stats.value(nlohmann::json::json_pointer("/" + group + "/" + name), std::uint64_t{0});
    }
    std::uint64_t counter(int i, PathCounter c) const { return counter(i, c.group, c.name); }

    static bool ping_once(const Netns& from, const std::string& to) {
        return from.try_run({"ping", "-c", "1", "-W", "1", to}, 5s).ok();
    }

    std::string pin_dir(int i) const { return "/sys/fs/bpf/andromeda/" + nodes_[i].name; }
    std::string control_socket(int i) const { return "/run/andromeda/" + nodes_[i].name + ".sock"; }

    std::string logs() const {
        std::string out;
        for (const auto& n : nodes_)
            if (n.daemon != nullptr) out += "---- " + n.name + " ----\n" + n.daemon->output();
        return out;
    }


    Topology topo_;
    Node nodes_[2];
    Netns* t10_ = nullptr;
    Netns* t20_ = nullptr;
    Netns* t30_ = nullptr;
    std::vector<std::string> files_;
};

// For tests of the fast path itself: the nodes run it on both registrations (the .slowpath one
// leaves suites named *FastPath out, tests/integration/CMakeLists.txt).
class TwoNodesFastPath : public TwoNodes {
protected:
    bool fast_path() const override { return true; }
};

}  // namespace andromeda::testing
