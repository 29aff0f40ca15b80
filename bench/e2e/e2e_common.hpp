// What the end-to-end harness's scenarios share (bench/e2e/e2e_harness.cpp, north_south.cpp):
// its settings, the tools' paths, CPU accounting from /proc, the tools' JSON lines, and the
// aggregation of runs into medians.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "netns_topology.hpp"

namespace andromeda::e2e {

using andromeda::testing::Netns;
using nlohmann::json;

inline std::string kDaemon = ANDROMEDAD_PATH;  // --daemon replaces it (A/B runs of two builds)
inline const std::string kGen = XSKGEN_PATH;
inline const std::string kSink = XDPSINK_PATH;
inline const std::string kRr = UDPRR_PATH;
inline const std::string kCrr = TCPCRR_PATH;
inline const std::string kForward = FORWARD_PATH;

struct Settings {
    bool quick = false;
    int runs = 3;
    double pps_seconds = 8, tcp_seconds = 8, latency_seconds = 8;
    double rate = 10000;       // latency requests per second
    double cpu_rate = 50000;   // the fixed offered load for the CPU-per-packet comparison
    unsigned flows = 16;
    std::string out = "bench/results/e2e.json";
    std::vector<std::string> impls = {"andromeda", "andromeda-slow", "kernel-vxlan"};
    // generator, pps, cpu and bpf are east-west's alone, ping and crr north-south's (north_south.hpp).
    std::string tests = "generator,pps,cpu,bpf,tcp,latency,latency-fifo,ping,crr";
    unsigned crr_concurrency = 8;  // connections in flight for the connection rate (crr)
    // Run andromedad, the generator, iperf3 and the latency tool under SCHED_FIFO, so a loaded
    // machine's run queue does not decide the figures (the kernel's own datapath runs in softirq,
    // ahead of every task, either way). For runs on a shared machine.
    bool realtime = false;
    // The tenants dual-stack (issue 30): TCP and ping over IPv6, between fd00::1:0:ff:fe00:10 and
    // :20 (Andromeda: SLAAC from the gateway's RA; the kernel's VXLAN: the same addresses, static).
    bool ipv6 = false;
    // The underlay IPv6 (fd00:1::1 and ::2, MTU 1570 so tenants keep 1500): Andromeda (fast path
    // and pipeline over IPv6) against the kernel's VXLAN over IPv6.
    bool ipv6_underlay = false;
    // Seconds between pings (ping -i). 5 ms leaves the CPUs idle between echoes, as a tenant's
    // occasional packet finds them; 0 sends the next echo as soon as the last one returns, so
    // the RTT is the datapaths' own work with caches and CPUs awake.
    double ping_interval = 0.005;
    [[nodiscard]] bool wants(const std::string& test) const { return ("," + tests + ",").find("," + test + ",") != std::string::npos; }
    [[nodiscard]] std::vector<std::string> prefix() const {
        return realtime ? std::vector<std::string>{"chrt", "-f", "20"} : std::vector<std::string>{};
    }
};

inline std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

inline std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

inline void log(const std::string& line) { std::cerr << "e2e: " << line << std::endl; }

// Jiffies (USER_HZ) to nanoseconds.
inline double ticks_ns(double ticks) { return ticks * 1e9 / static_cast<double>(sysconf(_SC_CLK_TCK)); }

// The "cpu" line of /proc/stat: user nice system idle iowait irq softirq steal.
inline std::vector<double> proc_stat_cpu() {
    std::istringstream in(read_file("/proc/stat"));
    std::string label;
    in >> label;
    std::vector<double> v;
    double x = 0;
    for (int i = 0; i < 8 && in >> x; ++i) v.push_back(x);
    v.resize(8, 0);
    return v;
}

// utime + stime of a process (all its threads), in ticks.
inline double process_ticks(pid_t pid) {
    const std::string text = read_file("/proc/" + std::to_string(pid) + "/stat");
    const auto close = text.rfind(')');
    if (close == std::string::npos) return 0;
    std::istringstream in(text.substr(close + 2));
    std::string field;
    double utime = 0, stime = 0;
    for (int i = 3; i <= 15 && in >> field; ++i) {  // field 3 is the state
        if (i == 14) utime = std::stod(field);
        if (i == 15) stime = std::stod(field);
    }
    return utime + stime;
}

// Run time of every ksoftirqd thread (/proc/<pid>/schedstat, nanoseconds): softirq work the
// kernel deferred out of the context that raised it.
inline double ksoftirqd_ns() {
    double sum = 0;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        if (read_file(entry.path().string() + "/comm").rfind("ksoftirqd/", 0) != 0) continue;
        std::istringstream in(read_file(entry.path().string() + "/schedstat"));
        double runtime = 0;
        if (in >> runtime) sum += runtime;
    }
    return sum;
}

struct CpuSnapshot {
    std::vector<double> stat;
    double processes = 0;
    double ksoftirqd = 0;
    std::chrono::steady_clock::time_point at;
};

inline CpuSnapshot snapshot(const std::vector<pid_t>& pids) {
    CpuSnapshot s;
    s.stat = proc_stat_cpu();
    for (const pid_t p : pids) s.processes += process_ticks(p);
    s.ksoftirqd = ksoftirqd_ns();
    s.at = std::chrono::steady_clock::now();
    return s;
}

struct CpuDelta {
    // softirq_ns: /proc/stat's softirq column, sampled at each timer tick (indicative only);
    // process_ns: utime+stime of the andromedad processes (the kernel scales them to the
    // scheduler's exact run time); ksoftirqd_ns: exact.
    double softirq_ns = 0, process_ns = 0, ksoftirqd_ns = 0, system_ns = 0, busy_ns = 0, seconds = 0;
    [[nodiscard]] double datapath_ns() const { return softirq_ns + process_ns; }
};

inline CpuDelta delta(const CpuSnapshot& a, const CpuSnapshot& b) {
    CpuDelta d;
    d.softirq_ns = ticks_ns(b.stat[6] - a.stat[6]);
    d.system_ns = ticks_ns(b.stat[2] - a.stat[2]);
    d.busy_ns = ticks_ns((b.stat[0] + b.stat[1] + b.stat[2] + b.stat[5] + b.stat[6]) -
                         (a.stat[0] + a.stat[1] + a.stat[2] + a.stat[5] + a.stat[6]));
    d.process_ns = ticks_ns(b.processes - a.processes);
    d.ksoftirqd_ns = b.ksoftirqd - a.ksoftirqd;
    d.seconds = std::chrono::duration<double>(b.at - a.at).count();
    return d;
}

// The last line of `text` that parses as a JSON object.
inline json last_json(const std::string& text) {
    std::istringstream in(text);
    std::string line;
    json found = json::object();
    while (std::getline(in, line)) {
        if (line.empty() || line[0] != '{') continue;
        auto j = json::parse(line, nullptr, false);
        if (!j.is_discarded()) found = j;
    }
    return found;
}

inline void replace_all(std::string& text, const std::string& from, const std::string& to) {
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) text.replace(at, from.size(), to);
}

// The east-west topology's tenant t<octet>: a namespace whose eth0 (10.0.0.<octet>/24, MAC
// 02:00:00:00:00:<octet>) is the peer of `host`'s tenant port tap-blue-<octet>.
inline Netns& add_bench_tenant(andromeda::testing::Topology& topo, const Netns& host, const std::string& octet) {
    Netns& tenant = topo.add_namespace("t" + octet);
    andromeda::testing::VethOptions veth;
    veth.mac_b = "02:00:00:00:00:" + octet;
    topo.add_veth(host, "tap-blue-" + octet, tenant, "eth0", veth);
    topo.add_address(tenant, "eth0", "10.0.0." + octet + "/24");
    return tenant;
}

// The east-west topology: host1 and host2 with eth1 on one underlay bridge (192.168.1.1 and .2,
// MTU 1550, so tenants keep 1500), t10 on host1 and t20 on host2 (add_bench_tenant).
struct EastWest {
    Netns* hosts[2] = {nullptr, nullptr};
    Netns* t10 = nullptr;
    Netns* t20 = nullptr;
};
inline EastWest add_east_west(andromeda::testing::Topology& topo, unsigned underlay_mtu = 1550) {
    andromeda::testing::VethOptions underlay;
    underlay.mtu = underlay_mtu;
    const auto hosts = topo.add_hosts_on_bridge(2, "eth1", "192.168.1", underlay);
    EastWest e;
    e.hosts[0] = hosts[0];
    e.hosts[1] = hosts[1];
    e.t10 = &add_bench_tenant(topo, *hosts[0], "10");
    e.t20 = &add_bench_tenant(topo, *hosts[1], "20");
    return e;
}

// configs/node<i+1>.toml for a run: both nodes renamed to `names` (unique per run), the underlay
// at 1550 (tenants keep 1500), and `node_lines` added to [node].
inline std::string bench_node_config(int i, const std::string (&names)[2], const std::string& node_lines,
                                     unsigned underlay_mtu = 1550) {
    std::string text = read_file(std::string(ANDROMEDA_SOURCE_DIR) + "/configs/node" + std::to_string(i + 1) + ".toml");
    if (text.empty()) throw std::runtime_error("cannot read configs/node" + std::to_string(i + 1) + ".toml");
    for (int n = 0; n < 2; ++n) replace_all(text, "\"node" + std::to_string(n + 1) + "\"", "\"" + names[n] + "\"");
    replace_all(text, "[node]\n", "[node]\nunderlay_mtu = " + std::to_string(underlay_mtu) + "\n" + node_lines);
    return text;
}

// The kernel's overlay on one host (the baseline): a bridge br0 with `ports` and a vxlan device
// (VNI 100, port 4789, from `local` over eth1); broadcast and unknown go to `remote`, and so do
// `remote_macs` (static FDB entries).
inline void add_kernel_vxlan(const Netns& h, const std::string& local, const std::string& remote,
                             const std::vector<std::string>& ports, const std::vector<std::string>& remote_macs) {
    h.run({"ip", "link", "add", "br0", "type", "bridge"});
    h.run({"ip", "link", "add", "vx0", "type", "vxlan", "id", "100", "dstport", "4789", "local", local, "dev", "eth1",
           "nolearning"});
    h.run({"ip", "link", "set", "vx0", "mtu", "1500", "master", "br0", "up"});
    for (const auto& port : ports) h.run({"ip", "link", "set", port, "master", "br0"});
    h.run({"ip", "link", "set", "br0", "up"});
    h.run({"bridge", "fdb", "append", "00:00:00:00:00:00", "dev", "vx0", "dst", remote});
    for (const auto& mac : remote_macs) {
        h.run({"bridge", "fdb", "add", mac, "dev", "vx0", "dst", remote});
        h.run({"bridge", "fdb", "replace", mac, "dev", "vx0", "master", "static"});
    }
}

inline std::uint64_t rx_packets(const Netns& ns, const std::string& ifname) {
    const auto r = ns.try_run({"ip", "-s", "-j", "link", "show", ifname});
    const auto j = json::parse(r.output, nullptr, false);
    if (j.is_discarded() || !j.is_array() || j.empty()) return 0;
    return j[0].value(json::json_pointer("/stats64/rx/packets"), std::uint64_t{0});
}

inline double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// New TCP connections per second (andromeda-tcpcrr: connect, a 64-byte request and its answer,
// close; settings.crr_concurrency at once, for tcp_seconds) from `client` to `to`, port 7800,
// served in `server`; with the datapath's CPU (`pids`' time and softirq) over the run. The row
// is named `impl`.
inline json measure_tcp_crr(andromeda::testing::Topology& topo, Netns& server, Netns& client, const std::string& to,
                            const std::string& impl, const Settings& settings, const std::vector<pid_t>& pids) {
    using namespace std::chrono_literals;
    auto& listener = topo.spawn(server, settings.prefix() + std::vector<std::string>{kCrr, "server", "--port", "7800"});
    if (!listener.wait_for_output("ready:", 10s)) throw std::runtime_error("tcpcrr server: " + listener.output());
    const auto before = snapshot(pids);
    const auto c = client.try_run(settings.prefix() + std::vector<std::string>{kCrr, "client", "--to", to, "--port", "7800",
                                                                                "--duration", std::to_string(settings.tcp_seconds),
                                                                                "--concurrency",
                                                                                std::to_string(settings.crr_concurrency)},
                                  std::chrono::milliseconds(static_cast<long>(settings.tcp_seconds * 1000)) + 30s);
    const auto after = snapshot(pids);
    listener.stop(3s);
    const json j = last_json(c.output);
    if (!c.ok() || j.value("connections", 0) <= 0) throw std::runtime_error(impl + ": tcpcrr client: " + c.output);
    const auto d = delta(before, after);
    return {{"impl", impl},
            {"concurrency", settings.crr_concurrency},
            {"per_second", j["per_second"]},
            {"connections", j["connections"]},
            {"failed", j["failed"]},
            {"p50_us", j["p50_us"]},
            {"p99_us", j["p99_us"]},
            {"datapath_cpus", d.datapath_ns() / 1e9 / d.seconds}};
}

// Rows with the same `keys` across runs -> one row: the median of every numeric field, and
// <field>_min / <field>_max for the headline ones.
inline json aggregate(const std::vector<json>& rows, const std::vector<std::string>& keys, const std::vector<std::string>& headline) {
    std::map<std::string, std::vector<json>> groups;
    std::vector<std::string> order;
    for (const auto& r : rows) {
        std::string id;
        for (const auto& k : keys) id += r[k].dump() + "|";
        if (!groups.count(id)) order.push_back(id);
        groups[id].push_back(r);
    }
    json out = json::array();
    for (const auto& id : order) {
        const auto& g = groups[id];
        json row = json::object();
        for (const auto& [k, v] : g.front().items()) {
            if (k == "run") continue;  // which run measured it (paired_ratio), not a figure
            if (!v.is_number() || std::find(keys.begin(), keys.end(), k) != keys.end()) {
                row[k] = v;
                continue;
            }
            std::vector<double> values;
            for (const auto& r : g) values.push_back(r[k].get<double>());
            row[k] = median(values);
            if (std::find(headline.begin(), headline.end(), k) != headline.end()) {
                row[k + "_min"] = *std::min_element(values.begin(), values.end());
                row[k + "_max"] = *std::max_element(values.begin(), values.end());
            }
        }
        row["runs"] = g.size();
        out.push_back(row);
    }
    return out;
}

// An implementation's figure over the baseline's, run by run, then the median of those ratios.
// Each run measures every implementation back to back (the order reversed every other run), so
// what drifts between runs cancels within a pair: an idle ping's RTT here moves by 3x from one
// minute to the next, for every datapath alike, and the ratio of two medians inherits that. Rows
// carry "run"; `match` picks the rows of one figure (e.g. {"streams", 1}). Null when no run has both.
inline json paired_ratio(const std::vector<json>& rows, const std::string& impl, const std::string& baseline,
                         const std::string& field, const std::pair<std::string, json>& match = {}) {
    std::map<int, double> mine;
    std::map<int, double> base;
    for (const auto& r : rows) {
        if (!r.contains("run") || !r.contains(field)) continue;
        if (!match.first.empty() && (!r.contains(match.first) || r[match.first] != match.second)) continue;
        if (r["impl"] == impl) mine[r["run"].get<int>()] = r[field].get<double>();
        if (r["impl"] == baseline) base[r["run"].get<int>()] = r[field].get<double>();
    }
    std::vector<double> ratios;
    for (const auto& [run, v] : mine)
        if (const auto b = base.find(run); b != base.end() && b->second > 0) ratios.push_back(v / b->second);
    if (ratios.empty()) return nullptr;
    return {{"median", median(ratios)},
            {"min", *std::min_element(ratios.begin(), ratios.end())},
            {"max", *std::max_element(ratios.begin(), ratios.end())},
            {"runs", ratios.size()}};
}

}  // namespace andromeda::e2e
