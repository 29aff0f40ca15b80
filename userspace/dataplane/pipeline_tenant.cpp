// Decisions for frames from tenant ports: port security, the distributed gateway, routing in the
// VPC, PMTUD. Only reads the frame; pipeline_execute.cpp carries the decision out.
#include <algorithm>
#include <optional>

#include "dataplane/frame_bytes.hpp"
#include "dataplane/pipeline.hpp"
#include "gateway/icmp_error.hpp"
#include "gateway/nd_proxy.hpp"
#include "gateway/router_advertisement.hpp"
#include "overlay/flow_hash.hpp"
#include "wire/arp.hpp"
#include "wire/dhcp.hpp"
#include "wire/dns.hpp"
#include "wire/icmp.hpp"
#include "wire/ip_protocol.hpp"
#include "wire/ipv6.hpp"
#include "wire/tcp.hpp"
#include "wire/udp.hpp"

namespace andromeda::dataplane {

using detail::ActionKind;

namespace {

// The largest inner IP packet behind `ethernet_length` bytes of inner Ethernet header that fits
// the underlay MTU and the VPC's MTU (shared/andromeda_overlay.h: the fast path's rule too).
std::uint32_t inner_ip_mtu(std::uint32_t underlay_mtu, std::uint32_t vpc_mtu, std::uint32_t ethernet_length) noexcept {
    return andromeda_inner_ip_mtu(vpc_mtu, underlay_mtu, ethernet_length);
}

constexpr wire::Ipv4Address kLimitedBroadcast{0xffffffffu};

}  // namespace

void Pipeline::decide_tenant(const detail::PortState& port, const Input& input, Action& a) {
    if (port.endpoint == nullptr) return a.drop(DropReason::tenant_port_unbound);
    const auto ethernet = wire::EthernetView::parse(input.bytes);
    if (!ethernet) return a.drop(DropReason::malformed_ethernet);
    const fabric::Endpoint& endpoint = *port.endpoint;
    if (ethernet->source() != endpoint.mac) return a.drop(DropReason::spoofed_source_mac);
    const std::uint16_t ethertype = ethernet->ethertype();
    if (ethertype == wire::ethertype::kArp) return decide_tenant_arp(endpoint, *ethernet, input, a);
    if (ethertype != wire::ethertype::kIpv4 && ethertype != wire::ethertype::kIpv6)
        return a.drop(DropReason::unsupported_ethertype);
    const detail::VpcState& vpc = state_.vpc(port.vpc_index);
    const wire::MacAddress destination = ethernet->destination();
    if (destination.is_multicast()) {
        if (ethertype == wire::ethertype::kIpv4 && decide_dhcp_broadcast(endpoint, vpc, *ethernet, input, a)) return;
        // Neighbor and Router Solicitations go to multicast groups; decide_tenant_ipv6 takes those.
        if (ethertype == wire::ethertype::kIpv6 && vpc.ipv6) return decide_tenant_ipv6(endpoint, vpc, *ethernet, input, a);
        // With VXLAN, decide_tenant_ipv4 floods it once its header and source are checked.
        if (ethertype == wire::ethertype::kIpv4 && floods(vpc))
            return decide_tenant_ipv4(endpoint, vpc, *ethernet, input, a);
        return a.drop(DropReason::multicast_or_broadcast);
    }
    if (destination != vpc.gateway.mac) return a.drop(DropReason::not_to_gateway_mac);
    if (ethertype == wire::ethertype::kIpv4) return decide_tenant_ipv4(endpoint, vpc, *ethernet, input, a);
    decide_tenant_ipv6(endpoint, vpc, *ethernet, input, a);
}

void Pipeline::decide_tenant_arp(const fabric::Endpoint& endpoint, const wire::EthernetView& ethernet,
                                 const Input& input, Action& a) {
    const auto arp = wire::ArpView::parse(ethernet.payload());
    if (!arp) return a.drop(DropReason::malformed_arp);
    const wire::Ipv4Address sender_ip = arp->sender_ip();
    if (arp->sender_mac() != endpoint.mac || (sender_ip != endpoint.ip && sender_ip.value() != 0))
        return a.drop(DropReason::spoofed_arp_sender);
    if (!arp->is_request()) return a.drop(DropReason::arp_not_request);
    if (sender_ip.value() == 0) return a.drop(DropReason::arp_probe);
    if (arp->target_ip() == endpoint.ip) return a.drop(DropReason::arp_for_own_address);
    reply_from_gateway(ActionKind::arp_reply, endpoint, state_.vpc(endpoint.vpc_index), input, a);
}

void Pipeline::reply_from_gateway(ActionKind kind, const fabric::Endpoint& endpoint, const detail::VpcState& vpc,
                                  const Input& input, Action& a) {
    if (!reply_limiter_.allow(gateway::RateLimitKey::of(vpc.vpc->vni, endpoint.ip)))
        return a.drop(DropReason::gateway_reply_rate_limited);
    a.kind = kind;
    a.port = input.port;
    a.vpc = &vpc;
}

// A DHCP client's broadcast (DISCOVER, a REQUEST while selecting or rebooting): UDP to port 67
// of 255.255.255.255, from 0.0.0.0 (no address yet) or the endpoint's own. Any other source is
// not this port's client; the broadcast is then dropped like any other.
bool Pipeline::decide_dhcp_broadcast(const fabric::Endpoint& endpoint, const detail::VpcState& vpc,
                                     const wire::EthernetView& ethernet, const Input& input, Action& a) {
    const auto ip = wire::Ipv4View::parse(ethernet.payload());
    if (!ip || ip->protocol() != wire::ip_protocol::kUdp || ip->is_fragment() || ip->destination() != kLimitedBroadcast)
        return false;
    if (ip->source().value() != 0 && ip->source() != endpoint.ip) return false;
    const auto udp = wire::UdpView::parse(ip->payload());
    if (!udp || udp->destination_port() != wire::kDhcpServerPort) return false;
    a.kind = ActionKind::dhcp;
    a.port = input.port;
    a.vpc = &vpc;
    return true;
}

// UDP or TCP to the gateway address from the endpoint (its source checked): a DHCP renewal (UDP
// 67) is the DHCP server's, DNS (UDP 53, and every segment of a TCP connection to port 53) the DNS
// service's; true with `a` set for those.
bool Pipeline::decide_gateway_port(const fabric::Endpoint& endpoint, const detail::VpcState& vpc,
                                   const wire::Ipv4View& ip, const Input& input, Action& a) {
    if (ip.is_fragment()) return false;
    const bool udp = ip.protocol() == wire::ip_protocol::kUdp;
    std::optional<std::uint16_t> port;
    if (udp) {
        if (const auto datagram = wire::UdpView::parse(ip.payload())) port = datagram->destination_port();
    } else if (ip.protocol() == wire::ip_protocol::kTcp) {
        if (const auto segment = wire::TcpView::parse(ip.payload())) port = segment->destination_port();
    }
    if (udp && port == wire::kDhcpServerPort) {
        a.kind = ActionKind::dhcp;
    } else if (port == wire::kDnsPort) {
        // Within the gateway's reply budget per source, with ARP and echo: one tenant's flood
        // must not fill the DNS service's queue for the others.
        if (!reply_limiter_.allow(gateway::RateLimitKey::of(endpoint.vni, endpoint.ip))) {
            a.drop(DropReason::gateway_reply_rate_limited);
            return true;
        }
        a.kind = ActionKind::dns_query;
    } else {
        return false;
    }
    a.port = input.port;
    a.vpc = &vpc;
    return true;
}

void Pipeline::decide_tenant_ipv4(const fabric::Endpoint& endpoint, const detail::VpcState& vpc,
                                  const wire::EthernetView& ethernet, const Input& input, Action& a) {
    const auto ip = wire::Ipv4View::parse(ethernet.payload());
    if (!ip) return a.drop(DropReason::malformed_ipv4);
    if (!ip->checksum_valid()) return a.drop(DropReason::bad_ipv4_checksum);
    if (ip->source() != endpoint.ip) return a.drop(DropReason::spoofed_source_ip);
    // (Only a VPC that floods gets here with a broadcast or multicast MAC: decide_tenant.)
    if (ethernet.destination().is_multicast())
        return flood_from_tenant(endpoint, vpc, ethernet, ip->packet().size(), input, a);
    const wire::Ipv4Address destination = ip->destination();
    if (detail::is_multicast_or_broadcast(destination)) return a.drop(DropReason::multicast_or_broadcast);
    if (destination == vpc.gateway.ipv4) {
        if (decide_gateway_port(endpoint, vpc, *ip, input, a)) return;
        if (ip->protocol() != wire::ip_protocol::kIcmp) return a.drop(DropReason::gateway_unsupported);
        return reply_from_gateway(ActionKind::echo_reply, endpoint, vpc, input, a);
    }
    if (vpc.firewall && !firewall_allows(endpoint, policy::PolicyDirection::egress, ip->packet(), a)) return;
    route_ipv4(vpc, endpoint.vpc_index, ethernet, *ip, input, Origin::tenant, a);
}

bool Pipeline::firewall_allows(const fabric::Endpoint& endpoint, policy::PolicyDirection direction,
                               wire::ByteSpan ip_packet, Action& a) {
    const policy::CheckResult verdict = firewall_->check(*policy_, endpoint, direction, ip_packet);
    if (verdict.allowed) return true;
    switch (verdict.outcome) {
        case policy::Outcome::fragment_unknown: a.drop(DropReason::policy_fragment_unknown); break;
        case policy::Outcome::table_full: a.drop(DropReason::firewall_table_full); break;
        default: a.drop(DropReason::policy_denied); break;
    }
    return false;
}

// IPv6 from a tenant (docs/ipv6.md). In a dual-stack VPC: the gateway answers Neighbor and Router
// Solicitations and echo requests to its addresses, and packets to the VPC's endpoints are routed
// as IPv4 is. In an IPv4-only VPC the packet is dropped, but one too big still learns the path
// MTU, so a tenant sizes its packets right once the VPC has a prefix.
void Pipeline::decide_tenant_ipv6(const fabric::Endpoint& endpoint, const detail::VpcState& vpc,
                                  const wire::EthernetView& ethernet, const Input& input, Action& a) {
    const auto ip = wire::Ipv6View::parse(ethernet.payload());
    if (!ip) return a.drop(DropReason::malformed_ipv6);
    if (!vpc.ipv6) {
        const std::uint32_t mtu = inner_ip_mtu(state_.encap_mtu(state_.underlay_mtu()), vpc.inner_mtu,
                                               static_cast<std::uint32_t>(ethernet.header_length()));
        if (ip->packet().size() <= mtu) return a.drop(DropReason::ipv6_not_routed);
        return packet_too_big(vpc, endpoint, *ip, mtu, input, a);
    }
    const gateway::Ipv6Gateway& gateway = *vpc.ipv6;
    // Anti-spoofing: the endpoint's address, the link-local one its MAC gives (what a Linux
    // interface takes by default), or :: for duplicate address detection's solicitations alone.
    const wire::Ipv6Address source = ip->source();
    const bool unspecified = wire::is_unspecified(source);
    if (!unspecified && !detail::owns_ipv6_source(endpoint, source)) return a.drop(DropReason::spoofed_source_ip);
    const gateway::TenantIcmpv6 icmpv6 = gateway::classify_icmpv6(*ip);
    switch (icmpv6) {
        case gateway::TenantIcmpv6::neighbor_solicitation: return decide_neighbor_solicitation(endpoint, vpc, input, a);
        case gateway::TenantIcmpv6::router_solicitation: return decide_router_solicitation(endpoint, vpc, input, a);
        case gateway::TenantIcmpv6::router_advertisement:
        case gateway::TenantIcmpv6::neighbor_advertisement:
        case gateway::TenantIcmpv6::redirect: return a.drop(DropReason::tenant_router_message);
        case gateway::TenantIcmpv6::multicast_listener: return a.drop(DropReason::mld_ignored);
        default: break;
    }
    if (unspecified) return a.drop(DropReason::spoofed_source_ip);
    const wire::Ipv6Address destination = ip->destination();
    if (wire::is_multicast(destination) || ethernet.destination().is_multicast()) {
        if (ethernet.destination().is_multicast() && floods(vpc))
            return flood_from_tenant(endpoint, vpc, ethernet, ip->packet().size(), input, a);
        return a.drop(DropReason::multicast_or_broadcast);
    }
    if (gateway.is_gateway_address(destination)) {
        if (icmpv6 != gateway::TenantIcmpv6::echo_request)
            return a.drop(DropReason::gateway_unsupported);
        return reply_from_gateway(ActionKind::echo6_reply, endpoint, vpc, input, a);
    }
    // Link-local addresses are the link's: never routed, in either position (RFC 4291 2.5.6).
    if (wire::is_link_local(destination) || wire::is_link_local(source)) return a.drop(DropReason::ipv6_not_routed);
    route_ipv6(endpoint, vpc, ethernet, *ip, input, a);
}

// A Neighbor Solicitation, multicast to the target's solicited-node group or unicast to the
// gateway MAC (neighbour unreachability detection): the ND proxy's verdict decides.
void Pipeline::decide_neighbor_solicitation(const fabric::Endpoint& endpoint, const detail::VpcState& vpc,
                                            const Input& input, Action& a) {
    const gateway::NdProxyReply verdict = gateway::judge_neighbor_solicitation(input.bytes, *vpc.ipv6, detail::ipv6_endpoint_of(endpoint));
    if (!verdict.answered())
        return a.drop(verdict.outcome == gateway::NdProxyOutcome::invalid ? DropReason::malformed_ndp
                                                                            : DropReason::nd_not_answered);
    reply_from_gateway(ActionKind::nd_advert, endpoint, vpc, input, a);
}

// A Router Solicitation: answered within the port's advertisement schedule (execute_router_advert).
void Pipeline::decide_router_solicitation(const fabric::Endpoint& endpoint, const detail::VpcState& vpc,
                                          const Input& input, Action& a) {
    const gateway::RouterAdvertisementReply verdict = gateway::judge_router_solicitation(input.bytes, *vpc.ipv6);
    if (!verdict.answered()) return a.drop(DropReason::malformed_ndp);
    reply_from_gateway(ActionKind::router_advert, endpoint, vpc, input, a);
}

void Pipeline::packet_too_big(const detail::VpcState& vpc, const fabric::Endpoint& endpoint, const wire::Ipv6View& ip,
                              std::uint32_t mtu, const Input& input, Action& a) {
    if (!gateway::icmpv6_error_allowed(ip, true)) return a.drop(DropReason::too_big_no_icmp);
    if (!icmp_limiter_.allow(gateway::RateLimitKey::of(vpc.vpc->vni, endpoint.ip)))
        return a.drop(DropReason::icmp_error_rate_limited);
    a.kind = ActionKind::packet_too_big;
    a.port = input.port;
    a.vpc = &vpc;
    a.mtu = mtu;
}

// To an endpoint of the VPC by its IPv6 address: delivered here or encapsulated towards its node.
// IPv6 routers never fragment: a packet the overlay cannot carry gets Packet Too Big.
void Pipeline::route_ipv6(const fabric::Endpoint& endpoint, const detail::VpcState& vpc,
                          const wire::EthernetView& ethernet, const wire::Ipv6View& ip, const Input& input, Action& a) {
    const detail::EndpointRoute* target = state_.route6(vpc, ip.destination());
    if (target == nullptr)
        return a.drop(vpc.ipv6->prefix().contains(ip.destination()) ? DropReason::no_such_endpoint
                                                                    : DropReason::ipv6_not_routed);
    // Security groups judge IPv6 as IPv4: egress at the sender, ingress at a receiver on this node.
    if (vpc.firewall && !firewall_allows(endpoint, policy::PolicyDirection::egress, ip.packet(), a)) return;
    const auto ethernet_length = static_cast<std::uint32_t>(ethernet.header_length());
    const auto frame_length = static_cast<std::uint32_t>(ethernet_length + ip.packet().size());
    if (target->is_local) {
        if (target->port == kNoPort) return a.drop(DropReason::endpoint_port_unbound);
        if (vpc.firewall && !firewall_allows(*target->endpoint, policy::PolicyDirection::ingress, ip.packet(), a))
            return;
        return deliver_locally(*target, vpc, frame_length, a);
    }
    std::uint32_t mtu = 0;
    overlay::OuterTemplate* outer = overlay_towards(target->node_index, vpc, ethernet_length, mtu, a);
    if (outer == nullptr) return;
    if (ip.packet().size() > mtu) return packet_too_big(vpc, endpoint, ip, mtu, input, a);
    encapsulate(outer, vpc, frame_length, ethernet_length, overlay::flow_hash_of_frame(input.bytes.first(frame_length)),
                a);
    a.rewrite_destination_mac = true;
    a.destination_mac = &target->endpoint->mac;
}

// Into `target`'s tenant port on this node, from the gateway MAC.
void Pipeline::deliver_locally(const detail::EndpointRoute& target, const detail::VpcState& vpc,
                               std::uint32_t frame_length, Action& a) {
    a.kind = ActionKind::deliver;
    a.port = target.port;
    a.frame_length = frame_length;
    a.destination_mac = &target.endpoint->mac;
    a.source_mac = &vpc.gateway.mac;
    a.local_delivery = true;
}

// The overlay towards node `node_index`: its outer template, and in `mtu` the largest inner IP
// packet it carries behind `ethernet_length` bytes of Ethernet header (a learned path MTU
// included). Null, with `a` dropped, when the node cannot be reached.
overlay::OuterTemplate* Pipeline::overlay_towards(std::uint32_t node_index, const detail::VpcState& vpc,
                                                  std::uint32_t ethernet_length, std::uint32_t& mtu, Action& a) {
    overlay::OuterTemplate* outer = state_.outer_template(node_index);
    const DropReason unreachable = state_.underlay_port() == kNoPort ? DropReason::no_underlay_port
                                   : !state_.local_address()         ? DropReason::no_underlay_address
                                   : outer == nullptr                ? DropReason::no_next_hop
                                                                     : DropReason::none;
    if (unreachable != DropReason::none) {
        a.drop(unreachable);
        return nullptr;
    }
    const std::uint32_t underlay_mtu =
        path_mtu_->empty() ? state_.encap_mtu(state_.underlay_mtu()) : learned_underlay_mtu(node_index);
    mtu = inner_ip_mtu(underlay_mtu, vpc.inner_mtu, ethernet_length);
    return outer;
}

void Pipeline::encapsulate(overlay::OuterTemplate* outer, const detail::VpcState& vpc, std::uint32_t frame_length,
                           std::uint32_t ethernet_length, std::uint16_t flow_hash, Action& a) {
    a.kind = ActionKind::encap;
    a.port = state_.underlay_port();
    a.frame_length = frame_length;
    a.ethernet_length = ethernet_length;
    a.outer = outer;
    a.overlay.vni = vpc.vpc->vni;
    a.overlay.flow_hash = flow_hash;
}

void Pipeline::route_ipv4(const detail::VpcState& vpc, std::uint32_t vpc_index, const wire::EthernetView& ethernet,
                          const wire::Ipv4View& ip, const Input& input, Origin origin, Action& a) {
    const std::uint32_t vni = vpc.vpc->vni;
    const wire::Ipv4Address destination = ip.destination();
    const auto frame_length = static_cast<std::uint32_t>(ethernet.header_length() + ip.packet().size());
    if (const detail::EndpointRoute* target = state_.route(vpc_index, destination)) {
        if (!target->is_local) {
            encapsulate_to(target->node_index, vpc, ethernet, ip, input, origin, a);
            a.rewrite_destination_mac = true;
            a.destination_mac = &target->endpoint->mac;
            return;
        }
        if (target->port == kNoPort) return a.drop(DropReason::endpoint_port_unbound);
        if (vpc.firewall && !firewall_allows(*target->endpoint, policy::PolicyDirection::ingress, ip.packet(), a))
            return;
        return deliver_locally(*target, vpc, frame_length, a);
    }
    if (vpc.vpc->contains(destination)) return a.drop(DropReason::no_such_endpoint);
    if (origin == Origin::nat || vpc.nat == detail::NatPlacement::none) return a.drop(DropReason::no_route);
    if (vpc.nat == detail::NatPlacement::other_node) {
        // No endpoint MAC to rewrite to: the NAT node routes the frame by its address.
        encapsulate_to(vpc.nat_node_index, vpc, ethernet, ip, input, origin, a);
        a.towards_nat_node = true;
        return;
    }
    a.kind = ActionKind::to_nat;
    a.nat = NatRequest{NatDirection::outbound, vni, vpc_index, 0, frame_length};
}

void Pipeline::encapsulate_to(std::uint32_t node_index, const detail::VpcState& vpc,
                              const wire::EthernetView& ethernet, const wire::Ipv4View& ip, const Input& input,
                              Origin origin, Action& a) {
    const auto ethernet_length = static_cast<std::uint32_t>(ethernet.header_length());
    std::uint32_t mtu = 0;
    overlay::OuterTemplate* outer = overlay_towards(node_index, vpc, ethernet_length, mtu, a);
    if (outer == nullptr) return;
    if (ip.packet().size() > mtu) {
        if (ip.dont_fragment()) return too_big(vpc, ip, mtu, input, origin, a);
        a.mtu = mtu;
    }
    encapsulate(outer, vpc, static_cast<std::uint32_t>(ethernet_length + ip.packet().size()), ethernet_length,
                detail::ipv4_flow_hash(ip.packet().data(), ip.header_length(), ip.packet().size()), a);
}

void Pipeline::too_big(const detail::VpcState& vpc, const wire::Ipv4View& ip, std::uint32_t mtu, const Input& input,
                       Origin origin, Action& a) {
    if (origin != Origin::tenant || !gateway::icmpv4_error_allowed(ip)) return a.drop(DropReason::too_big_no_icmp);
    if (!icmp_limiter_.allow(gateway::RateLimitKey::of(vpc.vpc->vni, ip.source())))
        return a.drop(DropReason::icmp_error_rate_limited);
    a.kind = ActionKind::frag_needed;
    a.port = input.port;
    a.vpc = &vpc;
    a.mtu = mtu;
}

std::size_t Pipeline::frag_needed_for_nat(std::uint32_t vni, wire::ByteSpan frame, const fabric::FabricSnapshot& fabric,
                                          wire::MutableByteSpan out) {
    prepare(fabric);
    const fabric::Vpc* vpc = fabric.find_vpc(vni);
    const auto ethernet = wire::EthernetView::parse(frame);
    if (vpc == nullptr || !ethernet || ethernet->ethertype() != wire::ethertype::kIpv4) return 0;
    const auto ip = wire::Ipv4View::parse(ethernet->payload());
    if (!ip || !ip->dont_fragment()) return 0;
    const auto vpc_index = static_cast<std::uint32_t>(vpc - fabric.vpcs().data());
    const detail::EndpointRoute* target = state_.route(vpc_index, ip->destination());
    if (target == nullptr || target->is_local) return 0;  // local delivery has no overlay
    const detail::VpcState& state = state_.vpc(vpc_index);
    const std::uint32_t mtu = inner_ip_mtu(learned_underlay_mtu(target->node_index), state.inner_mtu,
                                           static_cast<std::uint32_t>(ethernet->header_length()));
    if (ip->packet().size() <= mtu || !gateway::icmpv4_error_allowed(*ip)) return 0;
    if (!icmp_limiter_.allow(gateway::RateLimitKey::of(vni, ip->source()))) return 0;
    const gateway::IcmpErrorFrame error =
        gateway::write_fragmentation_needed(frame, static_cast<std::uint16_t>(mtu), state.gateway, icmp_ip_id_++, out);
    if (!error.written()) return 0;
    ++counters_.frag_needed_sent;
    return error.length;
}

}  // namespace andromeda::dataplane
