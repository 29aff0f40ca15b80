// etcd's KV.Range answer over gRPC (etcd::grpc_wire) under arbitrary bytes: a response body is
// unframed and decoded; it must never crash, refuse only with EtcdError, and whatever it decodes
// must encode (tests/support/range_response_encoder.hpp) to a message that decodes the same.
// Seeds: tests/fuzz/corpus/etcd_range (a response captured from etcd 3.4.23).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "etcd/grpc_wire.hpp"
#include "support/range_response_encoder.hpp"

namespace {

using namespace andromeda;

[[noreturn]] void violation(const char* what) {
    std::fprintf(stderr, "etcd_range_fuzz: %s\n", what);
    std::abort();
}

void check(std::string_view message) {
    etcd::RangeResult first;
    try {
        first = etcd::grpc_wire::decode_range_response(message);
    } catch (const etcd::EtcdError&) {
        return;
    }
    const etcd::RangeResult again =
        etcd::grpc_wire::decode_range_response(testing::encode_range_response(first));
    if (again.revision != first.revision || again.kvs.size() != first.kvs.size()) violation("re-encoded differently");
    for (std::size_t i = 0; i < first.kvs.size(); ++i) {
        const auto& a = first.kvs[i];
        const auto& b = again.kvs[i];
        if (a.key != b.key || a.value != b.value || a.create_revision != b.create_revision ||
            a.mod_revision != b.mod_revision || a.version != b.version || a.lease != b.lease)
            violation("a key-value re-encoded differently");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 256 * 1024) return 0;
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    try {
        check(etcd::grpc_wire::unframe(body));
    } catch (const etcd::EtcdError&) {
        check(body);  // not a whole frame: the bytes as a message
    }
    return 0;
}
