// Proxy-ARP for the distributed gateway: every tenant ARP request for any address but the
// asker's own is answered with the VPC's virtual gateway MAC. Tenants therefore send everything
// to that one MAC and never learn each other's, so no static neighbours are needed and an
// endpoint can move between hosts without its peers' ARP caches noticing.
//
// Anti-spoofing (is the sender who its port says it is) is the caller's job; these functions
// only decide whether a request deserves an answer and build it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "wire/addresses.hpp"
#include "wire/bytes.hpp"

namespace andromeda::gateway {

enum class ProxyArpOutcome : std::uint8_t {
    answered,
    not_arp,        // not an Ethernet/IPv4 ARP packet, or truncated
    not_a_request,  // replies and unknown opcodes are never answered
    probe,          // sender IP 0.0.0.0 (RFC 5227 probe): an answer would report an address conflict
    own_address,    // asks for the asker's own address (gratuitous ARP / announcement)
    no_room,        // the output buffer is too small
};

[[nodiscard]] std::string_view to_string(ProxyArpOutcome outcome) noexcept;

struct ProxyArpReply {
    ProxyArpOutcome outcome = ProxyArpOutcome::not_arp;
    std::size_t offset = 0;  // where the reply starts in the output (in place: always 0)
    std::size_t length = 0;  // reply frame length (Ethernet header + 28; padding is the NIC's job)

    [[nodiscard]] bool answered() const noexcept { return outcome == ProxyArpOutcome::answered; }
};

// Builds the reply to `request_frame` (a whole Ethernet frame) in `out`.
[[nodiscard]] ProxyArpReply write_proxy_arp_reply(wire::ByteSpan request_frame, const wire::MacAddress& gateway_mac,
                                                  wire::MutableByteSpan out) noexcept;

// Turns the request in `frame` into its reply in place; the frame is untouched unless answered.
[[nodiscard]] ProxyArpReply proxy_arp_reply_in_place(wire::MutableByteSpan frame,
                                                     const wire::MacAddress& gateway_mac) noexcept;

}  // namespace andromeda::gateway
