// The XDP prefilter run through BPF_PROG_TEST_RUN: fixtures of {description, port role, input
// packet, expected verdict, expected counter}, checked against the per-CPU stats map.
//
// The test process moves into a network namespace of its own first, so the ifindex it hands
// the kernel (the namespace's loopback) and the AF_XDP socket it binds belong to no one else.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xdp/xsk.h>

#include <arpa/inet.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <vector>

#include "andromeda_kern_user.h"
#include "andromeda_xdp.skel.h"
#include "support/root.hpp"
#include "support/xdp_skeleton.hpp"
#include "wire/bytes.hpp"
#include "wire/checksum.hpp"

namespace {

using andromeda::wire::store_be16;
using andromeda::wire::store_be32;

constexpr std::uint32_t kLoopbackIfindex = 1;  // in a fresh namespace, lo is always 1
constexpr std::uint32_t kPeerIp = 0xc0a80101;  // 192.168.1.1
constexpr std::uint32_t kVni = 100;
const std::uint8_t kTenantMac[6] = {2, 0, 0, 0, 0, 0x0a};

using andromeda::testing::enter_private_netns;
using andromeda::testing::Skel;

Skel load(std::uint16_t overlay_port, std::uint32_t encap = ANDROMEDA_ENCAP_ANDROMEDA) {
    Skel skel(andromeda_xdp::open());
    if (!skel) return nullptr;
    skel->rodata->overlay_port = overlay_port;
    skel->rodata->encap_kind = encap;
    if (andromeda_xdp::load(skel.get()) != 0) return nullptr;
    return skel;
}

void set_port(const andromeda_xdp* skel, std::uint32_t role) {
    andromeda_port port{};
    port.role = role;
    port.slot = 3;
    port.vni = kVni;
    port.ip = htonl(0x0a00000a);
    std::memcpy(port.mac, kTenantMac, 6);
    ASSERT_EQ(bpf_map_update_elem(bpf_map__fd(skel->maps.andromeda_ports), &kLoopbackIfindex, &port, BPF_ANY), 0);
}

void add_fabric(const andromeda_xdp* skel) {
    const __be32 peer = htonl(kPeerIp);
    andromeda_peer p{};
    p.node_id = 7;
    ASSERT_EQ(bpf_map_update_elem(bpf_map__fd(skel->maps.andromeda_peers), &peer, &p, BPF_ANY), 0);
    andromeda_vni v{};
    v.vpc_id = 1;
    v.mtu = 1450;
    ASSERT_EQ(bpf_map_update_elem(bpf_map__fd(skel->maps.andromeda_vnis), &kVni, &v, BPF_ANY), 0);
    const __be32 nat = htonl(0xcb007101);  // 203.0.113.1
    const std::uint32_t nat_vni = kVni;
    ASSERT_EQ(bpf_map_update_elem(bpf_map__fd(skel->maps.andromeda_nat_addrs), &nat, &nat_vni, BPF_ANY), 0);
}

// Ethernet + IPv4 (src, dst) + UDP to `dport` + an Andromeda header for kVni + a 14-byte inner
// Ethernet header + `extra` bytes.
std::vector<std::uint8_t> udp_frame(std::uint16_t dport, std::uint32_t src = kPeerIp,
                                    std::uint32_t dst = 0xc0a80102, std::size_t extra = 20) {
    const std::size_t payload = 8 + 14 + extra;
    std::vector<std::uint8_t> f(14 + 20 + 8 + payload, 0);
    const std::uint8_t macs[12] = {2, 0, 0, 0, 0xa1, 2, 2, 0, 0, 0, 0xa1, 1};
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
    store_be16(ip + 10, andromeda::wire::internet_checksum({ip, 20}));
    std::uint8_t* udp = ip + 20;
    store_be16(udp, 50000);
    store_be16(udp + 2, dport);
    store_be16(udp + 4, static_cast<std::uint16_t>(8 + payload));
    std::uint8_t* overlay = udp + 8;
    overlay[0] = 0x10;
    overlay[4] = 0;
    overlay[5] = 0;
    overlay[6] = kVni;
    overlay[7] = 64;
    return f;
}

std::vector<std::uint8_t> tenant_frame(const std::uint8_t* src_mac) {
    auto f = udp_frame(53, 0x0a00000a, 0x08080808);
    std::memcpy(&f[6], src_mac, 6);
    return f;
}

andromeda_xdp_stats read_stats(const andromeda_xdp* skel) {
    const int ncpu = libbpf_num_possible_cpus();
    std::vector<andromeda_xdp_stats> per_cpu(static_cast<std::size_t>(ncpu));
    const std::uint32_t key = 0;
    andromeda_xdp_stats total{};
    EXPECT_EQ(bpf_map_lookup_elem(bpf_map__fd(skel->maps.andromeda_stats), &key, per_cpu.data()), 0);
    // The struct is all __u64 counters: add them field by field through a flat view.
    constexpr std::size_t n = sizeof(andromeda_xdp_stats) / sizeof(__u64);
    static_assert(sizeof(andromeda_xdp_stats) == n * sizeof(__u64));
    for (const auto& s : per_cpu) {
        __u64 a[n], t[n];
        std::memcpy(a, &s, sizeof a);
        std::memcpy(t, &total, sizeof t);
        for (std::size_t i = 0; i < n; ++i) t[i] += a[i];
        std::memcpy(&total, t, sizeof t);
    }
    return total;
}

std::uint32_t run(const andromeda_xdp* skel, std::vector<std::uint8_t> frame) {
    xdp_md ctx{};
    ctx.data_end = static_cast<__u32>(frame.size());
    ctx.ingress_ifindex = kLoopbackIfindex;
    ctx.rx_queue_index = 0;
    LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame.data(), .data_size_in = static_cast<__u32>(frame.size()),
                .ctx_in = &ctx, .ctx_size_in = sizeof ctx, .repeat = 1);
    EXPECT_EQ(bpf_prog_test_run_opts(bpf_program__fd(skel->progs.andromeda_xdp), &opts), 0) << strerror(errno);
    return opts.retval;
}

struct Fixture {
    const char* description;
    std::uint32_t role;  // 0: port not in the port map
    std::vector<std::uint8_t> input;
    std::uint32_t verdict;
    __u64 andromeda_xdp_stats::*counter;
};

class XdpProgram : public ::testing::Test {
protected:
    static void SetUpTestSuite() { in_netns_ = geteuid() == 0 && enter_private_netns(); }
    void SetUp() override {
        ANDROMEDA_REQUIRE_ROOT();
        ASSERT_TRUE(in_netns_) << "could not enter a private network namespace";
    }

    void check(const andromeda_xdp* skel, const Fixture& f) {
        if (f.role != 0) set_port(skel, f.role);
        else bpf_map_delete_elem(bpf_map__fd(skel->maps.andromeda_ports), &kLoopbackIfindex);
        const auto before = read_stats(skel);
        EXPECT_EQ(run(skel, f.input), f.verdict) << f.description;
        const auto after = read_stats(skel);
        EXPECT_EQ(after.*(f.counter), before.*(f.counter) + 1) << f.description;
        EXPECT_EQ(after.rx_packets, before.rx_packets + 1) << f.description;
    }

    static inline bool in_netns_ = false;
};

TEST_F(XdpProgram, EveryVerdictAndDropReason) {
    auto skel = load(ANDROMEDA_OVERLAY_PORT);
    ASSERT_TRUE(skel) << "loading andromeda_xdp.bpf.o failed";
    add_fabric(skel.get());

    auto truncated_ip = udp_frame(ANDROMEDA_OVERLAY_PORT);
    truncated_ip.resize(14 + 12);
    auto bad_ihl = udp_frame(ANDROMEDA_OVERLAY_PORT);
    bad_ihl[14] = 0x44;
    auto arp = udp_frame(0);
    store_be16(&arp[12], 0x0806);
    auto vlan = udp_frame(ANDROMEDA_OVERLAY_PORT);
    const std::uint8_t tag[4] = {0x81, 0x00, 0x00, 0x0a};
    vlan.insert(vlan.begin() + 12, std::begin(tag), std::end(tag));
    auto fragment = udp_frame(ANDROMEDA_OVERLAY_PORT);
    fragment[14 + 6] = 0x20;  // MF
    auto bad_version = udp_frame(ANDROMEDA_OVERLAY_PORT);
    bad_version[42] = 0x20;
    auto unknown_vni = udp_frame(ANDROMEDA_OVERLAY_PORT);
    unknown_vni[42 + 6] = 101;
    auto no_inner = udp_frame(ANDROMEDA_OVERLAY_PORT);
    no_inner.resize(42 + 8 + 6);
    const std::uint8_t other_mac[6] = {2, 0, 0, 0, 0, 0x0b};

    const std::vector<Fixture> fixtures = {
        {"frame on an interface that is no port passes", 0, udp_frame(22), XDP_PASS,
         &andromeda_xdp_stats::pass_unknown_port},
        {"underlay: host UDP (not the overlay port) passes", ANDROMEDA_PORT_UNDERLAY, udp_frame(22), XDP_PASS,
         &andromeda_xdp_stats::pass_host},
        {"underlay: ARP passes to the kernel", ANDROMEDA_PORT_UNDERLAY, arp, XDP_PASS, &andromeda_xdp_stats::pass_host},
        {"underlay: overlay packet with no socket bound is dropped", ANDROMEDA_PORT_UNDERLAY,
         udp_frame(ANDROMEDA_OVERLAY_PORT), XDP_DROP, &andromeda_xdp_stats::drop_no_socket},
        {"underlay: overlay in an 802.1Q tag is recognised", ANDROMEDA_PORT_UNDERLAY, vlan, XDP_DROP,
         &andromeda_xdp_stats::drop_no_socket},
        {"underlay: IPv4 cut short is dropped", ANDROMEDA_PORT_UNDERLAY, truncated_ip, XDP_DROP,
         &andromeda_xdp_stats::drop_truncated},
        {"underlay: IHL below 5 is dropped", ANDROMEDA_PORT_UNDERLAY, bad_ihl, XDP_DROP,
         &andromeda_xdp_stats::drop_bad_ip_header},
        {"underlay: fragmented overlay packet is dropped", ANDROMEDA_PORT_UNDERLAY, fragment, XDP_DROP,
         &andromeda_xdp_stats::drop_overlay_fragment},
        {"underlay: overlay from an unknown peer is dropped", ANDROMEDA_PORT_UNDERLAY,
         udp_frame(ANDROMEDA_OVERLAY_PORT, 0xc0a80163), XDP_DROP, &andromeda_xdp_stats::drop_unknown_peer},
        {"underlay: overlay version 2 is dropped", ANDROMEDA_PORT_UNDERLAY, bad_version, XDP_DROP,
         &andromeda_xdp_stats::drop_bad_overlay_header},
        {"underlay: unknown VNI is dropped", ANDROMEDA_PORT_UNDERLAY, unknown_vni, XDP_DROP,
         &andromeda_xdp_stats::drop_unknown_vni},
        {"underlay: overlay without an inner Ethernet header is dropped", ANDROMEDA_PORT_UNDERLAY, no_inner,
         XDP_DROP, &andromeda_xdp_stats::drop_truncated},
        {"tenant: spoofed source MAC is dropped", ANDROMEDA_PORT_TENANT, tenant_frame(other_mac), XDP_DROP,
         &andromeda_xdp_stats::drop_spoofed_mac},
        {"tenant: own MAC, no socket bound, is dropped", ANDROMEDA_PORT_TENANT, tenant_frame(kTenantMac), XDP_DROP,
         &andromeda_xdp_stats::drop_no_socket},
        {"uplink: traffic to another address passes", ANDROMEDA_PORT_UPLINK, udp_frame(22), XDP_PASS,
         &andromeda_xdp_stats::pass_host},
        {"uplink: traffic to a NAT address is ours (no socket: dropped)", ANDROMEDA_PORT_UPLINK,
         udp_frame(22, 0x08080808, 0xcb007101), XDP_DROP, &andromeda_xdp_stats::drop_no_socket},
    };
    for (const auto& f : fixtures) check(skel.get(), f);
}

TEST_F(XdpProgram, VxlanModeChecksTheIFlag) {
    auto skel = load(ANDROMEDA_VXLAN_PORT, ANDROMEDA_ENCAP_VXLAN);
    ASSERT_TRUE(skel);
    add_fabric(skel.get());
    auto vxlan = udp_frame(ANDROMEDA_VXLAN_PORT);
    vxlan[42] = 0x08;
    auto no_i_flag = vxlan;
    no_i_flag[42] = 0x00;
    check(skel.get(), {"VXLAN with the I flag reaches the socket lookup", ANDROMEDA_PORT_UNDERLAY, vxlan, XDP_DROP,
                       &andromeda_xdp_stats::drop_no_socket});
    check(skel.get(), {"VXLAN without the I flag is dropped", ANDROMEDA_PORT_UNDERLAY, no_i_flag, XDP_DROP,
                       &andromeda_xdp_stats::drop_bad_overlay_header});
    check(skel.get(), {"the Andromeda port is host traffic in VXLAN mode", ANDROMEDA_PORT_UNDERLAY,
                       udp_frame(ANDROMEDA_OVERLAY_PORT), XDP_PASS, &andromeda_xdp_stats::pass_host});
}

// With an AF_XDP socket bound to the namespace's loopback and in the XSKMAP at the port's
// (slot, queue) key, steered traffic is redirected and counted per kind.
TEST_F(XdpProgram, RedirectsToTheBoundSocket) {
    auto skel = load(ANDROMEDA_OVERLAY_PORT);
    ASSERT_TRUE(skel);
    add_fabric(skel.get());

    constexpr std::size_t kFrames = 64, kFrameSize = XSK_UMEM__DEFAULT_FRAME_SIZE;
    void* area = mmap(nullptr, kFrames * kFrameSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(area, MAP_FAILED);
    xsk_ring_prod fill{};
    xsk_ring_cons comp{}, rx{};
    xsk_ring_prod tx{};
    xsk_umem* umem = nullptr;
    ASSERT_EQ(xsk_umem__create(&umem, area, kFrames * kFrameSize, &fill, &comp, nullptr), 0);
    xsk_socket_config cfg{};
    cfg.rx_size = XSK_RING_CONS__DEFAULT_NUM_DESCS;
    cfg.tx_size = XSK_RING_PROD__DEFAULT_NUM_DESCS;
    cfg.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;
    cfg.xdp_flags = XDP_FLAGS_SKB_MODE;
    cfg.bind_flags = XDP_COPY;
    xsk_socket* xsk = nullptr;
    const int rc = xsk_socket__create(&xsk, "lo", 0, umem, &rx, &tx, &cfg);
    ASSERT_EQ(rc, 0) << "binding an AF_XDP socket to the namespace's lo: " << strerror(-rc);
    const std::uint32_t key = 3 * ANDROMEDA_MAX_QUEUES + 0;  // slot 3, queue 0
    const int fd = xsk_socket__fd(xsk);
    ASSERT_EQ(bpf_map_update_elem(bpf_map__fd(skel->maps.andromeda_xsks), &key, &fd, BPF_ANY), 0);

    check(skel.get(), {"underlay: valid overlay packet is redirected", ANDROMEDA_PORT_UNDERLAY,
                       udp_frame(ANDROMEDA_OVERLAY_PORT), XDP_REDIRECT, &andromeda_xdp_stats::redirect_overlay});
    check(skel.get(), {"tenant: own MAC is redirected", ANDROMEDA_PORT_TENANT, tenant_frame(kTenantMac), XDP_REDIRECT,
                       &andromeda_xdp_stats::redirect_tenant});
    check(skel.get(), {"uplink: NAT address is redirected", ANDROMEDA_PORT_UPLINK,
                       udp_frame(22, 0x08080808, 0xcb007101), XDP_REDIRECT, &andromeda_xdp_stats::redirect_uplink});

    xsk_socket__delete(xsk);
    xsk_umem__delete(umem);
    munmap(area, kFrames * kFrameSize);
}

}  // namespace
