// Link and network addresses: small value types with strict text parsing for configs and CLIs.
#pragma once

#include <array>
#include <compare>
#include <cstring>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace andromeda::wire {

template <std::size_t N>
[[nodiscard]] constexpr std::strong_ordering compare_bytes(const std::array<std::uint8_t, N>& a,
                                                           const std::array<std::uint8_t, N>& b) noexcept {
    for (std::size_t i = 0; i < N; ++i)
        if (a[i] != b[i]) return a[i] <=> b[i];
    return std::strong_ordering::equal;
}

class MacAddress {
public:
    constexpr MacAddress() = default;
    constexpr explicit MacAddress(const std::array<std::uint8_t, 6>& b) : bytes_(b) {}
    // Inline: on the per-packet path an out-of-line call made GCC spill the 6 bytes one by one
    // and reload them wider, a store-forwarding stall that cost a third of decap's time.
    static MacAddress from_bytes(const std::uint8_t* p) noexcept {
        MacAddress m;
        std::memcpy(m.bytes_.data(), p, 6);
        return m;
    }
    // "02:00:00:00:00:0a" (colons or dashes, case-insensitive); nullopt on anything else.
    static std::optional<MacAddress> parse(std::string_view text) noexcept;

    [[nodiscard]] const std::array<std::uint8_t, 6>& bytes() const noexcept { return bytes_; }
    void copy_to(std::uint8_t* p) const noexcept { std::memcpy(p, bytes_.data(), 6); }
    [[nodiscard]] bool is_broadcast() const noexcept;
    [[nodiscard]] bool is_multicast() const noexcept { return (bytes_[0] & 1) != 0; }
    [[nodiscard]] bool is_zero() const noexcept;
    [[nodiscard]] std::string to_string() const;
    [[nodiscard]] std::uint64_t as_u64() const noexcept;

    // Byte by byte, spelled out: the libc++ of Emscripten 3.1 (the playground) has no <=> for std::array.
    friend constexpr bool operator==(const MacAddress& a, const MacAddress& b) noexcept { return a.bytes_ == b.bytes_; }
    friend constexpr std::strong_ordering operator<=>(const MacAddress& a, const MacAddress& b) noexcept {
        return compare_bytes(a.bytes_, b.bytes_);
    }

private:
    std::array<std::uint8_t, 6> bytes_{};
};

// An IPv4 address held as a host-order number (10.0.0.1 == 0x0a000001).
class Ipv4Address {
public:
    constexpr Ipv4Address() = default;
    constexpr explicit Ipv4Address(std::uint32_t host_order) : value_(host_order) {}
    static Ipv4Address from_bytes(const std::uint8_t* p) noexcept {
        std::uint32_t v;
        std::memcpy(&v, p, sizeof v);
        return Ipv4Address(__builtin_bswap32(v));
    }
    // Strict dotted quad: four decimal octets 0-255, no leading zeros, nothing else.
    static std::optional<Ipv4Address> parse(std::string_view text) noexcept;

    [[nodiscard]] constexpr std::uint32_t value() const noexcept { return value_; }
    void copy_to(std::uint8_t* p) const noexcept;
    [[nodiscard]] std::string to_string() const;

    friend constexpr auto operator<=>(const Ipv4Address&, const Ipv4Address&) = default;

private:
    std::uint32_t value_ = 0;
};

class Ipv6Address {
public:
    constexpr Ipv6Address() = default;
    constexpr explicit Ipv6Address(const std::array<std::uint8_t, 16>& b) : bytes_(b) {}
    static Ipv6Address from_bytes(const std::uint8_t* p) noexcept;
    static std::optional<Ipv6Address> parse(std::string_view text);

    [[nodiscard]] const std::array<std::uint8_t, 16>& bytes() const noexcept { return bytes_; }
    void copy_to(std::uint8_t* p) const noexcept;
    [[nodiscard]] std::string to_string() const;

    // Byte by byte, spelled out: the libc++ of Emscripten 3.1 (the playground) has no <=> for std::array.
    friend constexpr bool operator==(const Ipv6Address& a, const Ipv6Address& b) noexcept { return a.bytes_ == b.bytes_; }
    friend constexpr std::strong_ordering operator<=>(const Ipv6Address& a, const Ipv6Address& b) noexcept {
        return compare_bytes(a.bytes_, b.bytes_);
    }

private:
    std::array<std::uint8_t, 16> bytes_{};
};

// An address of either family: what a node's underlay address is (an IPv4 or an IPv6 underlay).
// Converts implicitly from both, so code that only ever meets IPv4 reads as before.
class IpAddress {
public:
    constexpr IpAddress() = default;  // 0.0.0.0
    constexpr IpAddress(Ipv4Address v4) noexcept : v4_(v4) {}  // NOLINT(google-explicit-constructor)
    constexpr IpAddress(const Ipv6Address& v6) noexcept : v6_(v6), is_ipv6_(true) {}  // NOLINT
    // A dotted quad or an IPv6 address as Ipv6Address::parse takes it; nullopt on anything else.
    static std::optional<IpAddress> parse(std::string_view text);

    [[nodiscard]] constexpr bool is_ipv6() const noexcept { return is_ipv6_; }
    [[nodiscard]] constexpr std::optional<Ipv4Address> ipv4() const noexcept {
        return is_ipv6_ ? std::nullopt : std::optional<Ipv4Address>(v4_);
    }
    [[nodiscard]] constexpr std::optional<Ipv6Address> ipv6() const noexcept {
        return is_ipv6_ ? std::optional<Ipv6Address>(v6_) : std::nullopt;
    }
    [[nodiscard]] std::string to_string() const { return is_ipv6_ ? v6_.to_string() : v4_.to_string(); }
    [[nodiscard]] std::size_t hash() const noexcept;

    friend constexpr bool operator==(const IpAddress& a, const IpAddress& b) noexcept {
        return a.is_ipv6_ == b.is_ipv6_ && (a.is_ipv6_ ? a.v6_ == b.v6_ : a.v4_ == b.v4_);
    }
    friend constexpr bool operator==(const IpAddress& a, const Ipv4Address& b) noexcept { return !a.is_ipv6_ && a.v4_ == b; }
    friend constexpr bool operator==(const IpAddress& a, const Ipv6Address& b) noexcept { return a.is_ipv6_ && a.v6_ == b; }

private:
    Ipv4Address v4_{};
    Ipv6Address v6_{};
    bool is_ipv6_ = false;
};

// An IPv4 prefix such as 10.0.0.0/24. parse() rejects host bits set below the prefix length so a
// typo like 10.0.0.1/24 is caught rather than silently widened.
class Ipv4Prefix {
public:
    constexpr Ipv4Prefix() = default;
    Ipv4Prefix(Ipv4Address network, std::uint8_t length) noexcept;
    static std::optional<Ipv4Prefix> parse(std::string_view text) noexcept;

    [[nodiscard]] Ipv4Address network() const noexcept { return network_; }
    [[nodiscard]] std::uint8_t length() const noexcept { return length_; }
    [[nodiscard]] std::uint32_t mask() const noexcept;
    [[nodiscard]] bool contains(Ipv4Address a) const noexcept;
    [[nodiscard]] bool overlaps(const Ipv4Prefix& other) const noexcept;
    [[nodiscard]] std::string to_string() const;

    friend constexpr auto operator<=>(const Ipv4Prefix&, const Ipv4Prefix&) = default;

private:
    Ipv4Address network_{};
    std::uint8_t length_ = 0;
};

}  // namespace andromeda::wire

template <>
struct std::hash<andromeda::wire::Ipv4Address> {
    std::size_t operator()(const andromeda::wire::Ipv4Address& a) const noexcept { return a.value(); }
};
template <>
struct std::hash<andromeda::wire::IpAddress> {
    std::size_t operator()(const andromeda::wire::IpAddress& a) const noexcept { return a.hash(); }
};
template <>
struct std::hash<andromeda::wire::MacAddress> {
    std::size_t operator()(const andromeda::wire::MacAddress& m) const noexcept { return m.as_u64(); }
};
