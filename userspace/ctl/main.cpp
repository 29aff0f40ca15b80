// andromedactl: the operator's command line.
#include <CLI/CLI.hpp>

#include <iostream>

#include "ctl/inspect_command.hpp"

int main(int argc, char** argv) {
    CLI::App app{"andromedactl: inspect and control an Andromeda data plane"};
    app.require_subcommand(1);

    andromeda::ctl::InspectRequest inspect;
    std::string hex;
    std::string pcap;
    auto* inspect_cmd = app.add_subcommand(
        "inspect", "Decode a frame layer by layer: HEX, --pcap FILE, or (no argument) a synthesised overlay packet");
    inspect_cmd->add_option("hex", hex, "the frame as hex digits (spaces, ':' and '-' allowed)");
    auto* pcap_opt = inspect_cmd->add_option("--pcap", pcap, "decode every frame of this pcap/pcapng file");
    inspect_cmd->add_flag("--json", inspect.json, "print JSON instead of text");
    inspect_cmd->add_option("--andromeda-port", inspect.options.andromeda_port,
                            "UDP port decoded as the Andromeda overlay")
        ->capture_default_str();
    inspect_cmd->add_option("--vxlan-port", inspect.options.vxlan_ports, "UDP ports decoded as VXLAN")
        ->capture_default_str();
    pcap_opt->excludes(inspect_cmd->get_option("hex"));

    CLI11_PARSE(app, argc, argv);

    if (inspect_cmd->parsed()) {
        if (!hex.empty()) inspect.hex = hex;
        if (!pcap.empty()) inspect.pcap = pcap;
        return andromeda::ctl::run_inspect(inspect, std::cout, std::cerr);
    }
    return 0;
}
