// The outcome of parsing a header: the view, or the reason the bytes were refused. Parsers never
// throw and never allocate, so the per-packet path can call them freely; the error names why a
// frame was dropped so counters and logs can say more than "malformed".
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

namespace andromeda::wire {

enum class ParseError : std::uint8_t {
    None,
    Truncated,                 // the buffer ends before the header (or a length it declares) does
    BadVersion,                // IPv4/IPv6 version field is not 4/6
    BadHeaderLength,           // IPv4 IHL < 5, TCP data offset < 5, or a header length past the packet
    BadTotalLength,            // IPv4 total length smaller than its own header
    BadLength,                 // UDP length field smaller than the UDP header
    TooManyVlanTags,           // more than two stacked 802.1Q/802.1ad tags
    TooManyExtensionHeaders,   // IPv6 extension-header chain longer than we are willing to walk
    BadHardwareType,           // ARP that is not Ethernet/IPv4
    BadAddressLength,          // ARP hardware/protocol address lengths not 6/4
};

[[nodiscard]] constexpr std::string_view to_string(ParseError e) noexcept {
    switch (e) {
        case ParseError::None: return "none";
        case ParseError::Truncated: return "truncated";
        case ParseError::BadVersion: return "bad_version";
        case ParseError::BadHeaderLength: return "bad_header_length";
        case ParseError::BadTotalLength: return "bad_total_length";
        case ParseError::BadLength: return "bad_length";
        case ParseError::TooManyVlanTags: return "too_many_vlan_tags";
        case ParseError::TooManyExtensionHeaders: return "too_many_extension_headers";
        case ParseError::BadHardwareType: return "bad_hardware_type";
        case ParseError::BadAddressLength: return "bad_address_length";
    }
    return "unknown";
}

// Either a parsed view or an error (a ParseError, or a codec's own error type whose value-initialised
// value means "none": NdpError::None, DHCP's and DNS's errors that say what was wrong and where).
// Reads like std::optional (operator bool, *, ->) plus error(). Dereferencing a failed result is a
// precondition violation, as with std::optional.
template <class View, class Error = ParseError>
class Parsed {
public:
    Parsed(View view) noexcept : view_(std::move(view)) {}                          // NOLINT(implicit)
    Parsed(Error error) noexcept : error_(error) {}                                 // NOLINT(implicit)

    [[nodiscard]] explicit operator bool() const noexcept { return view_.has_value(); }
    [[nodiscard]] bool has_value() const noexcept { return view_.has_value(); }
    [[nodiscard]] Error error() const noexcept { return error_; }

    [[nodiscard]] const View& operator*() const noexcept { return *view_; }
    [[nodiscard]] View& operator*() noexcept { return *view_; }
    [[nodiscard]] const View* operator->() const noexcept { return &*view_; }
    [[nodiscard]] View* operator->() noexcept { return &*view_; }

private:
    std::optional<View> view_;
    Error error_{};
};

}  // namespace andromeda::wire
