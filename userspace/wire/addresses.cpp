#include "wire/addresses.hpp"

#include <arpa/inet.h>

#include <cstdio>
#include <cstring>

#include "wire/bytes.hpp"

namespace andromeda::wire {

namespace {

int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

std::optional<MacAddress> MacAddress::parse(std::string_view text) noexcept {
    if (text.size() != 17) return std::nullopt;
    const char sep = text[2];
    if (sep != ':' && sep != '-') return std::nullopt;
    std::array<std::uint8_t, 6> b{};
    for (std::size_t i = 0; i < 6; ++i) {
        const int hi = hex_value(text[i * 3]);
        const int lo = hex_value(text[i * 3 + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        if (i < 5 && text[i * 3 + 2] != sep) return std::nullopt;
        b[i] = static_cast<std::uint8_t>(hi << 4 | lo);
    }
    return MacAddress(b);
}

bool MacAddress::is_broadcast() const noexcept {
    for (auto v : bytes_)
        if (v != 0xff) return false;
    return true;
}

bool MacAddress::is_zero() const noexcept {
    for (auto v : bytes_)
        if (v != 0) return false;
    return true;
}

std::uint64_t MacAddress::as_u64() const noexcept {
    std::uint64_t v = 0;
    for (auto b : bytes_) v = v << 8 | b;
    return v;
}

std::string MacAddress::to_string() const {
    char buf[18];
    std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", bytes_[0], bytes_[1], bytes_[2], bytes_[3],
                  bytes_[4], bytes_[5]);
    return buf;
}

std::optional<Ipv4Address> Ipv4Address::parse(std::string_view text) noexcept {
    std::uint32_t value = 0;
    std::size_t pos = 0;
    for (int octet = 0; octet < 4; ++octet) {
        if (octet > 0) {
            if (pos >= text.size() || text[pos] != '.') return std::nullopt;
            ++pos;
        }
        const std::size_t start = pos;
        std::uint32_t v = 0;
        while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9' && pos - start < 3) {
            v = v * 10 + static_cast<std::uint32_t>(text[pos] - '0');
            ++pos;
        }
        const std::size_t digits = pos - start;
        if (digits == 0 || v > 255 || (digits > 1 && text[start] == '0')) return std::nullopt;
        value = value << 8 | v;
    }
    if (pos != text.size()) return std::nullopt;
    return Ipv4Address(value);
}

void Ipv4Address::copy_to(std::uint8_t* p) const noexcept { store_be32(p, value_); }

std::string Ipv4Address::to_string() const {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", value_ >> 24, (value_ >> 16) & 0xff, (value_ >> 8) & 0xff,
                  value_ & 0xff);
    return buf;
}

Ipv6Address Ipv6Address::from_bytes(const std::uint8_t* p) noexcept {
    std::array<std::uint8_t, 16> b;
    std::memcpy(b.data(), p, b.size());
    return Ipv6Address(b);
}

std::optional<Ipv6Address> Ipv6Address::parse(std::string_view text) {
    const std::string s(text);
    std::array<std::uint8_t, 16> b{};
    if (inet_pton(AF_INET6, s.c_str(), b.data()) != 1) return std::nullopt;
    return Ipv6Address(b);
}

void Ipv6Address::copy_to(std::uint8_t* p) const noexcept { std::memcpy(p, bytes_.data(), bytes_.size()); }

std::string Ipv6Address::to_string() const {
    char buf[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, bytes_.data(), buf, sizeof buf);
    return buf;
}

std::optional<IpAddress> IpAddress::parse(std::string_view text) {
    if (const auto v4 = Ipv4Address::parse(text)) return IpAddress(*v4);
    // Not a dotted quad and no colon: no address of either family (inet_pton need not be asked).
    if (text.find(':') == std::string_view::npos) return std::nullopt;
    if (const auto v6 = Ipv6Address::parse(text)) return IpAddress(*v6);
    return std::nullopt;
}

std::size_t IpAddress::hash() const noexcept {
    if (!is_ipv6_) return v4_.value();
    std::uint64_t halves[2];
    std::memcpy(halves, v6_.bytes().data(), sizeof halves);
    return static_cast<std::size_t>((halves[0] * 0x9e3779b97f4a7c15ULL) ^ halves[1]);
}

Ipv4Prefix::Ipv4Prefix(Ipv4Address network, std::uint8_t length) noexcept
    : network_(Ipv4Address(network.value() & (length == 0 ? 0 : ~0U << (32 - length)))), length_(length) {}

std::optional<Ipv4Prefix> Ipv4Prefix::parse(std::string_view text) noexcept {
    const auto slash = text.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    const auto addr = Ipv4Address::parse(text.substr(0, slash));
    const auto len_text = text.substr(slash + 1);
    if (!addr || len_text.empty() || len_text.size() > 2) return std::nullopt;
    unsigned len = 0;
    for (char c : len_text) {
        if (c < '0' || c > '9') return std::nullopt;
        len = len * 10 + static_cast<unsigned>(c - '0');
    }
    if (len > 32 || (len_text.size() > 1 && len_text[0] == '0')) return std::nullopt;
    Ipv4Prefix p(*addr, static_cast<std::uint8_t>(len));
    if (p.network() != *addr) return std::nullopt;
    return p;
}

std::uint32_t Ipv4Prefix::mask() const noexcept { return length_ == 0 ? 0 : ~0U << (32 - length_); }

bool Ipv4Prefix::contains(Ipv4Address a) const noexcept { return (a.value() & mask()) == network_.value(); }

bool Ipv4Prefix::overlaps(const Ipv4Prefix& other) const noexcept {
    const std::uint32_t m = length_ < other.length_ ? mask() : other.mask();
    return (network_.value() & m) == (other.network_.value() & m);
}

std::string Ipv4Prefix::to_string() const { return network_.to_string() + "/" + std::to_string(length_); }

}  // namespace andromeda::wire
