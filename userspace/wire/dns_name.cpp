// DnsName and the reading of (compressed) names out of a message.
#include <algorithm>

#include "wire/dns.hpp"

namespace andromeda::wire {

namespace {

constexpr std::uint8_t lower(std::uint8_t c) noexcept {
    return c >= 'A' && c <= 'Z' ? static_cast<std::uint8_t>(c + ('a' - 'A')) : c;
}

// Length bytes are at most 63, below 'A', so a case-insensitive compare of two wire forms may
// fold every byte: only letters change.
bool equal_ignoring_case(const std::uint8_t* a, const std::uint8_t* b, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i)
        if (lower(a[i]) != lower(b[i])) return false;
    return true;
}

}  // namespace

std::optional<DnsName> DnsName::from_text(std::string_view dotted) noexcept {
    DnsName name;
    if (dotted == "." || dotted.empty()) return name;
    if (dotted.back() == '.') dotted.remove_suffix(1);
    std::size_t at = 0;
    for (;;) {
        const std::size_t dot = dotted.find('.');
        const std::string_view label = dotted.substr(0, dot);
        if (label.empty() || label.size() > kDnsMaxLabelLength) return std::nullopt;
        if (at + 1 + label.size() + 1 > kDnsMaxNameLength) return std::nullopt;
        name.bytes_[at] = static_cast<std::uint8_t>(label.size());
        std::copy(label.begin(), label.end(), name.bytes_.begin() + static_cast<std::ptrdiff_t>(at + 1));
        at += 1 + label.size();
        if (dot == std::string_view::npos) break;
        dotted.remove_prefix(dot + 1);
    }
    name.bytes_[at] = 0;
    name.length_ = static_cast<std::uint8_t>(at + 1);
    return name;
}

std::size_t DnsName::label_count() const noexcept {
    std::size_t count = 0;
    for (std::size_t at = 0; at < length_ && bytes_[at] != 0; at += 1 + std::size_t{bytes_[at]}) ++count;
    return count;
}

ByteSpan DnsName::label(std::size_t index) const noexcept {
    std::size_t at = 0;
    for (; at < length_ && bytes_[at] != 0; at += 1 + std::size_t{bytes_[at]})
        if (index-- == 0) return ByteSpan(&bytes_[at + 1], bytes_[at]);
    return {};
}

bool DnsName::equals_ignoring_case(const DnsName& other) const noexcept {
    return length_ == other.length_ && equal_ignoring_case(bytes_.data(), other.bytes_.data(), length_);
}

bool DnsName::is_at_or_below(const DnsName& zone) const noexcept {
    if (zone.length_ > length_) return false;
    const std::size_t suffix = length_ - zone.length_;
    std::size_t at = 0;
    while (at < suffix) at += 1 + std::size_t{bytes_[at]};  // label boundaries only
    return at == suffix && equal_ignoring_case(&bytes_[at], zone.bytes_.data(), zone.length_);
}

std::string DnsName::to_string() const {
    if (length_ <= 1) return ".";
    std::string text;
    for (std::size_t at = 0; bytes_[at] != 0; at += 1 + std::size_t{bytes_[at]}) {
        if (!text.empty()) text += '.';
        for (std::size_t i = 1; i <= bytes_[at]; ++i) {
            const std::uint8_t c = bytes_[at + i];
            const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                               c == '-' || c == '_';
            if (plain) {
                text += static_cast<char>(c);
            } else {
                text += '\\';
                text += static_cast<char>('0' + c / 100);
                text += static_cast<char>('0' + c / 10 % 10);
                text += static_cast<char>('0' + c % 10);
            }
        }
    }
    return text;
}

// Each pointer must land before `run_start`, where the labels it ends began: positions only
// decrease, so no name loops, and kDnsMaxPointerHops bounds the work on a hostile chain.
DnsError read_dns_name(ByteSpan m, std::size_t offset, DnsName* name, std::size_t& next) noexcept {
    std::size_t at = offset;
    std::size_t run_start = offset;
    std::size_t length = 0;  // of the uncompressed wire form so far
    std::size_t hops = 0;
    bool jumped = false;
    for (;;) {
        if (at >= m.size()) return {DnsErrorKind::truncated_name, at};
        const std::uint8_t b = m[at];
        if ((b & 0xc0) == 0xc0) {
            if (at + 1 >= m.size()) return {DnsErrorKind::truncated_name, at};
            const std::size_t target = std::size_t{b & 0x3fu} << 8 | m[at + 1];
            if (target < kDnsHeaderLength || target >= run_start) return {DnsErrorKind::bad_pointer, at};
            if (++hops > kDnsMaxPointerHops) return {DnsErrorKind::too_many_pointers, at};
            if (!jumped) next = at + 2;
            jumped = true;
            at = run_start = target;
            continue;
        }
        if ((b & 0xc0) != 0) return {DnsErrorKind::bad_label_type, at};
        if (b == 0) {
            if (!jumped) next = at + 1;
            if (name != nullptr) {
                name->bytes_[length] = 0;
                name->length_ = static_cast<std::uint8_t>(length + 1);
            }
            return {};
        }
        if (at + 1 + b > m.size()) return {DnsErrorKind::truncated_name, at};
        if (length + 1 + b + 1 > kDnsMaxNameLength) return {DnsErrorKind::name_too_long, at};
        if (name != nullptr) std::copy_n(&m[at], 1 + std::size_t{b}, &name->bytes_[length]);
        length += 1 + std::size_t{b};
        at += 1 + std::size_t{b};
    }
}

bool is_hostname_label(std::string_view label) noexcept {
    if (label.empty() || label.size() > kDnsMaxLabelLength) return false;
    if (label.front() == '-' || label.back() == '-') return false;
    return std::all_of(label.begin(), label.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    });
}

}  // namespace andromeda::wire
