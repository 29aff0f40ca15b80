// The north-south scenario of andromeda-e2e: see north_south.hpp for the topology and datapaths.
#include "north_south.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/fabric_builder.hpp"

namespace andromeda::e2e {

using namespace andromeda::testing;
using namespace std::chrono_literals;

namespace {

const std::string kCtl = ANDROMEDACTL_PATH;
constexpr const char* kOutside = "203.0.113.1";
constexpr const char* kNatAddress = "203.0.113.10";
constexpr const char* kGatewayMac = "02:00:00:00:00:01";  // gw's bridge in the kernel's datapath
constexpr const char* kTenantMac = "02:00:00:00:00:10";

std::chrono::milliseconds seconds_plus(double seconds, std::chrono::milliseconds margin) {
    return std::chrono::milliseconds(static_cast<long>(seconds * 1000)) + margin;
}

// ping -i's argument: "0.005", "0" (a shortest decimal, as ping parses it).
// Fixed notation, to the microsecond: ping refuses "1e-05", which the stream's default format
// would write for an interval below 0.0001 s.
std::string fmt_seconds(double seconds) {
    std::ostringstream out;
    out << std::fixed << std::setprecision(6) << seconds;
    return out.str();
}

double percentile(const std::vector<double>& sorted, double p) {
    if (sorted.empty()) return 0;
    return sorted[static_cast<std::size_t>(std::floor(p * static_cast<double>(sorted.size() - 1)))];
}

std::uint64_t counter(const json& stats, const char* pointer) {
    return stats.value(json::json_pointer(pointer), std::uint64_t{0});
}

// The round-trip times ping printed ("time=0.123 ms"), in microseconds, sorted.
std::vector<double> ping_times_us(const std::string& output) {
    std::vector<double> out;
    for (auto at = output.find("time="); at != std::string::npos; at = output.find("time=", at + 5)) {
        char* end = nullptr;
        const double ms = std::strtod(output.c_str() + at + 5, &end);
        if (end != output.c_str() + at + 5) out.push_back(ms * 1000);
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

bool is_north_south(const std::string& impl) { return impl.rfind("ns-", 0) == 0; }

NorthSouthBed::NorthSouthBed(const std::string& impl, const Settings& settings) : impl_(impl), settings_(settings) {
    VethOptions underlay;
    underlay.mtu = 1550;
    const auto hosts = topo_.add_hosts_on_bridge(2, "eth1", "192.168.1", underlay);
    host1_ = hosts[0];
    gw_ = hosts[1];
    outside_ = &topo_.add_namespace("outside");
    topo_.add_veth(*gw_, "eth2", *outside_, "eth0");
    topo_.add_address(*gw_, "eth2", "203.0.113.2/24");
    topo_.add_address(*gw_, "eth2", std::string(kNatAddress) + "/32");  // so gw's kernel answers ARP for it
    topo_.add_address(*outside_, "eth0", std::string(kOutside) + "/24");
    tenant_ = &topo_.add_namespace("t10");
    VethOptions veth;
    veth.mac_b = kTenantMac;
    topo_.add_veth(*host1_, "tap-blue-10", *tenant_, "eth0", veth);
    topo_.add_address(*tenant_, "eth0", "10.0.0.10/24");
    tenant_->run({"ip", "route", "add", "default", "via", "10.0.0.1"});
    if (impl == "ns-kernel")
        build_kernel();
    else if (impl == "ns-andromeda" || impl == "ns-andromeda-slow")
        start_andromeda(impl == "ns-andromeda");
    else
        throw std::runtime_error("unknown north-south datapath '" + impl +
                                 "' (ns-kernel, ns-andromeda, ns-andromeda-slow)");
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!tenant_->try_run({"ping", "-c", "1", "-W", "1", kOutside}, 5s).ok()) {
        if (std::chrono::steady_clock::now() > deadline)
            throw std::runtime_error(impl + ": 10.0.0.10 cannot ping the outside, " + kOutside);
    }
    log(impl + ": topology up, t10 reaches " + kOutside + " through the NAT");
}

NorthSouthBed::~NorthSouthBed() {
    for (Process* d : daemons_) d->stop(5s);
    for (const auto& f : files_) std::filesystem::remove(f);
}

std::string NorthSouthBed::describe() const {
    return "host1=" + host1_->name() + " gw=" + gw_->name() + " t10=" + tenant_->name() +
           " outside=" + outside_->name();
}

// As kernel-vxlan, with the gateway's side on gw's bridge: 10.0.0.1 there, routed to the uplink
// and masqueraded by nftables. Every other host's frame for an unknown MAC floods to the peer.
void NorthSouthBed::build_kernel() {
    if (!run_command({"nft", "--version"}).ok())
        throw std::runtime_error(
            "ns-kernel needs nftables' nft (apt-get install nftables, or scripts/install-deps.sh)");
    for (int i = 0; i < 2; ++i) {
        const Netns& h = i == 0 ? *host1_ : *gw_;
        // Bridged frames skip iptables/nftables, as on a router without br_netfilter: where the
        // module is loaded (Docker loads it), each namespace starts with it on, and it would tax
        // only this datapath's bridges (Andromeda's hosts have none).
        if (std::filesystem::exists("/proc/sys/net/bridge"))
            h.run({"sysctl", "-q", "-w", "net.bridge.bridge-nf-call-iptables=0",
                   "net.bridge.bridge-nf-call-arptables=0", "net.bridge.bridge-nf-call-ip6tables=0"});
        const std::string local = i == 0 ? "192.168.1.1" : "192.168.1.2";
        const std::string remote = i == 0 ? "192.168.1.2" : "192.168.1.1";
        const std::string remote_mac = i == 0 ? kGatewayMac : kTenantMac;
        h.run({"ip", "link", "add", "br0", "address", i == 0 ? "02:00:00:00:00:02" : kGatewayMac, "type", "bridge"});
        h.run({"ip", "link", "add", "vx0", "type", "vxlan", "id", "100", "dstport", "4789", "local", local, "dev",
               "eth1", "nolearning"});
        h.run({"ip", "link", "set", "vx0", "mtu", "1500", "master", "br0", "up"});
        if (i == 0) h.run({"ip", "link", "set", "tap-blue-10", "master", "br0"});
        h.run({"ip", "link", "set", "br0", "up"});
        h.run({"bridge", "fdb", "append", "00:00:00:00:00:00", "dev", "vx0", "dst", remote});
        h.run({"bridge", "fdb", "add", remote_mac, "dev", "vx0", "dst", remote});
        h.run({"bridge", "fdb", "replace", remote_mac, "dev", "vx0", "master", "static"});
    }
    gw_->run({"ip", "address", "add", "10.0.0.1/24", "dev", "br0"});
    gw_->run({"sysctl", "-q", "-w", "net.ipv4.ip_forward=1"});
    gw_->run({"nft", "add", "table", "ip", "nat"});
    gw_->run({"nft", "add", "chain", "ip", "nat", "postrouting",
              "{ type nat hook postrouting priority srcnat ; policy accept ; }"});
    gw_->run({"nft", "add", "rule", "ip", "nat", "postrouting", "oifname", "eth2", "ip", "saddr", "10.0.0.0/24", "snat",
              "to", kNatAddress});
}

// node1 with the tenant, gw the VPC's NAT gateway with eth2 as its uplink (the outside its next
// hop), as tests/integration/nat_fixture.hpp sets them up.
void NorthSouthBed::start_andromeda(bool fast_path) {
    const std::string id = "t" + std::to_string(getpid());
    names_[0] = id + "-ns-node1";
    names_[1] = id + "-ns-gw";
    const char* addresses[2] = {"192.168.1.1", "192.168.1.2"};
    for (int i = 0; i < 2; ++i) {
        test_support::FabricBuilder b(names_[i], addresses[i]);
        b.node_key(std::string("underlay_mtu = 1550\n") + (fast_path ? "" : "fastpath = false\n"));
        if (i == 1) b.uplink("eth2", "203.0.113.2", kOutside);
        b.peer(names_[0], addresses[0])
            .peer(names_[1], addresses[1])
            .vpc("blue", 100, "10.0.0.0/24", "10.0.0.1")
            .nat(names_[1], kNatAddress)
            .endpoint("10.0.0.10", kTenantMac, names_[0], "tap-blue-10");
        const std::string path = "/tmp/" + topo_.prefix() + "ns-" + (i == 0 ? "node1" : "gw") + ".toml";
        std::ofstream(path) << b.toml();
        files_.push_back(path);
        Process& p =
            topo_.spawn(i == 0 ? *host1_ : *gw_, settings_.prefix() + std::vector<std::string>{kDaemon, "-c", path});
        if (!p.wait_for_output(" ready: ", 30s)) throw std::runtime_error(names_[i] + " did not start:\n" + p.output());
        daemons_.push_back(&p);
    }
}

json NorthSouthBed::gateway_stats() const {
    if (daemons_.size() < 2) return json::object();
    const auto r = run_command({kCtl, "--node", names_[1], "stats", "--json"});
    const auto j = json::parse(r.output, nullptr, false);
    return r.ok() && !j.is_discarded() ? j : json::object();
}

std::vector<pid_t> NorthSouthBed::pids() const {
    std::vector<pid_t> out;
    for (Process* d : daemons_) out.push_back(d->pid());
    return out;
}

json NorthSouthBed::measure_tcp(int streams) {
    Process& server = topo_.spawn(
        *outside_, settings_.prefix() + std::vector<std::string>{"iperf3", "-s", "-1", "--forceflush", "-p", "5201"});
    if (!server.wait_for_output("Server listening", 10s)) throw std::runtime_error("iperf3 -s: " + server.output());
    const json stats0 = gateway_stats();
    const auto before = snapshot(pids());
    const auto c = tenant_->try_run(
        settings_.prefix() + std::vector<std::string>{"iperf3", "-c", kOutside, "-p", "5201", "-t",
                                                      std::to_string(static_cast<int>(settings_.tcp_seconds)), "-P",
                                                      std::to_string(streams), "-J"},
        seconds_plus(settings_.tcp_seconds, 20s));
    const auto after = snapshot(pids());
    const json stats1 = gateway_stats();
    server.wait(5s);
    const auto j = json::parse(c.output, nullptr, false);
    const double bps = j.is_discarded() ? 0.0 : j.value(json::json_pointer("/end/sum_received/bits_per_second"), 0.0);
    if (!c.ok() || bps <= 0)
        throw std::runtime_error(impl_ + ": iperf3 -c " + kOutside + ": " + c.output.substr(0, 2000));
    const auto d = delta(before, after);
    json r = {{"impl", impl_},
              {"streams", streams},
              {"gbps", bps / 1e9},
              {"retransmits", j.value(json::json_pointer("/end/sum_sent/retransmits"), 0)},
              {"bytes", j.value(json::json_pointer("/end/sum_received/bytes"), 0.0)},
              {"datapath_cpus", d.datapath_ns() / 1e9 / d.seconds}};
    if (!stats1.empty()) {
        // What the gateway's kernel translated (the NAT in tc), against the pipeline's share.
        r["kernel_nat_out_bytes"] =
            counter(stats1, "/fastpath/nat_out_bytes") - counter(stats0, "/fastpath/nat_out_bytes");
        r["kernel_nat_in_bytes"] =
            counter(stats1, "/fastpath/nat_in_bytes") - counter(stats0, "/fastpath/nat_in_bytes");
    }
    log(impl_ + " tcp x" + std::to_string(streams) + ": " + r.dump());
    return r;
}

// 200 pings a second (5 ms apart, --ping-interval changes the gap) for the measurement's
// seconds' worth of pings; every echo's RTT as ping printed it (microsecond resolution).
json NorthSouthBed::measure_ping() { return measure_ping_rtt(*tenant_, kOutside, impl_, settings_); }

json measure_ping_rtt(const Netns& from, const std::string& to, const std::string& impl, const Settings& settings) {
    const int count = std::max(100, static_cast<int>(settings.latency_seconds * 200));
    const auto p = from.try_run(settings.prefix() + std::vector<std::string>{"ping", "-n", "-c", std::to_string(count), "-i",
                                                                             fmt_seconds(settings.ping_interval), "-W", "1", to},
                                seconds_plus(count * settings.ping_interval, 20s));
    const auto times = ping_times_us(p.output);
    if (times.empty()) throw std::runtime_error(impl + ": ping " + to + ": " + p.output.substr(0, 2000));
    double mean = 0;
    for (const double t : times) mean += t;
    json r = {{"impl", impl},
              {"count", count},
              {"received", times.size()},
              {"lost", count - static_cast<int>(times.size())},
              {"p50_us", percentile(times, 0.5)},
              {"p99_us", percentile(times, 0.99)},
              {"max_us", times.back()},
              {"mean_us", mean / static_cast<double>(times.size())}};
    log(impl + " ping " + to + ": " + r.dump());
    return r;
}

json NorthSouthBed::measure_udp_rr() {
    Process& server =
        topo_.spawn(*outside_, settings_.prefix() + std::vector<std::string>{kRr, "server", "--port", "7777"});
    if (!server.wait_for_output("ready:", 10s)) throw std::runtime_error("udprr server: " + server.output());
    const auto before = snapshot(pids());
    const auto c = tenant_->try_run(
        settings_.prefix() + std::vector<std::string>{kRr, "client", "--to", kOutside, "--port", "7777", "--rate",
                                                      std::to_string(static_cast<int>(settings_.rate)), "--duration",
                                                      std::to_string(settings_.latency_seconds)},
        seconds_plus(settings_.latency_seconds, 20s));
    const auto after = snapshot(pids());
    server.stop(3s);
    const json j = last_json(c.output);
    if (!c.ok() || !j.contains("p99_us")) throw std::runtime_error(impl_ + ": udprr client: " + c.output);
    const auto d = delta(before, after);
    json r = {{"impl", impl_},
              {"rate", settings_.rate},
              {"p50_us", j["p50_us"]},
              {"p99_us", j["p99_us"]},
              {"p999_us", j["p999_us"]},
              {"max_us", j["max_us"]},
              {"samples", j["received"]},
              {"lost", j["lost"]},
              {"datapath_cpus", d.datapath_ns() / 1e9 / d.seconds}};
    log(impl_ + " udp request/response: " + r.dump());
    return r;
}

json NorthSouthBed::measure_connections() {
    const json stats0 = gateway_stats();
    json r = measure_tcp_crr(topo_, *outside_, *tenant_, kOutside, impl_, settings_, pids());
    const json stats1 = gateway_stats();
    if (!stats1.empty())
        r["kernel_installs"] = counter(stats1, "/nat_offload/installs") - counter(stats0, "/nat_offload/installs");
    log(impl_ + " connections: " + r.dump());
    return r;
}

json north_south_report(const std::vector<json>& tcp, const std::vector<json>& ping, const std::vector<json>& udp_rr,
                        const std::vector<json>& connections) {
    json out;
    out["topology"] =
        "tenant 10.0.0.10 behind node1 -> VPC NAT gateway node gw (uplink eth2, NAT address 203.0.113.10) -> outside "
        "203.0.113.1; "
        "ns-kernel: VXLAN + bridge to gw, gw routes and masquerades with nftables (snat to); ns-andromeda: two "
        "andromedad, fast "
        "path on; ns-andromeda-slow: fastpath = false";
    out["tcp"] = aggregate(tcp, {"impl", "streams"}, {"gbps"});
    out["ping"] = aggregate(ping, {"impl"}, {"p50_us", "p99_us"});
    out["udp_rr"] = aggregate(udp_rr, {"impl", "rate"}, {"p50_us", "p99_us", "p999_us"});
    out["connections"] = aggregate(connections, {"impl", "concurrency"}, {"per_second", "p99_us"});
    const auto row = [&](const char* section, const std::string& impl, const char* key = nullptr,
                         int value = 0) -> const json* {
        for (const auto& r : out[section])
            if (r["impl"] == impl && (key == nullptr || r[key] == value)) return &r;
        return nullptr;
    };
    const auto ratios_of = [&](const std::string& impl) {
        json ratios = json::object();
        const auto ratio = [&](const std::string& name, const json* a, const json* k, const char* field) {
            if (a != nullptr && k != nullptr && (*k)[field].get<double>() > 0)
                ratios[name] = (*a)[field].get<double>() / (*k)[field].get<double>();
        };
        for (const int streams : {1, 4})
            ratio("tcp_" + std::to_string(streams), row("tcp", impl, "streams", streams),
                  row("tcp", "ns-kernel", "streams", streams), "gbps");
        for (const char* f : {"p50_us", "p99_us"})
            ratio(std::string("ping_") + f, row("ping", impl), row("ping", "ns-kernel"), f);
        for (const char* f : {"p50_us", "p99_us", "p999_us"})
            ratio(std::string("udp_rr_") + f, row("udp_rr", impl), row("udp_rr", "ns-kernel"), f);
        ratio("connections_per_second", row("connections", impl), row("connections", "ns-kernel"), "per_second");
        return ratios;
    };
    // Each run's own ratio, then their median (paired_ratio, e2e_common.hpp): the figures to quote,
    // since an idle RTT drifts between runs more than between the datapaths.
    const auto paired_ratios_of = [&](const std::string& impl) {
        json ratios = json::object();
        const auto pair = [&](const std::string& name, const std::vector<json>& rows, const char* field,
                              const std::pair<std::string, json>& match = {}) {
            if (json r = paired_ratio(rows, impl, "ns-kernel", field, match); !r.is_null()) ratios[name] = r;
        };
        for (const int streams : {1, 4}) pair("tcp_" + std::to_string(streams), tcp, "gbps", {"streams", streams});
        for (const char* f : {"p50_us", "p99_us"}) pair(std::string("ping_") + f, ping, f);
        for (const char* f : {"p50_us", "p99_us", "p999_us"}) pair(std::string("udp_rr_") + f, udp_rr, f);
        pair("connections_per_second", connections, "per_second");
        return ratios;
    };
    out["ratios_andromeda_over_kernel"] = ratios_of("ns-andromeda");
    out["ratios_slow_path_over_kernel"] = ratios_of("ns-andromeda-slow");
    out["paired_ratios_andromeda_over_kernel"] = paired_ratios_of("ns-andromeda");
    out["paired_ratios_slow_path_over_kernel"] = paired_ratios_of("ns-andromeda-slow");
    return out;
}

std::vector<std::string> north_south_problems(const json& report) {
    std::vector<std::string> problems;
    for (const auto& r : report.value("connections", json::array()))
        if (r.value("failed", 0.0) > 0)
            problems.push_back(r["impl"].get<std::string>() + ": " + r["failed"].dump() +
                               " connections through the NAT failed");
    for (const auto& r : report.value("ping", json::array()))
        if (r.value("lost", 0.0) * 10 > r.value("count", 0.0))
            problems.push_back(r["impl"].get<std::string>() + ": " + r["lost"].dump() + " of " + r["count"].dump() +
                               " pings lost");
    for (const auto& r : report.value("tcp", json::array()))
        if (r["impl"] == "ns-andromeda" && r.value("kernel_nat_out_bytes", 0.0) * 2 < r.value("bytes", 0.0))
            problems.push_back("ns-andromeda: the gateway's kernel translated " +
                               r.value("kernel_nat_out_bytes", json(0)).dump() + " of " + r["bytes"].dump() +
                               " bytes of TCP x" + r["streams"].dump() + " (the fast path should carry most)");
    return problems;
}

}  // namespace andromeda::e2e
