// AF_PACKET sockets for tests: send exact frames into a namespace's interface and collect what
// arrives, with bounded waits.
#pragma once

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "netns_topology.hpp"

namespace andromeda::testing {

using Bytes = std::vector<std::uint8_t>;

// An AF_PACKET socket for every protocol, opened inside `ns` and bound to `ifname` there (it
// stays in that namespace); `flags` adds socket type flags such as SOCK_NONBLOCK. Throws with
// the reason.
inline int open_packet_socket(const Netns& ns, const std::string& ifname, int flags = 0) {
    NetnsGuard inside(ns);
    const int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | flags, htons(ETH_P_ALL));
    if (fd < 0) throw std::runtime_error("AF_PACKET socket: " + std::string(std::strerror(errno)));
    sockaddr_ll addr{};
    addr.sll_family = AF_PACKET;
    addr.sll_protocol = htons(ETH_P_ALL);
    addr.sll_ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
    if (addr.sll_ifindex == 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        const std::string reason = std::strerror(errno);
        close(fd);
        throw std::runtime_error("binding AF_PACKET to " + ifname + ": " + reason);
    }
    return fd;
}

class RawSocket {
public:
    // Opened inside `ns`, bound to `ifname` there; it stays in that namespace.
    RawSocket(const Netns& ns, const std::string& ifname) : fd_(open_packet_socket(ns, ifname)) {}
    ~RawSocket() { close(fd_); }
    RawSocket(const RawSocket&) = delete;
    RawSocket& operator=(const RawSocket&) = delete;

    void send(const Bytes& frame) {
        if (::send(fd_, frame.data(), frame.size(), 0) != static_cast<ssize_t>(frame.size()))
            throw std::runtime_error("AF_PACKET send: " + std::string(std::strerror(errno)));
    }

    // Collects received (not outgoing) frames that `keep` accepts until there are `count` of
    // them or `timeout` passes.
    std::vector<Bytes> receive(std::size_t count, std::chrono::milliseconds timeout,
                               const std::function<bool(const Bytes&)>& keep) {
        std::vector<Bytes> frames;
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (frames.size() < count) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
            pollfd pfd{fd_, POLLIN, 0};
            if (left <= 0 || poll(&pfd, 1, static_cast<int>(left)) <= 0) break;
            Bytes buffer(4096);
            sockaddr_ll from{};
            socklen_t length = sizeof from;
            const ssize_t n = recvfrom(fd_, buffer.data(), buffer.size(), 0, reinterpret_cast<sockaddr*>(&from), &length);
            if (n <= 0 || from.sll_pkttype == PACKET_OUTGOING) continue;
            buffer.resize(static_cast<std::size_t>(n));
            if (keep(buffer)) frames.push_back(std::move(buffer));
        }
        return frames;
    }

private:
    int fd_ = -1;
};

}  // namespace andromeda::testing
