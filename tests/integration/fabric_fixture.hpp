// An N-node fabric of andromedad instances on real namespaces, with configs generated from a
// description in the test (daemon_fixture.hpp's TwoNodes runs the shipped two-node configs):
//
//   tenant ns (eth0 <ip>, <mac>) ──veth── hostK ns: <port>   eth1 192.168.1.K ─┐
//   ...                                                                       bridge (underlay ns)
//   tenant ns ...                ──veth── hostM ns: <port>   eth1 192.168.1.M ─┘
//
// Usage: add_nodes(N), add_vpc(...), add_endpoint(...) (creates the tenant namespace and its
// veth), then start_all(). Node names are t<pid>-node<K>, unique per run; every file, namespace
// and process is removed with the fixture. `underlay` of a node may be changed (e.g. to a VLAN
// device) before start.
#pragma once

#include <algorithm>
#include <chrono>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "daemon_fixture.hpp"
#include "support/fabric_builder.hpp"

namespace andromeda::testing {

class Fabric : public ::testing::Test {
protected:
    struct Node {
        std::string name;      // t<pid>-node<K>
        std::string underlay;  // the [node] underlay interface
        std::string address;   // its underlay address
        std::string config;    // the config file, written by start_daemon
        Netns* host = nullptr;
        Process* daemon = nullptr;
    };
    struct Endpoint {
        std::size_t vpc = 0;
        std::size_t node = 0;
        std::string ip;
        std::string mac;
        std::string port;    // the tenant port on the node's host
        Netns* ns = nullptr; // the tenant, eth0 addressed ip/prefix
        std::string extra;   // more [[vpc.endpoint]] keys, verbatim (e.g. groups = [...])
    };
    struct Vpc {
        std::string name;
        unsigned vni = 0;
        std::string cidr;
        std::string gateway;
        std::string extra;  // more [[vpc]] keys, verbatim
    };

    void SetUp() override {
        ANDROMEDA_REQUIRE_ROOT();
        sweep_stale_control_sockets();
        io::testing::sweep_stale_test_pins();
    }

    void TearDown() override {
        for (const auto& n : nodes_) stop_and_check_daemon(n.daemon, n.name);
        for (const auto& path : files_) std::filesystem::remove(path);
    }

    // `count` hosts on one underlay bridge, host K with eth1 192.168.1.K/24.
    void add_nodes(std::size_t count, const VethOptions& underlay = {}) {
        for (Netns* host : topo_.add_hosts_on_bridge(count, "eth1", "192.168.1", underlay)) {
            Node node;
            node.name = "t" + std::to_string(getpid()) + "-node" + std::to_string(nodes_.size() + 1);
            node.underlay = "eth1";
            node.address = "192.168.1." + std::to_string(nodes_.size() + 1);
            node.host = host;
            nodes_.push_back(node);
        }
    }

    std::size_t add_vpc(const std::string& name, unsigned vni, const std::string& cidr = "10.0.0.0/24",
                        const std::string& gateway = "10.0.0.1") {
        vpcs_.push_back({name, vni, cidr, gateway, ""});
        return vpcs_.size() - 1;
    }

    // An endpoint of `vpc` on `node`: a tenant namespace <vpc name><last octet> whose eth0 has
    // `ip` (/24) and `mac`, plugged into port tap-<vpc name>-<last octet> of the node's host.
    Endpoint& add_endpoint(std::size_t vpc, std::size_t node, const std::string& ip, const std::string& mac) {
        const std::string octet = ip.substr(ip.rfind('.') + 1);
        Endpoint endpoint;
        endpoint.vpc = vpc;
        endpoint.node = node;
        endpoint.ip = ip;
        endpoint.mac = mac;
        endpoint.port = "tap-" + vpcs_[vpc].name + "-" + octet;
        endpoint.ns = &topo_.add_namespace(vpcs_[vpc].name + octet);
        VethOptions veth;
        veth.mac_b = mac;
        topo_.add_veth(*nodes_[node].host, endpoint.port, *endpoint.ns, "eth0", veth);
        topo_.add_address(*endpoint.ns, "eth0", ip + "/24");
        endpoints_.push_back(endpoint);
        return endpoints_.back();
    }

    // The whole fabric as node `i` sees it.
    std::string config_text(std::size_t i) const {
        const Node& self = nodes_[i];
        test_support::FabricBuilder b(self.name, self.address, self.underlay);
        b.node_key(node_extra_);
        for (const Node& n : nodes_) b.peer(n.name, n.address);
        for (std::size_t v = 0; v < vpcs_.size(); ++v) {
            const Vpc& vpc = vpcs_[v];
            b.vpc(vpc.name, vpc.vni, vpc.cidr, vpc.gateway).vpc_key(vpc.extra);
            for (const Endpoint& e : endpoints_)
                if (e.vpc == v) b.endpoint(e.ip, e.mac, nodes_[e.node].name, e.port, e.extra);
        }
        return b.toml();
    }

    std::string write_config(std::size_t i, const std::string& text) {
        const std::string path = "/tmp/" + topo_.prefix() + "fabric-node" + std::to_string(i + 1) + ".toml";
        std::ofstream(path) << with_path_mode(text);
        files_.push_back(path);
        return path;
    }

    // Starts node i's daemon (writing its config first) and waits for its ready line.
    Process& start_daemon(std::size_t i) {
        Node& node = nodes_[i];
        if (node.config.empty()) node.config = write_config(i, config_text(i));
        Process& p = topo_.spawn(*node.host, {kDaemon, "-c", node.config});
        node.daemon = &p;
        if (!p.wait_for_output(" ready: ", 20s)) ADD_FAILURE() << node.name << " did not start:\n" << p.output();
        return p;
    }

    void start_all() {
        for (std::size_t i = 0; i < nodes_.size(); ++i) start_daemon(i);
    }

    CommandResult ctl(std::size_t i, const std::vector<std::string>& args, std::chrono::milliseconds timeout = 20s) const {
        std::vector<std::string> argv = {kCtl, "--node", nodes_[i].name};
        argv.insert(argv.end(), args.begin(), args.end());
        return run_command(argv, timeout);
    }

    nlohmann::json ctl_json(std::size_t i, const std::string& command) const {
        const auto r = ctl(i, {command, "--json"});
        // status and health exit 3 when the daemon is degraded; their JSON is whole all the same.
        const bool degraded = r.exit_code == 3 && (command == "status" || command == "health");
        if (!r.ok() && !degraded) {
            ADD_FAILURE() << "andromedactl " << command << ": " << r.output;
            return nlohmann::json::object();
        }
        return nlohmann::json::parse(r.output, nullptr, false);
    }

    // stats --json of node i, e.g. stat(s, "xdp", "drop_unknown_vni").
    nlohmann::json stats(std::size_t i) const { return ctl_json(i, "stats"); }
    static std::uint64_t stat(const nlohmann::json& stats, const std::string& group, const std::string& name) {
        return stats.value(nlohmann::json::json_pointer("/" + group + "/" + name), std::uint64_t{0});
    }
    std::uint64_t counter(std::size_t i, const std::string& group, const std::string& name) const {
        return stat(stats(i), group, name);
    }
    static std::uint64_t stat(const nlohmann::json& stats, PathCounter c) { return stat(stats, c.group, c.name); }
    std::uint64_t counter(std::size_t i, PathCounter c) const { return counter(i, c.group, c.name); }

    static bool ping_once(const Netns& from, const std::string& to) {
        return from.try_run({"ping", "-c", "1", "-W", "1", to}, 5s).ok();
    }

    // Waits for a TCP listener on `port` inside `ns`.
    static bool listening(const Netns& ns, int port) {
        const std::string p = std::to_string(port);
        return eventually([&] { return contains(ns.try_run({"ss", "-Hltn", "sport = :" + p}).output, ":" + p); }, 5s);
    }

    // RX/TX packet counters of `ifname` in `ns` (ip -s -j link).
    static std::pair<std::uint64_t, std::uint64_t> packet_counts(const Netns& ns, const std::string& ifname) {
        const auto out = ns.run({"ip", "-s", "-j", "link", "show", ifname});
        const auto j = nlohmann::json::parse(out, nullptr, false);
        if (!j.is_array() || j.empty()) return {0, 0};
        const auto& s = j[0]["stats64"];
        return {s["rx"].value("packets", std::uint64_t{0}), s["tx"].value("packets", std::uint64_t{0})};
    }

    // A file of `bytes` random bytes (removed with the fixture) and its sha256.
    std::pair<std::string, std::string> random_file(const std::string& tag, std::size_t bytes) {
        const std::string path = "/tmp/" + topo_.prefix() + tag;
        files_.push_back(path);
        const auto made = run_command({"sh", "-c", "head -c " + std::to_string(bytes) + " /dev/urandom > " + path}, 60s);
        if (!made.ok()) ADD_FAILURE() << made.output;
        const auto sum = run_command({"sha256sum", path});
        return {path, sum.output.substr(0, 64)};
    }

    // Sends `blob` from `from` to `to` over TCP port `port` with nc and checks that what arrived
    // has sha256 `digest`; `seconds`, when given, gets how long the sender took. Fatal failures
    // inside: call it in ASSERT_NO_FATAL_FAILURE.
    void send_file(const Endpoint& from, const Endpoint& to, int port, const std::string& blob, const std::string& digest,
                   std::chrono::seconds timeout = 60s, double* seconds = nullptr) {
        const std::string pair = from.ip + " -> " + to.ip;
        const std::string received = "/tmp/" + topo_.prefix() + "received";
        if (std::find(files_.begin(), files_.end(), received) == files_.end()) files_.push_back(received);
        const std::string p = std::to_string(port);
        Process& receiver = topo_.spawn(*to.ns, {"sh", "-c", "exec nc -l " + p + " </dev/null >" + received});
        ASSERT_TRUE(listening(*to.ns, port)) << pair;
        const auto start = std::chrono::steady_clock::now();
        const auto sender = from.ns->try_run({"sh", "-c", "nc -N " + to.ip + " " + p + " < " + blob}, timeout);
        if (seconds != nullptr) *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        ASSERT_TRUE(sender.ok()) << pair << ": " << sender.output << logs();
        ASSERT_NE(receiver.wait(30s), -1) << pair << ": the receiver never saw the end of the stream";
        const auto got = run_command({"sha256sum", received});
        EXPECT_TRUE(contains(got.output, digest)) << pair << ": sent " << digest << ", received " << got.output;
    }

    std::string logs() const {
        std::string out;
        for (const auto& n : nodes_)
            if (n.daemon != nullptr) out += "---- " + n.name + " ----\n" + n.daemon->output();
        return out;
    }


    Topology topo_;
    std::vector<Node> nodes_;
    std::vector<Vpc> vpcs_;
    std::deque<Endpoint> endpoints_;  // a deque: references from add_endpoint stay valid
    std::string node_extra_;           // more [node] keys for every node, verbatim
    std::vector<std::string> files_;
};

}  // namespace andromeda::testing
