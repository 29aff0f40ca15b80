#include "wire/ipv6_addressing.hpp"

#include <algorithm>

namespace andromeda::wire {

namespace {

constexpr std::uint8_t kMaxPrefixLength = 128;

// `bytes` with everything past the first `length` bits cleared.
std::array<std::uint8_t, 16> masked(std::array<std::uint8_t, 16> bytes, std::uint8_t length) noexcept {
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        const int bits = std::clamp(static_cast<int>(length) - static_cast<int>(i * 8), 0, 8);
        bytes[i] &= static_cast<std::uint8_t>(0xff00u >> bits);
    }
    return bytes;
}

}  // namespace

Ipv6Prefix::Ipv6Prefix(const Ipv6Address& network, std::uint8_t length) noexcept
    : network_(masked(network.bytes(), std::min(length, kMaxPrefixLength))),
      length_(std::min(length, kMaxPrefixLength)) {}

std::optional<Ipv6Prefix> Ipv6Prefix::parse(std::string_view text) {
    const auto slash = text.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    const auto address = Ipv6Address::parse(text.substr(0, slash));
    const auto length_text = text.substr(slash + 1);
    if (!address || length_text.empty() || length_text.size() > 3) return std::nullopt;
    unsigned length = 0;
    for (const char c : length_text) {
        if (c < '0' || c > '9') return std::nullopt;
        length = length * 10 + static_cast<unsigned>(c - '0');
    }
    if (length > kMaxPrefixLength || (length_text.size() > 1 && length_text[0] == '0')) return std::nullopt;
    const Ipv6Prefix prefix(*address, static_cast<std::uint8_t>(length));
    if (prefix.network() != *address) return std::nullopt;
    return prefix;
}

bool Ipv6Prefix::contains(const Ipv6Address& address) const noexcept {
    return Ipv6Address(masked(address.bytes(), length_)) == network_;
}

bool Ipv6Prefix::overlaps(const Ipv6Prefix& other) const noexcept {
    const std::uint8_t shorter = std::min(length_, other.length_);
    return masked(network_.bytes(), shorter) == masked(other.network_.bytes(), shorter);
}

std::string Ipv6Prefix::to_string() const { return network_.to_string() + "/" + std::to_string(length_); }

bool is_unspecified(const Ipv6Address& address) noexcept {
    return std::all_of(address.bytes().begin(), address.bytes().end(), [](std::uint8_t b) { return b == 0; });
}

bool is_solicited_node_multicast(const Ipv6Address& address) noexcept {
    constexpr std::array<std::uint8_t, 13> kPrefix = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff};
    return std::equal(kPrefix.begin(), kPrefix.end(), address.bytes().begin());
}

Ipv6Address all_nodes_multicast() noexcept {
    return Ipv6Address(std::array<std::uint8_t, 16>{0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01});
}

Ipv6Address all_routers_multicast() noexcept {
    return Ipv6Address(std::array<std::uint8_t, 16>{0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02});
}

Ipv6Address solicited_node_multicast(const Ipv6Address& address) noexcept {
    const auto& a = address.bytes();
    return Ipv6Address(
        std::array<std::uint8_t, 16>{0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff, a[13], a[14], a[15]});
}

MacAddress multicast_mac(const Ipv6Address& group) noexcept {
    const auto& g = group.bytes();
    return MacAddress(std::array<std::uint8_t, 6>{0x33, 0x33, g[12], g[13], g[14], g[15]});
}

std::array<std::uint8_t, 8> modified_eui64(const MacAddress& mac) noexcept {
    const auto& m = mac.bytes();
    return {static_cast<std::uint8_t>(m[0] ^ 0x02), m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]};
}

Ipv6Address link_local_address(const MacAddress& mac) noexcept {
    std::array<std::uint8_t, 16> a{0xfe, 0x80};
    const auto id = modified_eui64(mac);
    std::copy(id.begin(), id.end(), a.begin() + 8);
    return Ipv6Address(a);
}

std::optional<Ipv6Address> eui64_address(const Ipv6Prefix& prefix, const MacAddress& mac) noexcept {
    if (prefix.length() != 64) return std::nullopt;
    std::array<std::uint8_t, 16> a = prefix.network().bytes();
    const auto id = modified_eui64(mac);
    std::copy(id.begin(), id.end(), a.begin() + 8);
    return Ipv6Address(a);
}

}  // namespace andromeda::wire
