// andromedad as a systemd service (Type=notify): the state changes it reports through
// sd_notify(3), and the watchdog. Outside systemd (no NOTIFY_SOCKET) every call does nothing.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace andromeda::daemon::service {

// READY=1 with a STATUS= line: started, or a reload finished.
void notify_ready(std::string_view status);
// RELOADING=1 with MONOTONIC_USEC (what systemd 253+'s notify-reload expects too).
void notify_reloading();
// STOPPING=1: the stop has begun (teardown may take seconds).
void notify_stopping();
// STATUS= alone, shown by `systemctl status`.
void notify_status(std::string_view status);

// The service manager's watchdog, when WatchdogSec= set one for this process: the main loop pings
// while the daemon is alive; a daemon that stops pinging is killed and restarted (Restart=).
class Watchdog {
public:
    Watchdog();
    [[nodiscard]] bool enabled() const noexcept { return interval_.has_value(); }
    [[nodiscard]] std::optional<std::chrono::microseconds> interval() const noexcept { return interval_; }
    // WATCHDOG=1 when `alive`; otherwise no ping (said once in the log, with `why`).
    void ping(bool alive, const std::string& why);

private:
    std::optional<std::chrono::microseconds> interval_;
    bool withheld_ = false;
};

}  // namespace andromeda::daemon::service
