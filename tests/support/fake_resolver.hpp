// A small upstream DNS resolver a test runs in one of its namespaces (the gateway's DNS forwards
// to it), over UDP and TCP on the same address: A example.test is 192.0.2.7 (its other types
// NODATA), A big.test is 100 addresses 198.51.100.1-100 (1,6 KB: truncated over UDP), every
// other name NXDOMAIN; it can also stay silent, or answer from another address, as a spoofer
// would.
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/dns_messages.hpp"
#include "support/frame_builder.hpp"
#include "wire/addresses.hpp"
#include "wire/dns.hpp"

namespace andromeda::testing {

using Bytes = std::vector<std::uint8_t>;

// The upstream resolver: A example.test is 192.0.2.7, every other name NXDOMAIN. Its sockets
// are opened in the namespace of the thread that constructs it.
class FakeResolver {
public:
    enum class Mode { answer, silent, answer_from_elsewhere };

    // Listens on `address`; answer_from_elsewhere sends from `elsewhere` (same family).
    FakeResolver(const sockaddr_storage& address, const sockaddr_storage& elsewhere) {
        fd_ = bound_socket(address);
        elsewhere_fd_ = bound_socket(elsewhere);
        tcp_fd_ = bound_socket(address, SOCK_STREAM);
        if (listen(tcp_fd_, 16) != 0) throw std::runtime_error("fake resolver: listen: " + std::string(std::strerror(errno)));
        stop_fd_ = eventfd(0, EFD_CLOEXEC);
        thread_ = std::thread([this] { serve(); });
    }
    ~FakeResolver() {
        const std::uint64_t one = 1;
        (void)!write(stop_fd_, &one, sizeof one);
        thread_.join();
        for (const int fd : {fd_, elsewhere_fd_, tcp_fd_, stop_fd_}) close(fd);
    }
    void set_mode(Mode mode) { mode_ = mode; }
    [[nodiscard]] int queries() const { return queries_; }
    [[nodiscard]] int tcp_queries() const { return tcp_queries_; }
    [[nodiscard]] std::uint16_t last_id() const { return last_id_; }

private:
    static int bound_socket(const sockaddr_storage& address, int type = SOCK_DGRAM) {
        const int fd = socket(address.ss_family, type | SOCK_CLOEXEC, 0);
        const int on = 1;
        if (fd >= 0 && type == SOCK_STREAM) (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
        const socklen_t length = address.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
        if (fd < 0 || bind(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0)
            throw std::runtime_error("fake resolver: " + std::string(std::strerror(errno)));
        return fd;
    }

    void serve() {
        for (;;) {
            pollfd fds[3] = {{stop_fd_, POLLIN, 0}, {fd_, POLLIN, 0}, {tcp_fd_, POLLIN, 0}};
            if (poll(fds, 3, -1) < 0 || fds[0].revents != 0) return;
            if (fds[2].revents != 0) serve_tcp();
            if (fds[1].revents == 0) continue;
            Bytes query(2048);
            sockaddr_storage from{};
            socklen_t from_length = sizeof from;
            const ssize_t n =
                recvfrom(fd_, query.data(), query.size(), 0, reinterpret_cast<sockaddr*>(&from), &from_length);
            if (n < 12) continue;
            query.resize(static_cast<std::size_t>(n));
            last_id_ = test_support::get16(query.data());
            ++queries_;
            if (mode_ == Mode::silent) continue;
            const Bytes answer = answer_to(query);
            const int out = mode_ == Mode::answer ? fd_ : elsewhere_fd_;
            (void)!sendto(out, answer.data(), answer.size(), 0, reinterpret_cast<sockaddr*>(&from), from_length);
        }
    }

    // One connection at a time, to its end: each length-prefixed query answered in turn.
    void serve_tcp() {
        const int fd = accept4(tcp_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) return;
        Bytes stream;
        for (;;) {
            pollfd p[2] = {{fd, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
            if (poll(p, 2, 2000) <= 0 || p[1].revents != 0) break;
            std::uint8_t buffer[4096];
            const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
            if (n <= 0) break;
            stream.insert(stream.end(), buffer, buffer + n);
            while (stream.size() >= 2 && stream.size() >= 2u + test_support::get16(stream.data())) {
                const std::size_t length = test_support::get16(stream.data());
                const Bytes query(stream.begin() + 2, stream.begin() + 2 + static_cast<long>(length));
                stream.erase(stream.begin(), stream.begin() + 2 + static_cast<long>(length));
                if (query.size() < 12) continue;
                ++tcp_queries_;
                last_id_ = test_support::get16(query.data());
                if (mode_ == Mode::silent) continue;
                const Bytes framed = dns_tcp_framed(answer_to(query));
                (void)!send(fd, framed.data(), framed.size(), MSG_NOSIGNAL);
            }
        }
        close(fd);
    }

    static Bytes answer_to(const Bytes& query) {
        const auto view = wire::DnsMessageView::parse(query);
        const auto question = view ? view->first_question() : std::nullopt;
        wire::DnsHeader h;
        h.id = test_support::get16(query.data());
        h.response = h.recursion_desired = h.recursion_available = true;
        // example.test exists: A gets its address, other types NODATA; every other name NXDOMAIN.
        const bool known = question && question->name.equals_ignoring_case(*wire::DnsName::from_text("example.test"));
        const bool big = question && question->name.equals_ignoring_case(*wire::DnsName::from_text("big.test"));
        h.rcode = known || big ? wire::dns_rcode::kNoError : wire::dns_rcode::kNxDomain;
        Bytes m(4096);
        wire::DnsBuilder b(m, h);
        if (question) b.add_question(question->name, question->type, question->klass);
        const std::uint8_t address[4] = {192, 0, 2, 7};
        if (known && question->type == wire::dns_type::kA)
            b.add_record(wire::DnsSection::answer, wire::DnsNameRef::to(12), wire::dns_type::kA, wire::dns_class::kIn,
                         60, address);
        for (std::uint8_t i = 1; big && question->type == wire::dns_type::kA && i <= 100; ++i) {
            const std::uint8_t many[4] = {198, 51, 100, i};
            b.add_record(wire::DnsSection::answer, wire::DnsNameRef::to(12), wire::dns_type::kA, wire::dns_class::kIn,
                         60, many);
        }
        m.resize(b.finish());
        return m;
    }

    int fd_ = -1;
    int elsewhere_fd_ = -1;
    int tcp_fd_ = -1;
    int stop_fd_ = -1;
    std::atomic<Mode> mode_{Mode::answer};
    std::atomic<int> queries_{0};
    std::atomic<int> tcp_queries_{0};
    std::atomic<std::uint16_t> last_id_{0};
    std::thread thread_;
};

inline sockaddr_storage udp_address(const char* text, std::uint16_t port) {
    sockaddr_storage s{};
    if (const auto v4 = wire::Ipv4Address::parse(text)) {
        auto& sin = reinterpret_cast<sockaddr_in&>(s);
        sin.sin_family = AF_INET;
        sin.sin_port = htons(port);
        sin.sin_addr.s_addr = htonl(v4->value());
    } else {
        auto& sin6 = reinterpret_cast<sockaddr_in6&>(s);
        sin6.sin6_family = AF_INET6;
        sin6.sin6_port = htons(port);
        wire::Ipv6Address::parse(text)->copy_to(sin6.sin6_addr.s6_addr);
    }
    return s;
}

}  // namespace andromeda::testing
