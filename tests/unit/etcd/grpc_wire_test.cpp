// etcd's KV.Range over gRPC, encoded and decoded by hand (etcd/grpc_wire.hpp): a response captured
// from a real etcd 3.4.23, random responses with unknown fields round-tripped, and every
// truncation and byte flip of them either decoded or refused with EtcdError, never a crash.
#include "etcd/grpc_wire.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <random>

#include "support/range_response_encoder.hpp"

namespace andromeda::etcd {
namespace {

using namespace grpc_wire;

std::string captured() {
    std::ifstream in(ANDROMEDA_SOURCE_DIR "/tests/fuzz/corpus/etcd_range/etcd-3.4.23-three-nodes", std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

TEST(EtcdGrpcWire, DecodesARangeResponseCapturedFromEtcd) {
    const std::string body = captured();
    ASSERT_EQ(body.size(), 217u);
    const RangeResult r = decode_range_response(unframe(body));
    EXPECT_EQ(r.revision, 786);
    ASSERT_EQ(r.kvs.size(), 3u);
    const char* names[] = {"na", "nb", "nc"};
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(r.kvs[i].key, std::string("/andromeda/v1/nodes/") + names[i]);
        EXPECT_EQ(r.kvs[i].value, R"({"address":"192.168.1.9"})");
        EXPECT_EQ(r.kvs[i].create_revision, 784 + static_cast<std::int64_t>(i));
        EXPECT_EQ(r.kvs[i].mod_revision, 784 + static_cast<std::int64_t>(i));
        EXPECT_EQ(r.kvs[i].version, 1);
        EXPECT_EQ(r.kvs[i].lease, 0);
    }
}

TEST(EtcdGrpcWire, EncodesTheRangeRequestEtcdAnswered) {
    // The request that produced the capture above, byte for byte.
    const std::string want = std::string("\x0a\x14/andromeda/v1/nodes/\x12\x14/andromeda/v1/nodes0", 44);
    EXPECT_EQ(range_request("/andromeda/v1/nodes/", "/andromeda/v1/nodes0"), want);
    EXPECT_EQ(range_request("k", ""), std::string("\x0a\x01k", 3)) << "no range_end: one key";
    // limit 3 and revision 300 (varint 0xac 0x02) follow, in field order.
    EXPECT_EQ(range_request("k", "l", 300, 3), std::string("\x0a\x01k\x12\x01l\x18\x03\x20\xac\x02", 11));
    const std::string framed = frame("abc");
    EXPECT_EQ(framed, std::string("\0\0\0\0\x03" "abc", 8));
    EXPECT_EQ(unframe(framed), "abc");
}

TEST(EtcdGrpcWire, RandomResponsesWithUnknownFieldsRoundTrip) {
    std::mt19937 rng(16);
    for (int round = 0; round < 300; ++round) {
        RangeResult want;
        want.revision = static_cast<std::int64_t>(rng() % 2 ? rng() : (std::uint64_t{rng()} << 31 | rng()));
        for (int n = static_cast<int>(rng() % 20); n > 0; --n) {
            KeyValue kv;
            kv.key.resize(1 + rng() % 200);  // over 127 bytes: a two-byte length
            for (char& c : kv.key) c = static_cast<char>(rng());
            kv.value.resize(rng() % 300);
            for (char& c : kv.value) c = static_cast<char>(rng());
            kv.create_revision = rng() % 4 ? rng() % 100000 : 0;
            kv.mod_revision = static_cast<std::int64_t>(std::uint64_t{rng()} << 32 | rng()) & INT64_MAX;
            kv.version = rng() % 5;
            kv.lease = rng() % 3 ? 0 : -static_cast<std::int64_t>(rng()) - 1;  // negative: ten-byte varints
            want.kvs.push_back(kv);
        }
        const std::string message = testing::encode_range_response(want, &rng);
        const RangeResult got = decode_range_response(unframe(frame(message)));
        EXPECT_EQ(got.revision, want.revision);
        ASSERT_EQ(got.kvs.size(), want.kvs.size());
        for (std::size_t i = 0; i < want.kvs.size(); ++i) {
            EXPECT_EQ(got.kvs[i].key, want.kvs[i].key);
            EXPECT_EQ(got.kvs[i].value, want.kvs[i].value);
            EXPECT_EQ(got.kvs[i].create_revision, want.kvs[i].create_revision);
            EXPECT_EQ(got.kvs[i].mod_revision, want.kvs[i].mod_revision);
            EXPECT_EQ(got.kvs[i].version, want.kvs[i].version);
            EXPECT_EQ(got.kvs[i].lease, want.kvs[i].lease);
        }
    }
}

TEST(EtcdGrpcWire, EveryTruncationIsRefusedAndNoFlipCrashes) {
    const std::string body = captured();
    const std::string_view message = unframe(body);
    for (std::size_t n = 0; n < message.size(); ++n) {
        // Cut inside the header or a key-value, a response is malformed. Cut between two
        // key-values (after byte 27, 88, 149 or 210), it is a valid, shorter response.
        const bool boundary = n == 27 || n == 88 || n == 149 || n == 210;
        if (boundary) {
            EXPECT_EQ(decode_range_response(message.substr(0, n)).kvs.size(), (n - 27) / 61) << n;
        } else {
            EXPECT_THROW((void)decode_range_response(message.substr(0, n)), EtcdError) << "cut at " << n;
        }
    }
    std::mt19937 rng(5);
    int refused = 0;
    for (std::size_t i = 0; i < message.size(); ++i) {
        for (int k = 0; k < 8; ++k) {
            std::string flipped(message);
            flipped[i] = static_cast<char>(flipped[i] ^ (1 << k));
            try {
                const RangeResult r = decode_range_response(flipped);
                EXPECT_LE(r.kvs.size(), 3u);
            } catch (const EtcdError& e) {
                EXPECT_NE(std::string(e.what()).find("malformed at byte"), std::string::npos) << e.what();
                ++refused;
            }
        }
    }
    EXPECT_GT(refused, 100) << "flips of lengths and tags must be refused";
}

TEST(EtcdGrpcWire, RefusesWhatIsNotOneWholeUncompressedFrame) {
    const std::string body = captured();
    EXPECT_THROW((void)unframe(body.substr(0, 4)), EtcdError);
    EXPECT_THROW((void)unframe(body.substr(0, body.size() - 1)), EtcdError) << "short of its length";
    EXPECT_THROW((void)unframe(body + "x"), EtcdError) << "a second message";
    std::string compressed = body;
    compressed[0] = 1;
    try {
        (void)unframe(compressed);
        ADD_FAILURE() << "a compressed frame was read as plain";
    } catch (const EtcdError& e) {
        EXPECT_NE(std::string(e.what()).find("compressed"), std::string::npos) << e.what();
    }
    // Groups (wire types 3 and 4), a field numbered 0 and an 11-byte varint are refused.
    for (const std::string& bad : {std::string("\x0b", 1), std::string("\x0c", 1), std::string("\x00\x01", 2),
                                  std::string("\x18\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12),
                                  std::string("\x12\x05\x0a\x10", 4)})
        EXPECT_THROW((void)decode_range_response(bad), EtcdError);
    EXPECT_THROW((void)decode_range_response(""), EtcdError) << "no header, no revision";
    EXPECT_THROW((void)decode_range_response(std::string("\x12\x02\x08\x01", 4)), EtcdError) << "a key with a varint type";
}

TEST(EtcdGrpcWire, PercentDecodesGrpcMessages) {
    EXPECT_EQ(percent_decode("etcdserver: permission denied"), "etcdserver: permission denied");
    EXPECT_EQ(percent_decode("a%20b%25c%3A"), "a b%c:");
    EXPECT_EQ(percent_decode("50%"), "50%");
    EXPECT_EQ(percent_decode("%zz%4"), "%zz%4");
}

}  // namespace
}  // namespace andromeda::etcd
