#include "gateway/icmp_error.hpp"

#include <algorithm>
#include <cstring>

#include "wire/ethernet.hpp"
#include "wire/icmp.hpp"
#include "wire/ip_protocol.hpp"

namespace andromeda::gateway {

namespace {

bool is_icmpv4_error_type(std::uint8_t type) noexcept {
    switch (type) {
        case wire::icmpv4_type::kDestinationUnreachable:
        case wire::icmpv4_type::kSourceQuench:
        case wire::icmpv4_type::kRedirect:
        case wire::icmpv4_type::kTimeExceeded:
        case wire::icmpv4_type::kParameterProblem: return true;
        default: return false;
    }
}

// Not one unicast host: 0.0.0.0/8, loopback, multicast, class E and limited broadcast.
bool is_special_ipv4(wire::Ipv4Address a) noexcept {
    const std::uint32_t v = a.value();
    const std::uint32_t first = v >> 24;
    return first == 0 || first == 127 || first >= 224;
}

bool is_multicast_ipv6(const wire::Ipv6Address& a) noexcept { return a.bytes()[0] == 0xff; }

bool is_unspecified_ipv6(const wire::Ipv6Address& a) noexcept {
    for (const std::uint8_t b : a.bytes())
        if (b != 0) return false;
    return true;
}

}  // namespace

bool icmpv4_error_allowed(const wire::Ipv4View& offending) noexcept {
    if (offending.fragment_offset() != 0) return false;
    if (is_special_ipv4(offending.source()) || is_special_ipv4(offending.destination())) return false;
    if (offending.protocol() == wire::ip_protocol::kIcmp) {
        const auto payload = offending.payload();
        if (payload.empty() || is_icmpv4_error_type(payload[0])) return false;
    }
    return true;
}

bool icmpv6_error_allowed(const wire::Ipv6View& offending, bool packet_too_big) noexcept {
    if (is_unspecified_ipv6(offending.source()) || is_multicast_ipv6(offending.source())) return false;
    if (!packet_too_big && is_multicast_ipv6(offending.destination())) return false;
    if (offending.upper_layer_protocol() == wire::ip_protocol::kIcmpv6 && offending.fragment_offset() == 0) {
        const auto message = offending.upper_layer_payload();
        if (message.empty() || message[0] < 128) return false;  // types 0-127 are errors
    }
    return true;
}

IcmpErrorFrame write_fragmentation_needed(wire::ByteSpan offending_frame, std::uint16_t next_hop_mtu,
                                          const GatewayAddress& gateway, std::uint16_t ip_id,
                                          wire::MutableByteSpan out) noexcept {
    const auto ethernet = wire::EthernetView::parse(offending_frame);
    if (!ethernet || ethernet->ethertype() != wire::ethertype::kIpv4) return {IcmpErrorOutcome::malformed, 0};
    const auto offending = wire::Ipv4View::parse(ethernet->payload());
    if (!offending) return {IcmpErrorOutcome::malformed, 0};
    if (!icmpv4_error_allowed(*offending)) return {IcmpErrorOutcome::not_allowed, 0};

    const auto quoted = offending->packet().first(std::min(offending->packet().size(), kMaxIcmpv4Quote));
    const std::size_t eth_length = ethernet->header_length();
    const std::size_t icmp_length = wire::kIcmpHeaderLength + quoted.size();
    const std::size_t ip_length = wire::kIpv4MinHeaderLength + icmp_length;
    if (out.size() < eth_length + ip_length) return {IcmpErrorOutcome::no_room, 0};

    write_answer_ethernet_header(out, *ethernet, gateway.mac, wire::ethertype::kIpv4);
    wire::Ipv4Header ip;
    ip.total_length = static_cast<std::uint16_t>(ip_length);
    ip.identification = ip_id;
    ip.ttl = 64;
    ip.protocol = wire::ip_protocol::kIcmp;
    ip.source = gateway.ipv4;
    ip.destination = offending->source();
    wire::write_ipv4_header(out.subspan(eth_length), ip);

    const auto message = out.subspan(eth_length + wire::kIpv4MinHeaderLength, icmp_length);
    wire::write_icmp_header(message, wire::icmpv4_fragmentation_needed(next_hop_mtu));
    std::memcpy(message.data() + wire::kIcmpHeaderLength, quoted.data(), quoted.size());
    wire::MutableIcmpv4View::parse(message)->update_checksum();
    return {IcmpErrorOutcome::written, eth_length + ip_length};
}

IcmpErrorFrame write_packet_too_big(wire::ByteSpan offending_frame, std::uint32_t mtu,
                                    const wire::MacAddress& gateway_mac, const wire::Ipv6Address& gateway_ipv6,
                                    wire::MutableByteSpan out) noexcept {
    const auto ethernet = wire::EthernetView::parse(offending_frame);
    if (!ethernet || ethernet->ethertype() != wire::ethertype::kIpv6) return {IcmpErrorOutcome::malformed, 0};
    const auto offending = wire::Ipv6View::parse(ethernet->payload());
    if (!offending) return {IcmpErrorOutcome::malformed, 0};
    if (!icmpv6_error_allowed(*offending, true)) return {IcmpErrorOutcome::not_allowed, 0};

    const auto quoted = offending->packet().first(std::min(offending->packet().size(), kMaxIcmpv6Quote));
    const std::size_t eth_length = ethernet->header_length();
    const std::size_t icmp_length = wire::kIcmpHeaderLength + quoted.size();
    if (out.size() < eth_length + wire::kIpv6HeaderLength + icmp_length) return {IcmpErrorOutcome::no_room, 0};

    write_answer_ethernet_header(out, *ethernet, gateway_mac, wire::ethertype::kIpv6);
    wire::Ipv6Header ip;
    ip.payload_length = static_cast<std::uint16_t>(icmp_length);
    ip.next_header = wire::ip_protocol::kIcmpv6;
    ip.hop_limit = 64;
    ip.source = gateway_ipv6;
    ip.destination = offending->source();
    wire::write_ipv6_header(out.subspan(eth_length), ip);

    const auto message = out.subspan(eth_length + wire::kIpv6HeaderLength, icmp_length);
    wire::write_icmp_header(message, wire::icmpv6_packet_too_big(mtu));
    std::memcpy(message.data() + wire::kIcmpHeaderLength, quoted.data(), quoted.size());
    wire::MutableIcmpv6View::parse(message)->update_checksum(ip.source, ip.destination);
    return {IcmpErrorOutcome::written, eth_length + wire::kIpv6HeaderLength + icmp_length};
}

IcmpErrorFrame write_packet_too_big_rate_limited(wire::ByteSpan offending_frame, std::uint32_t mtu,
                                                 const Ipv6Gateway& gateway, IcmpErrorRateLimiter& limiter,
                                                 std::uint32_t scope, std::uint64_t now_ns,
                                                 wire::MutableByteSpan out) noexcept {
    const auto ethernet = wire::EthernetView::parse(offending_frame);
    if (!ethernet || ethernet->ethertype() != wire::ethertype::kIpv6) return {IcmpErrorOutcome::malformed, 0};
    const auto offending = wire::Ipv6View::parse(ethernet->payload());
    if (!offending) return {IcmpErrorOutcome::malformed, 0};
    if (!icmpv6_error_allowed(*offending, true)) return {IcmpErrorOutcome::not_allowed, 0};
    const wire::Ipv6Address sender = offending->source();
    if (!limiter.allow(RateLimitKey::of(scope, sender), now_ns)) return {IcmpErrorOutcome::rate_limited, 0};
    return write_packet_too_big(offending_frame, mtu, gateway.mac(), gateway.source_for(sender), out);
}

std::string_view to_string(IcmpErrorOutcome outcome) noexcept {
    switch (outcome) {
        case IcmpErrorOutcome::written: return "written";
        case IcmpErrorOutcome::malformed: return "malformed";
        case IcmpErrorOutcome::not_allowed: return "not_allowed";
        case IcmpErrorOutcome::no_room: return "no_room";
        case IcmpErrorOutcome::rate_limited: return "rate_limited";
    }
    return "unknown";
}

}  // namespace andromeda::gateway
