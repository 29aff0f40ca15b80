// A reusable network-namespace topology for integration tests, benches and end-to-end runs:
// hosts as namespaces, veth pairs between them (optionally through a bridge namespace),
// addresses, commands and long-running processes inside them.
//
// Isolation and cleanup rules:
//   - every namespace is named andro-<pid>-<role>, so parallel runs never collide;
//   - every interface and address lives inside a namespace created here: nothing touches the
//     root namespace (eth0 and friends), and no traffic can leave the machine;
//   - the destructor kills the processes and deletes the namespaces (their interfaces go with
//     them); so does a SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGABRT handler, and the next Topology
//     sweeps away namespaces left by a run that was SIGKILLed (its pid is gone).
// Commands run inside a namespace with `nsenter --net=/run/netns/<name>` (network namespace
// only: /sys/fs/bpf stays the machine's, see docs/operations.md, "On a real host").
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace andromeda::testing {

struct CommandResult {
    int exit_code = -1;  // -1 when it could not run or was killed at the timeout
    std::string output;  // stdout and stderr, interleaved
    [[nodiscard]] bool ok() const noexcept { return exit_code == 0; }
};

// Runs `argv` (no shell), killing it after `timeout`.
CommandResult run_command(const std::vector<std::string>& argv,
                          std::chrono::milliseconds timeout = std::chrono::seconds(20));

class Netns {
public:
    Netns(std::string name) : name_(std::move(name)) {}
    [[nodiscard]] const std::string& name() const noexcept { return name_; }
    [[nodiscard]] std::string path() const { return "/run/netns/" + name_; }
    // `nsenter --net=<path> argv...`.
    [[nodiscard]] CommandResult try_run(const std::vector<std::string>& argv,
                                        std::chrono::milliseconds timeout = std::chrono::seconds(20)) const;
    // Same, but a failure throws std::runtime_error carrying the command and its output.
    std::string run(const std::vector<std::string>& argv) const;

private:
    std::string name_;
};

// Puts the calling thread into a namespace until destroyed (then back where it was). Sockets
// opened meanwhile stay in that namespace; threads started meanwhile start in it.
class NetnsGuard {
public:
    explicit NetnsGuard(const Netns& ns);
    ~NetnsGuard();
    NetnsGuard(const NetnsGuard&) = delete;
    NetnsGuard& operator=(const NetnsGuard&) = delete;

private:
    int previous_fd_ = -1;
};

struct VethOptions {
    unsigned queues = 1;     // RX and TX queues on both ends
    unsigned peer_queues = 0;  // RX and TX queues on end b when not `queues`
    unsigned mtu = 1500;
    std::string mac_a;       // empty: the kernel picks one
    std::string mac_b;
    // Offloads stay at the kernel's defaults (TSO and TX checksum on): tenants run that way, and
    // a test that needs one off turns it off itself.
};

// A process started inside a namespace; stopped (SIGTERM, then SIGKILL) on destruction.
class Process {
public:
    Process(pid_t pid, std::string log_path) : pid_(pid), log_path_(std::move(log_path)) {}
    ~Process();
    Process(const Process&) = delete;
    Process& operator=(const Process&) = delete;

    [[nodiscard]] pid_t pid() const noexcept { return pid_; }
    [[nodiscard]] bool running();
    // SIGTERM, up to `grace` to exit, then SIGKILL. Returns the exit status (as waitpid's).
    int stop(std::chrono::milliseconds grace = std::chrono::seconds(3));
    // Waits for exit up to `timeout`; the exit status, or -1 when still running.
    int wait(std::chrono::milliseconds timeout);
    // Everything it wrote to stdout and stderr so far.
    [[nodiscard]] std::string output() const;
    // Waits (bounded) until its output contains `text`, e.g. a daemon's "ready" line; false on
    // timeout or when the process exits first.
    bool wait_for_output(std::string_view text, std::chrono::milliseconds timeout);

private:
    pid_t pid_;
    std::string log_path_;
    int status_ = -1;
    bool reaped_ = false;
};

class Topology {
public:
    explicit Topology();
    ~Topology();
    Topology(const Topology&) = delete;
    Topology& operator=(const Topology&) = delete;

    // A namespace andro-<pid>-<role> with lo up and IPv6 off (no router solicitations or DAD
    // frames to count in tests).
    Netns& add_namespace(std::string_view role);
    // A veth pair: `if_a` in `a`, `if_b` in `b`, both up.
    void add_veth(const Netns& a, std::string_view if_a, const Netns& b, std::string_view if_b,
                  const VethOptions& options = {});
    void add_address(const Netns& ns, std::string_view ifname, std::string_view cidr);
    // `count` hosts (andro-<pid>-host1..N), each with `ifname` plugged into one bridge in its own
    // namespace (andro-<pid>-underlay), host i addressed <subnet>.<i>/24.
    std::vector<Netns*> add_hosts_on_bridge(std::size_t count, std::string_view ifname = "eth1",
                                            std::string_view subnet = "192.168.1", const VethOptions& options = {});
    // Starts `argv` inside `ns`, output to a log file; stopped with the topology.
    Process& spawn(const Netns& ns, const std::vector<std::string>& argv);

    [[nodiscard]] const std::string& prefix() const noexcept { return prefix_; }  // "andro-<pid>-"
    [[nodiscard]] Netns* find(std::string_view role);

private:
    std::string prefix_;
    std::vector<std::unique_ptr<Netns>> namespaces_;
    std::vector<std::unique_ptr<Process>> processes_;
    int next_bridge_port_ = 0;
};

// Deletes namespaces andro-<pid>-* whose pid no longer runs; returns how many.
std::size_t sweep_stale_namespaces();

}  // namespace andromeda::testing
