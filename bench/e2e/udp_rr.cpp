// andromeda-udprr: UDP request/response latency at a fixed rate (issue 8).
//   andromeda-udprr server [--port N]                     echoes every datagram back
//   andromeda-udprr client --to IP [--port N] [--rate PER_S] [--duration S | --count N] [--size BYTES]
// The client sends on a fixed schedule (open loop: a slow reply never delays the next request),
// stamps each request with CLOCK_MONOTONIC and prints count, loss and RTT percentiles as JSON.
// Before measuring it waits (up to 5 s) for one echo, so ARP and warm-up stay out of the figures.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
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

struct Probe {
    std::uint64_t magic;
    std::uint64_t phase;  // 0 warm-up, 1 measured
    std::uint64_t seq;
    std::int64_t sent_ns;
};
constexpr std::uint64_t kMagic = 0x616e64726f6d6564ULL;  // "andromed"

[[noreturn]] void usage(const char* why) {
    if (why != nullptr) std::fprintf(stderr, "andromeda-udprr: %s\n", why);
    std::fprintf(stderr,
                 "usage: andromeda-udprr server [--port N]\n"
                 "       andromeda-udprr client --to IP [--port N] [--rate PER_SECOND] [--duration S | --count N]"
                 " [--size BYTES]\n");
    std::exit(2);
}

int server(unsigned port) {
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        std::perror("andromeda-udprr server: bind");
        return 1;
    }
    struct sigaction sa{};
    sa.sa_handler = on_signal;  // no SA_RESTART: recvfrom returns EINTR
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    std::printf("ready: echoing UDP port %u\n", port);
    std::fflush(stdout);
    std::uint64_t echoed = 0;
    char buf[65536];
    while (!g_stop.load()) {
        sockaddr_in from{};
        socklen_t from_length = sizeof from;
        const ssize_t n = recvfrom(fd, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &from_length);
        if (n < 0) continue;
        if (sendto(fd, buf, static_cast<std::size_t>(n), 0, reinterpret_cast<sockaddr*>(&from), from_length) == n) ++echoed;
    }
    std::printf("{\"echoed\":%llu}\n", static_cast<unsigned long long>(echoed));
    return 0;
}

double percentile(const std::vector<double>& sorted, double p) {
    if (sorted.empty()) return 0;
    const auto i = static_cast<std::size_t>(std::floor(p * static_cast<double>(sorted.size() - 1)));
    return sorted[i];
}

int client(const std::string& to, unsigned port, double rate, double duration, std::uint64_t count, std::size_t size) {
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    if (fd < 0 || inet_pton(AF_INET, to.c_str(), &addr.sin_addr) != 1 ||
        connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        std::fprintf(stderr, "andromeda-udprr client: cannot reach %s:%u\n", to.c_str(), port);
        return 1;
    }
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);  // wake on time: the send schedule is the point
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    std::vector<char> buf(std::max(size, sizeof(Probe)), 0);
    std::vector<char> in(65536);
    auto send_probe = [&](std::uint64_t phase, std::uint64_t seq) {
        Probe p{kMagic, phase, seq, now_ns()};
        std::memcpy(buf.data(), &p, sizeof p);
        return send(fd, buf.data(), buf.size(), MSG_DONTWAIT) == static_cast<ssize_t>(buf.size());
    };
    // Warm-up: one echo back (ARP resolved, every path primed).
    bool warm = false;
    for (int i = 0; i < 50 && !warm && !g_stop.load(); ++i) {
        send_probe(0, static_cast<std::uint64_t>(i));
        pollfd pfd{fd, POLLIN, 0};
        if (poll(&pfd, 1, 100) > 0) {
            while (recv(fd, in.data(), in.size(), MSG_DONTWAIT) >= static_cast<ssize_t>(sizeof(Probe))) warm = true;
        }
    }
    if (!warm) {
        std::printf("{\"error\":\"no echo from %s:%u within 5 s\",\"sent\":0,\"received\":0}\n", to.c_str(), port);
        return 1;
    }
    const std::uint64_t total = count > 0 ? count : static_cast<std::uint64_t>(rate * duration);
    const auto interval_ns = static_cast<std::int64_t>(1e9 / rate);
    std::vector<double> rtt_us;
    rtt_us.reserve(total);
    std::vector<bool> seen(total, false);
    std::uint64_t sent = 0, send_failed = 0, duplicates = 0, late_sends = 0;
    auto drain = [&] {
        for (;;) {
            const ssize_t n = recv(fd, in.data(), in.size(), MSG_DONTWAIT);
            if (n < 0) return;
            const std::int64_t t = now_ns();
            if (n < static_cast<ssize_t>(sizeof(Probe))) continue;
            Probe p{};
            std::memcpy(&p, in.data(), sizeof p);
            if (p.magic != kMagic || p.phase != 1 || p.seq >= total) continue;
            if (seen[p.seq]) {
                ++duplicates;
                continue;
            }
            seen[p.seq] = true;
            rtt_us.push_back(static_cast<double>(t - p.sent_ns) / 1e3);
        }
    };
    const std::int64_t start = now_ns();
    std::int64_t next = start;
    while (sent < total && !g_stop.load()) {
        const std::int64_t t = now_ns();
        if (t >= next) {
            if (t - next > interval_ns) ++late_sends;
            if (send_probe(1, sent)) ++sent;
            else {
                ++send_failed;
                ++sent;  // counted as lost: the schedule goes on
            }
            next += interval_ns;
            drain();
            continue;
        }
        const std::int64_t wait = next - t;
        timespec ts{static_cast<time_t>(wait / 1'000'000'000), static_cast<long>(wait % 1'000'000'000)};
        pollfd pfd{fd, POLLIN, 0};
        if (ppoll(&pfd, 1, &ts, nullptr) > 0) drain();
    }
    const double send_seconds = static_cast<double>(now_ns() - start) / 1e9;
    // Stragglers: up to 500 ms after the last request.
    const std::int64_t until = now_ns() + 500'000'000;
    while (rtt_us.size() < sent && now_ns() < until) {
        pollfd pfd{fd, POLLIN, 0};
        if (poll(&pfd, 1, 10) > 0) drain();
    }
    std::sort(rtt_us.begin(), rtt_us.end());
    double mean = 0;
    for (const double v : rtt_us) mean += v;
    if (!rtt_us.empty()) mean /= static_cast<double>(rtt_us.size());
    std::printf(
        "{\"rate\":%.0f,\"sent\":%llu,\"received\":%llu,\"lost\":%llu,\"send_failed\":%llu,\"duplicates\":%llu,"
        "\"late_sends\":%llu,\"seconds\":%.3f,\"size\":%zu,\"min_us\":%.2f,\"p50_us\":%.2f,\"p90_us\":%.2f,"
        "\"p99_us\":%.2f,\"p999_us\":%.2f,\"max_us\":%.2f,\"mean_us\":%.2f}\n",
        rate, static_cast<unsigned long long>(sent), static_cast<unsigned long long>(rtt_us.size()),
        static_cast<unsigned long long>(sent - std::min<std::uint64_t>(sent, rtt_us.size())),
        static_cast<unsigned long long>(send_failed), static_cast<unsigned long long>(duplicates),
        static_cast<unsigned long long>(late_sends), send_seconds, buf.size(), percentile(rtt_us, 0),
        percentile(rtt_us, 0.5), percentile(rtt_us, 0.9), percentile(rtt_us, 0.99), percentile(rtt_us, 0.999),
        percentile(rtt_us, 1), mean);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) usage(nullptr);
    const std::string mode = argv[1];
    std::string to;
    unsigned port = 7777;
    double rate = 10000, duration = 5;
    std::uint64_t count = 0;
    std::size_t size = 64;
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) usage((a + " needs a value").c_str());
        const char* v = argv[++i];
        if (a == "--to") to = v;
        else if (a == "--port") port = static_cast<unsigned>(std::strtoul(v, nullptr, 10));
        else if (a == "--rate") rate = std::strtod(v, nullptr);
        else if (a == "--duration") duration = std::strtod(v, nullptr);
        else if (a == "--count") count = std::strtoull(v, nullptr, 10);
        else if (a == "--size") size = std::strtoul(v, nullptr, 10);
        else usage(("unknown option " + a).c_str());
    }
    if (mode == "server") return server(port);
    if (mode != "client") usage("the first argument is server or client");
    if (to.empty()) usage("client needs --to");
    if (rate <= 0 || rate > 1e6) usage("--rate must be 1..1000000");
    if (size > 9000) usage("--size must be at most 9000");
    return client(to, port, rate, duration, count, size);
}
