#include "wire/dhcp.hpp"

#include <algorithm>
#include <cstring>

namespace andromeda::wire {

namespace {

struct Area {
    std::size_t begin;
    std::size_t end;
};

// Area 0 is the options field, 1 the file field, 2 sname (RFC 2131 4.1's order).
Area area_bounds(std::uint8_t area, std::size_t message_length) noexcept {
    switch (area) {
        case 0: return {kDhcpOptionsOffset, message_length};
        case 1: return {kDhcpFileOffset, kDhcpFileOffset + kDhcpFileLength};
        default: return {kDhcpSnameOffset, kDhcpSnameOffset + kDhcpSnameLength};
    }
}

bool area_in_use(std::uint8_t area, std::uint8_t overload) noexcept {
    switch (area) {
        case 0: return true;
        case 1: return (overload & dhcp_overload::kFile) != 0;
        case 2: return (overload & dhcp_overload::kSname) != 0;
        default: return false;
    }
}

// Checks every option of one area; the first Option Overload of the options field is returned
// through `overload`. An area ends at End or at its last byte (many clients omit End).
DhcpError validate_area(ByteSpan m, Area area, bool overload_allowed, std::uint8_t& overload) noexcept {
    std::size_t at = area.begin;
    while (at < area.end) {
        const std::uint8_t code = m[at];
        if (code == dhcp_option::kPad) {
            ++at;
            continue;
        }
        if (code == dhcp_option::kEnd) break;
        if (at + 2 > area.end || at + 2 + m[at + 1] > area.end) return {DhcpErrorKind::truncated_option, at};
        const std::uint8_t length = m[at + 1];
        if (code == dhcp_option::kOverload) {
            if (!overload_allowed || length != 1 || m[at + 2] < 1 || m[at + 2] > 3)
                return {DhcpErrorKind::bad_overload, at};
            if (overload == 0) overload = m[at + 2];
        }
        at += 2 + std::size_t{length};
    }
    return {};
}

}  // namespace

std::string_view to_string(DhcpErrorKind kind) noexcept {
    switch (kind) {
        case DhcpErrorKind::none: return "none";
        case DhcpErrorKind::truncated: return "truncated";
        case DhcpErrorKind::bad_magic_cookie: return "bad_magic_cookie";
        case DhcpErrorKind::bad_hardware_length: return "bad_hardware_length";
        case DhcpErrorKind::truncated_option: return "truncated_option";
        case DhcpErrorKind::bad_overload: return "bad_overload";
    }
    return "unknown";
}

Parsed<DhcpView, DhcpError> DhcpView::parse(ByteSpan message) noexcept {
    if (message.size() < kDhcpOptionsOffset) return DhcpError{DhcpErrorKind::truncated, message.size()};
    if (message[2] > kDhcpChaddrLength) return DhcpError{DhcpErrorKind::bad_hardware_length, 2};
    if (load_be32(&message[kDhcpFixedLength]) != kDhcpMagicCookie)
        return DhcpError{DhcpErrorKind::bad_magic_cookie, kDhcpFixedLength};
    std::uint8_t overload = 0;
    if (const DhcpError e = validate_area(message, area_bounds(0, message.size()), true, overload);
        e.kind != DhcpErrorKind::none)
        return e;
    for (std::uint8_t area = 1; area <= 2; ++area) {
        if (!area_in_use(area, overload)) continue;
        std::uint8_t ignored = 0;
        if (const DhcpError e = validate_area(message, area_bounds(area, message.size()), false, ignored);
            e.kind != DhcpErrorKind::none)
            return e;
    }
    return DhcpView(message, overload);
}

DhcpOptionCursor::DhcpOptionCursor(ByteSpan message, std::uint8_t overload) noexcept
    : message_(message), overload_(overload) {
    const Area a = area_bounds(0, message.size());
    at_ = a.begin;
    end_ = a.end;
}

bool DhcpOptionCursor::enter_next_area() noexcept {
    while (area_ < 3) {
        ++area_;
        if (!area_in_use(area_, overload_)) continue;
        const Area a = area_bounds(area_, message_.size());
        at_ = a.begin;
        end_ = a.end;
        return true;
    }
    return false;
}

std::optional<DhcpOption> DhcpOptionCursor::next() noexcept {
    for (;;) {
        if (at_ >= end_ && !enter_next_area()) return std::nullopt;
        if (at_ >= end_) continue;
        const std::uint8_t code = message_[at_];
        if (code == dhcp_option::kPad) {
            ++at_;
            continue;
        }
        // End closes the area; so does an option parse() would have refused (defensive: a
        // cursor over an unvalidated span never reads past it).
        if (code == dhcp_option::kEnd || at_ + 2 > end_ || at_ + 2 + message_[at_ + 1] > end_) {
            at_ = end_;
            continue;
        }
        const DhcpOption option{code, message_.subspan(at_ + 2, message_[at_ + 1]), at_};
        at_ += 2 + std::size_t{message_[at_ + 1]};
        return option;
    }
}

std::optional<DhcpOption> DhcpView::find(std::uint8_t code) const noexcept {
    DhcpOptionCursor cursor = options();
    while (const auto option = cursor.next())
        if (option->code == code) return option;
    return std::nullopt;
}

std::optional<ByteSpan> DhcpView::concatenated(std::uint8_t code, MutableByteSpan scratch) const noexcept {
    std::size_t length = 0;
    bool found = false;
    DhcpOptionCursor cursor = options();
    while (const auto option = cursor.next()) {
        if (option->code != code) continue;
        if (length + option->value.size() > scratch.size()) return std::nullopt;
        std::copy(option->value.begin(), option->value.end(), scratch.begin() + static_cast<std::ptrdiff_t>(length));
        length += option->value.size();
        found = true;
    }
    if (!found) return std::nullopt;
    return ByteSpan(scratch.first(length));
}

std::optional<std::uint8_t> DhcpView::message_type() const noexcept {
    const auto option = find(dhcp_option::kMessageType);
    if (!option || option->value.size() != 1) return std::nullopt;
    return option->value[0];
}

std::optional<Ipv4Address> DhcpView::ipv4_option(std::uint8_t code) const noexcept {
    const auto option = find(code);
    if (!option || option->value.size() != 4) return std::nullopt;
    return Ipv4Address::from_bytes(option->value.data());
}

std::optional<std::uint16_t> DhcpView::u16_option(std::uint8_t code) const noexcept {
    const auto option = find(code);
    if (!option || option->value.size() != 2) return std::nullopt;
    return load_be16(option->value.data());
}

std::optional<std::uint32_t> DhcpView::u32_option(std::uint8_t code) const noexcept {
    const auto option = find(code);
    if (!option || option->value.size() != 4) return std::nullopt;
    return load_be32(option->value.data());
}

DhcpBuilder::DhcpBuilder(MutableByteSpan out, const DhcpFixedFields& f, std::size_t max_length) noexcept
    : out_(out), limit_(std::min(out.size(), max_length)) {
    if (limit_ < kDhcpOptionsOffset + 1) return;
    std::uint8_t* p = out.data();
    std::memset(p, 0, kDhcpOptionsOffset);
    p[0] = f.op;
    p[1] = f.hardware_type;
    p[2] = f.hardware_length;
    p[3] = f.hops;
    store_be32(p + 4, f.xid);
    store_be16(p + 8, f.secs);
    store_be16(p + 10, f.flags);
    f.ciaddr.copy_to(p + 12);
    f.yiaddr.copy_to(p + 16);
    f.siaddr.copy_to(p + 20);
    f.giaddr.copy_to(p + 24);
    std::memcpy(p + 28, f.chaddr.data(), kDhcpChaddrLength);
    std::copy_n(f.sname.begin(), std::min(f.sname.size(), kDhcpSnameLength), p + kDhcpSnameOffset);
    std::copy_n(f.file.begin(), std::min(f.file.size(), kDhcpFileLength), p + kDhcpFileOffset);
    store_be32(p + kDhcpFixedLength, kDhcpMagicCookie);
    at_ = kDhcpOptionsOffset;
    ok_ = true;
}

bool DhcpBuilder::fits(std::size_t value_length) const noexcept {
    return ok_ && value_length <= 255 && at_ + 2 + value_length + 1 <= limit_;
}

bool DhcpBuilder::add(std::uint8_t code, ByteSpan value) noexcept {
    if (code == dhcp_option::kPad || code == dhcp_option::kEnd || !fits(value.size())) return false;
    out_[at_] = code;
    out_[at_ + 1] = static_cast<std::uint8_t>(value.size());
    if (!value.empty()) std::memcpy(&out_[at_ + 2], value.data(), value.size());
    at_ += 2 + value.size();
    return true;
}

bool DhcpBuilder::add_u8(std::uint8_t code, std::uint8_t value) noexcept {
    return add(code, ByteSpan(&value, 1));
}

bool DhcpBuilder::add_u16(std::uint8_t code, std::uint16_t value) noexcept {
    std::uint8_t b[2];
    store_be16(b, value);
    return add(code, b);
}

bool DhcpBuilder::add_u32(std::uint8_t code, std::uint32_t value) noexcept {
    std::uint8_t b[4];
    store_be32(b, value);
    return add(code, b);
}

bool DhcpBuilder::add_ipv4(std::uint8_t code, Ipv4Address value) noexcept { return add_u32(code, value.value()); }

bool DhcpBuilder::add_pad() noexcept {
    if (!ok_ || at_ + 2 > limit_) return false;
    out_[at_++] = dhcp_option::kPad;
    return true;
}

std::size_t DhcpBuilder::finish(std::size_t min_length) noexcept {
    if (!ok_) return 0;
    out_[at_++] = dhcp_option::kEnd;
    const std::size_t padded = std::min(std::max(at_, min_length), limit_);
    std::memset(&out_[at_], 0, padded - at_);
    at_ = padded;
    ok_ = false;  // finished: nothing more may be added
    return at_;
}

}  // namespace andromeda::wire
