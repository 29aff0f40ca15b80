// The 8-byte Andromeda overlay header (docs/wire-format.md):
//
//   byte 0     version (high nibble, always 1) | flags (low nibble: 0x8 control, 0x4 OAM)
//   byte 1     inner protocol (0 = Ethernet)
//   bytes 2-3  flow hash, big-endian (the outer UDP source port is this | 0xC000)
//   bytes 4-6  VNI, 24-bit big-endian
//   byte 7     overlay hop limit (64 on a fresh packet)
//
// Inline because encap and decap touch it once per packet.
#pragma once

#include <cstdint>
#include <optional>

#include "overlay/encap_kind.hpp"
#include "wire/bytes.hpp"

namespace andromeda::overlay {

inline constexpr std::uint8_t kAndromedaVersion = ANDROMEDA_HEADER_VERSION;
inline constexpr std::uint8_t kAndromedaFlagControl = ANDROMEDA_HEADER_FLAG_CONTROL;
inline constexpr std::uint8_t kAndromedaFlagOam = ANDROMEDA_HEADER_FLAG_OAM;
inline constexpr std::uint8_t kInnerProtocolEthernet = 0;
inline constexpr std::uint32_t kMaxVni = 0xffffff;

struct AndromedaHeader {
    std::uint8_t flags = 0;  // low nibble only; higher bits are dropped on encode
    std::uint8_t inner_protocol = kInnerProtocolEthernet;
    std::uint16_t flow_hash = 0;
    std::uint32_t vni = 0;  // 24 bits; higher bits are dropped on encode
    std::uint8_t hop_limit = kDefaultHopLimit;

    [[nodiscard]] bool is_control() const noexcept { return (flags & kAndromedaFlagControl) != 0; }
    [[nodiscard]] bool is_oam() const noexcept { return (flags & kAndromedaFlagOam) != 0; }

    // Writes exactly kOverlayHeaderSize bytes at `out`.
    void encode(std::uint8_t* out) const noexcept {
        out[ANDROMEDA_HDR_VERSION_FLAGS] = static_cast<std::uint8_t>(kAndromedaVersion << 4 | (flags & 0x0f));
        out[ANDROMEDA_HDR_INNER_PROTOCOL] = inner_protocol;
        wire::store_be16(out + ANDROMEDA_HDR_FLOW_HASH, flow_hash);
        wire::store_be24(out + ANDROMEDA_HDR_VNI, vni & kMaxVni);
        out[ANDROMEDA_HDR_HOP_LIMIT] = hop_limit;
    }

    // nullopt when fewer than 8 bytes are given or the version nibble is not 1: a header of an
    // unknown version may mean anything after byte 0, so nothing else is interpreted.
    [[nodiscard]] static std::optional<AndromedaHeader> decode(wire::ByteSpan bytes) noexcept {
        if (bytes.size() < kOverlayHeaderSize) return std::nullopt;
        const std::uint8_t* p = bytes.data();
        if (p[ANDROMEDA_HDR_VERSION_FLAGS] >> 4 != kAndromedaVersion) return std::nullopt;
        AndromedaHeader h;
        h.flags = p[ANDROMEDA_HDR_VERSION_FLAGS] & 0x0f;
        h.inner_protocol = p[ANDROMEDA_HDR_INNER_PROTOCOL];
        h.flow_hash = wire::load_be16(p + ANDROMEDA_HDR_FLOW_HASH);
        h.vni = andromeda_overlay_vni(p);
        h.hop_limit = p[ANDROMEDA_HDR_HOP_LIMIT];
        return h;
    }

    friend bool operator==(const AndromedaHeader&, const AndromedaHeader&) = default;
};

}  // namespace andromeda::overlay
