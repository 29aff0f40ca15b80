// Decapsulation of one underlay packet: every outer layer is validated before the inner frame is
// trusted, and a refusal names its reason so counters and logs can say why a packet was dropped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "overlay/encap_kind.hpp"
#include "util/drop_reasons.hpp"
#include "wire/addresses.hpp"
#include "wire/bytes.hpp"

namespace andromeda::overlay {

// Why decapsulation refused a packet: shared/andromeda_drops.h, ANDROMEDA_DROPS_DECAP.
ANDROMEDA_DEFINE_DROP_REASONS(DecapError, kDecapErrorCount, ok, "decapsulated", ANDROMEDA_DROPS_DECAP)

struct DecapConfig {
    EncapKind kind = EncapKind::andromeda;
    std::uint16_t udp_port = 0;  // 0 = default_udp_port(kind)
};

// What a successful decap found. `inner` points into the packet given to decapsulate().
struct Decapsulated {
    wire::ByteSpan inner;
    std::size_t inner_offset = 0;  // inner.data() - packet.data(), for callers holding a mutable buffer
    std::uint32_t vni = 0;
    // Andromeda: the header's flow hash. VXLAN carries none, so this is the outer UDP source
    // port (the sender's hash with whatever top bits it forced).
    std::uint16_t flow_hash = 0;
    // Andromeda: the header's hop limit. VXLAN has none: kDefaultHopLimit.
    std::uint8_t hop_limit = kDefaultHopLimit;
    std::uint8_t flags = 0;  // Andromeda low-nibble flags; VXLAN: 0
    wire::MacAddress outer_src_mac;
    wire::MacAddress outer_dst_mac;
    std::uint16_t outer_vlan_id = 0;  // outermost tag's VID, 0 when untagged
    wire::Ipv4Address outer_src_ip;   // 0 when outer_ipv6
    wire::Ipv4Address outer_dst_ip;
    std::uint8_t outer_ttl = 0;       // IPv6: the hop limit
    std::uint16_t outer_src_port = 0;
    // An IPv6 underlay: the outer header was IPv6 from outer_src_ip6 to outer_dst_ip6 (both zero
    // when !outer_ipv6).
    bool outer_ipv6 = false;
    wire::Ipv6Address outer_src_ip6;
    wire::Ipv6Address outer_dst_ip6;
};

struct DecapResult {
    DecapError error = DecapError::ok;
    Decapsulated packet;  // meaningful only when ok()

    [[nodiscard]] bool ok() const noexcept { return error == DecapError::ok; }
};

// Validates `packet` as an overlay packet of `config.kind` on `config.udp_port` and returns its
// inner frame and overlay fields, or the first reason it is refused. Checks, in order: outer
// Ethernet (up to two VLAN tags) carrying IPv4 or IPv6; IPv4 version, IHL (options allowed), total
// length within the frame (trailing padding ignored), header checksum, no fragment, protocol
// UDP; UDP length within the IP payload (shorter is allowed and trims, as in Linux), destination
// port, checksum when nonzero; overlay header; an inner frame of at least 14 bytes.
// Over IPv6 instead of the IPv4 checks: version 6, payload length within the frame (padding
// ignored), UDP right after the fixed header (a fragment header is ip_fragment, any other
// extension header ipv6_extension_header); then the same UDP checks, except that the checksum is
// mandatory: 0 is udp_zero_checksum_ipv6, and any other value must verify over the IPv6
// pseudo-header.
[[nodiscard]] DecapResult decapsulate(wire::ByteSpan packet, const DecapConfig& config) noexcept;

}  // namespace andromeda::overlay
