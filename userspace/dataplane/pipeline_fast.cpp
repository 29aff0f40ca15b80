// The fast paths for the two frames that are nearly all traffic: a tenant's untagged IPv4
// packet for a remote endpoint (encapsulate), and an overlay packet for a local endpoint
// (deliver). Same checks and outcome as the general path, done with fixed-offset loads; anything
// unusual (tags, options, errors to send, drops) returns false untouched and takes the general
// path, which then also names the drop reason.
#include <cstring>

#include "dataplane/fast_path.hpp"
#include "dataplane/pipeline.hpp"
#include "overlay/andromeda_header.hpp"
#include "overlay/decap.hpp"
#include "overlay/vxlan_header.hpp"

namespace andromeda::dataplane {

namespace {

constexpr std::uint32_t kOuter = overlay::kOuterHeadersSize;
constexpr std::size_t kEthernet = 14;

// Network-order IPv4 address word -> host-order value.
wire::Ipv4Address address_of(std::uint32_t network_order) noexcept {
    return wire::Ipv4Address(__builtin_bswap32(network_order));
}

std::uint32_t word_at(const std::uint8_t* p) noexcept {
    std::uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

}  // namespace

bool Pipeline::fast_tenant(const detail::PortState& port, const Input& input, FrameSink& sink, FrameResult& result) {
    const std::uint8_t* frame = input.bytes.data();
    const std::size_t size = input.bytes.size();
    if (!port.fast || size < kEthernet + 20 || wire::load_be16(frame + 12) != wire::ethertype::kIpv4) return false;
    if (detail::mac_word(frame + 6) != port.endpoint_mac || detail::mac_word(frame) != port.gateway_mac) return false;
    const std::uint8_t* ip = frame + kEthernet;
    const std::uint32_t total = wire::load_be16(ip + 2);
    if (ip[0] != 0x45 || total < 20 || total > size - kEthernet || total > port.untagged_mtu) return false;
    if (!detail::ipv4_header20_checksum_ok(ip) || word_at(ip + 12) != port.endpoint_ip) return false;
    const std::uint32_t destination = word_at(ip + 16);
    const wire::Ipv4Address target_ip = address_of(destination);
    if (destination == port.gateway_ip || (target_ip.value() >> 28) == 0xe || target_ip.value() == 0xffffffff)
        return false;
    const std::uint32_t offset = target_ip.value() - port.direct_network;
    const detail::EndpointRoute* target =
        offset < port.direct_size ? port.direct_routes[offset] : state_.route(port.vpc_index, target_ip);
    if (target == nullptr || target->outer == nullptr || sink.free_slots() == 0) return false;
    overlay::OuterTemplate* outer = target->outer;
    const std::uint8_t* target_mac = target->mac.data();

    const std::uint32_t length = kEthernet + total;
    const overlay::OverlayFields fields{port.vni, detail::ipv4_flow_hash(ip, 20, total), overlay::kDefaultHopLimit, 0};
    const PacketBuffer* in = input.buffer;
    if (in != nullptr && in->offset >= kOuter) {
        std::memcpy(in->data(), target_mac, 6);
        const wire::MutableByteSpan packet = outer->encapsulate_in_place({in->chunk, in->size}, in->offset, length, fields);
        sink.emit_input(state_.underlay_port(),
                        PacketBuffer{in->chunk, in->size, in->offset - kOuter, static_cast<std::uint32_t>(packet.size())},
                        input.index);
    } else {
        if (sink.free_spares() == 0) return false;
        PacketBuffer out = sink.peek_spare();
        if (out.capacity() < length + kOuter) return false;
        outer->encapsulate(input.bytes.first(length), {out.data(), out.capacity()}, fields);
        std::memcpy(out.data() + kOuter, target_mac, 6);
        out.length = length + kOuter;
        sink.emit_spare(state_.underlay_port(), out);
        if (in != nullptr) ++counters_.in_place_fallback_copies;
    }
    ++counters_.rx_tenant;
    ++counters_.encapsulated;
    ++counters_.forwarded;
    result.verdict = Verdict::forward;
    result.emissions = 1;
    return true;
}

namespace {

// An overlay packet in its common form, as overlay::decapsulate would accept it.
struct CommonOverlay {
    std::uint32_t inner_offset = 0;
    std::uint32_t inner_length = 0;
    std::uint32_t vni = 0;
    wire::Ipv4Address source;
};

// Recognises the common form (untagged IPv4 without options, to this node, not fragmented, UDP
// to the overlay port without a checksum, Andromeda v1 without flags and with hop limit left, or
// VXLAN) and checks it exactly as overlay::decapsulate does; anything else is left to
// decapsulate() on the general path, which also names why it is refused.
bool parse_common_overlay(wire::ByteSpan packet, const overlay::DecapConfig& config, std::uint32_t local_address,
                          CommonOverlay& out) noexcept {
    constexpr std::size_t kInnerOffset = kEthernet + 20 + 8 + overlay::kOverlayHeaderSize;
    const std::uint8_t* p = packet.data();
    const std::size_t size = packet.size();
    if (size < kInnerOffset + kEthernet || wire::load_be16(p + 12) != wire::ethertype::kIpv4) return false;
    const std::uint8_t* ip = p + kEthernet;
    const std::uint32_t total = wire::load_be16(ip + 2);
    if (ip[0] != 0x45 || total > size - kEthernet || total < kInnerOffset - kEthernet) return false;
    if (!detail::ipv4_header20_checksum_ok(ip) || (wire::load_be16(ip + 6) & 0x3fff) != 0) return false;
    if (ip[9] != wire::ip_protocol::kUdp || word_at(ip + 16) != local_address) return false;
    const std::uint8_t* udp = ip + 20;
    const std::uint32_t udp_length = wire::load_be16(udp + 4);
    if (wire::load_be16(udp + 2) != config.udp_port || wire::load_be16(udp + 6) != 0) return false;
    if (udp_length < 8 + overlay::kOverlayHeaderSize + kEthernet || udp_length > total - 20) return false;
    const std::uint8_t* header = udp + 8;
    if (config.kind == overlay::EncapKind::andromeda) {
        if (header[0] != overlay::kAndromedaVersion << 4 || header[1] != overlay::kInnerProtocolEthernet || header[7] == 0)
            return false;
    } else if ((header[0] & overlay::kVxlanFlagVniValid) == 0) {
        return false;
    }
    out.inner_offset = kInnerOffset;
    out.inner_length = udp_length - 8 - overlay::kOverlayHeaderSize;
    out.vni = wire::load_be24(header + 4);
    out.source = address_of(word_at(ip + 12));
    return true;
}

}  // namespace

bool Pipeline::fast_underlay(const Input& input, FrameSink& sink, FrameResult& result) {
    CommonOverlay packet;
    if (state_.local_address_word() == 0 || sink.free_slots() == 0 ||
        !parse_common_overlay(input.bytes, state_.decap_config(), state_.local_address_word(), packet))
        return false;
    const std::uint32_t peer = state_.node_by_address(packet.source);
    const detail::VpcState* vpc = state_.vpc_by_vni(packet.vni);
    if (peer == fabric::kNoIndex || peer == 0 || vpc == nullptr) return false;  // node 0 is this one

    const std::uint8_t* inner = input.bytes.data() + packet.inner_offset;
    const std::size_t inner_size = packet.inner_length;
    if (inner_size < kEthernet + 20 || wire::load_be16(inner + 12) != wire::ethertype::kIpv4) return false;
    const std::uint8_t* ip = inner + kEthernet;
    const std::uint32_t total = wire::load_be16(ip + 2);
    if (ip[0] != 0x45 || total < 20 || total > inner_size - kEthernet || !detail::ipv4_header20_checksum_ok(ip))
        return false;
    // Only the sender's own endpoints (outside sources need the general path's NAT check).
    const detail::EndpointRoute* sender = state_.route(*vpc, address_of(word_at(ip + 12)));
    const detail::EndpointRoute* target = state_.route(*vpc, address_of(word_at(ip + 16)));
    if (sender == nullptr || sender->node_index != peer || target == nullptr || target->port == kNoPort) return false;
    const PortId port = target->port;

    const std::uint32_t length = kEthernet + total;
    const PacketBuffer* in = input.buffer;
    std::uint8_t* out_frame;
    if (in != nullptr) {
        const PacketBuffer delivered{in->chunk, in->size, in->offset + packet.inner_offset, length};
        out_frame = delivered.data();
        sink.emit_input(port, delivered, input.index);
    } else {
        if (sink.free_spares() == 0) return false;
        PacketBuffer out = sink.peek_spare();
        if (out.capacity() < length) return false;
        std::memcpy(out.data(), inner, length);
        out.length = length;
        out_frame = out.data();
        sink.emit_spare(port, out);
    }
    std::memcpy(out_frame, target->mac.data(), 6);
    std::memcpy(out_frame + 6, vpc->gateway.mac.bytes().data(), 6);
    ++counters_.rx_underlay;
    ++counters_.decapsulated;
    ++counters_.delivered_from_fabric;
    ++counters_.delivered;
    result.verdict = Verdict::deliver;
    result.emissions = 1;
    return true;
}

}  // namespace andromeda::dataplane
