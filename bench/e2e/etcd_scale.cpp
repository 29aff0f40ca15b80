// andromeda-etcd-scale: the fleet fabric at scale (issue 16). A 3-member etcd cluster in the
// underlay namespace, --endpoints endpoints on --vnodes virtual nodes (their MACs given, so no
// daemon resolves them), and --daemons real andromedad, each in its own host namespace with XDP
// attached, watching it. It measures, straight from each daemon's pinned fabric BPF map:
//   - the initial sync: from a daemon's start to the last imported endpoint in its map (daemons
//     started one after another, so each is measured alone);
//   - the programming latency of single changes: from etcd's answer to the put (the commit) to
//     the new MAC in the map, per daemon and change (p50, p99, max), and per change until the
//     last daemon has it;
//   - a burst of --burst changes written as fast as etcd takes them: until every daemon has all;
//   - each daemon's resident memory at the end.
// Prints a summary and writes JSON (--out). Needs root; run by hand (scripts/bench-etcd-scale.sh),
// the suite runs a small smoke version that checks every change reaches every daemon.
#include <bpf/bpf.h>
#include <arpa/inet.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "andromeda_kern_user.h"
#include "etcd/client.hpp"
#include "netns_topology.hpp"
#include "support/etcd_server.hpp"

namespace {

using namespace andromeda;
using namespace andromeda::testing;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct Options {
    int daemons = 20;
    int endpoints = 100000;
    int vnodes = 20;
    int changes = 1000;
    int burst = 10000;
    std::string out = "bench/results/etcd_scale.json";
    bool check = false;  // smoke: exit 1 unless every change reached every daemon
};

[[noreturn]] void usage(const std::string& why) {
    std::fprintf(stderr,
                 "%s\nusage: andromeda-etcd-scale [--daemons N] [--endpoints N] [--vnodes N] [--changes N] [--burst N] "
                 "[--out FILE] [--check]\n",
                 why.c_str());
    std::exit(2);
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage(a + " needs a value");
            return argv[++i];
        };
        if (a == "--daemons") o.daemons = std::stoi(value());
        else if (a == "--endpoints") o.endpoints = std::stoi(value());
        else if (a == "--vnodes") o.vnodes = std::stoi(value());
        else if (a == "--changes") o.changes = std::stoi(value());
        else if (a == "--burst") o.burst = std::stoi(value());
        else if (a == "--out") o.out = value();
        else if (a == "--check") o.check = true;
        else usage("unknown option " + a);
    }
    if (o.daemons < 1 || o.daemons > 200 || o.endpoints < 1 || o.vnodes < 1 || o.changes < 0 || o.burst < 0)
        usage("out of range");
    return o;
}

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const auto at = static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
    return v[std::min(at, v.size() - 1)];
}

json summary(const std::vector<double>& v, const std::string& unit = "ms") {
    return {{"count", v.size()}, {"p50_" + unit, percentile(v, 50)}, {"p99_" + unit, percentile(v, 99)},
            {"max_" + unit, v.empty() ? 0.0 : *std::max_element(v.begin(), v.end())}};
}

// The endpoint e: VPC e % 10 (VNI 1000+), address 10.<vpc>.<hi>.<lo>, on virtual node e % vnodes.
constexpr int kVpcs = 10;
std::string endpoint_ip(int e) {
    const int host = e / kVpcs + 2;
    return "10." + std::to_string(e % kVpcs) + "." + std::to_string(host / 256) + "." + std::to_string(host % 256);
}
std::string mac_text(int e, int version) {
    char b[32];
    std::snprintf(b, sizeof b, "02:%02x:%02x:%02x:%02x:%02x", version & 0xff, e % kVpcs, (e >> 16) & 255, (e >> 8) & 255, e & 255);
    return b;
}

struct Daemon {
    std::string name;
    Netns* host = nullptr;
    Process* process = nullptr;
    int fabric_fd = -1;
};

// The MAC daemon d's map holds for endpoint e, or "" when it has none.
std::string map_mac(const Daemon& d, int e) {
    andromeda_fabric_key key{static_cast<__u32>(1000 + e % kVpcs), 0};
    inet_pton(AF_INET, endpoint_ip(e).c_str(), &key.ip);
    andromeda_fabric_entry entry{};
    if (bpf_map_lookup_elem(d.fabric_fd, &key, &entry) != 0) return "";
    char b[32];
    std::snprintf(b, sizeof b, "%02x:%02x:%02x:%02x:%02x:%02x", entry.mac[0], entry.mac[1], entry.mac[2], entry.mac[3], entry.mac[4],
                  entry.mac[5]);
    return b;
}

std::uint64_t rss_kb(pid_t pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    if (geteuid() != 0) {
        std::fprintf(stderr, "andromeda-etcd-scale: needs root (namespaces, XDP)\n");
        return 77;
    }
    if (access(kEtcdBinary, X_OK) != 0) {
        std::fprintf(stderr, "andromeda-etcd-scale: needs %s (Debian etcd-server)\n", kEtcdBinary);
        return 77;
    }
    sweep_stale_namespaces();
    Topology topo;
    const auto hosts = topo.add_hosts_on_bridge(static_cast<std::size_t>(o.daemons), "eth1", "192.168.1");
    Netns& underlay = *topo.find("underlay");
    const std::string etcd_ip = "192.168.1.250";
    topo.add_address(underlay, "br0", etcd_ip + "/24");

    // A 3-member cluster on the underlay namespace's address.
    char dir[] = "/tmp/andromeda-etcd-scale-XXXXXX";
    if (mkdtemp(dir) == nullptr) return 1;
    std::vector<std::uint16_t> client_ports, peer_ports;
    {
        NetnsGuard in(underlay);
        for (int m = 0; m < 3; ++m) {
            client_ports.push_back(free_port(etcd_ip));
            peer_ports.push_back(free_port(etcd_ip));
        }
    }
    std::string cluster, endpoints_toml;
    std::vector<std::string> endpoints;
    for (int m = 0; m < 3; ++m) {
        cluster += (m ? "," : "") + std::string("m") + std::to_string(m) + "=http://" + etcd_ip + ":" + std::to_string(peer_ports[m]);
        endpoints.push_back("http://" + etcd_ip + ":" + std::to_string(client_ports[m]));
        endpoints_toml += (m ? ", \"" : "\"") + endpoints.back() + "\"";
    }
    for (int m = 0; m < 3; ++m) {
        const std::string peer = "http://" + etcd_ip + ":" + std::to_string(peer_ports[m]);
        topo.spawn(underlay, {kEtcdBinary, "--name", "m" + std::to_string(m), "--data-dir", std::string(dir) + "/m" + std::to_string(m),
                              "--listen-client-urls", endpoints[m], "--advertise-client-urls", endpoints[m],
                              "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", cluster,
                              "--initial-cluster-state", "new", "--log-level", "warn", "--quota-backend-bytes", "8589934592"});
    }
    etcd::Config config;
    config.endpoints = endpoints;
    config.timeout = 5000ms;
    NetnsGuard in_underlay(underlay);  // this thread talks to etcd from here on
    etcd::Client client(config);
    for (const auto deadline = Clock::now() + 30s;;) {
        try {
            client.put("/probe", "1");
            break;
        } catch (const etcd::EtcdError& e) {
            if (Clock::now() > deadline) {
                std::fprintf(stderr, "etcd cluster did not come up: %s\n", e.what());
                return 1;
            }
            std::this_thread::sleep_for(200ms);
        }
    }

    // The fabric: the daemons' nodes, virtual nodes holding the endpoints, 10 VPCs.
    std::vector<Daemon> daemons(static_cast<std::size_t>(o.daemons));
    std::vector<std::pair<std::string, std::string>> kvs;
    const std::string root = "/andromeda/v1/";
    for (int d = 0; d < o.daemons; ++d) {
        daemons[d].name = "s" + std::to_string(getpid()) + "-n" + std::to_string(d + 1);
        daemons[d].host = hosts[static_cast<std::size_t>(d)];
        kvs.emplace_back(root + "nodes/" + daemons[d].name, json{{"address", "192.168.1." + std::to_string(d + 1)}}.dump());
    }
    for (int v = 0; v < o.vnodes; ++v) {
        char mac[32];
        std::snprintf(mac, sizeof mac, "02:fe:00:00:%02x:%02x", v >> 8, v & 255);
        kvs.emplace_back(root + "nodes/v" + std::to_string(v),
                         json{{"address", "192.168.3." + std::to_string(v % 250 + 1)}, {"mac", mac}}.dump());
    }
    for (int v = 0; v < kVpcs; ++v)
        kvs.emplace_back(root + "vpcs/vpc" + std::to_string(v),
                         json{{"vni", 1000 + v}, {"cidr", "10." + std::to_string(v) + ".0.0/16"},
                              {"gateway", "10." + std::to_string(v) + ".0.1"}}
                             .dump());
    auto endpoint_key = [&](int e) { return root + "endpoints/vpc" + std::to_string(e % kVpcs) + "/" + endpoint_ip(e); };
    auto endpoint_value = [&](int e, int version) {
        return json{{"mac", mac_text(e, version)}, {"node", "v" + std::to_string(e % o.vnodes)}}.dump();
    };
    for (int e = 0; e < o.endpoints; ++e) kvs.emplace_back(endpoint_key(e), endpoint_value(e, 0));
    const auto import_start = Clock::now();
    for (std::size_t at = 0; at < kvs.size(); at += 128)
        client.put_all({kvs.begin() + static_cast<std::ptrdiff_t>(at),
                        kvs.begin() + static_cast<std::ptrdiff_t>(std::min(kvs.size(), at + 128))});
    const double import_ms = ms(Clock::now() - import_start);
    std::printf("imported %zu keys in %.0f ms\n", kvs.size(), import_ms);

    // Initial sync, daemon by daemon.
    const int sentinel = o.endpoints - 1;
    const std::string sentinel_mac = mac_text(sentinel, 0);
    std::vector<double> initial;
    std::vector<std::string> files;
    for (auto& d : daemons) {
        const std::string path = "/tmp/" + topo.prefix() + d.name + ".toml";
        std::ofstream(path) << "[node]\nname = \"" << d.name << "\"\nunderlay = \"eth1\"\naddress = \"192.168.1."
                            << (&d - daemons.data()) + 1 << "\"\n\n[etcd]\nendpoints = [" << endpoints_toml << "]\n";
        files.push_back(path);
        files.push_back("/run/andromeda/" + d.name + ".etcd-fabric.json");
        const auto start = Clock::now();
        d.process = &topo.spawn(*d.host, {ANDROMEDAD_PATH, "-c", path});
        const std::string pin = "/sys/fs/bpf/andromeda/" + d.name + "/fabric";
        bool synced = false;
        while (Clock::now() - start < 180s && d.process->running()) {
            if (d.fabric_fd < 0) d.fabric_fd = bpf_obj_get(pin.c_str());
            if (d.fabric_fd >= 0 && map_mac(d, sentinel) == sentinel_mac) {
                synced = true;
                break;
            }
            std::this_thread::sleep_for(2ms);
        }
        if (!synced) {
            std::fprintf(stderr, "%s never synced:\n%s\n", d.name.c_str(), d.process->output().c_str());
            return 1;
        }
        initial.push_back(ms(Clock::now() - start));
        std::printf("%s: %zu keys in its map %.0f ms after its start\n", d.name.c_str(), kvs.size(), initial.back());
    }

    // Single changes: one endpoint's MAC at a time; wait until every daemon has it.
    std::vector<double> per_daemon, per_change;
    int missed = 0;
    const char* slow_env = std::getenv("ANDROMEDA_SCALE_SLOW_MS");  // print the changes slower than this
    const double slow_ms = slow_env != nullptr ? std::atof(slow_env) : 0;
    const auto changes_start = Clock::now();
    for (int c = 0; c < o.changes; ++c) {
        const int e = static_cast<int>((static_cast<long long>(c) * 7919) % o.endpoints);
        const std::string want = mac_text(e, c % 200 + 1);
        client.put(endpoint_key(e), endpoint_value(e, c % 200 + 1));
        const auto committed = Clock::now();
        std::vector<bool> seen(daemons.size(), false);
        std::size_t left = daemons.size();
        std::size_t last_daemon = 0;
        while (left > 0 && Clock::now() - committed < 30s) {
            for (std::size_t d = 0; d < daemons.size(); ++d) {
                if (seen[d] || map_mac(daemons[d], e) != want) continue;
                seen[d] = true;
                --left;
                last_daemon = d;
                per_daemon.push_back(ms(Clock::now() - committed));
            }
            if (left > 0) std::this_thread::sleep_for(200us);
        }
        if (left > 0) ++missed;
        else per_change.push_back(ms(Clock::now() - committed));
        if (slow_ms > 0 && left == 0 && per_change.back() > slow_ms)  // which daemon was last, and when
            std::fprintf(stderr, "change %d: %.1f ms, last %s, %.3f s into the changes\n", c, per_change.back(),
                         daemons[last_daemon].name.c_str(), ms(Clock::now() - changes_start) / 1000);
    }

    // A burst: --burst changes as fast as etcd takes them (transactions of 128).
    double burst_write_ms = 0, burst_everywhere_ms = 0;
    bool burst_ok = true;
    if (o.burst > 0) {
        std::vector<std::pair<std::string, std::string>> changes;
        for (int b = 0; b < o.burst; ++b) {
            const int e = b % o.endpoints;
            changes.emplace_back(endpoint_key(e), endpoint_value(e, 201 + b / o.endpoints % 50));
        }
        const int last = (o.burst - 1) % o.endpoints;
        const std::string want = mac_text(last, 201 + (o.burst - 1) / o.endpoints % 50);
        const auto start = Clock::now();
        for (std::size_t at = 0; at < changes.size(); at += 128)
            client.put_all({changes.begin() + static_cast<std::ptrdiff_t>(at),
                            changes.begin() + static_cast<std::ptrdiff_t>(std::min(changes.size(), at + 128))});
        burst_write_ms = ms(Clock::now() - start);
        std::size_t left = daemons.size();
        std::vector<bool> seen(daemons.size(), false);
        while (left > 0 && Clock::now() - start < 300s) {
            for (std::size_t d = 0; d < daemons.size(); ++d)
                if (!seen[d] && map_mac(daemons[d], last) == want) {
                    seen[d] = true;
                    --left;
                }
            if (left > 0) std::this_thread::sleep_for(1ms);
        }
        burst_ok = left == 0;
        burst_everywhere_ms = ms(Clock::now() - start);
    }

    std::vector<double> rss_mb;
    for (const auto& d : daemons) rss_mb.push_back(static_cast<double>(rss_kb(d.process->pid())) / 1024.0);
    if (std::getenv("ANDROMEDA_SCALE_SHOW_LOG") != nullptr)  // every daemon's log so far, in start order
        for (const auto& d : daemons) std::fprintf(stderr, "--- %s\n%s\n", d.name.c_str(), d.process->output().c_str());

    const json result{{"daemons", o.daemons},
                      {"endpoints", o.endpoints},
                      {"keys", kvs.size()},
                      {"etcd_members", 3},
                      {"import_ms", import_ms},
                      {"initial_sync", summary(initial)},
                      {"change_per_daemon", summary(per_daemon)},
                      {"change_all_daemons", summary(per_change)},
                      {"changes_missed", missed},
                      {"burst", {{"changes", o.burst}, {"write_ms", burst_write_ms}, {"everywhere_ms", burst_everywhere_ms},
                                 {"complete", burst_ok}}},
                      {"rss", summary(rss_mb, "mb")}};
    std::printf("%s\n", result.dump(2).c_str());
    if (!o.out.empty()) std::ofstream(o.out) << result.dump(2) << '\n';

    for (auto& d : daemons) {
        if (d.fabric_fd >= 0) close(d.fabric_fd);
        d.process->stop(20s);
    }
    for (const auto& f : files) std::remove(f.c_str());
    std::filesystem::remove_all(dir);
    if (o.check && (missed > 0 || !burst_ok || static_cast<int>(per_daemon.size()) != o.changes * o.daemons)) {
        std::fprintf(stderr, "andromeda-etcd-scale: %d change(s) did not reach every daemon%s\n", missed,
                     burst_ok ? "" : ", and the burst did not complete");
        return 1;
    }
    return 0;
}
