#include "control/client.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "control/socket_io.hpp"

namespace andromeda::control {

namespace {

// Reads until newline, EOF, `limit` bytes or `timeout_ms` without data; `out` holds the line
// without its newline. False on timeout or error.
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

}  // namespace

std::string default_control_socket_path(const std::string& node) { return "/run/andromeda/" + node + ".sock"; }

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

}  // namespace andromeda::control
