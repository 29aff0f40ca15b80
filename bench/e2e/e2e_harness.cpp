// andromeda-e2e: the end-to-end comparison of issue 8. Builds the same namespace topology twice
//
//   t10 ns: eth0 10.0.0.10 ──veth── host1 ns: tap-blue-10 [datapath] eth1 192.168.1.1 ─┐
//                                                                          bridge (underlay ns)
//   t20 ns: eth0 10.0.0.20 ──veth── host2 ns: tap-blue-20 [datapath] eth1 192.168.1.2 ─┘
//
// where [datapath] is two andromedad (configs/node1.toml, node2.toml, node names made unique)
// with the kernel fast path ("andromeda") or with `fastpath = false`, every packet through the
// AF_XDP pipeline ("andromeda-slow"; "andromeda-slow-workers" the same with `workers = 2`, the
// tenant port on a tenant-only worker; "andromeda-norps" the fast path with `tenant_rps = false`,
// the tenant ports as the kernel made them; "andromeda-policy" the default config with a 100-rule
// security group on both tenants, "andromeda-policy-10" and "-1000" with 10 and 1000 rules; all
// asked for by name), or the kernel's overlay ("kernel-vxlan"): a Linux bridge
// plus a `vxlan` device (VNI 100, port 4789, static FDB) per host ("kernel-vxlan-rps", asked for
// by name: the same with the RPS andromedad sets on its tenant ports). Asked for by name (--only),
// the ceiling of this topology too: "ceiling", tc redirects over the fast path's hops doing no
// work at all (andromeda-forward), and "ceiling-xdp", the same with an empty XDP program on each
// underlay, as issue 14 keeps a prefilter there. Underlay MTU 1550 in all, so
// tenants keep MTU 1500; every veth, the tenants' included, keeps the kernel's default offloads
// (TSO, TX checksum). For each it
// measures, in one run: UDP packets per second delivered to t20 (andromeda-xskgen in t10,
// andromeda-xdpsink counting at t20's tc ingress, where every datapath's deliveries arrive) at 64 and 1500 bytes, TCP throughput (iperf3, 1 and 4
// streams), UDP request/response latency at a fixed rate (andromeda-udprr), and the CPU time
// the datapath used. First it measures the generator alone into a bare veth pair.
//
// CPU time of the datapath = the machine's softirq time (/proc/stat, every CPU) over the
// interval, plus, for Andromeda, the utime+stime of both andromedad processes (/proc/<pid>/stat).
// The generator's and the tools' own process time is not counted. With tick-based accounting
// (no CONFIG_IRQ_TIME_ACCOUNTING) both are sampled at every timer tick.
//
// The north-south scenario (ns-kernel, ns-andromeda, ns-andromeda-slow, asked for with --only)
// builds its own topology, a tenant reaching an "outside" through its VPC's NAT gateway: see
// north_south.hpp.
#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <bpf/bpf.h>
#include <nlohmann/json.hpp>

#include "e2e_common.hpp"
#include "io/netlink/rps.hpp"
#include "netns_topology.hpp"
#include "north_south.hpp"

namespace {

using namespace andromeda::testing;
using namespace andromeda::e2e;
using namespace std::chrono_literals;
using nlohmann::json;

// 64 bytes on the wire = a 60-byte frame + FCS; "1500" = an MTU-sized IP packet, a 1514-byte frame.
std::uint32_t frame_length(int frame_bytes) { return frame_bytes == 64 ? 60 : 1514; }

// Run count and run time of every loaded BPF program whose name starts with "andromeda_", summed
// per name (both nodes' copies together). The kernel keeps run_time_ns only while statistics are
// enabled (bpf_enable_stats; each run then also pays two clock reads).
struct ProgramTotals {
    std::uint64_t runs = 0, ns = 0;
};
std::map<std::string, ProgramTotals> andromeda_program_totals() {
    std::map<std::string, ProgramTotals> out;
    for (__u32 id = 0; bpf_prog_get_next_id(id, &id) == 0;) {
        const int fd = bpf_prog_get_fd_by_id(id);
        if (fd < 0) continue;
        bpf_prog_info info{};
        __u32 len = sizeof(info);
        if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0) {
            // The kernel keeps 15 characters of a name; the programs' own are in bpf/andromeda_xdp.bpf.c.
            static const std::map<std::string, std::string> full = {{"andromeda_tc_te", "andromeda_tc_tenant"},
                                                                    {"andromeda_tc_un", "andromeda_tc_underlay"},
                                                                    {"andromeda_tc_pu", "andromeda_tc_punt"}};
            std::string name(info.name);
            if (const auto it = full.find(name); it != full.end()) name = it->second;
            if (name.rfind("andromeda_", 0) == 0) {
                out[name].runs += info.run_cnt;
                out[name].ns += info.run_time_ns;
            }
        }
        close(fd);
    }
    return out;
}

class Testbed {
public:
    Testbed(const std::string& impl, const Settings& settings) : impl_(impl), settings_(settings) {
        const EastWest bed = add_east_west(topo_, underlay_mtu());
        hosts_[0] = bed.hosts[0];
        hosts_[1] = bed.hosts[1];
        t10_ = bed.t10;
        t20_ = bed.t20;
        if (settings.ipv6_underlay) move_underlay_to_ipv6();
        if (impl == "andromeda" || impl == "andromeda-slow") start_andromeda(impl == "andromeda");
        else if (impl == "andromeda-slow-workers") start_andromeda(false, "workers = 2\n");
        else if (impl == "andromeda-norps") start_andromeda(true, "tenant_rps = false\n");
        else if (impl == "andromeda-policy") start_andromeda(true, "", policy_of_rules(100));
        else if (impl == "andromeda-policy-10") start_andromeda(true, "", policy_of_rules(10));
        else if (impl == "andromeda-policy-1000") start_andromeda(true, "", policy_of_rules(1000));
        else if (impl == "kernel-vxlan") build_kernel_vxlan();
        else if (impl == "kernel-vxlan-rps") build_kernel_vxlan(true);
        else if (impl == "ceiling" || impl == "ceiling-xdp") start_ceiling(impl == "ceiling-xdp");
        else throw std::runtime_error("unknown datapath '" + impl +
                                      "' (andromeda, andromeda-slow, andromeda-slow-workers, andromeda-norps, andromeda-policy[-10|-1000], kernel-vxlan, kernel-vxlan-rps, "
                                      "ceiling, ceiling-xdp)");
        const auto deadline = std::chrono::steady_clock::now() + 20s;
        while (!t10_->try_run({"ping", "-c", "1", "-W", "1", "10.0.0.20"}, 5s).ok()) {
            if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error(impl + ": 10.0.0.10 cannot ping 10.0.0.20");
        }
        const auto neigh = json::parse(t10_->run({"ip", "-j", "neigh", "show", "10.0.0.20", "dev", "eth0"}), nullptr, false);
        if (neigh.is_discarded() || neigh.empty() || !neigh[0].contains("lladdr"))
            throw std::runtime_error(impl + ": no neighbour entry for 10.0.0.20 in t10");
        dst_mac_ = neigh[0]["lladdr"].get<std::string>();
        log(impl + ": topology up, t10 sends to 10.0.0.20 via MAC " + dst_mac_);
        if (settings.ipv6) start_ipv6(impl);
    }

    // TCP and ping go to this address (t20's).
    [[nodiscard]] const std::string& destination() const noexcept { return dst_ip_; }

    [[nodiscard]] const Netns& t10() const noexcept { return *t10_; }

    // The namespaces, for a developer poking at a held testbed.
    std::string describe() const {
        return "host1=" + hosts_[0]->name() + " host2=" + hosts_[1]->name() + " t10=" + t10_->name() + " t20=" + t20_->name();
    }

    ~Testbed() {
        for (Process* d : daemons_) d->stop(5s);
        for (Process* f : forwarders_) f->stop(5s);
        for (const auto& f : files_) std::filesystem::remove(f);
    }

    // What the generator in t10 sent and what the sink counting at t20's tc ingress saw: frames
    // of `frame_bytes` at `rate` (0: as fast as it can). `started` runs once the sink is ready,
    // `ended` as soon as the generator returns (the measurements' snapshots).
    struct SinkRun {
        CommandResult gen;
        json g, s;  // the generator's and the sink's last JSON lines
        std::string sink_output;
    };
    SinkRun send_to_sink(int frame_bytes, double rate, const std::function<void()>& started, const std::function<void()>& ended) {
        Process& sink = topo_.spawn(*t20_, {kSink, "--dev", "eth0", "--port", "9", "--tc"});
        if (!sink.wait_for_output("ready:", 10s)) throw std::runtime_error("xdpsink did not start: " + sink.output());
        started();
        SinkRun run;
        run.gen = t10_->try_run(settings_.prefix() + std::vector<std::string>{kGen, "--dev", "eth0", "--dst-mac", dst_mac_, "--src-ip", "10.0.0.10",
                                  "--dst-ip", "10.0.0.20", "--length", std::to_string(frame_length(frame_bytes)), "--flows",
                                  std::to_string(settings_.flows), "--duration", std::to_string(settings_.pps_seconds),
                                  "--rate", std::to_string(static_cast<long>(rate))},
                                 std::chrono::milliseconds(static_cast<int>(settings_.pps_seconds * 1000) + 20000));
        ended();
        std::this_thread::sleep_for(200ms);
        sink.stop(5s);
        run.sink_output = sink.output();
        run.g = last_json(run.gen.output);
        run.s = last_json(run.sink_output);
        return run;
    }

    // rate 0: as fast as the generator can; otherwise a fixed offered load, where the CPU per
    // packet is not inflated by work done on frames that are dropped later (overload).
    // generator_ns: the generator's own CPU time per frame (its process time, which includes the
    // first veth hop and the sink's XDP program run in its context), from the generator-alone
    // measurement at the same size and rate; what the generator spends beyond that here is
    // datapath work the kernel did in its context (softirqs run when it re-enables them).
    json measure_pps(int frame_bytes, double rate, double generator_ns) {
        CpuSnapshot before, after;
        const SinkRun run = send_to_sink(frame_bytes, rate, [&] { before = snapshot(pids()); }, [&] { after = snapshot(pids()); });
        const json& g = run.g;
        const json& s = run.s;
        if (!run.gen.ok() || !g.contains("sent") || !s.contains("packets"))
            throw std::runtime_error("pps " + std::to_string(frame_bytes) + ": " + run.gen.output + run.sink_output);
        const auto d = delta(before, after);
        const double packets = s["packets"].get<double>();
        const double seconds = g["seconds"].get<double>();
        const double in_generator_ns =
            std::max(0.0, g["cpu_seconds"].get<double>() * 1e9 - generator_ns * g["sent"].get<double>());
        const double datapath_ns = d.process_ns + d.ksoftirqd_ns + in_generator_ns;
        const auto per_packet = [&](double ns) { return packets > 0 ? ns / packets : 0.0; };
        json r = {{"impl", impl_},
                  {"frame_bytes", frame_bytes},
                  {"pps", packets / seconds},
                  {"offered_pps", g["pps"]},
                  {"delivered_fraction", g["sent"].get<double>() > 0 ? packets / g["sent"].get<double>() : 0.0},
                  {"cpu_ns_per_packet", per_packet(datapath_ns)},
                  {"daemon_ns_per_packet", per_packet(d.process_ns)},
                  {"ksoftirqd_ns_per_packet", per_packet(d.ksoftirqd_ns)},
                  {"in_generator_ns_per_packet", per_packet(in_generator_ns)},
                  {"softirq_sampled_ns_per_packet", per_packet(d.softirq_ns)},
                  {"datapath_cpus", datapath_ns / 1e9 / d.seconds}};
        if (rate > 0) r["rate"] = rate;
        log(impl_ + " pps " + std::to_string(frame_bytes) + " B" + (rate > 0 ? " at " + std::to_string(static_cast<long>(rate)) + "/s" : "") +
            ": " + r.dump());
        return r;
    }

    // The datapath's BPF programs, each on its own: runs per delivered frame and time per run,
    // 64-byte frames at the fixed rate of the CPU measurement, with the kernel's BPF run-time
    // statistics on for this measurement only (they add two clock reads per run, so the pps and
    // CPU figures are measured without them). Andromeda only: the kernel's VXLAN runs no BPF.
    json measure_bpf(double rate) {
        struct StatsOn {  // the kernel keeps run times while this fd is open
            int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
            ~StatsOn() { if (fd >= 0) close(fd); }
        } stats;
        if (stats.fd < 0) throw std::runtime_error("bpf_enable_stats: " + std::string(strerror(errno)));
        std::map<std::string, ProgramTotals> before, after;
        const SinkRun run = send_to_sink(64, rate, [&] { before = andromeda_program_totals(); }, [&] { after = andromeda_program_totals(); });
        const json& s = run.s;
        if (!run.gen.ok() || !s.contains("packets") || s["packets"].get<double>() <= 0)
            throw std::runtime_error("bpf: " + run.gen.output + run.sink_output);
        const double packets = s["packets"].get<double>();
        json programs = json::object();
        double total_ns = 0;
        for (const auto& [name, t] : after) {
            const auto b = before.count(name) ? before.at(name) : ProgramTotals{};
            const double runs = static_cast<double>(t.runs - b.runs);
            const double ns = static_cast<double>(t.ns - b.ns);
            if (runs <= 0) continue;
            programs[name] = {{"runs_per_packet", runs / packets}, {"ns_per_run", ns / runs}};
            total_ns += ns;
        }
        json r = {{"impl", impl_}, {"frame_bytes", 64}, {"rate", rate}, {"packets", packets},
                  {"bpf_ns_per_packet", total_ns / packets}, {"programs", programs}};
        log(impl_ + " bpf programs: " + r.dump());
        return r;
    }

    json measure_tcp(int streams) {
        Process& server = topo_.spawn(*t20_, settings_.prefix() + std::vector<std::string>{"iperf3", "-s", "-1", "--forceflush", "-p", "5201"});
        if (!server.wait_for_output("Server listening", 10s)) throw std::runtime_error("iperf3 -s: " + server.output());
        const auto rx0 = rx_packets(*t20_, "eth0");
        const auto before = snapshot(pids());
        const auto c = t10_->try_run(settings_.prefix() + std::vector<std::string>{"iperf3", "-c", dst_ip_, "-p", "5201", "-t", std::to_string(static_cast<int>(settings_.tcp_seconds)),
                                      "-P", std::to_string(streams), "-J"},
                                     std::chrono::milliseconds(static_cast<int>(settings_.tcp_seconds * 1000) + 20000));
        const auto after = snapshot(pids());
        const auto rx1 = rx_packets(*t20_, "eth0");
        server.wait(5s);
        const auto j = json::parse(c.output, nullptr, false);
        const auto bps = j.is_discarded() ? 0.0 : j.value(json::json_pointer("/end/sum_received/bits_per_second"), 0.0);
        if (!c.ok() || bps <= 0) throw std::runtime_error("iperf3 -c: " + c.output.substr(0, 2000));
        const auto d = delta(before, after);
        const double packets = static_cast<double>(rx1 - rx0);
        json r = {{"impl", impl_},
                  {"streams", streams},
                  {"gbps", bps / 1e9},
                  {"retransmits", j.value(json::json_pointer("/end/sum_sent/retransmits"), 0)},
                  {"cpu_ns_per_packet", packets > 0 ? d.datapath_ns() / packets : 0.0},
                  {"datapath_cpus", d.datapath_ns() / 1e9 / d.seconds}};
        log(impl_ + " tcp x" + std::to_string(streams) + ": " + r.dump());
        return r;
    }

    // New TCP connections per second, t10 to t20 (andromeda-tcpcrr: connect, a request and its
    // answer, close; --crr-concurrency at once): with security groups, every one a new flow the
    // pipeline judges by the rules and installs in the kernel.
    json measure_connections() {
        json r = measure_tcp_crr(topo_, *t20_, *t10_, "10.0.0.20", impl_, settings_, pids());
        log(impl_ + " connections: " + r.dump());
        return r;
    }

    // realtime: andromedad's threads and both tools under SCHED_FIFO for this measurement only
    // (the kernel's datapath runs in softirq, ahead of every task, either way).
    json measure_latency(bool realtime) {
        const std::vector<std::string> prefix =
            realtime ? std::vector<std::string>{"chrt", "-f", "20"} : settings_.prefix();
        const bool switch_daemons = realtime && !settings_.realtime;
        if (switch_daemons)
            for (Process* d : daemons_) run_command({"chrt", "-a", "-f", "-p", "20", std::to_string(d->pid())});
        Process& server = topo_.spawn(*t20_, prefix + std::vector<std::string>{kRr, "server", "--port", "7777"});
        if (!server.wait_for_output("ready:", 10s)) throw std::runtime_error("udprr server: " + server.output());
        const auto rx0 = rx_packets(*t20_, "eth0");
        const auto before = snapshot(pids());
        const auto c = t10_->try_run(prefix + std::vector<std::string>{kRr, "client", "--to", "10.0.0.20", "--port", "7777", "--rate",
                                      std::to_string(static_cast<int>(settings_.rate)), "--duration",
                                      std::to_string(settings_.latency_seconds)},
                                     std::chrono::milliseconds(static_cast<int>(settings_.latency_seconds * 1000) + 20000));
        const auto after = snapshot(pids());
        const auto rx1 = rx_packets(*t20_, "eth0");
        server.stop(3s);
        if (switch_daemons)
            for (Process* d : daemons_) run_command({"chrt", "-a", "-o", "-p", "0", std::to_string(d->pid())});
        const json j = last_json(c.output);
        if (!c.ok() || !j.contains("p99_us")) throw std::runtime_error("udprr client: " + c.output);
        const auto d = delta(before, after);
        const double packets = 2.0 * static_cast<double>(rx1 - rx0);  // requests and replies
        json r = {{"impl", impl_},       {"rate", settings_.rate},  {"sched", realtime || settings_.realtime ? "fifo" : "other"},
                  {"p50_us", j["p50_us"]},
                  {"p99_us", j["p99_us"]}, {"p999_us", j["p999_us"]}, {"max_us", j["max_us"]},
                  {"samples", j["received"]}, {"lost", j["lost"]},
                  {"cpu_ns_per_packet", packets > 0 ? d.datapath_ns() / packets : 0.0},
                  {"datapath_cpus", d.datapath_ns() / 1e9 / d.seconds}};
        log(impl_ + " latency (" + r["sched"].get<std::string>() + "): " + r.dump());
        return r;
    }

private:
    // `node_extra`: lines added to each node's [node] table.
    // Security groups (issue 29): both tenants in group "bench", whose `n` ingress rules allow
    // TCP and UDP ports from other networks; the last allows everything from the VPC (both its
    // prefixes: --ipv6 runs it too), so the benchmark's flows open after the whole list (the
    // matcher's worst case).
    static std::string policy_of_rules(int n) {
        std::string s = "[[vpc.security_group]]\nname = \"bench\"\n";
        for (int i = 0; i < n - 1; ++i)
            s += "[[vpc.security_group.rule]]\ndirection = \"ingress\"\nprotocol = \"" + std::string(i % 2 ? "udp" : "tcp") +
                 "\"\nports = [" + std::to_string(20000 + i) + "]\nremote_cidrs = [\"10." + std::to_string(1 + i / 250) + "." +
                 std::to_string(i % 250) + ".0/24\"]\npriority = " + std::to_string(100 + i) + "\n";
        s += "[[vpc.security_group.rule]]\ndirection = \"ingress\"\nremote_cidrs = [\"10.0.0.0/24\", \"fd00:0:0:1::/64\"]\n"
             "priority = 5000\n";
        return s;
    }

    // IPv6 on in both tenants (the topology turns it off), then t20's IPv6 address the target:
    // Andromeda's tenants take theirs by SLAAC from the gateway's RA (the fabric gives them by
    // EUI-64); the kernel's VXLAN has no router, so its tenants get the same addresses statically
    // and resolve each other by ND flooded over the VNI.
    void start_ipv6(const std::string& impl) {
        static constexpr const char* kAddress[2] = {"fd00:0:0:1:0:ff:fe00:10", "fd00:0:0:1:0:ff:fe00:20"};
        Netns* tenants[2] = {t10_, t20_};
        for (int i = 0; i < 2; ++i) {
            tenants[i]->run({"sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=0",
                             "net.ipv6.conf.default.disable_ipv6=0", "net.ipv6.conf.eth0.disable_ipv6=0"});
            if (impl.rfind("andromeda", 0) != 0)
                tenants[i]->run({"ip", "-6", "addr", "add", std::string(kAddress[i]) + "/64", "dev", "eth0", "nodad"});
        }
        dst_ip_ = kAddress[1];
        const auto deadline = std::chrono::steady_clock::now() + 30s;
        while (!t10_->try_run({"ping", "-6", "-c", "1", "-W", "1", dst_ip_}, 5s).ok()) {
            if (std::chrono::steady_clock::now() > deadline)
                throw std::runtime_error(impl + ": " + kAddress[0] + " cannot ping " + dst_ip_ + " (IPv6)");
        }
        log(impl + ": IPv6 up, t10 reaches " + dst_ip_);
    }

    // 1550 (1570 over IPv6, 20 bytes more of outer header): tenants keep 1500 either way.
    [[nodiscard]] unsigned underlay_mtu() const noexcept { return settings_.ipv6_underlay ? 1570 : 1550; }
    // Node i's underlay address.
    [[nodiscard]] std::string underlay_address(int i) const {
        return (settings_.ipv6_underlay ? "fd00:1::" : "192.168.1.") + std::to_string(i + 1);
    }

    // --ipv6-underlay: IPv6 on the hosts' eth1 alone, with fd00:1::1 and ::2 (no DAD, and no MLD
    // snooping on the bridge, which has no querier).
    void move_underlay_to_ipv6() {
        topo_.find("underlay")->run({"ip", "link", "set", "br0", "type", "bridge", "mcast_snooping", "0"});
        for (int i = 0; i < 2; ++i) {
            hosts_[i]->run({"sysctl", "-q", "-w", "net.ipv6.conf.eth1.accept_dad=0", "net.ipv6.conf.eth1.disable_ipv6=0"});
            hosts_[i]->run({"ip", "-6", "addr", "add", underlay_address(i) + "/64", "dev", "eth1", "nodad"});
        }
    }

    void start_andromeda(bool fast_path, const std::string& node_extra = "", const std::string& groups = "") {
        std::string names[2];
        for (int i = 0; i < 2; ++i) names[i] = "t" + std::to_string(getpid()) + "-e2e" + std::to_string(i + 1);
        for (int i = 0; i < 2; ++i) {
            std::string text =
                bench_node_config(i, names, (fast_path ? "" : "fastpath = false\n") + node_extra, underlay_mtu());
            for (int n = 0; n < 2; ++n)
                replace_all(text, "\"192.168.1." + std::to_string(n + 1) + "\"", "\"" + underlay_address(n) + "\"");
            if (settings_.ipv6) {  // dual stack: the VPC's prefix, each endpoint's address by EUI-64
                replace_all(text, "gateway = \"10.0.0.1\"", "gateway = \"10.0.0.1\"\nipv6_prefix = \"fd00:0:0:1::/64\"");
                replace_all(text, "[[vpc.endpoint]]\n", "[[vpc.endpoint]]\nipv6 = \"eui64\"\n");
            }
            if (!groups.empty()) {
                // The groups before the first endpoint; every endpoint in group "bench".
                text.replace(text.find("[[vpc.endpoint]]"), 0, groups);
                replace_all(text, "[[vpc.endpoint]]\n", "[[vpc.endpoint]]\ngroups = [\"bench\"]\n");
            }
            const std::string path = "/tmp/" + topo_.prefix() + "e2e-node" + std::to_string(i + 1) + ".toml";
            std::ofstream(path) << text;
            files_.push_back(path);
            Process& p = topo_.spawn(*hosts_[i], settings_.prefix() + std::vector<std::string>{kDaemon, "-c", path});
            if (!p.wait_for_output(" ready: ", 30s)) throw std::runtime_error(names[i] + " did not start:\n" + p.output());
            daemons_.push_back(&p);
        }
    }

    // With `rps`, the tenant ports get the RPS andromedad gives its own ([node] tenant_rps): the
    // kernel's overlay with the same steering, to tell what RPS does from what the datapath does.
    void build_kernel_vxlan(bool rps = false) {
        add_kernel_vxlan(*hosts_[0], underlay_address(0), underlay_address(1), {"tap-blue-10"}, {"02:00:00:00:00:20"});
        add_kernel_vxlan(*hosts_[1], underlay_address(1), underlay_address(0), {"tap-blue-20"}, {"02:00:00:00:00:10"});
        if (!rps) return;
        const std::string cpus = andromeda::io::format_cpu_mask(andromeda::io::RpsSteering::online_cpus());
        for (int i = 0; i < 2; ++i) {
            const std::string tap = i == 0 ? "tap-blue-10" : "tap-blue-20";
            const auto r = run_command({"ip", "netns", "exec", hosts_[i]->name(), "sh", "-c",
                                        "echo " + cpus + " > /sys/class/net/" + tap + "/queues/rx-0/rps_cpus"});
            if (!r.ok()) throw std::runtime_error("kernel-vxlan-rps: setting RPS on " + tap + ": " + r.output);
        }
    }

    // The ceiling (bench/e2e/forward.bpf.c): on each host, a tc program on the tenant port sends
    // every frame out of the underlay, one on the underlay sends every frame into the tenant
    // (bpf_redirect_peer): the fast path's hops with nothing done on them, a bridge of two
    // redirects. With `xdp`, the underlays also run an empty XDP program in generic mode (the least
    // an XDP prefilter can cost, copy included) and the senders leave room for it as the fast
    // path's encap does.
    void start_ceiling(bool xdp) {
        for (int i = 0; i < 2; ++i) {
            const std::string tap = i == 0 ? "tap-blue-10" : "tap-blue-20";
            std::vector<std::string> argv = {kForward, "--redirect", tap + ":eth1", "--redirect-peer", "eth1:" + tap};
            if (xdp) argv.insert(argv.end(), {"--xdp-pass", "eth1", "--room", "256"});
            Process& p = topo_.spawn(*hosts_[i], argv);
            if (!p.wait_for_output("ready:", 10s)) throw std::runtime_error("andromeda-forward did not start:\n" + p.output());
            forwarders_.push_back(&p);
        }
    }

    [[nodiscard]] std::vector<pid_t> pids() const {
        std::vector<pid_t> out;
        for (Process* d : daemons_) out.push_back(d->pid());
        return out;
    }

    std::string impl_;
    const Settings& settings_;
    Topology topo_;
    Netns* hosts_[2] = {nullptr, nullptr};
    Netns* t10_ = nullptr;
    Netns* t20_ = nullptr;
    std::vector<Process*> daemons_;
    std::vector<Process*> forwarders_;  // the ceiling's (idle once attached)
    std::vector<std::string> files_;
    std::string dst_mac_;
    std::string dst_ip_ = "10.0.0.20";
};

// The generator alone, into a bare veth pair whose far end drops (and counts) at tc ingress.
json measure_generator(const Settings& settings, int frame_bytes, double rate = 0) {
    Topology topo;
    Netns& a = topo.add_namespace("gen");
    Netns& b = topo.add_namespace("sink");
    VethOptions v;
    v.mac_b = "02:00:00:00:00:02";
    topo.add_veth(a, "eth0", b, "eth0", v);
    Process& sink = topo.spawn(b, {kSink, "--dev", "eth0", "--port", "9", "--tc"});
    if (!sink.wait_for_output("ready:", 10s)) throw std::runtime_error("xdpsink did not start: " + sink.output());
    const auto before = snapshot({});
    const auto gen = a.try_run(settings.prefix() + std::vector<std::string>{kGen, "--dev", "eth0", "--dst-mac", "02:00:00:00:00:02",
                                "--src-ip", "10.0.0.10", "--dst-ip", "10.0.0.20", "--length", std::to_string(frame_length(frame_bytes)),
                                "--flows", std::to_string(settings.flows), "--duration", std::to_string(settings.pps_seconds),
                                "--rate", std::to_string(static_cast<long>(rate))},
                               std::chrono::milliseconds(static_cast<int>(settings.pps_seconds * 1000) + 20000));
    const auto after = snapshot({});
    std::this_thread::sleep_for(200ms);
    sink.stop(5s);
    const json g = last_json(gen.output);
    const json s = last_json(sink.output());
    if (!gen.ok() || !g.contains("sent") || !s.contains("packets")) throw std::runtime_error("generator alone: " + gen.output + sink.output());
    const double packets = s["packets"].get<double>();
    const double seconds = g["seconds"].get<double>();
    const auto d = delta(before, after);
    json r = {{"frame_bytes", frame_bytes},
              {"pps", g["sent"].get<double>() / seconds},
              {"received_pps", packets / seconds},
              {"generator_cpu_ns_per_packet", g["sent"].get<double>() > 0 ? g["cpu_seconds"].get<double>() * 1e9 / g["sent"].get<double>() : 0.0},
              {"ksoftirqd_ns_per_packet", packets > 0 ? d.ksoftirqd_ns / packets : 0.0},
              {"mode", g["mode"]}};
    if (rate > 0) r["rate"] = rate;
    log("generator alone " + std::to_string(frame_bytes) + " B" + (rate > 0 ? " at " + std::to_string(static_cast<long>(rate)) + "/s" : "") +
        ": " + r.dump());
    return r;
}

json machine() {
    json m;
    std::istringstream cpu(read_file("/proc/cpuinfo"));
    std::string line;
    while (std::getline(cpu, line))
        if (line.rfind("model name", 0) == 0) {
            m["cpu"] = line.substr(line.find(':') + 2);
            break;
        }
    m["cpus"] = std::thread::hardware_concurrency();
    utsname u{};
    uname(&u);
    m["kernel"] = u.release;
    std::istringstream load(read_file("/proc/loadavg"));
    double l1 = 0;
    load >> l1;
    m["load_1min_at_start"] = l1;
    m["clock_ticks_per_s"] = sysconf(_SC_CLK_TCK);
    return m;
}

// A developer's pause: the testbed stays up (namespaces in the log) until the file named by
// ANDROMEDA_E2E_HOLD is removed.
void hold_if_asked(const std::string& impl, const std::string& description) {
    const char* hold = std::getenv("ANDROMEDA_E2E_HOLD");
    if (hold == nullptr || *hold == '\0') return;
    std::ofstream(hold) << description << "\n";
    log(impl + ": holding until " + std::string(hold) + " is removed: " + description);
    while (std::filesystem::exists(hold)) std::this_thread::sleep_for(200ms);
}

[[noreturn]] void usage() {
    std::cerr << "usage: andromeda-e2e [--quick] [--out FILE] [--runs N] [--seconds S] [--rate PER_S] [--crr-concurrency K]\n"
                 "                     [--only andromeda|andromeda-slow|andromeda-slow-workers|andromeda-norps|andromeda-policy[-10|-1000]|\n"
                 "                             kernel-vxlan|kernel-vxlan-rps|ceiling|ceiling-xdp|\n"
                 "                             ns-kernel|ns-andromeda|ns-andromeda-slow[,...]]\n"
                 "                     [--tests generator,pps,cpu,bpf,tcp,latency,latency-fifo,ping,crr] [--realtime] [--daemon PATH]\n"
                 "                     [--check] [--ipv6] [--ipv6-underlay] [--ping-interval SECONDS]\n";
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    Settings s;
    bool check = false;  // exit 1 when a north-south figure shows a datapath not doing its job
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&] {
            if (i + 1 >= argc) usage();
            return std::string(argv[++i]);
        };
        if (a == "--quick") {
            s.quick = true;
            s.runs = 1;
            s.pps_seconds = s.tcp_seconds = s.latency_seconds = 3;
        } else if (a == "--out") s.out = value();
        else if (a == "--runs") s.runs = std::stoi(value());
        else if (a == "--seconds") s.pps_seconds = s.tcp_seconds = s.latency_seconds = std::stod(value());
        else if (a == "--rate") s.rate = std::stod(value());
        else if (a == "--crr-concurrency") s.crr_concurrency = static_cast<unsigned>(std::stoul(value()));
        else if (a == "--only") {
            s.impls.clear();
            std::istringstream list(value());
            for (std::string impl; std::getline(list, impl, ',');) s.impls.push_back(impl);
        }
        else if (a == "--tests") s.tests = value();
        else if (a == "--realtime") s.realtime = true;
        else if (a == "--ping-interval") {
            s.ping_interval = std::stod(value());
            if (s.ping_interval < 0) usage();
        }
        else if (a == "--ipv6") s.ipv6 = true;
        else if (a == "--ipv6-underlay") s.ipv6_underlay = true;
        else if (a == "--check") check = true;
        else if (a == "--daemon") kDaemon = value();
        else usage();
    }
    if (geteuid() != 0) {
        std::cout << "SKIP: andromeda-e2e needs root (network namespaces, XDP, AF_XDP)" << std::endl;
        return 0;
    }
    sweep_stale_namespaces();
    json result;
    result["machine"] = machine();
    result["mode"] = s.quick ? "quick" : "full";
    result["realtime"] = s.realtime;
    result["daemon"] = kDaemon;
    result["runs"] = s.runs;
    result["ping_interval_s"] = s.ping_interval;
    result["seconds_per_measurement"] = {{"pps", s.pps_seconds}, {"tcp", s.tcp_seconds}, {"latency", s.latency_seconds}};
    result["cpu_method"] =
        "pps and cpu_at_fixed_rate: utime+stime of the andromedad processes (/proc/<pid>/stat) + run time of the "
        "ksoftirqd threads (/proc/<pid>/schedstat) + the generator's CPU time beyond its own cost per frame measured "
        "alone at the same size and rate (softirq work the kernel ran in its context), per frame delivered to the "
        "receiving tenant. tcp and latency: datapath_cpus = andromedad utime+stime plus /proc/stat softirq time "
        "(tick-sampled, indicative only)";
    std::vector<json> gens, pps, cpu, bpf, tcp, latency, connections, ping;
    std::vector<json> ns_tcp, ns_ping, ns_udp_rr, ns_connections;  // north-south (north_south.hpp)
    const bool any_north_south = std::any_of(s.impls.begin(), s.impls.end(), is_north_south);
    const bool any_east_west = !std::all_of(s.impls.begin(), s.impls.end(), is_north_south);
    try {
        for (int run = 0; run < s.runs; ++run) {
            // The generator alone first: its rate, and its own cost per frame, which the
            // datapath figures below subtract.
            std::map<std::pair<int, long>, double> generator_ns;
            const bool need_generator = any_east_west && (s.wants("generator") || s.wants("pps") || s.wants("cpu"));
            for (const auto& [bytes, rate] : {std::pair{64, 0.0}, std::pair{1500, 0.0}, std::pair{64, s.cpu_rate}}) {
                if (!need_generator) break;
                json g = measure_generator(s, bytes, rate);
                generator_ns[{bytes, static_cast<long>(rate)}] = g["generator_cpu_ns_per_packet"].get<double>();
                if (rate == 0) gens.push_back(g);
            }
            std::vector<std::string> order = s.impls;
            if (run % 2 == 1) std::reverse(order.begin(), order.end());  // neither always goes first
            for (const auto& impl : order) {
                log("run " + std::to_string(run + 1) + "/" + std::to_string(s.runs) + ": " + impl);
                const auto in_run = [run](json r) {
                    r["run"] = run;
                    return r;
                };
                if (is_north_south(impl)) {
                    NorthSouthBed bed(impl, s);
                    hold_if_asked(impl, bed.describe());
                    if (s.wants("tcp"))
                        for (const int streams : {1, 4}) ns_tcp.push_back(in_run(bed.measure_tcp(streams)));
                    if (s.wants("ping")) ns_ping.push_back(in_run(bed.measure_ping()));
                    if (s.wants("latency")) ns_udp_rr.push_back(in_run(bed.measure_udp_rr()));
                    if (s.wants("crr")) ns_connections.push_back(in_run(bed.measure_connections()));
                    continue;
                }
                Testbed bed(impl, s);
                hold_if_asked(impl, bed.describe());
                if (s.wants("pps"))
                    for (const int bytes : {64, 1500}) pps.push_back(bed.measure_pps(bytes, 0, generator_ns[{bytes, 0}]));
                if (s.wants("cpu"))
                    cpu.push_back(bed.measure_pps(64, s.cpu_rate, generator_ns[{64, static_cast<long>(s.cpu_rate)}]));
                if (s.wants("bpf") && impl.rfind("andromeda", 0) == 0) bpf.push_back(bed.measure_bpf(s.cpu_rate));
                if (s.wants("tcp"))
                    for (const int streams : {1, 4}) tcp.push_back(in_run(bed.measure_tcp(streams)));
                if (s.wants("crr")) connections.push_back(bed.measure_connections());
                if (s.wants("ping")) ping.push_back(in_run(measure_ping_rtt(bed.t10(), bed.destination(), impl, s)));
                if (s.wants("latency")) latency.push_back(bed.measure_latency(false));
                if (s.wants("latency-fifo") && !s.realtime) latency.push_back(bed.measure_latency(true));
            }
        }
    } catch (const std::exception& e) {
        std::cerr << "andromeda-e2e: " << e.what() << std::endl;
        return 1;
    }
    const json gen_rows = aggregate(gens, {"frame_bytes"}, {"pps"});
    result["generator"] = gen_rows.empty() ? json::object() : gen_rows[0];
    result["generator_all"] = gen_rows;
    result["pps"] = aggregate(pps, {"impl", "frame_bytes"}, {"pps", "cpu_ns_per_packet"});
    result["cpu_at_fixed_rate"] = aggregate(cpu, {"impl", "frame_bytes"}, {"cpu_ns_per_packet"});
    result["tcp"] = aggregate(tcp, {"impl", "streams"}, {"gbps"});
    result["bpf"] = bpf;  // per run: each program's runs per delivered frame and ns per run
    result["latency"] = aggregate(latency, {"impl", "rate", "sched"}, {"p50_us", "p99_us", "p999_us"});
    if (!connections.empty()) result["connections"] = aggregate(connections, {"impl"}, {"per_second", "p50_us", "p99_us"});
    if (!ping.empty()) result["ping"] = aggregate(ping, {"impl"}, {"p50_us", "p99_us", "mean_us"});
    result["ipv6"] = s.ipv6;
    result["ipv6_underlay"] = s.ipv6_underlay;
    result["spread"] = "each figure is the median over runs; <field>_min and <field>_max give the range";
    std::istringstream load(read_file("/proc/loadavg"));
    double l1 = 0;
    load >> l1;
    result["machine"]["load_1min_at_end"] = l1;
    // Ratios of each Andromeda path over the kernel for the headline figures, from this run.
    auto find = [](const json& rows, const std::string& impl, const std::string& key, int value) -> const json* {
        for (const auto& r : rows)
            if (r["impl"] == impl && r[key] == value) return &r;
        return nullptr;
    };
    const auto ratios_of = [&](const std::string& impl) {
        json ratios = json::object();
        for (const int bytes : {64, 1500}) {
            const json* a = find(result["pps"], impl, "frame_bytes", bytes);
            const json* k = find(result["pps"], "kernel-vxlan", "frame_bytes", bytes);
            if (a && k && (*k)["pps"].get<double>() > 0)
                ratios["pps_" + std::to_string(bytes)] = (*a)["pps"].get<double>() / (*k)["pps"].get<double>();
        }
        for (const int streams : {1, 4}) {
            const json* a = find(result["tcp"], impl, "streams", streams);
            const json* k = find(result["tcp"], "kernel-vxlan", "streams", streams);
            if (a && k && (*k)["gbps"].get<double>() > 0)
                ratios["tcp_" + std::to_string(streams)] = (*a)["gbps"].get<double>() / (*k)["gbps"].get<double>();
        }
        {
            const json* a = find(result["cpu_at_fixed_rate"], impl, "frame_bytes", 64);
            const json* k = find(result["cpu_at_fixed_rate"], "kernel-vxlan", "frame_bytes", 64);
            if (a && k && (*k)["cpu_ns_per_packet"].get<double>() > 0)
                ratios["cpu_ns_per_packet_64_at_rate"] =
                    (*a)["cpu_ns_per_packet"].get<double>() / (*k)["cpu_ns_per_packet"].get<double>();
        }
        {
            const json* a = nullptr;
            const json* k = nullptr;
            const json& ping_rows = result.contains("ping") ? result["ping"] : json::array();
            for (const auto& r : ping_rows) {
                if (r["impl"] == impl) a = &r;
                if (r["impl"] == "kernel-vxlan") k = &r;
            }
            if (a && k && (*k)["p50_us"].get<double>() > 0)
                ratios["ping_p50_us"] = (*a)["p50_us"].get<double>() / (*k)["p50_us"].get<double>();
        }
        for (const std::string sched : {"other", "fifo"}) {
            const json* a = nullptr;
            const json* k = nullptr;
            for (const auto& r : result["latency"]) {
                if (r["sched"] != sched) continue;
                if (r["impl"] == impl) a = &r;
                if (r["impl"] == "kernel-vxlan") k = &r;
            }
            if (a && k)
                for (const char* f : {"p50_us", "p99_us", "p999_us"})
                    if ((*k)[f].get<double>() > 0)
                        ratios["latency_" + std::string(f) + (sched == "fifo" ? "_fifo" : "")] =
                            (*a)[f].get<double>() / (*k)[f].get<double>();
        }
        return ratios;
    };
    // The same figures as medians of each run's own ratio (paired_ratio): the ones to quote for
    // ping, whose RTT drifts between runs far more than between the datapaths.
    const auto paired_ratios_of = [&](const std::string& impl) {
        json ratios = json::object();
        for (const int streams : {1, 4})
            if (json r = paired_ratio(tcp, impl, "kernel-vxlan", "gbps", {"streams", streams}); !r.is_null())
                ratios["tcp_" + std::to_string(streams)] = r;
        if (json r = paired_ratio(ping, impl, "kernel-vxlan", "p50_us"); !r.is_null()) ratios["ping_p50_us"] = r;
        return ratios;
    };
    result["ratios_andromeda_over_kernel"] = ratios_of("andromeda");
    result["ratios_slow_path_over_kernel"] = ratios_of("andromeda-slow");
    result["paired_ratios_andromeda_over_kernel"] = paired_ratios_of("andromeda");
    if (any_north_south) result["north_south"] = north_south_report(ns_tcp, ns_ping, ns_udp_rr, ns_connections);
    // The ceilings, when measured (--only ...,ceiling,ceiling-xdp): what the topology allows.
    for (const std::string impl :
         {"ceiling", "ceiling-xdp", "kernel-vxlan-rps", "andromeda-slow-workers", "andromeda-norps", "andromeda-policy", "andromeda-policy-10",
          "andromeda-policy-1000"})
        if (std::find(s.impls.begin(), s.impls.end(), impl) != s.impls.end()) {
            result["ratios_" + impl + "_over_kernel"] = ratios_of(impl);
            result["paired_ratios_" + impl + "_over_kernel"] = paired_ratios_of(impl);
        }
    std::filesystem::create_directories(std::filesystem::path(s.out).parent_path().empty() ? "." : std::filesystem::path(s.out).parent_path());
    std::ofstream(s.out) << result.dump(2) << "\n";
    std::cout << result.dump(2) << std::endl;
    log("wrote " + s.out);
    if (check && any_north_south) {
        const auto problems = north_south_problems(result["north_south"]);
        for (const auto& p : problems) std::cerr << "andromeda-e2e --check: " << p << std::endl;
        if (!problems.empty()) return 1;
    }
    return 0;
}
