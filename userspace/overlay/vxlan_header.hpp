// The 8-byte VXLAN header (RFC 7348 section 5):
//
//   byte 0     flags: 0x08 (I, "VNI is valid"); the other bits are reserved
//   bytes 1-3  reserved
//   bytes 4-6  VNI, 24-bit big-endian
//   byte 7     reserved
//
// Reserved fields are sent as zero and, as the RFC requires, ignored on receipt; only the I bit
// is checked.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>

#include "overlay/encap_kind.hpp"
#include "wire/bytes.hpp"

namespace andromeda::overlay {

inline constexpr std::uint8_t kVxlanFlagVniValid = ANDROMEDA_VXLAN_FLAG_I;

struct VxlanHeader {
    std::uint32_t vni = 0;  // 24 bits; higher bits are dropped on encode

    // Writes exactly kOverlayHeaderSize bytes at `out`.
    void encode(std::uint8_t* out) const noexcept {
        std::memset(out, 0, kOverlayHeaderSize);
        out[ANDROMEDA_VXLAN_HDR_FLAGS] = kVxlanFlagVniValid;
        wire::store_be24(out + ANDROMEDA_HDR_VNI, vni & 0xffffff);
    }

    // nullopt when fewer than 8 bytes are given or the I flag is clear.
    [[nodiscard]] static std::optional<VxlanHeader> decode(wire::ByteSpan bytes) noexcept {
        if (bytes.size() < kOverlayHeaderSize) return std::nullopt;
        if ((bytes[ANDROMEDA_VXLAN_HDR_FLAGS] & kVxlanFlagVniValid) == 0) return std::nullopt;
        return VxlanHeader{andromeda_overlay_vni(bytes.data())};
    }

    friend bool operator==(const VxlanHeader&, const VxlanHeader&) = default;
};

}  // namespace andromeda::overlay
