// The control socket's server: a Unix stream socket, one per daemon instance, readable and
// writable by its owner only (the daemon runs as root, so root only), one request line per
// connection. It serves several clients at once: connections are read and written without
// blocking on one thread, so a client that connects and sends nothing (or reads nothing) holds
// up no one else; complete requests are handled one at a time, in arrival order, on that thread,
// so the handler needs no locking of its own.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "control/protocol.hpp"

namespace andromeda::daemon {

class ControlServer {
public:
    // Returns the full response line (render_ok / render_error), without the newline.
    using Handler = std::function<std::string(const control::ControlRequest&)>;

    // At most this many connections are open at once; more wait in the listen backlog.
    static constexpr std::size_t kMaxConnections = 32;
    // A connection that has not sent its whole request, or read its whole response, within this
    // time is closed.
    static constexpr std::chrono::milliseconds kConnectionTimeout{5000};

    ControlServer() = default;
    ControlServer(const ControlServer&) = delete;
    ControlServer& operator=(const ControlServer&) = delete;
    ~ControlServer();

    // Binds `path` (creating its directory with mode 0700; replacing a stale socket that no
    // live daemon answers on) and starts serving on a thread of its own. On failure returns
    // false and says why in `error` — e.g. another instance already serves this path.
    bool start(const std::string& path, Handler handler, std::string& error);
    // Stops serving, closes every connection and removes the socket file. Safe to call twice.
    void stop();

    [[nodiscard]] const std::string& path() const noexcept { return path_; }

private:
    void serve();

    std::string path_;
    Handler handler_;
    int listen_fd_ = -1;
    int wake_fd_ = -1;  // eventfd: stop() wakes the serving thread's poll
    std::thread thread_;
};

}  // namespace andromeda::daemon
