// andromeda-xskgen: an AF_XDP packet generator for the end-to-end harness (issue 8).
//
// Binds one TX-only AF_XDP socket (no RX ring, no XDP program) to an interface queue, fills its
// UMEM once with prebuilt Ethernet/IPv4/UDP frames (valid checksums; --flows distinct source
// ports for flow spread) and then only posts descriptors: no per-packet writes to packet memory.
// Copy mode on veth: every sendto() kick makes the kernel copy up to 32 frames into skbs and
// hand them to the device (dev_direct_xmit, no qdisc). Prints one JSON object at the end.
#include <linux/if_xdp.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <xdp/xsk.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "support/frame_builder.hpp"

namespace {

using andromeda::test_support::Ipv4Frame;
constexpr std::size_t kHeadersLength = 14 + 20 + 8;


std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop.store(true); }

double now_s() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double cpu_s() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

[[noreturn]] void usage(const char* why) {
    if (why != nullptr) std::fprintf(stderr, "andromeda-xskgen: %s\n", why);
    std::fprintf(stderr,
                 "usage: andromeda-xskgen --dev IF --dst-mac MAC --src-ip IP --dst-ip IP [--src-mac MAC]\n"
                 "         [--length BYTES (Ethernet frame without FCS, default 60)] [--sport N] [--dport N]\n"
                 "         [--flows N (source ports sport..sport+N-1)] [--queue N] [--batch N]\n"
                 "         [--duration SECONDS | --count FRAMES] [--rate PPS (0: as fast as possible)]\n"
                 "         [--zero-copy]\n");
    std::exit(2);
}

struct Options {
    std::string dev;
    Ipv4Frame frame;  // UDP, DF, counting payload, valid checksums
    std::size_t length = 60;
    bool have_dst_mac = false, have_src_ip = false, have_dst_ip = false, have_src_mac = false;
    std::uint32_t flows = 1, queue = 0, batch = 64;
    double duration = 0;
    std::uint64_t count = 0;
    double rate = 0;
    bool zero_copy = false;
};

Options parse(int argc, char** argv) {
    Options o;
    o.frame.src_port = 10000;
    o.frame.dst_port = 9;
    o.frame.dont_fragment = true;
    o.frame.id = 0;
    o.frame.fill = 8;  // UDP byte i is i
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage((a + " needs a value").c_str());
            return argv[++i];
        };
        auto number = [&]() { return std::strtoull(value().c_str(), nullptr, 10); };
        if (a == "--dev") o.dev = value();
        else if (a == "--src-mac" || a == "--dst-mac") {
            const auto m = andromeda::test_support::parse_mac(value());
            if (!m) usage("bad MAC address");
            (a == "--src-mac" ? o.frame.src_mac : o.frame.dst_mac) = *m;
            (a == "--src-mac" ? o.have_src_mac : o.have_dst_mac) = true;
        } else if (a == "--src-ip" || a == "--dst-ip") {
            const auto ip = andromeda::test_support::parse_ipv4(value());
            if (!ip) usage("bad IPv4 address");
            (a == "--src-ip" ? o.frame.src : o.frame.dst) = *ip;
            (a == "--src-ip" ? o.have_src_ip : o.have_dst_ip) = true;
        } else if (a == "--length") o.length = number();
        else if (a == "--sport") o.frame.src_port = static_cast<std::uint16_t>(number());
        else if (a == "--dport") o.frame.dst_port = static_cast<std::uint16_t>(number());
        else if (a == "--flows") o.flows = static_cast<std::uint32_t>(number());
        else if (a == "--queue") o.queue = static_cast<std::uint32_t>(number());
        else if (a == "--batch") o.batch = static_cast<std::uint32_t>(number());
        else if (a == "--duration") o.duration = std::strtod(value().c_str(), nullptr);
        else if (a == "--count") o.count = number();
        else if (a == "--rate") o.rate = std::strtod(value().c_str(), nullptr);
        else if (a == "--zero-copy") o.zero_copy = true;
        else if (a == "-h" || a == "--help") usage(nullptr);
        else usage(("unknown option " + a).c_str());
    }
    if (o.dev.empty() || !o.have_dst_mac || !o.have_src_ip || !o.have_dst_ip) usage("--dev, --dst-mac, --src-ip and --dst-ip are required");
    if (o.duration <= 0 && o.count == 0) usage("give --duration or --count");
    if (o.flows == 0 || o.flows > 4096) usage("--flows must be 1..4096");
    if (o.batch == 0 || o.batch > 1024) usage("--batch must be 1..1024");
    if (o.length < kHeadersLength || o.length > 2048 - XDP_PACKET_HEADROOM)
        usage("--length must be 42..1792");
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    Options o = parse(argc, argv);
    const unsigned ifindex = if_nametoindex(o.dev.c_str());
    if (ifindex == 0) {
        std::fprintf(stderr, "andromeda-xskgen: no interface %s in this network namespace\n", o.dev.c_str());
        return 1;
    }
    if (!o.have_src_mac) {  // the interface's own address
        // Under `nsenter --net` /sys shows the root namespace's interfaces: ask the kernel.
        const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        ifreq req{};
        std::snprintf(req.ifr_name, sizeof req.ifr_name, "%s", o.dev.c_str());
        if (fd < 0 || ioctl(fd, SIOCGIFHWADDR, &req) != 0) {
            std::fprintf(stderr, "andromeda-xskgen: cannot read the MAC of %s; give --src-mac\n", o.dev.c_str());
            return 1;
        }
        std::memcpy(o.frame.src_mac.data(), req.ifr_hwaddr.sa_data, 6);
        close(fd);
    }

    constexpr std::uint32_t kFrameSize = 2048, kFrames = 4096, kRing = 2048;
    const std::size_t area_size = std::size_t{kFrameSize} * kFrames;
    void* area = mmap(nullptr, area_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (area == MAP_FAILED) {
        std::perror("mmap");
        return 1;
    }
    auto* bytes = static_cast<std::uint8_t*>(area);
    for (std::uint32_t i = 0; i < kFrames; ++i) {
        Ipv4Frame spec = o.frame;
        spec.src_port = static_cast<std::uint16_t>(o.frame.src_port + i % o.flows);
        const auto frame = andromeda::test_support::ipv4_frame(spec.frame_length(o.length));
        std::memcpy(bytes + std::size_t{i} * kFrameSize, frame.data(), frame.size());
    }

    xsk_ring_prod fill{}, tx{};
    xsk_ring_cons comp{};
    xsk_umem* umem = nullptr;
    xsk_umem_config ucfg{};
    ucfg.fill_size = kRing;
    ucfg.comp_size = kRing;
    ucfg.frame_size = kFrameSize;
    ucfg.frame_headroom = 0;
    if (const int rc = xsk_umem__create(&umem, area, area_size, &fill, &comp, &ucfg); rc != 0) {
        std::fprintf(stderr, "andromeda-xskgen: registering the UMEM: %s\n", std::strerror(-rc));
        return 1;
    }
    xsk_socket_config scfg{};
    scfg.rx_size = 0;
    scfg.tx_size = kRing;
    scfg.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;
    scfg.bind_flags = static_cast<std::uint16_t>(XDP_USE_NEED_WAKEUP | (o.zero_copy ? XDP_ZEROCOPY : XDP_COPY));
    xsk_socket* xsk = nullptr;
    if (const int rc = xsk_socket__create(&xsk, o.dev.c_str(), o.queue, umem, nullptr, &tx, &scfg); rc != 0) {
        std::fprintf(stderr, "andromeda-xskgen: binding AF_XDP to %s queue %u: %s\n", o.dev.c_str(), o.queue, std::strerror(-rc));
        return 1;
    }
    const int fd = xsk_socket__fd(xsk);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);

    std::uint64_t posted = 0, completed = 0, kicks = 0, busy = 0;
    std::uint32_t next_chunk = 0;
    const double start = now_s(), cpu_start = cpu_s();
    const double deadline = o.duration > 0 ? start + o.duration : 1e300;
    const std::uint64_t limit = o.count > 0 ? o.count : ~std::uint64_t{0};
    std::uint32_t loops = 0;
    double t = start, drain_start = 0;
    while (!g_stop.load(std::memory_order_relaxed)) {
        std::uint32_t idx = 0;
        const std::uint32_t done = xsk_ring_cons__peek(&comp, kRing, &idx);
        if (done > 0) {
            xsk_ring_cons__release(&comp, done);
            completed += done;
        }
        if ((++loops & 63) == 0 || o.rate > 0) t = now_s();
        const bool time_up = t >= deadline;
        if (posted >= limit || time_up) {
            if (completed >= posted) break;
            if (drain_start == 0) drain_start = t;
            if (t >= drain_start + 1.0) break;  // frames the device never took back
        } else {
            std::uint64_t want = std::min<std::uint64_t>(o.batch, limit - posted);
            want = std::min<std::uint64_t>(want, kFrames - (posted - completed));
            if (o.rate > 0) {  // paced in whole batches: never more than one batch ahead of rate * elapsed
                const auto due = static_cast<std::uint64_t>((t - start) * o.rate);
                const std::uint64_t allowed = due - due % o.batch + o.batch;
                want = allowed > posted ? std::min<std::uint64_t>(want, allowed - posted) : 0;
            }
            if (want > 0) {
                const std::uint32_t got = xsk_ring_prod__reserve(&tx, static_cast<std::uint32_t>(want), &idx);
                for (std::uint32_t i = 0; i < got; ++i) {
                    xdp_desc* d = xsk_ring_prod__tx_desc(&tx, idx + i);
                    d->addr = std::uint64_t{next_chunk} * kFrameSize;
                    d->len = static_cast<std::uint32_t>(o.length);
                    d->options = 0;
                    next_chunk = next_chunk + 1 == kFrames ? 0 : next_chunk + 1;
                }
                xsk_ring_prod__submit(&tx, got);
                posted += got;
            }
        }
        if (posted > completed && xsk_ring_prod__needs_wakeup(&tx)) {
            ++kicks;
            if (sendto(fd, nullptr, 0, MSG_DONTWAIT, nullptr, 0) < 0 &&
                (errno == EAGAIN || errno == EBUSY || errno == ENOBUFS))
                ++busy;  // the device pushed back; the frames stay on the ring
        } else if (o.rate > 0 && posted < limit) {
            const double wait = static_cast<double>(posted) / o.rate - (t - start);
            if (wait > 50e-6) {
                const auto ns = static_cast<long long>(wait * 1e9 * 0.9);
                timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
                nanosleep(&ts, nullptr);
            }
        }
    }
    const double elapsed = now_s() - start, cpu = cpu_s() - cpu_start;
    xdp_statistics stats{};
    socklen_t stats_length = sizeof stats;
    getsockopt(fd, SOL_XDP, XDP_STATISTICS, &stats, &stats_length);
    xdp_options opts{};
    socklen_t opts_length = sizeof opts;
    getsockopt(fd, SOL_XDP, XDP_OPTIONS, &opts, &opts_length);
    std::printf(
        "{\"sent\":%llu,\"posted\":%llu,\"seconds\":%.6f,\"pps\":%.0f,\"frame_length\":%u,\"flows\":%u,"
        "\"kicks\":%llu,\"kicks_busy\":%llu,\"tx_invalid_descs\":%llu,\"cpu_seconds\":%.4f,\"mode\":\"%s\"}\n",
        static_cast<unsigned long long>(completed), static_cast<unsigned long long>(posted), elapsed,
        static_cast<double>(completed) / elapsed, static_cast<unsigned>(o.length), o.flows, static_cast<unsigned long long>(kicks),
        static_cast<unsigned long long>(busy), static_cast<unsigned long long>(stats.tx_invalid_descs), cpu,
        (opts.flags & XDP_OPTIONS_ZEROCOPY) ? "zero-copy" : "copy");
    std::fflush(stdout);
    xsk_socket__delete(xsk);
    xsk_umem__delete(umem);
    munmap(area, area_size);
    return 0;
}
