// andromeda-vm-bench: issue 31's benchmarks, a virtual machine as a tenant. The same topology
// is built for each datapath:
//
//   VM 10.0.0.40 (QEMU, tap-blue-40) ─┐
//   t10 ns: eth0 10.0.0.10 ──veth─────┴ host1 ns [datapath] eth1 ══ underlay ══ eth1 host2 ns [datapath] ──veth── t20
//   ns 10.0.0.20
//
// where [datapath] is two andromedad (configs/node1.toml and node2.toml, the VM's endpoint on
// host1's tap with port_type = "tap", which andromedad creates) or the kernel's overlay
// ("kernel-vxlan": on each host a Linux bridge with a vxlan device, VNI 100, and the tenant
// ports; host1's tap made by `ip tuntap ... vnet_hdr` and bridged). Underlay MTU 1550, so
// every tenant keeps 1500.
//
//   tcp   TCP from the VM to t20 across the overlay for --seconds, with the guest's virtio-net
//         offloads on (QEMU's defaults: checksum, TSO, mergeable buffers) and off (csum, TSO and
//         ECN features cleared: the guest checksums and segments every frame itself). A fresh
//         VM per datapath and offload setting. Gbit/s as t20 received it, and the host's CPU
//         for the datapath per Gbit/s: softirq time (/proc/stat) + both andromedad + QEMU's
//         system time (the tap's transmit path, and every tc program and hop the kernel runs
//         for the VM's frames in QEMU's write to the tap, happen there). QEMU's user time is
//         the guest itself (TCG here), reported apart as guest_cpus.
//   dhcp  DHCP lease time on Andromeda's gateway: busybox udhcpc in t10 (DISCOVER, OFFER,
//         REQUEST, ACK) --leases times, 0.6 s apart (the server answers a client 4 messages a
//         second), beside busybox udhcpd serving the same client over a veth pair in the same
//         run. Milliseconds per lease, the client process included.
//   dns   DNS queries per second through the gateway's DNS from t10, --dns-window queries in
//         flight: a VPC name answered by the gateway (web.blue.internal), and a name forwarded to
//         an upstream resolver on host1's loopback (example.test); beside the same load sent
//         to that resolver directly in t10's own namespace (the upstream alone).
//
// Medians of --runs with min and max. Needs root, qemu-system-x86_64 and busybox; the VM image
// is scripts/vm-image.sh's (built into <build>/vm when out of date).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e_common.hpp"
#include "netns_topology.hpp"
#include "support/fake_resolver.hpp"
#include "support/qemu_guest.hpp"
#include "wire/dns.hpp"

namespace {

using namespace andromeda::testing;
using namespace andromeda::e2e;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr const char* kVmMac = "02:00:00:00:00:40";
constexpr const char* kVmTap = "tap-blue-40";
// The guest's offloads off: no checksum offload either way, so no TSO or ECN either (QEMU's
// features that depend on them are cleared too, explicitly).
constexpr const char* kOffloadsOff =
    "csum=off,guest_csum=off,host_tso4=off,host_tso6=off,host_ecn=off,host_ufo=off,guest_tso4=off,guest_tso6=off,"
    "guest_ecn=off,guest_ufo=off";

struct VmSettings {
    int runs = 3;
    double seconds = 6;
    int leases = 20;
    double dns_seconds = 3;
    int dns_window = 32;
    std::vector<std::string> impls = {"andromeda", "kernel-vxlan"};
    std::string tests = "tcp,dhcp,dns";
    std::string out = "bench/results/vm.json";
    [[nodiscard]] bool wants(const std::string& t) const {
        return ("," + tests + ",").find("," + t + ",") != std::string::npos;
    }
};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// utime and stime of one process, in ticks.
std::pair<double, double> user_system_ticks(pid_t pid) {
    const std::string text = read_file("/proc/" + std::to_string(pid) + "/stat");
    const auto close = text.rfind(')');
    if (close == std::string::npos) return {0, 0};
    std::istringstream in(text.substr(close + 2));
    std::string field;
    double utime = 0, stime = 0;
    for (int i = 3; i <= 15 && in >> field; ++i) {
        if (i == 14) utime = std::stod(field);
        if (i == 15) stime = std::stod(field);
    }
    return {utime, stime};
}

// Receives one TCP connection on 10.0.0.20:port in t20 and counts its bytes: after `warmup`,
// for `seconds`, then closes it (the guest's sender sees the connection end). `on_start` and
// `on_end` run in its thread at the measured interval's two ends.
class CountingReceiver {
public:
    CountingReceiver(const Netns& t20, std::uint16_t port, double warmup, double seconds, std::function<void()> on_start,
                     std::function<void()> on_end)
        : on_start_(std::move(on_start)), on_end_(std::move(on_end)) {
        NetnsGuard inside(t20);
        listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        const int one = 1;
        setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        inet_pton(AF_INET, "10.0.0.20", &a.sin_addr);
        if (listener_ < 0 || bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
            listen(listener_, 1) != 0) {
            const std::string why = std::strerror(errno);
            if (listener_ >= 0) close(listener_);
            throw std::runtime_error("receiver: bind/listen 10.0.0.20:" + std::to_string(port) + ": " + why);
        }
        thread_ = std::thread([this, warmup, seconds] { serve(warmup, seconds); });
    }
    ~CountingReceiver() {
        if (thread_.joinable()) thread_.join();
        close(listener_);
    }
    // Waits for the measurement's end (bounded by the thread's own deadlines).
    void join() {
        if (thread_.joinable()) thread_.join();
    }
    // Read after join():
    std::uint64_t bytes = 0;
    double measured_seconds = 0;
    std::string error;

private:
    void serve(double warmup, double seconds) {
        pollfd p{listener_, POLLIN, 0};
        if (poll(&p, 1, 20'000) != 1) {
            error = "no connection from the guest within 20 s";
            return;
        }
        const int fd = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) {
            error = "accept: " + std::string(std::strerror(errno));
            return;
        }
        std::vector<char> buffer(1 << 20);
        const auto start = Clock::now();
        bool measuring = false;
        Clock::time_point measure_start;
        for (;;) {
            const auto now = Clock::now();
            if (!measuring && now - start >= std::chrono::duration<double>(warmup)) {
                measuring = true;
                measure_start = now;
                on_start_();
            }
            if (measuring && now - measure_start >= std::chrono::duration<double>(seconds)) break;
            pollfd r{fd, POLLIN, 0};
            if (poll(&r, 1, 1000) <= 0) continue;
            const ssize_t n = recv(fd, buffer.data(), buffer.size(), 0);
            if (n <= 0) {
                error = "the guest's connection ended early";
                break;
            }
            if (measuring) bytes += static_cast<std::uint64_t>(n);
        }
        if (measuring) {
            measured_seconds = seconds_since(measure_start);
            on_end_();
        }
        close(fd);
    }
    std::function<void()> on_start_, on_end_;
    int listener_ = -1;
    std::thread thread_;
};

// The DNS load: `window` queries for `name` in flight to server:port from a UDP socket in
// `ns`, for `seconds`. A query unanswered for 1 s counts as lost and is replaced.
json dns_load(const Netns& ns, const std::string& server, std::uint16_t port, const std::string& name, double seconds,
              int window) {
    NetnsGuard inside(ns);
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    inet_pton(AF_INET, server.c_str(), &to.sin_addr);
    if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0)
        throw std::runtime_error("dns load: " + std::string(std::strerror(errno)));
    const auto qname = andromeda::wire::DnsName::from_text(name);
    std::vector<Clock::time_point> sent_at(65536);
    std::vector<bool> outstanding(65536, false);
    std::uint16_t next_id = 1;
    std::uint64_t answered = 0, lost = 0, errors = 0;
    std::vector<double> latencies_us;
    std::vector<std::uint8_t> query(512), answer(2048);
    const auto send_one = [&] {
        andromeda::wire::DnsHeader h;
        h.id = next_id;
        h.recursion_desired = true;
        andromeda::wire::DnsBuilder b(query, h);
        b.add_question(*qname, andromeda::wire::dns_type::kA, andromeda::wire::dns_class::kIn);
        const std::size_t length = b.finish();
        if (send(fd, query.data(), length, 0) == static_cast<ssize_t>(length)) {
            sent_at[next_id] = Clock::now();
            outstanding[next_id] = true;
        } else {
            ++errors;
        }
        next_id = static_cast<std::uint16_t>(next_id + 1 == 0 ? 1 : next_id + 1);
    };
    const auto start = Clock::now();
    const auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    int in_flight = 0;
    for (; in_flight < window; ++in_flight) send_one();
    Clock::time_point last_sweep = start;
    while (Clock::now() < end) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 10) == 1) {
            for (;;) {
                const ssize_t n = recv(fd, answer.data(), answer.size(), 0);
                if (n < 12) break;
                const std::uint16_t id = static_cast<std::uint16_t>(answer[0] << 8 | answer[1]);
                if (!outstanding[id]) continue;
                outstanding[id] = false;
                latencies_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - sent_at[id]).count());
                ++answered;
                send_one();
            }
        }
        const auto now = Clock::now();
        if (now - last_sweep > 200ms) {  // queries the server never answered: replaced
            last_sweep = now;
            for (std::size_t id = 0; id < outstanding.size(); ++id)
                if (outstanding[id] && now - sent_at[id] > 1s) {
                    outstanding[id] = false;
                    ++lost;
                    send_one();
                }
        }
    }
    const double took = seconds_since(start);
    close(fd);
    std::sort(latencies_us.begin(), latencies_us.end());
    const auto pct = [&](double q) {
        return latencies_us.empty()
                   ? 0.0
                   : latencies_us[static_cast<std::size_t>(q * static_cast<double>(latencies_us.size() - 1))];
    };
    return {{"qps", static_cast<double>(answered) / took},
            {"answered", answered},
            {"lost", lost},
            {"send_errors", errors},
            {"p50_us", pct(0.5)},
            {"p99_us", pct(0.99)},
            {"window", window}};
}

// One datapath's topology, with the VM's tap on host1.
class VmTestbed {
public:
    VmTestbed(const std::string& impl, const VmSettings& settings) : impl_(impl), settings_(settings) {
        const EastWest bed = add_east_west(topo_);
        hosts_[0] = bed.hosts[0];
        hosts_[1] = bed.hosts[1];
        t10_ = bed.t10;
        t20_ = bed.t20;
        if (impl == "andromeda")
            start_andromeda();
        else if (impl == "kernel-vxlan")
            build_kernel_vxlan();
        else
            throw std::runtime_error("unknown datapath '" + impl + "' (andromeda, kernel-vxlan)");
        const auto deadline = Clock::now() + 20s;
        while (!t10_->try_run({"ping", "-c", "1", "-W", "1", "10.0.0.20"}, 5s).ok())
            if (Clock::now() > deadline) throw std::runtime_error(impl + ": 10.0.0.10 cannot ping 10.0.0.20");
        log(impl + ": topology up");
    }
    ~VmTestbed() {
        guest_.reset();  // QEMU holds the tap
        for (Process* d : daemons_) d->stop(5s);
        for (const auto& f : files_) std::filesystem::remove(f);
    }

    // A fresh VM with its offloads on or off, addressed 10.0.0.40/24, reaching t20.
    void boot(bool offloads) {
        guest_.reset();
        QemuGuestOptions o;
        o.tap = kVmTap;
        o.mac = kVmMac;
        o.netns = hosts_[0]->name();
        if (!offloads) o.nic_properties = kOffloadsOff;
        guest_.emplace(o);
        guest_->wait_booted(120s);
        guest_->run("ip addr add 10.0.0.40/24 dev eth0 && ip link set eth0 up");
        const auto deadline = Clock::now() + 30s;
        while (!guest_->try_run("ping -c 1 -W 2 10.0.0.20", 10s).ok())
            if (Clock::now() > deadline) throw std::runtime_error(impl_ + ": the VM cannot ping 10.0.0.20");
        const std::string features = guest_->run("cat /sys/class/net/eth0/device/features");
        log(impl_ + ": VM up, offloads " + (offloads ? "on" : "off") + ", virtio features " + features.substr(0, 64));
    }

    json measure_tcp(bool offloads, std::uint16_t port) {
        std::vector<pid_t> pids;
        for (Process* d : daemons_) pids.push_back(d->pid());
        CpuSnapshot before, after;
        std::pair<double, double> qemu_before, qemu_after;
        const pid_t qemu = guest_->pid();
        CountingReceiver receiver(
            *t20_, port, 1.0, settings_.seconds,
            [&] {
                before = snapshot(pids);
                qemu_before = user_system_ticks(qemu);
            },
            [&] {
                after = snapshot(pids);
                qemu_after = user_system_ticks(qemu);
            });
        const std::uint64_t retransmits_before = guest_retransmits();
        // /dev/zero straight into nc: the guest spends nothing on producing the bytes. The
        // receiver closing the connection ends it; a sender that never learns of the close is
        // killed by the guest's own bound, and what the receiver measured still counts.
        const int bound = static_cast<int>(settings_.seconds) + 25;
        const auto sent = guest_->try_run(
            "timeout -s KILL " + std::to_string(bound) + " nc 10.0.0.20 " + std::to_string(port) + " < /dev/zero",
            std::chrono::seconds(bound + 10));
        receiver.join();
        const std::uint64_t retransmits = guest_retransmits() - retransmits_before;
        if (!receiver.error.empty() && receiver.measured_seconds <= 0)
            throw std::runtime_error(impl_ + " tcp: " + receiver.error + "; guest: " + sent.output);
        const auto d = delta(before, after);
        const double gbps = static_cast<double>(receiver.bytes) * 8 / receiver.measured_seconds / 1e9;
        const double qemu_system_ns = ticks_ns(qemu_after.second - qemu_before.second);
        const double datapath_cpus = (d.datapath_ns() + qemu_system_ns) / 1e9 / d.seconds;
        json r = {{"impl", impl_},
                  {"offloads", offloads ? "on" : "off"},
                  {"gbps", gbps},
                  {"retransmits", retransmits},
                  {"datapath_cpus", datapath_cpus},
                  {"cpu_seconds_per_gbit", gbps > 0 ? datapath_cpus / gbps : 0.0},
                  {"daemon_cpus", d.process_ns / 1e9 / d.seconds},
                  {"qemu_system_cpus", qemu_system_ns / 1e9 / d.seconds},
                  {"guest_cpus", ticks_ns(qemu_after.first - qemu_before.first) / 1e9 / d.seconds}};
        log(impl_ + " tcp: " + r.dump());
        return r;
    }

    // Andromeda's DHCP: `leases` runs of udhcpc in t10, milliseconds each.
    json measure_dhcp() { return time_udhcpc(*t10_, impl_, settings_.leases); }

    json measure_dns(const std::string& name, const std::string& kind) {
        json r = dns_load(*t10_, "10.0.0.1", 53, name, settings_.dns_seconds, settings_.dns_window);
        r["impl"] = impl_;
        r["kind"] = kind;
        log(impl_ + " dns " + kind + ": " + r.dump());
        return r;
    }

    // The upstream alone: a resolver like host1's, in t10's own namespace, queried directly.
    json measure_dns_upstream_alone() {
        std::optional<FakeResolver> direct;
        {
            NetnsGuard inside(*t10_);
            direct.emplace(udp_address("127.0.0.1", 5353), udp_address("127.0.0.2", 5353));
        }
        json r = dns_load(*t10_, "127.0.0.1", 5353, "example.test", settings_.dns_seconds, settings_.dns_window);
        r["impl"] = "upstream-alone";
        r["kind"] = "forwarded";
        log("dns upstream alone: " + r.dump());
        return r;
    }

    static json time_udhcpc(const Netns& client, const std::string& impl, int leases) {
        std::vector<double> ms;
        int failed = 0;
        for (int i = 0; i < leases; ++i) {
            // Paced: Andromeda's server answers a client 4 messages a second (a lease is two),
            // and the measurement is of a lease, not of that limit.
            if (i > 0) std::this_thread::sleep_for(600ms);
            const auto start = Clock::now();
            // -s /bin/true: the lease is taken and not applied (t10 keeps its address).
            const auto r = client.try_run({"busybox", "udhcpc", "-i", "eth0", "-n", "-q", "-f", "-s", "/bin/true", "-O",
                                           "mtu", "-t", "3", "-T", "1"},
                                          15s);
            if (r.ok())
                ms.push_back(seconds_since(start) * 1000);
            else
                ++failed;
        }
        if (ms.empty()) throw std::runtime_error(impl + " dhcp: no lease in " + std::to_string(leases) + " tries");
        std::sort(ms.begin(), ms.end());
        json r = {{"impl", impl},
                  {"lease_ms", median(ms)},
                  {"lease_ms_p90", ms[ms.size() * 9 / 10]},
                  {"leases", ms.size()},
                  {"failed", failed}};
        log(impl + " dhcp: " + r.dump());
        return r;
    }

private:
    // The guest's TCP RetransSegs (/proc/net/snmp).
    std::uint64_t guest_retransmits() {
        std::istringstream in(guest_->run("grep Tcp: /proc/net/snmp"));
        std::string names, values;
        std::getline(in, names);
        std::getline(in, values);
        std::istringstream n(names), v(values);
        std::string name, value;
        while (n >> name && v >> value)
            if (name == "RetransSegs") return std::stoull(value);
        return 0;
    }

    void start_andromeda() {
        std::string names[2];
        for (int i = 0; i < 2; ++i) names[i] = "t" + std::to_string(getpid()) + "-vm" + std::to_string(i + 1);
        {
            NetnsGuard inside(*hosts_[0]);
            hosts_[0]->run({"ip", "link", "set", "lo", "up"});
            resolver_.emplace(udp_address("127.0.0.1", 5353), udp_address("127.0.0.2", 5353));
        }
        for (int i = 0; i < 2; ++i) {
            // The DNS load is one tenant's: the gateway's per-tenant budget and the punt limit
            // raised so the service, not the budget, is what is measured.
            std::string text =
                bench_node_config(i, names,
                                  std::string("gateway_rate = 10000000\ngateway_burst = 100000\npunt_rate = 0\n") +
                                      (i == 0 ? "dns_upstreams = [\"127.0.0.1:5353\"]\n" : ""));
            replace_all(text, "port = \"tap-blue-20\"", "port = \"tap-blue-20\"\nname = \"web\"");
            text += std::string("\n[[vpc.endpoint]]\nip = \"10.0.0.40\"\nmac = \"") + kVmMac + "\"\nnode = \"" +
                    names[0] + "\"\nport = \"" + kVmTap + "\"\nport_type = \"tap\"\nname = \"vm\"\n";
            const std::string path = "/tmp/" + topo_.prefix() + "vm-node" + std::to_string(i + 1) + ".toml";
            std::ofstream(path) << text;
            files_.push_back(path);
            Process& p = topo_.spawn(*hosts_[i], {kDaemon, "-c", path});
            if (!p.wait_for_output(" ready: ", 30s))
                throw std::runtime_error(names[i] + " did not start:\n" + p.output());
            daemons_.push_back(&p);
        }
    }

    // host1's tap made as a VM host would (vnet_hdr, for the guest's offloads) and bridged with
    // its veth tenant.
    void build_kernel_vxlan() {
        hosts_[0]->run({"ip", "tuntap", "add", "dev", kVmTap, "mode", "tap", "vnet_hdr"});
        hosts_[0]->run({"ip", "link", "set", kVmTap, "up"});
        add_kernel_vxlan(*hosts_[0], "192.168.1.1", "192.168.1.2", {"tap-blue-10", kVmTap}, {"02:00:00:00:00:20"});
        add_kernel_vxlan(*hosts_[1], "192.168.1.2", "192.168.1.1", {"tap-blue-20"}, {"02:00:00:00:00:10", kVmMac});
    }

    std::string impl_;
    const VmSettings& settings_;
    Topology topo_;
    Netns* hosts_[2] = {nullptr, nullptr};
    Netns* t10_ = nullptr;
    Netns* t20_ = nullptr;
    std::vector<Process*> daemons_;
    std::vector<std::string> files_;
    std::optional<FakeResolver> resolver_;
    std::optional<QemuGuest> guest_;
};

// busybox udhcpd on a bare veth pair: the DHCP baseline, the same client and options.
json dhcp_baseline(int leases) {
    Topology topo;
    Netns& server = topo.add_namespace("dhcpd");
    Netns& client = topo.add_namespace("dhcpc");
    VethOptions v;
    v.mac_b = "02:00:00:00:00:10";
    topo.add_veth(server, "eth0", client, "eth0", v);
    topo.add_address(server, "eth0", "10.0.0.1/24");
    const std::string dir = "/tmp/" + topo.prefix() + "udhcpd";
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/udhcpd.conf") << "start 10.0.0.10\nend 10.0.0.10\ninterface eth0\nlease_file " << dir
                                        << "/leases\npidfile " << dir << "/pid\n"
                                        << "static_lease 02:00:00:00:00:10 10.0.0.10\n"
                                        << "option subnet 255.255.255.0\noption router 10.0.0.1\noption dns 10.0.0.1\n"
                                        << "option domain blue.internal\noption mtu 1500\noption lease 86400\n";
    std::ofstream(dir + "/leases").flush();
    Process& udhcpd = topo.spawn(server, {"busybox", "udhcpd", "-f", dir + "/udhcpd.conf"});
    std::this_thread::sleep_for(300ms);
    json r;
    try {
        r = VmTestbed::time_udhcpc(client, "busybox-udhcpd", leases);
    } catch (...) {
        udhcpd.stop(2s);
        std::filesystem::remove_all(dir);
        throw;
    }
    udhcpd.stop(2s);
    std::filesystem::remove_all(dir);
    return r;
}

[[noreturn]] void usage() {
    std::cerr << "usage: andromeda-vm-bench [--runs N] [--seconds S] [--leases N] [--dns-seconds S] [--dns-window N]\n"
                 "                          [--only andromeda,kernel-vxlan] [--tests tcp,dhcp,dns] [--out FILE] "
                 "[--daemon PATH]\n"
                 "                          [--check]\n";
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    VmSettings s;
    bool check = false;  // exit 1 unless every measurement carried traffic (the suite's smoke)
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&] {
            if (i + 1 >= argc) usage();
            return std::string(argv[++i]);
        };
        if (a == "--runs")
            s.runs = std::stoi(value());
        else if (a == "--seconds")
            s.seconds = std::stod(value());
        else if (a == "--leases")
            s.leases = std::stoi(value());
        else if (a == "--dns-seconds")
            s.dns_seconds = std::stod(value());
        else if (a == "--dns-window")
            s.dns_window = std::stoi(value());
        else if (a == "--tests")
            s.tests = value();
        else if (a == "--out")
            s.out = value();
        else if (a == "--daemon")
            kDaemon = value();
        else if (a == "--check")
            check = true;
        else if (a == "--only") {
            s.impls.clear();
            std::istringstream list(value());
            for (std::string impl; std::getline(list, impl, ',');) s.impls.push_back(impl);
        } else
            usage();
    }
    // What it lacks is a SKIP, unless the suite requires root tests to run (CI): then a failure.
    const char* required = std::getenv("ANDROMEDA_REQUIRE_ROOT_TESTS");
    const auto skip = [&](const std::string& why) {
        const bool fail = required != nullptr && std::string(required) == "1";
        std::cout << (fail ? "andromeda-vm-bench: cannot run (ANDROMEDA_REQUIRE_ROOT_TESTS=1): " : "SKIP: ") << why
                  << std::endl;
        return fail ? 1 : 0;
    };
    if (geteuid() != 0) return skip("andromeda-vm-bench needs root (network namespaces, taps, XDP)");
    if (const std::string missing = missing_vm_tools(); !missing.empty())
        return skip("andromeda-vm-bench needs " + missing + " (scripts/install-deps.sh installs them)");
    sweep_stale_namespaces();
    json result;
    result["runs"] = s.runs;
    result["tcp_seconds"] = s.seconds;
    result["cpu_method"] =
        "datapath_cpus = /proc/stat softirq time (tick-sampled) + utime+stime of both andromedad + QEMU's stime (the "
        "tap's transmit path and the kernel's datapath for the VM's frames run in QEMU's writes); guest_cpus = "
        "QEMU's utime (the TCG guest); cpu_seconds_per_gbit = datapath_cpus / gbps";
    std::vector<json> tcp, dhcp, dns;
    try {
        result["guest_kernel"] = build_vm_image();
        for (int run = 0; run < s.runs; ++run) {
            for (const auto& impl : s.impls) {
                VmTestbed bed(impl, s);
                if (s.wants("tcp"))
                    for (const bool offloads : {true, false}) {
                        bed.boot(offloads);
                        tcp.push_back(
                            bed.measure_tcp(offloads, static_cast<std::uint16_t>(5040 + 2 * run + (offloads ? 0 : 1))));
                    }
                if (impl != "andromeda") continue;
                if (s.wants("dhcp")) dhcp.push_back(bed.measure_dhcp());
                if (s.wants("dns")) {
                    dns.push_back(bed.measure_dns("web.blue.internal", "local"));
                    dns.push_back(bed.measure_dns("example.test", "forwarded"));
                    dns.push_back(bed.measure_dns_upstream_alone());
                }
            }
            if (s.wants("dhcp")) dhcp.push_back(dhcp_baseline(s.leases));
        }
    } catch (const std::exception& e) {
        std::cerr << "andromeda-vm-bench: " << e.what() << std::endl;
        return 1;
    }
    result["tcp"] = aggregate(tcp, {"impl", "offloads"}, {"gbps", "cpu_seconds_per_gbit"});
    result["dhcp"] = aggregate(dhcp, {"impl"}, {"lease_ms"});
    result["dns"] = aggregate(dns, {"impl", "kind"}, {"qps", "p50_us"});
    // Ratios to the baseline of the same run.
    const auto find = [](const json& rows, const std::function<bool(const json&)>& match) -> const json* {
        for (const auto& r : rows)
            if (match(r)) return &r;
        return nullptr;
    };
    json ratios = json::object();
    for (const char* off : {"on", "off"}) {
        const json* a =
            find(result["tcp"], [&](const json& r) { return r["impl"] == "andromeda" && r["offloads"] == off; });
        const json* k =
            find(result["tcp"], [&](const json& r) { return r["impl"] == "kernel-vxlan" && r["offloads"] == off; });
        if (a && k && (*k)["gbps"].get<double>() > 0)
            ratios[std::string("tcp_offloads_") + off] = (*a)["gbps"].get<double>() / (*k)["gbps"].get<double>();
    }
    const json* lease = find(result["dhcp"], [](const json& r) { return r["impl"] == "andromeda"; });
    const json* lease_base = find(result["dhcp"], [](const json& r) { return r["impl"] == "busybox-udhcpd"; });
    if (lease && lease_base)
        ratios["dhcp_lease_ms"] = (*lease)["lease_ms"].get<double>() / (*lease_base)["lease_ms"].get<double>();
    const json* fwd =
        find(result["dns"], [](const json& r) { return r["impl"] == "andromeda" && r["kind"] == "forwarded"; });
    const json* alone = find(result["dns"], [](const json& r) { return r["impl"] == "upstream-alone"; });
    if (fwd && alone)
        ratios["dns_forwarded_qps_vs_upstream_alone"] = (*fwd)["qps"].get<double>() / (*alone)["qps"].get<double>();
    result["ratios"] = ratios;
    std::cout << result.dump(2) << std::endl;
    if (!s.out.empty()) {
        if (const auto dir = std::filesystem::path(s.out).parent_path(); !dir.empty())
            std::filesystem::create_directories(dir);
        std::ofstream(s.out) << result.dump(2) << "\n";
    }
    if (check) {
        std::vector<std::string> failures;
        for (const auto& r : result["tcp"])
            if (r["gbps"].get<double>() <= 0) failures.push_back("tcp " + r.dump());
        for (const auto& r : result["dhcp"])
            if (r["failed"].get<double>() > 0) failures.push_back("dhcp " + r.dump());
        for (const auto& r : result["dns"])
            if (r["qps"].get<double>() <= 0 || r["lost"].get<double>() > 0) failures.push_back("dns " + r.dump());
        for (const auto& f : failures) std::cerr << "andromeda-vm-bench --check: " << f << std::endl;
        if (!failures.empty()) return 1;
    }
    return 0;
}
