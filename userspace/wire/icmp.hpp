// ICMPv4 (RFC 792, RFC 1191) and ICMPv6 (RFC 4443): zero-copy views and builders for the messages
// the gateway handles: echo, and the errors that carry the offending packet (Fragmentation
// Needed / Packet Too Big for PMTUD, Time Exceeded, Destination Unreachable).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "wire/addresses.hpp"
#include "wire/bytes.hpp"
#include "wire/checksum.hpp"
#include "wire/ip_protocol.hpp"
#include "wire/parse_result.hpp"

namespace andromeda::wire {

inline constexpr std::size_t kIcmpHeaderLength = 8;

namespace icmpv4_type {
inline constexpr std::uint8_t kEchoReply = 0;
inline constexpr std::uint8_t kDestinationUnreachable = 3;
inline constexpr std::uint8_t kSourceQuench = 4;
inline constexpr std::uint8_t kRedirect = 5;
inline constexpr std::uint8_t kEchoRequest = 8;
inline constexpr std::uint8_t kTimeExceeded = 11;
inline constexpr std::uint8_t kParameterProblem = 12;
}  // namespace icmpv4_type
namespace icmpv4_code {
inline constexpr std::uint8_t kFragmentationNeeded = 4;  // with type kDestinationUnreachable
}  // namespace icmpv4_code

namespace icmpv6_type {
inline constexpr std::uint8_t kDestinationUnreachable = 1;
inline constexpr std::uint8_t kPacketTooBig = 2;
inline constexpr std::uint8_t kTimeExceeded = 3;
inline constexpr std::uint8_t kParameterProblem = 4;
inline constexpr std::uint8_t kEchoRequest = 128;
inline constexpr std::uint8_t kEchoReply = 129;
}  // namespace icmpv6_type

// The first 8 bytes of any ICMPv4/ICMPv6 message; `rest_of_header` is bytes 4-7 (echo id and
// sequence, the next-hop MTU, the Packet Too Big MTU...).
struct IcmpHeader {
    std::uint8_t type = 0;
    std::uint8_t code = 0;
    std::uint16_t checksum = 0;          // as on the wire
    std::uint32_t rest_of_header = 0;
    friend constexpr bool operator==(const IcmpHeader&, const IcmpHeader&) = default;
};

[[nodiscard]] constexpr IcmpHeader icmp_echo(std::uint8_t type, std::uint16_t identifier,
                                             std::uint16_t sequence) noexcept {
    return IcmpHeader{type, 0, 0, static_cast<std::uint32_t>(identifier) << 16 | sequence};
}
// ICMPv4 Destination Unreachable / Fragmentation Needed with the next-hop MTU (RFC 1191).
[[nodiscard]] constexpr IcmpHeader icmpv4_fragmentation_needed(std::uint16_t next_hop_mtu) noexcept {
    return IcmpHeader{icmpv4_type::kDestinationUnreachable, icmpv4_code::kFragmentationNeeded, 0, next_hop_mtu};
}
[[nodiscard]] constexpr IcmpHeader icmpv6_packet_too_big(std::uint32_t mtu) noexcept {
    return IcmpHeader{icmpv6_type::kPacketTooBig, 0, 0, mtu};
}

// Writes the 8-byte header at the start of `out` with the given checksum field; returns 8, or 0
// when `out` is too small. Append the body, then fill in the checksum with update_checksum().
std::size_t write_icmp_header(MutableByteSpan out, const IcmpHeader& header) noexcept;

// The fields ICMPv4 and ICMPv6 share. The message is the whole IP payload: the checksum covers
// all of it.
template <class Byte>
class BasicIcmpMessage {
protected:
    static constexpr bool kMutable = !std::is_const_v<Byte>;

public:
    using Span = std::span<Byte>;

    [[nodiscard]] std::uint8_t type() const noexcept { return message_[0]; }
    [[nodiscard]] std::uint8_t code() const noexcept { return message_[1]; }
    [[nodiscard]] std::uint16_t checksum() const noexcept { return load_be16(&message_[2]); }
    [[nodiscard]] std::uint32_t rest_of_header() const noexcept { return load_be32(&message_[4]); }
    // Echo identifier and sequence (meaningful for echo request/reply).
    [[nodiscard]] std::uint16_t identifier() const noexcept { return load_be16(&message_[4]); }
    [[nodiscard]] std::uint16_t sequence() const noexcept { return load_be16(&message_[6]); }
    [[nodiscard]] Span message() const noexcept { return message_; }
    [[nodiscard]] Span body() const noexcept { return message_.subspan(kIcmpHeaderLength); }
    [[nodiscard]] IcmpHeader header() const noexcept { return IcmpHeader{type(), code(), checksum(), rest_of_header()}; }

    // Setters patch the checksum incrementally (RFC 1624); for ICMPv6 the pseudo-header part
    // is unaffected by these fields, so the same patch is right for both.
    void set_type(std::uint8_t type) const noexcept requires kMutable {
        set_word(0, static_cast<std::uint16_t>(type << 8 | code()));
    }
    void set_code(std::uint8_t code) const noexcept requires kMutable {
        set_word(0, static_cast<std::uint16_t>(type() << 8 | code));
    }
    void set_identifier(std::uint16_t id) const noexcept requires kMutable { set_word(4, id); }
    void set_sequence(std::uint16_t seq) const noexcept requires kMutable { set_word(6, seq); }

protected:
    explicit BasicIcmpMessage(Span message) noexcept : message_(message) {}

    [[nodiscard]] std::uint16_t compute_with(std::uint64_t pseudo_sum) const noexcept {
        // Sum around the checksum field (bytes 2-3) so the view need not modify the message.
        return checksum_finish(checksum_add(message_.subspan(4), checksum_add(message_.first(2), pseudo_sum)));
    }
    void set_word(std::size_t offset, std::uint16_t value) const noexcept {
        const std::uint16_t old_value = load_be16(&message_[offset]);
        store_be16(&message_[offset], value);
        store_be16(&message_[2], checksum_update16(checksum(), old_value, value));
    }

    Span message_;
};

// ICMPv4: the checksum covers the message only.
template <class Byte>
class BasicIcmpv4View : public BasicIcmpMessage<Byte> {
    using Base = BasicIcmpMessage<Byte>;
    using Base::kMutable;
    using Base::message_;

public:
    using typename Base::Span;

    static Parsed<BasicIcmpv4View> parse(Span ip_payload) noexcept {
        if (ip_payload.size() < kIcmpHeaderLength) return ParseError::Truncated;
        return BasicIcmpv4View(ip_payload);
    }

    [[nodiscard]] bool is_echo() const noexcept {
        return this->type() == icmpv4_type::kEchoRequest || this->type() == icmpv4_type::kEchoReply;
    }
    [[nodiscard]] bool is_error() const noexcept {
        switch (this->type()) {
            case icmpv4_type::kDestinationUnreachable:
            case icmpv4_type::kSourceQuench:
            case icmpv4_type::kRedirect:
            case icmpv4_type::kTimeExceeded:
            case icmpv4_type::kParameterProblem: return true;
            default: return false;
        }
    }
    [[nodiscard]] bool is_fragmentation_needed() const noexcept {
        return this->type() == icmpv4_type::kDestinationUnreachable &&
               this->code() == icmpv4_code::kFragmentationNeeded;
    }
    // Next-hop MTU of a Fragmentation Needed message (RFC 1191); 0 for any other message.
    [[nodiscard]] std::uint16_t next_hop_mtu() const noexcept {
        return is_fragmentation_needed() ? load_be16(&message_[6]) : 0;
    }
    // The IP header + leading bytes of the datagram that caused an error; empty for non-errors.
    [[nodiscard]] Span original_datagram() const noexcept { return is_error() ? this->body() : Span{}; }

    [[nodiscard]] std::uint16_t compute_checksum() const noexcept { return this->compute_with(0); }
    [[nodiscard]] bool checksum_valid() const noexcept { return checksum_verifies(message_); }
    void update_checksum() const noexcept requires kMutable { store_be16(&message_[2], compute_checksum()); }

private:
    explicit BasicIcmpv4View(Span message) noexcept : Base(message) {}
};

// ICMPv6: the checksum also covers the IPv6 pseudo-header (RFC 4443 2.3).
template <class Byte>
class BasicIcmpv6View : public BasicIcmpMessage<Byte> {
    using Base = BasicIcmpMessage<Byte>;
    using Base::kMutable;
    using Base::message_;

public:
    using typename Base::Span;

    static Parsed<BasicIcmpv6View> parse(Span upper_layer_payload) noexcept {
        if (upper_layer_payload.size() < kIcmpHeaderLength) return ParseError::Truncated;
        return BasicIcmpv6View(upper_layer_payload);
    }

    [[nodiscard]] bool is_echo() const noexcept {
        return this->type() == icmpv6_type::kEchoRequest || this->type() == icmpv6_type::kEchoReply;
    }
    // Types 0-127 are errors (RFC 4443 2.1).
    [[nodiscard]] bool is_error() const noexcept { return this->type() < 128; }
    // MTU of a Packet Too Big message; 0 for any other message.
    [[nodiscard]] std::uint32_t mtu() const noexcept {
        return this->type() == icmpv6_type::kPacketTooBig ? this->rest_of_header() : 0;
    }
    // As much of the invoking packet as fits; empty for non-errors.
    [[nodiscard]] Span invoking_packet() const noexcept { return is_error() ? this->body() : Span{}; }

    [[nodiscard]] std::uint16_t compute_checksum(const Ipv6Address& source,
                                                 const Ipv6Address& destination) const noexcept {
        return this->compute_with(pseudo_sum(source, destination));
    }
    [[nodiscard]] bool checksum_valid(const Ipv6Address& source, const Ipv6Address& destination) const noexcept {
        return checksum_verifies(message_, pseudo_sum(source, destination));
    }
    void update_checksum(const Ipv6Address& source, const Ipv6Address& destination) const noexcept
        requires kMutable {
        store_be16(&message_[2], compute_checksum(source, destination));
    }

private:
    explicit BasicIcmpv6View(Span message) noexcept : Base(message) {}

    [[nodiscard]] std::uint64_t pseudo_sum(const Ipv6Address& source, const Ipv6Address& destination) const noexcept {
        return pseudo_header_sum(source, destination, ip_protocol::kIcmpv6,
                                 static_cast<std::uint32_t>(message_.size()));
    }
};

using Icmpv4View = BasicIcmpv4View<const std::uint8_t>;
using MutableIcmpv4View = BasicIcmpv4View<std::uint8_t>;
using Icmpv6View = BasicIcmpv6View<const std::uint8_t>;
using MutableIcmpv6View = BasicIcmpv6View<std::uint8_t>;

}  // namespace andromeda::wire
