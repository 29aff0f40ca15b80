// Entry points: snapshot-derived state, dispatch by port role, batches, counters; and, in the same
// translation unit so they inline into the dispatch, the express lanes.
//
// The express lanes for the two frames that are nearly all traffic: a tenant's untagged IPv4
// packet for a remote endpoint (encapsulate), and an overlay packet for a local endpoint
// (deliver). Same checks and outcome as the general path, done with fixed-offset loads; anything
// unusual (tags, options, errors to send, drops) returns false untouched and takes the general
// path, which then also names the drop reason.
#include "dataplane/pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

#include "dataplane/frame_bytes.hpp"
#include "overlay/andromeda_header.hpp"
#include "overlay/vxlan_header.hpp"

namespace andromeda::dataplane {

// --- express lanes ------------------------------------------------------------------------------
namespace {

constexpr std::uint32_t kOuter = overlay::kOuterHeadersSize;
constexpr std::size_t kEthernet = 14;

using detail::address_of;
using detail::native_word;

}  // namespace

bool Pipeline::express_encapsulate(const detail::PortState& port, const Input& input, FrameSink& sink) {
    const std::uint8_t* frame = input.bytes.data();
    const std::size_t size = input.bytes.size();
    if (size < kEthernet + 20 || !detail::is_ipv4_no_options(frame)) return false;
    if (!port.macs.starts(frame)) return false;  // to the gateway's MAC from the endpoint's
    const std::uint8_t* ip = frame + kEthernet;
    const std::uint32_t total = wire::load_be16(ip + 2);
    // 20 <= total <= size - 14 in one compare (size >= 34 above: a total under 20 wraps).
    if (total - 20 > size - kEthernet - 20 || total > port.untagged_mtu) return false;
    const std::uint32_t source = native_word(ip + 12);
    if (!wire::ipv4_header_checksum_ok(ip, 20) || source != port.endpoint_ip) return false;
    const std::uint32_t destination = native_word(ip + 16);
    const wire::Ipv4Address target_ip = address_of(destination);
    // No test for the gateway address or multicast/broadcast here: endpoints with such an
    // address get no `outer` (FabricState::build_routes), so the general path answers or drops.
    const std::uint32_t offset = target_ip.value() - port.direct_network;
    const detail::EndpointRoute* target =
        offset < port.direct_size ? port.direct_routes[offset] : state_.route(port.vpc_index, target_ip);
    if (target == nullptr || target->outer == nullptr || sink.free_slots() == 0) return false;
    // A path narrower than the underlay MTU towards the target's node: the general path sizes it.
    if (!path_mtu_->empty() && total > andromeda_inner_ip_mtu(state_.vpc(port.vpc_index).inner_mtu,
                                                              learned_underlay_mtu(target->node_index), kEthernet))
        return false;
    overlay::OuterTemplate* outer = target->outer;  // untagged: no encapsulating express lane with a VLAN
    const std::uint8_t* target_mac = target->macs.data();

    const std::uint32_t length = kEthernet + total;
    const std::uint16_t flow_hash = detail::ipv4_flow_hash(ip, 20, total, source, destination);
    const std::uint64_t header = outer->fresh_header_word(port.vni_bits, flow_hash);
    const PacketBuffer* in = input.buffer;
    if (in != nullptr && in->offset >= kOuter) {
        // Read before the stores below, which the compiler must assume may overwrite *in.
        const PacketBuffer buffer = *in;
        std::uint8_t* data = buffer.data();
        // The frame is in its chunk (length <= size, checked above) with room for the outer
        // headers in front, and far below kMaxInnerFrameSize: prepend_outer's preconditions.
        std::memcpy(data, target_mac, 6);
        outer->prepend_outer(data, length, header, flow_hash);
        sink.emit_input(state_.underlay_port(), PacketBuffer{buffer.chunk, buffer.size, buffer.offset - kOuter, length + kOuter},
                        input.index);
    } else {
        if (sink.free_spares() == 0) return false;
        PacketBuffer out = sink.peek_spare();
        // Frames longer than copy_frame copies inline go to libc memcpy, which measured 15 %
        // faster at 1396 bytes with the destination on a 16-byte boundary; the short inline
        // copy measured 5 % slower shifted so (pipeline_bench, UMEM-aligned chunks).
        if (length > wire::kInlineCopyMax) out.offset += (0u - (out.offset + kOuter)) & 15;
        if (out.offset > out.size || out.capacity() < length + kOuter) return false;
        // The MAC before the outer headers: an outer UDP checksum, when enabled, covers it.
        wire::copy_frame(out.data() + kOuter, input.bytes.data(), length);
        std::memcpy(out.data() + kOuter, target_mac, 6);
        outer->prepend_outer(out.data() + kOuter, length, header, flow_hash);
        out.length = length + kOuter;
        sink.emit_spare(state_.underlay_port(), out);
        if (in != nullptr) ++counters_.in_place_fallback_copies;
    }
    ++express_encapsulated_;  // and rx_tenant, encapsulated, forwarded: see counters()
    return true;
}

namespace {

// An overlay packet in its common form, as overlay::decapsulate would accept it.
struct CommonOverlay {
    std::uint32_t inner_offset = 0;
    std::uint32_t inner_length = 0;
    std::uint32_t vni_key = 0;      // the VNI as FabricState::vpc_by_vni_key() takes it
    std::uint32_t source_word = 0;  // the outer source address, network order
};

// Recognises the common form (untagged IPv4 without options, to this node, not fragmented, UDP
// to the overlay port without a checksum, Andromeda v1 without flags and with hop limit left, or
// VXLAN, around an inner frame of at least 34 bytes) and checks it exactly as
// overlay::decapsulate does; anything else is left to decapsulate() on the general path, which
// also names why it is refused.
[[gnu::always_inline]] inline bool parse_common_overlay(wire::ByteSpan packet, const detail::FabricState& state,
                                                        CommonOverlay& out) noexcept {
    constexpr std::uint32_t kInnerOffset = kEthernet + 20 + 8 + overlay::kOverlayHeaderSize;
    constexpr std::uint32_t kMinInner = kEthernet + 20;
    constexpr std::uint32_t kMinTotal = kInnerOffset - kEthernet + kMinInner;  // outer IPv4 total length
    const std::uint8_t* p = packet.data();
    const std::size_t size = packet.size();
    if (size < kEthernet + kMinTotal || !detail::is_ipv4_no_options(p)) return false;
    const std::uint8_t* ip = p + kEthernet;
    const std::uint32_t total = wire::load_be16(ip + 2);
    if (total - kMinTotal > size - kEthernet - kMinTotal) return false;  // kMinTotal <= total <= size - 14
    // Not a fragment (no MF, offset 0), UDP: bytes 6..9 are flags+offset, TTL, protocol.
    constexpr std::uint32_t kFragmentMask = detail::memory_word(0x3f, 0xff, 0, 0xff);
    constexpr std::uint32_t kUnfragmentedUdp = detail::memory_word(0, 0, 0, wire::ip_protocol::kUdp);
    if ((native_word(ip + 6) & kFragmentMask) != kUnfragmentedUdp || native_word(ip + 16) != state.local_address_word())
        return false;
    if (!wire::ipv4_header_checksum_ok(ip, 20)) return false;
    // The UDP header in one load: destination port and checksum (0) by mask, then the length.
    const std::uint8_t* udp = ip + 20;
    std::uint64_t udp_header;
    std::memcpy(&udp_header, udp, sizeof udp_header);
    if ((udp_header & detail::kUdpPortAndChecksumMask) != state.overlay_udp_word()) return false;
    const std::uint32_t udp_length = wire::load_be16(udp + 4);
    // kMinInner + 16 <= udp_length <= total - 20, in one compare (total >= kMinTotal above).
    if (udp_length - (kMinInner + 16) > total - kMinTotal) return false;
    const std::uint8_t* header = udp + 8;
    if (state.decap_config().kind == overlay::EncapKind::andromeda) {
        // Version 1 without flags, inner protocol Ethernet; hop limit left.
        constexpr std::uint16_t kVersionProtocol = static_cast<std::uint16_t>(
            detail::memory_word(overlay::kAndromedaVersion << 4, overlay::kInnerProtocolEthernet, 0, 0));
        std::uint16_t version_protocol;
        std::memcpy(&version_protocol, header, sizeof version_protocol);
        if (version_protocol != kVersionProtocol || header[7] == 0) return false;
    } else if ((header[0] & overlay::kVxlanFlagVniValid) == 0) {
        return false;
    }
    out.inner_offset = kInnerOffset;
    out.inner_length = udp_length - 8 - overlay::kOverlayHeaderSize;
    out.vni_key = native_word(header + 4) & detail::memory_word(0xff, 0xff, 0xff, 0);  // OuterTemplate::vni_word
    out.source_word = native_word(ip + 12);
    return true;
}

}  // namespace

bool Pipeline::express_deliver(const Input& input, FrameSink& sink) {
    CommonOverlay packet;
    // (A port gets this express lane only while this node's address is known: FabricState.)
    if (sink.free_slots() == 0 || !parse_common_overlay(input.bytes, state_, packet)) return false;
    const detail::VpcState* vpc = state_.vpc_by_vni_key(packet.vni_key);
    if (vpc == nullptr || vpc->firewall) return false;

    const std::uint8_t* inner = input.bytes.data() + packet.inner_offset;
    const std::uint32_t inner_size = packet.inner_length;  // at least 34 (parse_common_overlay)
    // Two loads, not is_ipv4_no_options' one: the inner frame starts 50 bytes into a frame that
    // starts on a cache line (UMEM chunks), so its bytes 12-15 straddle two lines.
    if (wire::load_be16(inner + 12) != wire::ethertype::kIpv4 || inner[kEthernet] != 0x45) return false;
    // A broadcast or multicast MAC is the general path's: with VXLAN it floods (pipeline_flood.cpp).
    if ((inner[0] & 1) != 0) return false;
    const std::uint8_t* ip = inner + kEthernet;
    const std::uint32_t total = wire::load_be16(ip + 2);
    // 20 <= total <= inner_size - 14 in one compare.
    if (total - 20 > inner_size - kEthernet - 20 || !wire::ipv4_header_checksum_ok(ip, 20)) return false;
    // Only the sending node's own endpoints (outside sources need the general path's NAT check).
    // peer_key names the node by the address its packets come from: this replaces looking the
    // outer source up as a node (never this one) and comparing the endpoint's node with it.
    const detail::EndpointRoute* sender = state_.route(*vpc, address_of(native_word(ip + 12)));
    const detail::EndpointRoute* target = state_.route(*vpc, address_of(native_word(ip + 16)));
    if (sender == nullptr || sender->peer_key != (detail::kPeerKeyTag | packet.source_word) || target == nullptr ||
        target->port == kNoPort)
        return false;
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
        // A long frame goes to the same offset within a cache line as its source, so memcpy's
        // aligned stores come with aligned loads: 22.2 -> 19.4 ns at 1396 bytes. (The inner
        // frame sits 50 bytes into a line; short copies measured no better moved.)
        if (length > wire::kInlineCopyMax)
            out.offset += (reinterpret_cast<std::uintptr_t>(inner) - reinterpret_cast<std::uintptr_t>(out.data())) & 63;
        if (out.offset > out.size || out.capacity() < length) return false;
        // Short frames inline, long ones through memcpy: with the per-packet checks trimmed,
        // the libc call and the spills around it measured 3 % more at both 60 and 1396 bytes.
        wire::copy_frame(out.data(), inner, length);
        out.length = length;
        out_frame = out.data();
        sink.emit_spare(port, out);
    }
    // Destination and source MAC: 12 bytes as 8 and 4.
    std::memcpy(out_frame, target->macs.data(), 8);
    std::memcpy(out_frame + 8, target->macs.data() + 8, 4);
    ++express_delivered_;  // and rx_underlay, decapsulated, delivered_from_fabric, delivered: see counters()
    return true;
}

FrameResult Pipeline::process_one(const Input& input, FrameSink& sink) {
    const detail::PortState* port = state_.port(input.port);
    if (port != nullptr) {  // an express lane counts what it handles
        if (port->express == detail::ExpressLane::encapsulate && express_encapsulate(*port, input, sink))
            return FrameResult{Verdict::forward, DropReason::none, 1, {}};
        if (port->express == detail::ExpressLane::deliver && express_deliver(input, sink))
            return FrameResult{Verdict::deliver, DropReason::none, 1, {}};
    }
    // A copy for the out-of-line stages, so that only this path needs the input in memory: with
    // `input` itself passed on, every frame stored it to the stack before trying the express lanes.
    const Input general = input;
    FrameResult result;
    Action action;
    decide(port, general, action);
    execute(action, general, sink, result);
    count(result);
    return result;
}

Pipeline::Pipeline(PipelineConfig config)
    : config_(std::move(config)),
      icmp_limiter_(config_.icmp_error_rate, config_.clock),
      reply_limiter_(config_.gateway_reply_rate, config_.clock),
      flood_limiter_(config_.flood_rate, config_.clock),
      path_mtu_(config_.peer_path_mtu ? config_.peer_path_mtu : std::make_shared<PeerPathMtu>()),
      firewall_(config_.firewall ? config_.firewall
                                 : std::make_shared<policy::Firewall>(policy::FirewallSettings{}, config_.clock)),
      dhcp_(config_.dhcp ? config_.dhcp : std::make_shared<GatewayDhcp>()),
      router_advertisements_(config_.router_advertisements ? config_.router_advertisements
                                                           : std::make_shared<GatewayRouterAdvertisements>()) {}

std::uint64_t Pipeline::now_ns() const {
    if (config_.clock) return config_.clock();
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

std::uint32_t Pipeline::learned_underlay_mtu(std::uint32_t node_index) const {
    const std::uint32_t configured = state_.encap_mtu(state_.underlay_mtu());
    if (node_index >= fabric_->nodes().size()) return configured;
    const std::optional<wire::IpAddress>& address = fabric_->nodes()[node_index].address;
    if (!address) return configured;
    // What was learned is the outer packets' path MTU: sized as configured's for IPv4 outer headers.
    const std::uint32_t path = path_mtu_->mtu(*address, now_ns());
    const std::uint32_t learned = path != 0 ? state_.encap_mtu(path) : 0;
    return learned != 0 && learned < configured ? learned : configured;
}

void Pipeline::set_next_hop(const wire::IpAddress& node_address, const wire::MacAddress& mac) {
    auto it = std::find_if(config_.next_hops.begin(), config_.next_hops.end(),
                           [&](const NextHop& hop) { return hop.node_address == node_address; });
    if (it != config_.next_hops.end())
        it->mac = mac;
    else
        config_.next_hops.push_back(NextHop{node_address, mac});
    state_.invalidate();
}

void Pipeline::set_ports(std::vector<PortBinding> ports) {
    config_.ports = std::move(ports);
    state_.invalidate();
}

void Pipeline::prepare(const fabric::FabricSnapshot& fabric) {
    fabric_ = &fabric;
    if (state_.is_current(fabric)) return;
    state_.rebuild(fabric, config_);
    policy_ = firewall_->policy_for(fabric);
    ++counters_.fabric_rebuilds;
}

FrameResult Pipeline::process(PortId port, wire::ByteSpan frame, const fabric::FabricSnapshot& fabric,
                              FrameSink& sink) {
    prepare(fabric);
    return process_one(Input{frame, nullptr, -1, port}, sink);
}

FrameResult Pipeline::process_in_place(PortId port, const PacketBuffer& frame, const fabric::FabricSnapshot& fabric,
                                       FrameSink& sink) {
    prepare(fabric);
    return process_one(Input{wire::ByteSpan(frame.data(), frame.length), &frame, 0, port}, sink);
}

std::size_t Pipeline::process_batch(std::span<const RxFrame> frames, const fabric::FabricSnapshot& fabric,
                                    FrameSink& sink, std::span<FrameResult> results) {
    prepare(fabric);
    const std::size_t count = std::min({frames.size(), results.size(), kMaxBatch});
    for (std::size_t i = 0; i < count; ++i) {
        // Two frames ahead: its headers are read, and the line before them is where the outer
        // headers go. UMEM chunks share cache sets (2 KiB stride), so they are often not in L1.
        if (i + 2 < count) {
            const std::uint8_t* ahead = frames[i + 2].buffer.data();
            __builtin_prefetch(ahead);
            __builtin_prefetch(ahead - overlay::kOuterHeadersSize, 1);
        }
        const RxFrame& rx = frames[i];
        results[i] = process_one(
            Input{wire::ByteSpan(rx.buffer.data(), rx.buffer.length), &rx.buffer, static_cast<std::int32_t>(i), rx.port},
            sink);
    }
    return count;
}

void Pipeline::decide(const detail::PortState* port, const Input& input, Action& a) {
    if (port == nullptr) return a.drop(DropReason::unknown_port);
    switch (port->role) {
        case PortRole::tenant:
            ++counters_.rx_tenant;
            return decide_tenant(*port, input, a);
        case PortRole::underlay:
            ++counters_.rx_underlay;
            return decide_underlay(input, a);
        case PortRole::uplink:
            ++counters_.rx_uplink;
            return decide_uplink(input, a);
    }
}

FrameResult Pipeline::route_from_nat(std::uint32_t vni, wire::ByteSpan frame, const fabric::FabricSnapshot& fabric,
                                     FrameSink& sink) {
    prepare(fabric);
    ++counters_.rx_from_nat;
    const Input input{frame, nullptr, -1, kNoPort};
    FrameResult result;
    Action action;
    const fabric::Vpc* vpc = fabric.find_vpc(vni);
    const auto ethernet = wire::EthernetView::parse(frame);
    const auto ip = ethernet && ethernet->ethertype() == wire::ethertype::kIpv4 ? wire::Ipv4View::parse(ethernet->payload())
                                                                               : wire::Parsed<wire::Ipv4View>(wire::ParseError::None);
    if (vpc == nullptr) {
        action.drop(DropReason::unknown_vni);
    } else if (!ethernet) {
        action.drop(DropReason::malformed_ethernet);
    } else if (ethernet->ethertype() != wire::ethertype::kIpv4) {
        action.drop(DropReason::unsupported_ethertype);
    } else if (!ip) {
        action.drop(DropReason::malformed_ipv4);
    } else if (!ip->checksum_valid()) {
        action.drop(DropReason::bad_ipv4_checksum);
    } else {
        const auto vpc_index = static_cast<std::uint32_t>(vpc - fabric.vpcs().data());
        route_ipv4(state_.vpc(vpc_index), vpc_index, *ethernet, *ip, input, Origin::nat, action);
    }
    execute(action, input, sink, result);
    count(result);
    return result;
}

void Pipeline::count(const FrameResult& result) noexcept {
    switch (result.verdict) {
        case Verdict::forward: ++counters_.forwarded; break;
        case Verdict::deliver: ++counters_.delivered; break;
        case Verdict::reply: ++counters_.replied; break;
        case Verdict::to_nat: ++counters_.to_nat; break;
        case Verdict::drop:
            ++counters_.dropped;
            if (std::uint64_t* c = drop_counter(counters_.drops, result.drop_reason)) ++*c;
            break;
    }
}

}  // namespace andromeda::dataplane
