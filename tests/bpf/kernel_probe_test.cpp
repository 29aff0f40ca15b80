// The kernel probes the loader sets rodata from (io/bpf/kernel_probe.hpp): the probe says yes to
// a flag every kernel the fast path runs on has, no to a flag no kernel has, and its answer about
// BPF_F_ADJ_ROOM_DECAP_L4_UDP is what the kernel's own BTF says of its UAPI (the enumerator is
// there exactly when the helper knows the flag).
#include "io/bpf/kernel_probe.hpp"

#include <bpf/btf.h>
#include <gtest/gtest.h>
#include <linux/btf.h>

#include <cstring>
#include <memory>

#include "support/root.hpp"

namespace andromeda::io {
namespace {

TEST(KernelProbe, TakesAFlagTheFastPathNeedsAnyway) {
    ANDROMEDA_REQUIRE_ROOT();
    const ProbeResult r = probe_decap_flags(kAdjRoomFixedGso | kAdjRoomDecapL3Ipv4);
    EXPECT_EQ(r.answer, ProbeAnswer::taken) << r.detail;
}

TEST(KernelProbe, RefusesAFlagNoKernelHas) {
    ANDROMEDA_REQUIRE_ROOT();
    const ProbeResult r = probe_decap_flags(kAdjRoomFixedGso | kAdjRoomDecapL3Ipv4 | (1ULL << 40));
    EXPECT_EQ(r.answer, ProbeAnswer::refused) << r.detail;
    EXPECT_EQ(r.detail, std::strerror(EINVAL));
}

// Whether the running kernel's BTF has an enumerator named `name` in any enum.
bool vmlinux_has_enumerator(const char* name, std::string& error) {
    std::unique_ptr<btf, decltype(&btf__free)> vmlinux(btf__load_vmlinux_btf(), btf__free);
    if (!vmlinux) {
        error = "no kernel BTF (" + std::string(std::strerror(errno)) + ")";
        return false;
    }
    const __u32 types = btf__type_cnt(vmlinux.get());
    for (__u32 id = 1; id < types; ++id) {
        const btf_type* t = btf__type_by_id(vmlinux.get(), id);
        const auto named = [&](__u32 name_off) {
            return std::strcmp(btf__name_by_offset(vmlinux.get(), name_off), name) == 0;
        };
        for (__u16 i = 0; i < btf_vlen(t); ++i) {
            if (btf_is_enum(t) && named(btf_enum(t)[i].name_off)) return true;
            if (btf_is_enum64(t) && named(btf_enum64(t)[i].name_off)) return true;
        }
    }
    return false;
}

TEST(KernelProbe, DecapL4UdpAgreesWithTheKernelsBtf) {
    ANDROMEDA_REQUIRE_ROOT();
    std::string error;
    const bool in_btf = vmlinux_has_enumerator("BPF_F_ADJ_ROOM_DECAP_L4_UDP", error);
    if (!error.empty()) GTEST_SKIP() << error;
    // The look-up finds an enumerator the kernel has (the fast path needs that flag anyway).
    ASSERT_TRUE(vmlinux_has_enumerator("BPF_F_ADJ_ROOM_DECAP_L3_IPV4", error)) << error;
    const KernelFeatures k = probe_kernel_features();
    EXPECT_EQ(k.decap_l4_udp, in_btf) << k.message();
    EXPECT_EQ(k.decap_l4_udp_detail.empty(), k.decap_l4_udp) << k.decap_l4_udp_detail;
    std::printf("%s\n", k.message().c_str());
}

}  // namespace
}  // namespace andromeda::io
