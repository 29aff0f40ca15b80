// An address of either family as the firewall matches and keys it. The family comes first in the
// order, so one sorted list of ranges holds both and no IPv4 range ever meets an IPv6 address
// (an IPv4-mapped IPv6 address, ::ffff:a.b.c.d, stays IPv6 here: it is not the IPv4 peer).
#pragma once

#include <compare>
#include <cstdint>
#include <string>

#include "wire/addresses.hpp"
#include "wire/bytes.hpp"

namespace andromeda::policy {

struct Address {
    bool v6 = false;
    std::uint64_t high = 0;  // IPv6: bytes 0-7, big-endian; IPv4: 0
    std::uint64_t low = 0;   // IPv6: bytes 8-15; IPv4: the address, host order

    [[nodiscard]] static constexpr Address v4(std::uint32_t ip) noexcept { return {false, 0, ip}; }
    [[nodiscard]] static constexpr Address v4(wire::Ipv4Address ip) noexcept { return v4(ip.value()); }
    [[nodiscard]] static Address of(const wire::Ipv6Address& ip) noexcept { return from_bytes(ip.bytes().data()); }
    [[nodiscard]] static Address from_bytes(const std::uint8_t* p) noexcept {
        const auto be64 = [](const std::uint8_t* q) {
            return (std::uint64_t{wire::load_be32(q)} << 32) | wire::load_be32(q + 4);
        };
        return {true, be64(p), be64(p + 8)};
    }
    // The largest address of the family: the end of a range that runs to it.
    [[nodiscard]] constexpr bool is_last() const noexcept {
        return v6 ? high == ~std::uint64_t{0} && low == ~std::uint64_t{0} : low == 0xFFFFFFFFu;
    }
    // The next address of the family (not called on the last one).
    [[nodiscard]] constexpr Address next() const noexcept {
        if (!v6) return {false, 0, low + 1};
        return low == ~std::uint64_t{0} ? Address{true, high + 1, 0} : Address{true, high, low + 1};
    }
    [[nodiscard]] std::uint32_t v4_value() const noexcept { return static_cast<std::uint32_t>(low); }
    [[nodiscard]] wire::Ipv6Address v6_value() const noexcept {
        std::array<std::uint8_t, 16> b{};
        wire::store_be32(b.data(), static_cast<std::uint32_t>(high >> 32));
        wire::store_be32(b.data() + 4, static_cast<std::uint32_t>(high));
        wire::store_be32(b.data() + 8, static_cast<std::uint32_t>(low >> 32));
        wire::store_be32(b.data() + 12, static_cast<std::uint32_t>(low));
        return wire::Ipv6Address(b);
    }
    [[nodiscard]] std::string to_string() const {
        return v6 ? v6_value().to_string() : wire::Ipv4Address(v4_value()).to_string();
    }

    friend constexpr auto operator<=>(const Address&, const Address&) = default;
};

}  // namespace andromeda::policy
