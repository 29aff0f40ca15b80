// Neighbor Discovery options (RFC 4861 4.6, RFC 8106 5.1): a view that walks a message's option
// area once and refuses it whole when an option has length 0 or runs past the message (a receiver
// must drop such a message), decoders for the options the gateway reads, and a writer that
// appends options to a caller's buffer. Unknown options are walked over, never refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <span>
#include <string_view>

#include "wire/addresses.hpp"
#include "wire/bytes.hpp"
#include "wire/parse_result.hpp"

namespace andromeda::wire {

// Why an ND message was refused: by its own structure (parse) or by the rules a receiver applies
// before acting on it (RFC 4861 6.1, 7.1; RFC 6980).
enum class NdpError : std::uint8_t {
    None,
    Truncated,                             // shorter than the message type's fixed part
    WrongType,                             // another ICMPv6 type than the one the view reads
    BadOptionLength,                       // an option of length 0, or one running past the message
    NotIcmpv6,                             // the packet's upper layer is not ICMPv6
    Fragmented,                            // ND in a fragment (RFC 6980 5: never accepted)
    BadHopLimit,                           // IP hop limit is not 255: the sender may be off the link
    BadCode,                               // ICMP code is not 0
    BadChecksum,                           // the ICMPv6 checksum does not verify
    BadLinkLayerOption,                    // a link-layer address option that is not one Ethernet MAC
    MulticastTarget,                       // NS/NA target is a multicast address
    UnspecifiedSourceWithLinkLayerOption,  // RS/NS from :: carrying a source link-layer address
    UnspecifiedSourceNotToSolicitedNode,   // NS from :: (DAD) not sent to a solicited-node group
    SolicitedToMulticast,                  // NA with the solicited flag sent to a multicast group
    NotLinkLocalSource,                    // RA from a source that is not link-local
    MulticastSource,                       // from a multicast address, never a source (RFC 4291 2.7)
};

[[nodiscard]] std::string_view to_string(NdpError error) noexcept;

namespace ndp_option {
inline constexpr std::uint8_t kSourceLinkLayerAddress = 1;
inline constexpr std::uint8_t kTargetLinkLayerAddress = 2;
inline constexpr std::uint8_t kPrefixInformation = 3;
inline constexpr std::uint8_t kRedirectedHeader = 4;
inline constexpr std::uint8_t kMtu = 5;
inline constexpr std::uint8_t kRecursiveDnsServer = 25;  // RFC 8106
inline constexpr std::uint8_t kDnsSearchList = 31;       // RFC 8106
}  // namespace ndp_option

inline constexpr std::size_t kNdpOptionUnit = 8;  // the length field counts 8-byte units
inline constexpr std::size_t kLinkLayerAddressOptionLength = 8;
inline constexpr std::size_t kPrefixInformationOptionLength = 32;
inline constexpr std::size_t kMtuOptionLength = 8;
// The length field is 8 bits: 1 unit of header and lifetime, 2 units per address.
inline constexpr std::size_t kMaxRdnssAddresses = 127;
inline constexpr std::uint32_t kInfiniteLifetime = 0xffffffff;

// One option as it sits in the message: type, length and data, a multiple of 8 bytes.
struct NdpOption {
    std::uint8_t type = 0;
    ByteSpan bytes;
};

// Prefix Information (RFC 4861 4.6.2); also the input of NdpOptionWriter::prefix_information.
struct PrefixInformation {
    std::uint8_t prefix_length = 0;
    bool on_link = false;                  // L: addresses in the prefix are on the link
    bool autonomous = false;               // A: hosts may form addresses in it (SLAAC)
    std::uint32_t valid_lifetime = 0;      // seconds; kInfiniteLifetime = forever
    std::uint32_t preferred_lifetime = 0;  // seconds, at most valid_lifetime
    Ipv6Address prefix;
    friend bool operator==(const PrefixInformation&, const PrefixInformation&) = default;
};

// Decoders: nullopt when the option is of another type, or of a length its RFC does not allow
// (a receiver ignores such an option and goes on with the message).
// Source or target link-layer address: one 8-byte unit holding a MAC (RFC 2464 8).
[[nodiscard]] std::optional<MacAddress> decode_link_layer_address(const NdpOption& option) noexcept;
[[nodiscard]] std::optional<PrefixInformation> decode_prefix_information(const NdpOption& option) noexcept;
[[nodiscard]] std::optional<std::uint32_t> decode_mtu(const NdpOption& option) noexcept;

// Recursive DNS Server (RFC 8106 5.1): a lifetime and 1 to 127 addresses, so an odd length of at
// least 3 units.
class RdnssView {
public:
    static std::optional<RdnssView> parse(const NdpOption& option) noexcept;

    [[nodiscard]] std::uint32_t lifetime() const noexcept { return load_be32(&bytes_[4]); }
    [[nodiscard]] std::size_t address_count() const noexcept { return (bytes_.size() - 8) / 16; }
    // Precondition: index < address_count().
    [[nodiscard]] Ipv6Address address(std::size_t index) const noexcept {
        return Ipv6Address::from_bytes(&bytes_[8 + 16 * index]);
    }

private:
    explicit RdnssView(ByteSpan bytes) noexcept : bytes_(bytes) {}
    ByteSpan bytes_;
};

// The option area of one message, checked whole by parse(), so walking it needs no more checks.
class NdpOptions {
public:
    class Iterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = NdpOption;
        using difference_type = std::ptrdiff_t;
        using pointer = void;
        using reference = NdpOption;

        Iterator() = default;
        explicit Iterator(const std::uint8_t* at) noexcept : at_(at) {}
        NdpOption operator*() const noexcept { return NdpOption{at_[0], ByteSpan(at_, at_[1] * kNdpOptionUnit)}; }
        Iterator& operator++() noexcept {
            at_ += at_[1] * kNdpOptionUnit;
            return *this;
        }
        Iterator operator++(int) noexcept {
            Iterator before = *this;
            ++*this;
            return before;
        }
        friend bool operator==(const Iterator&, const Iterator&) = default;

    private:
        const std::uint8_t* at_ = nullptr;
    };

    constexpr NdpOptions() = default;
    // Refuses (BadOptionLength) an option of length 0 or one that runs past `area`, which
    // includes a tail too short for an option header.
    static Parsed<NdpOptions, NdpError> parse(ByteSpan area) noexcept;

    [[nodiscard]] Iterator begin() const noexcept { return Iterator(area_.data()); }
    [[nodiscard]] Iterator end() const noexcept { return Iterator(area_.data() + area_.size()); }
    [[nodiscard]] ByteSpan bytes() const noexcept { return area_; }
    [[nodiscard]] bool empty() const noexcept { return area_.empty(); }

    // The first option of `type`; nullopt when there is none.
    [[nodiscard]] std::optional<NdpOption> find(std::uint8_t type) const noexcept;
    [[nodiscard]] std::size_t count(std::uint8_t type) const noexcept;
    // The first option of the type, decoded; nullopt when absent or malformed.
    [[nodiscard]] std::optional<MacAddress> source_link_layer_address() const noexcept;
    [[nodiscard]] std::optional<MacAddress> target_link_layer_address() const noexcept;
    [[nodiscard]] std::optional<std::uint32_t> mtu() const noexcept;
    // Whether every link-layer address option holds exactly one MAC; the gateway's links are
    // Ethernet, so any other size is a malformed option, and the message is dropped.
    [[nodiscard]] bool link_layer_options_are_ethernet() const noexcept;

private:
    explicit NdpOptions(ByteSpan area) noexcept : area_(area) {}
    ByteSpan area_;
};

// Appends options to `out`. Each call writes one whole option or, when it does not fit or its
// arguments cannot form a valid option, nothing: then it returns false and failed() stays true.
class NdpOptionWriter {
public:
    explicit NdpOptionWriter(MutableByteSpan out) noexcept : out_(out) {}

    bool link_layer_address(std::uint8_t type, const MacAddress& mac) noexcept;
    bool prefix_information(const PrefixInformation& information) noexcept;
    bool mtu(std::uint32_t mtu) noexcept;
    // 1 to kMaxRdnssAddresses servers.
    bool recursive_dns_servers(std::uint32_t lifetime, std::span<const Ipv6Address> servers) noexcept;
    // Any option: `data` follows the type and length, zero-padded to whole units (2040 bytes at most).
    bool option(std::uint8_t type, ByteSpan data) noexcept;

    [[nodiscard]] std::size_t length() const noexcept { return length_; }
    [[nodiscard]] bool failed() const noexcept { return failed_; }

private:
    // `length` zeroed bytes for an option of `type`, the header filled in; empty when it does not fit.
    MutableByteSpan claim(std::uint8_t type, std::size_t length) noexcept;

    MutableByteSpan out_;
    std::size_t length_ = 0;
    bool failed_ = false;
};

}  // namespace andromeda::wire
