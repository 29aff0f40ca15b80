// An encoder of etcd's RangeResponse for tests and fuzzers: the other side of
// etcd::grpc_wire::decode_range_response, written separately from it (field by field from etcd's
// API), with what a newer etcd might add: unknown fields of every wire type, anywhere.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>

#include "etcd/client.hpp"

namespace andromeda::testing {

class ProtoWriter {
public:
    void varint(std::uint64_t v) {
        do {
            std::uint8_t byte = v & 0x7f;
            v >>= 7;
            if (v != 0) byte |= 0x80;
            out_ += static_cast<char>(byte);
        } while (v != 0);
    }
    void tag(unsigned field, unsigned wire_type) { varint(std::uint64_t{field} << 3 | wire_type); }
    void int64_field(unsigned field, std::int64_t v) {
        if (v == 0) return;
        tag(field, 0);
        varint(static_cast<std::uint64_t>(v));
    }
    void bytes_field(unsigned field, std::string_view bytes) {
        tag(field, 2);
        varint(bytes.size());
        out_.append(bytes);
    }
    void fixed(unsigned field, unsigned size) {  // wire type 1 (8 bytes) or 5 (4 bytes)
        tag(field, size == 8 ? 1 : 5);
        out_.append(size, '\x5a');
    }
    [[nodiscard]] const std::string& bytes() const { return out_; }

private:
    std::string out_;
};

// With `rng`, unknown fields (numbers 7..40, every wire type but groups) go between the known ones.
inline void unknown_fields(ProtoWriter& w, std::mt19937* rng) {
    if (rng == nullptr) return;
    for (int n = static_cast<int>((*rng)() % 3); n > 0; --n) {
        const unsigned field = 7 + (*rng)() % 34;
        switch ((*rng)() % 4) {
        case 0: w.tag(field, 0); w.varint((*rng)()); break;
        case 1: w.fixed(field, 8); break;
        case 2: w.fixed(field, 4); break;
        default: w.bytes_field(field, std::string((*rng)() % 20, 'u'));
        }
    }
}

inline std::string encode_key_value(const etcd::KeyValue& kv, std::mt19937* rng = nullptr) {
    ProtoWriter w;
    unknown_fields(w, rng);
    w.bytes_field(1, kv.key);
    w.int64_field(2, kv.create_revision);
    unknown_fields(w, rng);
    w.int64_field(3, kv.mod_revision);
    w.int64_field(4, kv.version);
    if (!kv.value.empty()) w.bytes_field(5, kv.value);
    w.int64_field(6, kv.lease);
    unknown_fields(w, rng);
    return w.bytes();
}

inline std::string encode_range_response(const etcd::RangeResult& r, std::mt19937* rng = nullptr) {
    ProtoWriter header;
    header.tag(1, 0);
    header.varint(0x1234567890abcdefULL);  // cluster_id
    header.tag(2, 0);
    header.varint(42);  // member_id
    header.int64_field(3, r.revision);
    header.tag(4, 0);
    header.varint(2);  // raft_term
    ProtoWriter w;
    w.bytes_field(1, header.bytes());
    for (const auto& kv : r.kvs) {
        unknown_fields(w, rng);
        w.bytes_field(2, encode_key_value(kv, rng));
    }
    w.int64_field(4, static_cast<std::int64_t>(r.kvs.size()));  // count
    return w.bytes();
}

}  // namespace andromeda::testing
