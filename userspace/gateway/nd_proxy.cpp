#include "gateway/nd_proxy.hpp"

#include <algorithm>
#include <optional>

#include "gateway/icmpv6_frame.hpp"
#include "wire/ethernet.hpp"
#include "wire/ip_protocol.hpp"
#include "wire/ipv6.hpp"
#include "wire/ndp.hpp"

namespace andromeda::gateway {

namespace {

constexpr std::size_t kAdvertisementLength = wire::kNeighborAdvertisementLength + wire::kLinkLayerAddressOptionLength;

struct Solicitation {
    NdProxyReply verdict;
    std::optional<wire::EthernetView> ethernet;
    wire::Ipv6Address source;
    wire::Ipv6Address target;
    bool for_gateway = false;
};

bool is_neighbor_solicitation(const wire::Ipv6View& ip) noexcept {
    const auto message = ip.upper_layer_payload();
    return ip.upper_layer_protocol() == wire::ip_protocol::kIcmpv6 && ip.fragment_offset() == 0 && !message.empty() &&
           message[0] == wire::icmpv6_type::kNeighborSolicitation;
}

NdProxyOutcome judge(const Solicitation& s, const Ipv6Gateway& gateway, const Ipv6Endpoint& asker) noexcept {
    if (wire::is_unspecified(s.source)) return s.for_gateway ? NdProxyOutcome::defended : NdProxyOutcome::dad_probe;
    if (s.for_gateway) return NdProxyOutcome::advertised;
    if (s.target == s.source ||
        std::find(asker.addresses.begin(), asker.addresses.end(), s.target) != asker.addresses.end())
        return NdProxyOutcome::own_address;
    if (!gateway.prefix().contains(s.target)) return NdProxyOutcome::outside_vpc;
    return NdProxyOutcome::advertised;
}

// The solicitation in `frame`, checked (RFC 4861 7.1.1): false, with the verdict set, when there
// is none or it is invalid.
bool parse_solicitation(wire::ByteSpan frame, Solicitation& s) noexcept {
    const auto ethernet = wire::EthernetView::parse(frame);
    if (!ethernet || ethernet->ethertype() != wire::ethertype::kIpv6) return false;
    const auto ip = wire::Ipv6View::parse(ethernet->payload());
    if (!ip || !is_neighbor_solicitation(*ip)) return false;
    const auto ns = wire::validate_neighbor_solicitation(*ip);
    if (!ns) {
        s.verdict = {NdProxyOutcome::invalid, ns.error(), 0};
        return false;
    }
    s.ethernet = *ethernet;
    s.source = ip->source();
    s.target = ns->target();
    return true;
}

std::size_t advertisement_length(const wire::EthernetView& request) noexcept {
    return request.header_length() + wire::kIpv6HeaderLength + kAdvertisementLength;
}

Solicitation read_solicitation(wire::ByteSpan frame, const Ipv6Gateway& gateway, const Ipv6Endpoint& asker) noexcept {
    Solicitation s;
    if (!parse_solicitation(frame, s)) return s;
    s.for_gateway = gateway.is_gateway_address(s.target);
    s.verdict.outcome = judge(s, gateway, asker);
    if (s.verdict.answered()) s.verdict.length = advertisement_length(*s.ethernet);
    return s;
}

}  // namespace

NdProxyReply judge_neighbor_solicitation(wire::ByteSpan request_frame, const Ipv6Gateway& gateway,
                                         const Ipv6Endpoint& asker) noexcept {
    return read_solicitation(request_frame, gateway, asker).verdict;
}

NdProxyReply write_neighbor_advertisement_reply(wire::ByteSpan request_frame, const Ipv6Gateway& gateway,
                                                const Ipv6Endpoint& asker, wire::MutableByteSpan out) noexcept {
    const Solicitation s = read_solicitation(request_frame, gateway, asker);
    if (!s.verdict.answered()) return s.verdict;
    const bool defending = s.verdict.outcome == NdProxyOutcome::defended;

    detail::Icmpv6FrameAddressing addressing;
    addressing.request = &*s.ethernet;
    addressing.destination_mac = defending ? wire::multicast_mac(wire::all_nodes_multicast()) : s.ethernet->source();
    addressing.source_mac = gateway.mac();
    addressing.source = s.for_gateway ? s.target : gateway.source_for(s.source);
    addressing.destination = defending ? wire::all_nodes_multicast() : s.source;
    addressing.hop_limit = wire::kNdpHopLimit;
    const std::size_t at = detail::write_icmpv6_frame_headers(out, addressing, kAdvertisementLength);
    if (at == 0) return {NdProxyOutcome::no_room, wire::NdpError::None, 0};

    const wire::MutableByteSpan message = out.subspan(at, kAdvertisementLength);
    const wire::NeighborAdvertisementHeader header{true, !defending, s.for_gateway, s.target};
    wire::write_neighbor_advertisement(message, header);
    wire::NdpOptionWriter options(message.subspan(wire::kNeighborAdvertisementLength));
    options.link_layer_address(wire::ndp_option::kTargetLinkLayerAddress, gateway.mac());
    detail::finish_icmpv6_checksum(message, addressing);
    return s.verdict;
}

namespace {

// A host's verdict: it answers for itself, never DAD and never the asker's own address.
Solicitation read_host(wire::ByteSpan frame) noexcept {
    Solicitation s;
    if (!parse_solicitation(frame, s)) return s;
    s.verdict.outcome = wire::is_unspecified(s.source) ? NdProxyOutcome::dad_probe
                        : s.target == s.source         ? NdProxyOutcome::own_address
                                                       : NdProxyOutcome::advertised;
    if (s.verdict.answered()) s.verdict.length = advertisement_length(*s.ethernet);
    return s;
}

}  // namespace

HostSolicitation read_host_solicitation(wire::ByteSpan request_frame) noexcept {
    const Solicitation s = read_host(request_frame);
    return {s.verdict, s.source, s.target};
}

NdProxyReply write_host_neighbor_advertisement(wire::ByteSpan request_frame, const wire::MacAddress& target_mac,
                                               wire::MutableByteSpan out) noexcept {
    const Solicitation s = read_host(request_frame);
    if (!s.verdict.answered()) return s.verdict;
    detail::Icmpv6FrameAddressing addressing;
    addressing.request = &*s.ethernet;
    addressing.destination_mac = s.ethernet->source();
    addressing.source_mac = target_mac;
    addressing.source = s.target;
    addressing.destination = s.source;
    addressing.hop_limit = wire::kNdpHopLimit;
    const std::size_t at = detail::write_icmpv6_frame_headers(out, addressing, kAdvertisementLength);
    if (at == 0) return {NdProxyOutcome::no_room, wire::NdpError::None, 0};
    const wire::MutableByteSpan message = out.subspan(at, kAdvertisementLength);
    wire::write_neighbor_advertisement(message, wire::NeighborAdvertisementHeader{false, true, true, s.target});
    wire::NdpOptionWriter options(message.subspan(wire::kNeighborAdvertisementLength));
    options.link_layer_address(wire::ndp_option::kTargetLinkLayerAddress, target_mac);
    detail::finish_icmpv6_checksum(message, addressing);
    return s.verdict;
}

std::string_view to_string(NdProxyOutcome outcome) noexcept {
    switch (outcome) {
        case NdProxyOutcome::advertised:
            return "advertised";
        case NdProxyOutcome::defended:
            return "defended";
        case NdProxyOutcome::not_neighbor_solicitation:
            return "not_neighbor_solicitation";
        case NdProxyOutcome::invalid:
            return "invalid";
        case NdProxyOutcome::dad_probe:
            return "dad_probe";
        case NdProxyOutcome::own_address:
            return "own_address";
        case NdProxyOutcome::outside_vpc:
            return "outside_vpc";
        case NdProxyOutcome::no_room:
            return "no_room";
    }
    return "unknown";
}

}  // namespace andromeda::gateway
