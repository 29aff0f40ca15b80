// IPv6 addressing for a router on an Ethernet link: prefixes, the modified EUI-64 interface
// identifier SLAAC derives from a MAC (RFC 4291 appendix A, RFC 4862), and the multicast groups
// and MACs Neighbor Discovery uses (RFC 4291 2.7.1, RFC 2464 7).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "wire/addresses.hpp"

namespace andromeda::wire {

// A prefix such as fd00:0:0:1::/64. parse() refuses host bits set below the length, as
// Ipv4Prefix::parse does, so "fd00::1/64" is caught rather than silently widened.
class Ipv6Prefix {
public:
    constexpr Ipv6Prefix() = default;
    // Clears the host bits of `network`; a length past 128 is taken as 128.
    Ipv6Prefix(const Ipv6Address& network, std::uint8_t length) noexcept;
    static std::optional<Ipv6Prefix> parse(std::string_view text);

    [[nodiscard]] const Ipv6Address& network() const noexcept { return network_; }
    [[nodiscard]] std::uint8_t length() const noexcept { return length_; }
    [[nodiscard]] bool contains(const Ipv6Address& address) const noexcept;
    [[nodiscard]] bool overlaps(const Ipv6Prefix& other) const noexcept;
    [[nodiscard]] std::string to_string() const;

    friend bool operator==(const Ipv6Prefix&, const Ipv6Prefix&) = default;

private:
    Ipv6Address network_{};
    std::uint8_t length_ = 0;
};

[[nodiscard]] bool is_unspecified(const Ipv6Address& address) noexcept;        // ::
[[nodiscard]] inline bool is_multicast(const Ipv6Address& address) noexcept {  // ff00::/8
    return address.bytes()[0] == 0xff;
}
[[nodiscard]] inline bool is_link_local(const Ipv6Address& address) noexcept {  // fe80::/10
    return address.bytes()[0] == 0xfe && (address.bytes()[1] & 0xc0) == 0x80;
}
// ff02::1:ff00:0/104, the group a Neighbor Solicitation for an address is sent to.
[[nodiscard]] bool is_solicited_node_multicast(const Ipv6Address& address) noexcept;

[[nodiscard]] Ipv6Address all_nodes_multicast() noexcept;    // ff02::1
[[nodiscard]] Ipv6Address all_routers_multicast() noexcept;  // ff02::2
// ff02::1:ffXX:XXXX with the low 24 bits of `address`.
[[nodiscard]] Ipv6Address solicited_node_multicast(const Ipv6Address& address) noexcept;
// The Ethernet destination of an IPv6 multicast packet: 33:33 and the group's low 32 bits.
[[nodiscard]] MacAddress multicast_mac(const Ipv6Address& group) noexcept;

// The modified EUI-64 interface identifier of `mac`: ff:fe inserted in the middle and the
// universal/local bit (0x02 of the first byte) inverted.
[[nodiscard]] std::array<std::uint8_t, 8> modified_eui64(const MacAddress& mac) noexcept;
// fe80::/64 + modified_eui64(mac): what a Linux interface with addr_gen_mode 0 takes.
[[nodiscard]] Ipv6Address link_local_address(const MacAddress& mac) noexcept;
// The SLAAC address of `mac` in `prefix` (prefix + modified_eui64(mac)); nullopt unless the prefix
// is a /64, because RFC 4862 5.5.3 (d) has a host ignore a prefix whose length plus the 64-bit
// interface identifier is not 128.
[[nodiscard]] std::optional<Ipv6Address> eui64_address(const Ipv6Prefix& prefix, const MacAddress& mac) noexcept;

}  // namespace andromeda::wire
