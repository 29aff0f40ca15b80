#include "gateway/icmp_echo.hpp"

#include <cstring>
#include <optional>

#include "wire/checksum.hpp"
#include "wire/ethernet.hpp"
#include "wire/icmp.hpp"
#include "wire/ip_protocol.hpp"
#include "wire/ipv4.hpp"

namespace andromeda::gateway {

namespace {

struct Request {
    EchoOutcome outcome = EchoOutcome::not_echo_request;
    std::optional<wire::EthernetView> ethernet;
    std::optional<wire::Ipv4View> ip;
};

Request parse_request(wire::ByteSpan frame, const GatewayAddress& gateway) noexcept {
    Request r;
    const auto ethernet = wire::EthernetView::parse(frame);
    if (!ethernet || ethernet->ethertype() != wire::ethertype::kIpv4) return r;
    const auto ip = wire::Ipv4View::parse(ethernet->payload());
    if (!ip || ip->protocol() != wire::ip_protocol::kIcmp) return r;
    if (!ip->checksum_valid()) {
        r.outcome = EchoOutcome::bad_checksum;
        return r;
    }
    if (ip->destination() != gateway.ipv4) {
        r.outcome = EchoOutcome::not_for_gateway;
        return r;
    }
    if (ip->is_fragment()) {
        r.outcome = EchoOutcome::fragment;
        return r;
    }
    const auto icmp = wire::Icmpv4View::parse(ip->payload());
    if (!icmp || icmp->type() != wire::icmpv4_type::kEchoRequest || icmp->code() != 0) return r;
    if (!icmp->checksum_valid()) {
        r.outcome = EchoOutcome::bad_checksum;
        return r;
    }
    r.outcome = EchoOutcome::replied;
    r.ethernet = *ethernet;
    r.ip = *ip;
    return r;
}

// Writes Ethernet + a fresh 20-byte IPv4 header for the reply at `out` (room already checked).
// Returns the offset of the ICMP message.
std::size_t write_reply_headers(std::uint8_t* out, std::size_t out_size, const wire::EthernetHeader& request_eth,
                                const wire::Ipv4Header& request_ip, std::size_t icmp_length,
                                const GatewayAddress& gateway) noexcept {
    wire::EthernetHeader eth = request_eth;
    eth.destination = request_eth.source;
    eth.source = gateway.mac;
    const std::size_t eth_length = wire::write_ethernet_header({out, out_size}, eth);
    wire::Ipv4Header ip;
    ip.dscp = request_ip.dscp;
    ip.ecn = request_ip.ecn;
    ip.total_length = static_cast<std::uint16_t>(wire::kIpv4MinHeaderLength + icmp_length);
    ip.identification = request_ip.identification;
    ip.dont_fragment = request_ip.dont_fragment;
    ip.ttl = kGatewayTtl;
    ip.protocol = wire::ip_protocol::kIcmp;
    ip.source = gateway.ipv4;
    ip.destination = request_ip.source;
    wire::write_ipv4_header({out + eth_length, out_size - eth_length}, ip);
    return eth_length + wire::kIpv4MinHeaderLength;
}

// Echo request -> echo reply: only the type changes, so the verified checksum is patched.
void turn_into_reply(std::uint8_t* icmp) noexcept {
    const std::uint16_t old_word = wire::load_be16(icmp);
    const std::uint16_t new_word = static_cast<std::uint16_t>(wire::icmpv4_type::kEchoReply << 8 | icmp[1]);
    wire::store_be16(icmp, new_word);
    wire::store_be16(icmp + 2, wire::checksum_update16(wire::load_be16(icmp + 2), old_word, new_word));
}

}  // namespace

EchoReply write_echo_reply(wire::ByteSpan request_frame, const GatewayAddress& gateway,
                           wire::MutableByteSpan out) noexcept {
    const Request request = parse_request(request_frame, gateway);
    if (request.outcome != EchoOutcome::replied) return {request.outcome, 0, 0};
    const auto icmp = request.ip->payload();
    const std::size_t length = request.ethernet->header_length() + wire::kIpv4MinHeaderLength + icmp.size();
    if (out.size() < length) return {EchoOutcome::no_room, 0, 0};
    const std::size_t icmp_offset = write_reply_headers(out.data(), out.size(), request.ethernet->header(),
                                                        request.ip->header(), icmp.size(), gateway);
    std::memcpy(out.data() + icmp_offset, icmp.data(), icmp.size());
    turn_into_reply(out.data() + icmp_offset);
    return {EchoOutcome::replied, 0, length};
}

EchoReply echo_reply_in_place(wire::MutableByteSpan frame, const GatewayAddress& gateway) noexcept {
    const Request request = parse_request(frame, gateway);
    if (request.outcome != EchoOutcome::replied) return {request.outcome, 0, 0};
    const wire::EthernetHeader eth = request.ethernet->header();
    wire::Ipv4Header ip = request.ip->header();
    ip.options = {};  // points into the bytes about to be overwritten; the reply carries none
    const auto icmp = request.ip->payload();
    const std::size_t icmp_offset = static_cast<std::size_t>(icmp.data() - frame.data());
    const std::size_t headers = eth.length() + wire::kIpv4MinHeaderLength;
    const std::size_t start = icmp_offset - headers;  // skips the request's IP options, if any
    turn_into_reply(frame.data() + icmp_offset);
    write_reply_headers(frame.data() + start, headers, eth, ip, icmp.size(), gateway);
    return {EchoOutcome::replied, start, headers + icmp.size()};
}

std::string_view to_string(EchoOutcome outcome) noexcept {
    switch (outcome) {
        case EchoOutcome::replied: return "replied";
        case EchoOutcome::not_echo_request: return "not_echo_request";
        case EchoOutcome::not_for_gateway: return "not_for_gateway";
        case EchoOutcome::fragment: return "fragment";
        case EchoOutcome::bad_checksum: return "bad_checksum";
        case EchoOutcome::no_room: return "no_room";
        case EchoOutcome::bad_source: return "bad_source";
    }
    return "unknown";
}

}  // namespace andromeda::gateway
