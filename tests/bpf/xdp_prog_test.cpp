// The XDP program run through BPF_PROG_TEST_RUN: fixtures of {description, input packet,
// expected verdict, expected counter}, checked against the per-CPU stats map.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <gtest/gtest.h>
#include <linux/bpf.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "andromeda_kern_user.h"
#include "andromeda_xdp.skel.h"
#include "support/root.hpp"
#include "wire/bytes.hpp"
#include "wire/checksum.hpp"

namespace {

using andromeda::wire::store_be16;

struct SkelDeleter {
    void operator()(andromeda_xdp* s) const { andromeda_xdp::destroy(s); }
};
using Skel = std::unique_ptr<andromeda_xdp, SkelDeleter>;

Skel load(std::uint16_t overlay_port) {
    Skel skel(andromeda_xdp::open());
    if (!skel) return nullptr;
    skel->rodata->overlay_port = overlay_port;
    if (andromeda_xdp::load(skel.get()) != 0) return nullptr;
    return skel;
}

// Ethernet + IPv4 + UDP with the given ports and `payload` zero bytes.
std::vector<std::uint8_t> udp_frame(std::uint16_t dport, std::size_t payload = 8) {
    std::vector<std::uint8_t> f(14 + 20 + 8 + payload, 0);
    const std::uint8_t macs[12] = {2, 0, 0, 0, 0xa1, 2, 2, 0, 0, 0, 0xa1, 1};
    std::copy(std::begin(macs), std::end(macs), f.begin());
    store_be16(&f[12], 0x0800);
    std::uint8_t* ip = &f[14];
    ip[0] = 0x45;
    store_be16(ip + 2, static_cast<std::uint16_t>(20 + 8 + payload));
    ip[8] = 64;
    ip[9] = 17;
    const std::uint8_t addrs[8] = {192, 168, 1, 1, 192, 168, 1, 2};
    std::copy(std::begin(addrs), std::end(addrs), ip + 12);
    store_be16(ip + 10, andromeda::wire::internet_checksum({ip, 20}));
    std::uint8_t* udp = ip + 20;
    store_be16(udp, 50000);
    store_be16(udp + 2, dport);
    store_be16(udp + 4, static_cast<std::uint16_t>(8 + payload));
    return f;
}

andromeda_xdp_stats read_stats(const andromeda_xdp* skel) {
    const int ncpu = libbpf_num_possible_cpus();
    std::vector<andromeda_xdp_stats> per_cpu(static_cast<std::size_t>(ncpu));
    const std::uint32_t key = 0;
    andromeda_xdp_stats total{};
    if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.andromeda_stats), &key, per_cpu.data()) != 0) return total;
    for (const auto& s : per_cpu) {
        total.rx_packets += s.rx_packets;
        total.pass_host += s.pass_host;
        total.overlay_seen += s.overlay_seen;
        total.drop_truncated += s.drop_truncated;
        total.drop_bad_ip_header += s.drop_bad_ip_header;
    }
    return total;
}

std::uint32_t run(const andromeda_xdp* skel, std::vector<std::uint8_t> frame) {
    LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame.data(), .data_size_in = static_cast<__u32>(frame.size()),
                .repeat = 1);
    EXPECT_EQ(bpf_prog_test_run_opts(bpf_program__fd(skel->progs.andromeda_xdp), &opts), 0);
    return opts.retval;
}

struct Fixture {
    const char* description;
    std::vector<std::uint8_t> input;
    std::uint32_t verdict;
    __u64 andromeda_xdp_stats::*counter;
};

TEST(XdpProgram, VerdictsAndCounters) {
    ANDROMEDA_REQUIRE_ROOT();
    auto skel = load(ANDROMEDA_OVERLAY_PORT);
    ASSERT_TRUE(skel) << "loading andromeda_xdp.bpf.o failed";

    auto truncated_udp = udp_frame(ANDROMEDA_OVERLAY_PORT);
    truncated_udp.resize(14 + 20 + 4);
    auto bad_ihl = udp_frame(ANDROMEDA_OVERLAY_PORT);
    bad_ihl[14] = 0x44;
    auto arp = udp_frame(0);
    store_be16(&arp[12], 0x0806);
    auto vlan = udp_frame(ANDROMEDA_OVERLAY_PORT);
    const std::uint8_t tag[4] = {0x81, 0x00, 0x00, 0x0a};
    vlan.insert(vlan.begin() + 12, std::begin(tag), std::end(tag));

    const std::vector<Fixture> fixtures = {
        {"SSH-like UDP to another port passes", udp_frame(22), XDP_PASS, &andromeda_xdp_stats::pass_host},
        {"ARP passes to the kernel", arp, XDP_PASS, &andromeda_xdp_stats::pass_host},
        {"overlay packet is recognised", udp_frame(ANDROMEDA_OVERLAY_PORT), XDP_PASS,
         &andromeda_xdp_stats::overlay_seen},
        {"overlay inside an 802.1Q tag is recognised", vlan, XDP_PASS, &andromeda_xdp_stats::overlay_seen},
        {"UDP header cut short is dropped", truncated_udp, XDP_DROP, &andromeda_xdp_stats::drop_truncated},
        {"IHL below 5 is dropped", bad_ihl, XDP_DROP, &andromeda_xdp_stats::drop_bad_ip_header},
    };
    for (const auto& f : fixtures) {
        const auto before = read_stats(skel.get());
        EXPECT_EQ(run(skel.get(), f.input), f.verdict) << f.description;
        const auto after = read_stats(skel.get());
        EXPECT_EQ(after.*(f.counter), before.*(f.counter) + 1) << f.description;
        EXPECT_EQ(after.rx_packets, before.rx_packets + 1) << f.description;
    }
}

TEST(XdpProgram, OverlayPortIsRuntimeConfigurable) {
    ANDROMEDA_REQUIRE_ROOT();
    auto skel = load(ANDROMEDA_VXLAN_PORT);
    ASSERT_TRUE(skel);
    run(skel.get(), udp_frame(ANDROMEDA_OVERLAY_PORT));
    EXPECT_EQ(read_stats(skel.get()).overlay_seen, 0u);
    run(skel.get(), udp_frame(ANDROMEDA_VXLAN_PORT));
    EXPECT_EQ(read_stats(skel.get()).overlay_seen, 1u);
}

}  // namespace
