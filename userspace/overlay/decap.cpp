#include "overlay/decap.hpp"

#include <array>
#include <cstring>
#include <type_traits>

#include "overlay/andromeda_header.hpp"
#include "overlay/vxlan_header.hpp"
#include "wire/checksum.hpp"
#include "wire/ethernet.hpp"
#include "wire/ip_protocol.hpp"
#include "wire/ipv4.hpp"
#include "wire/ipv6.hpp"
#include "wire/udp.hpp"

namespace andromeda::overlay {

namespace {

DecapError ethernet_error(wire::ParseError e) noexcept {
    return e == wire::ParseError::TooManyVlanTags ? DecapError::too_many_vlan_tags : DecapError::truncated_ethernet;
}

DecapError ipv4_error(wire::ParseError e, std::size_t available) noexcept {
    switch (e) {
        case wire::ParseError::BadVersion: return DecapError::bad_ip_version;
        case wire::ParseError::BadHeaderLength: return DecapError::bad_ip_header_length;
        case wire::ParseError::Truncated:
            // The view says Truncated both for a runt header and for a total length past the
            // frame; only the first is a short packet, the second a lying header.
            return available < wire::kIpv4MinHeaderLength ? DecapError::truncated_ipv4
                                                          : DecapError::bad_ip_total_length;
        default: return DecapError::bad_ip_total_length;
    }
}

// Fills the overlay fields of `out` from the 8 bytes at the start of `udp_payload`. Inlined into
// the IPv4 path as when it was its only caller (GCC called it out of line once the IPv6 path used
// it too: a dozen instructions more per IPv4 packet).
[[gnu::always_inline]] inline DecapError decode_overlay_header(EncapKind kind, wire::ByteSpan udp_payload,
                                                               Decapsulated& out) noexcept {
    if (udp_payload.size() < kOverlayHeaderSize) return DecapError::truncated_overlay_header;
    if (kind == EncapKind::andromeda) {
        const auto header = AndromedaHeader::decode(udp_payload);
        if (!header) return DecapError::bad_overlay_version;
        if (header->inner_protocol != kInnerProtocolEthernet) return DecapError::unsupported_inner_protocol;
        out.vni = header->vni;
        out.flow_hash = header->flow_hash;
        out.hop_limit = header->hop_limit;
        out.flags = header->flags;
    } else {
        const auto header = VxlanHeader::decode(udp_payload);
        if (!header) return DecapError::vxlan_vni_flag_clear;
        out.vni = header->vni;
        out.flow_hash = out.outer_src_port;
    }
    return DecapError::ok;
}

// Every IPv6 extension header type (RFC 7045 section 4 / IANA's registry), ESP and the
// experimental 253/254 included: any of them where UDP should be means "not our packet as sent".
constexpr bool is_extension_header(std::uint8_t next_header) noexcept {
    switch (next_header) {
        case 0: case 43: case 44: case 50: case 51: case 60: case 135: case 139: case 140: case 253: case 254:
            return true;
        default: return false;
    }
}

// An outer IPv6 packet (the ethertype said so): `ip_bytes` is the Ethernet payload, `vlan_id` the
// outermost tag's VID. Out of line and given values, not the Ethernet view (whose address would
// make the IPv4 path keep the view in memory), so the IPv4 path's code is as it was. The overlay
// only ever sends UDP right after the fixed header, so the extension-header chain is not walked:
// its first header is refused by name.
[[gnu::noinline]] DecapError decapsulate_ipv6(wire::ByteSpan packet, wire::ByteSpan ip_bytes, std::uint16_t vlan_id,
                                              const DecapConfig& config, Decapsulated& out) noexcept {
    if (ip_bytes.size() < wire::kIpv6HeaderLength) return DecapError::truncated_ipv6;
    if (ip_bytes[0] >> 4 != 6) return DecapError::bad_ip_version;
    const std::size_t payload_length = wire::load_be16(ip_bytes.data() + 4);
    if (payload_length > ip_bytes.size() - wire::kIpv6HeaderLength) return DecapError::bad_ipv6_payload_length;
    const std::uint8_t next_header = ip_bytes[6];
    if (next_header != wire::ip_protocol::kUdp) {
        if (next_header == wire::ip_protocol::kFragment) return DecapError::ip_fragment;
        if (is_extension_header(next_header)) return DecapError::ipv6_extension_header;
        return DecapError::not_udp;
    }

    const auto udp_bytes = ip_bytes.subspan(wire::kIpv6HeaderLength, payload_length);  // trailing padding dropped
    if (udp_bytes.size() < wire::kUdpHeaderLength) return DecapError::truncated_udp;
    const auto udp = wire::UdpView::parse(udp_bytes);
    if (!udp) return DecapError::bad_udp_length;
    const std::uint16_t port = config.udp_port != 0 ? config.udp_port : default_udp_port(config.kind);
    if (udp->destination_port() != port) return DecapError::wrong_udp_port;
    // RFC 6935/6936 would let a tunnel accept a zero checksum over IPv6; Linux does not by default
    // (udp6zerocsumrx off) and neither do we: the outer checksum is all that guards the VNI.
    if (udp->checksum() == 0) return DecapError::udp_zero_checksum_ipv6;
    // The pseudo-header (RFC 8200 section 8.1): the two addresses, contiguous at bytes 8-39 and so
    // summed at once, the UDP length and the next header; then the datagram, its checksum included.
    const std::uint64_t pseudo =
        wire::checksum_add(ip_bytes.subspan(8, 32), std::uint64_t{udp->length()} + wire::ip_protocol::kUdp);
    if (!wire::checksum_verifies(udp->datagram(), pseudo)) return DecapError::bad_udp_checksum;

    out.outer_src_mac = wire::MacAddress::from_bytes(packet.data() + 6);
    out.outer_dst_mac = wire::MacAddress::from_bytes(packet.data());
    out.outer_vlan_id = vlan_id;
    out.outer_ipv6 = true;
    out.outer_src_ip6 = wire::Ipv6Address::from_bytes(ip_bytes.data() + 8);
    out.outer_dst_ip6 = wire::Ipv6Address::from_bytes(ip_bytes.data() + 24);
    out.outer_ttl = ip_bytes[7];
    out.outer_src_port = udp->source_port();

    // The overlay header and the inner frame as in decapsulate_into (a helper shared by both cost
    // the IPv4 path 3 instructions).
    const auto udp_payload = udp->payload();
    if (const DecapError e = decode_overlay_header(config.kind, udp_payload, out); e != DecapError::ok) return e;
    out.inner = udp_payload.subspan(kOverlayHeaderSize);
    if (out.inner.size() < wire::kEthernetHeaderLength) return DecapError::inner_frame_too_short;
    out.inner_offset = static_cast<std::size_t>(out.inner.data() - packet.data());
    return DecapError::ok;
}

// Fills `out` field by field and returns the verdict. Kept apart from decapsulate() so the
// result is built directly in the caller's DecapResult (NRVO): copying a freshly written
// ~80-byte struct stalled on store forwarding and cost more than all the checks together.
DecapError decapsulate_into(wire::ByteSpan packet, const DecapConfig& config, Decapsulated& out) noexcept {
    const auto ethernet = wire::EthernetView::parse(packet);
    if (!ethernet) return ethernet_error(ethernet.error());
    if (ethernet->ethertype() != wire::ethertype::kIpv4) {
        if (ethernet->ethertype() == wire::ethertype::kIpv6)
            return decapsulate_ipv6(packet, ethernet->payload(), ethernet->vlan_id(), config, out);
        return DecapError::not_ipv4;
    }

    const auto ip_bytes = ethernet->payload();
    const auto ip = wire::Ipv4View::parse(ip_bytes);
    if (!ip) return ipv4_error(ip.error(), ip_bytes.size());
    if (!ip->checksum_valid()) return DecapError::bad_ip_checksum;
    if (ip->is_fragment()) return DecapError::ip_fragment;
    if (ip->protocol() != wire::ip_protocol::kUdp) return DecapError::not_udp;

    const auto udp_bytes = ip->payload();
    if (udp_bytes.size() < wire::kUdpHeaderLength) return DecapError::truncated_udp;
    const auto udp = wire::UdpView::parse(udp_bytes);
    if (!udp) return DecapError::bad_udp_length;
    const std::uint16_t port = config.udp_port != 0 ? config.udp_port : default_udp_port(config.kind);
    if (udp->destination_port() != port) return DecapError::wrong_udp_port;
    const wire::Ipv4Address outer_src(wire::load_be32(ip_bytes.data() + 12));
    const wire::Ipv4Address outer_dst(wire::load_be32(ip_bytes.data() + 16));
    // Tunnels usually send no UDP checksum; don't build the pseudo-header for nothing.
    if (udp->checksum() != 0 && !udp->checksum_valid(outer_src, outer_dst)) return DecapError::bad_udp_checksum;

    out.outer_src_mac = wire::MacAddress::from_bytes(packet.data() + 6);
    out.outer_dst_mac = wire::MacAddress::from_bytes(packet.data());
    out.outer_vlan_id = ethernet->vlan_id();
    out.outer_src_ip = outer_src;
    out.outer_dst_ip = outer_dst;
    out.outer_ttl = ip->ttl();
    out.outer_src_port = udp->source_port();

    const auto udp_payload = udp->payload();
    if (const DecapError e = decode_overlay_header(config.kind, udp_payload, out); e != DecapError::ok) return e;
    out.inner = udp_payload.subspan(kOverlayHeaderSize);
    if (out.inner.size() < wire::kEthernetHeaderLength) return DecapError::inner_frame_too_short;
    out.inner_offset = static_cast<std::size_t>(out.inner.data() - packet.data());
    return DecapError::ok;
}

}  // namespace

DecapResult decapsulate(wire::ByteSpan packet, const DecapConfig& config) noexcept {
    DecapResult result;
    // The constructor's clear again, in two pieces: GCC clears an object of over 80 bytes (the
    // IPv6 addresses made this one 104) with `rep stosq`, slow to start and 17 instructions by
    // callgrind's count where 16-byte stores took 7. Pieces of at most 64 bytes become 16-byte
    // stores, the constructor's clear is then dead and dropped, and the whole decap counts as many
    // instructions as before the IPv6 fields. Every default member value is zero but the hop
    // limit, set again here (DecapAccepts.RefusalLeavesEveryFieldAtItsDefault checks them all).
    static_assert(std::is_trivially_copyable_v<DecapResult> && sizeof(DecapResult) > 64);
    auto* const bytes = reinterpret_cast<unsigned char*>(&result);
    std::memset(bytes, 0, 64);
    std::memset(bytes + 64, 0, sizeof result - 64);
    result.packet.hop_limit = kDefaultHopLimit;
    result.error = decapsulate_into(packet, config, result.packet);
    return result;
}

}  // namespace andromeda::overlay
