// The two overlay encapsulations Andromeda speaks and the constants both share. Both put an
// 8-byte overlay header after outer Ethernet/IP/UDP, so the outer stack is 50 bytes either way
// over an IPv4 underlay (70 over IPv6) and one template/decap path serves both, selected at runtime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "andromeda_kern_user.h"  // the wire constants BPF and C++ share
#include "andromeda_overlay.h"    // the header layout, flow hash and path-MTU rule they share

namespace andromeda::overlay {

// The values are the BPF side's enum andromeda_encap_kind, so one converts to the other as is.
enum class EncapKind : std::uint8_t {
    andromeda = ANDROMEDA_ENCAP_ANDROMEDA,  // docs/wire-format.md, byte-compatible with Light-Andromeda
    vxlan = ANDROMEDA_ENCAP_VXLAN,          // RFC 7348
};

inline constexpr std::uint16_t kAndromedaUdpPort = ANDROMEDA_OVERLAY_PORT;
inline constexpr std::uint16_t kVxlanUdpPort = ANDROMEDA_VXLAN_PORT;  // IANA
inline constexpr std::uint16_t kVxlanLinuxLegacyPort = 8472;  // the kernel's pre-IANA default

inline constexpr std::size_t kOuterEthernetSize = 14;
inline constexpr std::size_t kOuterIpv4Size = 20;
inline constexpr std::size_t kOuterUdpSize = 8;
inline constexpr std::size_t kOverlayHeaderSize = ANDROMEDA_OVERLAY_HEADER_LEN;
// Everything written in front of the inner frame: the headroom an in-place encap needs and the
// amount by which the inner MTU is smaller than the underlay MTU.
inline constexpr std::size_t kOuterHeadersSize =
    kOuterEthernetSize + kOuterIpv4Size + kOuterUdpSize + kOverlayHeaderSize;
static_assert(kOuterHeadersSize == ANDROMEDA_ENCAP_OVERHEAD);
// With [node] underlay_vlan the outer Ethernet header carries one 802.1Q tag (TPID, PCP/DEI/VID)
// and the outer headers are 54 bytes; the IP MTU and so the inner MTU are the same.
inline constexpr std::size_t kVlanTagSize = 4;
inline constexpr std::uint16_t kVlanTpid = 0x8100;
inline constexpr std::size_t kTaggedOuterHeadersSize = kOuterHeadersSize + kVlanTagSize;
// Over an IPv6 underlay the outer IP header is IPv6's fixed 40 bytes (no extension headers), so
// the outer headers are 70 bytes (74 tagged) and the inner MTU is the underlay MTU - 70.
inline constexpr std::size_t kOuterIpv6Size = 40;
inline constexpr std::size_t kOuterHeadersSize6 =
    kOuterEthernetSize + kOuterIpv6Size + kOuterUdpSize + kOverlayHeaderSize;
inline constexpr std::size_t kTaggedOuterHeadersSize6 = kOuterHeadersSize6 + kVlanTagSize;
static_assert(kOuterHeadersSize6 == 70 && kTaggedOuterHeadersSize6 == 74);

// The outer headers in front of an inner frame for an IPv4 (50, tagged 54) or IPv6 (70, 74) underlay.
[[nodiscard]] constexpr std::size_t outer_headers_size(bool ipv6, bool tagged) noexcept {
    return (ipv6 ? kOuterHeadersSize6 : kOuterHeadersSize) + (tagged ? kVlanTagSize : 0);
}

// The overlay hop limit a fresh packet starts with (Andromeda header byte 7).
inline constexpr std::uint8_t kDefaultHopLimit = 64;

[[nodiscard]] constexpr std::uint16_t default_udp_port(EncapKind kind) noexcept {
    return kind == EncapKind::vxlan ? kVxlanUdpPort : kAndromedaUdpPort;
}

[[nodiscard]] constexpr std::string_view to_string(EncapKind kind) noexcept {
    return kind == EncapKind::vxlan ? "vxlan" : "andromeda";
}


}  // namespace andromeda::overlay
