// The control socket: a Unix stream socket, one per daemon instance, readable and writable by
// its owner only (the daemon runs as root, so root only). One request line per connection.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "daemon/control_protocol.hpp"

namespace andromeda::daemon {

// Default socket path of the instance named `node`.
[[nodiscard]] std::string default_control_socket_path(const std::string& node);

class ControlServer {
public:
    // Returns the full response line (render_ok / render_error), without the newline.
    using Handler = std::function<std::string(const ControlRequest&)>;

    ControlServer() = default;
    ControlServer(const ControlServer&) = delete;
    ControlServer& operator=(const ControlServer&) = delete;
    ~ControlServer();

    // Binds `path` (creating its directory with mode 0700; replacing a stale socket that no
    // live daemon answers on) and starts serving on a thread of its own. On failure returns
    // false and says why in `error` — e.g. another instance already serves this path.
    bool start(const std::string& path, Handler handler, std::string& error);
    // Stops serving and removes the socket file. Safe to call twice.
    void stop();

    [[nodiscard]] const std::string& path() const noexcept { return path_; }

private:
    void serve();
    void handle_connection(int fd);

    std::string path_;
    Handler handler_;
    int listen_fd_ = -1;
    int wake_fd_ = -1;  // eventfd: stop() wakes the serving thread's poll
    std::thread thread_;
};

// Sends one request and returns the response, or a ProtocolError naming what failed
// (no such socket: is andromedad running?; permission denied: run as root; ...).
[[nodiscard]] std::variant<ControlResponse, ProtocolError> send_control_request(const std::string& path,
                                                                               const ControlRequest& request,
                                                                               int timeout_ms = 10000);

}  // namespace andromeda::daemon
