// The etcd client's codecs on their own, no server: base64, prefix ranges, and the watch
// stream's messages (mistyped fields are an EtcdError naming the field).
#include <gtest/gtest.h>

#include <random>
#include <utility>

#include "etcd/client.hpp"

namespace andromeda::etcd {
namespace {

TEST(EtcdCodec, Base64MatchesRfc4648AndRefusesWhatIsNot) {
    const std::pair<const char*, const char*> vectors[] = {{"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},
                                                           {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
                                                           {"foobar", "Zm9vYmFy"}};
    for (const auto& [plain, encoded] : vectors) {
        EXPECT_EQ(base64_encode(plain), encoded);
        EXPECT_EQ(base64_decode(encoded), plain);
    }
    std::mt19937 rng(3);
    for (int i = 0; i < 500; ++i) {
        std::string bytes(rng() % 70, '\0');
        for (char& c : bytes) c = static_cast<char>(rng());
        EXPECT_EQ(base64_decode(base64_encode(bytes)), bytes);
    }
    for (const char* bad : {"Zg=", "Z===", "Zm9v!A==", "=Zm9", "Zg==Zg==", "Zm=v"}) EXPECT_FALSE(base64_decode(bad)) << bad;
}

TEST(EtcdCodec, PrefixEndIsTheFirstKeyAfterThePrefix) {
    EXPECT_EQ(prefix_end("/andromeda/v1/"), "/andromeda/v10");
    EXPECT_EQ(prefix_end(std::string("a\xff", 2)), "b");
    EXPECT_EQ(prefix_end(std::string("\xff\xff", 2)), std::string(1, '\0'));
}

// A watch message whose fields have the wrong JSON types is etcd's error (EtcdError, naming the
// field), never another exception: callers are promised EtcdError only (the daemon's watch
// callback happens to catch more; the fuzzer, and any other caller, would die of it).
TEST(EtcdCodec, AWatchMessageWithMistypedFieldsIsAnEtcdErrorNamingTheField) {
    std::size_t batches = 0;
    const auto count = [&](const WatchBatch& b) { batches += b.events.size(); };
    const std::pair<const char*, const char*> mistyped[] = {
        {R"({"result":{"created":1}})", "created"},
        {R"({"result":{"canceled":"yes"}})", "canceled"},
        {R"({"result":{"canceled":true,"cancel_reason":7}})", "cancel_reason"},
        {R"({"result":{"events":[{"type":3}]}})", "type"},
        {R"({"result":{"compact_revision":"12abc"}})", "compact_revision"},
        {R"({"result":{"header":{"revision":[1]},"events":[{"type":"PUT"}]}})", "revision"},
        {R"({"result":{"events":[{"kv":{"key":"not base64!"}}]}})", "key"},
    };
    for (const auto& [line, field] : mistyped) {
        try {
            (void)read_watch_message(line, count);
            ADD_FAILURE() << "accepted " << line;
        } catch (const EtcdError& e) {
            EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
        }
    }
    EXPECT_EQ(batches, 0u);

    // The same fields well typed: read as etcd means them.
    bool created = false;
    EXPECT_FALSE(read_watch_message(R"({"result":{"created":true,"canceled":null}})", count, &created));
    EXPECT_TRUE(created);
    const auto compacted = read_watch_message(R"({"result":{"compact_revision":"42"}})", count);
    ASSERT_TRUE(compacted);
    EXPECT_EQ(compacted->why, WatchEnd::Why::compacted);
    EXPECT_EQ(compacted->compact_revision, 42);
    const auto canceled = read_watch_message(R"({"result":{"canceled":true,"cancel_reason":"gone"}})", count);
    ASSERT_TRUE(canceled);
    EXPECT_EQ(canceled->error, "etcd canceled the watch: gone");
    std::vector<WatchEvent::Type> types;
    EXPECT_FALSE(read_watch_message(
        R"({"result":{"header":{"revision":"9"},"events":[{"type":"DELETE","kv":{"key":"L2E="}},{"kv":{"key":"L2I=","value":"eA=="}}]}})",
        [&](const WatchBatch& b) {
            EXPECT_EQ(b.revision, 9);
            for (const auto& e : b.events) types.push_back(e.type);
            ASSERT_EQ(b.events.size(), 2u);
            EXPECT_EQ(b.events[0].kv.key, "/a");
            EXPECT_EQ(b.events[1].kv.key, "/b");
            EXPECT_EQ(b.events[1].kv.value, "x");
        }));
    EXPECT_EQ(types, (std::vector<WatchEvent::Type>{WatchEvent::Type::erase, WatchEvent::Type::put}));
}

}  // namespace
}  // namespace andromeda::etcd
