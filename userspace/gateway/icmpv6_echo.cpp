// ICMPv6 echo for the gateway's IPv6 addresses (the IPv4 one is icmp_echo.cpp).
#include <cstring>
#include <optional>

#include "gateway/icmp_echo.hpp"
#include "gateway/icmpv6_frame.hpp"
#include "wire/checksum.hpp"
#include "wire/ethernet.hpp"
#include "wire/icmp.hpp"
#include "wire/ip_protocol.hpp"
#include "wire/ipv6.hpp"

namespace andromeda::gateway {

namespace {

struct Request {
    EchoOutcome outcome = EchoOutcome::not_echo_request;
    std::optional<wire::EthernetView> ethernet;
    std::optional<wire::Ipv6View> ip;
};

Request parse_request(wire::ByteSpan frame, const Ipv6Gateway& gateway) noexcept {
    Request r;
    const auto ethernet = wire::EthernetView::parse(frame);
    if (!ethernet || ethernet->ethertype() != wire::ethertype::kIpv6) return r;
    const auto ip = wire::Ipv6View::parse(ethernet->payload());
    if (!ip || ip->upper_layer_protocol() != wire::ip_protocol::kIcmpv6) return r;
    if (!gateway.is_gateway_address(ip->destination())) {
        r.outcome = EchoOutcome::not_for_gateway;
        return r;
    }
    if (ip->is_fragment()) {
        r.outcome = EchoOutcome::fragment;
        return r;
    }
    const auto icmp = wire::Icmpv6View::parse(ip->upper_layer_payload());
    if (!icmp || icmp->type() != wire::icmpv6_type::kEchoRequest || icmp->code() != 0) return r;
    if (!wire::checksum_verifies(icmp->message(), ip->pseudo_header_sum())) {
        r.outcome = EchoOutcome::bad_checksum;
        return r;
    }
    if (wire::is_unspecified(ip->source()) || wire::is_multicast(ip->source())) {
        r.outcome = EchoOutcome::bad_source;
        return r;
    }
    r.outcome = EchoOutcome::replied;
    r.ethernet = *ethernet;
    r.ip = *ip;
    return r;
}

detail::Icmpv6FrameAddressing reply_addressing(const Request& request, const Ipv6Gateway& gateway) noexcept {
    detail::Icmpv6FrameAddressing addressing;
    addressing.request = &*request.ethernet;
    addressing.destination_mac = request.ethernet->source();
    addressing.source_mac = gateway.mac();
    addressing.source = request.ip->destination();  // the gateway address that was pinged
    addressing.destination = request.ip->source();
    addressing.hop_limit = kGatewayTtl;
    addressing.traffic_class = request.ip->traffic_class();
    return addressing;
}

// The request's message, already at `message`, becomes the reply: type 129, checksum anew (the
// request's pseudo-header may have covered a routing header's final destination instead).
void turn_into_reply(wire::MutableByteSpan message, const detail::Icmpv6FrameAddressing& addressing) noexcept {
    message[0] = wire::icmpv6_type::kEchoReply;
    detail::finish_icmpv6_checksum(message, addressing);
}

}  // namespace

EchoReply write_echo_reply(wire::ByteSpan request_frame, const Ipv6Gateway& gateway,
                           wire::MutableByteSpan out) noexcept {
    const Request request = parse_request(request_frame, gateway);
    if (request.outcome != EchoOutcome::replied) return {request.outcome, 0, 0};
    const auto icmp = request.ip->upper_layer_payload();
    const detail::Icmpv6FrameAddressing addressing = reply_addressing(request, gateway);
    const std::size_t at = detail::write_icmpv6_frame_headers(out, addressing, icmp.size());
    if (at == 0) return {EchoOutcome::no_room, 0, 0};
    std::memcpy(out.data() + at, icmp.data(), icmp.size());
    turn_into_reply(out.subspan(at, icmp.size()), addressing);
    return {EchoOutcome::replied, 0, at + icmp.size()};
}

EchoReply echo_reply_in_place(wire::MutableByteSpan frame, const Ipv6Gateway& gateway) noexcept {
    const Request request = parse_request(frame, gateway);
    if (request.outcome != EchoOutcome::replied) return {request.outcome, 0, 0};
    // Every field the reply takes from the request is copied out here, and the request's
    // Ethernet header (for its tags) is read whole before the new one is written over it.
    const detail::Icmpv6FrameAddressing addressing = reply_addressing(request, gateway);
    const auto icmp = request.ip->upper_layer_payload();
    const auto message_offset = static_cast<std::size_t>(icmp.data() - frame.data());
    const std::size_t headers = request.ethernet->header_length() + wire::kIpv6HeaderLength;
    const std::size_t start = message_offset - headers;  // skips the request's extension headers, if any
    turn_into_reply(frame.subspan(message_offset, icmp.size()), addressing);
    (void)detail::write_icmpv6_frame_headers(frame.subspan(start), addressing, icmp.size());
    return {EchoOutcome::replied, start, headers + icmp.size()};
}

}  // namespace andromeda::gateway
