// ICMP echo for the VPC gateway address, so `ping <gateway>` works from every tenant on every
// host. The reply is built from the request (RFC 792): addresses swapped, type 0, same
// identifier, sequence and data, fresh TTL, no IP options.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gateway/gateway_address.hpp"
#include "wire/bytes.hpp"

namespace andromeda::gateway {

inline constexpr std::uint8_t kGatewayTtl = 64;

enum class EchoOutcome : std::uint8_t {
    replied,
    not_echo_request,  // not IPv4/ICMP echo request (or a malformed one)
    not_for_gateway,   // destination is not the gateway address
    fragment,          // part of a fragmented request: the whole message is needed to echo it
    bad_checksum,      // IPv4 header or ICMP checksum does not verify
    no_room,           // the output buffer is too small
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

}  // namespace andromeda::gateway
