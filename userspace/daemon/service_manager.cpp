#include "daemon/service_manager.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

#include <cstring>
#include <ctime>

namespace andromeda::daemon::service {

namespace {

void notify(const std::string& state) {
    // unset_environment = 0: a child (none today) could report too. A failure to reach the
    // manager is not the daemon's failure: logged at debug, the daemon goes on.
    if (const int rc = sd_notify(0, state.c_str()); rc < 0)
        spdlog::debug("sd_notify({}): {}", state.substr(0, state.find('\n')), std::strerror(-rc));
}

std::uint64_t monotonic_usec() {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<std::uint64_t>(now.tv_sec) * 1000000u + static_cast<std::uint64_t>(now.tv_nsec) / 1000u;
}

// STATUS= is one line.
std::string one_line(std::string_view text) {
    std::string out(text.substr(0, text.find('\n')));
    return out;
}

}  // namespace

void notify_ready(std::string_view status) { notify("READY=1\nSTATUS=" + one_line(status)); }

void notify_reloading() { notify(fmt::format("RELOADING=1\nMONOTONIC_USEC={}\nSTATUS=reloading", monotonic_usec())); }

void notify_stopping() { notify("STOPPING=1\nSTATUS=stopping"); }

void notify_status(std::string_view status) { notify("STATUS=" + one_line(status)); }

Watchdog::Watchdog() {
    std::uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
        interval_ = std::chrono::microseconds(usec);
        spdlog::info("systemd watchdog: pinged every second while alive; killed after {} ms without a ping",
                     usec / 1000);
    }
}

void Watchdog::ping(bool alive, const std::string& why) {
    if (!interval_) return;
    if (alive) {
        if (withheld_) spdlog::info("systemd watchdog: pinging again");
        withheld_ = false;
        notify("WATCHDOG=1");
        return;
    }
    if (!withheld_) spdlog::error("systemd watchdog: no longer pinged ({}): systemd restarts andromedad", why);
    withheld_ = true;
}

}  // namespace andromeda::daemon::service
