// andromedactl: the operator's command line.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>

#include "ctl/control_commands.hpp"
#include "ctl/drops_command.hpp"
#include "ctl/inspect_command.hpp"

namespace {

using andromeda::control::Command;

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"andromedactl: inspect and control an Andromeda data plane"};
    app.require_subcommand(1);

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
    auto* status_cmd = add_daemon_command("status", "Ports (XDP mode, AF_XDP bind, queues), fabric generation, uptime");
    auto* stats_cmd = add_daemon_command("stats", "Counters: XDP verdicts and drop reasons, data path, NAT, daemon");
    double watch = 0;
    auto* watch_opt = stats_cmd->add_option("--watch", watch, "repeat every SECONDS with rates")
                          ->expected(0, 1)
                          ->default_str("1");
    auto* fabric_cmd = add_daemon_command("fabric", "The running fabric: nodes, VPCs, endpoints");
    auto* conntrack_cmd = add_daemon_command("conntrack", "NAT flows: original and translated tuples, state, age");
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
    if (!socket.empty()) target.socket = socket;
    if (!node.empty()) target.node = node;
    andromeda::control::ControlRequest request;
    if (status_cmd->parsed()) request.command = Command::status;
    if (stats_cmd->parsed()) {
        request.command = Command::stats;
        if (watch_opt->count() > 0) options.watch_s = watch > 0 ? watch : 1.0;
    }
    if (fabric_cmd->parsed()) request.command = Command::fabric;
    if (conntrack_cmd->parsed()) request.command = Command::conntrack;
    if (reload_cmd->parsed()) {
        request.command = Command::reload;
        // Absolute: the daemon resolves paths against its own working directory, not ours.
        if (!reload_file.empty()) request.file = std::filesystem::absolute(reload_file).lexically_normal().string();
    }
    return andromeda::ctl::run_control_command(target, request, options, std::cout, std::cerr);
}
