#include "etcd/grpc_wire.hpp"

#include <fmt/format.h>

namespace andromeda::etcd::grpc_wire {

namespace {

enum WireType : unsigned { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void put_varint(std::string& out, std::uint64_t v) {
    while (v >= 0x80) {
        out += static_cast<char>(static_cast<std::uint8_t>(v) | 0x80);
        v >>= 7;
    }
    out += static_cast<char>(v);
}

void put_bytes(std::string& out, unsigned field, std::string_view bytes) {
    put_varint(out, field << 3 | kLengthDelimited);
    put_varint(out, bytes.size());
    out.append(bytes);
}

void put_int64(std::string& out, unsigned field, std::int64_t v) {
    if (v == 0) return;  // proto3 leaves zero values out
    put_varint(out, field << 3 | kVarint);
    put_varint(out, static_cast<std::uint64_t>(v));
}

// Protobuf's wire format over one message's bytes; every read checked against its end.
class Reader {
public:
    Reader(std::string_view bytes, const char* what, std::size_t base = 0)
        : data_(bytes), what_(what), base_(base) {}

    [[nodiscard]] bool done() const noexcept { return at_ == data_.size(); }

    std::uint64_t varint() {
        std::uint64_t v = 0;
        for (unsigned shift = 0; shift < 64; shift += 7) {
            if (at_ == data_.size()) fail("a varint runs past the end");
            const auto byte = static_cast<std::uint8_t>(data_[at_++]);
            if (shift == 63 && byte > 1) fail("a varint is longer than 64 bits");
            v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
            if ((byte & 0x80) == 0) return v;
        }
        fail("a varint is longer than 10 bytes");
    }

    // The next field's tag: its number and wire type.
    void tag(unsigned& field, unsigned& wire_type) {
        const std::uint64_t t = varint();
        field = static_cast<unsigned>(t >> 3 > 0x1fffffff ? 0 : t >> 3);
        wire_type = static_cast<unsigned>(t & 7);
        if (field == 0) fail("a field numbered 0 or beyond 2^29");
    }

    std::string_view bytes() {
        const std::uint64_t length = varint();
        if (length > data_.size() - at_) fail(fmt::format("a field of {} bytes runs past the end", length));
        const std::string_view out = data_.substr(at_, static_cast<std::size_t>(length));
        at_ += static_cast<std::size_t>(length);
        return out;
    }

    // Where the next byte is, counted from the start of the outermost message.
    [[nodiscard]] std::size_t offset() const noexcept { return base_ + at_; }

    void expect(unsigned wire_type, unsigned want, const char* field) {
        if (wire_type != want) fail(fmt::format("{} has wire type {}, not {}", field, wire_type, want));
    }

    void skip(unsigned wire_type) {
        switch (wire_type) {
        case kVarint: (void)varint(); return;
        case kLengthDelimited: (void)bytes(); return;
        case kFixed64: advance(8); return;
        case kFixed32: advance(4); return;
        default: fail(fmt::format("wire type {} (groups are not used by etcd)", wire_type));
        }
    }

    [[noreturn]] void fail(const std::string& why) const {
        throw EtcdError(fmt::format("etcd's {} is malformed at byte {}: {}", what_, base_ + at_, why));
    }

private:
    void advance(std::size_t n) {
        if (n > data_.size() - at_) fail("a fixed-size field runs past the end");
        at_ += n;
    }

    std::string_view data_;
    const char* what_;
    std::size_t base_;
    std::size_t at_ = 0;
};

KeyValue key_value(std::string_view bytes, std::size_t base) {
    Reader r(bytes, "range response", base);
    KeyValue kv;
    while (!r.done()) {
        unsigned field = 0, type = 0;
        r.tag(field, type);
        switch (field) {
        case 1: r.expect(type, kLengthDelimited, "a key"); kv.key = r.bytes(); break;
        case 2: r.expect(type, kVarint, "a create_revision"); kv.create_revision = static_cast<std::int64_t>(r.varint()); break;
        case 3: r.expect(type, kVarint, "a mod_revision"); kv.mod_revision = static_cast<std::int64_t>(r.varint()); break;
        case 4: r.expect(type, kVarint, "a version"); kv.version = static_cast<std::int64_t>(r.varint()); break;
        case 5: r.expect(type, kLengthDelimited, "a value"); kv.value = r.bytes(); break;
        case 6: r.expect(type, kVarint, "a lease"); kv.lease = static_cast<std::int64_t>(r.varint()); break;
        default: r.skip(type);
        }
    }
    return kv;
}

std::int64_t header_revision(std::string_view bytes, std::size_t base) {
    Reader r(bytes, "range response", base);
    std::int64_t revision = 0;
    while (!r.done()) {
        unsigned field = 0, type = 0;
        r.tag(field, type);
        if (field == 3) {
            r.expect(type, kVarint, "the header's revision");
            revision = static_cast<std::int64_t>(r.varint());
        } else {
            r.skip(type);
        }
    }
    return revision;
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

std::string range_request(std::string_view key, std::string_view range_end, std::int64_t revision, std::int64_t limit) {
    std::string out;
    out.reserve(key.size() + range_end.size() + 32);
    put_bytes(out, 1, key);
    if (!range_end.empty()) put_bytes(out, 2, range_end);
    put_int64(out, 3, limit);
    put_int64(out, 4, revision);
    return out;
}

std::string frame(std::string_view message) {
    std::string out;
    out.reserve(message.size() + 5);
    const auto n = static_cast<std::uint32_t>(message.size());
    out += '\0';
    for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>(n >> shift & 0xff);
    out.append(message);
    return out;
}

std::string_view unframe(std::string_view body) {
    if (body.size() < 5)
        throw EtcdError(fmt::format("etcd's gRPC answer is {} bytes, shorter than a message frame", body.size()));
    if (body[0] != 0)
        throw EtcdError(fmt::format("etcd's gRPC answer has flag byte {} (compressed or unknown; none was asked for)",
                                    static_cast<unsigned>(static_cast<std::uint8_t>(body[0]))));
    std::uint32_t n = 0;
    for (int i = 1; i <= 4; ++i) n = n << 8 | static_cast<std::uint8_t>(body[static_cast<std::size_t>(i)]);
    if (n != body.size() - 5)
        throw EtcdError(fmt::format("etcd's gRPC answer frames a message of {} bytes but carries {}", n, body.size() - 5));
    return body.substr(5);
}

RangeResult decode_range_response(std::string_view message) {
    Reader r(message, "range response");
    RangeResult out;
    bool header = false;
    while (!r.done()) {
        unsigned field = 0, type = 0;
        r.tag(field, type);
        if (field == 1 || field == 2) {
            r.expect(type, kLengthDelimited, field == 1 ? "the header" : "a key-value");
            const std::string_view bytes = r.bytes();
            const std::size_t start = r.offset() - bytes.size();
            if (field == 1) {
                out.revision = header_revision(bytes, start);
                header = true;
            } else {
                out.kvs.push_back(key_value(bytes, start));
            }
        } else {
            r.skip(type);
        }
    }
    if (!header) r.fail("it has no header (so no revision)");
    return out;
}

std::string percent_decode(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '%' && i + 2 < text.size() && hex_digit(text[i + 1]) >= 0 && hex_digit(text[i + 2]) >= 0) {
            out += static_cast<char>(hex_digit(text[i + 1]) * 16 + hex_digit(text[i + 2]));
            i += 2;
        } else {
            out += text[i];
        }
    }
    return out;
}

}  // namespace andromeda::etcd::grpc_wire
