// The few bytes of etcd's gRPC API the client speaks directly: a KV.Range request and its
// response, in protobuf's wire format, inside gRPC's length-prefixed message frame.
//
// Why: the listing of a whole fabric is the one call whose size matters (100,000 endpoints are
// 19 MB of JSON with base64 keys and values through the gateway, 9.5 MB of protobuf over gRPC),
// and etcd's JSON gateway spends most of its time marshalling it: on this machine kind a 100k-key
// range took 0.97 s through the gateway and 0.13 s as gRPC (curl, loopback, same etcd). So
// Client::range_prefix and Client::get go over gRPC (HTTP/2 through libcurl, the same TLS and
// endpoints); every other call, and the watch, stays on the gateway.
//
// The messages, with etcd's field numbers (etcdserverpb / mvccpb, API v3):
//   RangeRequest   { bytes key = 1; bytes range_end = 2; int64 limit = 3; int64 revision = 4; }
//   RangeResponse  { ResponseHeader header = 1; repeated KeyValue kvs = 2; bool more = 3; int64 count = 4; }
//   ResponseHeader { uint64 cluster_id = 1; uint64 member_id = 2; int64 revision = 3; uint64 raft_term = 4; }
//   KeyValue       { bytes key = 1; int64 create_revision = 2; int64 mod_revision = 3; int64 version = 4;
//                    bytes value = 5; int64 lease = 6; }
// Decoding is bounds-checked and throws EtcdError naming what is wrong; fields it does not know
// are skipped, as protobuf requires. tests/unit/etcd/grpc_wire_test.cpp and the etcd_range_fuzz
// target hold it to that.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "etcd/client.hpp"

namespace andromeda::etcd::grpc_wire {

// The service path of the call (HTTP/2 :path).
inline constexpr const char* kRangePath = "/etcdserverpb.KV/Range";

// A RangeRequest for [key, range_end) at `revision` (0: the latest), at most `limit` keys (0: all).
[[nodiscard]] std::string range_request(std::string_view key, std::string_view range_end, std::int64_t revision = 0,
                                        std::int64_t limit = 0);

// A gRPC message frame: flag byte 0 (not compressed), 4-byte big-endian length, the message.
[[nodiscard]] std::string frame(std::string_view message);
// The one message of a unary call's response body. Throws EtcdError when the body is not
// exactly one complete, uncompressed frame.
[[nodiscard]] std::string_view unframe(std::string_view body);

// A RangeResponse: its header's revision and every KeyValue, in order.
[[nodiscard]] RangeResult decode_range_response(std::string_view message);

// grpc-message is percent-encoded (gRPC over HTTP/2); anything malformed is kept as it is.
[[nodiscard]] std::string percent_decode(std::string_view text);

}  // namespace andromeda::etcd::grpc_wire
