// Decisions for frames from the underlay (overlay packets from peer nodes) and the uplink.
#include "dataplane/pipeline.hpp"
#include "dataplane/underlay_pmtu.hpp"
#include "gateway/nd_proxy.hpp"
#include "overlay/decap.hpp"
#include "overlay/flow_hash.hpp"
#include "wire/arp.hpp"

namespace andromeda::dataplane {

using detail::ActionKind;

namespace {

// Host traffic the XDP program should have passed vs. a broken or hostile overlay packet.
DropReason drop_reason_of(overlay::DecapError error) noexcept {
    switch (error) {
        case overlay::DecapError::not_ipv4:
        case overlay::DecapError::not_udp:
        case overlay::DecapError::ipv6_extension_header:  // the prefilter steers only UDP right after IPv6
        case overlay::DecapError::wrong_udp_port: return DropReason::underlay_not_overlay;
        default: return DropReason::malformed_overlay;
    }
}

}  // namespace

void Pipeline::decide_underlay(const Input& input, Action& a) {
    const overlay::DecapResult decap = overlay::decapsulate(input.bytes, state_.decap_config());
    if (!decap.ok()) {
        if (decap.error == overlay::DecapError::not_udp) return read_underlay_icmp(input, a);
        if (std::uint64_t* c = decap_error_counter(counters_.decap_errors, decap.error)) ++*c;
        return a.drop(drop_reason_of(decap.error));
    }
    const overlay::Decapsulated& packet = decap.packet;
    // Another VLAN of the trunk. An untagged frame passes: a NIC with RX VLAN offload (and veth)
    // hands XDP the frame with its tag stripped, so "untagged" cannot be told from "ours".
    if (packet.outer_vlan_id != 0 && packet.outer_vlan_id != state_.underlay_vlan() && state_.underlay_vlan() != 0)
        return a.drop(DropReason::wrong_underlay_vlan);
    if (!state_.local_address()) return a.drop(DropReason::no_underlay_address);
    // A packet of the other family is not for this node: its address is of the underlay's.
    if (packet.outer_ipv6 ? *state_.local_address() != packet.outer_dst_ip6 : *state_.local_address() != packet.outer_dst_ip)
        return a.drop(DropReason::not_for_this_node);
    const fabric::Node* peer = packet.outer_ipv6 ? fabric_->find_node_by_address(packet.outer_src_ip6)
                                                 : fabric_->find_node_by_address(packet.outer_src_ip);
    if (peer == nullptr || peer->is_local) return a.drop(DropReason::unknown_peer);
    if (packet.flags != 0) return a.drop(DropReason::overlay_control_unsupported);
    if (packet.hop_limit == 0) return a.drop(DropReason::overlay_hop_limit_exceeded);
    const fabric::Vpc* vpc = fabric_->find_vpc(packet.vni);
    if (vpc == nullptr) return a.drop(DropReason::unknown_vni);

    const auto ethernet = wire::EthernetView::parse(packet.inner);
    if (!ethernet) return a.drop(DropReason::malformed_inner_frame);
    const auto peer_index = static_cast<std::uint32_t>(peer - fabric_->nodes().data());
    const auto vpc_index = static_cast<std::uint32_t>(vpc - fabric_->vpcs().data());
    if (ethernet->ethertype() == wire::ethertype::kIpv6)
        return decide_underlay_ipv6(packet, peer_index, vpc_index, *ethernet, a);
    // Only a VXLAN peer may be a bridge whose tenants resolve addresses over the overlay.
    const bool vxlan = state_.decap_config().kind == overlay::EncapKind::vxlan;
    if (ethernet->ethertype() == wire::ethertype::kArp && vxlan)
        return decide_underlay_arp(packet, peer_index, vpc_index, *ethernet, a);
    if (ethernet->ethertype() != wire::ethertype::kIpv4) return a.drop(DropReason::inner_not_ipv4);
    const auto ip = wire::Ipv4View::parse(ethernet->payload());
    if (!ip || !ip->checksum_valid()) return a.drop(DropReason::malformed_inner_frame);
    ++counters_.decapsulated;
    if (vxlan && ethernet->destination().is_multicast()) {
        const detail::VpcState& vpc_state = state_.vpc(vpc_index);
        if (!floods(vpc_state)) return a.drop(DropReason::multicast_or_broadcast);
        return flood_from_peer(packet, peer_index, vpc_state, *ethernet, a);
    }

    // The sender may only speak for its own endpoints, and for the outside world only when it is
    // the VPC's NAT node: a compromised or confused peer cannot inject traffic as someone else.
    const detail::VpcState& vpc_state = state_.vpc(vpc_index);
    const wire::Ipv4Address source = ip->source();
    if (vpc->contains(source)) {
        const detail::EndpointRoute* sender = state_.route(vpc_index, source);
        if (sender == nullptr || sender->node_index != peer_index) return a.drop(DropReason::fabric_spoofed_source);
    } else if (vpc_state.nat == detail::NatPlacement::none || vpc_state.nat_node_index != peer_index) {
        return a.drop(DropReason::fabric_spoofed_source);
    }

    const auto frame_offset = static_cast<std::uint32_t>(packet.inner_offset);
    const auto frame_length = static_cast<std::uint32_t>(ethernet->header_length() + ip->packet().size());
    const wire::Ipv4Address destination = ip->destination();
    const detail::EndpointRoute* target = state_.route(vpc_index, destination);
    if (target == nullptr && !vpc->contains(destination) && vpc_state.nat == detail::NatPlacement::this_node) {
        a.kind = ActionKind::to_nat;
        a.nat = NatRequest{NatDirection::outbound, packet.vni, vpc_index, frame_offset, frame_length};
        return;
    }
    if (target == nullptr || !target->is_local) return a.drop(DropReason::not_local_endpoint);
    a.port = target->port;
    if (a.port == kNoPort) return a.drop(DropReason::endpoint_port_unbound);
    if (vpc_state.firewall && !firewall_allows(*target->endpoint, policy::PolicyDirection::ingress, ip->packet(), a))
        return;
    a.kind = ActionKind::deliver;
    a.frame_offset = frame_offset;
    a.frame_length = frame_length;
    a.destination_mac = &target->endpoint->mac;
    a.source_mac = &vpc_state.gateway.mac;
}

// ARP from a tenant behind a VXLAN peer that is a bridge (the kernel's VXLAN: its tenants resolve
// each other's addresses by broadcast, which it floods to the VTEPs of its FDB). A request for an
// endpoint of this node is answered for it, with the endpoint's MAC, back over the overlay to the
// asking node, so that side needs no static neighbour entries (ARP suppression: Andromeda answers,
// it never floods). The asker must be an endpoint the fabric places on that node, by its address
// and MAC; a request for anyone else is left to its own node (`overlay_resolution_not_ours`).
void Pipeline::decide_underlay_arp(const overlay::Decapsulated& packet, std::uint32_t peer_index,
                                   std::uint32_t vpc_index, const wire::EthernetView& ethernet, Action& a) {
    const auto arp = wire::ArpView::parse(ethernet.payload());
    if (!arp) return a.drop(DropReason::malformed_arp);
    if (!arp->is_request()) return a.drop(DropReason::arp_not_request);
    if (arp->sender_ip().value() == 0) return a.drop(DropReason::arp_probe);
    const detail::EndpointRoute* sender = state_.route(vpc_index, arp->sender_ip());
    if (sender == nullptr || sender->node_index != peer_index || sender->endpoint->mac != arp->sender_mac() ||
        ethernet.source() != arp->sender_mac())
        return a.drop(DropReason::fabric_spoofed_source);
    const detail::EndpointRoute* target = state_.route(vpc_index, arp->target_ip());
    if (target == nullptr || !target->is_local) return a.drop(DropReason::overlay_resolution_not_ours);
    answer_over_overlay(ActionKind::overlay_arp_reply, packet, peer_index, state_.vpc(vpc_index), *sender->endpoint,
                        *target->endpoint, ethernet, a);
}

// The answer of `target` (an endpoint of this node) to `asker`'s ARP request or Neighbor
// Solicitation in `packet`, written and encapsulated towards the asker's node by the execution
// stage, within the gateway's reply budget for the asker.
void Pipeline::answer_over_overlay(ActionKind kind, const overlay::Decapsulated& packet, std::uint32_t peer_index,
                                   const detail::VpcState& vpc, const fabric::Endpoint& asker,
                                   const fabric::Endpoint& target, const wire::EthernetView& ethernet, Action& a) {
    if (!reply_limiter_.allow(gateway::RateLimitKey::of(vpc.vpc->vni, asker.ip)))
        return a.drop(DropReason::gateway_reply_rate_limited);
    std::uint32_t mtu = 0;
    const auto ethernet_length = static_cast<std::uint32_t>(ethernet.header_length());
    overlay::OuterTemplate* outer = overlay_towards(peer_index, vpc, ethernet_length, mtu, a);
    if (outer == nullptr) return;
    a.kind = kind;
    a.port = state_.underlay_port();
    a.outer = outer;
    a.overlay.vni = vpc.vpc->vni;
    a.overlay.flow_hash = overlay::flow_hash_of_frame(packet.inner);
    a.frame_offset = static_cast<std::uint32_t>(packet.inner_offset);
    a.frame_length = static_cast<std::uint32_t>(packet.inner.size());
    a.source_mac = &target.mac;
}

// A Neighbor Solicitation from a VXLAN peer's tenant (decide_underlay_arp's IPv6 counterpart):
// for an endpoint of this node, from the asker's global address (an endpoint the fabric places on
// the sending node, with its MAC), answered as the endpoint, with its MAC. DAD is never answered.
void Pipeline::decide_underlay_solicitation(const overlay::Decapsulated& packet, std::uint32_t peer_index,
                                            const detail::VpcState& vpc, const wire::EthernetView& ethernet,
                                            Action& a) {
    const gateway::HostSolicitation s = gateway::read_host_solicitation(packet.inner);
    if (s.verdict.outcome == gateway::NdProxyOutcome::invalid) return a.drop(DropReason::malformed_ndp);
    if (!s.verdict.answered()) return a.drop(DropReason::nd_not_answered);
    const detail::EndpointRoute* sender = state_.route6(vpc, s.source);
    if (sender == nullptr || sender->node_index != peer_index || sender->endpoint->mac != ethernet.source())
        return a.drop(DropReason::fabric_spoofed_source);
    const detail::EndpointRoute* target = state_.route6(vpc, s.target);
    if (target == nullptr || !target->is_local) return a.drop(DropReason::overlay_resolution_not_ours);
    answer_over_overlay(ActionKind::overlay_nd_advert, packet, peer_index, vpc, *sender->endpoint, *target->endpoint,
                        ethernet, a);
}

// Inner IPv6 of a dual-stack VPC: from an endpoint of the sending node, to an endpoint of this one
// (no IPv6 NAT: nothing else is carried), delivered with the gateway MAC as its source.
void Pipeline::decide_underlay_ipv6(const overlay::Decapsulated& packet, std::uint32_t peer_index,
                                    std::uint32_t vpc_index, const wire::EthernetView& ethernet, Action& a) {
    const detail::VpcState& vpc = state_.vpc(vpc_index);
    if (!vpc.ipv6) return a.drop(DropReason::inner_not_ipv4);
    const auto ip = wire::Ipv6View::parse(ethernet.payload());
    if (!ip) return a.drop(DropReason::malformed_inner_frame);
    ++counters_.decapsulated;
    if (state_.decap_config().kind == overlay::EncapKind::vxlan) {
        if (gateway::classify_icmpv6(*ip) == gateway::TenantIcmpv6::neighbor_solicitation)
            return decide_underlay_solicitation(packet, peer_index, vpc, ethernet, a);
        if (ethernet.destination().is_multicast()) {
            if (!floods(vpc)) return a.drop(DropReason::multicast_or_broadcast);
            return flood_from_peer(packet, peer_index, vpc, ethernet, a);
        }
    }
    const detail::EndpointRoute* sender = state_.route6(vpc, ip->source());
    if (sender == nullptr || sender->node_index != peer_index) return a.drop(DropReason::fabric_spoofed_source);
    const detail::EndpointRoute* target = state_.route6(vpc, ip->destination());
    if (target == nullptr || !target->is_local) return a.drop(DropReason::not_local_endpoint);
    a.port = target->port;
    if (a.port == kNoPort) return a.drop(DropReason::endpoint_port_unbound);
    if (vpc.firewall && !firewall_allows(*target->endpoint, policy::PolicyDirection::ingress, ip->packet(), a))
        return;
    a.kind = ActionKind::deliver;
    a.frame_offset = static_cast<std::uint32_t>(packet.inner_offset);
    a.frame_length = static_cast<std::uint32_t>(ethernet.header_length() + ip->packet().size());
    a.destination_mac = &target->endpoint->mac;
    a.source_mac = &vpc.gateway.mac;
}

// What the XDP prefilter steers here besides overlay packets: "fragmentation needed" (ICMP) or
// Packet Too Big (ICMPv6, over an IPv6 underlay) about one of this node's outer packets. Believed
// only about our own packet to a peer node of the fabric and with a plausible MTU below
// underlay_mtu; then that peer's path MTU is lowered (or refreshed) for every worker and, through
// the daemon, the fast path (IPv4's). Anything else is the host's traffic the prefilter should
// have passed.
void Pipeline::read_underlay_icmp(const Input& input, Action& a) {
    const std::optional<wire::IpAddress>& local = state_.local_address();
    const overlay::DecapConfig& decap = state_.decap_config();
    const std::uint16_t port = decap.udp_port != 0 ? decap.udp_port : overlay::default_udp_port(decap.kind);
    OuterFragNeededReport report;
    if (local && local->ipv4())
        report = parse_outer_frag_needed(input.bytes, *local->ipv4(), port);
    else if (local && local->ipv6())
        report = parse_outer_packet_too_big(input.bytes, *local->ipv6(), port);
    if (report.kind == OuterFragNeeded::not_frag_needed) {
        ++counters_.decap_errors.not_udp;
        return a.drop(DropReason::underlay_not_overlay);
    }
    const fabric::Node* peer = report.kind == OuterFragNeeded::ours ? fabric_->find_node_by_address(report.peer) : nullptr;
    if (peer != nullptr && !peer->is_local &&
        plausible_path_mtu(report.mtu, state_.underlay_mtu(), report.peer.is_ipv6()) &&
        path_mtu_->learn(report.peer, report.mtu, now_ns()))
        ++counters_.underlay_pmtu_learned;
    else
        ++counters_.underlay_pmtu_ignored;
    a.drop(DropReason::underlay_icmp_read);
}

void Pipeline::decide_uplink(const Input& input, Action& a) {
    if (!state_.is_nat_gateway()) return a.drop(DropReason::uplink_without_nat);
    if (!wire::EthernetView::parse(input.bytes)) return a.drop(DropReason::malformed_ethernet);
    a.kind = ActionKind::to_nat;
    a.nat = NatRequest{NatDirection::inbound, 0, fabric::kNoIndex, 0, static_cast<std::uint32_t>(input.bytes.size())};
}

}  // namespace andromeda::dataplane
