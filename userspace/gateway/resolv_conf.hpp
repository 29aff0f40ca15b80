// The upstream resolvers of the DNS forwarder, read from a resolv.conf text (resolv.conf(5)):
// the node's configured list, or by default the host's own /etc/resolv.conf.
//
// Policy, following glibc so the forwarder asks what the host itself would ask:
// - `nameserver` lines in file order, at most three (glibc's MAXNS); later ones are reported and
//   ignored. Every other keyword (search, domain, options, sortlist) is ignored: the forwarder
//   relays queries, it does not complete names, and its timeouts are its own.
// - Loopback nameservers (127.0.0.53, systemd-resolved's stub; 127.0.0.1, a local dnsmasq or
//   unbound) are kept, even beside others: the forwarder's sockets are the daemon's, in the
//   host's network namespace, where such a stub listens, and going round it would bypass the
//   host's cache and split-DNS rules. is_loopback() lets the daemon say so in its log. A daemon
//   run in a network namespace of its own (the multi-node tests) cannot reach the host's stub:
//   give it its upstreams explicitly.
// - No nameserver line at all means 127.0.0.1, as for glibc (with a warning).
// - An IPv6 link-local address with a zone (fe80::1%eth0) needs an interface the I/O-free core
//   does not know: reported and skipped, as is anything that is not an address.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "wire/addresses.hpp"

namespace andromeda::gateway {

inline constexpr std::string_view kHostResolvConf = "/etc/resolv.conf";
inline constexpr std::size_t kMaxResolvConfNameservers = 3;

struct DnsUpstream {
    std::variant<wire::Ipv4Address, wire::Ipv6Address> address;
    std::uint16_t port = 53;

    [[nodiscard]] bool is_ipv6() const noexcept { return address.index() == 1; }
    [[nodiscard]] bool is_loopback() const noexcept;
    [[nodiscard]] std::string to_string() const;  // "192.0.2.1:53", "[2001:db8::1]:53"
    friend bool operator==(const DnsUpstream&, const DnsUpstream&) = default;
};

struct ResolvConf {
    std::vector<DnsUpstream> nameservers;
    std::vector<std::string> warnings;  // "line N: ...": what was skipped and why
};

// Never fails: what cannot be used is a warning.
[[nodiscard]] ResolvConf parse_resolv_conf(std::string_view text);

}  // namespace andromeda::gateway
