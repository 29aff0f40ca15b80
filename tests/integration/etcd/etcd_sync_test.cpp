// The daemon's etcd sync on its own, against a real etcd: what it hands to the daemon (the keys
// under the layout, as listed and then as watched), and a watch that falls behind etcd's
// compaction while its thread is stalled: it lists again and ends with exactly etcd's keys.
// An integration test: it starts a server process (tests/support/etcd_server.hpp); reading the
// cache file is a unit test (tests/unit/daemon/etcd_cache_test.cpp).
#include "daemon/etcd_sync.hpp"

#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "support/etcd_server.hpp"

namespace andromeda::daemon {
namespace {

using namespace std::chrono_literals;
using testing::EtcdServer;

// Keeps the keys as the daemon would from the updates it is handed (every key after a list, the
// changed ones otherwise), and each update.
struct Recorder {
    std::mutex m;
    std::condition_variable changed;
    std::map<std::string, std::string> keys;
    std::vector<std::map<std::string, std::string>> applied;  // the keys after each update
    std::vector<EtcdUpdate> updates;

    EtcdSync::Apply apply() {
        return [this](const EtcdUpdate& update) {
            std::unique_lock lock(m);
            if (update.full) keys = update.kvs;
            for (const auto& [key, value] : update.changes) {
                if (value) keys[key] = *value;
                else keys.erase(key);
            }
            applied.push_back(keys);
            updates.push_back(update);
            changed.notify_all();
            return EtcdApplied{};
        };
    }
    // The last update that carried `key` (the sync's own node entry may come in updates of its
    // own, before or after it); null when none did.
    const EtcdUpdate* last_with(const std::string& key) {
        for (auto it = updates.rbegin(); it != updates.rend(); ++it)
            if (it->full ? it->kvs.count(key) != 0 : it->changes.count(key) != 0) return &*it;
        return nullptr;
    }
    bool wait_for(const std::function<bool(const std::map<std::string, std::string>&)>& done, std::chrono::seconds timeout) {
        std::unique_lock lock(m);
        return changed.wait_for(lock, timeout, [&] { return !applied.empty() && done(applied.back()); });
    }
};

fabric::EtcdSettings settings_of(const EtcdServer& server) {
    fabric::EtcdSettings s;
    s.endpoints = {server.endpoint()};
    s.lease_ttl = 5;
    return s;
}

// A value with quotes, a backslash, control characters and a multi-byte character.
const std::string kOddValue = "quote \" backslash \\ newline \n tab \t nul-free \x01 \xc3\xa9 end";

std::string cache_path() { return "/tmp/andromeda-etcd-sync-" + std::to_string(getpid()) + ".json"; }

TEST(EtcdSync, HandsOverTheListedKeysThenEachWatchedChangeAndPublishesItsNode) {
    ANDROMEDA_REQUIRE_ETCD();
    EtcdServer server;
    etcd::Client c(server.client_config());
    c.put("/andromeda/v1/vpcs/blue", "{}");
    c.put("/other/key", "not ours");
    Recorder r;
    {
        EtcdSync sync(settings_of(server), "node1", R"({"address": "192.168.1.1"})", cache_path(), r.apply());
        ASSERT_TRUE(r.wait_for([](const auto& kvs) { return kvs.count("/andromeda/v1/vpcs/blue") == 1; }, 10s));
        EXPECT_EQ(r.applied.back().count("/other/key"), 0u);
        {
            std::lock_guard lock(r.m);
            EXPECT_TRUE(r.updates.front().full) << "the list hands over every key";
        }
        c.put("/andromeda/v1/odd/key", kOddValue);  // for the cache: every byte JSON escapes
        c.put("/andromeda/v1/endpoints/blue/10.0.0.10", R"({"mac": "02:00:00:00:00:10"})");
        ASSERT_TRUE(r.wait_for([](const auto& kvs) { return kvs.count("/andromeda/v1/endpoints/blue/10.0.0.10") == 1; }, 10s));
        {
            // A watched change comes alone, not with every key.
            std::lock_guard lock(r.m);
            const EtcdUpdate* u = r.last_with("/andromeda/v1/endpoints/blue/10.0.0.10");
            ASSERT_NE(u, nullptr);
            EXPECT_FALSE(u->full);
            EXPECT_EQ(u->changes.at("/andromeda/v1/endpoints/blue/10.0.0.10"), R"({"mac": "02:00:00:00:00:10"})");
        }
        c.erase("/andromeda/v1/vpcs/blue");
        ASSERT_TRUE(r.wait_for([](const auto& kvs) { return kvs.count("/andromeda/v1/vpcs/blue") == 0; }, 10s));
        {
            std::lock_guard lock(r.m);
            const EtcdUpdate* u = r.last_with("/andromeda/v1/vpcs/blue");
            ASSERT_NE(u, nullptr);
            ASSERT_FALSE(u->full);
            EXPECT_EQ(u->changes.at("/andromeda/v1/vpcs/blue"), std::nullopt) << "a deletion is a key without value";
        }
        // Its own node, under a lease.
        for (int i = 0; i < 100 && !sync.status().lease_alive; ++i) std::this_thread::sleep_for(100ms);
        ASSERT_TRUE(sync.status().lease_alive);
        const auto self = c.get("/andromeda/v1/nodes/node1");
        ASSERT_TRUE(self);
        EXPECT_NE(self->lease, 0);
        EXPECT_EQ(sync.status().lists, 1u);
        EXPECT_GE(sync.status().events, 3u);
    }
    EXPECT_FALSE(c.get("/andromeda/v1/nodes/node1")) << "a stopping sync revokes its lease";
    const auto cache = EtcdSync::read_cache(cache_path(), fabric::EtcdLayout("/andromeda"));
    ASSERT_TRUE(cache);
    EXPECT_EQ(cache->kvs.count("/andromeda/v1/endpoints/blue/10.0.0.10"), 1u) << "the cache holds what was last applied";
    EXPECT_EQ(cache->kvs.at("/andromeda/v1/endpoints/blue/10.0.0.10"), R"({"mac": "02:00:00:00:00:10"})");
    EXPECT_EQ(cache->kvs.at("/andromeda/v1/odd/key"), kOddValue) << "written and read back byte for byte";
    EXPECT_EQ(cache->kvs.count("/andromeda/v1/vpcs/blue"), 0u);
    EXPECT_GT(cache->revision, 0);
    std::filesystem::remove(cache_path());
}

// The cache writer serializes kvs_ in slices of 2,048 keys, letting go of the lock between them:
// written while keys come and go, the cache it settles on holds exactly etcd's keys.
TEST(EtcdSync, TheCacheWrittenInSlicesWhileKeysChangeEndsAsEtcdsKeys) {
    ANDROMEDA_REQUIRE_ETCD();
    EtcdServer server;
    etcd::Client c(server.client_config());
    const auto key = [](int i) { return "/andromeda/v1/endpoints/blue/10.0." + std::to_string(i / 250) + "." + std::to_string(i % 250); };
    std::vector<std::pair<std::string, std::string>> batch;
    for (int i = 0; i < 7000; ++i) {  // four slices
        batch.emplace_back(key(i), "v0-" + std::to_string(i) + (i % 7 == 0 ? kOddValue : ""));
        if (batch.size() == 100) c.put_all(std::exchange(batch, {}));
    }
    const std::string path = cache_path() + ".slices";
    Recorder r;
    EtcdSync sync(settings_of(server), "node1", "{}", path, r.apply());
    ASSERT_TRUE(r.wait_for([](const auto& kvs) { return kvs.size() >= 7000; }, 20s));
    // Changes for ~3 s, spread over the keys: some written before a slice, some after.
    std::mt19937 rng(9);
    std::int64_t last = 0;
    for (auto until = std::chrono::steady_clock::now() + 3s; std::chrono::steady_clock::now() < until;) {
        const int i = static_cast<int>(rng() % 8000);
        if (rng() % 3 == 0) last = c.erase(key(i));
        else last = c.put(key(i), "v1-" + std::to_string(rng()));
        std::this_thread::sleep_for(2ms);
    }
    // Once quiet (2 s), the writer writes what was applied last.
    std::optional<EtcdSync::Cache> cache;
    for (int i = 0; i < 150; ++i) {
        cache = EtcdSync::read_cache(path, fabric::EtcdLayout("/andromeda"));
        if (cache && cache->revision >= last) break;
        std::this_thread::sleep_for(100ms);
    }
    ASSERT_TRUE(cache);
    ASSERT_GE(cache->revision, last) << "the cache writer wrote no cache after the changes";
    std::map<std::string, std::string> want;
    for (auto& kv : c.range_prefix("/andromeda/v1/").kvs) want.emplace(std::move(kv.key), std::move(kv.value));
    EXPECT_EQ(cache->kvs.size(), want.size());
    EXPECT_TRUE(cache->kvs == want) << "the cache differs from etcd's keys";
    std::filesystem::remove(path);
}

TEST(EtcdSync, AWatchThatFallsBehindACompactionListsAgainAndEndsWithEtcdsKeys) {
    ANDROMEDA_REQUIRE_ETCD();
    EtcdServer server;
    etcd::Client c(server.client_config());
    c.put("/andromeda/v1/vpcs/blue", "{}");
    Recorder r;
    // The watch thread stalls on the first batch it sees until released (a host too busy to
    // read the stream): etcd's watch then falls behind.
    std::mutex stall_mutex;
    std::condition_variable stall_cv;
    bool stalled = true;
    EtcdSync sync(settings_of(server), "node1", "{}", cache_path(), r.apply(), [&](const etcd::WatchBatch&) {
        std::unique_lock lock(stall_mutex);
        stall_cv.wait(lock, [&] { return !stalled; });
    });
    ASSERT_TRUE(r.wait_for([](const auto& kvs) { return kvs.count("/andromeda/v1/vpcs/blue") == 1; }, 10s));
    // Far more changes than the stream's buffers hold, then a compaction past all of them.
    const std::string padding(200, 'x');
    std::int64_t revision = 0;
    for (int t = 0; t < 400; ++t) {
        std::vector<std::pair<std::string, std::string>> puts;
        for (int i = 0; i < 128; ++i)
            puts.emplace_back("/andromeda/v1/endpoints/blue/k" + std::to_string(i), std::to_string(t) + padding);
        revision = c.put_all(puts);
    }
    c.put("/andromeda/v1/vpcs/green", "{}");
    revision = c.put("/andromeda/v1/vpcs/green", "{\"final\": true}");
    c.compact(revision);
    {
        std::lock_guard lock(stall_mutex);
        stalled = false;
        stall_cv.notify_all();
    }
    ASSERT_TRUE(r.wait_for([](const auto& kvs) {
        const auto it = kvs.find("/andromeda/v1/vpcs/green");
        return it != kvs.end() && it->second == "{\"final\": true}";
    }, 60s));
    const EtcdStatus s = sync.status();
    EXPECT_GE(s.compactions, 1u) << "the watch fell behind the compaction";
    EXPECT_GE(s.lists, 2u) << "and the sync listed again";
    std::map<std::string, std::string> in_etcd;
    for (auto& kv : c.range_prefix("/andromeda/v1/").kvs) in_etcd.emplace(kv.key, kv.value);
    std::lock_guard lock(r.m);
    EXPECT_EQ(r.applied.back(), in_etcd);
    std::filesystem::remove(cache_path());
}

}  // namespace
}  // namespace andromeda::daemon
