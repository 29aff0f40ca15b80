#include "overlay/outer_template.hpp"

#include <cstring>

#include "overlay/andromeda_header.hpp"
#include "overlay/flow_hash.hpp"
#include "overlay/vxlan_header.hpp"
#include "wire/checksum.hpp"

namespace andromeda::overlay {

namespace {

// Offsets inside the 50 untagged outer bytes (a tagged template writes them 4 bytes on).
constexpr std::size_t kIpOffset = kOuterEthernetSize;
constexpr std::size_t kUdpOffset = kIpOffset + kOuterIpv4Size;
constexpr std::uint8_t kProtoUdp = 17;
constexpr std::uint16_t kIpFlagDontFragment = 0x4000;
constexpr std::uint16_t kEthertypeIpv4 = 0x0800;
constexpr std::uint16_t kEthertypeIpv6 = 0x86dd;

// The one's-complement partial sum of 16-bit words as they lie in memory (what write_outer adds
// its fields to).
std::uint32_t sum_of_memory_words(const std::uint8_t* p, std::size_t n) noexcept {
    std::uint32_t sum = 0;
    for (std::size_t i = 0; i < n; i += 2) {
        std::uint16_t word;
        std::memcpy(&word, p + i, sizeof word);
        sum += word;
    }
    return sum;
}

}  // namespace

OuterTemplate::OuterTemplate(const OuterTemplateConfig& config) noexcept
    : udp_port_(config.udp_port != 0 ? config.udp_port : default_udp_port(config.kind)),
      header_size_(static_cast<std::uint8_t>(outer_headers_size(config.ipv6, config.vlan_id != 0))),
      general_(config.ipv6 || config.vlan_id != 0),
      config_(config) {
    std::uint8_t* p = bytes_.data();
    config_.dst_mac.copy_to(p);
    config_.src_mac.copy_to(p + 6);
    wire::store_be16(p + 12, kEthertypeIpv4);

    std::uint8_t* ip = p + kIpOffset;
    ip[0] = 0x45;
    ip[1] = config_.tos;
    // bytes 2-5 (total length, ID) are per packet
    wire::store_be16(ip + 6, config_.dont_fragment ? kIpFlagDontFragment : 0);
    ip[8] = config_.ttl;
    ip[9] = kProtoUdp;
    // bytes 10-11: checksum, per packet
    config_.src_ip.copy_to(ip + 12);
    config_.dst_ip.copy_to(ip + 16);
    // The per-packet words are still zero here, so summing the whole header sums the constants.
    ip_constant_sum_ = sum_of_memory_words(ip, kOuterIpv4Size);

    std::uint8_t* udp = p + kUdpOffset;
    wire::store_be16(udp + 2, udp_port_);
    // source port, length and checksum are per packet
    udp_pseudo_sum_ = static_cast<std::uint32_t>(wire::pseudo_header_sum(config_.src_ip, config_.dst_ip, kProtoUdp, 0));
    // An IPv6 template reads only the MACs of bytes_ (still the IPv4 template) and writes the rest
    // per packet; its pseudo-header's constant part (16 address words, next header) is folded.
    if (config_.ipv6)
        udp_pseudo_sum_ = wire::checksum_fold(wire::pseudo_header_sum(config_.src_ip6, config_.dst_ip6, kProtoUdp, 0));

    OverlayFields fresh;  // default hop limit, no flags
    fresh.vni = 0;
    fresh.flow_hash = 0;
    fresh_header_base_ = overlay_header_word(fresh);
    fresh.flow_hash = 0xffff;
    fresh_hash_mask_ = overlay_header_word(fresh) ^ fresh_header_base_;
}

void OuterTemplate::write_udp_checksum(std::uint8_t* udp, std::uint16_t udp_length) const noexcept {
    // The checksum field is still 0 from the template, so summing the datagram as it stands
    // (UDP header, overlay header, inner frame) plus the pseudo-header gives the value.
    const std::uint64_t sum = wire::checksum_add(wire::ByteSpan(udp, udp_length), std::uint64_t{udp_pseudo_sum_} + udp_length);
    const std::uint16_t checksum = wire::checksum_finish(sum);
    wire::store_be16(udp + 6, checksum == 0 ? 0xffff : checksum);  // 0 would mean "none"
}

void OuterTemplate::write_tagged_outer(std::uint8_t* out, std::size_t inner_length, const OverlayFields& fields) noexcept {
    write_outer(out + kVlanTagSize, inner_length, overlay_header_word(fields), fields.flow_hash);
    std::memcpy(out, bytes_.data(), 12);  // destination and source MAC
    wire::store_be16(out + 12, kVlanTpid);
    wire::store_be16(out + 14, static_cast<std::uint16_t>(config_.vlan_id & 0x0fff));  // PCP 0, DEI 0
}

void OuterTemplate::write_ipv6_outer(std::uint8_t* out, std::size_t inner_length,
                                     const OverlayFields& fields) noexcept {
    std::memcpy(out, bytes_.data(), 12);  // destination and source MAC
    std::uint8_t* p = out + 12;
    if (tagged()) {
        wire::store_be16(p, kVlanTpid);
        wire::store_be16(p + 2, static_cast<std::uint16_t>(config_.vlan_id & 0x0fff));  // PCP 0, DEI 0
        p += kVlanTagSize;
    }
    wire::store_be16(p, kEthertypeIpv6);
    std::uint8_t* ip = p + 2;
    const auto udp_length = static_cast<std::uint16_t>(inner_length + kOuterUdpSize + kOverlayHeaderSize);
    // Version 6, traffic class, flow label (RFC 6438: from the inner flow, outer_flow_label()).
    wire::store_be32(ip, 0x60000000u | std::uint32_t{config_.tos} << 20 | outer_flow_label(fields.flow_hash));
    wire::store_be16(ip + 4, udp_length);  // payload length: UDP is all there is after the fixed header
    ip[6] = kProtoUdp;
    ip[7] = config_.ttl;
    config_.src_ip6.copy_to(ip + 8);
    config_.dst_ip6.copy_to(ip + 24);
    std::uint8_t* udp = ip + kOuterIpv6Size;
    wire::store_be16(udp, flow_source_port(fields.flow_hash));
    wire::store_be16(udp + 2, udp_port_);
    wire::store_be16(udp + 4, udp_length);
    wire::store_be16(udp + 6, 0);
    const std::uint64_t header_word = overlay_header_word(fields);
    std::memcpy(udp + kOuterUdpSize, &header_word, sizeof header_word);
    write_udp_checksum(udp, udp_length);  // mandatory over IPv6, whatever config_.udp_checksum says
}

void OuterTemplate::write_general_outer(std::uint8_t* out, std::size_t inner_length,
                                        const OverlayFields& fields) noexcept {
    if (ipv6())
        write_ipv6_outer(out, inner_length, fields);
    else
        write_tagged_outer(out, inner_length, fields);
}

std::size_t OuterTemplate::encapsulate_general(wire::ByteSpan inner, wire::MutableByteSpan out,
                                               const OverlayFields& fields) noexcept {
    const std::size_t header = header_size();
    if (inner.size() > kMaxInnerFrameSize || out.size() < inner.size() + header) return 0;
    // The inner frame first: the UDP checksum reads it in place.
    std::memcpy(out.data() + header, inner.data(), inner.size());
    write_general_outer(out.data(), inner.size(), fields);
    return inner.size() + header;
}

wire::MutableByteSpan OuterTemplate::encapsulate_in_place(wire::MutableByteSpan buffer, std::size_t inner_offset,
                                                          std::size_t inner_length,
                                                          const OverlayFields& fields) noexcept {
    const std::size_t header = header_size();
    if (inner_offset < header || inner_offset > buffer.size() || inner_length > buffer.size() - inner_offset ||
        inner_length > kMaxInnerFrameSize)
        return {};
    if (general_) {
        std::uint8_t* outer = buffer.data() + inner_offset - header;
        write_general_outer(outer, inner_length, fields);
        return {outer, inner_length + header};
    }
    return {prepend_outer(buffer.data() + inner_offset, inner_length, fields), inner_length + kOuterHeadersSize};
}

std::size_t OuterTemplate::encapsulate_burst_in_place(std::span<InPlaceFrame> frames, std::uint32_t vni) noexcept {
    std::size_t done = 0;
    OverlayFields fields;
    fields.vni = vni;
    const std::size_t header = header_size();
    for (InPlaceFrame& frame : frames) {
        if (frame.headroom < header || frame.length > kMaxInnerFrameSize) {
            frame.length = 0;
            continue;
        }
        fields.flow_hash = flow_hash_of_frame(wire::ByteSpan(frame.data, frame.length));
        frame.data -= header;
        if (general_)
            write_general_outer(frame.data, frame.length, fields);
        else
            write_outer(frame.data, frame.length, overlay_header_word(fields), fields.flow_hash);
        frame.length += static_cast<std::uint32_t>(header);
        frame.headroom -= static_cast<std::uint32_t>(header);
        ++done;
    }
    return done;
}

}  // namespace andromeda::overlay
