// andromedactl's daemon commands: status, stats, fabric, conntrack, reload. Each sends one
// request over the instance's control socket and renders the JSON result for a terminal (or
// prints it as is with --json).
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

#include "control/messages.hpp"
#include "control/protocol.hpp"

namespace andromeda::ctl {

// Which daemon to talk to: an explicit socket, an instance (node) name, or — when neither is
// given — the only instance running on this host.
struct Target {
    std::optional<std::string> socket;
    std::optional<std::string> node;
};

// Resolves the control socket path; on failure says why (none running, several running).
[[nodiscard]] std::optional<std::string> resolve_socket(const Target& target, std::string& error,
                                                        const std::string& run_dir = "/run/andromeda");

// Renderers of the daemon's replies for a terminal, exposed for tests.
[[nodiscard]] std::string render_status(const control::StatusReply& reply);
// With `previous` (the last reply of `stats --watch`), every counter with its rate since then.
[[nodiscard]] std::string render_stats(const control::StatsReply& reply, const control::StatsReply* previous = nullptr,
                                       double interval_s = 0);
[[nodiscard]] std::string render_fabric(const control::FabricReply& reply);
[[nodiscard]] std::string render_conntrack(const control::ConntrackReply& reply);
[[nodiscard]] std::string render_reload(const control::ReloadReply& reply);
[[nodiscard]] std::string render_health(const control::HealthReply& reply);
[[nodiscard]] std::string render_log_level(const control::LogLevelReply& reply);
[[nodiscard]] std::string render_policy(const control::PolicyReply& reply);
[[nodiscard]] std::string render_leases(const control::LeasesReply& reply);

struct CommandOptions {
    bool json = false;
    std::optional<double> watch_s;  // stats --watch [SECONDS]
};

// Exit codes of run_control_command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitRefused = 1;      // the daemon refused the request (a reload's errors, a bad filter)
inline constexpr int kExitUnreachable = 2;  // no daemon, or a reply this andromedactl cannot read
inline constexpr int kExitDegraded = 3;     // health, status: the daemon runs but is degraded

// Runs one command; returns one of the exit codes above.
int run_control_command(const Target& target, const control::ControlRequest& request, const CommandOptions& options,
                        std::ostream& out, std::ostream& err);

}  // namespace andromeda::ctl
