#include "wire/ndp.hpp"

#include <algorithm>

#include "wire/checksum.hpp"
#include "wire/ip_protocol.hpp"
#include "wire/ipv6_addressing.hpp"

namespace andromeda::wire {

namespace {

// The rules every ND message shares (RFC 4861 6.1, 7.1, RFC 6980 5), then its view.
template <class View>
Parsed<View, NdpError> validate_common(const Ipv6View& ip) noexcept {
    if (ip.upper_layer_protocol() != ip_protocol::kIcmpv6) return NdpError::NotIcmpv6;
    if (ip.has_fragment_header()) return NdpError::Fragmented;
    if (ip.hop_limit() != kNdpHopLimit) return NdpError::BadHopLimit;
    const ByteSpan message = ip.upper_layer_payload();
    auto view = View::parse(message);
    if (!view) return view.error();
    if (view->code() != 0) return NdpError::BadCode;
    if (!checksum_verifies(message, ip.pseudo_header_sum())) return NdpError::BadChecksum;
    if (!view->options().link_layer_options_are_ethernet()) return NdpError::BadLinkLayerOption;
    if (is_multicast(ip.source())) return NdpError::MulticastSource;
    return view;
}

bool has_source_link_layer_option(const NdpMessage& message) noexcept {
    return message.options().find(ndp_option::kSourceLinkLayerAddress).has_value();
}

std::size_t write_fixed(MutableByteSpan out, std::uint8_t type, std::size_t length) noexcept {
    if (out.size() < length) return 0;
    std::fill_n(out.begin(), length, std::uint8_t{0});
    out[0] = type;
    return length;
}

}  // namespace

NdpError NdpMessage::check(ByteSpan message, std::uint8_t type, std::size_t fixed_length,
                           NdpOptions& options) noexcept {
    if (message.size() < kIcmpHeaderLength) return NdpError::Truncated;
    if (message[0] != type) return NdpError::WrongType;
    if (message.size() < fixed_length) return NdpError::Truncated;
    const auto parsed = NdpOptions::parse(message.subspan(fixed_length));
    if (!parsed) return parsed.error();
    options = *parsed;
    return NdpError::None;
}

Parsed<RouterSolicitationView, NdpError> RouterSolicitationView::parse(ByteSpan message) noexcept {
    NdpOptions options;
    const NdpError error = check(message, icmpv6_type::kRouterSolicitation, kRouterSolicitationLength, options);
    if (error != NdpError::None) return error;
    return RouterSolicitationView(message, options);
}

Parsed<RouterAdvertisementView, NdpError> RouterAdvertisementView::parse(ByteSpan message) noexcept {
    NdpOptions options;
    const NdpError error = check(message, icmpv6_type::kRouterAdvertisement, kRouterAdvertisementLength, options);
    if (error != NdpError::None) return error;
    return RouterAdvertisementView(message, options);
}

Parsed<NeighborSolicitationView, NdpError> NeighborSolicitationView::parse(ByteSpan message) noexcept {
    NdpOptions options;
    const NdpError error = check(message, icmpv6_type::kNeighborSolicitation, kNeighborSolicitationLength, options);
    if (error != NdpError::None) return error;
    return NeighborSolicitationView(message, options);
}

Parsed<NeighborAdvertisementView, NdpError> NeighborAdvertisementView::parse(ByteSpan message) noexcept {
    NdpOptions options;
    const NdpError error = check(message, icmpv6_type::kNeighborAdvertisement, kNeighborAdvertisementLength, options);
    if (error != NdpError::None) return error;
    return NeighborAdvertisementView(message, options);
}

Parsed<RouterSolicitationView, NdpError> validate_router_solicitation(const Ipv6View& ip) noexcept {
    auto rs = validate_common<RouterSolicitationView>(ip);
    if (rs && is_unspecified(ip.source()) && has_source_link_layer_option(*rs))
        return NdpError::UnspecifiedSourceWithLinkLayerOption;
    return rs;
}

Parsed<RouterAdvertisementView, NdpError> validate_router_advertisement(const Ipv6View& ip) noexcept {
    auto ra = validate_common<RouterAdvertisementView>(ip);
    if (ra && !is_link_local(ip.source())) return NdpError::NotLinkLocalSource;
    return ra;
}

Parsed<NeighborSolicitationView, NdpError> validate_neighbor_solicitation(const Ipv6View& ip) noexcept {
    auto ns = validate_common<NeighborSolicitationView>(ip);
    if (!ns) return ns;
    if (is_multicast(ns->target())) return NdpError::MulticastTarget;
    if (is_unspecified(ip.source())) {
        if (!is_solicited_node_multicast(ip.destination())) return NdpError::UnspecifiedSourceNotToSolicitedNode;
        if (has_source_link_layer_option(*ns)) return NdpError::UnspecifiedSourceWithLinkLayerOption;
    }
    return ns;
}

Parsed<NeighborAdvertisementView, NdpError> validate_neighbor_advertisement(const Ipv6View& ip) noexcept {
    auto na = validate_common<NeighborAdvertisementView>(ip);
    if (!na) return na;
    if (is_multicast(na->target())) return NdpError::MulticastTarget;
    if (is_multicast(ip.destination()) && na->solicited()) return NdpError::SolicitedToMulticast;
    return na;
}

std::size_t write_router_solicitation(MutableByteSpan out) noexcept {
    return write_fixed(out, icmpv6_type::kRouterSolicitation, kRouterSolicitationLength);
}

std::size_t write_router_advertisement(MutableByteSpan out, const RouterAdvertisementHeader& header) noexcept {
    if (header.router_preference > 3) return 0;
    const std::size_t length = write_fixed(out, icmpv6_type::kRouterAdvertisement, kRouterAdvertisementLength);
    if (length == 0) return 0;
    out[4] = header.current_hop_limit;
    out[5] = static_cast<std::uint8_t>((header.managed ? 0x80 : 0) | (header.other_configuration ? 0x40 : 0) |
                                       header.router_preference << 3);
    store_be16(&out[6], header.router_lifetime);
    store_be32(&out[8], header.reachable_time);
    store_be32(&out[12], header.retrans_timer);
    return length;
}

std::size_t write_neighbor_solicitation(MutableByteSpan out, const Ipv6Address& target) noexcept {
    const std::size_t length = write_fixed(out, icmpv6_type::kNeighborSolicitation, kNeighborSolicitationLength);
    if (length != 0) target.copy_to(&out[8]);
    return length;
}

std::size_t write_neighbor_advertisement(MutableByteSpan out, const NeighborAdvertisementHeader& header) noexcept {
    const std::size_t length = write_fixed(out, icmpv6_type::kNeighborAdvertisement, kNeighborAdvertisementLength);
    if (length == 0) return 0;
    out[4] = static_cast<std::uint8_t>((header.router ? 0x80 : 0) | (header.solicited ? 0x40 : 0) |
                                       (header.override_flag ? 0x20 : 0));
    header.target.copy_to(&out[8]);
    return length;
}

}  // namespace andromeda::wire
