#include "daemon/dns_service.hpp"

#include <linux/if_packet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <system_error>
#include <variant>

#include "wire/dns.hpp"
#include "wire/ethernet.hpp"
#include "wire/ip_protocol.hpp"
#include "wire/ipv4.hpp"

namespace andromeda::daemon {

namespace {

constexpr std::size_t kUpstreamReadsPerWake = 64;  // per socket: a flood on one does not starve the queue

// Whether a queued frame is TCP (IPv4 behind Ethernet and up to two VLAN tags); everything else
// is the UDP forwarder's to judge.
bool is_tcp(std::span<const std::uint8_t> frame) noexcept {
    const auto ethernet = wire::EthernetView::parse(frame);
    if (!ethernet || ethernet->ethertype() != wire::ethertype::kIpv4) return false;
    const auto ip = wire::Ipv4View::parse(ethernet->payload());
    return ip && ip->protocol() == wire::ip_protocol::kTcp;
}

std::uint64_t monotonic_ns() noexcept {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

[[noreturn]] void throw_errno(const char* what) { throw std::system_error(errno, std::system_category(), what); }

// Each upstream once, in the order given: an answer is matched to an upstream by its address,
// so two entries with one address could not be told apart.
gateway::DnsForwarderConfig without_duplicate_upstreams(gateway::DnsForwarderConfig config) {
    std::vector<gateway::DnsUpstream> unique;
    for (const gateway::DnsUpstream& u : config.upstreams)
        if (std::find(unique.begin(), unique.end(), u) == unique.end()) unique.push_back(u);
    config.upstreams = std::move(unique);
    return config;
}

socklen_t to_sockaddr(const gateway::DnsUpstream& upstream, sockaddr_storage& out) noexcept {
    out = {};
    if (const auto* v4 = std::get_if<wire::Ipv4Address>(&upstream.address)) {
        auto& sin = reinterpret_cast<sockaddr_in&>(out);
        sin.sin_family = AF_INET;
        sin.sin_port = htons(upstream.port);
        sin.sin_addr.s_addr = htonl(v4->value());
        return sizeof sin;
    }
    auto& sin6 = reinterpret_cast<sockaddr_in6&>(out);
    sin6.sin6_family = AF_INET6;
    sin6.sin6_port = htons(upstream.port);
    std::get<wire::Ipv6Address>(upstream.address).copy_to(sin6.sin6_addr.s6_addr);
    return sizeof sin6;
}

bool same_endpoint(const sockaddr_storage& a, const sockaddr_storage& b) noexcept {
    if (a.ss_family != b.ss_family) return false;
    if (a.ss_family == AF_INET) {
        const auto& x = reinterpret_cast<const sockaddr_in&>(a);
        const auto& y = reinterpret_cast<const sockaddr_in&>(b);
        return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
    }
    const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
    return x.sin6_port == y.sin6_port && std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof x.sin6_addr) == 0;
}

// kUpstreamSockets UDP sockets bound to ports the kernel draws at random; none when the family
// cannot be had here (the sends to its upstreams are then counted as errors).
std::vector<int> open_pool(int family) {
    std::vector<int> pool;
    for (std::size_t i = 0; i < kUpstreamSockets; ++i) {
        const int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) break;
        sockaddr_storage any{};
        socklen_t length = sizeof(sockaddr_in);
        if (family == AF_INET6) {
            const int on = 1;  // IPv4 upstreams have sockets of their own: no mapped addresses here
            (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
            length = sizeof(sockaddr_in6);
        }
        any.ss_family = static_cast<sa_family_t>(family);
        if (bind(fd, reinterpret_cast<sockaddr*>(&any), length) != 0) {
            close(fd);
            break;
        }
        pool.push_back(fd);
    }
    return pool;
}

}  // namespace

DnsService::DnsService(gateway::DnsForwarderConfig config)
    : forwarder_(without_duplicate_upstreams(std::move(config))),
      out_(gateway::kDnsActionRoom),
      in_(0xffff),
      tcp_(gateway::DnsTcpConfig{}),
      ring_(kDnsQueueSlots),
      vpcs_(std::make_shared<const VpcTable>()) {
    random_state_ = std::uint64_t{std::random_device{}()} << 32 | std::random_device{}() | 1;
    try {
        wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (wake_fd_ < 0) throw_errno("DNS service: eventfd");
        packet_fd_ = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);  // protocol 0: it receives nothing
        if (packet_fd_ < 0) throw_errno("DNS service: AF_PACKET socket for replies to tenant ports");
        for (const gateway::DnsUpstream& u : forwarder_.config().upstreams) {
            std::vector<int>& pool = u.is_ipv6() ? ipv6_sockets_ : ipv4_sockets_;
            if (pool.empty()) pool = open_pool(u.is_ipv6() ? AF_INET6 : AF_INET);
            Upstream upstream;
            upstream.length = to_sockaddr(u, upstream.address);
            upstream.sockets = &pool;
            upstreams_.push_back(upstream);
        }
        thread_ = std::thread([this] { run(); });
    } catch (...) {
        close_sockets();
        throw;
    }
    pthread_setname_np(thread_.native_handle(), "andromeda-dns");
}

DnsService::~DnsService() {
    {
        std::lock_guard lock(queue_mutex_);
        stopping_ = true;
    }
    wake();
    if (thread_.joinable()) thread_.join();
    close_sockets();
}

void DnsService::close_sockets() noexcept {
    for (const UpstreamTcp& c : upstream_tcp_) close(c.fd);
    upstream_tcp_.clear();
    for (const int fd : ipv4_sockets_) close(fd);
    for (const int fd : ipv6_sockets_) close(fd);
    ipv4_sockets_.clear();
    ipv6_sockets_.clear();
    if (packet_fd_ >= 0) close(packet_fd_);
    if (wake_fd_ >= 0) close(wake_fd_);
    packet_fd_ = wake_fd_ = -1;
}

void DnsService::wake() const noexcept {
    const std::uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof one);
}

void DnsService::set_vpcs(std::vector<DnsServiceVpc> vpcs) {
    auto table = std::make_shared<VpcTable>();
    for (DnsServiceVpc& v : vpcs) {
        const gateway::DnsVpc context{v.gateway, v.zone.get(), v.mtu};
        table->try_emplace(v.vni, VpcEntry{context, std::move(v.zone)});  // a VNI listed twice: the first
    }
    std::lock_guard lock(vpcs_mutex_);
    vpcs_ = std::move(table);  // the thread picks it up with its next query
}

bool DnsService::submit(std::uint32_t vni, std::uint32_t reply_ifindex, std::span<const std::uint8_t> frame) {
    bool was_empty = false;
    {
        std::lock_guard lock(queue_mutex_);
        if (frame.size() > kDnsQueryFrameRoom) {
            ++oversized_;
            return false;
        }
        if (count_ == ring_.size()) {
            ++queue_full_;
            return false;
        }
        QueuedQuery& q = ring_[(head_ + count_) % ring_.size()];
        q.vni = vni;
        q.reply_ifindex = reply_ifindex;
        q.length = static_cast<std::uint16_t>(frame.size());
        if (!frame.empty()) std::memcpy(q.frame.data(), frame.data(), frame.size());
        was_empty = count_++ == 0;
        ++submitted_;
    }
    // The thread drains until it sees the queue empty, so only the first query needs waking it.
    if (was_empty) wake();
    return true;
}

void DnsService::hold_queue_for_test(bool held) {
    {
        std::lock_guard lock(queue_mutex_);
        held_ = held;
    }
    wake();
}

DnsServiceStats DnsService::stats() const {
    DnsServiceStats s;
    {
        std::lock_guard lock(stats_mutex_);
        s = stats_;
    }
    std::lock_guard lock(queue_mutex_);
    s.service.submitted = submitted_;
    s.service.queue_full = queue_full_;
    s.service.oversized = oversized_;
    return s;
}

void DnsService::run() {
    std::vector<pollfd> fds;
    for (;;) {
        // [0] the eventfd, then every upstream UDP socket, then the upstream TCP connections.
        fds.assign(1, {wake_fd_, POLLIN, 0});
        for (const int fd : ipv4_sockets_) fds.push_back({fd, POLLIN, 0});
        for (const int fd : ipv6_sockets_) fds.push_back({fd, POLLIN, 0});
        const std::size_t first_tcp = fds.size();
        for (const UpstreamTcp& c : upstream_tcp_)
            fds.push_back({c.fd, static_cast<short>(c.written < c.query.size() ? POLLOUT : POLLIN), 0});
        std::uint64_t deadline = forwarder_.next_deadline();
        const auto earliest = [&deadline](std::uint64_t d) {
            if (d != 0 && (deadline == 0 || d < deadline)) deadline = d;
        };
        earliest(tcp_.next_deadline());
        for (const UpstreamTcp& c : upstream_tcp_) earliest(c.deadline_ns);
        int timeout_ms = -1;
        if (deadline != 0) {
            const std::uint64_t now = monotonic_ns();
            // Rounded up: waking before the deadline would only spin.
            timeout_ms =
                deadline <= now
                    ? 0
                    : static_cast<int>(std::min<std::uint64_t>((deadline - now + 999'999) / 1'000'000, 60'000));
        }
        if (poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
            // Nothing poll() can fail with here but ENOMEM: the upstream sockets are read anyway.
            for (pollfd& p : fds) p.revents = p.events;
        }
        if (fds[0].revents != 0) {
            std::uint64_t count = 0;
            (void)!read(wake_fd_, &count, sizeof count);
        }
        {
            std::lock_guard lock(queue_mutex_);
            if (stopping_) return;
        }
        now_ns_ = monotonic_ns();
        for (std::size_t i = 1; i < first_tcp; ++i)
            if (fds[i].revents != 0) serve_upstream(fds[i].fd);
        // Connections opened during this round are past the end of fds; served next round.
        for (std::size_t i = first_tcp; i < fds.size(); ++i)
            if (fds[i].revents != 0) serve_upstream_tcp(upstream_tcp_[i - first_tcp], fds[i].revents);
        std::erase_if(upstream_tcp_, [](const UpstreamTcp& c) { return c.fd < 0; });
        serve_queue();
        serve_timeouts();
        if (const std::uint64_t d = tcp_.next_deadline(); d != 0 && d <= now_ns_) tcp_.poll(now_ns_, tcp_sink_);
        expire_upstream_tcp();
        publish_stats();
    }
}

void DnsService::serve_queue() {
    for (;;) {
        {
            std::lock_guard lock(queue_mutex_);
            if (held_ || stopping_ || count_ == 0) return;
            const QueuedQuery& q = ring_[head_];
            current_.vni = q.vni;
            current_.reply_ifindex = q.reply_ifindex;
            current_.length = q.length;
            std::memcpy(current_.frame.data(), q.frame.data(), q.length);
            head_ = (head_ + 1) % ring_.size();
            --count_;
        }
        {
            // Read after the query: a set_vpcs that happened before its submit is seen.
            std::lock_guard lock(vpcs_mutex_);
            if (vpcs_seen_ != vpcs_) vpcs_seen_ = vpcs_;
        }
        const auto vpc = vpcs_seen_->find(current_.vni);
        if (vpc == vpcs_seen_->end()) {
            ++counters_.unknown_vpc;
            continue;
        }
        now_ns_ = monotonic_ns();
        if (is_tcp(std::span(current_.frame.data(), current_.length))) {
            serve_tcp_segment(vpc->second);
            continue;
        }
        execute(forwarder_.handle_udp_query(std::span(current_.frame.data(), current_.length), vpc->second.context,
                                            now_ns_, out_, current_.reply_ifindex));
    }
}

// A tenant's segment to port 53: the TCP server takes it, and each DNS message it completes is
// answered (or forwarded) like a UDP query, its answer sent back on the same connection.
void DnsService::serve_tcp_segment(const VpcEntry& vpc) {
    tcp_queries_.clear();
    tcp_.handle_frame(std::span(current_.frame.data(), current_.length), current_.vni, vpc.context.gateway,
                      vpc.context.mtu, current_.reply_ifindex, now_ns_, tcp_sink_, tcp_queries_);
    for (const gateway::DnsTcpQuery& q : tcp_queries_) {
        const gateway::DnsAction action = forwarder_.handle_tcp_query(q.message, vpc.context, q.connection, now_ns_, out_);
        if (action.kind == gateway::DnsActionKind::none) tcp_.no_answer(q.connection, now_ns_, tcp_sink_);
        execute(action);
    }
}

void DnsService::serve_upstream(int fd) {
    for (std::size_t i = 0; i < kUpstreamReadsPerWake; ++i) {
        sockaddr_storage from{};
        socklen_t from_length = sizeof from;
        const ssize_t n =
            recvfrom(fd, in_.data(), in_.size(), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &from_length);
        if (n < 0) return;  // EAGAIN: drained (unconnected UDP sockets report no ICMP errors)
        ++counters_.upstream_datagrams;
        const auto upstream = std::find_if(upstreams_.begin(), upstreams_.end(),
                                           [&](const Upstream& u) { return same_endpoint(u.address, from); });
        if (upstream == upstreams_.end()) {
            ++counters_.upstream_from_elsewhere;
            continue;
        }
        const auto index = static_cast<std::size_t>(upstream - upstreams_.begin());
        execute(forwarder_.handle_upstream_answer(std::span(in_.data(), static_cast<std::size_t>(n)), index, out_));
    }
}

void DnsService::serve_timeouts() {
    const std::uint64_t now = now_ns_ = monotonic_ns();
    for (;;) {
        const gateway::DnsAction action = forwarder_.poll_timeouts(now, out_);
        if (action.outcome == gateway::DnsOutcome::idle) return;
        execute(action);
    }
}

void DnsService::execute(const gateway::DnsAction& action) {
    const std::span<const std::uint8_t> bytes(out_.data(), action.length);
    switch (action.kind) {
        case gateway::DnsActionKind::none:
            break;
        case gateway::DnsActionKind::reply_udp:
            send_reply(static_cast<std::uint32_t>(action.tag), bytes);
            break;
        case gateway::DnsActionKind::reply_tcp:
            if (tcp_.send(action.connection, bytes, now_ns_, tcp_sink_)) ++counters_.replies_sent;
            break;  // a connection gone meanwhile: the answer has no one to go to
        case gateway::DnsActionKind::forward:
            if (action.upstream >= upstreams_.size()) break;
            if (action.over_tcp)
                open_upstream_tcp(action.upstream, bytes);
            else
                send_forward(upstreams_[action.upstream], bytes);
            break;
    }
}

void DnsService::send_reply(std::uint32_t ifindex, std::span<const std::uint8_t> frame) {
    sockaddr_ll to{};
    to.sll_family = AF_PACKET;
    to.sll_ifindex = static_cast<int>(ifindex);
    // The frame's own ethertype (a tagged reply's is 802.1Q), which becomes skb->protocol.
    std::memcpy(&to.sll_protocol, frame.data() + 12, sizeof to.sll_protocol);
    to.sll_halen = 6;
    std::memcpy(to.sll_addr, frame.data(), 6);
    const ssize_t sent =
        sendto(packet_fd_, frame.data(), frame.size(), MSG_DONTWAIT, reinterpret_cast<const sockaddr*>(&to), sizeof to);
    if (sent == static_cast<ssize_t>(frame.size()))
        ++counters_.replies_sent;
    else
        ++counters_.send_errors;  // the port is gone, or its queue full: the tenant asks again
}

void DnsService::send_forward(const Upstream& upstream, std::span<const std::uint8_t> message) {
    const std::vector<int>& pool = *upstream.sockets;
    if (pool.empty()) {
        ++counters_.send_errors;
        return;
    }
    // xorshift64*: which of the pool's random ports this query leaves from.
    random_state_ ^= random_state_ >> 12;
    random_state_ ^= random_state_ << 25;
    random_state_ ^= random_state_ >> 27;
    const int fd = pool[((random_state_ * 0x2545F4914F6CDD1Dull) >> 32) % pool.size()];
    const ssize_t sent = sendto(fd, message.data(), message.size(), MSG_DONTWAIT,
                                reinterpret_cast<const sockaddr*>(&upstream.address), upstream.length);
    if (sent == static_cast<ssize_t>(message.size()))
        ++counters_.forwards_sent;
    else
        ++counters_.send_errors;  // the forwarder retries it on the next upstream after its timeout
}

// A query asked over TCP, asked upstream over TCP: a non-blocking connect, the query written
// when it is up, the answer read to its length; the forwarder's own timeout retries elsewhere.
void DnsService::open_upstream_tcp(std::size_t upstream, std::span<const std::uint8_t> message) {
    if (upstream_tcp_.size() >= kUpstreamTcpConnections) {
        ++counters_.upstream_tcp_full;  // the forwarder retries after its timeout
        return;
    }
    const Upstream& u = upstreams_[upstream];
    const int fd = socket(u.address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        ++counters_.send_errors;
        return;
    }
    if (connect(fd, reinterpret_cast<const sockaddr*>(&u.address), u.length) != 0 && errno != EINPROGRESS) {
        close(fd);
        ++counters_.upstream_tcp_failed;
        return;
    }
    UpstreamTcp c;
    c.fd = fd;
    c.upstream = upstream;
    c.query.resize(wire::kDnsTcpLengthPrefix + message.size());
    wire::write_dns_tcp_message(c.query, message);
    c.deadline_ns = now_ns_ + forwarder_.config().timeout_ns;
    upstream_tcp_.push_back(std::move(c));
    ++counters_.upstream_tcp_opened;
    ++counters_.forwards_sent;
}

void DnsService::serve_upstream_tcp(UpstreamTcp& c, short revents) {
    const auto fail = [&] {
        ++counters_.upstream_tcp_failed;
        close(c.fd);
        c.fd = -1;
    };
    if (c.written < c.query.size()) {
        if ((revents & (POLLERR | POLLHUP)) != 0) return fail();  // refused, unreachable
        const ssize_t n = ::send(c.fd, c.query.data() + c.written, c.query.size() - c.written, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno != EAGAIN && errno != EINTR) fail();
            return;
        }
        c.written += static_cast<std::size_t>(n);
        return;
    }
    std::uint8_t buffer[4096];
    for (;;) {
        const ssize_t n = ::recv(c.fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (n == 0) return fail();  // closed before the whole answer
        if (n < 0) {
            if (errno != EAGAIN && errno != EINTR) fail();
            return;
        }
        c.answer.insert(c.answer.end(), buffer, buffer + n);
        const wire::DnsTcpMessage m = wire::next_dns_tcp_message(c.answer);
        if (m.status == wire::DnsTcpStatus::empty) return fail();
        if (m.status == wire::DnsTcpStatus::complete) {
            ++counters_.upstream_tcp_answers;
            close(c.fd);
            c.fd = -1;
            // Out of `c` first: what the answer sets off may open another connection, and
            // upstream_tcp_ (holding `c`) grow.
            const std::vector<std::uint8_t> answer(m.message.begin(), m.message.end());
            execute(forwarder_.handle_upstream_answer(answer, c.upstream, out_));
            return;
        }
    }
}

void DnsService::expire_upstream_tcp() {
    std::erase_if(upstream_tcp_, [this](const UpstreamTcp& c) {
        if (c.deadline_ns > now_ns_) return false;
        ++counters_.upstream_tcp_failed;
        close(c.fd);
        return true;
    });
}

void DnsService::publish_stats() {
    std::lock_guard lock(stats_mutex_);
    stats_.service = counters_;
    stats_.forwarder = forwarder_.counters();
    stats_.tcp = tcp_.counters();
    stats_.in_flight = forwarder_.in_flight();
    stats_.tcp_connections = tcp_.connections();
}

}  // namespace andromeda::daemon
