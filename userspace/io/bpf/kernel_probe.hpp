// What the running kernel's BPF helpers take, probed before the object is loaded so that its
// load-time constants (rodata) can use a flag only where the kernel has it.
//
// A probe loads a tc program of a few instructions that calls bpf_skb_adjust_room with the flags
// asked about and runs it once (BPF_PROG_TEST_RUN) over an overlay-shaped frame: the helper
// checks its flags against the ones it knows before anything else and answers -EINVAL for any
// other, so its answer is whether this kernel takes them, whatever the version number says.
#pragma once

#include <cstdint>
#include <string>

namespace andromeda::io {

// bpf_skb_adjust_room's flags the fast path asks about (the values of the kernel's UAPI
// enum bpf_adj_room_flags; Debian 12's headers predate some of them).
inline constexpr std::uint64_t kAdjRoomFixedGso = 1ULL << 0;
inline constexpr std::uint64_t kAdjRoomDecapL3Ipv4 = 1ULL << 7;  // kernels from 6.3
inline constexpr std::uint64_t kAdjRoomDecapL4Udp = 1ULL << 10;  // kernels after 6.18

enum class ProbeAnswer : std::uint8_t {
    taken,    // the helper returned 0: the flags are known to this kernel
    refused,  // -EINVAL: at least one of them is not
    unknown,  // the probe could not run, or the helper answered something else (`detail` says)
};

struct ProbeResult {
    ProbeAnswer answer = ProbeAnswer::unknown;
    std::string detail;  // why, when not taken: "Invalid argument", "loading the probe: ..."
};

// Whether bpf_skb_adjust_room takes `flags` when it takes 50 bytes of outer headers off an
// overlay packet (BPF_ADJ_ROOM_MAC). Needs CAP_BPF and CAP_NET_ADMIN (or root).
[[nodiscard]] ProbeResult probe_decap_flags(std::uint64_t flags);

struct KernelFeatures {
    // BPF_F_ADJ_ROOM_DECAP_L4_UDP: the decapsulation clears the tunnel's offload state a packet
    // from a peer's fast path carries in (skb->encapsulation; a GSO one's SKB_GSO_UDP_TUNNEL).
    bool decap_l4_udp = false;
    std::string decap_l4_udp_detail;  // why not, when not
    // bpf_xdp_adjust_meta in XDP programs (a probe program loaded): the underlay's XDP hands its
    // finding to tc in the packet's metadata. Some kernels refuse the helper to XDP programs
    // altogether; tc then checks every overlay packet itself (lib/handoff.h).
    bool xdp_metadata = false;

    // One line for the log: what the fast path does on this kernel, and why.
    [[nodiscard]] std::string message() const;
};

// The probes the loader needs. A probe that cannot tell (the control probe with
// BPF_F_ADJ_ROOM_DECAP_L3_IPV4 alone, which the fast path needs anyway, is not taken either)
// counts as "not there".
[[nodiscard]] KernelFeatures probe_kernel_features();

}  // namespace andromeda::io
