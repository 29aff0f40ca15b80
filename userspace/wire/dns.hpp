// DNS messages (RFC 1035, EDNS RFC 6891): names, a bounds-checked message view, a builder, and
// the 2-byte length framing of DNS over TCP (RFC 1035 4.2.2, RFC 7766).
//
// Names are read into DnsName, their uncompressed wire form (at most 255 bytes, so no
// allocation). Compression pointers are followed with two limits that make any loop impossible
// and bound the work: a pointer must point into the message body before the run of labels it
// ends (each jump goes strictly backwards), and a name may take at most kDnsMaxPointerHops jumps.
// Labels are 1-63 bytes; the 0x40 and 0x80 label types (RFC 6891 deprecated them) are refused.
//
// parse() walks every question and record once, so the cursors and accessors never read past
// the message; records past the counts (trailing bytes) are ignored.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "wire/bytes.hpp"
#include "wire/parse_result.hpp"

namespace andromeda::wire {

inline constexpr std::size_t kDnsHeaderLength = 12;
inline constexpr std::size_t kDnsMaxNameLength = 255;  // wire form, length bytes and the root included
inline constexpr std::size_t kDnsMaxLabelLength = 63;
inline constexpr std::size_t kDnsMaxPointerHops = 16;
inline constexpr std::uint16_t kDnsPort = 53;
inline constexpr std::size_t kDnsClassicUdpLimit = 512;  // RFC 1035 4.2.1, without EDNS
inline constexpr std::size_t kDnsTcpLengthPrefix = 2;

// Whether `label` is a hostname label (RFC 1123 2.1): 1 to 63 letters, digits or '-', with no '-'
// at either end. VPC and endpoint names, which become <name>.<vpc>.internal, must be.
[[nodiscard]] bool is_hostname_label(std::string_view label) noexcept;

namespace dns_type {
inline constexpr std::uint16_t kA = 1;
inline constexpr std::uint16_t kNs = 2;
inline constexpr std::uint16_t kCname = 5;
inline constexpr std::uint16_t kSoa = 6;
inline constexpr std::uint16_t kPtr = 12;
inline constexpr std::uint16_t kMx = 15;
inline constexpr std::uint16_t kTxt = 16;
inline constexpr std::uint16_t kAaaa = 28;
inline constexpr std::uint16_t kOpt = 41;
inline constexpr std::uint16_t kAny = 255;
}  // namespace dns_type

namespace dns_class {
inline constexpr std::uint16_t kIn = 1;
inline constexpr std::uint16_t kChaos = 3;
inline constexpr std::uint16_t kAny = 255;
}  // namespace dns_class

namespace dns_opcode {
inline constexpr std::uint8_t kQuery = 0;
}  // namespace dns_opcode

namespace dns_rcode {
inline constexpr std::uint8_t kNoError = 0;
inline constexpr std::uint8_t kFormErr = 1;
inline constexpr std::uint8_t kServFail = 2;
inline constexpr std::uint8_t kNxDomain = 3;
inline constexpr std::uint8_t kNotImp = 4;
inline constexpr std::uint8_t kRefused = 5;
inline constexpr std::uint16_t kBadVers = 16;  // extended (RFC 6891 6.1.3): high bits in the OPT record
}  // namespace dns_rcode

enum class DnsErrorKind : std::uint8_t {
    none,
    truncated_header,   // fewer than 12 bytes
    truncated_name,     // a label or pointer runs past the message
    bad_label_type,     // a length byte with 01 or 10 in its top bits
    name_too_long,      // more than 255 bytes uncompressed
    bad_pointer,        // a pointer into the header, or not strictly before the labels it ends
    too_many_pointers,  // more than kDnsMaxPointerHops jumps in one name
    truncated_question, // the message ends inside a question's type or class
    truncated_record,   // the message ends inside a record's fixed fields or its RDATA
};

[[nodiscard]] std::string_view to_string(DnsErrorKind kind) noexcept;

// What was wrong and at which byte of the message.
struct DnsError {
    DnsErrorKind kind = DnsErrorKind::none;
    std::size_t offset = 0;
    friend constexpr bool operator==(const DnsError&, const DnsError&) = default;
};

// A domain name in uncompressed wire form (length-prefixed labels ending with the root label).
class DnsName {
public:
    DnsName() noexcept { bytes_[0] = 0; }  // the root

    // "web.blue.internal" (a trailing dot is optional; "." or "" is the root): labels of 1-63
    // bytes, 255 bytes in all, no escapes. nullopt otherwise.
    static std::optional<DnsName> from_text(std::string_view dotted) noexcept;

    [[nodiscard]] ByteSpan wire() const noexcept { return ByteSpan(bytes_.data(), length_); }
    [[nodiscard]] std::size_t wire_length() const noexcept { return length_; }
    [[nodiscard]] std::size_t label_count() const noexcept;
    // Label `index` (0 is the leftmost) without its length byte; empty past the last one.
    [[nodiscard]] ByteSpan label(std::size_t index) const noexcept;
    [[nodiscard]] bool equals_ignoring_case(const DnsName& other) const noexcept;
    // Whether this name is `zone` or a name below it (label-wise, case-insensitive).
    [[nodiscard]] bool is_at_or_below(const DnsName& zone) const noexcept;
    // Dotted, letters kept in their case, bytes outside letters, digits, '-' and '_'
    // (and '.' inside a label) as \DDD (RFC 1035 5.1); the root is ".". For logs and tests.
    [[nodiscard]] std::string to_string() const;

private:
    friend DnsError read_dns_name(ByteSpan, std::size_t, DnsName*, std::size_t&) noexcept;

    std::array<std::uint8_t, kDnsMaxNameLength> bytes_{};
    std::uint8_t length_ = 1;
};

// Reads the name at `offset` of `message`, following pointers, into `name` (may be null to only
// check it). `next` is set to the offset just past the name where it sits (after its first
// pointer, if any). Returns the error, kind none on success.
DnsError read_dns_name(ByteSpan message, std::size_t offset, DnsName* name, std::size_t& next) noexcept;

// The header: QR and the flags as named fields; counts as on the wire.
struct DnsHeader {
    std::uint16_t id = 0;
    bool response = false;            // QR
    std::uint8_t opcode = 0;          // 4 bits
    bool authoritative = false;       // AA
    bool truncated = false;           // TC
    bool recursion_desired = false;   // RD
    bool recursion_available = false; // RA
    bool zero = false;                // Z, must be 0
    bool authentic_data = false;      // AD (RFC 4035)
    bool checking_disabled = false;   // CD (RFC 4035)
    std::uint8_t rcode = 0;           // 4 bits
    std::uint16_t question_count = 0;
    std::uint16_t answer_count = 0;
    std::uint16_t authority_count = 0;
    std::uint16_t additional_count = 0;

    [[nodiscard]] std::uint16_t flags() const noexcept;
    static DnsHeader read(const std::uint8_t* p) noexcept;  // 12 bytes
    void write(std::uint8_t* p) const noexcept;
    friend constexpr bool operator==(const DnsHeader&, const DnsHeader&) = default;
};

// The header of a message too broken to parse whole (to answer FORMERR); nullopt under 12 bytes.
[[nodiscard]] std::optional<DnsHeader> read_dns_header(ByteSpan message) noexcept;

struct DnsQuestion {
    DnsName name;
    std::uint16_t type = 0;
    std::uint16_t klass = 0;
    std::size_t offset = 0;  // of the name
};

struct DnsRecord {
    DnsName name;
    std::uint16_t type = 0;
    std::uint16_t klass = 0;  // for OPT: the requester's UDP payload size
    std::uint32_t ttl = 0;    // for OPT: extended rcode, version, DO and flags
    ByteSpan rdata;
    std::size_t offset = 0;        // of the name
    std::size_t rdata_offset = 0;
};

// EDNS from the OPT pseudo-record (RFC 6891 6.1.2).
struct DnsEdns {
    std::uint16_t udp_payload_size = 0;
    std::uint8_t extended_rcode = 0;  // the rcode's upper 8 bits
    std::uint8_t version = 0;
    bool dnssec_ok = false;
    ByteSpan options;
};

enum class DnsSection : std::uint8_t { question, answer, authority, additional };

// Walks the questions or the records of one section of a parsed message.
class DnsCursor {
public:
    [[nodiscard]] std::optional<DnsQuestion> next_question() noexcept;
    [[nodiscard]] std::optional<DnsRecord> next_record() noexcept;

private:
    friend class DnsMessageView;
    DnsCursor(ByteSpan message, std::size_t at, std::size_t count) noexcept
        : message_(message), at_(at), left_(count) {}

    ByteSpan message_;
    std::size_t at_ = 0;
    std::size_t left_ = 0;
};

class DnsMessageView {
public:
    static Parsed<DnsMessageView, DnsError> parse(ByteSpan message) noexcept;

    [[nodiscard]] DnsHeader header() const noexcept { return DnsHeader::read(message_.data()); }
    [[nodiscard]] std::uint16_t id() const noexcept { return load_be16(message_.data()); }
    [[nodiscard]] ByteSpan message() const noexcept { return message_; }
    // Where a section starts; end_offset() is past the last record (trailing bytes follow it).
    [[nodiscard]] std::size_t section_offset(DnsSection section) const noexcept {
        return sections_[static_cast<std::size_t>(section)];
    }
    [[nodiscard]] std::size_t end_offset() const noexcept { return end_; }
    [[nodiscard]] DnsCursor cursor(DnsSection section) const noexcept;
    [[nodiscard]] std::optional<DnsQuestion> first_question() const noexcept;

    // EDNS: the additional section's OPT record. opt_count() says how many there are: RFC 6891
    // 6.1.1 wants FORMERR for more than one, and opt_name_is_root() is false when its owner
    // name is not the root (also FORMERR).
    [[nodiscard]] std::optional<DnsEdns> edns() const noexcept;
    [[nodiscard]] std::size_t opt_count() const noexcept { return opt_count_; }
    [[nodiscard]] bool opt_name_is_root() const noexcept { return opt_name_is_root_; }

private:
    explicit DnsMessageView(ByteSpan message) noexcept : message_(message) {}

    ByteSpan message_;
    std::array<std::size_t, 4> sections_{};
    std::size_t end_ = 0;
    std::size_t opt_offset_ = 0;  // of the first OPT record's name; 0 when none
    std::size_t opt_count_ = 0;
    bool opt_name_is_root_ = true;
};

// How a record's owner name is written: its first `labels` labels in full, then a compression
// pointer to `pointer` (an earlier offset of the message), or, without a pointer, all of it.
struct DnsNameRef {
    const DnsName* name = nullptr;
    std::size_t labels = 0;
    std::optional<std::uint16_t> pointer;

    static DnsNameRef full(const DnsName& name) noexcept { return {&name, name.label_count(), std::nullopt}; }
    static DnsNameRef to(std::uint16_t offset) noexcept { return {nullptr, 0, offset}; }
};

// Builds a message into a caller buffer: the header at construction (its counts are ignored and
// kept by the builder), then questions and records section by section, in order. Anything that
// does not fit, or comes out of order, makes the builder fail: ok() false, finish() 0.
class DnsBuilder {
public:
    DnsBuilder(MutableByteSpan out, const DnsHeader& header) noexcept;

    [[nodiscard]] bool ok() const noexcept { return ok_; }
    [[nodiscard]] std::size_t length() const noexcept { return at_; }
    bool add_question(const DnsName& name, std::uint16_t type, std::uint16_t klass) noexcept;
    bool add_record(DnsSection section, const DnsNameRef& name, std::uint16_t type, std::uint16_t klass,
                    std::uint32_t ttl, ByteSpan rdata) noexcept;
    // The OPT record (root owner name) in the additional section.
    bool add_opt(const DnsEdns& edns) noexcept;
    // Writes the counts; returns the message length, or 0 when something failed.
    std::size_t finish() noexcept;

private:
    bool enter(DnsSection section) noexcept;
    bool write_name(const DnsNameRef& name) noexcept;

    MutableByteSpan out_;
    std::size_t at_ = 0;
    std::array<std::uint16_t, 4> counts_{};
    std::uint8_t section_ = 0;
    bool ok_ = false;
};

// DNS over TCP: each message is preceded by its length, 2 bytes big-endian.
enum class DnsTcpStatus : std::uint8_t {
    complete,    // `message` is the first message, `consumed` bytes of the stream hold it
    incomplete,  // more bytes are needed
    empty,       // a zero length prefix: no DNS message is empty, the stream is broken
};

struct DnsTcpMessage {
    DnsTcpStatus status = DnsTcpStatus::incomplete;
    ByteSpan message;
    std::size_t consumed = 0;
};

[[nodiscard]] DnsTcpMessage next_dns_tcp_message(ByteSpan stream) noexcept;
// Writes the length prefix and `message`; returns the bytes written, 0 when `out` is too small
// or the message is longer than 65535 bytes.
std::size_t write_dns_tcp_message(MutableByteSpan out, ByteSpan message) noexcept;

}  // namespace andromeda::wire
