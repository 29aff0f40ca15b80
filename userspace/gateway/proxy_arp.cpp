#include "gateway/proxy_arp.hpp"

#include <optional>

#include "gateway/gateway_address.hpp"
#include "wire/arp.hpp"
#include "wire/ethernet.hpp"

namespace andromeda::gateway {

namespace {

// The request's verdict before anything is written.
ProxyArpOutcome judge(const wire::ArpView& arp) noexcept {
    if (!arp.is_request()) return ProxyArpOutcome::not_a_request;
    if (arp.sender_ip().value() == 0) return ProxyArpOutcome::probe;
    if (arp.target_ip() == arp.sender_ip()) return ProxyArpOutcome::own_address;
    return ProxyArpOutcome::answered;
}

struct ParsedRequest {
    ProxyArpOutcome outcome = ProxyArpOutcome::not_arp;
    std::optional<wire::EthernetView> ethernet;
    std::optional<wire::ArpView> arp;
};

ParsedRequest parse_request(wire::ByteSpan frame) noexcept {
    ParsedRequest r;
    const auto ethernet = wire::EthernetView::parse(frame);
    if (!ethernet || ethernet->ethertype() != wire::ethertype::kArp) return r;
    const auto arp = wire::ArpView::parse(ethernet->payload());
    if (!arp) return r;
    r.ethernet = *ethernet;
    r.arp = *arp;
    r.outcome = judge(*arp);
    return r;
}

}  // namespace

ProxyArpReply write_proxy_arp_reply(wire::ByteSpan request_frame, const wire::MacAddress& gateway_mac,
                                    wire::MutableByteSpan out) noexcept {
    const ParsedRequest request = parse_request(request_frame);
    if (request.outcome != ProxyArpOutcome::answered) return {request.outcome, 0, 0};
    const std::size_t header_length = request.ethernet->header_length();
    if (out.size() < header_length + wire::kArpLength) return {ProxyArpOutcome::no_room, 0, 0};
    write_answer_ethernet_header(out, *request.ethernet, gateway_mac, wire::ethertype::kArp);
    write_arp(out.subspan(header_length), wire::make_arp_reply(request.arp->packet(), gateway_mac));
    return {ProxyArpOutcome::answered, 0, header_length + wire::kArpLength};
}

ProxyArpReply proxy_arp_reply_in_place(wire::MutableByteSpan frame, const wire::MacAddress& gateway_mac) noexcept {
    const ParsedRequest request = parse_request(frame);
    if (request.outcome != ProxyArpOutcome::answered) return {request.outcome, 0, 0};
    const wire::ArpPacket asked = request.arp->packet();
    const std::size_t header_length = request.ethernet->header_length();
    const auto ethernet = wire::MutableEthernetView::parse(frame);
    ethernet->set_destination(ethernet->source());
    ethernet->set_source(gateway_mac);
    const auto arp = wire::MutableArpView::parse(ethernet->payload());
    arp->set_operation(wire::arp_op::kReply);
    arp->set_sender(gateway_mac, asked.target_ip);
    arp->set_target(asked.sender_mac, asked.sender_ip);
    return {ProxyArpOutcome::answered, 0, header_length + wire::kArpLength};
}

std::string_view to_string(ProxyArpOutcome outcome) noexcept {
    switch (outcome) {
        case ProxyArpOutcome::answered: return "answered";
        case ProxyArpOutcome::not_arp: return "not_arp";
        case ProxyArpOutcome::not_a_request: return "not_a_request";
        case ProxyArpOutcome::probe: return "probe";
        case ProxyArpOutcome::own_address: return "own_address";
        case ProxyArpOutcome::no_room: return "no_room";
    }
    return "unknown";
}

}  // namespace andromeda::gateway
