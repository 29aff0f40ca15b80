// The etcd sync's cache file on its own, no etcd: a damaged file is no cache, and a cache with
// a bad revision or a key outside the layout keeps only what it can trust.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "daemon/etcd_sync.hpp"

namespace andromeda::daemon {
namespace {

std::string cache_path() { return "/tmp/andromeda-etcd-cache-" + std::to_string(getpid()) + ".json"; }

TEST(EtcdSync, ADamagedCacheIsNoCache) {
    const fabric::EtcdLayout layout("/andromeda");
    for (const char* text : {"", "not json", "[]", R"({"prefix": 5, "keys": {}})", R"({"prefix": "/andromeda/v1/"})",
                             R"({"prefix": "/other/v1/", "keys": {}})", R"({"prefix": "/andromeda/v1/", "keys": []})"}) {
        std::ofstream(cache_path()) << text;
        EXPECT_FALSE(EtcdSync::read_cache(cache_path(), layout)) << text;
    }
    std::ofstream(cache_path()) << R"({"prefix": "/andromeda/v1/", "revision": "x", "keys": {"/andromeda/v1/vpcs/a": "{}", "/b": 1}})";
    const auto cache = EtcdSync::read_cache(cache_path(), layout);
    ASSERT_TRUE(cache);
    EXPECT_EQ(cache->revision, 0);
    EXPECT_EQ(cache->kvs.size(), 1u);
    std::filesystem::remove(cache_path());
}

}  // namespace
}  // namespace andromeda::daemon
