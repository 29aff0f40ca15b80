#include "daemon/etcd_sync.hpp"

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

namespace andromeda::daemon {

namespace {

using namespace std::chrono_literals;

constexpr auto kFirstBackoff = 200ms;
constexpr auto kMaxBackoff = 5000ms;
// The cache is written once changes have been quiet this long, and at least this often while
// they keep coming: writing 100k keys costs a daemon ~0.2 s of a core, too much per change.
constexpr auto kCacheQuiet = 2000ms;
constexpr auto kCacheMaxDelay = 30000ms;
constexpr std::size_t kCacheSlice = 2048;  // keys the cache writer serializes per hold of the lock

std::chrono::milliseconds next_backoff(std::chrono::milliseconds b) { return std::min(b * 2, kMaxBackoff); }

// The calling thread under SCHED_IDLE (it runs only when nothing else wants the CPU), or back
// under SCHED_OTHER. Best effort: a refusal leaves the thread as it was.
void set_idle_priority(bool idle) {
    sched_param param{};
    (void)pthread_setschedparam(pthread_self(), idle ? SCHED_IDLE : SCHED_OTHER, &param);
}

}  // namespace

EtcdSync::EtcdSync(const fabric::EtcdSettings& settings, std::string node_name, std::string self_value, std::string cache_path,
                   Apply apply, std::function<void(const etcd::WatchBatch&)> watched)
    : config_(fabric::etcd_client_config(settings)),
      layout_(settings.prefix),
      node_name_(std::move(node_name)),
      self_value_(std::move(self_value)),
      lease_ttl_(settings.lease_ttl),
      cache_path_(std::move(cache_path)),
      apply_(std::move(apply)),
      watched_(std::move(watched)) {
    status_.endpoints = settings.endpoints;
    status_.prefix = layout_.root();
    // spdlog creates its registry on first use, inside libspdlog, behind a static guard whose fast path
    // ThreadSanitizer cannot see: create it here, before the threads that log, not in two of them at once.
    (void)spdlog::default_logger_raw();
    applier_ = std::thread([this] { apply_loop(); });
    cacher_ = std::thread([this] { cache_loop(); });
    watcher_ = std::thread([this] { watch_loop(); });
    leaser_ = std::thread([this] { lease_loop(); });
}

EtcdSync::~EtcdSync() {
    stop_ = true;
    {
        std::lock_guard lock(wake_mutex_);
        wake_.notify_all();
    }
    {
        std::lock_guard lock(mutex_);
        apply_wake_.notify_all();
        cache_wake_.notify_all();
    }
    if (watcher_.joinable()) watcher_.join();
    if (leaser_.joinable()) leaser_.join();
    if (applier_.joinable()) applier_.join();
    if (cacher_.joinable()) cacher_.join();
    if (cache_dirty_) (void)write_cache(nullptr, status_.applied_revision);  // every other thread is gone
}

std::string EtcdSync::default_cache_path(const std::string& node_name) { return "/run/andromeda/" + node_name + ".etcd-fabric.json"; }

std::optional<EtcdSync::Cache> EtcdSync::read_cache(const std::string& path, const fabric::EtcdLayout& layout) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
    // A damaged cache is no cache: the daemon starts without it and lists etcd.
    const auto prefix = doc.is_object() ? doc.find("prefix") : doc.end();
    const auto revision = doc.is_object() ? doc.find("revision") : doc.end();
    const auto keys = doc.is_object() ? doc.find("keys") : doc.end();
    if (doc.is_discarded() || !doc.is_object() || prefix == doc.end() || !prefix->is_string() ||
        prefix->get<std::string>() != layout.root() || keys == doc.end() || !keys->is_object())
        return std::nullopt;
    Cache cache;
    if (revision != doc.end() && revision->is_number_integer()) cache.revision = revision->get<std::int64_t>();
    for (const auto& [k, v] : keys->items())
        if (v.is_string()) cache.kvs.emplace(k, v.get<std::string>());
    return cache;
}

// Written whole to a temporary file, then renamed over the old one: a crash leaves one or the other.
// The JSON object is written a slice of kCacheSlice keys at a time, serialized straight from kvs_
// (no copy of the keys is made: a copy of 100k keys, even made in slices, meant ~25 MB of fresh
// pages, and on this machine kind faulting those in stalled the daemon long enough to be the
// slowest daemon's latency of a change, ~75 ms). With `lock` (the cache writer), mutex_ is held
// only while a slice is serialized, at normal priority; the file is written between slices at
// idle priority. Keys may come and go between slices: every key written is at least as new as
// `revision`, what the cache says it holds (a start from the cache lists over it either way).
// Without `lock` (the destructor, every other thread gone), all at once. False when stopping.
bool EtcdSync::write_cache(std::unique_lock<std::mutex>* lock, std::int64_t revision) {
    const std::string temporary = cache_path_ + ".new";
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    const auto quote = [](std::string& to, const std::string& s) { to += nlohmann::json(s).dump(); };  // escaped
    std::string& slice = cache_slice_;
    slice.clear();
    slice += "{\"prefix\":";
    quote(slice, layout_.root());
    slice += ",\"revision\":" + std::to_string(revision) + ",\"keys\":{";
    bool first = true;
    for (auto it = kvs_.begin(); it != kvs_.end();) {
        for (std::size_t i = 0; i < kCacheSlice && it != kvs_.end(); ++i, ++it) {
            if (!first) slice += ',';
            first = false;
            quote(slice, it->first);
            slice += ':';
            quote(slice, it->second);
        }
        if (lock == nullptr || it == kvs_.end()) continue;
        std::string last = std::prev(it)->first;
        lock->unlock();  // the watch and the applier go on meanwhile
        set_idle_priority(true);
        out.write(slice.data(), static_cast<std::streamsize>(slice.size()));
        set_idle_priority(false);
        slice.clear();
        lock->lock();
        if (stop_) {
            out.close();
            std::remove(temporary.c_str());
            return false;
        }
        it = kvs_.upper_bound(last);
    }
    slice += "}}";
    if (lock != nullptr) {
        lock->unlock();
        set_idle_priority(true);
    }
    out.write(slice.data(), static_cast<std::streamsize>(slice.size()));
    out.close();
    if (lock != nullptr) set_idle_priority(false);  // the destructor's thread keeps its own
    const bool written = static_cast<bool>(out);
    if (!written) spdlog::warn("etcd: cannot write the fabric cache {}", temporary);
    else if (std::rename(temporary.c_str(), cache_path_.c_str()) != 0)
        spdlog::warn("etcd: cannot rename {} to {}", temporary, cache_path_);
    if (lock != nullptr) lock->lock();
    return true;
}

// The cache writer: the keys as they are once changes have been quiet for kCacheQuiet, or
// kCacheMaxDelay after the first change not yet written while they keep coming.
void EtcdSync::cache_loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
        cache_wake_.wait(lock, [this] { return cache_dirty_ || stop_.load(); });
        if (stop_) return;  // the destructor writes what is left
        const auto first = std::chrono::steady_clock::now();
        for (;;) {
            const auto until = std::min(last_applied_ + kCacheQuiet, first + kCacheMaxDelay);
            if (stop_) return;
            if (std::chrono::steady_clock::now() >= until) break;
            cache_wake_.wait_until(lock, until);
        }
        cache_dirty_ = false;  // a change applied while it writes makes it write again
        if (!write_cache(&lock, status_.applied_revision)) {
            cache_dirty_ = true;  // stopped halfway: the destructor writes it whole
            return;
        }
    }
}

EtcdStatus EtcdSync::status() const {
    std::lock_guard lock(mutex_);
    return status_;
}

std::map<std::string, std::string> EtcdSync::keys() const {
    std::lock_guard lock(mutex_);
    return kvs_;
}

bool EtcdSync::pause(std::chrono::milliseconds d) {
    std::unique_lock lock(wake_mutex_);
    wake_.wait_for(lock, d, [this] { return stop_.load(); });
    return !stop_.load();
}

void EtcdSync::note_error(const std::string& what) {
    std::lock_guard lock(mutex_);
    status_.last_error = what;
}

void EtcdSync::request_apply() {
    std::lock_guard lock(mutex_);
    dirty_ = true;
    apply_wake_.notify_all();
}

// The applier: applies what changed whenever something did. Changes that arrive while an apply
// runs are applied together by the next one.
void EtcdSync::apply_loop() {
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            apply_wake_.wait(lock, [this] { return dirty_ || stop_.load(); });
            if (stop_) return;
            dirty_ = false;
        }
        apply_now();
    }
}

void EtcdSync::apply_now() {
    EtcdUpdate update;
    std::int64_t revision = 0;
    {
        std::lock_guard lock(mutex_);
        update.full = full_pending_;
        if (update.full) update.kvs = kvs_;
        else update.changes.swap(pending_);
        full_pending_ = false;
        pending_.clear();
        revision = status_.revision;
        if (!update.full && update.changes.empty()) {  // a watch response without events: nothing to apply
            status_.applied_revision = revision;
            return;
        }
    }
    EtcdApplied applied;
    try {
        applied = apply_(update);
    } catch (const std::exception& e) {
        spdlog::error("etcd: the fabric at revision {} was not applied: {}", status().revision, e.what());
        std::lock_guard lock(mutex_);
        ++status_.apply_failures;
        status_.last_error = e.what();
        return;
    }
    std::lock_guard lock(mutex_);
    ++(applied.incremental ? status_.applied_incremental : status_.applied_full);
    std::set<std::string> now;
    for (const auto& r : applied.rejected) {
        const std::string line = r.key + ": " + r.reason;
        if (logged_rejections_.count(line) == 0) spdlog::warn("etcd: key rejected, the rest of the fabric applies: {}", line);
        now.insert(line);
    }
    logged_rejections_ = std::move(now);
    status_.rejected = std::move(applied.rejected);
    status_.keys = kvs_.size();
    status_.applied_revision = revision;
    cache_dirty_ = true;
    last_applied_ = std::chrono::steady_clock::now();
    cache_wake_.notify_all();
}

void EtcdSync::list_and_apply(etcd::Client& client, std::int64_t& revision) {
    const auto start = std::chrono::steady_clock::now();
    etcd::RangeResult listed = client.range_prefix(layout_.root());
    const std::size_t keys = listed.kvs.size();
    spdlog::info("etcd: listed {} keys under {} at revision {} in {} ms", keys, layout_.root(), listed.revision,
                 std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count());
    {
        std::lock_guard lock(mutex_);
        kvs_.clear();
        for (auto& kv : listed.kvs) kvs_.emplace(std::move(kv.key), std::move(kv.value));
        full_pending_ = true;
        pending_.clear();
        ++status_.lists;
        status_.connected = true;
        status_.revision = listed.revision;
    }
    revision = listed.revision;
    request_apply();
}

void EtcdSync::watch_loop() {
    auto backoff = kFirstBackoff;
    while (!stop_) {
        try {
            etcd::Client client(config_);
            std::int64_t revision = 0;
            list_and_apply(client, revision);
            backoff = kFirstBackoff;
            for (;;) {  // watch; after a compaction, list again at once
                const etcd::WatchEnd end = client.watch_prefix(
                    layout_.root(), revision + 1,
                    [&](const etcd::WatchBatch& batch) {
                        if (watched_) watched_(batch);
                        {
                            std::lock_guard lock(mutex_);
                            for (const auto& e : batch.events) {
                                if (e.type == etcd::WatchEvent::Type::put) kvs_[e.kv.key] = e.kv.value;
                                else kvs_.erase(e.kv.key);
                                if (full_pending_) continue;  // the next apply takes every key anyway
                                if (e.type == etcd::WatchEvent::Type::put) pending_[e.kv.key] = e.kv.value;
                                else pending_[e.kv.key] = std::nullopt;
                            }
                            ++status_.watch_batches;
                            status_.events += batch.events.size();
                            status_.revision = batch.revision;
                        }
                        revision = batch.revision;
                    },
                    stop_,
                    [&] { request_apply(); });
                if (end.why == etcd::WatchEnd::Why::stopped) return;
                if (end.why == etcd::WatchEnd::Why::compacted) {
                    spdlog::warn("etcd: revision {} was compacted (oldest now {}): listing again", revision + 1,
                                 end.compact_revision);
                    {
                        std::lock_guard lock(mutex_);
                        ++status_.compactions;
                    }
                    list_and_apply(client, revision);
                    continue;
                }
                throw etcd::EtcdError(end.error);
            }
        } catch (const std::exception& e) {
            {
                std::lock_guard lock(mutex_);
                ++status_.disconnects;
                status_.connected = false;
                status_.last_error = e.what();
            }
            spdlog::warn("etcd: {}; forwarding goes on with fabric revision {}; retrying in {} ms", e.what(), status().revision,
                         backoff.count());
            if (!pause(backoff)) return;
            backoff = next_backoff(backoff);
        }
    }
}

void EtcdSync::lease_loop() {
    auto backoff = kFirstBackoff;
    const std::string key = layout_.node_key(node_name_);
    std::int64_t lease = 0;
    std::unique_ptr<etcd::Client> client;
    while (!stop_) {
        try {
            if (!client) client = std::make_unique<etcd::Client>(config_);
            lease = client->grant_lease(lease_ttl_);
            client->put(key, self_value_, lease);
            {
                std::lock_guard lock(mutex_);
                status_.lease_alive = true;
                status_.lease = lease;
            }
            spdlog::info("etcd: this node's entry {} is under lease {:x} ({} s)", key, lease, lease_ttl_);
            backoff = kFirstBackoff;
            const auto period = std::chrono::milliseconds(lease_ttl_ * 1000 / 3);
            while (pause(period)) {
                if (client->keep_alive(lease) == 0) {
                    spdlog::warn("etcd: lease {:x} had expired; publishing this node again", lease);
                    lease = 0;
                    break;
                }
                std::lock_guard lock(mutex_);
                ++status_.lease_renewals;
            }
        } catch (const std::exception& e) {
            {
                std::lock_guard lock(mutex_);
                status_.lease_alive = false;
                status_.last_error = e.what();
            }
            if (!pause(backoff)) break;
            backoff = next_backoff(backoff);
        }
    }
    // Stopping: this node's entry goes now rather than when its lease runs out.
    if (client && lease != 0) {
        try {
            client->revoke_lease(lease);
        } catch (const std::exception& e) {
            spdlog::warn("etcd: revoking lease {:x}: {} (the entry expires in {} s)", lease, e.what(), lease_ttl_);
        }
    }
}

}  // namespace andromeda::daemon
