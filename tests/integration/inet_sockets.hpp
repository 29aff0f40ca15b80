// TCP and UDP sockets opened inside a test namespace (they stay there whatever thread uses them),
// with bounded waits, for end-to-end tests that need to know exactly which address and port the
// other side saw.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "netns_topology.hpp"

namespace andromeda::testing {

// An IPv4 address and port as the kernel reported them.
struct InetAddress {
    std::string ip;
    std::uint16_t port = 0;
};

inline sockaddr_in make_sockaddr(const std::string& ip, std::uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    if (inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1) throw std::runtime_error("bad IPv4 address " + ip);
    return a;
}

inline InetAddress from_sockaddr(const sockaddr_in& a) {
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
    return {text, ntohs(a.sin_port)};
}

class InetSocket {
public:
    InetSocket() = default;
    explicit InetSocket(int fd) : fd_(fd) {}
    // A socket of `type` (SOCK_STREAM / SOCK_DGRAM) opened inside `ns`, bound to ip:port when
    // ip is not empty (port 0: any).
    InetSocket(const Netns& ns, int type, const std::string& ip = "", std::uint16_t port = 0) {
        NetnsGuard inside(ns);
        fd_ = socket(AF_INET, type | SOCK_CLOEXEC, 0);
        if (fd_ < 0) fail("socket");
        const int one = 1;
        setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (!ip.empty()) {
            const sockaddr_in a = make_sockaddr(ip, port);
            if (bind(fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) fail("bind " + ip + ":" + std::to_string(port));
        }
    }
    ~InetSocket() {
        if (fd_ >= 0) close(fd_);
    }
    InetSocket(InetSocket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    InetSocket& operator=(InetSocket&& other) noexcept {
        std::swap(fd_, other.fd_);
        return *this;
    }
    InetSocket(const InetSocket&) = delete;
    InetSocket& operator=(const InetSocket&) = delete;

    [[nodiscard]] int fd() const noexcept { return fd_; }
    [[nodiscard]] bool valid() const noexcept { return fd_ >= 0; }

    void listen_now() {
        if (::listen(fd_, 16) != 0) fail("listen");
    }

    // Non-blocking connect, waited for up to `timeout`; false when it did not complete.
    bool connect_to(const std::string& ip, std::uint16_t port, std::chrono::milliseconds timeout) {
        const int flags = fcntl(fd_, F_GETFL);
        fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
        const sockaddr_in a = make_sockaddr(ip, port);
        int rc = ::connect(fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a);
        if (rc != 0 && errno == EINPROGRESS) {
            if (!wait_for(POLLOUT, timeout)) return false;
            int error = 0;
            socklen_t length = sizeof error;
            getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &length);
            rc = error == 0 ? 0 : -1;
        }
        fcntl(fd_, F_SETFL, flags);
        return rc == 0;
    }

    // Accepts one connection within `timeout` (an invalid socket otherwise); `peer` gets its address.
    InetSocket accept_one(std::chrono::milliseconds timeout, InetAddress* peer = nullptr) {
        if (!wait_for(POLLIN, timeout)) return InetSocket();
        sockaddr_in a{};
        socklen_t length = sizeof a;
        const int fd = ::accept4(fd_, reinterpret_cast<sockaddr*>(&a), &length, SOCK_CLOEXEC);
        if (fd >= 0 && peer != nullptr) *peer = from_sockaddr(a);
        return InetSocket(fd);
    }

    // The local (getsockname) or remote (getpeername) address.
    [[nodiscard]] InetAddress local() const {
        sockaddr_in a{};
        socklen_t length = sizeof a;
        getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &length);
        return from_sockaddr(a);
    }

    bool send_all(const void* data, std::size_t size, std::chrono::milliseconds timeout) {
        const auto* p = static_cast<const std::uint8_t*>(data);
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (size > 0) {
            if (!wait_for(POLLOUT, remaining(deadline))) return false;
            const ssize_t n = ::send(fd_, p, size, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (n <= 0) return false;
            p += n;
            size -= static_cast<std::size_t>(n);
        }
        return true;
    }
    bool send_all(const std::string& text, std::chrono::milliseconds timeout) {
        return send_all(text.data(), text.size(), timeout);
    }

    // Reads until the peer closes (or `limit` bytes, or the deadline); what arrived.
    // Reads until EOF, `limit` bytes or `timeout`; `progress`, when given, follows the count.
    std::vector<std::uint8_t> receive_all(std::size_t limit, std::chrono::milliseconds timeout,
                                          std::atomic<std::size_t>* progress = nullptr) {
        std::vector<std::uint8_t> out;
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        std::vector<std::uint8_t> buffer(256 * 1024);
        while (out.size() < limit) {
            if (!wait_for(POLLIN, remaining(deadline))) break;
            const ssize_t n = ::recv(fd_, buffer.data(), std::min(buffer.size(), limit - out.size()), MSG_DONTWAIT);
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (n <= 0) break;
            out.insert(out.end(), buffer.begin(), buffer.begin() + n);
            if (progress != nullptr) progress->store(out.size());
        }
        return out;
    }
    std::string receive_text(std::size_t limit, std::chrono::milliseconds timeout) {
        const auto bytes = receive_all(limit, timeout);
        return std::string(bytes.begin(), bytes.end());
    }

    void shutdown_write() { ::shutdown(fd_, SHUT_WR); }

    bool send_datagram(const std::string& text, const std::string& ip, std::uint16_t port) {
        const sockaddr_in a = make_sockaddr(ip, port);
        return ::sendto(fd_, text.data(), text.size(), 0, reinterpret_cast<const sockaddr*>(&a), sizeof a) ==
               static_cast<ssize_t>(text.size());
    }
    // One datagram within `timeout` (false otherwise), and who sent it.
    bool receive_datagram(std::string& text, InetAddress& from, std::chrono::milliseconds timeout) {
        if (!wait_for(POLLIN, timeout)) return false;
        char buffer[2048];
        sockaddr_in a{};
        socklen_t length = sizeof a;
        const ssize_t n = ::recvfrom(fd_, buffer, sizeof buffer, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&a), &length);
        if (n < 0) return false;
        text.assign(buffer, static_cast<std::size_t>(n));
        from = from_sockaddr(a);
        return true;
    }

private:
    static std::chrono::milliseconds remaining(std::chrono::steady_clock::time_point deadline) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        return left.count() > 0 ? left : std::chrono::milliseconds(0);
    }
    bool wait_for(short events, std::chrono::milliseconds timeout) const {
        pollfd p{fd_, events, 0};
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            const int rc = ::poll(&p, 1, static_cast<int>(remaining(deadline).count()));
            if (rc > 0) return true;
            if (rc == 0 || errno != EINTR) return false;
        }
    }
    [[noreturn]] void fail(const std::string& what) const {
        throw std::runtime_error(what + ": " + std::strerror(errno));
    }

    int fd_ = -1;
};

// One TCP connection: `client` connected from `from` to ip:port, `served` the listener's end of
// it (invalid when either step failed within `timeout`), `peer` the client as the server saw it.
struct Connection {
    InetSocket client, served;
    InetAddress peer;
    [[nodiscard]] bool established() const { return served.valid(); }
};

inline Connection connect_through(const Netns& from, InetSocket& listener, const std::string& ip, std::uint16_t port,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    Connection c;
    c.client = InetSocket(from, SOCK_STREAM);
    if (c.client.connect_to(ip, port, timeout)) c.served = listener.accept_one(timeout, &c.peer);
    return c;
}

// `size` bytes of a seeded pseudo-random stream: a file to move byte-exact.
inline std::vector<std::uint8_t> random_bytes(std::size_t size, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<std::uint8_t> out(size);
    for (auto& b : out) b = static_cast<std::uint8_t>(rng());
    return out;
}

// A bulk transfer over an established connection: `from` sends every byte of `bytes` on a thread
// of its own and then shuts its side down, while `to` receives until that end (or `timeout`).
struct Transfer {
    bool sent = false;                   // every byte left `from`
    std::vector<std::uint8_t> received;  // what reached `to` (one byte more than sent: an excess)
};
inline Transfer transfer(InetSocket& from, InetSocket& to, const std::vector<std::uint8_t>& bytes,
                         std::chrono::milliseconds timeout) {
    Transfer t;
    std::thread sender([&] {
        t.sent = from.send_all(bytes.data(), bytes.size(), timeout);
        from.shutdown_write();
    });
    t.received = to.receive_all(bytes.size() + 1, timeout);
    sender.join();
    return t;
}

}  // namespace andromeda::testing
