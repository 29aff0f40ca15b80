#include "netns_topology.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace andromeda::testing {

namespace {

using Clock = std::chrono::steady_clock;

// What a signal handler must clean up, in storage it can walk without allocating or locking.
constexpr std::size_t kSlots = 256;
constexpr std::size_t kPathSize = 128;
std::array<std::array<char, kPathSize>, kSlots> g_netns_paths{};
std::array<std::atomic<pid_t>, kSlots> g_pids{};
std::mutex g_registry_mutex;

void delete_netns_path(const char* path) noexcept {
    umount2(path, MNT_DETACH);
    unlink(path);
}

// Async-signal-safe: kill, umount2 and unlink only.
void cleanup_everything() noexcept {
    for (auto& pid : g_pids)
        if (const pid_t p = pid.exchange(0); p > 0) kill(p, SIGKILL);
    for (auto& path : g_netns_paths)
        if (path[0] != '\0') {
            delete_netns_path(path.data());
            path[0] = '\0';
        }
}

void on_fatal_signal(int sig) {
    cleanup_everything();
    signal(sig, SIG_DFL);
    raise(sig);
}

void install_cleanup_handlers() {
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction action {};
        action.sa_handler = on_fatal_signal;
        sigemptyset(&action.sa_mask);
        for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT}) sigaction(sig, &action, nullptr);
        std::atexit(cleanup_everything);
    });
}

void register_netns(const std::string& path) {
    if (path.size() >= kPathSize) throw std::runtime_error("namespace path too long: " + path);
    std::lock_guard lock(g_registry_mutex);
    for (auto& slot : g_netns_paths)
        if (slot[0] == '\0') {
            std::memcpy(slot.data(), path.c_str(), path.size() + 1);
            return;
        }
    throw std::runtime_error("too many test namespaces");
}

void forget_netns(const std::string& path) {
    std::lock_guard lock(g_registry_mutex);
    for (auto& slot : g_netns_paths)
        if (path == slot.data()) slot[0] = '\0';
}

void register_pid(pid_t pid) {
    for (auto& slot : g_pids) {
        pid_t expected = 0;
        if (slot.compare_exchange_strong(expected, pid)) return;
    }
}

void forget_pid(pid_t pid) {
    for (auto& slot : g_pids) {
        pid_t expected = pid;
        slot.compare_exchange_strong(expected, 0);
    }
}

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
    std::vector<char*> out;
    for (const auto& a : argv) out.push_back(const_cast<char*>(a.c_str()));
    out.push_back(nullptr);
    return out;
}

std::string joined(const std::vector<std::string>& argv) {
    std::string out;
    for (const auto& a : argv) out += (out.empty() ? "" : " ") + a;
    return out;
}

void check(const CommandResult& r, const std::vector<std::string>& argv) {
    if (!r.ok())
        throw std::runtime_error("`" + joined(argv) + "` failed (exit " + std::to_string(r.exit_code) + "): " + r.output);
}

std::vector<std::string> nsenter(const Netns& ns, const std::vector<std::string>& argv) {
    std::vector<std::string> full = {"nsenter", "--net=" + ns.path()};
    full.insert(full.end(), argv.begin(), argv.end());
    return full;
}

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
    CommandResult result;
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) return result;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    pid_t pid = -1;
    auto args = c_argv(argv);
    const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(pipe_fds[1]);
    if (rc != 0) {
        close(pipe_fds[0]);
        result.output = std::string("cannot run ") + argv[0] + ": " + std::strerror(rc);
        return result;
    }
    const auto deadline = Clock::now() + timeout;
    char buffer[4096];
    bool killed = false;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        pollfd pfd{pipe_fds[0], POLLIN, 0};
        if (left <= 0 || poll(&pfd, 1, static_cast<int>(left)) == 0) {
            kill(pid, SIGKILL);
            killed = true;
            result.output += "\n[killed after " + std::to_string(timeout.count()) + " ms]";
            break;
        }
        const ssize_t n = read(pipe_fds[0], buffer, sizeof buffer);
        if (n <= 0) break;
        result.output.append(buffer, static_cast<std::size_t>(n));
    }
    close(pipe_fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    result.exit_code = WIFEXITED(status) && !killed ? WEXITSTATUS(status) : -1;
    return result;
}

CommandResult Netns::try_run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) const {
    return run_command(nsenter(*this, argv), timeout);
}

std::string Netns::run(const std::vector<std::string>& argv) const {
    const auto full = nsenter(*this, argv);
    auto result = run_command(full);
    check(result, full);
    return result.output;
}

NetnsGuard::NetnsGuard(const Netns& ns) {
    previous_fd_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    const int fd = open(ns.path().c_str(), O_RDONLY | O_CLOEXEC);
    const bool entered = previous_fd_ >= 0 && fd >= 0 && setns(fd, CLONE_NEWNET) == 0;
    const int error = errno;
    if (fd >= 0) close(fd);
    if (!entered) {
        if (previous_fd_ >= 0) close(previous_fd_);
        throw std::runtime_error("cannot enter " + ns.path() + ": " + std::strerror(error));
    }
}

NetnsGuard::~NetnsGuard() {
    setns(previous_fd_, CLONE_NEWNET);
    close(previous_fd_);
}

Process::~Process() {
    stop();
    std::error_code ec;
    std::filesystem::remove(log_path_, ec);
}

bool Process::running() { return wait(std::chrono::milliseconds(0)) == -1; }

int Process::wait(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (!reaped_) {
        int status = 0;
        const pid_t r = waitpid(pid_, &status, WNOHANG);
        if (r == pid_ || (r < 0 && errno == ECHILD)) {
            reaped_ = true;
            status_ = r == pid_ ? status : -1;
            forget_pid(pid_);
            break;
        }
        if (Clock::now() >= deadline) return -1;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return status_;
}

int Process::stop(std::chrono::milliseconds grace) {
    if (reaped_) return status_;
    kill(pid_, SIGTERM);
    if (wait(grace) != -1) return status_;
    kill(pid_, SIGKILL);
    return wait(std::chrono::seconds(5));
}

std::string Process::output() const {
    std::ifstream in(log_path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

bool Process::wait_for_output(std::string_view text, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        if (output().find(text) != std::string::npos) return true;
        if (Clock::now() >= deadline || !running()) return output().find(text) != std::string::npos;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

Topology::Topology() : prefix_("andro-" + std::to_string(getpid()) + "-") {
    install_cleanup_handlers();
    sweep_stale_namespaces();
}

Topology::~Topology() {
    processes_.clear();
    for (auto it = namespaces_.rbegin(); it != namespaces_.rend(); ++it) {
        delete_netns_path((*it)->path().c_str());
        forget_netns((*it)->path());
    }
}

Netns* Topology::find(std::string_view role) {
    for (auto& ns : namespaces_)
        if (ns->name() == prefix_ + std::string(role)) return ns.get();
    return nullptr;
}

Netns& Topology::add_namespace(std::string_view role) {
    auto ns = std::make_unique<Netns>(prefix_ + std::string(role));
    const std::vector<std::string> add = {"ip", "netns", "add", ns->name()};
    check(run_command(add), add);
    register_netns(ns->path());
    namespaces_.push_back(std::move(ns));
    Netns& created = *namespaces_.back();
    created.run({"ip", "link", "set", "lo", "up"});
    created.run({"sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"});
    return created;
}

void Topology::add_veth(const Netns& a, std::string_view if_a, const Netns& b, std::string_view if_b,
                        const VethOptions& options) {
    const auto end_options = [&](const std::string& mac, unsigned queues) {
        std::vector<std::string> o = {"mtu", std::to_string(options.mtu), "numtxqueues", std::to_string(queues),
                                      "numrxqueues", std::to_string(queues)};
        if (!mac.empty()) o.insert(o.end(), {"address", mac});
        return o;
    };
    std::vector<std::string> cmd = {"ip", "-n", a.name(), "link", "add", std::string(if_a)};
    for (auto& o : end_options(options.mac_a, options.queues)) cmd.push_back(o);
    cmd.insert(cmd.end(), {"type", "veth", "peer", "name", std::string(if_b), "netns", b.name()});
    for (auto& o : end_options(options.mac_b, options.peer_queues != 0 ? options.peer_queues : options.queues))
        cmd.push_back(o);
    check(run_command(cmd), cmd);
    for (const auto& [ns, ifname] : {std::pair{&a, if_a}, std::pair{&b, if_b}})
        ns->run({"ip", "link", "set", std::string(ifname), "up"});
}

void Topology::add_address(const Netns& ns, std::string_view ifname, std::string_view cidr) {
    ns.run({"ip", "addr", "add", std::string(cidr), "dev", std::string(ifname)});
}

std::vector<Netns*> Topology::add_hosts_on_bridge(std::size_t count, std::string_view ifname, std::string_view subnet,
                                                  const VethOptions& options) {
    Netns* underlay = find("underlay");
    if (underlay == nullptr) {
        underlay = &add_namespace("underlay");
        underlay->run({"ip", "link", "add", "br0", "type", "bridge"});
        underlay->run({"ip", "link", "set", "br0", "up"});
    }
    std::vector<Netns*> hosts;
    for (std::size_t i = 1; i <= count; ++i) {
        Netns& host = add_namespace("host" + std::to_string(++next_bridge_port_));
        const std::string port = "p" + std::to_string(next_bridge_port_);
        add_veth(host, ifname, *underlay, port, options);
        underlay->run({"ip", "link", "set", port, "master", "br0"});
        add_address(host, ifname, std::string(subnet) + "." + std::to_string(next_bridge_port_) + "/24");
        hosts.push_back(&host);
    }
    return hosts;
}

Process& Topology::spawn(const Netns& ns, const std::vector<std::string>& argv) {
    const std::string log_path = "/tmp/" + prefix_ + "process-" + std::to_string(processes_.size()) + ".log";
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    const auto full = nsenter(ns, argv);
    auto args = c_argv(full);
    pid_t pid = -1;
    const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error("cannot start `" + joined(full) + "`: " + std::strerror(rc));
    register_pid(pid);
    processes_.push_back(std::make_unique<Process>(pid, log_path));
    return *processes_.back();
}

std::size_t sweep_stale_namespaces() {
    std::size_t removed = 0;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/run/netns", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("andro-", 0) != 0) continue;
        const pid_t pid = static_cast<pid_t>(std::strtol(name.c_str() + 6, nullptr, 10));
        if (pid <= 0 || pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH) continue;
        delete_netns_path(entry.path().c_str());
        ++removed;
    }
    return removed;
}

}  // namespace andromeda::testing
