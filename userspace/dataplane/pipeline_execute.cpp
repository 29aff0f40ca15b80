// Carrying out a decision: in place in the input chunk when there is one, otherwise (and for
// fragments and ICMP errors always) in the sink's spare chunks.
#include <algorithm>
#include <cstring>

#include "dataplane/ipv4_fragmenter.hpp"
#include "dataplane/pipeline.hpp"
#include "gateway/icmp_echo.hpp"
#include "gateway/icmp_error.hpp"
#include "gateway/nd_proxy.hpp"
#include "gateway/proxy_arp.hpp"
#include "wire/checksum.hpp"
#include "wire/ethernet.hpp"

namespace andromeda::dataplane {

using detail::ActionKind;

namespace {

void dropped(FrameResult& result, DropReason reason) noexcept {
    result.verdict = Verdict::drop;
    result.drop_reason = reason;
}

void emitted(FrameResult& result, Verdict verdict, std::size_t emissions) noexcept {
    result.verdict = verdict;
    result.emissions = static_cast<std::uint16_t>(emissions);
}

void set_macs(std::uint8_t* frame, const wire::MacAddress& destination, const wire::MacAddress& source) noexcept {
    std::memcpy(frame, destination.bytes().data(), 6);
    std::memcpy(frame + 6, source.bytes().data(), 6);
}

}  // namespace

void Pipeline::execute(const Action& action, const Input& input, FrameSink& sink, FrameResult& result) {
    switch (action.kind) {
        case ActionKind::drop: return dropped(result, action.reason);
        case ActionKind::encap:
            if (action.mtu != 0) return execute_fragmented_encap(action, input, sink, result);
            return execute_encap(action, input, sink, result);
        case ActionKind::deliver: return execute_deliver(action, input, sink, result);
        case ActionKind::arp_reply: return execute_arp_reply(action, input, sink, result);
        case ActionKind::overlay_arp_reply:
        case ActionKind::overlay_nd_advert: return execute_overlay_answer(action, input, sink, result);
        case ActionKind::echo_reply:
        case ActionKind::echo6_reply: return execute_echo_reply(action, input, sink, result);
        case ActionKind::frag_needed:
        case ActionKind::packet_too_big: return execute_icmp_error(action, input, sink, result);
        case ActionKind::dhcp: return execute_dhcp(action, input, sink, result);
        case ActionKind::dns_query: return execute_dns_query(action, input, result);
        case ActionKind::nd_advert: return execute_nd_advert(action, input, sink, result);
        case ActionKind::router_advert: return execute_router_advert(action, input, sink, result);
        case ActionKind::flood: return execute_flood(action, input, sink, result);
        case ActionKind::to_nat:
            result.verdict = Verdict::to_nat;
            result.nat = action.nat;
            return;
    }
}

void Pipeline::execute_encap(const Action& action, const Input& input, FrameSink& sink, FrameResult& result) {
    if (sink.free_slots() == 0) return dropped(result, DropReason::no_tx_buffer);
    const auto outer_size = static_cast<std::uint32_t>(action.outer->header_size());  // 50; 54 with a VLAN tag
    const PacketBuffer* in = input.buffer;
    if (action.frame_length > overlay::kMaxInnerFrameSize) return dropped(result, DropReason::tx_buffer_too_small);
    if (in != nullptr && in->offset + action.frame_offset >= outer_size) {
        // The MAC goes first: an outer UDP checksum, when enabled, covers the inner frame.
        std::uint8_t* inner = in->data() + action.frame_offset;
        if (action.rewrite_destination_mac) action.destination_mac->copy_to(inner);
        const wire::MutableByteSpan outer = action.outer->encapsulate_in_place(
            {in->chunk, in->size}, in->offset + action.frame_offset, action.frame_length, action.overlay);
        if (outer.empty()) return dropped(result, DropReason::tx_buffer_too_small);
        const auto offset = static_cast<std::uint32_t>(outer.data() - in->chunk);
        sink.emit_input(action.port, PacketBuffer{in->chunk, in->size, offset, static_cast<std::uint32_t>(outer.size())},
                        input.index);
    } else {
        if (sink.free_spares() == 0) return dropped(result, DropReason::no_tx_buffer);
        PacketBuffer out = sink.peek_spare();
        if (out.capacity() < outer_size + action.frame_length) return dropped(result, DropReason::tx_buffer_too_small);
        // Copied in, the MAC rewritten, then the outer headers: their UDP checksum (always over
        // IPv6) covers the inner frame as it is sent.
        wire::copy_frame(out.data() + outer_size, input.bytes.data() + action.frame_offset, action.frame_length);
        if (action.rewrite_destination_mac) action.destination_mac->copy_to(out.data() + outer_size);
        const wire::MutableByteSpan outer = action.outer->encapsulate_in_place({out.data(), out.capacity()}, outer_size,
                                                                               action.frame_length, action.overlay);
        if (outer.empty()) return dropped(result, DropReason::tx_buffer_too_small);
        out.length = static_cast<std::uint32_t>(outer.size());
        sink.emit_spare(action.port, out);
        if (in != nullptr) ++counters_.in_place_fallback_copies;
    }
    ++counters_.encapsulated;
    if (action.towards_nat_node) ++counters_.sent_to_nat_gateway;
    emitted(result, Verdict::forward, 1);
}

void Pipeline::execute_fragmented_encap(const Action& action, const Input& input, FrameSink& sink, FrameResult& result) {
    const wire::ByteSpan frame = input.bytes.subspan(action.frame_offset, action.frame_length);
    const auto ip = wire::Ipv4View::parse(frame.subspan(action.ethernet_length));
    const Ipv4Fragmenter fragmenter(frame, action.ethernet_length, *ip, action.mtu);
    if (!fragmenter.valid()) return dropped(result, DropReason::malformed_ipv4);
    const std::size_t count = fragmenter.count();
    if (!sink.can_emit_spares(count)) return dropped(result, DropReason::no_tx_buffer);
    const auto outer_size = static_cast<std::uint32_t>(action.outer->header_size());
    for (std::size_t i = 0; i < count; ++i)
        if (sink.peek_spare(i).capacity() < outer_size + fragmenter.frame_length(i))
            return dropped(result, DropReason::tx_buffer_too_small);
    for (std::size_t i = 0; i < count; ++i) {
        PacketBuffer out = sink.peek_spare();
        const std::size_t length = fragmenter.write(i, {out.data() + outer_size, out.capacity() - outer_size});
        if (action.rewrite_destination_mac) action.destination_mac->copy_to(out.data() + outer_size);
        // Every fragment carries the whole packet's flow hash: one ECMP path, no reordering.
        const wire::MutableByteSpan outer =
            action.outer->encapsulate_in_place({out.data(), out.capacity()}, outer_size, length, action.overlay);
        out.length = static_cast<std::uint32_t>(outer.size());
        sink.emit_spare(action.port, out);
    }
    counters_.encapsulated += count;
    counters_.fragments_sent += count;
    ++counters_.packets_fragmented;
    if (action.towards_nat_node) ++counters_.sent_to_nat_gateway;
    emitted(result, Verdict::forward, count);
}

// A frame from the fabric whose sender's kernel left its checksum to an offload no device
// performed (wire::finish_offloaded_checksum): finished here, so that the tenant does not drop it.
void Pipeline::finish_checksum(const Action& action, PacketBuffer& frame) {
    if (action.local_delivery || frame.length <= wire::kEthernetHeaderLength) return;
    if (wire::finish_offloaded_checksum({frame.data() + wire::kEthernetHeaderLength,
                                         frame.length - wire::kEthernetHeaderLength}))
        ++counters_.checksums_finished;
}

void Pipeline::execute_deliver(const Action& action, const Input& input, FrameSink& sink, FrameResult& result) {
    if (sink.free_slots() == 0) return dropped(result, DropReason::no_tx_buffer);
    const PacketBuffer* in = input.buffer;
    if (in != nullptr) {
        PacketBuffer out{in->chunk, in->size, in->offset + action.frame_offset, action.frame_length};
        set_macs(out.data(), *action.destination_mac, *action.source_mac);
        finish_checksum(action, out);
        sink.emit_input(action.port, out, input.index);
    } else {
        if (sink.free_spares() == 0) return dropped(result, DropReason::no_tx_buffer);
        PacketBuffer out = sink.peek_spare();
        if (out.capacity() < action.frame_length) return dropped(result, DropReason::tx_buffer_too_small);
        std::memcpy(out.data(), input.bytes.data() + action.frame_offset, action.frame_length);
        set_macs(out.data(), *action.destination_mac, *action.source_mac);
        out.length = action.frame_length;
        finish_checksum(action, out);
        sink.emit_spare(action.port, out);
    }
    ++(action.local_delivery ? counters_.delivered_local : counters_.delivered_from_fabric);
    emitted(result, Verdict::deliver, 1);
}

void Pipeline::execute_arp_reply(const Action& action, const Input& input, FrameSink& sink, FrameResult& result) {
    if (sink.free_slots() == 0) return dropped(result, DropReason::no_tx_buffer);
    const wire::MacAddress& gateway_mac = action.vpc->gateway.mac;
    if (const PacketBuffer* in = input.buffer) {
        const gateway::ProxyArpReply reply = gateway::proxy_arp_reply_in_place(in->bytes(), gateway_mac);
        if (!reply.answered()) return dropped(result, DropReason::malformed_arp);
        sink.emit_input(action.port, PacketBuffer{in->chunk, in->size, in->offset, static_cast<std::uint32_t>(reply.length)},
                        input.index);
    } else {
        if (sink.free_spares() == 0) return dropped(result, DropReason::no_tx_buffer);
        PacketBuffer out = sink.peek_spare();
        const gateway::ProxyArpReply reply =
            gateway::write_proxy_arp_reply(input.bytes, gateway_mac, {out.data(), out.capacity()});
        if (reply.outcome == gateway::ProxyArpOutcome::no_room) return dropped(result, DropReason::tx_buffer_too_small);
        if (!reply.answered()) return dropped(result, DropReason::malformed_arp);
        out.length = static_cast<std::uint32_t>(reply.length);
        sink.emit_spare(action.port, out);
    }
    ++counters_.arp_replies;
    emitted(result, Verdict::reply, 1);
}

// The answer to an ARP request or Neighbor Solicitation a VXLAN peer's tenant sent over the
// overlay (decide_underlay_arp, decide_underlay_solicitation): written for the endpoint (its MAC
// as the sender) into a spare buffer behind room for the outer headers, then encapsulated towards
// the asking node.
void Pipeline::execute_overlay_answer(const Action& action, const Input& input, FrameSink& sink, FrameResult& result) {
    if (sink.free_slots() == 0 || sink.free_spares() == 0) return dropped(result, DropReason::no_tx_buffer);
    const auto outer_size = static_cast<std::uint32_t>(action.outer->header_size());
    PacketBuffer out = sink.peek_spare();
    if (out.capacity() <= outer_size) return dropped(result, DropReason::tx_buffer_too_small);
    const wire::ByteSpan request = input.bytes.subspan(action.frame_offset, action.frame_length);
    const wire::MutableByteSpan room{out.data() + outer_size, out.capacity() - outer_size};
    const bool arp = action.kind == ActionKind::overlay_arp_reply;
    std::size_t length = 0;
    if (arp) {
        const gateway::ProxyArpReply reply = gateway::write_proxy_arp_reply(request, *action.source_mac, room);
        if (reply.outcome == gateway::ProxyArpOutcome::no_room) return dropped(result, DropReason::tx_buffer_too_small);
        if (!reply.answered()) return dropped(result, DropReason::malformed_arp);
        length = reply.length;
    } else {
        const gateway::NdProxyReply reply = gateway::write_host_neighbor_advertisement(request, *action.source_mac, room);
        if (reply.outcome == gateway::NdProxyOutcome::no_room) return dropped(result, DropReason::tx_buffer_too_small);
        if (!reply.answered()) return dropped(result, DropReason::malformed_ndp);
        length = reply.length;
    }
    const wire::MutableByteSpan outer =
        action.outer->encapsulate_in_place({out.data(), out.capacity()}, outer_size, length, action.overlay);
    if (outer.empty()) return dropped(result, DropReason::tx_buffer_too_small);
    out.length = static_cast<std::uint32_t>(outer.size());
    sink.emit_spare(action.port, out);
    ++(arp ? counters_.overlay_arp_replies : counters_.overlay_neighbor_advertisements);
    ++counters_.encapsulated;
    emitted(result, Verdict::forward, 1);
}

namespace {

// The gateway's echo reply to the request `bytes` (`in`: its chunk, for the in-place variant), from
// an IPv4 gateway::GatewayAddress or an IPv6 gateway::Ipv6Gateway; false with `result` dropped
// when none goes out.
bool refused(FrameResult& result, DropReason reason) noexcept {
    dropped(result, reason);
    return false;
}

template <class Gateway>
bool emit_echo_reply(const Gateway& gateway, const PacketBuffer* in, wire::ByteSpan bytes, std::int32_t index,
                     PortId port, FrameSink& sink, FrameResult& result) {
    if (sink.free_slots() == 0) return refused(result, DropReason::no_tx_buffer);
    if (in != nullptr) {
        const gateway::EchoReply reply = gateway::echo_reply_in_place(in->bytes(), gateway);
        if (!reply.replied()) return refused(result, DropReason::gateway_unsupported);
        sink.emit_input(port,
                        PacketBuffer{in->chunk, in->size, in->offset + static_cast<std::uint32_t>(reply.offset),
                                     static_cast<std::uint32_t>(reply.length)},
                        index);
        return true;
    }
    if (sink.free_spares() == 0) return refused(result, DropReason::no_tx_buffer);
    PacketBuffer out = sink.peek_spare();
    const gateway::EchoReply reply = gateway::write_echo_reply(bytes, gateway, {out.data(), out.capacity()});
    if (reply.outcome == gateway::EchoOutcome::no_room) return refused(result, DropReason::tx_buffer_too_small);
    if (!reply.replied()) return refused(result, DropReason::gateway_unsupported);
    out.length = static_cast<std::uint32_t>(reply.length);
    sink.emit_spare(port, out);
    return true;
}

}  // namespace

// ICMP and ICMPv6 echo to the gateway's addresses.
void Pipeline::execute_echo_reply(const Action& action, const Input& input, FrameSink& sink, FrameResult& result) {
    const bool replied =
        action.kind == ActionKind::echo6_reply
            ? emit_echo_reply(*action.vpc->ipv6, input.buffer, input.bytes, input.index, action.port, sink, result)
            : emit_echo_reply(action.vpc->gateway, input.buffer, input.bytes, input.index, action.port, sink, result);
    if (!replied) return;
    ++counters_.echo_replies;
    emitted(result, Verdict::reply, 1);
}

void Pipeline::execute_icmp_error(const Action& action, const Input& input, FrameSink& sink, FrameResult& result) {
    if (!sink.can_emit_spares(1)) return dropped(result, DropReason::no_tx_buffer);
    PacketBuffer out = sink.peek_spare();
    const wire::MutableByteSpan room{out.data(), out.capacity()};
    const bool ipv4 = action.kind == ActionKind::frag_needed;
    const gateway::IcmpErrorFrame error =
        ipv4 ? gateway::write_fragmentation_needed(input.bytes, static_cast<std::uint16_t>(action.mtu),
                                                   action.vpc->gateway, icmp_ip_id_++, room)
             : gateway::write_packet_too_big(input.bytes, action.mtu, action.vpc->gateway.mac,
                                             action.vpc->gateway_ipv6, room);
    if (error.outcome == gateway::IcmpErrorOutcome::no_room) return dropped(result, DropReason::tx_buffer_too_small);
    if (!error.written()) return dropped(result, DropReason::too_big_no_icmp);
    out.length = static_cast<std::uint32_t>(error.length);
    sink.emit_spare(action.port, out);
    ++(ipv4 ? counters_.frag_needed_sent : counters_.packet_too_big_sent);
    emitted(result, Verdict::reply, 1);
}

namespace {

// What the DHCP server tells the endpoint behind a tenant port: its static lease and the VPC's
// parameters (docs/vm-tenants.md). Built per message: DHCP is a few messages per client per day.
gateway::DhcpEndpoint dhcp_endpoint(const fabric::Endpoint& e, const detail::VpcState& vpc) {
    gateway::DhcpEndpoint d;
    d.scope = e.vni;
    d.mac = e.mac;
    d.address = e.ip;
    for (const wire::Ipv4Prefix& cidr : vpc.vpc->cidrs)
        if (cidr.contains(e.ip)) {
            d.prefix_length = cidr.length();
            break;
        }
    d.gateway = vpc.gateway;
    d.dns_server = vpc.gateway.ipv4;  // the gateway's resolver
    d.mtu = static_cast<std::uint16_t>(std::min<std::uint32_t>(vpc.inner_mtu, 0xffff));
    d.domain_name = vpc.vpc->name + ".internal";
    d.host_name = e.name;
    return d;
}

}  // namespace

void Pipeline::execute_dhcp(const Action& action, const Input& input, FrameSink& sink, FrameResult& result) {
    const detail::PortState* port = state_.port(action.port);
    if (port == nullptr || port->endpoint == nullptr) return dropped(result, DropReason::tenant_port_unbound);
    if (!sink.can_emit_spares(1)) return dropped(result, DropReason::no_tx_buffer);
    PacketBuffer out = sink.peek_spare();
    const gateway::DhcpReply reply =
        dhcp_->handle(input.bytes, dhcp_endpoint(*port->endpoint, *action.vpc), now_ns(), {out.data(), out.capacity()});
    if (reply.outcome == gateway::DhcpOutcome::no_room) return dropped(result, DropReason::tx_buffer_too_small);
    if (!reply.replied()) return dropped(result, DropReason::dhcp_no_reply);
    out.length = static_cast<std::uint32_t>(reply.length);
    sink.emit_spare(action.port, out);
    ++counters_.dhcp_replies;
    emitted(result, Verdict::reply, 1);
}

void Pipeline::execute_dns_query(const Action& action, const Input& input, FrameResult& result) {
    if (!config_.dns || !config_.dns->submit(action.vpc->vpc->vni, action.port, input.bytes))
        return dropped(result, DropReason::dns_not_served);
    ++counters_.dns_queries;
    emitted(result, Verdict::reply, 0);  // answered later, by the DNS service, into the port
}

// The ND proxy's advertisement (the decision judged the solicitation), into a spare: an
// advertisement may be longer than the solicitation it answers.
void Pipeline::execute_nd_advert(const Action& action, const Input& input, FrameSink& sink, FrameResult& result) {
    const detail::PortState* port = state_.port(action.port);
    if (port == nullptr || port->endpoint == nullptr) return dropped(result, DropReason::tenant_port_unbound);
    if (!sink.can_emit_spares(1)) return dropped(result, DropReason::no_tx_buffer);
    PacketBuffer out = sink.peek_spare();
    const gateway::NdProxyReply reply = gateway::write_neighbor_advertisement_reply(
        input.bytes, *action.vpc->ipv6, detail::ipv6_endpoint_of(*port->endpoint), {out.data(), out.capacity()});
    if (reply.outcome == gateway::NdProxyOutcome::no_room) return dropped(result, DropReason::tx_buffer_too_small);
    if (!reply.answered()) return dropped(result, DropReason::nd_not_answered);
    out.length = static_cast<std::uint32_t>(reply.length);
    sink.emit_spare(action.port, out);
    ++counters_.neighbor_advertisements;
    emitted(result, Verdict::reply, 1);
}

// A Router Solicitation's answer, within the port's schedule shared with the daemon's unsolicited
// advertisements: within 3 s of the last one it is left to the next (router_solicitation_deferred).
void Pipeline::execute_router_advert(const Action& action, const Input& input, FrameSink& sink, FrameResult& result) {
    if (!sink.can_emit_spares(1)) return dropped(result, DropReason::no_tx_buffer);
    PacketBuffer out = sink.peek_spare();
    const gateway::RouterAdvertisementReply reply = router_advertisements_->answer(
        action.port, input.bytes, *action.vpc->ipv6, now_ns(), {out.data(), out.capacity()});
    if (reply.outcome == gateway::RouterSolicitationOutcome::deferred)
        return dropped(result, DropReason::router_solicitation_deferred);
    if (reply.outcome == gateway::RouterSolicitationOutcome::no_room)
        return dropped(result, DropReason::tx_buffer_too_small);
    if (!reply.answered()) return dropped(result, DropReason::malformed_ndp);
    out.length = static_cast<std::uint32_t>(reply.length);
    sink.emit_spare(action.port, out);
    ++counters_.router_advertisements;
    emitted(result, Verdict::reply, 1);
}

}  // namespace andromeda::dataplane
