// andromeda-xdpsink: attaches bench/e2e/xdp_sink.bpf.c to an interface (native XDP; generic XDP
// with --generic; tc ingress with --tc), prints "ready", and on SIGINT/SIGTERM (or after
// --duration) prints the frames it counted and dropped as JSON and detaches.
#include <linux/if_link.h>
#include <net/if.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "xdp_sink.skel.h"

namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop.store(true); }

double now_s() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Totals {
    unsigned long long packets = 0, bytes = 0;
};

Totals read_totals(xdp_sink* skel) {
    const int cpus = libbpf_num_possible_cpus();
    struct Count {
        __u64 packets, bytes;
    };
    std::vector<Count> values(static_cast<std::size_t>(cpus > 0 ? cpus : 1));
    __u32 key = 0;
    Totals t;
    if (bpf_map__lookup_elem(skel->maps.sink_counts, &key, sizeof key, values.data(), values.size() * sizeof(Count), 0) != 0)
        return t;
    for (const auto& v : values) {
        t.packets += v.packets;
        t.bytes += v.bytes;
    }
    return t;
}

}  // namespace

int main(int argc, char** argv) {
    std::string dev;
    unsigned port = 0;
    double duration = 0;
    bool generic = false, tc = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--dev" && i + 1 < argc) dev = argv[++i];
        else if (a == "--port" && i + 1 < argc) port = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 10));
        else if (a == "--duration" && i + 1 < argc) duration = std::strtod(argv[++i], nullptr);
        else if (a == "--generic") generic = true;
        else if (a == "--tc") tc = true;
        else {
            std::fprintf(stderr, "usage: andromeda-xdpsink --dev IF [--port UDP_PORT] [--duration SECONDS] [--generic | --tc]\n");
            return 2;
        }
    }
    if (dev.empty()) {
        std::fprintf(stderr, "andromeda-xdpsink: --dev is required\n");
        return 2;
    }
    const int ifindex = static_cast<int>(if_nametoindex(dev.c_str()));
    if (ifindex == 0) {
        std::fprintf(stderr, "andromeda-xdpsink: no interface %s in this network namespace\n", dev.c_str());
        return 1;
    }
    xdp_sink* skel = xdp_sink__open();
    if (skel == nullptr) {
        std::fprintf(stderr, "andromeda-xdpsink: opening the BPF object failed\n");
        return 1;
    }
    skel->rodata->sink_port = static_cast<__u16>(port);
    if (const int rc = xdp_sink__load(skel); rc != 0) {
        std::fprintf(stderr, "andromeda-xdpsink: loading: %s\n", std::strerror(-rc));
        xdp_sink__destroy(skel);
        return 1;
    }
    const __u32 flags = generic ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE;
    bpf_tc_hook hook;
    std::memset(&hook, 0, sizeof hook);  // padding too: libbpf refuses non-zero bytes past the last field
    hook.sz = sizeof hook;
    hook.ifindex = ifindex;
    hook.attach_point = BPF_TC_INGRESS;
    bpf_tc_opts opts;
    std::memset(&opts, 0, sizeof opts);
    opts.sz = sizeof opts;
    opts.handle = 1;
    opts.priority = 1;
    opts.prog_fd = bpf_program__fd(skel->progs.tc_sink);
    int rc = 0;
    if (tc) {
        rc = bpf_tc_hook_create(&hook);
        if (rc == -EEXIST) rc = 0;
        if (rc == 0) rc = bpf_tc_attach(&hook, &opts);
    } else {
        rc = bpf_xdp_attach(ifindex, bpf_program__fd(skel->progs.xdp_sink), flags | XDP_FLAGS_UPDATE_IF_NOEXIST, nullptr);
    }
    if (rc != 0) {
        std::fprintf(stderr, "andromeda-xdpsink: attaching to %s: %s\n", dev.c_str(), std::strerror(-rc));
        xdp_sink__destroy(skel);
        return 1;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    std::printf("ready: counting UDP to port %u on %s (%s)\n", port, dev.c_str(),
                tc ? "tc ingress" : generic ? "generic XDP" : "native XDP");
    std::fflush(stdout);
    const double start = now_s();
    while (!g_stop.load() && (duration <= 0 || now_s() - start < duration)) usleep(20000);
    const Totals t = read_totals(skel);
    if (tc) {
        opts.prog_fd = 0;
        opts.flags = 0;
        opts.prog_id = 0;
        bpf_tc_detach(&hook, &opts);
        hook.attach_point = static_cast<bpf_tc_attach_point>(BPF_TC_INGRESS | BPF_TC_EGRESS);
        bpf_tc_hook_destroy(&hook);
    } else {
        bpf_xdp_detach(ifindex, flags, nullptr);
    }
    xdp_sink__destroy(skel);
    std::printf("{\"packets\":%llu,\"bytes\":%llu,\"seconds\":%.6f}\n", t.packets, t.bytes, now_s() - start);
    std::fflush(stdout);
    return 0;
}
