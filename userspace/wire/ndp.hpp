// ICMPv6 Neighbor Discovery messages (RFC 4861 4.1-4.4): Router Solicitation and Advertisement,
// Neighbor Solicitation and Advertisement. Views over the ICMPv6 message (the IPv6 upper-layer
// payload), the validity checks RFC 4861 6.1 and 7.1 make a receiver apply before it acts on one,
// and builders that write the fixed part; options follow through NdpOptionWriter, and the
// checksum last (MutableIcmpv6View::update_checksum, over the IPv6 pseudo-header).
#pragma once

#include <cstddef>
#include <cstdint>

#include "wire/addresses.hpp"
#include "wire/bytes.hpp"
#include "wire/icmp.hpp"
#include "wire/ipv6.hpp"
#include "wire/ndp_options.hpp"
#include "wire/parse_result.hpp"

namespace andromeda::wire {

namespace icmpv6_type {
inline constexpr std::uint8_t kMulticastListenerQuery = 130;
inline constexpr std::uint8_t kMulticastListenerReport = 131;
inline constexpr std::uint8_t kMulticastListenerDone = 132;
inline constexpr std::uint8_t kRouterSolicitation = 133;
inline constexpr std::uint8_t kRouterAdvertisement = 134;
inline constexpr std::uint8_t kNeighborSolicitation = 135;
inline constexpr std::uint8_t kNeighborAdvertisement = 136;
inline constexpr std::uint8_t kRedirect = 137;
inline constexpr std::uint8_t kMulticastListenerReportV2 = 143;  // RFC 3810
}  // namespace icmpv6_type

// Every ND message is sent with hop limit 255, and one received with less has crossed a router.
inline constexpr std::uint8_t kNdpHopLimit = 255;

inline constexpr std::size_t kRouterSolicitationLength = 8;  // fixed parts, before the options
inline constexpr std::size_t kRouterAdvertisementLength = 16;
inline constexpr std::size_t kNeighborSolicitationLength = 24;
inline constexpr std::size_t kNeighborAdvertisementLength = 24;

// Default Router Preference (RFC 4191 2.2), two bits of the RA flags; 2 is reserved and a host
// reads it as medium.
namespace router_preference {
inline constexpr std::uint8_t kMedium = 0;
inline constexpr std::uint8_t kHigh = 1;
inline constexpr std::uint8_t kLow = 3;
}  // namespace router_preference

// The fixed part of a Router Advertisement; also the input of write_router_advertisement().
struct RouterAdvertisementHeader {
    std::uint8_t current_hop_limit = 0;  // for the hosts' own packets; 0 = unspecified
    bool managed = false;                // M: addresses from DHCPv6
    bool other_configuration = false;    // O: other configuration from DHCPv6
    std::uint8_t router_preference = router_preference::kMedium;
    std::uint16_t router_lifetime = 0;  // seconds as a default router; 0 = not one
    std::uint32_t reachable_time = 0;   // milliseconds; 0 = unspecified
    std::uint32_t retrans_timer = 0;    // milliseconds; 0 = unspecified
    friend bool operator==(const RouterAdvertisementHeader&, const RouterAdvertisementHeader&) = default;
};

// The fixed part of a Neighbor Advertisement; also the input of write_neighbor_advertisement().
struct NeighborAdvertisementHeader {
    bool router = false;         // R: the sender is a router
    bool solicited = false;      // S: an answer to a unicast-sourced solicitation
    bool override_flag = false;  // O: replace a cached link-layer address
    Ipv6Address target;
    friend bool operator==(const NeighborAdvertisementHeader&, const NeighborAdvertisementHeader&) = default;
};

// What every ND view holds: the message and its checked option area.
class NdpMessage {
public:
    [[nodiscard]] std::uint8_t type() const noexcept { return message_[0]; }
    [[nodiscard]] std::uint8_t code() const noexcept { return message_[1]; }
    [[nodiscard]] std::uint16_t checksum() const noexcept { return load_be16(&message_[2]); }
    [[nodiscard]] ByteSpan message() const noexcept { return message_; }
    [[nodiscard]] const NdpOptions& options() const noexcept { return options_; }

protected:
    NdpMessage(ByteSpan message, NdpOptions options) noexcept : message_(message), options_(options) {}
    // Checks the type and the fixed length, and parses the options after the fixed part.
    static NdpError check(ByteSpan message, std::uint8_t type, std::size_t fixed_length, NdpOptions& options) noexcept;

    ByteSpan message_;
    NdpOptions options_;
};

// parse() checks the message's own structure: its type, the fixed part, the option area.
class RouterSolicitationView : public NdpMessage {
public:
    static Parsed<RouterSolicitationView, NdpError> parse(ByteSpan message) noexcept;

private:
    using NdpMessage::NdpMessage;
};

class RouterAdvertisementView : public NdpMessage {
public:
    static Parsed<RouterAdvertisementView, NdpError> parse(ByteSpan message) noexcept;

    [[nodiscard]] std::uint8_t current_hop_limit() const noexcept { return message_[4]; }
    [[nodiscard]] std::uint8_t flags() const noexcept { return message_[5]; }
    [[nodiscard]] bool managed() const noexcept { return (flags() & 0x80) != 0; }
    [[nodiscard]] bool other_configuration() const noexcept { return (flags() & 0x40) != 0; }
    [[nodiscard]] std::uint8_t router_preference() const noexcept { return (flags() >> 3) & 0x3; }
    [[nodiscard]] std::uint16_t router_lifetime() const noexcept { return load_be16(&message_[6]); }
    [[nodiscard]] std::uint32_t reachable_time() const noexcept { return load_be32(&message_[8]); }
    [[nodiscard]] std::uint32_t retrans_timer() const noexcept { return load_be32(&message_[12]); }
    [[nodiscard]] RouterAdvertisementHeader header() const noexcept {
        return RouterAdvertisementHeader{current_hop_limit(), managed(),         other_configuration(),
                                         router_preference(), router_lifetime(), reachable_time(),
                                         retrans_timer()};
    }

private:
    using NdpMessage::NdpMessage;
};

class NeighborSolicitationView : public NdpMessage {
public:
    static Parsed<NeighborSolicitationView, NdpError> parse(ByteSpan message) noexcept;

    [[nodiscard]] Ipv6Address target() const noexcept { return Ipv6Address::from_bytes(&message_[8]); }

private:
    using NdpMessage::NdpMessage;
};

class NeighborAdvertisementView : public NdpMessage {
public:
    static Parsed<NeighborAdvertisementView, NdpError> parse(ByteSpan message) noexcept;

    [[nodiscard]] bool router() const noexcept { return (message_[4] & 0x80) != 0; }
    [[nodiscard]] bool solicited() const noexcept { return (message_[4] & 0x40) != 0; }
    [[nodiscard]] bool override_flag() const noexcept { return (message_[4] & 0x20) != 0; }
    [[nodiscard]] Ipv6Address target() const noexcept { return Ipv6Address::from_bytes(&message_[8]); }
    [[nodiscard]] NeighborAdvertisementHeader header() const noexcept {
        return NeighborAdvertisementHeader{router(), solicited(), override_flag(), target()};
    }

private:
    using NdpMessage::NdpMessage;
};

// What a receiver checks before acting on a message carried by `ip` (RFC 4861 6.1.1, 6.1.2,
// 7.1.1, 7.1.2): ICMPv6 and not a fragment (RFC 6980), hop limit 255, code 0, the length, the
// checksum, every option's length; and per type:
//   RS: from :: no source link-layer address option;
//   RA: a link-local source;
//   NS: a unicast target; from :: (duplicate address detection) to a solicited-node group and no
//       source link-layer address option;
//   NA: a unicast target; to a multicast group the solicited flag clear.
// Link-layer address options must hold one MAC (the links are Ethernet). Checked in that order:
// the error is the first rule broken.
[[nodiscard]] Parsed<RouterSolicitationView, NdpError> validate_router_solicitation(const Ipv6View& ip) noexcept;
[[nodiscard]] Parsed<RouterAdvertisementView, NdpError> validate_router_advertisement(const Ipv6View& ip) noexcept;
[[nodiscard]] Parsed<NeighborSolicitationView, NdpError> validate_neighbor_solicitation(const Ipv6View& ip) noexcept;
[[nodiscard]] Parsed<NeighborAdvertisementView, NdpError> validate_neighbor_advertisement(const Ipv6View& ip) noexcept;

// Builders: each writes the fixed part at the start of `out`, checksum 0, and returns its length,
// or 0 when `out` is too small (or the router preference does not fit its two bits).
std::size_t write_router_solicitation(MutableByteSpan out) noexcept;
std::size_t write_router_advertisement(MutableByteSpan out, const RouterAdvertisementHeader& header) noexcept;
std::size_t write_neighbor_solicitation(MutableByteSpan out, const Ipv6Address& target) noexcept;
std::size_t write_neighbor_advertisement(MutableByteSpan out, const NeighborAdvertisementHeader& header) noexcept;

}  // namespace andromeda::wire
