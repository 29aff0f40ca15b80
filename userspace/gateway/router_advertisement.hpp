// Router Advertisements for a VPC's tenants (RFC 4861 6.2, RFC 8106): what a tenant with the
// kernel's defaults needs to come up dual-stack by itself. From the gateway's link-local address
// and MAC, hop limit 255, with the RA settings' flags, hop limit, router lifetime and timers, and
// the options:
//   source link-layer address  the gateway MAC (saves the tenant a solicitation);
//   MTU                        the VPC MTU;
//   prefix information         the VPC prefix, on-link and autonomous flags and lifetimes as set;
//   RDNSS                      the VPC's DNS servers, when it has any.
// A Router Solicitation is answered unicast to its source, or to all-nodes when it comes from ::
// (RFC 4861 6.2.6); both within the port's RouterAdvertisementSchedule (ra_schedule.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gateway/ipv6_gateway.hpp"
#include "gateway/ra_schedule.hpp"
#include "wire/bytes.hpp"
#include "wire/ndp_options.hpp"

namespace andromeda::gateway {

enum class RouterSolicitationOutcome : std::uint8_t {
    answered_unicast,         // RA to the solicitation's source
    answered_multicast,       // RS from ::, RA to all-nodes
    deferred,                 // the last RA went out under 3 s ago: the next unsolicited one answers
    not_router_solicitation,  // not Ethernet/IPv6/ICMPv6 type 133
    invalid,                  // breaks a rule of RFC 4861 6.1.1: RouterAdvertisementReply::error says which
    no_room,                  // the output buffer is too small
};

[[nodiscard]] std::string_view to_string(RouterSolicitationOutcome outcome) noexcept;

struct RouterAdvertisementReply {
    RouterSolicitationOutcome outcome = RouterSolicitationOutcome::not_router_solicitation;
    wire::NdpError error = wire::NdpError::None;  // for invalid
    std::size_t length = 0;                       // the advertisement frame, at the start of the output

    [[nodiscard]] bool answered() const noexcept {
        return outcome == RouterSolicitationOutcome::answered_unicast ||
               outcome == RouterSolicitationOutcome::answered_multicast;
    }
};

// The ICMPv6 message (fixed part and options) of the gateway's advertisement.
[[nodiscard]] std::size_t router_advertisement_message_length(const Ipv6Gateway& gateway) noexcept;
// The largest advertisement frame any gateway sends: two VLAN tags, every option, 8 DNS servers.
inline constexpr std::size_t kMaxRouterAdvertisementFrame =
    22 + 40 + wire::kRouterAdvertisementLength + wire::kLinkLayerAddressOptionLength + wire::kMtuOptionLength +
    wire::kPrefixInformationOptionLength + 8 + 16 * kMaxDnsServers;

// The verdict on `request_frame` (a whole Ethernet frame) by RFC 4861 alone, the schedule left
// out and nothing written: answered_unicast / answered_multicast with the answer's length, or why not.
[[nodiscard]] RouterAdvertisementReply judge_router_solicitation(wire::ByteSpan request_frame,
                                                                 const Ipv6Gateway& gateway) noexcept;

// Answers `request_frame` at `now_ns` within `schedule` (the asking port's): the advertisement
// is written at the start of `out` and recorded in the schedule, or the answer is deferred.
[[nodiscard]] RouterAdvertisementReply answer_router_solicitation(wire::ByteSpan request_frame,
                                                                  const Ipv6Gateway& gateway,
                                                                  RouterAdvertisementSchedule& schedule,
                                                                  std::uint64_t now_ns,
                                                                  wire::MutableByteSpan out) noexcept;

// An unsolicited advertisement: to all-nodes (33:33:00:00:00:01), untagged. `ceasing` sends
// router lifetime 0, the farewell of RFC 4861 6.2.5 when the gateway stops advertising on a port.
// Returns the frame length, or 0 when `out` is too small.
[[nodiscard]] std::size_t write_unsolicited_router_advertisement(const Ipv6Gateway& gateway, wire::MutableByteSpan out,
                                                                 bool ceasing = false) noexcept;

// When `schedule` is due at `now_ns`: writes the unsolicited advertisement to `out`, records it,
// and returns its length; otherwise (or when `out` is too small) 0 and the schedule unchanged.
[[nodiscard]] std::size_t advertise_if_due(const Ipv6Gateway& gateway, RouterAdvertisementSchedule& schedule,
                                           std::uint64_t now_ns, wire::MutableByteSpan out) noexcept;

}  // namespace andromeda::gateway
