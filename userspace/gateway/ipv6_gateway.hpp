// Who the distributed gateway is on a VPC's IPv6 side, from plain inputs the pipeline fills in from
// the fabric: the VPC's prefix, the gateway MAC and optional global address, the MTU, the DNS
// servers and the Router Advertisement settings. Every host answers for the gateway, as it does
// for IPv4; the gateway's link-local address (fe80::/64 + modified EUI-64 of its MAC) is the
// router the tenants learn from its Router Advertisements.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "wire/addresses.hpp"
#include "wire/ipv6.hpp"
#include "wire/ipv6_addressing.hpp"
#include "wire/ndp.hpp"

namespace andromeda::gateway {

// RDNSS addresses in one RA; more than resolv.conf's three, far below the option's 127.
inline constexpr std::size_t kMaxDnsServers = 8;

// The Router Advertisement settings of a VPC (RFC 4861 6.2.1 names and defaults; OVN's
// ipv6_ra_configs configure the same).
struct RouterAdvertisementConfig {
    std::uint32_t max_interval_s = 600;            // MaxRtrAdvInterval, 4 to 1800
    std::uint32_t min_interval_s = 0;              // MinRtrAdvInterval, 3 to 0.75 * max; 0 = RFC default (0.33 * max)
    std::uint16_t router_lifetime_s = 1800;        // 0 (not a default router) or max_interval to 9000
    std::uint32_t valid_lifetime_s = 2'592'000;    // the prefix's, 30 days; 0xffffffff = forever
    std::uint32_t preferred_lifetime_s = 604'800;  // 7 days; at most the valid lifetime
    bool on_link = true;               // L: the prefix is on the link (neighbours resolve, to the gateway MAC)
    bool autonomous = true;            // A: tenants form addresses by SLAAC (needs a /64)
    bool managed = false;              // M: addresses from DHCPv6
    bool other_configuration = false;  // O: other settings from DHCPv6
    std::uint8_t router_preference = wire::router_preference::kMedium;
    std::uint8_t current_hop_limit = 64;  // for the tenants' own packets; 0 = unspecified
    std::uint32_t reachable_time_ms = 0;  // 0 = unspecified, at most 3,600,000
    std::uint32_t retrans_timer_ms = 0;   // 0 = unspecified
    std::uint32_t dns_lifetime_s = 0;     // RDNSS lifetime; 0 = 3 * max_interval (RFC 8106 5.1)

    friend bool operator==(const RouterAdvertisementConfig&, const RouterAdvertisementConfig&) = default;
};

// The RFC defaults resolved: MinRtrAdvInterval and the RDNSS lifetime when left 0.
[[nodiscard]] std::uint32_t effective_min_interval_s(const RouterAdvertisementConfig& config) noexcept;
[[nodiscard]] std::uint32_t effective_dns_lifetime_s(const RouterAdvertisementConfig& config) noexcept;

struct Ipv6GatewayConfig {
    wire::MacAddress mac;                             // the VPC's gateway MAC
    wire::Ipv6Prefix prefix;                          // the VPC's IPv6 prefix (a /64 for SLAAC)
    std::optional<wire::Ipv6Address> global_address;  // the gateway's own address in the prefix
    std::uint32_t mtu = 1500;                         // the VPC MTU, the RA's MTU option
    std::vector<wire::Ipv6Address> dns_servers;       // the RA's RDNSS option when not empty
    RouterAdvertisementConfig router_advertisements;
};

// What is wrong with `config`, one sentence per problem saying what would be valid; empty when
// nothing is. The fabric's validation calls it and adds the file and key.
[[nodiscard]] std::vector<std::string> check_ipv6_gateway_config(const Ipv6GatewayConfig& config);

// A checked config and what follows from it, built once per fabric snapshot.
class Ipv6Gateway {
public:
    // Precondition: check_ipv6_gateway_config(config) is empty.
    explicit Ipv6Gateway(Ipv6GatewayConfig config);

    [[nodiscard]] const Ipv6GatewayConfig& config() const noexcept { return config_; }
    [[nodiscard]] const wire::MacAddress& mac() const noexcept { return config_.mac; }
    [[nodiscard]] const wire::Ipv6Prefix& prefix() const noexcept { return config_.prefix; }
    [[nodiscard]] const wire::Ipv6Address& link_local() const noexcept { return link_local_; }
    [[nodiscard]] const std::optional<wire::Ipv6Address>& global_address() const noexcept {
        return config_.global_address;
    }
    // The gateway's own: its link-local address or its global one.
    [[nodiscard]] bool is_gateway_address(const wire::Ipv6Address& address) const noexcept {
        return address == link_local_ || (config_.global_address && address == *config_.global_address);
    }
    // The source of a message the gateway originates to `destination`, by RFC 6724's scope rule:
    // the link-local address to a link-local destination or when there is no global one.
    [[nodiscard]] const wire::Ipv6Address& source_for(const wire::Ipv6Address& destination) const noexcept {
        return config_.global_address && !wire::is_link_local(destination) ? *config_.global_address : link_local_;
    }

private:
    Ipv6GatewayConfig config_;
    wire::Ipv6Address link_local_;
};

// The tenant endpoint a frame came from, as its port's endpoint is in the fabric: its MAC and its
// IPv6 addresses (static or EUI-64; its link-local one need not be listed).
struct Ipv6Endpoint {
    wire::MacAddress mac;
    std::span<const wire::Ipv6Address> addresses;
};

// What an IPv6 packet from a tenant is, as far as the gateway cares; the pipeline dispatches on it.
enum class TenantIcmpv6 : std::uint8_t {
    not_icmpv6,              // another upper layer, or a non-first fragment
    router_solicitation,     // → answer_router_solicitation
    router_advertisement,    // a tenant is not a router: drop
    neighbor_solicitation,   // → write_neighbor_advertisement_reply
    neighbor_advertisement,  // the gateway keeps no neighbour cache: drop
    redirect,                // only routers redirect: drop
    multicast_listener,      // MLD reports/queries (130-132, 143): the fabric has no multicast, drop
    echo_request,            // → write_echo_reply / echo_reply_in_place when to a gateway address
    other,                   // any other ICMPv6 (errors, echo replies...)
};

[[nodiscard]] TenantIcmpv6 classify_icmpv6(const wire::Ipv6View& ip) noexcept;
[[nodiscard]] std::string_view to_string(TenantIcmpv6 kind) noexcept;

}  // namespace andromeda::gateway
