// DHCPv4 messages (RFC 2131, options RFC 2132): a bounds-checked view and a builder.
//
// A message is the BOOTP fixed part (236 bytes: op to file), the magic cookie 99.130.83.99 and
// the options, each a code byte, a length byte and the value, except Pad (0, one byte) and End
// (255, the last). The Option Overload option (52) moves more options into the `file` and/or
// `sname` fields; the view reads them in RFC 2131 4.1's order (options, then file, then sname).
// An option may appear several times: RFC 3396 concatenates the values (concatenated()).
//
// parse() walks every option area once, so the view's accessors never read past the message.
// The builder never overloads: what does not fit in the options field is refused, and the server
// leaves such an option out (its replies are a few hundred bytes).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "wire/addresses.hpp"
#include "wire/bytes.hpp"
#include "wire/parse_result.hpp"

namespace andromeda::wire {

inline constexpr std::size_t kDhcpFixedLength = 236;  // op .. file
inline constexpr std::size_t kDhcpOptionsOffset = 240;  // after the magic cookie
inline constexpr std::uint32_t kDhcpMagicCookie = 0x63825363;
inline constexpr std::uint16_t kDhcpServerPort = 67;
inline constexpr std::uint16_t kDhcpClientPort = 68;
// RFC 1542 2.1: BOOTP messages are at least 300 bytes; old clients drop shorter ones, so the
// server pads its replies to this length.
inline constexpr std::size_t kBootpMinMessageLength = 300;
// RFC 2131 2: a client must accept a 576-byte IP datagram; the Maximum Message Size option (57)
// may raise it, never lower it.
inline constexpr std::size_t kDhcpMinMaxDatagram = 576;
inline constexpr std::uint16_t kDhcpBroadcastFlag = 0x8000;

inline constexpr std::size_t kDhcpSnameOffset = 44;
inline constexpr std::size_t kDhcpSnameLength = 64;
inline constexpr std::size_t kDhcpFileOffset = 108;
inline constexpr std::size_t kDhcpFileLength = 128;
inline constexpr std::size_t kDhcpChaddrLength = 16;

namespace dhcp_op {
inline constexpr std::uint8_t kBootRequest = 1;
inline constexpr std::uint8_t kBootReply = 2;
}  // namespace dhcp_op

namespace dhcp_message_type {
inline constexpr std::uint8_t kDiscover = 1;
inline constexpr std::uint8_t kOffer = 2;
inline constexpr std::uint8_t kRequest = 3;
inline constexpr std::uint8_t kDecline = 4;
inline constexpr std::uint8_t kAck = 5;
inline constexpr std::uint8_t kNak = 6;
inline constexpr std::uint8_t kRelease = 7;
inline constexpr std::uint8_t kInform = 8;
}  // namespace dhcp_message_type

// "DISCOVER", "OFFER", ... as RFC 2131 names them; "-" for none (0), "?" for an unknown type.
[[nodiscard]] constexpr std::string_view dhcp_message_type_name(std::uint8_t type) noexcept {
    constexpr std::string_view kNames[] = {"-", "DISCOVER", "OFFER", "REQUEST", "DECLINE", "ACK", "NAK", "RELEASE", "INFORM"};
    return type < std::size(kNames) ? kNames[type] : "?";
}

namespace dhcp_option {
inline constexpr std::uint8_t kPad = 0;
inline constexpr std::uint8_t kSubnetMask = 1;
inline constexpr std::uint8_t kRouter = 3;
inline constexpr std::uint8_t kDomainNameServer = 6;
inline constexpr std::uint8_t kHostName = 12;
inline constexpr std::uint8_t kDomainName = 15;
inline constexpr std::uint8_t kInterfaceMtu = 26;
inline constexpr std::uint8_t kBroadcastAddress = 28;
inline constexpr std::uint8_t kRequestedAddress = 50;
inline constexpr std::uint8_t kLeaseTime = 51;
inline constexpr std::uint8_t kOverload = 52;
inline constexpr std::uint8_t kMessageType = 53;
inline constexpr std::uint8_t kServerIdentifier = 54;
inline constexpr std::uint8_t kParameterRequestList = 55;
inline constexpr std::uint8_t kMessage = 56;
inline constexpr std::uint8_t kMaxMessageSize = 57;
inline constexpr std::uint8_t kRenewalTime = 58;
inline constexpr std::uint8_t kRebindingTime = 59;
inline constexpr std::uint8_t kVendorClass = 60;
inline constexpr std::uint8_t kClientIdentifier = 61;
inline constexpr std::uint8_t kEnd = 255;
}  // namespace dhcp_option

// Option Overload's values (RFC 2132 9.3): which fixed fields hold options too.
namespace dhcp_overload {
inline constexpr std::uint8_t kFile = 1;
inline constexpr std::uint8_t kSname = 2;
inline constexpr std::uint8_t kBoth = 3;
}  // namespace dhcp_overload

enum class DhcpErrorKind : std::uint8_t {
    none,
    truncated,                   // shorter than the fixed part and the magic cookie (240 bytes)
    bad_magic_cookie,            // bytes 236-239 are not 99.130.83.99: BOOTP without options, or not DHCP
    bad_hardware_length,         // hlen > 16, the size of chaddr
    truncated_option,            // an option's length (or its length byte) runs past its area
    bad_overload,                // option 52 is not 1 byte of 1-3, or it appears inside file/sname
};

[[nodiscard]] std::string_view to_string(DhcpErrorKind kind) noexcept;

// What was wrong and at which byte of the message.
struct DhcpError {
    DhcpErrorKind kind = DhcpErrorKind::none;
    std::size_t offset = 0;
    friend constexpr bool operator==(const DhcpError&, const DhcpError&) = default;
};

// One option as it sits in the message: `offset` is where its code byte is.
struct DhcpOption {
    std::uint8_t code = 0;
    ByteSpan value;
    std::size_t offset = 0;
};

// Walks the options of a parsed message (never Pad or End), area after area.
class DhcpOptionCursor {
public:
    [[nodiscard]] std::optional<DhcpOption> next() noexcept;

private:
    friend class DhcpView;
    DhcpOptionCursor(ByteSpan message, std::uint8_t overload) noexcept;
    bool enter_next_area() noexcept;

    ByteSpan message_;
    std::uint8_t overload_ = 0;
    std::uint8_t area_ = 0;  // 0 options, 1 file, 2 sname, 3 done
    std::size_t at_ = 0;
    std::size_t end_ = 0;
};

class DhcpView {
public:
    static Parsed<DhcpView, DhcpError> parse(ByteSpan message) noexcept;

    [[nodiscard]] std::uint8_t op() const noexcept { return message_[0]; }
    [[nodiscard]] std::uint8_t hardware_type() const noexcept { return message_[1]; }
    [[nodiscard]] std::uint8_t hardware_length() const noexcept { return message_[2]; }
    [[nodiscard]] std::uint8_t hops() const noexcept { return message_[3]; }
    [[nodiscard]] std::uint32_t xid() const noexcept { return load_be32(&message_[4]); }
    [[nodiscard]] std::uint16_t secs() const noexcept { return load_be16(&message_[8]); }
    [[nodiscard]] std::uint16_t flags() const noexcept { return load_be16(&message_[10]); }
    [[nodiscard]] bool broadcast() const noexcept { return (flags() & kDhcpBroadcastFlag) != 0; }
    [[nodiscard]] Ipv4Address ciaddr() const noexcept { return Ipv4Address::from_bytes(&message_[12]); }
    [[nodiscard]] Ipv4Address yiaddr() const noexcept { return Ipv4Address::from_bytes(&message_[16]); }
    [[nodiscard]] Ipv4Address siaddr() const noexcept { return Ipv4Address::from_bytes(&message_[20]); }
    [[nodiscard]] Ipv4Address giaddr() const noexcept { return Ipv4Address::from_bytes(&message_[24]); }
    [[nodiscard]] ByteSpan chaddr() const noexcept { return message_.subspan(28, kDhcpChaddrLength); }
    // chaddr's first six bytes: the client's MAC when htype is 1 and hlen 6.
    [[nodiscard]] MacAddress client_mac() const noexcept { return MacAddress::from_bytes(&message_[28]); }
    [[nodiscard]] ByteSpan sname() const noexcept { return message_.subspan(kDhcpSnameOffset, kDhcpSnameLength); }
    [[nodiscard]] ByteSpan file() const noexcept { return message_.subspan(kDhcpFileOffset, kDhcpFileLength); }
    [[nodiscard]] ByteSpan message() const noexcept { return message_; }
    // Option 52's value (dhcp_overload), 0 when the message has none.
    [[nodiscard]] std::uint8_t overload() const noexcept { return overload_; }

    [[nodiscard]] DhcpOptionCursor options() const noexcept { return DhcpOptionCursor(message_, overload_); }
    // The first instance of `code`.
    [[nodiscard]] std::optional<DhcpOption> find(std::uint8_t code) const noexcept;
    // Every instance of `code` concatenated (RFC 3396) into `scratch`; nullopt when the option is
    // absent or its instances together do not fit in `scratch`.
    [[nodiscard]] std::optional<ByteSpan> concatenated(std::uint8_t code, MutableByteSpan scratch) const noexcept;

    // Option 53 when it is one byte; nullopt otherwise (a BOOTP message, or a malformed option).
    [[nodiscard]] std::optional<std::uint8_t> message_type() const noexcept;
    // An option holding exactly one IPv4 address (50, 54, ...); nullopt when absent or of another length.
    [[nodiscard]] std::optional<Ipv4Address> ipv4_option(std::uint8_t code) const noexcept;
    [[nodiscard]] std::optional<std::uint16_t> u16_option(std::uint8_t code) const noexcept;
    [[nodiscard]] std::optional<std::uint32_t> u32_option(std::uint8_t code) const noexcept;

private:
    DhcpView(ByteSpan message, std::uint8_t overload) noexcept : message_(message), overload_(overload) {}

    ByteSpan message_;
    std::uint8_t overload_ = 0;
};

// The fixed part of a message to build. sname and file are copied and zero-padded (longer
// spans are cut to 64 / 128 bytes).
struct DhcpFixedFields {
    std::uint8_t op = dhcp_op::kBootReply;
    std::uint8_t hardware_type = 1;  // Ethernet
    std::uint8_t hardware_length = 6;
    std::uint8_t hops = 0;
    std::uint32_t xid = 0;
    std::uint16_t secs = 0;
    std::uint16_t flags = 0;
    Ipv4Address ciaddr;
    Ipv4Address yiaddr;
    Ipv4Address siaddr;
    Ipv4Address giaddr;
    std::array<std::uint8_t, kDhcpChaddrLength> chaddr{};
    ByteSpan sname;
    ByteSpan file;
};

// Builds a message into a caller buffer: the fixed part and the cookie at construction, options
// one by one, End at finish(). Every add keeps room for End; an option that does not fit is
// refused (false) and leaves the message as it was, so a caller may skip it and go on.
class DhcpBuilder {
public:
    // `out` may be longer than the message may grow: `max_length` caps it (a client's maximum
    // message size). ok() is false when not even the fixed part and End fit.
    DhcpBuilder(MutableByteSpan out, const DhcpFixedFields& fields,
                std::size_t max_length = static_cast<std::size_t>(-1)) noexcept;

    [[nodiscard]] bool ok() const noexcept { return ok_; }
    // Whether an option with `value_length` bytes of value would fit now.
    [[nodiscard]] bool fits(std::size_t value_length) const noexcept;
    bool add(std::uint8_t code, ByteSpan value) noexcept;  // value at most 255 bytes
    bool add_u8(std::uint8_t code, std::uint8_t value) noexcept;
    bool add_u16(std::uint8_t code, std::uint16_t value) noexcept;
    bool add_u32(std::uint8_t code, std::uint32_t value) noexcept;
    bool add_ipv4(std::uint8_t code, Ipv4Address value) noexcept;
    bool add_pad() noexcept;
    // Writes End and zero padding up to `min_length` (as far as the limit allows); returns the
    // message length, or 0 when the builder is not ok().
    std::size_t finish(std::size_t min_length = 0) noexcept;

private:
    MutableByteSpan out_;
    std::size_t limit_ = 0;
    std::size_t at_ = 0;
    bool ok_ = false;
};

}  // namespace andromeda::wire
