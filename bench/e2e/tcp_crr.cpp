// andromeda-tcpcrr: new TCP connections per second, each a connect, a request, a response and a
// close (netperf's TCP_CRR), for the north-south scenario: every connection is a new flow through
// the NAT, so its first packets take whatever path a datapath gives a flow it has not seen.
//   andromeda-tcpcrr server [--port N] [--request BYTES] [--reply BYTES]
//   andromeda-tcpcrr client --to IP [--port N] [--duration S | --count N] [--concurrency K]
//                           [--request BYTES] [--reply BYTES]
// The client keeps K connections in flight: each connects, sends `request` bytes, reads `reply`
// bytes and the server's FIN, and closes; a new one starts at once. The server closes first (as an
// HTTP/1.0 server does), so TIME_WAIT is the server's and the client's ports are free again as soon
// as its FIN is acknowledged: a long run does not run out of ephemeral ports. The client prints
// connections per second, failures and the connection time (connect() to the server's FIN)
// percentiles as JSON; before measuring it waits (up to 5 s) for one connection to complete, so ARP
// and warm-up stay out of the figures. The server prints what it served when stopped (SIGTERM).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop.store(true); }

std::int64_t now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

[[noreturn]] void usage(const std::string& why) {
    if (!why.empty()) std::fprintf(stderr, "andromeda-tcpcrr: %s\n", why.c_str());
    std::fprintf(stderr,
                 "usage: andromeda-tcpcrr server [--port N] [--request BYTES] [--reply BYTES]\n"
                 "       andromeda-tcpcrr client --to IP [--port N] [--duration S | --count N] [--concurrency K]"
                 " [--request BYTES] [--reply BYTES]\n");
    std::exit(2);
}

struct Options {
    std::string to;
    unsigned port = 7800;
    double duration = 5;
    std::uint64_t count = 0;
    unsigned concurrency = 8;
    std::size_t request = 64, reply = 64;
};

// The server: accepts, reads `request` bytes, writes `reply` bytes and closes, for any number of
// connections at once (one epoll loop).
int server(const Options& o) {
    const int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    const int one = 1;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(o.port));
    if (listener < 0 || setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(listener, 4096) != 0) {
        std::fprintf(stderr, "andromeda-tcpcrr server: cannot listen on port %u: %s\n", o.port, std::strerror(errno));
        return 1;
    }
    struct sigaction sa {};
    sa.sa_handler = on_signal;  // no SA_RESTART: epoll_wait returns EINTR
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    const int ep = epoll_create1(EPOLL_CLOEXEC);
    epoll_event ev{EPOLLIN, {.fd = listener}};
    epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev);
    std::printf("ready: serving TCP port %u\n", o.port);
    std::fflush(stdout);
    std::vector<std::size_t> received;  // bytes of the request so far, by descriptor
    const std::vector<char> reply(o.reply, 'r');
    std::vector<char> buf(std::max<std::size_t>(o.request, 4096));
    std::uint64_t served = 0, failed = 0;
    epoll_event events[256];
    while (!g_stop.load()) {
        const int n = epoll_wait(ep, events, 256, 200);
        for (int i = 0; i < n; ++i) {
            const int fd = events[i].data.fd;
            if (fd == listener) {
                for (int c; (c = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) {
                    if (static_cast<std::size_t>(c) >= received.size())
                        received.resize(static_cast<std::size_t>(c) + 1024);
                    received[static_cast<std::size_t>(c)] = 0;
                    epoll_event cev{EPOLLIN, {.fd = c}};
                    epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
                }
                continue;
            }
            auto& got = received[static_cast<std::size_t>(fd)];
            const ssize_t r = recv(fd, buf.data(), buf.size(), 0);
            if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (r > 0) got += static_cast<std::size_t>(r);
            if (r > 0 && got < o.request) continue;
            // The whole request (answer and close: the server's FIN first), or EOF or an error
            // before it (a failure).
            if (r > 0 && got == o.request &&
                send(fd, reply.data(), reply.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(reply.size()))
                ++served;
            else
                ++failed;
            close(fd);  // also leaves the epoll set
        }
    }
    std::printf("{\"served\":%llu,\"failed\":%llu}\n", static_cast<unsigned long long>(served),
                static_cast<unsigned long long>(failed));
    return 0;
}

double percentile(const std::vector<double>& sorted, double p) {
    if (sorted.empty()) return 0;
    return sorted[static_cast<std::size_t>(std::floor(p * static_cast<double>(sorted.size() - 1)))];
}

// A connection not done by then has failed (a lost SYN is retried after 1 s, 3 s, 7 s).
constexpr std::int64_t kConnectionTimeoutNs = 10'000'000'000LL;

// One connection in flight on the client.
struct Slot {
    int fd = -1;
    bool connected = false;
    std::size_t got = 0;
    std::int64_t started_ns = 0;
};

class Client {
public:
    Client(const Options& o, const sockaddr_in& to) : o_(o), to_(to), reply_buf_(std::max<std::size_t>(o.reply, 4096)) {
        ep_ = epoll_create1(EPOLL_CLOEXEC);
    }
    ~Client() {
        for (auto& s : slots_)
            if (s.fd >= 0) close(s.fd);
        close(ep_);
    }

    // One connection, start to end, within `timeout_ns`: true when it completed.
    bool once(std::int64_t timeout_ns) {
        completed_ = started_ = 0;
        total_ = 1;
        end_ns_ = INT64_MAX;
        slots_.assign(1, Slot{});
        start(0);
        const std::int64_t until = now_ns() + timeout_ns;
        while (slots_[0].fd >= 0 && now_ns() < until && !g_stop.load()) poll(10);
        abandon_all();
        return completed_ > 0;
    }

    // Keeps `concurrency` connections in flight until `total` have been started (count mode) or
    // until `seconds` have passed (duration mode), then waits up to 3 s for those in flight. A slot
    // whose connection ended (or failed at once) starts the next one after the events in hand.
    void run(std::uint64_t total, double seconds) {
        completed_ = failed_ = started_ = 0;
        times_us_.clear();
        first_error_.clear();
        slots_.assign(o_.concurrency, Slot{});
        begin_ns_ = now_ns();
        end_ns_ = seconds > 0 ? begin_ns_ + static_cast<std::int64_t>(seconds * 1e9) : INT64_MAX;
        total_ = total;
        while (!g_stop.load()) {
            for (std::size_t i = 0; i < slots_.size(); ++i)
                if (slots_[i].fd < 0 && may_start()) start(i);
            if (in_flight() == 0 && !may_start()) break;
            const std::int64_t t = now_ns();
            if (end_ns_ != INT64_MAX && t > end_ns_ + 3'000'000'000LL) break;
            for (std::size_t i = 0; i < slots_.size(); ++i)
                if (slots_[i].fd >= 0 && t - slots_[i].started_ns > kConnectionTimeoutNs) {
                    errno = ETIMEDOUT;
                    fail(i, "connection");
                }
            poll(10);
        }
        measured_ns_ = std::min(now_ns(), end_ns_) - begin_ns_;
        unfinished_ = in_flight();
        abandon_all();
    }

    void report() {
        std::sort(times_us_.begin(), times_us_.end());
        const double seconds = static_cast<double>(measured_ns_) / 1e9;
        std::printf(
            "{\"concurrency\":%u,\"started\":%llu,\"connections\":%llu,\"failed\":%llu,\"unfinished\":%llu,\"seconds\":"
            "%.3f,"
            "\"per_second\":%.1f,\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f,\"first_error\":\"%"
            "s\"}\n",
            o_.concurrency, static_cast<unsigned long long>(started_), static_cast<unsigned long long>(completed_),
            static_cast<unsigned long long>(failed_), static_cast<unsigned long long>(unfinished_), seconds,
            seconds > 0 ? static_cast<double>(completed_) / seconds : 0.0, percentile(times_us_, 0.5),
            percentile(times_us_, 0.9), percentile(times_us_, 0.99), percentile(times_us_, 1), first_error_.c_str());
    }

    [[nodiscard]] const std::string& first_error() const { return first_error_; }

private:
    bool may_start() const {
        if (g_stop.load()) return false;
        if (total_ > 0) return started_ < total_;
        return now_ns() < end_ns_;
    }
    std::size_t in_flight() const {
        return static_cast<std::size_t>(
            std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.fd >= 0; }));
    }

    void start(std::size_t i) {
        Slot& s = slots_[i];
        s = Slot{};
        s.started_ns = now_ns();
        ++started_;
        s.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (s.fd < 0) return fail(i, "socket");
        const int one = 1;
        setsockopt(s.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(s.fd, reinterpret_cast<const sockaddr*>(&to_), sizeof to_) != 0 && errno != EINPROGRESS)
            return fail(i, "connect");
        epoll_event ev{EPOLLOUT, {.u64 = i}};
        epoll_ctl(ep_, EPOLL_CTL_ADD, s.fd, &ev);
    }

    void fail(std::size_t i, const char* what) {
        if (first_error_.empty()) first_error_ = std::string(what) + ": " + std::strerror(errno);
        ++failed_;
        finish(i);
    }

    void finish(std::size_t i) {
        Slot& s = slots_[i];
        if (s.fd >= 0) close(s.fd);
        s.fd = -1;
    }

    void poll(int timeout_ms) {
        epoll_event events[256];
        const int n = epoll_wait(ep_, events, 256, timeout_ms);
        for (int k = 0; k < n; ++k) step(static_cast<std::size_t>(events[k].data.u64));
    }

    void step(std::size_t i) {
        Slot& s = slots_[i];
        if (s.fd < 0) return;
        if (!s.connected) {
            int err = 0;
            socklen_t len = sizeof err;
            getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len);
            if (err != 0) {
                errno = err;
                return fail(i, "connect");
            }
            s.connected = true;
            const std::vector<char> request(o_.request, 'q');
            if (send(s.fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size()))
                return fail(i, "send");
            epoll_event ev{EPOLLIN, {.u64 = i}};
            epoll_ctl(ep_, EPOLL_CTL_MOD, s.fd, &ev);
            return;
        }
        for (;;) {
            const ssize_t r = recv(s.fd, reply_buf_.data(), reply_buf_.size(), 0);
            if (r > 0) {
                s.got += static_cast<std::size_t>(r);
                continue;
            }
            if (r < 0 && (errno == EAGAIN || errno == EINTR)) return;
            if (r < 0) return fail(i, "recv");
            if (s.got != o_.reply) {  // the server's --reply differs from ours
                if (first_error_.empty())
                    first_error_ =
                        "a reply of " + std::to_string(s.got) + " bytes, expected " + std::to_string(o_.reply);
                return fail(i, "reply");
            }
            const std::int64_t t = now_ns();
            if (t <= end_ns_) {  // a connection that ends after the measured time is the tail, not counted
                ++completed_;
                times_us_.push_back(static_cast<double>(t - s.started_ns) / 1e3);
            }
            return finish(i);
        }
    }

    void abandon_all() {
        for (auto& s : slots_)
            if (s.fd >= 0) {
                close(s.fd);
                s.fd = -1;
            }
    }

    const Options& o_;
    sockaddr_in to_;
    int ep_ = -1;
    std::vector<Slot> slots_;
    std::vector<char> reply_buf_;
    std::vector<double> times_us_;
    std::uint64_t completed_ = 0, failed_ = 0, started_ = 0, unfinished_ = 0, total_ = 0;
    std::int64_t begin_ns_ = 0, end_ns_ = INT64_MAX, measured_ns_ = 0;
    std::string first_error_;
};

int client(const Options& o) {
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<std::uint16_t>(o.port));
    if (inet_pton(AF_INET, o.to.c_str(), &to.sin_addr) != 1) usage("--to " + o.to + ": not an IPv4 address");
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);
    Client c(o, to);
    bool warm = false;
    for (int i = 0; i < 50 && !warm && !g_stop.load(); ++i) {
        warm = c.once(1'000'000'000);
        if (!warm) usleep(100'000);
    }
    if (!warm) {
        std::printf("{\"error\":\"no connection to %s:%u completed within 5 s (%s)\",\"connections\":0}\n",
                    o.to.c_str(), o.port, c.first_error().c_str());
        return 1;
    }
    c.run(o.count, o.count > 0 ? 0 : o.duration);
    c.report();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) usage("");
    const std::string mode = argv[1];
    Options o;
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) usage(a + " needs a value");
        const char* v = argv[++i];
        if (a == "--to")
            o.to = v;
        else if (a == "--port")
            o.port = static_cast<unsigned>(std::strtoul(v, nullptr, 10));
        else if (a == "--duration")
            o.duration = std::strtod(v, nullptr);
        else if (a == "--count")
            o.count = std::strtoull(v, nullptr, 10);
        else if (a == "--concurrency")
            o.concurrency = static_cast<unsigned>(std::strtoul(v, nullptr, 10));
        else if (a == "--request")
            o.request = std::strtoul(v, nullptr, 10);
        else if (a == "--reply")
            o.reply = std::strtoul(v, nullptr, 10);
        else
            usage("unknown option " + a);
    }
    if (o.port == 0 || o.port > 65535) usage("--port must be 1..65535");
    if (o.request == 0 || o.request > 65536 || o.reply > 65536)
        usage("--request must be 1..65536 bytes, --reply 0..65536");
    if (mode == "server") return server(o);
    if (mode != "client") usage("the first argument is server or client");
    if (o.to.empty()) usage("client needs --to");
    if (o.concurrency == 0 || o.concurrency > 4096) usage("--concurrency must be 1..4096");
    if (o.duration <= 0 && o.count == 0) usage("--duration must be positive (or give --count)");
    return client(o);
}
