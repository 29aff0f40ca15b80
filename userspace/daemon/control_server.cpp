#include "daemon/control_server.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "control/socket_io.hpp"

namespace andromeda::daemon {

namespace {

using Clock = std::chrono::steady_clock;

// Whether a live server answers on `path` (a leftover socket file of a crashed daemon does not).
bool someone_listens(const std::string& path) {
    sockaddr_un addr;
    std::string ignored;
    if (!control::fill_address(path, addr, ignored)) return false;
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    const bool live = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    close(fd);
    return live;
}

// Only root, or the daemon's own user, may talk to it (the socket's mode says the same; this
// holds even if someone loosens the mode or passes the socket on).
bool peer_allowed(int fd) {
    ucred cred{};
    socklen_t len = sizeof cred;
    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && (cred.uid == 0 || cred.uid == geteuid());
}

// One client: its request as it arrives, then its response as it leaves.
struct Connection {
    int fd = -1;
    std::string in;
    std::string out;  // non-empty once the request is answered
    std::size_t sent = 0;
    Clock::time_point deadline;
};

enum class Progress { more, done };

// Reads what is there. Once a whole line (or EOF, or too much) has arrived, answers it.
Progress on_readable(Connection& c, const ControlServer::Handler& handler) {
    char buf[4096];
    for (;;) {
        const ssize_t n = recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return Progress::more;
            return Progress::done;  // the peer is gone: nothing to answer
        }
        if (n == 0) break;  // EOF: answer what came
        c.in.append(buf, static_cast<std::size_t>(n));
        if (c.in.find('\n') != std::string::npos || c.in.size() > control::kMaxRequestBytes) break;
    }
    if (const auto nl = c.in.find('\n'); nl != std::string::npos) c.in.resize(nl);
    const auto parsed = control::parse_request(c.in);
    if (const auto* e = std::get_if<control::ProtocolError>(&parsed))
        c.out = control::render_error("bad request: " + e->message);
    else
        c.out = handler(std::get<control::ControlRequest>(parsed));
    c.out += '\n';
    return Progress::done;
}

// Sends what the socket takes. done: all sent, or the peer is gone.
Progress on_writable(Connection& c) {
    while (c.sent < c.out.size()) {
        const ssize_t n = send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno == EAGAIN || errno == EWOULDBLOCK ? Progress::more : Progress::done;
        }
        c.sent += static_cast<std::size_t>(n);
    }
    return Progress::done;
}

}  // namespace

ControlServer::~ControlServer() { stop(); }

bool ControlServer::start(const std::string& path, Handler handler, std::string& error) {
    sockaddr_un addr;
    if (!control::fill_address(path, addr, error)) return false;
    const auto dir = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!dir.empty()) {
        std::filesystem::create_directories(dir, ec);
        if (ec) {
            error = fmt::format("cannot create control socket directory '{}': {}", dir.string(), ec.message());
            return false;
        }
    }
    if (std::filesystem::exists(std::filesystem::symlink_status(path))) {
        if (someone_listens(path)) {
            error = fmt::format("another andromedad already serves '{}': stop it, or give this instance "
                                "another [node] name",
                                path);
            return false;
        }
        unlink(path.c_str());  // a crashed instance's leftover
    }
    listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    // The umask makes the socket owner-only from its first moment, not just after a chmod.
    const mode_t old_mask = umask(0177);
    const bool bound = listen_fd_ >= 0 && bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    umask(old_mask);
    if (!bound || wake_fd_ < 0 || listen(listen_fd_, 64) != 0) {
        error = fmt::format("cannot serve control socket '{}': {}", path, std::strerror(errno));
        stop();
        return false;
    }
    path_ = path;
    handler_ = std::move(handler);
    thread_ = std::thread([this] { serve(); });
    return true;
}

void ControlServer::stop() {
    if (wake_fd_ >= 0) {
        const std::uint64_t one = 1;
        (void)!write(wake_fd_, &one, sizeof one);
    }
    if (thread_.joinable()) thread_.join();
    if (listen_fd_ >= 0) close(listen_fd_);
    if (wake_fd_ >= 0) close(wake_fd_);
    listen_fd_ = wake_fd_ = -1;
    if (!path_.empty()) unlink(path_.c_str());
    path_.clear();
}

void ControlServer::serve() {
    std::vector<Connection> connections;
    std::vector<pollfd> fds;
    for (;;) {
        // [0] wake, [1] listen (only while there is room), then one per connection.
        fds.clear();
        fds.push_back({wake_fd_, POLLIN, 0});
        fds.push_back({connections.size() < kMaxConnections ? listen_fd_ : -1, POLLIN, 0});
        auto now = Clock::now();
        Clock::time_point next = now + kConnectionTimeout;
        for (const auto& c : connections) {
            fds.push_back({c.fd, static_cast<short>(c.out.empty() ? POLLIN : POLLOUT), 0});
            next = std::min(next, c.deadline);
        }
        const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count();
        if (poll(fds.data(), fds.size(), static_cast<int>(std::max<long long>(wait, 0) + 1)) < 0 && errno != EINTR)
            break;
        if (fds[0].revents != 0) break;

        now = Clock::now();
        std::vector<bool> finished(connections.size(), false);
        for (std::size_t i = 0; i < connections.size(); ++i) {
            Connection& c = connections[i];
            const short revents = fds[i + 2].revents;
            if (revents != 0 && c.out.empty()) {
                if (on_readable(c, handler_) == Progress::done) {
                    if (c.out.empty()) finished[i] = true;  // a read error: nothing to answer
                    else c.deadline = Clock::now() + kConnectionTimeout;  // now it has as long to read
                }
            }
            if (!finished[i] && !c.out.empty() && (revents != 0 || c.sent == 0))
                finished[i] = on_writable(c) == Progress::done;
            if (!finished[i] && now >= c.deadline) finished[i] = true;
        }
        for (std::size_t i = connections.size(); i-- > 0;) {
            if (!finished[i]) continue;
            close(connections[i].fd);
            connections.erase(connections.begin() + static_cast<std::ptrdiff_t>(i));
        }

        if (fds[1].fd >= 0 && (fds[1].revents & POLLIN) != 0) {
            while (connections.size() < kMaxConnections) {
                const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (fd < 0) break;
                if (!peer_allowed(fd)) {
                    (void)control::write_all(
                        fd, control::render_error("permission denied: the control socket is for root only") + "\n");
                    close(fd);
                    continue;
                }
                connections.push_back({fd, {}, {}, 0, Clock::now() + kConnectionTimeout});
            }
        }
    }
    for (const auto& c : connections) close(c.fd);
}

}  // namespace andromeda::daemon
