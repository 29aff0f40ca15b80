// andromedad as systemd runs it, on the two-node fixture (daemon_fixture.hpp), without systemd
// (it is not PID 1 where the tests run): what the unit grants, and what andromedad reports back.
//   - with exactly the unit's capabilities (setpriv) both daemons carry traffic; without any one
//     of them andromedad refuses to start and names it;
//   - sd_notify: READY=1, RELOADING=1 (+ MONOTONIC_USEC) then READY=1 around reloads, WATCHDOG=1
//     while alive, STOPPING=1, read from a NOTIFY_SOCKET of the test's own;
//   - logs with a syslog priority per line when stderr is the journal (JOURNAL_STREAM), errors
//     at <3>; the level changed at run time;
//   - health: degraded, with the reason and a non-zero exit of health and status, when a reload
//     is refused, a port's XDP program is gone or etcd is unreachable; healthy again after.
// What needs systemd itself (the sandboxing settings, the watchdog's kill, ExecReload's exit
// status reaching `systemctl reload`) is not tested here; tests/scripts/service_unit_test.sh
// checks the unit as systemd-analyze reads it.
#include <sys/socket.h>
#include <sys/un.h>

#include <cstdio>
#include <set>

#include "daemon_fixture.hpp"

namespace andromeda::testing {
namespace {

// The capabilities the unit grants: its CapabilityBoundingSet= line, e.g. {"CAP_NET_ADMIN", ...}.
std::vector<std::string> unit_capabilities() {
    std::istringstream unit(read_text(std::string(ANDROMEDA_SOURCE_DIR) + "/configs/andromedad@.service"));
    std::vector<std::string> caps;
    for (std::string line; std::getline(unit, line);) {
        if (line.rfind("CapabilityBoundingSet=", 0) != 0) continue;
        std::istringstream words(line.substr(line.find('=') + 1));
        for (std::string cap; words >> cap;) caps.push_back(cap);
    }
    return caps;
}

// "-all,+net_admin,+net_raw" for setpriv (which names them without "CAP_").
std::string setpriv_list(const std::vector<std::string>& caps) {
    std::string out = "-all";
    for (const std::string& cap : caps) {
        std::string name = cap.substr(cap.rfind("CAP_", 0) == 0 ? 4 : 0);
        for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        out += ",+" + name;
    }
    return out;
}

// Runs what follows with exactly `caps` (inheritable, ambient and bounding, as the unit's
// AmbientCapabilities= and CapabilityBoundingSet= do for root), under a finite RLIMIT_MEMLOCK
// (what systemd gives without LimitMEMLOCK=, and all this test host allows).
std::vector<std::string> with_only(const std::vector<std::string>& caps) {
    const std::string list = setpriv_list(caps);
    return {"prlimit",
            "--memlock=8388608:8388608",
            "setpriv",
            "--inh-caps=" + list,
            "--ambient-caps=" + list,
            "--bounding-set=" + list};
}

std::uint64_t capability_mask(pid_t pid, const std::string& field) {
    std::istringstream status(read_text("/proc/" + std::to_string(pid) + "/status"));
    for (std::string line; std::getline(status, line);)
        if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1), nullptr, 16);
    return ~0ull;
}

// A datagram socket standing in for systemd's notify socket.
class NotifySocket {
public:
    explicit NotifySocket(std::string path) : path_(std::move(path)) {
        fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        path_.copy(addr.sun_path, sizeof addr.sun_path - 1);
        std::filesystem::remove(path_);
        if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
            ADD_FAILURE() << "binding " << path_ << ": " << std::strerror(errno);
    }
    ~NotifySocket() {
        if (fd_ >= 0) close(fd_);
        std::filesystem::remove(path_);
    }
    [[nodiscard]] const std::string& path() const { return path_; }
    // Every message received so far, in order.
    const std::vector<std::string>& messages() {
        char buffer[4096];
        for (ssize_t n; (n = recv(fd_, buffer, sizeof buffer, 0)) > 0;)
            messages_.emplace_back(buffer, static_cast<std::size_t>(n));
        return messages_;
    }
    // The index of the first message from `from` on that contains `text`, waiting up to `timeout`.
    std::optional<std::size_t> find(const std::string& text, std::size_t from, std::chrono::milliseconds timeout) {
        std::optional<std::size_t> at;
        eventually(
            [&] {
                const auto& all = messages();
                for (std::size_t i = from; i < all.size() && !at; ++i)
                    if (contains(all[i], text)) at = i;
                return at.has_value();
            },
            timeout);
        return at;
    }

private:
    std::string path_;
    int fd_ = -1;
    std::vector<std::string> messages_;
};

class Service : public TwoNodes {
protected:
    // Like start_daemon, with `wrapper` (a command that runs the rest) in front of andromedad.
    Process& start_wrapped(int i, const std::vector<std::string>& wrapper) {
        std::vector<std::string> argv = wrapper;
        argv.insert(argv.end(), {kDaemon, "-c", nodes_[i].config});
        Process& p = topo_.spawn(*nodes_[i].host, argv);
        nodes_[i].daemon = &p;
        if (!p.wait_for_output(" ready: ", 20s)) ADD_FAILURE() << nodes_[i].name << " did not start:\n" << p.output();
        return p;
    }

    bool pings(const Netns& from, const std::string& to) {
        return eventually([&] { return ping_once(from, to); }, 10s);
    }

    std::string write_broken_config(int i) {
        std::string text = base_config(i);
        replace_all(text, "vni = 100", "vni = 0");
        return write_config(i, text, "-broken");
    }
};

TEST_F(Service, RunsWithExactlyTheUnitsCapabilitiesAndNamesEachMissingOne) {
    const std::vector<std::string> caps = unit_capabilities();
    ASSERT_FALSE(caps.empty()) << "no CapabilityBoundingSet= in configs/andromedad@.service";
    EXPECT_EQ(std::set<std::string>(caps.begin(), caps.end()),
              (std::set<std::string>{"CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK"}))
        << "the unit's capabilities changed: verify each by hand (docs/operations.md) and update this test";
    Process& first = start_wrapped(0, with_only(caps));
    start_wrapped(1, with_only(caps));
    // The daemon really ran with that set and nothing more (setpriv did its work).
    std::uint64_t expected = 0;
    for (const auto& [name, bit] :
         {std::pair{"CAP_SYS_ADMIN", 21}, {"CAP_NET_ADMIN", 12}, {"CAP_NET_RAW", 13}, {"CAP_IPC_LOCK", 14}})
        expected |= 1ull << bit;
    EXPECT_EQ(capability_mask(first.pid(), "CapEff"), expected);
    EXPECT_EQ(capability_mask(first.pid(), "CapBnd"), expected);
    // Traffic both ways, the gateway's answers, a reload and a health check.
    EXPECT_TRUE(pings(*t10_, "10.0.0.20")) << logs();
    EXPECT_TRUE(pings(*t20_, "10.0.0.10")) << logs();
    EXPECT_TRUE(ping_once(*t10_, "10.0.0.1")) << logs();
    EXPECT_TRUE(ctl(0, {"reload"}).ok()) << logs();
    const auto health = ctl(0, {"health"});
    EXPECT_EQ(health.exit_code, 0) << health.output;
    // A stop leaves nothing behind under the reduced set too.
    EXPECT_EQ(first.stop(20s), 0) << first.output();
    EXPECT_FALSE(std::filesystem::exists(pin_dir(0))) << first.output();

    for (const std::string& missing : caps) {
        std::vector<std::string> fewer;
        for (const auto& c : caps)
            if (c != missing) fewer.push_back(c);
        std::vector<std::string> argv = with_only(fewer);
        argv.insert(argv.end(), {kDaemon, "-c", nodes_[0].config});
        const auto refused = nodes_[0].host->try_run(argv, 20s);
        EXPECT_EQ(refused.exit_code, 1) << "without " << missing << ":\n" << refused.output;
        EXPECT_TRUE(contains(refused.output, "missing " + missing + " (")) << "without " << missing << ":\n"
                                                                           << refused.output;
        EXPECT_FALSE(contains(refused.output, " ready: ")) << refused.output;
        // --check (the unit's ExecStartPre) says the same before anything is touched.
        argv.push_back("--check");
        const auto check = nodes_[0].host->try_run(argv, 20s);
        EXPECT_EQ(check.exit_code, 1) << check.output;
        EXPECT_TRUE(contains(check.output, "missing " + missing + " (")) << check.output;
        EXPECT_FALSE(std::filesystem::exists(pin_dir(0))) << "without " << missing << ": pins left behind";
    }
}

TEST_F(Service, TellsSystemdWhenReadyReloadingAndStoppingAndPingsTheWatchdog) {
    NotifySocket notify("/tmp/" + topo_.prefix() + "notify.sock");
    Process& daemon = start_wrapped(0, {"env", "NOTIFY_SOCKET=" + notify.path(), "WATCHDOG_USEC=2000000"});
    const auto ready = notify.find("READY=1", 0, 5s);
    ASSERT_TRUE(ready) << daemon.output();
    EXPECT_TRUE(contains(notify.messages()[*ready], "STATUS=node " + nodes_[0].name + ": ready"))
        << notify.messages()[*ready];
    EXPECT_TRUE(contains(daemon.output(), "systemd watchdog: pinged every second while alive; killed after 2000 ms"))
        << daemon.output();
    // Pinged from the main loop, about once a second.
    const auto first_ping = notify.find("WATCHDOG=1", *ready, 3s);
    ASSERT_TRUE(first_ping);
    EXPECT_TRUE(notify.find("WATCHDOG=1", *first_ping + 1, 3s));

    for (const bool good : {true, false}) {
        const std::size_t before = notify.messages().size();
        const auto r = good ? ctl(0, {"reload"}) : ctl(0, {"reload", write_broken_config(0)});
        EXPECT_EQ(r.exit_code, good ? 0 : 1) << r.output;
        const auto reloading = notify.find("RELOADING=1", before, 3s);
        ASSERT_TRUE(reloading) << (good ? "good" : "refused") << " reload";
        EXPECT_TRUE(contains(notify.messages()[*reloading], "MONOTONIC_USEC=")) << notify.messages()[*reloading];
        const auto done = notify.find("READY=1", *reloading + 1, 3s);
        ASSERT_TRUE(done);
        EXPECT_TRUE(contains(notify.messages()[*done], good ? "STATUS=fabric generation" : "STATUS=reload refused"))
            << notify.messages()[*done];
    }
    const std::size_t before_stop = notify.messages().size();
    EXPECT_EQ(daemon.stop(20s), 0);
    EXPECT_TRUE(notify.find("STOPPING=1", before_stop, 1s));
}

TEST_F(Service, LogLinesCarryTheirJournalPriorityAndTheLevelChangesWhileRunning) {
    // stderr is "the journal": JOURNAL_STREAM names the stream by device and inode, as systemd does.
    Process& daemon =
        start_wrapped(0, {"sh", "-c", "JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2) exec \"$0\" \"$@\""});
    EXPECT_TRUE(contains(daemon.output(), "<6>andromedad " + nodes_[0].name + " ready: ")) << daemon.output();
    const auto bad = ctl(0, {"reload", write_broken_config(0)});
    EXPECT_EQ(bad.exit_code, 1) << bad.output;
    EXPECT_TRUE(eventually([&] { return contains(daemon.output(), "<3>reload of "); }, 2s)) << daemon.output();
    // Each line of the multi-line error is an error too (journalctl -p err shows all of them).
    EXPECT_TRUE(contains(daemon.output(), "\n<3>fabric not changed: 1 error(s)")) << daemon.output();

    const auto asked = ctl(0, {"log-level"});
    EXPECT_EQ(asked.output, "log level info\n");
    const auto set = ctl(0, {"log-level", "error"});
    EXPECT_EQ(set.output, "log level error (was info)\n");
    EXPECT_TRUE(ctl(0, {"reload"}).ok());  // its info line is no longer logged
    const auto back = ctl(0, {"log-level", "info"});
    EXPECT_EQ(back.output, "log level info (was error)\n");
    EXPECT_TRUE(ctl(0, {"reload"}).ok());
    EXPECT_TRUE(eventually([&] { return contains(daemon.output(), "<6>log level info (was error)"); }, 2s));
    const std::string out = daemon.output();
    const auto quiet_from = out.find("<6>log level error (was info)");
    const auto quiet_to = out.find("<6>log level info (was error)");
    ASSERT_NE(quiet_from, std::string::npos) << out;
    ASSERT_NE(quiet_to, std::string::npos) << out;
    EXPECT_FALSE(contains(out.substr(quiet_from + 1, quiet_to - quiet_from - 1), "<6>")) << out;
    EXPECT_TRUE(contains(out.substr(quiet_to), "<6>reloaded ")) << out;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);)
        if (!line.empty()) {
            EXPECT_TRUE(line.size() > 3 && line[0] == '<' && line[2] == '>') << "no priority: " << line;
        }
    const auto unknown = ctl(0, {"log-level", "loud"});
    EXPECT_NE(unknown.exit_code, 0);
    EXPECT_TRUE(contains(unknown.output, "loud")) << unknown.output;
}

TEST_F(Service, HealthSaysWhatIsDegradedAndStatusExitsNonZero) {
    start_both();
    const auto healthy = ctl(0, {"health"});
    EXPECT_EQ(healthy.exit_code, 0) << healthy.output;
    EXPECT_EQ(healthy.output, "healthy\n");
    EXPECT_EQ(ctl(0, {"status"}).exit_code, 0);

    // A refused reload: degraded until a reload is applied.
    EXPECT_EQ(ctl(0, {"reload", write_broken_config(0)}).exit_code, 1);
    auto degraded = ctl(0, {"health"});
    EXPECT_EQ(degraded.exit_code, 3) << degraded.output;
    EXPECT_TRUE(contains(degraded.output, "reload: the last reload was refused")) << degraded.output;
    EXPECT_TRUE(contains(degraded.output, "vni")) << degraded.output;
    const auto status = ctl(0, {"status"});
    EXPECT_EQ(status.exit_code, 3) << status.output;
    EXPECT_TRUE(contains(status.output, "health DEGRADED (1 problem)")) << status.output;
    const auto status_json = ctl(0, {"status", "--json"});
    EXPECT_EQ(status_json.exit_code, 3);  // --json too
    EXPECT_EQ(nlohmann::json::parse(status_json.output, nullptr, false).value("/health/healthy"_json_pointer, true),
              false)
        << status_json.output;
    EXPECT_TRUE(ctl(0, {"reload"}).ok());
    EXPECT_EQ(ctl(0, {"health"}).exit_code, 0);

    // The underlay's XDP program removed behind the daemon's back (generic or native).
    // (Only one of the two modes is attached; detaching the other fails harmlessly.)
    (void)nodes_[0].host->try_run({"ip", "link", "set", "dev", "eth1", "xdpgeneric", "off"});
    (void)nodes_[0].host->try_run({"ip", "link", "set", "dev", "eth1", "xdpdrv", "off"});
    degraded = ctl(0, {"health"});
    EXPECT_EQ(degraded.exit_code, 3) << degraded.output;
    EXPECT_TRUE(contains(degraded.output, "port: eth1: its XDP program is no longer attached to eth1"))
        << degraded.output;
    EXPECT_EQ(ctl(1, {"health"}).exit_code, 0) << "the other node is not affected";
    const auto health_json = ctl(0, {"health", "--json"});
    EXPECT_EQ(health_json.exit_code, 3);
    const auto json = nlohmann::json::parse(health_json.output, nullptr, false);
    EXPECT_EQ(json.value("/problems/0/check"_json_pointer, std::string()), "port") << health_json.output;
}

TEST_F(Service, HealthReportsAnUnreachableEtcd) {
    // node.toml with [etcd] at a port nothing listens on: the daemon starts (the data plane never
    // waits for the store) and says it is degraded, and why.
    std::string text = "[node]\nname = \"" + nodes_[0].name + "\"\nunderlay = \"eth1\"\naddress = \"192.168.1.1\"\n" +
                       "\n[etcd]\nendpoints = [\"http://127.0.0.1:9\"]\n";
    nodes_[0].config = write_config(0, text, "-etcd");
    start_daemon(0);
    std::string output;
    EXPECT_TRUE(eventually(
        [&] {
            const auto r = ctl(0, {"health"});
            output = r.output;
            return r.exit_code == 3 && contains(r.output, "etcd: etcd unreachable");
        },
        10s))
        << output << logs();
    stop_and_check_daemon(nodes_[0].daemon, nodes_[0].name);
    std::filesystem::remove("/run/andromeda/" + nodes_[0].name + ".etcd-fabric.json");  // its cache
}

}  // namespace
}  // namespace andromeda::testing
