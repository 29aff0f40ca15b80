#include "io/bpf/kernel_probe.hpp"

#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace andromeda::io {

namespace {

constexpr int kOverlayBytes = 50;  // outer Ethernet, IPv4, UDP and the 8-byte overlay header

// One instruction of a probe program: `code` with destination register `dst` and immediate `imm`.
bpf_insn insn(std::uint8_t code, std::uint8_t dst, std::int32_t imm) {
    bpf_insn i{};
    i.code = code;
    i.dst_reg = dst & 0xf;
    i.imm = imm;
    return i;
}

// r2 = -50; r3 = BPF_ADJ_ROOM_MAC; r4 = flags (a 64-bit immediate, two instructions);
// r0 = bpf_skb_adjust_room(r1 = the skb, r2, r3, r4); exit. The helper's answer is the program's.
std::array<bpf_insn, 6> adjust_room_program(std::uint64_t flags) {
    return {
        insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_2, -kOverlayBytes),
        insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_3, BPF_ADJ_ROOM_MAC),
        insn(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_4, static_cast<std::int32_t>(flags & 0xffffffffu)),
        insn(0, 0, static_cast<std::int32_t>(flags >> 32)),
        insn(BPF_JMP | BPF_CALL, 0, BPF_FUNC_skb_adjust_room),
        insn(BPF_JMP | BPF_EXIT, 0, 0),
    };
}

// Whether the kernel lets an XDP program with frags (as andromeda_xdp is) call
// bpf_xdp_adjust_meta: r2 = -8; bpf_xdp_adjust_meta(r1 = the context, r2); r0 = XDP_PASS; exit.
// Loaded, not run. (libbpf_probe_bpf_helper cannot tell: newer kernels refuse a helper with a
// message it does not recognise, and it then answers "supported".)
bool xdp_metadata_allowed() {
    const std::array<bpf_insn, 4> program = {
        insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_2, -8),
        insn(BPF_JMP | BPF_CALL, 0, BPF_FUNC_xdp_adjust_meta),
        insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, XDP_PASS),
        insn(BPF_JMP | BPF_EXIT, 0, 0),
    };
    bpf_prog_load_opts opts{};
    opts.sz = sizeof opts;
    opts.prog_flags = BPF_F_XDP_HAS_FRAGS;
    const int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "andromeda_probe", "Dual MIT/GPL", program.data(), program.size(),
                                 &opts);
    if (fd < 0) return false;
    close(fd);
    return true;
}

// An overlay packet as the underlay carries one: outer Ethernet (IPv4), outer IPv4 (UDP), UDP,
// the overlay header, and an inner Ethernet frame with a 28-byte IPv4 packet. The helper reads
// no more than the outer ethertype and the lengths.
constexpr std::size_t kFrameBytes = kOverlayBytes + 14 + 28;

std::array<std::uint8_t, kFrameBytes> overlay_frame() {
    std::array<std::uint8_t, kFrameBytes> f{};
    f[12] = 0x08;  // outer ethertype IPv4
    f[14] = 0x45;
    f[17] = kFrameBytes - 14;  // outer total length
    f[22] = 64;
    f[23] = 17;                              // UDP
    f[14 + 20 + 5] = kFrameBytes - 14 - 20;  // UDP length
    f[14 + 20 + 8] = 0x10;                   // Andromeda version 1
    f[kOverlayBytes + 12] = 0x08;            // inner ethertype IPv4
    f[kOverlayBytes + 14] = 0x45;
    f[kOverlayBytes + 14 + 3] = 28;  // inner total length
    f[kOverlayBytes + 14 + 9] = 17;
    return f;
}

}  // namespace

ProbeResult probe_decap_flags(std::uint64_t flags) {
    const auto program = adjust_room_program(flags);
    const int fd = bpf_prog_load(BPF_PROG_TYPE_SCHED_CLS, "andromeda_probe", "Dual MIT/GPL", program.data(),
                                 program.size(), nullptr);
    if (fd < 0) return {ProbeAnswer::unknown, "loading the probe: " + std::string(std::strerror(errno))};
    auto frame = overlay_frame();
    std::array<std::uint8_t, kFrameBytes> out{};
    bpf_test_run_opts run{};
    run.sz = sizeof run;
    run.data_in = frame.data();
    run.data_size_in = static_cast<__u32>(frame.size());
    run.data_out = out.data();
    run.data_size_out = static_cast<__u32>(out.size());
    run.repeat = 1;
    const int rc = bpf_prog_test_run_opts(fd, &run);
    const int run_errno = errno;
    close(fd);
    if (rc != 0) return {ProbeAnswer::unknown, "running the probe: " + std::string(std::strerror(run_errno))};
    const auto answer = static_cast<std::int32_t>(run.retval);
    if (answer == 0) return {ProbeAnswer::taken, ""};
    if (answer == -EINVAL) return {ProbeAnswer::refused, std::strerror(EINVAL)};
    return {ProbeAnswer::unknown, "bpf_skb_adjust_room answered " + std::to_string(answer)};
}

KernelFeatures probe_kernel_features() {
    KernelFeatures k;
    k.xdp_metadata = xdp_metadata_allowed();
    const ProbeResult l4 = probe_decap_flags(kAdjRoomFixedGso | kAdjRoomDecapL3Ipv4 | kAdjRoomDecapL4Udp);
    if (l4.answer == ProbeAnswer::taken) {
        k.decap_l4_udp = true;
        return k;
    }
    k.decap_l4_udp_detail = l4.detail;
    // A refusal means something only if the probe can say yes at all.
    const ProbeResult control = probe_decap_flags(kAdjRoomFixedGso | kAdjRoomDecapL3Ipv4);
    if (control.answer != ProbeAnswer::taken)
        k.decap_l4_udp_detail += "; the probe itself is unsure (BPF_F_ADJ_ROOM_DECAP_L3_IPV4 alone: " +
                                 (control.detail.empty() ? std::string("refused") : control.detail) + ")";
    return k;
}

std::string KernelFeatures::message() const {
    const std::string metadata = xdp_metadata ? "; XDP hands its decap findings to tc in the packet's metadata"
                                              : "; XDP programs may not call bpf_xdp_adjust_meta here: tc checks "
                                                "each overlay packet itself (no hand-over)";
    if (decap_l4_udp)
        return "kernel: bpf_skb_adjust_room takes BPF_F_ADJ_ROOM_DECAP_L4_UDP: decapsulated packets reach their "
               "tenant without the tunnel's offload state" + metadata;
    return "kernel: bpf_skb_adjust_room does not take BPF_F_ADJ_ROOM_DECAP_L4_UDP (" + decap_l4_udp_detail +
           "): decapsulated packets keep the tunnel's offload state (docs/fastpath.md, Limitations)" + metadata;
}

}  // namespace andromeda::io
