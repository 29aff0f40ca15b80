#include "gateway/ipv6_gateway.hpp"

#include <utility>

#include "wire/icmp.hpp"
#include "wire/ip_protocol.hpp"

namespace andromeda::gateway {

namespace {

// RFC 4861 6.2.1 bounds.
constexpr std::uint32_t kMinMaxInterval = 4, kMaxMaxInterval = 1800;
constexpr std::uint32_t kMinMinInterval = 3;
constexpr std::uint32_t kMaxRouterLifetime = 9000;
constexpr std::uint32_t kMaxReachableTime = 3'600'000;  // MAX_REACHABLE_TIME, ms
constexpr std::uint32_t kMinIpv6Mtu = 1280;             // RFC 8200 5

void check_router_advertisements(const RouterAdvertisementConfig& ra, std::vector<std::string>& problems) {
    const auto say = [&problems](std::string text) { problems.push_back(std::move(text)); };
    if (ra.max_interval_s < kMinMaxInterval || ra.max_interval_s > kMaxMaxInterval)
        say("max_interval " + std::to_string(ra.max_interval_s) + " s is outside 4 to 1800 s (RFC 4861 6.2.1)");
    const std::uint32_t min_interval = effective_min_interval_s(ra);
    if (ra.min_interval_s != 0 && (min_interval < kMinMinInterval || min_interval * 4 > ra.max_interval_s * 3))
        say("min_interval " + std::to_string(min_interval) + " s must be 3 s to 0.75 * max_interval (" +
            std::to_string(ra.max_interval_s * 3 / 4) + " s), or 0 for the default 0.33 * max_interval");
    if (ra.router_lifetime_s != 0 &&
        (ra.router_lifetime_s < ra.max_interval_s || ra.router_lifetime_s > kMaxRouterLifetime))
        say("router_lifetime " + std::to_string(ra.router_lifetime_s) + " s must be 0 (not a default router) or " +
            std::to_string(ra.max_interval_s) + " (max_interval) to 9000 s");
    if (ra.preferred_lifetime_s > ra.valid_lifetime_s)
        say("preferred_lifetime " + std::to_string(ra.preferred_lifetime_s) + " s is longer than valid_lifetime " +
            std::to_string(ra.valid_lifetime_s) + " s: hosts would ignore the prefix (RFC 4862 5.5.3 c)");
    if (ra.router_preference > 3 || ra.router_preference == 2)
        say("router_preference must be 0 (medium), 1 (high) or 3 (low) (RFC 4191 2.2)");
    if (ra.reachable_time_ms > kMaxReachableTime)
        say("reachable_time " + std::to_string(ra.reachable_time_ms) + " ms is over 3600000 ms (RFC 4861 6.2.1)");
    if (ra.dns_lifetime_s != 0 && ra.dns_lifetime_s < ra.max_interval_s)
        say("dns_lifetime " + std::to_string(ra.dns_lifetime_s) + " s is shorter than max_interval " +
            std::to_string(ra.max_interval_s) +
            " s: DNS servers would expire between advertisements; use 0 for 3 * max_interval");
}

void check_prefix(const Ipv6GatewayConfig& config, std::vector<std::string>& problems) {
    const wire::Ipv6Prefix& prefix = config.prefix;
    static const wire::Ipv6Prefix kLinkLocal = *wire::Ipv6Prefix::parse("fe80::/10");
    static const wire::Ipv6Prefix kMulticast = *wire::Ipv6Prefix::parse("ff00::/8");
    if (prefix.overlaps(kLinkLocal) || prefix.overlaps(kMulticast))
        problems.push_back("prefix " + prefix.to_string() +
                           " overlaps fe80::/10 or ff00::/8; use a ULA (fd00::/8) or a global prefix");
    if (config.router_advertisements.autonomous && prefix.length() != 64)
        problems.push_back("prefix " + prefix.to_string() +
                           " is not a /64, which SLAAC needs (RFC 4862 5.5.3 d); use a /64 or set autonomous = false");
    if (config.global_address) {
        const wire::Ipv6Address& address = *config.global_address;
        if (!prefix.contains(address))
            problems.push_back("gateway address " + address.to_string() + " is outside the prefix " +
                               prefix.to_string());
        else if (address == prefix.network() && prefix.length() < 128)
            problems.push_back("gateway address " + address.to_string() +
                               " is the prefix's Subnet-Router anycast address (RFC 4291 2.6.1); pick another");
    }
}

}  // namespace

std::uint32_t effective_min_interval_s(const RouterAdvertisementConfig& config) noexcept {
    if (config.min_interval_s != 0) return config.min_interval_s;
    // RFC 4861 6.2.1: 0.33 * MaxRtrAdvInterval, or MaxRtrAdvInterval itself below 9 s.
    return config.max_interval_s >= 9 ? config.max_interval_s * 33 / 100 : config.max_interval_s;
}

std::uint32_t effective_dns_lifetime_s(const RouterAdvertisementConfig& config) noexcept {
    return config.dns_lifetime_s != 0 ? config.dns_lifetime_s : 3 * config.max_interval_s;
}

std::vector<std::string> check_ipv6_gateway_config(const Ipv6GatewayConfig& config) {
    std::vector<std::string> problems;
    if (config.mac.is_multicast() || config.mac.is_zero())
        problems.push_back("gateway MAC " + config.mac.to_string() + " is not a unicast MAC");
    check_prefix(config, problems);
    if (config.mtu < kMinIpv6Mtu)
        problems.push_back("MTU " + std::to_string(config.mtu) + " is below IPv6's minimum of 1280 (RFC 8200 5)");
    if (config.dns_servers.size() > kMaxDnsServers)
        problems.push_back(std::to_string(config.dns_servers.size()) + " DNS servers; at most " +
                           std::to_string(kMaxDnsServers) + " are advertised");
    for (const wire::Ipv6Address& server : config.dns_servers)
        if (wire::is_unspecified(server) || wire::is_multicast(server))
            problems.push_back("DNS server " + server.to_string() + " is not a unicast address");
    check_router_advertisements(config.router_advertisements, problems);
    return problems;
}

Ipv6Gateway::Ipv6Gateway(Ipv6GatewayConfig config)
    : config_(std::move(config)), link_local_(wire::link_local_address(config_.mac)) {}

TenantIcmpv6 classify_icmpv6(const wire::Ipv6View& ip) noexcept {
    if (ip.upper_layer_protocol() != wire::ip_protocol::kIcmpv6 || ip.fragment_offset() != 0)
        return TenantIcmpv6::not_icmpv6;
    const auto message = ip.upper_layer_payload();
    if (message.empty()) return TenantIcmpv6::other;
    namespace type = wire::icmpv6_type;
    switch (message[0]) {
        case type::kRouterSolicitation:
            return TenantIcmpv6::router_solicitation;
        case type::kRouterAdvertisement:
            return TenantIcmpv6::router_advertisement;
        case type::kNeighborSolicitation:
            return TenantIcmpv6::neighbor_solicitation;
        case type::kNeighborAdvertisement:
            return TenantIcmpv6::neighbor_advertisement;
        case type::kRedirect:
            return TenantIcmpv6::redirect;
        case type::kMulticastListenerQuery:
        case type::kMulticastListenerReport:
        case type::kMulticastListenerDone:
        case type::kMulticastListenerReportV2:
            return TenantIcmpv6::multicast_listener;
        case type::kEchoRequest:
            return TenantIcmpv6::echo_request;
        default:
            return TenantIcmpv6::other;
    }
}

std::string_view to_string(TenantIcmpv6 kind) noexcept {
    switch (kind) {
        case TenantIcmpv6::not_icmpv6:
            return "not_icmpv6";
        case TenantIcmpv6::router_solicitation:
            return "router_solicitation";
        case TenantIcmpv6::router_advertisement:
            return "router_advertisement";
        case TenantIcmpv6::neighbor_solicitation:
            return "neighbor_solicitation";
        case TenantIcmpv6::neighbor_advertisement:
            return "neighbor_advertisement";
        case TenantIcmpv6::redirect:
            return "redirect";
        case TenantIcmpv6::multicast_listener:
            return "multicast_listener";
        case TenantIcmpv6::echo_request:
            return "echo_request";
        case TenantIcmpv6::other:
            return "other";
    }
    return "unknown";
}

}  // namespace andromeda::gateway
