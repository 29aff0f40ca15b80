// andromedactl: the operator's command line.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>

#include "ctl/control_commands.hpp"
#include "ctl/drops_command.hpp"
#include "ctl/etcd_commands.hpp"
#include "ctl/inspect_command.hpp"
#include "version/version.hpp"

namespace {

using andromeda::control::Command;

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"andromedactl: inspect and control an Andromeda data plane"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "andromedactl " + andromeda::version_text());

    andromeda::ctl::Target target;
    std::string socket, node;
    app.add_option("--socket", socket, "the daemon's control socket (default: /run/andromeda/<node>.sock)");
    app.add_option("-n,--node", node, "the instance (its [node] name) when several run on this host");

    andromeda::ctl::CommandOptions options;
    auto add_daemon_command = [&](const char* name, const char* help) {
        auto* cmd = app.add_subcommand(name, help);
        cmd->add_flag("--json", options.json, "print the daemon's JSON as is");
        return cmd;
    };
    auto* status_cmd = add_daemon_command(
        "status", "Ports (XDP mode, AF_XDP bind, queues), fabric generation, uptime, health (exit 3 when degraded)");
    add_daemon_command("health", "healthy (exit 0), or degraded (exit 3) and why: etcd, ports, the last reload, workers");
    add_daemon_command("policy", "Security groups: every rule with its hits, the defaults, the firewall's counters");
    add_daemon_command("leases", "The gateway's DHCP clients: address, state, expiry, last message; the server's counters");
    auto* log_level_cmd = add_daemon_command("log-level", "Show the daemon's log level, or set it: trace|debug|info|warn|error|critical|off");
    std::string log_level;
    log_level_cmd->add_option("level", log_level, "the new level")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
    auto* stats_cmd = add_daemon_command("stats", "Counters: XDP verdicts and drop reasons, data path, NAT, daemon");
    double watch = 0;
    auto* watch_opt = stats_cmd->add_option("--watch", watch, "repeat every SECONDS with rates")
                          ->expected(0, 1)
                          ->default_str("1");
    auto* fabric_cmd = add_daemon_command(
        "fabric", "The running fabric: nodes, VPCs, endpoints; or, with import|put|delete|get, the fabric in etcd");
    fabric_cmd->require_subcommand(0, 1);
    andromeda::ctl::EtcdTarget etcd;
    std::string etcd_urls, etcd_prefix;
    auto add_etcd_command = [&](const char* name, const char* help) {
        auto* cmd = fabric_cmd->add_subcommand(name, help);
        cmd->add_option("-c,--config", etcd.config, "a node.toml whose [etcd] says where etcd is");
        cmd->add_option("--etcd", etcd_urls, "etcd's client URLs, comma-separated (overrides -c)");
        cmd->add_option("--prefix", etcd_prefix, "the key prefix (default /andromeda, or [etcd] prefix)");
        cmd->add_option("--cacert", etcd.ca_file, "TLS: the CA of etcd's certificates");
        cmd->add_option("--cert", etcd.cert_file, "TLS: a client certificate");
        cmd->add_option("--key", etcd.key_file, "TLS: its key");
        cmd->add_option("--user", etcd.username, "etcd user");
        cmd->add_option("--password-file", etcd.password_file, "a file holding its password");
        return cmd;
    };
    std::string import_file, etcd_kind, etcd_name, etcd_value;
    bool import_replace = false, get_json = false;
    auto* import_cmd = add_etcd_command("import", "Validate a node.toml's fabric and write it into etcd");
    import_cmd->add_option("file", import_file, "the node.toml")->required();
    import_cmd->add_flag("--replace", import_replace, "also delete the keys under the prefix the file does not have");
    auto* put_cmd = add_etcd_command("put", "Write one node, VPC or endpoint (checked with the fabric it joins)");
    put_cmd->add_option("kind", etcd_kind, "node | vpc | endpoint")->required();
    put_cmd->add_option("name", etcd_name, "node or VPC name, or VPC/IP for an endpoint")->required();
    put_cmd->add_option("value", etcd_value, "the object as JSON, node.toml's fields, e.g. '{\"mac\": \"02:..\", \"node\": \"node2\"}'")
        ->required();
    auto* delete_cmd = add_etcd_command("delete", "Delete a node, a VPC (with its endpoints) or an endpoint");
    delete_cmd->add_option("kind", etcd_kind, "node | vpc | endpoint")->required();
    delete_cmd->add_option("name", etcd_name, "node or VPC name, or VPC/IP")->required();
    auto* get_cmd = add_etcd_command("get", "The keys and values in etcd, and the ones the fabric leaves out, and why");
    get_cmd->add_option("kind", etcd_kind, "node | vpc | endpoint");
    get_cmd->add_option("name", etcd_name, "one of them");
    get_cmd->add_flag("--json", get_json, "print JSON");
    auto* conntrack_cmd = add_daemon_command("conntrack", "NAT flows: original and translated tuples, state, age");
    andromeda::control::ConntrackQuery conntrack;
    std::string flow_address, flow_state, flow_protocol;
    std::uint32_t flow_port = 0;
    conntrack_cmd->add_option("--limit", conntrack.limit, "at most N flows (1-10000)")
        ->capture_default_str()
        ->check(CLI::Range(std::uint64_t{1}, andromeda::control::kConntrackMaxLimit));
    conntrack_cmd->add_option("--offset", conntrack.offset, "skip the first N matching flows (the next page)");
    auto* address_opt = conntrack_cmd->add_option("--address", flow_address, "only flows with this IPv4 address on either side");
    auto* port_opt = conntrack_cmd->add_option("--port", flow_port, "only flows with this port on either side (with --address: that address's port)")
                         ->check(CLI::Range(0, 65535));
    auto* state_opt = conntrack_cmd->add_option("--state", flow_state,
                                                "only flows in this state: syn_sent, syn_received, established, fin_wait, "
                                                "closing, reset, unreplied, replied");
    auto* protocol_opt = conntrack_cmd->add_option("--protocol", flow_protocol, "only tcp, udp or icmp flows")
                             ->check(CLI::IsMember({"tcp", "udp", "icmp"}));
    auto* reload_cmd = add_daemon_command("reload", "Load FILE (default: the running config), print the diff applied");
    std::string reload_file;
    reload_cmd->add_option("file", reload_file, "the new node.toml");

    bool drops_json = false;
    auto* drops_cmd = app.add_subcommand("drops", "Every drop reason of every layer: stable id, meaning, the stats counter that counts it");
    drops_cmd->add_flag("--json", drops_json, "print JSON instead of a table");

    andromeda::ctl::InspectRequest inspect;
    std::string hex, pcap;
    auto* inspect_cmd = app.add_subcommand(
        "inspect", "Decode a frame layer by layer: HEX, --pcap FILE, or (no argument) a synthesised overlay packet");
    auto* hex_opt = inspect_cmd->add_option("hex", hex, "the frame as hex digits (spaces, ':' and '-' allowed)");
    inspect_cmd->add_option("--pcap", pcap, "decode every frame of this pcap/pcapng file")->excludes(hex_opt);
    inspect_cmd->add_flag("--json", inspect.json, "print JSON instead of text");
    inspect_cmd->add_flag("--print-hex", inspect.print_hex, "also print each frame's bytes as hex (\"hex ...\" before its decode)");
    inspect_cmd->add_option("--andromeda-port", inspect.options.andromeda_port, "UDP port decoded as Andromeda")
        ->capture_default_str();
    inspect_cmd->add_option("--vxlan-port", inspect.options.vxlan_ports, "UDP ports decoded as VXLAN")
        ->capture_default_str();

    CLI11_PARSE(app, argc, argv);

    if (drops_cmd->parsed()) return andromeda::ctl::run_drops(drops_json, std::cout);
    if (inspect_cmd->parsed()) {
        if (!hex.empty()) inspect.hex = hex;
        if (!pcap.empty()) inspect.pcap = pcap;
        return andromeda::ctl::run_inspect(inspect, std::cout, std::cerr);
    }
    if (fabric_cmd->get_subcommands().size() == 1) {
        for (std::size_t at = 0; !etcd_urls.empty();) {
            const auto comma = etcd_urls.find(',', at);
            etcd.endpoints.push_back(etcd_urls.substr(at, comma - at));
            if (comma == std::string::npos) break;
            at = comma + 1;
        }
        if (!etcd_prefix.empty()) etcd.prefix = etcd_prefix;
        if (import_cmd->parsed()) return andromeda::ctl::run_fabric_import(etcd, import_file, import_replace, std::cout, std::cerr);
        if (put_cmd->parsed())
            return andromeda::ctl::run_fabric_put(etcd, etcd_kind, etcd_name, etcd_value, std::cout, std::cerr);
        if (delete_cmd->parsed()) return andromeda::ctl::run_fabric_delete(etcd, etcd_kind, etcd_name, std::cout, std::cerr);
        return andromeda::ctl::run_fabric_get(etcd, etcd_kind, etcd_name, get_json, std::cout, std::cerr);
    }
    if (!socket.empty()) target.socket = socket;
    if (!node.empty()) target.node = node;
    andromeda::control::ControlRequest request;
    if (status_cmd->parsed()) request.command = Command::status;
    if (stats_cmd->parsed()) {
        request.command = Command::stats;
        if (watch_opt->count() > 0) options.watch_s = watch > 0 ? watch : 1.0;
    }
    if (fabric_cmd->parsed()) request.command = Command::fabric;
    if (conntrack_cmd->parsed()) {
        request.command = Command::conntrack;
        if (address_opt->count() > 0) conntrack.address = flow_address;
        if (port_opt->count() > 0) conntrack.port = static_cast<std::uint16_t>(flow_port);
        if (state_opt->count() > 0) conntrack.state = flow_state;
        if (protocol_opt->count() > 0) conntrack.protocol = flow_protocol;
        request.conntrack = conntrack;
    }
    if (app.got_subcommand("health")) request.command = Command::health;
    if (app.got_subcommand("policy")) request.command = Command::policy;
    if (app.got_subcommand("leases")) request.command = Command::leases;
    if (log_level_cmd->parsed()) {
        request.command = Command::log_level;
        if (!log_level.empty()) request.level = log_level;
    }
    if (reload_cmd->parsed()) {
        request.command = Command::reload;
        // Absolute: the daemon resolves paths against its own working directory, not ours.
        if (!reload_file.empty()) request.file = std::filesystem::absolute(reload_file).lexically_normal().string();
    }
    return andromeda::ctl::run_control_command(target, request, options, std::cout, std::cerr);
}
