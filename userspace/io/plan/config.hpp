// Settings of the I/O layer and the text forms an operator or test may give them. Everything
// here is pure (no I/O), so it is unit-tested without root.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "andromeda_nat_kern_user.h"
#include "fabric/model.hpp"

namespace andromeda::io {

// How the XDP program ended up attached to an interface.
enum class XdpMode : std::uint8_t { native, generic };
// What to try: `best` is native, falling back to generic (skb) when the driver refuses.
enum class XdpModePreference : std::uint8_t { best, native_only, generic_only };
// How an AF_XDP socket ended up bound.
enum class BindMode : std::uint8_t { zero_copy, copy };
// What to try: `best` is zero-copy, falling back to copy when the driver cannot.
enum class BindPreference : std::uint8_t { best, zero_copy_only, copy_only };
// How a tc program ended up attached (io/bpf/tc_attach.hpp).
enum class TcAttachMode : std::uint8_t { tcx, clsact };
// What to try: `best` is tcx, falling back to clsact when the kernel has no tcx.
enum class TcAttachPreference : std::uint8_t { best, tcx_only, clsact_only };

// "auto" | "native" | "generic" (also "skb"); nullopt for anything else.
[[nodiscard]] std::optional<XdpModePreference> parse_xdp_mode(std::string_view text) noexcept;
// "auto" | "zerocopy" (also "zero-copy", "zc") | "copy"; nullopt for anything else.
[[nodiscard]] std::optional<BindPreference> parse_bind_mode(std::string_view text) noexcept;
[[nodiscard]] const char* to_string(XdpMode mode) noexcept;
[[nodiscard]] const char* to_string(BindMode mode) noexcept;
[[nodiscard]] const char* to_string(XdpModePreference mode) noexcept;
[[nodiscard]] const char* to_string(BindPreference mode) noexcept;
[[nodiscard]] const char* to_string(TcAttachMode mode) noexcept;

// The kernel reserves this much in front of every received frame (XDP_PACKET_HEADROOM).
inline constexpr std::uint32_t kKernelRxHeadroom = 256;

// One worker's UMEM and the rings of each of its sockets.
struct UmemConfig {
    std::uint32_t frame_count = 4096;
    std::uint32_t frame_size = 4096;  // a power of two, 2048..4096 (aligned chunk mode)
    // Extra room in front of each frame, beyond the kernel's own, so a tenant frame can be
    // encapsulated in place (ANDROMEDA_ENCAP_OVERHEAD bytes) even on drivers without it.
    std::uint32_t frame_headroom = 64;
    std::uint32_t fill_size = 1024;  // per socket; every ring size is a power of two
    std::uint32_t completion_size = 1024;
    std::uint32_t rx_size = 1024;
    std::uint32_t tx_size = 1024;
    std::uint32_t batch_size = 64;  // frames taken from an RX ring per pass, at most 64
    // Frame i's data starts kStaggerStep * (i % stagger_slots()) bytes further into its chunk
    // (AF_XDP unaligned-chunk mode). Chunks are 4 KiB apart, so unstaggered, the headers of a
    // whole burst share a few L1 sets and evict each other (pipeline_bench: 1.5-2 ns per frame of
    // a burst of 32). At most max_stagger_slots, fewer when the chunk has no room for the span;
    // 1: no staggering (the worker also falls back to it if the kernel refuses unaligned chunks).
    std::uint32_t max_stagger_slots = 16;
    static constexpr std::uint32_t kStaggerStep = 64;

    // Every problem, one sentence each; empty when the configuration is usable.
    [[nodiscard]] std::vector<std::string> problems() const;
    // Throws IoError listing every problem.
    void validate() const;
    // How many offsets frames are staggered over: max_stagger_slots, or as many as leave room
    // for a 1514-byte frame after both headrooms and a chunk the kernel accepts (2048 bytes at
    // least, see registered_chunk_size()). 4096-byte frames: 16; 2048-byte frames: 1.
    [[nodiscard]] std::uint32_t stagger_slots() const noexcept {
        const std::uint32_t used = std::max(frame_headroom + kKernelRxHeadroom + 1514, kMinKernelChunk);
        const std::uint32_t fit = used < frame_size ? (frame_size - used) / kStaggerStep + 1 : 1;
        return std::max<std::uint32_t>(1, std::min(max_stagger_slots, fit));
    }
    // The chunk size the UMEM is registered with when staggered: the stride minus the largest
    // stagger, so that the kernel, which fills a chunk from the posted address up to this size,
    // never writes past the stride into the next frame (it drops longer frames instead).
    [[nodiscard]] std::uint32_t registered_chunk_size() const noexcept {
        return frame_size - kStaggerStep * (stagger_slots() - 1);
    }
    static constexpr std::uint32_t kMinKernelChunk = 2048;  // XDP_UMEM_MIN_CHUNK_SIZE
    // Where frame `index`'s data starts in its chunk, beyond both headrooms, with `slots` offsets.
    [[nodiscard]] static constexpr std::uint32_t stagger_of(std::uint32_t index, std::uint32_t slots) noexcept {
        return kStaggerStep * (index % slots);
    }
    [[nodiscard]] std::uint32_t stagger_of(std::uint32_t index) const noexcept {
        return stagger_of(index, stagger_slots());
    }
    // The longest frame every chunk can hold after both headrooms and the largest stagger.
    [[nodiscard]] std::uint32_t max_frame_length() const noexcept {
        return frame_size - frame_headroom - kKernelRxHeadroom - kStaggerStep * (stagger_slots() - 1);
    }
};

// One andromedad instance's BPF side.
struct InstanceConfig {
    std::string node_name;
    std::filesystem::path pin_dir;  // where the maps are pinned; see default_pin_dir()
    std::uint16_t overlay_port = fabric::kAndromedaUdpPort;
    std::uint32_t encap_kind = 0;  // enum andromeda_encap_kind
    XdpModePreference xdp_mode = XdpModePreference::best;
    // How the tc programs attach: tcx where the kernel has it, else clsact (io/bpf/tc_attach.hpp).
    TcAttachPreference tc_attach = TcAttachPreference::best;
    // An XDP program that is not Andromeda's already on a port: refuse (default) or replace.
    bool replace_foreign_xdp = false;
    // andromeda_nat_flows' size: two entries per NAT flow the kernel translates ([node.uplink]
    // kernel_flows). A pinned map of another size is not adopted.
    std::uint32_t nat_flow_entries = ANDROMEDA_MAX_NAT_FLOWS;
};

inline constexpr std::string_view kDefaultPinRoot = "/sys/fs/bpf/andromeda";

// /sys/fs/bpf/andromeda/<node name>. Throws IoError for a name that is no single path component.
[[nodiscard]] std::filesystem::path default_pin_dir(std::string_view node_name);
// From [node]: name, pin_dir (or the default), encapsulation and its UDP port.
[[nodiscard]] InstanceConfig instance_config_from(const fabric::LocalNodeSettings& local);

}  // namespace andromeda::io
