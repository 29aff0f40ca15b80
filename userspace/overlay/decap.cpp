#include "overlay/decap.hpp"

#include <array>
#include <cstring>

#include "overlay/andromeda_header.hpp"
#include "overlay/vxlan_header.hpp"
#include "wire/ethernet.hpp"
#include "wire/ip_protocol.hpp"
#include "wire/ipv4.hpp"
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

// Fills the overlay fields of `out` from the 8 bytes at the start of `udp_payload`.
DecapError decode_overlay_header(EncapKind kind, wire::ByteSpan udp_payload, Decapsulated& out) noexcept {
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

// Fills `out` field by field and returns the verdict. Kept apart from decapsulate() so the
// result is built directly in the caller's DecapResult (NRVO): copying a freshly written
// ~80-byte struct stalled on store forwarding and cost more than all the checks together.
DecapError decapsulate_into(wire::ByteSpan packet, const DecapConfig& config, Decapsulated& out) noexcept {
    const auto ethernet = wire::EthernetView::parse(packet);
    if (!ethernet) return ethernet_error(ethernet.error());
    if (ethernet->ethertype() != wire::ethertype::kIpv4) return DecapError::not_ipv4;

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
    result.error = decapsulate_into(packet, config, result.packet);
    return result;
}

}  // namespace andromeda::overlay
