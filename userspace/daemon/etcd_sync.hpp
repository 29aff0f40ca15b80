// The daemon's side of the fabric in etcd (docs/etcd.md): one thread lists the layout's keys,
// then watches from the list's revision + 1, keeping the keys up to date; another hands the daemon
// what changed (every key after a list; otherwise the keys the watch changed since the last
// apply) to apply as a reload is (the same validation, publication, map sync and fast-path
// update), so changes that arrive during an apply are applied together by the next. A compacted revision or a broken watch means: list again and
// apply (the diff against what runs is all that changes: nothing is flushed). With etcd
// unreachable, forwarding goes on with the last fabric; the thread reconnects with backoff.
//
// A second thread keeps this node's own entry (<prefix>/v1/nodes/<name>: address, MAC, encap)
// under a lease: if this andromedad dies, the entry expires and its peers drop the node.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "etcd/client.hpp"
#include "fabric/etcd_fabric.hpp"
#include "fabric/model.hpp"

namespace andromeda::daemon {

struct EtcdStatus {
    std::vector<std::string> endpoints;
    std::string prefix;               // the layout's root, "/andromeda/v1/"
    bool connected = false;           // listing or watching right now
    std::int64_t revision = 0;        // the last revision seen (listed or watched)
    std::int64_t applied_revision = 0;  // the last revision built and applied
    std::size_t keys = 0;             // keys under the prefix at that revision
    std::vector<fabric::RejectedKey> rejected;
    std::uint64_t lists = 0;          // full listings (the first, and every resync)
    std::uint64_t watch_batches = 0;  // watch responses applied
    std::uint64_t events = 0;         // key changes in them
    std::uint64_t compactions = 0;    // watches that fell behind a compaction (then: list again)
    std::uint64_t disconnects = 0;    // lists or watches that failed (then: back off, list again)
    std::uint64_t apply_failures = 0; // fabrics the daemon refused (node.toml's own errors)
    std::uint64_t applied_incremental = 0;  // applies of endpoint changes to the running fabric
    std::uint64_t applied_full = 0;         // applies that built the whole fabric again
    bool lease_alive = false;         // this node's entry is in etcd under a live lease
    std::int64_t lease = 0;
    std::uint64_t lease_renewals = 0;
    std::string last_error;
};

// What the daemon is given to apply: after a list, every key; otherwise what changed since the
// last apply.
struct EtcdUpdate {
    bool full = false;
    std::map<std::string, std::string> kvs;  // full: every key and value
    fabric::EtcdChanges changes;             // otherwise: each changed key's value, or nullopt (deleted)
};

// How an update was applied: the keys left out, and whether the running fabric took the changes
// in place (fabric::EtcdFabricBuilder::derive) or was built again.
struct EtcdApplied {
    std::vector<fabric::RejectedKey> rejected;
    bool incremental = false;
};

class EtcdSync {
public:
    // Applies an update; throws when nothing could be applied (which the sync counts and logs).
    using Apply = std::function<EtcdApplied(const EtcdUpdate& update)>;

    // `self`: this node's entry (JSON) under the layout's nodes/<name>. `cache_path`: where the
    // keys last applied are kept (written once changes have been quiet for 2 s, and at least every
    // 30 s while they keep coming; and when the sync stops), for a start while etcd is away.
    // Starts both threads.
    // `watched`, when given, sees every watch batch on the watch thread before it is kept (tests
    // use it to make the watch fall behind).
    EtcdSync(const fabric::EtcdSettings& settings, std::string node_name, std::string self_value, std::string cache_path,
             Apply apply, std::function<void(const etcd::WatchBatch&)> watched = {});
    // Stops the threads and revokes the lease (this node's entry goes at once).
    ~EtcdSync();
    EtcdSync(const EtcdSync&) = delete;
    EtcdSync& operator=(const EtcdSync&) = delete;

    [[nodiscard]] EtcdStatus status() const;
    // The keys and values as last seen (for a reload of node.toml, which rebuilds with them).
    [[nodiscard]] std::map<std::string, std::string> keys() const;
    [[nodiscard]] const fabric::EtcdLayout& layout() const noexcept { return layout_; }

    // The cache a previous run left: its keys, when it is of this layout; empty otherwise.
    struct Cache {
        std::int64_t revision = 0;
        std::map<std::string, std::string> kvs;
    };
    [[nodiscard]] static std::optional<Cache> read_cache(const std::string& path, const fabric::EtcdLayout& layout);
    [[nodiscard]] static std::string default_cache_path(const std::string& node_name);

private:
    void watch_loop();
    void lease_loop();
    void list_and_apply(etcd::Client& client, std::int64_t& revision);
    void request_apply();
    void apply_loop();
    void apply_now();
    // Waits up to `d`, or until stopping; false when stopping.
    bool pause(std::chrono::milliseconds d);
    void note_error(const std::string& what);
    void cache_loop();
    bool write_cache(std::unique_lock<std::mutex>* lock, std::int64_t revision);

    etcd::Config config_;
    fabric::EtcdLayout layout_;
    std::string node_name_;
    std::string self_value_;
    std::uint32_t lease_ttl_;
    std::string cache_path_;
    Apply apply_;
    std::function<void(const etcd::WatchBatch&)> watched_;

    mutable std::mutex mutex_;  // guards kvs_ and status_
    std::map<std::string, std::string> kvs_;
    std::string cache_slice_;  // the cache writer's text of one slice, its room kept between writes
    EtcdStatus status_;
    std::set<std::string> logged_rejections_;
    bool dirty_ = false;       // kvs_ changed since the last apply
    bool full_pending_ = false;  // ... by a list: the next apply gets every key
    fabric::EtcdChanges pending_;  // otherwise what changed, key by key
    std::condition_variable apply_wake_;
    bool cache_dirty_ = false;  // applied since the cache was last written
    std::chrono::steady_clock::time_point last_applied_{};
    std::condition_variable cache_wake_;

    std::atomic<bool> stop_{false};
    std::mutex wake_mutex_;
    std::condition_variable wake_;
    std::thread watcher_;
    std::thread leaser_;
    std::thread applier_;
    std::thread cacher_;
};

}  // namespace andromeda::daemon
