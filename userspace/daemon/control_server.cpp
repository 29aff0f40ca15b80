#include "daemon/control_socket.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace andromeda::daemon {

namespace {

constexpr int kConnectionTimeoutMs = 5000;

bool fill_address(const std::string& path, sockaddr_un& addr, std::string& error) {
    addr = {};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) {
        error = fmt::format("control socket path '{}' is longer than {} bytes", path, sizeof addr.sun_path - 1);
        return false;
    }
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    return true;
}

// Whether a live server answers on `path` (a leftover socket file of a crashed daemon does not).
bool someone_listens(const std::string& path) {
    sockaddr_un addr;
    std::string ignored;
    if (!fill_address(path, addr, ignored)) return false;
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    const bool live = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    close(fd);
    return live;
}

// Reads until newline, EOF, `limit` bytes or the deadline. Returns false on timeout/error.
bool read_line(int fd, std::string& out, std::size_t limit, int timeout_ms) {
    char buf[4096];
    while (out.find('\n') == std::string::npos && out.size() <= limit) {
        pollfd p{fd, POLLIN, 0};
        const int ready = poll(&p, 1, timeout_ms);
        if (ready <= 0) return false;
        const ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        if (n == 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    if (const auto nl = out.find('\n'); nl != std::string::npos) out.resize(nl);
    return true;
}

bool write_all(int fd, std::string_view data) {
    while (!data.empty()) {
        const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

}  // namespace

std::string default_control_socket_path(const std::string& node) { return "/run/andromeda/" + node + ".sock"; }

ControlServer::~ControlServer() { stop(); }

bool ControlServer::start(const std::string& path, Handler handler, std::string& error) {
    sockaddr_un addr;
    if (!fill_address(path, addr, error)) return false;
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
    listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    // The umask makes the socket owner-only from its first moment, not just after a chmod.
    const mode_t old_mask = umask(0177);
    const bool bound = listen_fd_ >= 0 && bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    umask(old_mask);
    if (!bound || wake_fd_ < 0 || listen(listen_fd_, 16) != 0) {
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
    for (;;) {
        pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return;
        }
        if (fds[1].revents != 0) return;
        const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        handle_connection(fd);
        close(fd);
    }
}

void ControlServer::handle_connection(int fd) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || (cred.uid != 0 && cred.uid != geteuid())) {
        (void)write_all(fd, render_error("permission denied: the control socket is for root only") + "\n");
        return;
    }
    std::string line;
    if (!read_line(fd, line, kMaxRequestBytes, kConnectionTimeoutMs)) return;
    const auto parsed = parse_request(line);
    std::string response;
    if (const auto* e = std::get_if<ProtocolError>(&parsed)) response = render_error("bad request: " + e->message);
    else response = handler_(std::get<ControlRequest>(parsed));
    (void)write_all(fd, response + "\n");
}

std::variant<ControlResponse, ProtocolError> send_control_request(const std::string& path,
                                                                  const ControlRequest& request, int timeout_ms) {
    sockaddr_un addr;
    std::string error;
    if (!fill_address(path, addr, error)) return ProtocolError{error};
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return ProtocolError{fmt::format("socket: {}", std::strerror(errno))};
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        const int e = errno;
        close(fd);
        if (e == ENOENT || e == ECONNREFUSED)
            return ProtocolError{fmt::format("no andromedad is listening on '{}' ({}): is it running?", path,
                                             std::strerror(e))};
        if (e == EACCES) return ProtocolError{fmt::format("cannot open '{}': permission denied; run as root", path)};
        return ProtocolError{fmt::format("cannot connect to '{}': {}", path, std::strerror(e))};
    }
    std::string line;
    const bool ok = write_all(fd, render_request(request) + "\n") && read_line(fd, line, SIZE_MAX / 2, timeout_ms);
    close(fd);
    if (!ok) return ProtocolError{fmt::format("no answer from andromedad on '{}' within {} ms", path, timeout_ms)};
    return parse_response(line);
}

}  // namespace andromeda::daemon
