#include "gateway/router_advertisement.hpp"

#include <algorithm>
#include <optional>
#include <span>

#include "gateway/icmpv6_frame.hpp"
#include "wire/ethernet.hpp"
#include "wire/ip_protocol.hpp"
#include "wire/ipv6.hpp"
#include "wire/ndp.hpp"

namespace andromeda::gateway {

namespace {

// The servers advertised: at most kMaxDnsServers even from a config nobody checked, so the
// message never outgrows kMaxRouterAdvertisementFrame.
std::span<const wire::Ipv6Address> advertised_dns_servers(const Ipv6Gateway& gateway) noexcept {
    const auto& servers = gateway.config().dns_servers;
    return std::span<const wire::Ipv6Address>(servers).first(std::min(servers.size(), kMaxDnsServers));
}

std::size_t rdnss_length(const Ipv6Gateway& gateway) noexcept {
    const std::size_t servers = advertised_dns_servers(gateway).size();
    return servers == 0 ? 0 : 8 + 16 * servers;
}

// The message at the start of `out` (room already checked); its checksum is left 0.
void write_message(wire::MutableByteSpan out, const Ipv6Gateway& gateway, bool ceasing) noexcept {
    const Ipv6GatewayConfig& config = gateway.config();
    const RouterAdvertisementConfig& ra = config.router_advertisements;
    wire::RouterAdvertisementHeader header;
    header.current_hop_limit = ra.current_hop_limit;
    header.managed = ra.managed;
    header.other_configuration = ra.other_configuration;
    header.router_preference = ra.router_preference;
    header.router_lifetime = ceasing ? 0 : ra.router_lifetime_s;
    header.reachable_time = ra.reachable_time_ms;
    header.retrans_timer = ra.retrans_timer_ms;
    wire::write_router_advertisement(out, header);

    wire::NdpOptionWriter options(out.subspan(wire::kRouterAdvertisementLength));
    options.link_layer_address(wire::ndp_option::kSourceLinkLayerAddress, gateway.mac());
    options.mtu(config.mtu);
    options.prefix_information(wire::PrefixInformation{config.prefix.length(), ra.on_link, ra.autonomous,
                                                       ra.valid_lifetime_s, ra.preferred_lifetime_s,
                                                       config.prefix.network()});
    if (const auto servers = advertised_dns_servers(gateway); !servers.empty())
        options.recursive_dns_servers(effective_dns_lifetime_s(ra), servers);
}

// Writes the whole advertisement frame; 0 when `out` is too small.
std::size_t write_advertisement(wire::MutableByteSpan out, const Ipv6Gateway& gateway,
                                const detail::Icmpv6FrameAddressing& addressing, bool ceasing) noexcept {
    const std::size_t message_length = router_advertisement_message_length(gateway);
    const std::size_t at = detail::write_icmpv6_frame_headers(out, addressing, message_length);
    if (at == 0) return 0;
    const wire::MutableByteSpan message = out.subspan(at, message_length);
    write_message(message, gateway, ceasing);
    detail::finish_icmpv6_checksum(message, addressing);
    return at + message_length;
}

struct Solicitation {
    RouterAdvertisementReply verdict;
    std::optional<wire::EthernetView> ethernet;
    wire::Ipv6Address source;
};

Solicitation read_solicitation(wire::ByteSpan frame, const Ipv6Gateway& gateway) noexcept {
    Solicitation s;
    const auto ethernet = wire::EthernetView::parse(frame);
    if (!ethernet || ethernet->ethertype() != wire::ethertype::kIpv6) return s;
    const auto ip = wire::Ipv6View::parse(ethernet->payload());
    if (!ip || ip->upper_layer_protocol() != wire::ip_protocol::kIcmpv6 || ip->fragment_offset() != 0) return s;
    const auto message = ip->upper_layer_payload();
    if (message.empty() || message[0] != wire::icmpv6_type::kRouterSolicitation) return s;
    const auto rs = wire::validate_router_solicitation(*ip);
    if (!rs) {
        s.verdict = {RouterSolicitationOutcome::invalid, rs.error(), 0};
        return s;
    }
    s.ethernet = *ethernet;
    s.source = ip->source();
    s.verdict.outcome = wire::is_unspecified(s.source) ? RouterSolicitationOutcome::answered_multicast
                                                       : RouterSolicitationOutcome::answered_unicast;
    s.verdict.length =
        ethernet->header_length() + wire::kIpv6HeaderLength + router_advertisement_message_length(gateway);
    return s;
}

}  // namespace

std::size_t router_advertisement_message_length(const Ipv6Gateway& gateway) noexcept {
    return wire::kRouterAdvertisementLength + wire::kLinkLayerAddressOptionLength + wire::kMtuOptionLength +
           wire::kPrefixInformationOptionLength + rdnss_length(gateway);
}

RouterAdvertisementReply judge_router_solicitation(wire::ByteSpan request_frame, const Ipv6Gateway& gateway) noexcept {
    return read_solicitation(request_frame, gateway).verdict;
}

RouterAdvertisementReply answer_router_solicitation(wire::ByteSpan request_frame, const Ipv6Gateway& gateway,
                                                    RouterAdvertisementSchedule& schedule, std::uint64_t now_ns,
                                                    wire::MutableByteSpan out) noexcept {
    const Solicitation s = read_solicitation(request_frame, gateway);
    if (!s.verdict.answered()) return s.verdict;
    if (out.size() < s.verdict.length) return {RouterSolicitationOutcome::no_room, wire::NdpError::None, 0};
    if (!schedule.may_answer(now_ns)) return {RouterSolicitationOutcome::deferred, wire::NdpError::None, 0};
    const bool multicast = s.verdict.outcome == RouterSolicitationOutcome::answered_multicast;

    detail::Icmpv6FrameAddressing addressing;
    addressing.request = &*s.ethernet;
    addressing.destination_mac = multicast ? wire::multicast_mac(wire::all_nodes_multicast()) : s.ethernet->source();
    addressing.source_mac = gateway.mac();
    addressing.source = gateway.link_local();
    addressing.destination = multicast ? wire::all_nodes_multicast() : s.source;
    addressing.hop_limit = wire::kNdpHopLimit;
    write_advertisement(out, gateway, addressing, false);
    schedule.answered(now_ns, multicast);
    return s.verdict;
}

std::size_t write_unsolicited_router_advertisement(const Ipv6Gateway& gateway, wire::MutableByteSpan out,
                                                   bool ceasing) noexcept {
    detail::Icmpv6FrameAddressing addressing;
    addressing.destination_mac = wire::multicast_mac(wire::all_nodes_multicast());
    addressing.source_mac = gateway.mac();
    addressing.source = gateway.link_local();
    addressing.destination = wire::all_nodes_multicast();
    addressing.hop_limit = wire::kNdpHopLimit;
    return write_advertisement(out, gateway, addressing, ceasing);
}

std::size_t advertise_if_due(const Ipv6Gateway& gateway, RouterAdvertisementSchedule& schedule, std::uint64_t now_ns,
                             wire::MutableByteSpan out) noexcept {
    if (!schedule.due(now_ns)) return 0;
    const std::size_t length = write_unsolicited_router_advertisement(gateway, out);
    if (length != 0) schedule.advertised(now_ns);
    return length;
}

std::string_view to_string(RouterSolicitationOutcome outcome) noexcept {
    switch (outcome) {
        case RouterSolicitationOutcome::answered_unicast:
            return "answered_unicast";
        case RouterSolicitationOutcome::answered_multicast:
            return "answered_multicast";
        case RouterSolicitationOutcome::deferred:
            return "deferred";
        case RouterSolicitationOutcome::not_router_solicitation:
            return "not_router_solicitation";
        case RouterSolicitationOutcome::invalid:
            return "invalid";
        case RouterSolicitationOutcome::no_room:
            return "no_room";
    }
    return "unknown";
}

}  // namespace andromeda::gateway
