// Broadcast and multicast in a VXLAN fabric: head-end replication (docs/wire-format.md, "VXLAN").
//
// A VPC is one broadcast domain in VXLAN mode, as a kernel VXLAN device bridged to its tenants
// makes it on the other side: a tenant's broadcast or multicast frame (after the gateway took what
// is its own: ARP, DHCP, Neighbor and Router Solicitations, MLD) is copied to each other endpoint
// of its VPC on this node and, as one unicast VXLAN packet each, to every peer node that has an
// endpoint of the VPC. A peer's flooded frame is copied to this node's endpoints of the VPC and
// never sent on (split horizon: its sender replicated it to every node itself). Frames keep their
// MACs, as a bridge forwards them. Andromeda's own encapsulation never floods: its peers are
// routers, and the fabric carries unicast only. Nor does a VPC with security groups, whose rules
// judge flows between two endpoints.
#include <algorithm>
#include <cstring>

#include "dataplane/pipeline.hpp"
#include "gateway/nd_proxy.hpp"
#include "overlay/flow_hash.hpp"
#include "wire/checksum.hpp"

namespace andromeda::dataplane {

using detail::ActionKind;

bool Pipeline::floods(const detail::VpcState& vpc) const noexcept {
    return state_.decap_config().kind == overlay::EncapKind::vxlan && !vpc.firewall;
}

// `ethernet` is the tenant's frame, to a multicast or broadcast MAC, whose IP header (`ip_length`
// bytes of packet) the caller has checked, source address included.
void Pipeline::flood_from_tenant(const fabric::Endpoint& sender, const detail::VpcState& vpc,
                                 const wire::EthernetView& ethernet, std::size_t ip_length, const Input& input,
                                 Action& a) {
    const auto ethernet_length = static_cast<std::uint32_t>(ethernet.header_length());
    // Nothing tells a multicast sender its packet was too big (RFC 1812 4.3.2.7): dropped.
    if (ip_length > andromeda_inner_ip_mtu(vpc.inner_mtu, state_.encap_mtu(state_.underlay_mtu()), ethernet_length))
        return a.drop(DropReason::too_big_no_icmp);
    flood(sender, vpc, 0, ethernet_length + static_cast<std::uint32_t>(ip_length), input.port, true, a);
    if (a.kind == ActionKind::flood) {
        a.overlay.vni = vpc.vpc->vni;
        a.overlay.flow_hash = overlay::flow_hash_of_frame(input.bytes.first(a.frame_length));
    }
}

// A broadcast or multicast frame a VXLAN peer flooded to this node. Its sender is known by its MAC
// (an IPv6 multicast leaves from a link-local address, which names no endpoint): an endpoint the
// fabric places on that peer, sending from one of its own addresses.
void Pipeline::flood_from_peer(const overlay::Decapsulated& packet, std::uint32_t peer_index,
                               const detail::VpcState& vpc, const wire::EthernetView& ethernet, Action& a) {
    const detail::EndpointRoute* sender = state_.route_by_mac(vpc, ethernet.source());
    if (sender == nullptr || sender->node_index != peer_index) return a.drop(DropReason::fabric_spoofed_source);
    const fabric::Endpoint& endpoint = *sender->endpoint;
    std::size_t ip_length = 0;
    if (ethernet.ethertype() == wire::ethertype::kIpv4) {
        const auto ip = wire::Ipv4View::parse(ethernet.payload());
        if (!ip || ip->source() != endpoint.ip) return a.drop(DropReason::fabric_spoofed_source);
        ip_length = ip->packet().size();
    } else {
        const auto ip = wire::Ipv6View::parse(ethernet.payload());
        if (!ip) return a.drop(DropReason::malformed_inner_frame);
        // First what is no one's business here, from whatever source (a host sends its MLD
        // reports from :: until it has a link-local address, RFC 3590).
        switch (gateway::classify_icmpv6(*ip)) {
            case gateway::TenantIcmpv6::multicast_listener: return a.drop(DropReason::mld_ignored);
            case gateway::TenantIcmpv6::router_solicitation:
            case gateway::TenantIcmpv6::router_advertisement:
            case gateway::TenantIcmpv6::neighbor_advertisement:
            case gateway::TenantIcmpv6::redirect: return a.drop(DropReason::tenant_router_message);
            default: break;
        }
        const wire::Ipv6Address source = ip->source();
        if (!detail::owns_ipv6_source(endpoint, source)) return a.drop(DropReason::fabric_spoofed_source);
        ip_length = ip->packet().size();
    }
    flood(endpoint, vpc, static_cast<std::uint32_t>(packet.inner_offset),
          static_cast<std::uint32_t>(ethernet.header_length() + ip_length), kNoPort, false, a);
}

void Pipeline::flood(const fabric::Endpoint& sender, const detail::VpcState& vpc, std::uint32_t frame_offset,
                     std::uint32_t frame_length, PortId sender_port, bool to_peers, Action& a) {
    std::size_t copies = 0;
    for (const detail::EndpointRoute* member : vpc.local_members)
        copies += member->port != kNoPort && member->port != sender_port ? 1 : 0;
    to_peers = to_peers && state_.underlay_port() != kNoPort && state_.local_address();
    if (to_peers)
        for (const std::uint32_t node : vpc.flood_nodes) copies += state_.outer_template(node) != nullptr ? 1 : 0;
    if (copies == 0) return a.drop(DropReason::flood_no_members);
    if (!flood_limiter_.allow(gateway::RateLimitKey::of(vpc.vpc->vni, sender.mac)))
        return a.drop(DropReason::flood_rate_limited);
    a.kind = ActionKind::flood;
    a.vpc = &vpc;
    a.port = sender_port;
    a.flood_to_peers = to_peers;
    a.flood_copies = static_cast<std::uint16_t>(std::min<std::size_t>(copies, 0xffff));
    a.frame_offset = frame_offset;
    a.frame_length = frame_length;
}

// One copy per member, each in its own spare: the local ones as they came (counted as deliveries:
// delivered_local from a tenant, delivered_from_fabric from a peer), the peers' behind their outer
// headers (counted as encapsulations), so that every frame sent is counted once as what it is.
// A frame whose sender's kernel left its TCP/UDP checksum to an offload (a veth) is finished in
// every copy: a kernel peer would drop it, and so would a tenant. All or nothing: without spares
// and TX slots for every copy, none is sent.
void Pipeline::execute_flood(const Action& action, const Input& input, FrameSink& sink, FrameResult& result) {
    if (!sink.can_emit_spares(action.flood_copies)) {
        result.verdict = Verdict::drop;
        result.drop_reason = DropReason::no_tx_buffer;
        return;
    }
    const detail::VpcState& vpc = *action.vpc;
    const wire::ByteSpan frame = input.bytes.subspan(action.frame_offset, action.frame_length);
    const std::size_t l2 = wire::EthernetView::parse(frame)->header_length();
    // The frame into the next spare, `headroom` bytes in; an empty buffer when it does not fit.
    const auto copy_at = [&](std::uint32_t headroom) -> PacketBuffer {
        PacketBuffer out = sink.peek_spare();
        if (out.capacity() < headroom + frame.size()) return PacketBuffer{};
        std::uint8_t* inner = out.data() + headroom;
        std::memcpy(inner, frame.data(), frame.size());
        if (wire::finish_offloaded_checksum({inner + l2, frame.size() - l2})) ++counters_.checksums_finished;
        out.length = static_cast<std::uint32_t>(frame.size());
        return out;
    };
    std::size_t index = 0;
    for (const detail::EndpointRoute* member : vpc.local_members) {
        if (member->port == kNoPort || member->port == action.port) continue;
        const PacketBuffer out = copy_at(0);
        if (out.chunk == nullptr) break;
        sink.emit_spare(member->port, out);
        ++(action.port != kNoPort ? counters_.delivered_local : counters_.delivered_from_fabric);
        ++index;
    }
    if (action.flood_to_peers) {
        for (const std::uint32_t node : vpc.flood_nodes) {
            overlay::OuterTemplate* outer = state_.outer_template(node);
            if (outer == nullptr) continue;
            const auto outer_size = static_cast<std::uint32_t>(outer->header_size());
            PacketBuffer out = copy_at(outer_size);
            if (out.chunk == nullptr) break;
            const wire::MutableByteSpan packet =
                outer->encapsulate_in_place({out.data(), out.capacity()}, outer_size, out.length, action.overlay);
            if (packet.empty()) break;
            out.length = static_cast<std::uint32_t>(packet.size());
            sink.emit_spare(state_.underlay_port(), out);
            ++counters_.encapsulated;
            ++index;
        }
    }
    if (index == 0) {
        result.verdict = Verdict::drop;
        result.drop_reason = DropReason::tx_buffer_too_small;
        return;
    }
    counters_.flood_copies += index;
    ++counters_.flooded;
    result.verdict = Verdict::forward;
    result.emissions = static_cast<std::uint16_t>(index);
}

}  // namespace andromeda::dataplane
