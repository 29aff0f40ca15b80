// The fast paths for the two frames that are nearly all traffic: a tenant's untagged IPv4
// packet for a remote endpoint (encapsulate), and an overlay packet for a local endpoint
// (deliver). Same checks and outcome as the general path, done with fixed-offset loads; anything
// unusual (tags, options, errors to send, drops) returns false untouched and takes the general
// path, which then also names the drop reason.
#include <cstring>

#include "dataplane/fast_path.hpp"
#include "dataplane/pipeline.hpp"
#include "overlay/decap.hpp"

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
    const detail::EndpointRoute* target = state_.route(port.vpc_index, target_ip);
    if (target == nullptr || target->outer == nullptr || sink.free_slots() == 0) return false;
    overlay::OuterTemplate* outer = target->outer;
    const std::uint8_t* target_mac = target->endpoint->mac.bytes().data();

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
    result.verdict = Verdict::forward;
    result.emissions = 1;
    return true;
}

bool Pipeline::fast_underlay(const Input& input, FrameSink& sink, FrameResult& result) {
    const overlay::DecapResult decap = overlay::decapsulate(input.bytes, state_.decap_config());
    const overlay::Decapsulated& packet = decap.packet;
    if (!decap.ok() || !state_.local_address() || packet.outer_dst_ip != *state_.local_address()) return false;
    if (packet.flags != 0 || packet.hop_limit == 0 || sink.free_slots() == 0) return false;
    const fabric::Node* peer = fabric_->find_node_by_address(packet.outer_src_ip);
    const fabric::Vpc* vpc = fabric_->find_vpc(packet.vni);
    if (peer == nullptr || peer->is_local || vpc == nullptr) return false;

    const std::uint8_t* inner = packet.inner.data();
    const std::size_t inner_size = packet.inner.size();
    if (inner_size < kEthernet + 20 || wire::load_be16(inner + 12) != wire::ethertype::kIpv4) return false;
    const std::uint8_t* ip = inner + kEthernet;
    const std::uint32_t total = wire::load_be16(ip + 2);
    if (ip[0] != 0x45 || total < 20 || total > inner_size - kEthernet || !detail::ipv4_header20_checksum_ok(ip))
        return false;
    // Only the sender's own endpoints (outside sources need the general path's NAT check).
    const auto vpc_index = static_cast<std::uint32_t>(vpc - fabric_->vpcs().data());
    const detail::EndpointRoute* sender = state_.route(vpc_index, address_of(word_at(ip + 12)));
    if (sender == nullptr || &fabric_->nodes()[sender->node_index] != peer) return false;
    const detail::EndpointRoute* target = state_.route(vpc_index, address_of(word_at(ip + 16)));
    if (target == nullptr || target->port == kNoPort) return false;
    const PortId port = target->port;

    const std::uint32_t length = kEthernet + total;
    const wire::MacAddress& gateway_mac = vpc->gateway_mac;
    const PacketBuffer* in = input.buffer;
    std::uint8_t* out_frame;
    if (in != nullptr) {
        const PacketBuffer delivered{in->chunk, in->size, in->offset + static_cast<std::uint32_t>(packet.inner_offset),
                                     length};
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
    std::memcpy(out_frame, target->endpoint->mac.bytes().data(), 6);
    std::memcpy(out_frame + 6, gateway_mac.bytes().data(), 6);
    ++counters_.rx_underlay;
    ++counters_.decapsulated;
    ++counters_.delivered_from_fabric;
    result.verdict = Verdict::deliver;
    result.emissions = 1;
    return true;
}

}  // namespace andromeda::dataplane
