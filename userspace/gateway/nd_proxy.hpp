// The ND proxy, proxy-ARP's IPv6 counterpart: a tenant's Neighbor Solicitation for any address of
// its VPC's prefix, or for the gateway's own link-local or global address, is answered with a
// Neighbor Advertisement carrying the gateway MAC. Tenants so send everything to that one MAC and
// never learn each other's, wherever their peers live.
//
// The answer (RFC 4861 7.2.4): router flag set; solicited flag set, unicast to the asker; override
// set for the gateway's own addresses and clear for the proxied ones (RFC 4861 7.2.4 says so for
// a proxy, which leaves a tenant's existing cache entry to the entry's owner: here always the
// gateway MAC anyway); the target link-layer address option always; hop limit 255; from the
// target when it is the gateway's, otherwise from Ipv6Gateway::source_for(asker). VLAN tags of
// the solicitation are kept.
//
// Duplicate address detection (a solicitation from ::) is never answered for an address that is
// not the gateway's: not for another endpoint's, not for one nobody has, and not for the asker's
// own, which therefore passes DAD. The fabric, not DAD, keeps addresses unique, and an answer
// would make the tenant give up an address the fabric assigned it. A probe for the gateway's own
// address is defended (an advertisement to all-nodes, solicited flag clear), as a router defends
// its addresses, so a tenant cannot take the router's address.
//
// Anti-spoofing (is the asker who its port says) is the caller's job, as for proxy-ARP.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gateway/ipv6_gateway.hpp"
#include "wire/bytes.hpp"
#include "wire/ndp_options.hpp"

namespace andromeda::gateway {

enum class NdProxyOutcome : std::uint8_t {
    advertised,                 // solicited NA to the asker
    defended,                   // DAD for a gateway address: NA to all-nodes
    not_neighbor_solicitation,  // not Ethernet/IPv6/ICMPv6 type 135
    invalid,                    // breaks a rule of RFC 4861 7.1.1: NdProxyReply::error says which
    dad_probe,                  // DAD for an address that is not the gateway's: never answered
    own_address,                // asks for the asker's own address
    outside_vpc,                // the target is neither in the VPC prefix nor the gateway's
    no_room,                    // the output buffer is too small
};

[[nodiscard]] std::string_view to_string(NdProxyOutcome outcome) noexcept;

struct NdProxyReply {
    NdProxyOutcome outcome = NdProxyOutcome::not_neighbor_solicitation;
    wire::NdpError error = wire::NdpError::None;  // for invalid
    std::size_t length = 0;                       // the advertisement frame, at the start of the output

    [[nodiscard]] bool answered() const noexcept {
        return outcome == NdProxyOutcome::advertised || outcome == NdProxyOutcome::defended;
    }
};

// The largest advertisement: two VLAN tags, IPv6, NA and its one option.
inline constexpr std::size_t kMaxNeighborAdvertisementFrame = 22 + 40 + 24 + 8;

// The verdict on `request_frame` (a whole Ethernet frame) without writing anything; `length` is
// the answer's length when it would be answered. For the pipeline's decision step.
[[nodiscard]] NdProxyReply judge_neighbor_solicitation(wire::ByteSpan request_frame, const Ipv6Gateway& gateway,
                                                       const Ipv6Endpoint& asker) noexcept;

// The same, and the advertisement written at the start of `out` when answered.
[[nodiscard]] NdProxyReply write_neighbor_advertisement_reply(wire::ByteSpan request_frame, const Ipv6Gateway& gateway,
                                                              const Ipv6Endpoint& asker,
                                                              wire::MutableByteSpan out) noexcept;

// A Neighbor Solicitation from a host behind a VXLAN peer (a kernel VXLAN bridge floods its
// tenants' solicitations to its remote VTEPs), for an endpoint the caller finds on this node: it
// is answered as that endpoint would answer (RFC 4861 7.2.4), from the target address and the
// endpoint's MAC, solicited and override set, router clear, with the target link-layer address
// option, to the asker. Duplicate address detection is never answered (dad_probe), nor a
// solicitation for the asker's own address (own_address). Who may ask, and for which target, is
// the caller's to check (source and target come back for it).
struct HostSolicitation {
    NdProxyReply verdict;  // advertised, not_neighbor_solicitation, invalid, dad_probe, own_address
    wire::Ipv6Address source;
    wire::Ipv6Address target;
};
[[nodiscard]] HostSolicitation read_host_solicitation(wire::ByteSpan request_frame) noexcept;
[[nodiscard]] NdProxyReply write_host_neighbor_advertisement(wire::ByteSpan request_frame,
                                                             const wire::MacAddress& target_mac,
                                                             wire::MutableByteSpan out) noexcept;

}  // namespace andromeda::gateway
