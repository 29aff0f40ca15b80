// andromeda-forward: the end-to-end harness's ceiling datapath (bench/e2e/forward.bpf.c). Attaches
// a tc program to the ingress of each --redirect / --redirect-peer device that hands every frame
// on to the other device (out of it, or with --redirect-peer into its veth peer), optionally an
// empty XDP program in generic mode (--xdp-pass), prints "ready", and detaches everything on
// SIGINT/SIGTERM. tc programs attach as tcx links where the kernel has them (as andromedad's do),
// else as clsact filters.
#include <linux/if_link.h>
#include <net/if.h>
#include <signal.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "forward.skel.h"

namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop.store(true); }

// BPF_TCX_INGRESS (Linux 6.6): libbpf 1.1's headers predate it.
constexpr int kTcxIngress = 46;

struct Rule {
    std::string in, out;
    bool peer = false;
    int in_ifindex = 0, out_ifindex = 0;
};

struct Attached {
    forward* skel = nullptr;
    int ifindex = 0;
    int link_fd = -1;       // tcx
    bool clsact = false;    // else a cls_bpf filter
    bool xdp = false;       // the empty XDP program, generic mode
};

[[noreturn]] void usage() {
    std::fprintf(stderr,
                 "usage: andromeda-forward [--redirect IN:OUT]... [--redirect-peer IN:OUT]... [--xdp-pass IF]...\n"
                 "                         [--room BYTES]\n"
                 "  --redirect IN:OUT       every frame arriving on IN leaves by OUT (bpf_redirect)\n"
                 "  --redirect-peer IN:OUT  every frame arriving on IN enters OUT's veth peer (bpf_redirect_peer)\n"
                 "  --xdp-pass IF           an empty XDP program (XDP_PASS) on IF, generic mode\n"
                 "  --room BYTES            --redirect leaves BYTES of headroom in front of linear, non-GSO frames\n");
    std::exit(2);
}

int index_of(const std::string& name) {
    const int ifindex = static_cast<int>(if_nametoindex(name.c_str()));
    if (ifindex == 0) {
        std::fprintf(stderr, "andromeda-forward: no interface %s in this network namespace\n", name.c_str());
        std::exit(1);
    }
    return ifindex;
}

void detach(Attached& a) {
    if (a.xdp) bpf_xdp_detach(a.ifindex, XDP_FLAGS_SKB_MODE, nullptr);
    if (a.link_fd >= 0) close(a.link_fd);  // a tcx link detaches when its last fd closes
    if (a.clsact) {
        LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = a.ifindex, .attach_point = BPF_TC_INGRESS);
        LIBBPF_OPTS(bpf_tc_opts, opts, .handle = 1, .priority = 1);
        bpf_tc_detach(&hook, &opts);
    }
    forward__destroy(a.skel);
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<Rule> rules;
    std::vector<std::pair<std::string, int>> xdp_devs;  // name, ifindex
    unsigned room = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) usage();
        const std::string v = argv[++i];
        if (a == "--redirect" || a == "--redirect-peer") {
            const auto colon = v.find(':');
            if (colon == std::string::npos || colon == 0 || colon + 1 == v.size()) usage();
            // Names are resolved as they are read, before anything is attached: a typo must not
            // leave a program behind (a generic XDP program stays attached after the process exits).
            Rule r{v.substr(0, colon), v.substr(colon + 1), a == "--redirect-peer"};
            r.in_ifindex = index_of(r.in);
            r.out_ifindex = index_of(r.out);
            rules.push_back(r);
        } else if (a == "--xdp-pass") {
            xdp_devs.push_back({v, index_of(v)});
        } else if (a == "--room") {
            char* end = nullptr;
            const unsigned long n = std::strtoul(v.c_str(), &end, 10);
            if (v.empty() || *end != '\0' || n > 1024) {
                std::fprintf(stderr, "andromeda-forward: --room %s: expected a number of bytes from 0 to 1024\n", v.c_str());
                return 2;
            }
            room = static_cast<unsigned>(n);
        } else {
            usage();
        }
    }
    if (rules.empty() && xdp_devs.empty()) usage();
    std::vector<Attached> attached;
    const auto fail = [&](const std::string& what, int error) {
        std::fprintf(stderr, "andromeda-forward: %s: %s\n", what.c_str(), std::strerror(error));
        for (auto& a : attached) detach(a);
        std::exit(1);
    };
    const auto open_and_load = [&](int to_ifindex, bool peer) {
        forward* skel = forward__open();
        if (skel == nullptr) fail("opening the BPF object", errno);
        skel->rodata->to_ifindex = static_cast<__u32>(to_ifindex);
        skel->rodata->to_peer = peer ? 1 : 0;
        skel->rodata->room = peer ? 0 : room;
        if (const int rc = forward__load(skel); rc != 0) {
            forward__destroy(skel);
            fail("loading the BPF object", -rc);
        }
        return skel;
    };
    for (const auto& r : rules) {
        Attached a;
        a.ifindex = r.in_ifindex;
        a.skel = open_and_load(r.out_ifindex, r.peer);
        const int prog = bpf_program__fd(a.skel->progs.fwd);
        a.link_fd = bpf_link_create(prog, a.ifindex, static_cast<bpf_attach_type>(kTcxIngress), nullptr);
        if (a.link_fd < 0) {
            if (errno != EINVAL) {
                forward__destroy(a.skel);
                fail("attaching to the tcx ingress of " + r.in, errno);
            }
            // No tcx on this kernel: a clsact filter.
            LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = a.ifindex, .attach_point = BPF_TC_INGRESS);
            LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = prog, .flags = BPF_TC_F_REPLACE, .handle = 1, .priority = 1);
            int rc = bpf_tc_hook_create(&hook);
            if (rc == -EEXIST) rc = 0;
            if (rc == 0) rc = bpf_tc_attach(&hook, &opts);
            if (rc != 0) {
                forward__destroy(a.skel);
                fail("attaching to the clsact ingress of " + r.in, -rc);
            }
            a.clsact = true;
        }
        attached.push_back(a);
    }
    for (const auto& [dev, ifindex] : xdp_devs) {
        Attached a;
        a.ifindex = ifindex;
        a.skel = open_and_load(0, false);
        if (const int rc = bpf_xdp_attach(a.ifindex, bpf_program__fd(a.skel->progs.xdp_pass),
                                          XDP_FLAGS_SKB_MODE | XDP_FLAGS_UPDATE_IF_NOEXIST, nullptr);
            rc != 0) {
            forward__destroy(a.skel);
            fail("attaching XDP to " + dev, -rc);
        }
        a.xdp = true;
        attached.push_back(a);
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    std::printf("ready: %zu redirects, %zu XDP programs\n", rules.size(), xdp_devs.size());
    std::fflush(stdout);
    while (!g_stop.load()) usleep(20000);
    for (auto& a : attached) detach(a);
    return 0;
}
