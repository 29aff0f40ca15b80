// Outer-header templates: the 42 bytes of outer Ethernet/IPv4/UDP towards one destination are
// built once, and each packet only patches what changes (IPv4 total length, ID and checksum, UDP
// source port and length, the 8-byte overlay header). The IPv4 checksum comes from a partial sum
// of the constant header words precomputed here, so per-packet cost is two adds and a fold.
//
// Nothing on the per-packet path allocates. A template is not thread-safe (the IP ID counter is
// per template): each worker keeps its own.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "overlay/encap_kind.hpp"
#include "wire/addresses.hpp"
#include "wire/bytes.hpp"

namespace andromeda::overlay {

// The largest inner frame whose outer IPv4 total length still fits in 16 bits.
inline constexpr std::size_t kMaxInnerFrameSize = 0xffff - kOuterIpv4Size - kOuterUdpSize - kOverlayHeaderSize;

// What is constant towards one destination.
struct OuterTemplateConfig {
    EncapKind kind = EncapKind::andromeda;
    wire::MacAddress src_mac;
    wire::MacAddress dst_mac;  // the next hop's MAC on the underlay
    wire::Ipv4Address src_ip;
    wire::Ipv4Address dst_ip;
    std::uint16_t udp_port = 0;  // outer UDP destination port; 0 = default_udp_port(kind)
    std::uint8_t ttl = 64;
    std::uint8_t tos = 0;
    bool dont_fragment = true;  // the outer packet is never fragmented (section 3)
    // Outer UDP checksum 0 is legal for IPv4 tunnels and saves summing the whole inner frame;
    // computing it is for underlays that insist.
    bool udp_checksum = false;
};

// What each packet carries in its overlay header. VXLAN has no field for the flow hash (it only
// lands in the UDP source port), the hop limit or the flags.
struct OverlayFields {
    std::uint32_t vni = 0;
    std::uint16_t flow_hash = 0;
    std::uint8_t hop_limit = kDefaultHopLimit;
    std::uint8_t flags = 0;  // Andromeda low-nibble flags (control, OAM)
};

// One frame of a burst encapsulated in place: `data` points at the inner Ethernet frame inside
// a buffer (an AF_XDP UMEM chunk) with `headroom` writable bytes in front of it. On success the
// fields are moved to describe the outer packet.
struct InPlaceFrame {
    std::uint8_t* data = nullptr;
    std::uint32_t length = 0;
    std::uint32_t headroom = 0;
};

class OuterTemplate {
public:
    explicit OuterTemplate(const OuterTemplateConfig& config) noexcept;

    [[nodiscard]] const OuterTemplateConfig& config() const noexcept { return config_; }
    [[nodiscard]] EncapKind kind() const noexcept { return config_.kind; }
    [[nodiscard]] std::uint16_t udp_port() const noexcept { return udp_port_; }

    // The IPv4 ID the next packet gets; it increments per packet and wraps. Starts at 1, as the
    // reference does.
    [[nodiscard]] std::uint16_t next_ip_id() const noexcept { return next_ip_id_; }
    void set_next_ip_id(std::uint16_t id) noexcept { next_ip_id_ = id; }

    // Copy: writes outer headers plus `inner` to the front of `out` and returns the number of
    // bytes written (inner.size() + 50); 0, writing nothing, when `out` is too small or `inner`
    // exceeds kMaxInnerFrameSize. `inner` and `out` must not overlap.
    std::size_t encapsulate(wire::ByteSpan inner, wire::MutableByteSpan out, const OverlayFields& fields) noexcept;

    // In place: the inner frame is buffer[inner_offset, inner_offset + inner_length); the 50
    // outer bytes go in front of it. Returns the outer packet, or an empty span (buffer
    // untouched) when the headroom is under 50 bytes, the frame does not fit in `buffer` or is
    // larger than kMaxInnerFrameSize.
    wire::MutableByteSpan encapsulate_in_place(wire::MutableByteSpan buffer, std::size_t inner_offset,
                                               std::size_t inner_length, const OverlayFields& fields) noexcept;

    // Encapsulates a burst of fresh tenant frames in place, all with `vni`, the default hop limit
    // and no flags, each with flow_hash_of_frame() of its own inner frame. Returns how many were
    // encapsulated; a frame that cannot be (headroom < 50, too large) is left untouched except
    // that its length is set to 0, so the caller drops it.
    std::size_t encapsulate_burst_in_place(std::span<InPlaceFrame> frames, std::uint32_t vni) noexcept;

private:
    // Writes the 50 outer bytes at `out` for an inner frame of `inner_length` bytes that follows
    // them contiguously (the UDP checksum, when enabled, reads it).
    void write_outer(std::uint8_t* out, std::size_t inner_length, const OverlayFields& fields) noexcept;

    OuterTemplateConfig config_;
    std::uint16_t udp_port_ = 0;
    std::uint16_t next_ip_id_ = 1;
    // One's-complement sum of the IPv4 header words that never change (all but total length,
    // ID and the checksum itself), not folded.
    std::uint32_t ip_constant_sum_ = 0;
    // The UDP pseudo-header's constant part: addresses and protocol.
    std::uint32_t udp_pseudo_sum_ = 0;
    // Outer Ethernet, IPv4 and UDP with the per-packet fields zeroed.
    alignas(16) std::array<std::uint8_t, kOuterEthernetSize + kOuterIpv4Size + kOuterUdpSize> bytes_{};
};

}  // namespace andromeda::overlay
