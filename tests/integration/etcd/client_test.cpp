// The etcd client against a real etcd (Debian's etcd-server, started by the test on loopback):
// key-value calls, transactions, leases, the watch from a revision, compaction and a lost server.
// An integration test: it starts a server process (tests/support/etcd_server.hpp); the codecs
// have their unit test (tests/unit/etcd/codec_test.cpp).
#include "etcd/client.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <thread>
#include <utility>

#include "support/etcd_server.hpp"

namespace andromeda::etcd {
namespace {

using namespace std::chrono_literals;
using testing::EtcdServer;

TEST(EtcdClient, PutGetRangeEraseAndTransactionsMoveTheRevision) {
    ANDROMEDA_REQUIRE_ETCD();
    EtcdServer server;
    Client c(server.client_config());
    const auto r1 = c.put("/t/a", "1");
    const auto r2 = c.put("/t/b", std::string("two\0bytes", 9));
    c.put("/u/other", "x");
    EXPECT_EQ(r2, r1 + 1);
    ASSERT_TRUE(c.get("/t/b"));
    EXPECT_EQ(c.get("/t/b")->value, std::string("two\0bytes", 9));
    EXPECT_FALSE(c.get("/t/none"));
    auto range = c.range_prefix("/t/");
    ASSERT_EQ(range.kvs.size(), 2u);
    EXPECT_EQ(range.kvs[0].key, "/t/a");
    EXPECT_EQ(range.kvs[1].key, "/t/b");
    EXPECT_EQ(range.revision, r2 + 1);
    EXPECT_EQ(range.kvs[0].mod_revision, r1);

    const auto r3 = c.put_all({{"/t/c", "3"}, {"/t/d", "4"}}, {"/t/a"});
    EXPECT_EQ(r3, r2 + 2) << "one transaction, one revision";
    range = c.range_prefix("/t/");
    ASSERT_EQ(range.kvs.size(), 3u);
    EXPECT_EQ(range.kvs[0].key, "/t/b");
    EXPECT_EQ(c.range_prefix("/t/", r1).kvs.size(), 1u) << "an older revision reads the older state";
    c.erase_prefix("/t/");
    EXPECT_TRUE(c.range_prefix("/t/").kvs.empty());
    EXPECT_EQ(c.range_prefix("/u/").kvs.size(), 1u);
}

TEST(EtcdClient, ARangeOfThousandsOfKeysWithAnyBytesReadsBackWhatWasWritten) {
    ANDROMEDA_REQUIRE_ETCD();
    EtcdServer server;
    Client c(server.client_config());
    std::mt19937 rng(7);
    std::map<std::string, std::string> want;
    std::vector<std::pair<std::string, std::string>> batch;
    while (want.size() < 3000) {
        std::string key = "/r/" + std::to_string(rng() % 100000) + std::string(1, static_cast<char>(rng()));
        std::string value(rng() % 400, '\0');
        for (char& ch : value) ch = static_cast<char>(rng());
        if (!want.emplace(key, value).second) continue;
        batch.emplace_back(key, value);
        if (batch.size() == 100) c.put_all(std::exchange(batch, {}));
    }
    if (!batch.empty()) c.put_all(batch);
    const std::int64_t written = c.put("/s/after", "x");
    const RangeResult r = c.range_prefix("/r/");
    EXPECT_EQ(r.revision, written);
    ASSERT_EQ(r.kvs.size(), want.size());
    auto it = want.begin();
    for (const KeyValue& kv : r.kvs) {
        EXPECT_EQ(kv.key, it->first) << "sorted by key, as etcd keeps them";
        EXPECT_EQ(kv.value, it->second) << kv.key;
        EXPECT_EQ(kv.version, 1);
        ++it;
    }
    EXPECT_EQ(c.get("/s/after")->mod_revision, written);
}

TEST(EtcdClient, AWatchFromARevisionSeesHistoryThenLiveChangesInOrder) {
    ANDROMEDA_REQUIRE_ETCD();
    EtcdServer server;
    Client c(server.client_config());
    const auto start = c.put("/w/1", "a");
    c.put("/w/2", "b");
    c.put("/elsewhere", "not watched");
    std::atomic<bool> stop{false};
    std::vector<std::string> seen;
    std::mutex m;
    std::thread watcher([&] {
        Client w(server.client_config());
        const WatchEnd end = w.watch_prefix("/w/", start, [&](const WatchBatch& b) {
            std::lock_guard lock(m);
            for (const auto& e : b.events)
                seen.push_back((e.type == WatchEvent::Type::put ? "put " : "del ") + e.kv.key + "=" + e.kv.value);
        }, stop);
        EXPECT_EQ(end.why, WatchEnd::Why::stopped) << end.error;
    });
    c.erase("/w/1");
    c.put("/w/3", "c");
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    for (;;) {
        {
            std::lock_guard lock(m);
            if (seen.size() >= 4 || std::chrono::steady_clock::now() > deadline) break;
        }
        std::this_thread::sleep_for(10ms);
    }
    stop = true;
    watcher.join();
    EXPECT_EQ(seen, (std::vector<std::string>{"put /w/1=a", "put /w/2=b", "del /w/1=", "put /w/3=c"}));
}

TEST(EtcdClient, AWatchFromACompactedRevisionSaysSoAndFromWhere) {
    ANDROMEDA_REQUIRE_ETCD();
    EtcdServer server;
    Client c(server.client_config());
    const auto old = c.put("/k/a", "1");
    c.put("/k/a", "2");
    const auto latest = c.put("/k/a", "3");
    c.compact(latest);
    std::atomic<bool> stop{false};
    const WatchEnd end = c.watch_prefix("/k/", old, [](const WatchBatch&) {}, stop);
    EXPECT_EQ(end.why, WatchEnd::Why::compacted) << end.error;
    EXPECT_EQ(end.compact_revision, latest);
    EXPECT_THROW((void)c.range_prefix("/k/", old), EtcdError);
}

TEST(EtcdClient, AWatchEndsBrokenWhenEtcdDiesAndCallsFailUntilItIsBack) {
    ANDROMEDA_REQUIRE_ETCD();
    EtcdServer server;
    Client c(server.client_config());
    const auto rev = c.put("/d/a", "1");
    std::atomic<bool> stop{false};
    WatchEnd end;
    std::thread watcher([&] {
        Client w(server.client_config());
        end = w.watch_prefix("/d/", rev + 1, [](const WatchBatch&) {}, stop);
    });
    std::this_thread::sleep_for(300ms);
    server.kill_now();
    watcher.join();
    EXPECT_EQ(end.why, WatchEnd::Why::broken);
    try {
        (void)c.get("/d/a");
        ADD_FAILURE() << "a call to a dead etcd succeeded";
    } catch (const EtcdError& e) {
        EXPECT_NE(std::string(e.what()).find(server.endpoint()), std::string::npos) << e.what();
    }
    server.start();
    EXPECT_EQ(c.get("/d/a")->value, "1") << "the data survived the crash";
}

TEST(EtcdClient, CallsFailOverToTheNextEndpoint) {
    ANDROMEDA_REQUIRE_ETCD();
    EtcdServer server;
    Config config = server.client_config();
    config.endpoints.insert(config.endpoints.begin(), "http://127.0.0.1:" + std::to_string(testing::free_port()));
    Client c(config);
    c.put("/f", "ok");
    EXPECT_EQ(c.get("/f")->value, "ok");
}

TEST(EtcdClient, TalksTlsWithAClientCertificateAndIsRefusedWithout) {
    ANDROMEDA_REQUIRE_ETCD();
    char dir[] = "/tmp/andromeda-etcd-tls-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    const testing::EtcdTls tls = testing::make_test_certificates(dir);
    {
        EtcdServer server({}, "127.0.0.1", tls);
        EXPECT_EQ(server.endpoint().rfind("https://", 0), 0u);
        Client c(server.client_config());
        c.put("/tls", "yes");
        EXPECT_EQ(c.get("/tls")->value, "yes");
        EXPECT_EQ(c.range_prefix("/t").kvs.size(), 1u) << "gRPC over TLS (HTTP/2 by ALPN)";
        Config no_certificate = server.client_config();
        no_certificate.cert_file.clear();
        no_certificate.key_file.clear();
        EXPECT_THROW((void)Client(no_certificate).get("/tls"), EtcdError) << "etcd demands a client certificate";
        Config no_ca = server.client_config();
        no_ca.ca_file.clear();
        try {
            (void)Client(no_ca).get("/tls");
            ADD_FAILURE() << "a server whose CA is unknown was trusted";
        } catch (const EtcdError& e) {
            EXPECT_NE(std::string(e.what()).find("certificate"), std::string::npos) << e.what();
        }
    }
    std::filesystem::remove_all(dir);
}

TEST(EtcdClient, AuthenticatesAsAUserAndKeepsToItsPermissions) {
    ANDROMEDA_REQUIRE_ETCD();
    EtcdServer server;
    const std::string e = server.endpoint();
    for (const char* step : {"user add root:rootpw", "user add andromeda:s3cret", "role add fabric",
                                    "role grant-permission fabric readwrite /andromeda/ --prefix", "user grant-role andromeda fabric",
                                    "auth enable"}) {
        const std::string command = "etcdctl --endpoints " + e + " --user root:rootpw " + std::string(step) + " >/dev/null 2>&1 || "
                                    "etcdctl --endpoints " + e + " " + step + " >/dev/null";
        ASSERT_EQ(std::system(command.c_str()), 0) << step;
    }
    Config config = server.client_config();
    config.username = "andromeda";
    config.password = "s3cret";
    Client c(config);
    c.put("/andromeda/v1/nodes/n1", "{}");
    EXPECT_EQ(c.range_prefix("/andromeda/").kvs.size(), 1u);
    try {
        c.put("/elsewhere", "x");
        ADD_FAILURE() << "a key outside the user's permission was written";
    } catch (const EtcdError& error) {
        EXPECT_NE(std::string(error.what()).find("permission denied"), std::string::npos) << error.what();
    }
    try {
        (void)c.range_prefix("/elsewhere/");
        ADD_FAILURE() << "a range outside the user's permission was read";
    } catch (const EtcdError& error) {
        EXPECT_NE(std::string(error.what()).find("permission denied"), std::string::npos) << error.what();
    }
    config.password = "wrong";
    try {
        (void)Client(config).get("/andromeda/v1/nodes/n1");
        ADD_FAILURE() << "a wrong password was accepted";
    } catch (const EtcdError& error) {
        EXPECT_NE(std::string(error.what()).find("authentication failed"), std::string::npos) << error.what();
    }
    Config anonymous = server.client_config();
    EXPECT_THROW((void)Client(anonymous).get("/andromeda/v1/nodes/n1"), EtcdError);
}

TEST(EtcdClient, LeasesKeepKeysAliveAndTheirExpiryRemovesThem) {
    ANDROMEDA_REQUIRE_ETCD();
    EtcdServer server;
    Client c(server.client_config());
    const auto kept = c.grant_lease(3);
    const auto lapsed = c.grant_lease(2);
    c.put("/l/kept", "1", kept);
    c.put("/l/lapsed", "1", lapsed);
    for (int i = 0; i < 8; ++i) {  // 4 s: longer than either TTL
        EXPECT_GT(c.keep_alive(kept), 0);
        std::this_thread::sleep_for(500ms);
    }
    EXPECT_TRUE(c.get("/l/kept"));
    EXPECT_FALSE(c.get("/l/lapsed")) << "its lease expired";
    EXPECT_EQ(c.keep_alive(lapsed), 0) << "an expired lease has no TTL left";
    c.revoke_lease(kept);
    EXPECT_FALSE(c.get("/l/kept"));
}

}  // namespace
}  // namespace andromeda::etcd
