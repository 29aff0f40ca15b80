// ICMP echo for the VPC gateway's addresses, so `ping <gateway>` and `ping -6 <gateway>` work from
// every tenant on every host. The reply is built from the request (RFC 792, RFC 4443 4.2):
// addresses swapped, type 0 / 129, same identifier, sequence and data, fresh TTL / hop limit, no
// IP options / IPv6 extension headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gateway/gateway_address.hpp"
#include "gateway/ipv6_gateway.hpp"
#include "wire/bytes.hpp"

namespace andromeda::gateway {

inline constexpr std::uint8_t kGatewayTtl = 64;

enum class EchoOutcome : std::uint8_t {
    replied,
    not_echo_request,  // not an IPv4/ICMP or IPv6/ICMPv6 echo request (or a malformed one)
    not_for_gateway,   // destination is not a gateway address
    fragment,          // part of a fragmented request: the whole message is needed to echo it
    bad_checksum,      // IPv4 header, ICMP or ICMPv6 checksum does not verify
    no_room,           // the output buffer is too small
    bad_source,        // IPv6 source is :: or multicast: nobody to answer
};

[[nodiscard]] std::string_view to_string(EchoOutcome outcome) noexcept;

struct EchoReply {
    EchoOutcome outcome = EchoOutcome::not_echo_request;
    std::size_t offset = 0;  // where the reply frame starts (in place: moves forward past dropped IP options)
    std::size_t length = 0;

    [[nodiscard]] bool replied() const noexcept { return outcome == EchoOutcome::replied; }
};

// Builds the echo reply to `request_frame` (a whole Ethernet frame) at the start of `out`.
[[nodiscard]] EchoReply write_echo_reply(wire::ByteSpan request_frame, const GatewayAddress& gateway,
                                         wire::MutableByteSpan out) noexcept;

// Rewrites the request in `frame` into its reply. The reply is frame[offset, offset + length):
// a request with IP options gets a reply without them, so it starts later in the buffer.
[[nodiscard]] EchoReply echo_reply_in_place(wire::MutableByteSpan frame, const GatewayAddress& gateway) noexcept;

// ICMPv6: the same for an echo request to the gateway's link-local or global address. The reply
// comes from the address pinged, keeps the request's traffic class and VLAN tags, and carries
// hop limit 64 and no extension headers (so in place it may start later in the buffer).
[[nodiscard]] EchoReply write_echo_reply(wire::ByteSpan request_frame, const Ipv6Gateway& gateway,
                                         wire::MutableByteSpan out) noexcept;
[[nodiscard]] EchoReply echo_reply_in_place(wire::MutableByteSpan frame, const Ipv6Gateway& gateway) noexcept;

}  // namespace andromeda::gateway
