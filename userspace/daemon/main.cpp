// andromedad: the Andromeda host data plane. Runs in the foreground and logs to stderr;
// SIGTERM/SIGINT stop it cleanly (nothing left behind), SIGHUP reloads the config.
#include <CLI/CLI.hpp>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include <cstdio>

#include "daemon/daemon.hpp"
#include "daemon/daemon_support.hpp"
#include "daemon/host_checks.hpp"
#include "daemon/logging.hpp"
#include "fabric/loader.hpp"
#include "io/netlink/interfaces.hpp"
#include "io/plan/map_capacity.hpp"
#include "version/version.hpp"

namespace {

using namespace andromeda;

// --check: the config, then what it needs from this host; nothing is changed.
int check_config(const std::string& path) {
    fabric::LoadOptions options;
    options.ports = fabric::resolve_port_names([](std::string_view port) -> std::optional<std::uint32_t> {
        if (const auto link = io::find_interface(port)) return link->ifindex;
        return std::nullopt;
    });
    using spdlog::level::err;
    const auto loaded = fabric::load_fabric_file(path, options);
    // Valid, but more than the BPF maps hold: refused as a reload would be.
    const auto errors_found = loaded.ok() ? io::capacity_errors(*loaded.snapshot) : loaded.errors;
    if (!errors_found.empty()) {
        std::string errors = fabric::to_string(errors_found);
        while (!errors.empty() && errors.back() == '\n') errors.pop_back();
        daemon::print_to_stderr(err, errors);
        daemon::print_to_stderr(err, path + ": invalid configuration");
        return 1;
    }
    const auto check = daemon::check_host(*loaded.snapshot);
    for (const auto& w : check.warnings) daemon::print_to_stderr(spdlog::level::warn, "warning: " + w);
    for (const auto& e : check.errors) daemon::print_to_stderr(err, "error: " + e);
    // A missing tenant port is a warning, as at start: its endpoint waits for it (a VM not up
    // yet must not keep the node down, and systemd's ExecStartPre runs this).
    if (!check.facts) {
        daemon::print_to_stderr(err, path + ": valid, but this host does not match it (see above)");
        return 1;
    }
    if (const auto problem = daemon::privilege_problem(); !problem.empty()) {
        daemon::print_to_stderr(err, "error: " + problem);
        daemon::print_to_stderr(err, path + ": valid, but andromedad could not start with these privileges");
        return 1;
    }
    const auto& s = *loaded.snapshot;
    const std::string missing =
        check.missing_tenant_ports.empty()
            ? std::string()
            : fmt::format("; {} tenant port(s) missing (see the warnings)", check.missing_tenant_ports.size());
    std::printf("%s: OK: node %s, underlay %s (%s, MTU %u, %u RX queue(s)), %zu nodes, %zu VPCs, %zu endpoints%s\n",
                path.c_str(), s.local().name.c_str(), check.facts->underlay.name.c_str(),
                check.facts->underlay_address.to_string().c_str(), check.facts->underlay.mtu,
                check.facts->underlay.rx_queues, s.nodes().size(), s.vpcs().size(), s.endpoints().size(),
                missing.c_str());
    return 0;
}

void block_control_signals() {
    sigset_t signals;
    sigemptyset(&signals);
    for (const int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&signals, s);
    // Blocked here, before any thread exists, so every thread inherits it and only the main
    // thread's sigtimedwait receives them.
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    signal(SIGPIPE, SIG_IGN);  // a control client that hangs up must not kill the daemon
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"andromedad: the Andromeda host data plane (foreground; SIGTERM/SIGINT stop it, SIGHUP reloads)"};
    daemon::DaemonOptions options;
    bool check = false;
    bool verbose = false;
    app.add_option("-c,--config", options.config_path, "the node.toml to run")->required();
    app.add_flag("--check", check, "validate the config, this host's interfaces and andromedad's capabilities, then exit");
    app.add_flag("-v,--verbose", verbose, "log debug messages too");
    app.add_option("--control-socket", options.control_socket, "control socket path (default /run/andromeda/<node>.sock)");
    app.set_version_flag("--version", "andromedad " + version_text());
    CLI11_PARSE(app, argc, argv);

    daemon::setup_logging(verbose);

    if (check) return check_config(options.config_path);
    block_control_signals();
    try {
        daemon::Daemon instance(options);
        instance.run();
    } catch (const daemon::StartupError& e) {
        spdlog::error("cannot start: {}", e.what());
        return 1;
    } catch (const std::exception& e) {
        spdlog::error("cannot start: {}", e.what());
        return 1;
    }
    return 0;
}
