// The XDP prefilter's cost per verdict: the program loaded from its skeleton, its maps filled
// as andromedad fills them for node1 of a two-node fabric (io::plan_full over the fabric below,
// an AF_XDP socket in the XSKMAP), then one frame per verdict run through
// bpf_prog_test_run_opts with a repeat count. The kernel times the repeat loop and reports the
// average per run (opts.duration, ns); the figure is the median over --runs such loops.
//
// What is measured: the program alone on a frame already in memory — parsing, map lookups,
// counter updates, the verdict. Without BPF_F_TEST_XDP_LIVE_FRAMES the kernel does not act on
// the verdict: XDP_REDIRECT costs the bpf_redirect_map() call (the XSKMAP lookup and recording
// the target), not the copy into the socket, and XDP_PASS does not build an skb. A trivial
// program (return XDP_PASS) is timed the same way as the floor: the test-run loop's own cost.
//
// Runs in a network namespace of its own (its loopback is the port the frames arrive on).
// Needs root (CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN for unshare): without it, prints SKIP and
// exits 77.
//
//   xdp_cost [--quick] [--repeat N] [--runs R] [--out FILE] [--check]
// --check: exit 1 when a frame's verdict or counter is not the expected one (the smoke test).
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <xdp/xsk.h>

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "andromeda_kern_user.h"
#include "andromeda_xdp.skel.h"
#include "fabric/loader.hpp"
#include "io/plan/map_plan.hpp"
#include "io/plan/port_table.hpp"
#include "support/fabric_builder.hpp"
#include "support/xdp_skeleton.hpp"
#include "wire/bytes.hpp"
#include "wire/checksum.hpp"

namespace {

using andromeda::wire::store_be16;
using andromeda::wire::store_be32;
using json = nlohmann::json;
using Bytes = std::vector<std::uint8_t>;

constexpr int kSkip = 77;
constexpr std::uint32_t kLoopback = 1;  // in a fresh namespace, lo is always 1
constexpr std::uint32_t kNode1 = 0xc0a80101, kNode2 = 0xc0a80102, kStranger = 0xc0a80163;
constexpr std::uint32_t kNatAddress = 0xcb00710a;  // 203.0.113.10, served by node1
constexpr std::uint32_t kVni = 100;
// Port slots as the daemon hands them out: the underlay first, then the uplink, then tenants.
constexpr std::uint32_t kUnderlaySlot = 0, kUplinkSlot = 1, kTenantSlot = 2, kUnboundSlot = 9;
const std::uint8_t kTenantMac[6] = {2, 0, 0, 0, 0, 0x10};

// node1 of a two-node fabric; node1 is also the NAT gateway of VPC blue.
const std::string kFabric = andromeda::test_support::FabricBuilder("node1", "192.168.1.1")
                                .uplink("eth2", "203.0.113.2", "203.0.113.1")
                                .peer("node1", "192.168.1.1")
                                .peer("node2", "192.168.1.2")
                                .vpc("blue", 100, "10.0.0.0/24", "10.0.0.1")
                                .nat("node1", "203.0.113.10")
                                .endpoint("10.0.0.10", "02:00:00:00:00:10", "node1", "tap-blue-10")
                                .endpoint("10.0.0.20", "02:00:00:00:00:20", "node2")
                                .toml();

[[noreturn]] void die(const std::string& message) {
    std::cerr << "xdp_cost: " << message << "\n";
    std::exit(2);
}

using andromeda::testing::enter_private_netns;
using andromeda::testing::Skel;

void update(int map_fd, const void* key, const void* value, const char* what) {
    if (bpf_map_update_elem(map_fd, key, value, BPF_ANY) != 0)
        die(std::string("writing ") + what + ": " + std::strerror(errno));
}

// The fabric maps exactly as the daemon plans them for node1.
void fill_fabric_maps(const andromeda_xdp& skel) {
    const auto loaded = andromeda::fabric::load_fabric_string(kFabric, "xdp_cost.toml");
    if (!loaded.ok()) die("the built-in fabric did not load: " + andromeda::fabric::to_string(loaded.errors));
    const auto plan = andromeda::io::plan_full(*loaded.snapshot, {andromeda::wire::Ipv4Address(kNode1), {}});
    for (const auto& [k, v] : plan.peers.upserts) update(bpf_map__fd(skel.maps.andromeda_peers), &k, &v, "peers");
    for (const auto& [k, v] : plan.vnis.upserts) update(bpf_map__fd(skel.maps.andromeda_vnis), &k, &v, "vnis");
    for (const auto& [k, v] : plan.fabric.upserts) update(bpf_map__fd(skel.maps.andromeda_fabric), &k, &v, "fabric");
    for (const auto& [k, v] : plan.nat_addrs.upserts)
        update(bpf_map__fd(skel.maps.andromeda_nat_addrs), &k, &v, "nat_addrs");
    if (plan.nat_addrs.upserts.empty()) die("the plan has no NAT address (the uplink case needs one)");
}

// An AF_XDP socket on the namespace's lo, registered for every bound slot at queue 0.
struct Socket {
    static constexpr std::size_t kFrames = 64, kFrameSize = XSK_UMEM__DEFAULT_FRAME_SIZE;

    explicit Socket(const andromeda_xdp& skel) {
        area = mmap(nullptr, kFrames * kFrameSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (area == MAP_FAILED) die("mmap for the UMEM failed");
        if (xsk_umem__create(&umem, area, kFrames * kFrameSize, &fill, &comp, nullptr) != 0) die("xsk_umem__create");
        xsk_socket_config cfg{};
        cfg.rx_size = XSK_RING_CONS__DEFAULT_NUM_DESCS;
        cfg.tx_size = XSK_RING_PROD__DEFAULT_NUM_DESCS;
        cfg.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;
        cfg.xdp_flags = XDP_FLAGS_SKB_MODE;
        cfg.bind_flags = XDP_COPY;
        const int rc = xsk_socket__create(&xsk, "lo", 0, umem, &rx, &tx, &cfg);
        if (rc != 0) die(std::string("binding an AF_XDP socket to lo: ") + std::strerror(-rc));
        const int fd = xsk_socket__fd(xsk);
        for (const std::uint32_t slot : {kUnderlaySlot, kUplinkSlot, kTenantSlot}) {
            const std::uint32_t key = slot * ANDROMEDA_MAX_QUEUES + 0;
            update(bpf_map__fd(skel.maps.andromeda_xsks), &key, &fd, "xsks");
        }
    }
    ~Socket() {
        xsk_socket__delete(xsk);
        xsk_umem__delete(umem);
        munmap(area, kFrames * kFrameSize);
    }
    Socket(const Socket&) = delete;
    Socket& operator=(const Socket&) = delete;

    void* area = nullptr;
    xsk_ring_prod fill{}, tx{};
    xsk_ring_cons comp{}, rx{};
    xsk_umem* umem = nullptr;
    xsk_socket* xsk = nullptr;
};

void fix_ip_checksum(Bytes& f, std::size_t ip_offset) {
    f[ip_offset + 10] = f[ip_offset + 11] = 0;
    store_be16(&f[ip_offset + 10], andromeda::wire::internet_checksum({&f[ip_offset], 20}));
}

// Ethernet + IPv4 (src -> dst) + UDP to `dport` + an Andromeda header for kVni + an inner
// Ethernet/IPv4/UDP frame of 60 bytes: 110 bytes, what node2 sends for a minimal tenant frame.
Bytes udp_frame(std::uint16_t dport, std::uint32_t src = kNode2, std::uint32_t dst = kNode1) {
    const std::size_t payload = 8 + 60;
    Bytes f(14 + 20 + 8 + payload, 0);
    const std::uint8_t macs[12] = {2, 0, 0, 0, 0xa1, 1, 2, 0, 0, 0, 0xa1, 2};
    std::copy(std::begin(macs), std::end(macs), f.begin());
    store_be16(&f[12], 0x0800);
    std::uint8_t* ip = &f[14];
    ip[0] = 0x45;
    store_be16(ip + 2, static_cast<std::uint16_t>(20 + 8 + payload));
    ip[6] = 0x40;  // DF
    ip[8] = 64;
    ip[9] = 17;
    store_be32(ip + 12, src);
    store_be32(ip + 16, dst);
    fix_ip_checksum(f, 14);
    std::uint8_t* udp = ip + 20;
    store_be16(udp, 50000);
    store_be16(udp + 2, dport);
    store_be16(udp + 4, static_cast<std::uint16_t>(8 + payload));
    std::uint8_t* overlay = udp + 8;
    overlay[0] = 0x10;
    overlay[6] = kVni;
    overlay[7] = 64;
    std::uint8_t* inner = overlay + 8;
    const std::uint8_t inner_macs[12] = {2, 0, 0, 0, 0, 0x10, 2, 0, 0, 0, 0, 0x20};  // 10.0.0.20 -> 10.0.0.10
    std::copy(std::begin(inner_macs), std::end(inner_macs), inner);
    store_be16(inner + 12, 0x0800);
    return f;
}

// 60-byte tenant frame from the endpoint 10.0.0.10 (its MAC unless `last_mac_byte` says otherwise).
Bytes tenant_frame(std::uint8_t last_mac_byte = kTenantMac[5]) {
    Bytes f(60, 0);
    const std::uint8_t gateway[6] = {2, 0, 0, 0, 0, 0xff};
    std::copy(gateway, gateway + 6, f.begin());
    std::copy(kTenantMac, kTenantMac + 6, f.begin() + 6);
    f[11] = last_mac_byte;
    store_be16(&f[12], 0x0800);
    f[14] = 0x45;
    store_be16(&f[16], 46);
    f[22] = 64;
    f[23] = 17;
    store_be32(&f[26], 0x0a00000a);
    store_be32(&f[30], 0x0a000014);
    fix_ip_checksum(f, 14);
    return f;
}

struct Case {
    const char* name;
    const char* description;
    std::uint32_t role;  // 0: the interface is no port
    std::uint32_t slot;
    Bytes frame;
    std::uint32_t verdict;
    const char* counter_name;
    __u64 andromeda_xdp_stats::*counter;
};

std::vector<Case> cases() {
    auto truncated = udp_frame(ANDROMEDA_OVERLAY_PORT);
    truncated.resize(14 + 12);
    auto fragment = udp_frame(ANDROMEDA_OVERLAY_PORT);
    fragment[14 + 6] = 0x20;  // MF
    fix_ip_checksum(fragment, 14);
    auto unknown_vni = udp_frame(ANDROMEDA_OVERLAY_PORT);
    unknown_vni[42 + 6] = 101;
    auto vlan = udp_frame(ANDROMEDA_OVERLAY_PORT);
    const std::uint8_t tag[4] = {0x81, 0x00, 0x00, 0x0a};
    vlan.insert(vlan.begin() + 12, std::begin(tag), std::end(tag));
    auto ssh = udp_frame(22, kNode2, kNode1);  // a TCP segment to port 22 as far as the program looks
    ssh[14 + 9] = 6;
    fix_ip_checksum(ssh, 14);
    auto arp = udp_frame(0);
    arp.resize(60);
    store_be16(&arp[12], 0x0806);
    using S = andromeda_xdp_stats;
    const std::uint32_t U = ANDROMEDA_PORT_UNDERLAY, T = ANDROMEDA_PORT_TENANT, L = ANDROMEDA_PORT_UPLINK;
    const std::uint16_t O = ANDROMEDA_OVERLAY_PORT;
    return {
        {"overlay_redirect", "underlay: overlay packet from a peer, known VNI: to the socket", U, kUnderlaySlot,
         udp_frame(O), XDP_REDIRECT, "redirect_overlay", &S::redirect_overlay},
        {"overlay_vlan_redirect", "underlay: the same in an 802.1Q tag", U, kUnderlaySlot, vlan, XDP_REDIRECT,
         "redirect_overlay", &S::redirect_overlay},
        {"overlay_no_socket", "underlay: overlay packet, no socket on its queue: drop", U, kUnboundSlot, udp_frame(O),
         XDP_DROP, "drop_no_socket", &S::drop_no_socket},
        {"unknown_peer", "underlay: overlay packet from an address that is no node: drop", U, kUnderlaySlot,
         udp_frame(O, kStranger), XDP_DROP, "drop_unknown_peer", &S::drop_unknown_peer},
        {"unknown_vni", "underlay: overlay packet for a VNI of no VPC: drop", U, kUnderlaySlot, unknown_vni, XDP_DROP,
         "drop_unknown_vni", &S::drop_unknown_vni},
        {"fragment", "underlay: fragmented overlay packet: drop", U, kUnderlaySlot, fragment, XDP_DROP,
         "drop_overlay_fragment", &S::drop_overlay_fragment},
        {"truncated", "underlay: IPv4 header cut short: drop", U, kUnderlaySlot, truncated, XDP_DROP, "drop_truncated",
         &S::drop_truncated},
        {"host_ssh", "underlay: TCP to port 22 (the host's SSH): pass", U, kUnderlaySlot, ssh, XDP_PASS, "pass_host",
         &S::pass_host},
        {"arp", "underlay: ARP: pass", U, kUnderlaySlot, arp, XDP_PASS, "pass_host", &S::pass_host},
        {"tenant_redirect", "tenant: the endpoint's own MAC: to the socket", T, kTenantSlot, tenant_frame(), XDP_REDIRECT,
         "redirect_tenant", &S::redirect_tenant},
        {"tenant_spoofed", "tenant: another source MAC: drop", T, kTenantSlot, tenant_frame(0x99), XDP_DROP,
         "drop_spoofed_mac", &S::drop_spoofed_mac},
        {"uplink_nat_redirect", "uplink: to the NAT address: to the socket", L, kUplinkSlot,
         udp_frame(5353, 0x08080808, kNatAddress), XDP_REDIRECT, "redirect_uplink", &S::redirect_uplink},
        {"uplink_pass", "uplink: to another address of the host: pass", L, kUplinkSlot,
         udp_frame(22, 0x08080808, 0xcb007102), XDP_PASS, "pass_host", &S::pass_host},
        {"not_a_port", "an interface missing from the port map: pass", 0, 0, udp_frame(O), XDP_PASS,
         "pass_unknown_port", &S::pass_unknown_port},
    };
}

andromeda_xdp_stats read_stats(const andromeda_xdp& skel) {
    const int ncpu = libbpf_num_possible_cpus();
    std::vector<andromeda_xdp_stats> per_cpu(static_cast<std::size_t>(ncpu));
    const std::uint32_t key = 0;
    if (bpf_map_lookup_elem(bpf_map__fd(skel.maps.andromeda_stats), &key, per_cpu.data()) != 0) die("reading stats");
    constexpr std::size_t n = sizeof(andromeda_xdp_stats) / sizeof(__u64);
    __u64 total[n] = {};
    for (const auto& s : per_cpu) {
        __u64 a[n];
        std::memcpy(a, &s, sizeof a);
        for (std::size_t i = 0; i < n; ++i) total[i] += a[i];
    }
    andromeda_xdp_stats out;
    std::memcpy(&out, total, sizeof out);
    return out;
}

struct RunResult {
    std::uint32_t verdict;
    std::uint32_t duration_ns;
};

RunResult test_run(int prog_fd, Bytes frame, int repeat) {
    xdp_md ctx{};
    ctx.data_end = static_cast<__u32>(frame.size());
    ctx.ingress_ifindex = kLoopback;
    ctx.rx_queue_index = 0;
    LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame.data(), .data_size_in = static_cast<__u32>(frame.size()),
                .ctx_in = &ctx, .ctx_size_in = sizeof ctx, .repeat = repeat);
    if (bpf_prog_test_run_opts(prog_fd, &opts) != 0) die(std::string("bpf_prog_test_run_opts: ") + std::strerror(errno));
    return {opts.retval, opts.duration};
}

// return XDP_PASS: the floor, what the test-run loop itself costs per run.
int trivial_program() {
    const bpf_insn insns[] = {
        {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, XDP_PASS},
        {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
    };
    const int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "xdp_floor", "GPL", insns, 2, nullptr);
    if (fd < 0) die(std::string("loading the trivial program: ") + std::strerror(errno));
    return fd;
}

const char* verdict_name(std::uint32_t v) {
    switch (v) {
        case XDP_ABORTED: return "XDP_ABORTED";
        case XDP_DROP: return "XDP_DROP";
        case XDP_PASS: return "XDP_PASS";
        case XDP_TX: return "XDP_TX";
        case XDP_REDIRECT: return "XDP_REDIRECT";
        default: return "?";
    }
}

json timings(int prog_fd, const Bytes& frame, int repeat, int runs) {
    std::vector<std::uint32_t> ns;
    for (int r = 0; r < runs; ++r) ns.push_back(test_run(prog_fd, frame, repeat).duration_ns);
    std::vector<std::uint32_t> sorted = ns;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                            : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2.0;
    return {{"ns_per_run", median}, {"ns_min", sorted.front()}, {"ns_max", sorted.back()}, {"runs_ns", ns}};
}

}  // namespace

int main(int argc, char** argv) {
    int repeat = 1000000;
    int runs = 5;
    bool check = false, quick = false;
    std::string out;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) die(arg + " needs a value");
            return argv[++i];
        };
        if (arg == "--repeat") repeat = std::stoi(value());
        else if (arg == "--runs") runs = std::stoi(value());
        else if (arg == "--out") out = value();
        else if (arg == "--check") check = true;
        else if (arg == "--quick") quick = true;
        else if (arg == "-h" || arg == "--help") {
            std::cout << "xdp_cost [--quick] [--repeat N] [--runs R] [--out FILE] [--check]\n";
            return 0;
        } else die("unknown option '" + arg + "' (try --help)");
    }
    if (quick) runs = std::min(runs, 3);
    if (repeat < 1 || runs < 1) die("--repeat and --runs are at least 1");
    if (geteuid() != 0) {
        std::cout << "SKIP: xdp_cost needs root (BPF_PROG_TEST_RUN, an AF_XDP socket, a network namespace)\n";
        return kSkip;
    }
    if (!enter_private_netns()) die(std::string("entering a private network namespace: ") + std::strerror(errno));
    libbpf_set_print([](libbpf_print_level level, const char* fmt, va_list args) {
        return level == LIBBPF_WARN ? std::vfprintf(stderr, fmt, args) : 0;
    });

    Skel skel(andromeda_xdp::open());
    if (!skel) die("opening the skeleton");
    skel->rodata->overlay_port = ANDROMEDA_OVERLAY_PORT;
    skel->rodata->encap_kind = ANDROMEDA_ENCAP_ANDROMEDA;
    if (andromeda_xdp::load(skel.get()) != 0) die("loading andromeda_xdp.bpf.o (is this kernel BPF-capable?)");
    fill_fabric_maps(*skel);
    const Socket socket(*skel);
    const int prog = bpf_program__fd(skel->progs.andromeda_xdp);
    const int ports = bpf_map__fd(skel->maps.andromeda_ports);

    int failures = 0;
    json results = json::array();
    for (const Case& c : cases()) {
        if (c.role == 0) {
            bpf_map_delete_elem(ports, &kLoopback);
        } else {
            const auto port = andromeda::io::make_port(
                static_cast<andromeda_port_role>(c.role), c.slot, c.role == ANDROMEDA_PORT_TENANT ? kVni : 0,
                andromeda::wire::Ipv4Address(0x0a00000a), andromeda::wire::MacAddress({2, 0, 0, 0, 0, 0x10}));
            update(ports, &kLoopback, &port, "ports");
        }
        const auto before = read_stats(*skel);
        const RunResult once = test_run(prog, c.frame, 1);
        const auto after = read_stats(*skel);
        const bool counted = after.*(c.counter) == before.*(c.counter) + 1;
        const bool ok = once.verdict == c.verdict && counted;
        if (!ok) {
            ++failures;
            std::fprintf(stderr, "xdp_cost: %s: verdict %s (expected %s), %s %s\n", c.name, verdict_name(once.verdict),
                         verdict_name(c.verdict), c.counter_name, counted ? "counted" : "NOT counted");
        }
        json r = {{"case", c.name},
                  {"description", c.description},
                  {"frame_bytes", c.frame.size()},
                  {"verdict", verdict_name(once.verdict)},
                  {"expected_verdict", verdict_name(c.verdict)},
                  {"counter", c.counter_name},
                  {"ok", ok}};
        r.update(timings(prog, c.frame, repeat, runs));
        std::fprintf(stderr, "%-22s %-13s %4zu B  %6.1f ns/run\n", c.name, verdict_name(once.verdict), c.frame.size(),
                     r["ns_per_run"].get<double>());
        results.push_back(r);
    }
    const int floor_fd = trivial_program();
    json floor = timings(floor_fd, udp_frame(ANDROMEDA_OVERLAY_PORT), repeat, runs);
    close(floor_fd);
    std::fprintf(stderr, "%-22s %-13s         %6.1f ns/run\n", "floor (return PASS)", "XDP_PASS",
                 floor["ns_per_run"].get<double>());

    utsname u{};
    uname(&u);
    char date[64];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S%z", std::localtime(&now));
    double load[3] = {0, 0, 0};
    if (getloadavg(load, 3) < 0) load[0] = -1;
    const json doc = {{"kind", "xdp_cost"},
                      {"date", date},
                      {"kernel", std::string(u.release)},
                      {"load_avg", load[0]},
                      {"repeat", repeat},
                      {"runs", runs},
                      {"method", "bpf_prog_test_run_opts without live frames: the program's own cost; a redirect "
                                 "is the bpf_redirect_map() call, not the copy into the socket"},
                      {"floor", floor},
                      {"results", results}};
    if (out.empty()) {
        std::cout << doc.dump(1) << "\n";
    } else {
        std::ofstream f(out);
        f << doc.dump(1) << "\n";
        if (!f) die("could not write " + out);
    }
    if (check && failures != 0) return 1;
    return 0;
}
