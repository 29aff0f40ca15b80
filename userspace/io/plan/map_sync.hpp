// Keeps the BPF maps equal to the fabric while writing only what changed. A shadow of each
// map remembers what was last written; an upsert whose value is already there and an erase of
// an absent key are skipped and counted as such, so a test (or `andromedactl stats`) can prove
// that a reload adding one endpoint wrote one entry. A write the kernel refuses fails the call
// that made it with the maps as they were before that call (its earlier writes undone), so a
// failed reload never leaves half of itself behind.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "io/plan/map_ids.hpp"
#include "io/plan/map_plan.hpp"
#include "io/plan/port_table.hpp"

namespace andromeda::io {

// A map key or value struct as MapWriter takes it, and one back from what lookup() or entries()
// returned (zero-filled where the bytes fall short).
[[nodiscard]] inline std::span<const std::byte> map_bytes(const auto& v) noexcept { return std::as_bytes(std::span(&v, 1)); }
template <class T>
[[nodiscard]] T map_struct(const std::string& bytes) noexcept {
    T v{};
    std::memcpy(&v, bytes.data(), std::min(bytes.size(), sizeof v));
    return v;
}

// Where writes go: the BPF maps (BpfInstance::map_writer()) or, in unit tests, a fake.
class MapWriter {
public:
    virtual ~MapWriter() = default;
    // Both throw IoError when the kernel refuses.
    virtual void upsert(MapId map, std::span<const std::byte> key, std::span<const std::byte> value) = 0;
    virtual void erase(MapId map, std::span<const std::byte> key) = 0;
    // Writes an entry only where the key has none (BPF_NOEXIST): for entries whose owner must
    // never overwrite another's (the NAT's flows). Throws IoError for anything but these two.
    enum class InsertResult : std::uint8_t { inserted, exists, full };
    virtual InsertResult insert(MapId map, std::span<const std::byte> key, std::span<const std::byte> value) = 0;
    // The value `key` has now, or nullopt. Throws IoError.
    [[nodiscard]] virtual std::optional<std::string> lookup(MapId map, std::span<const std::byte> key) const = 0;
    // Every (key, value) the map holds now, as bytes: what a previous instance left in a map
    // this one adopted. Throws IoError.
    [[nodiscard]] virtual std::vector<std::pair<std::string, std::string>> entries(MapId map) const = 0;
};

struct MapWriteCounts {
    std::uint64_t upserts = 0;
    std::uint64_t erases = 0;
    std::uint64_t unchanged = 0;  // planned, but the map already held exactly that

    [[nodiscard]] std::uint64_t writes() const noexcept { return upserts + erases; }
    MapWriteCounts& operator+=(const MapWriteCounts& o) noexcept {
        upserts += o.upserts;
        erases += o.erases;
        unchanged += o.unchanged;
        return *this;
    }
};

// Counts per map, indexed by MapId.
struct SyncCounts {
    std::array<MapWriteCounts, kMapCount> maps{};

    [[nodiscard]] const MapWriteCounts& operator[](MapId id) const noexcept {
        return maps[static_cast<std::size_t>(id)];
    }
    MapWriteCounts& operator[](MapId id) noexcept { return maps[static_cast<std::size_t>(id)]; }
    [[nodiscard]] MapWriteCounts total() const noexcept;
    SyncCounts& operator+=(const SyncCounts& o) noexcept;
    // "fabric +1 -0 (=3 unchanged), peers ..." for the maps that saw any planned change.
    [[nodiscard]] std::string summary() const;
};

namespace detail {
// Keys and values are plain structs without implicit padding (shared/ guarantees it), so
// their bytes are their identity.
struct BytesHash {
    std::size_t operator()(const std::string& bytes) const noexcept { return std::hash<std::string>{}(bytes); }
};
template <class T>
std::string bytes_of(const T& v) {
    return std::string(reinterpret_cast<const char*>(&v), sizeof v);
}
}  // namespace detail

// What one map holds, as far as this process wrote it.
class MapShadow {
public:
    [[nodiscard]] bool holds(const std::string& key, const std::string& value) const {
        const auto it = entries_.find(key);
        return it != entries_.end() && it->second == value;
    }
    [[nodiscard]] bool contains(const std::string& key) const { return entries_.count(key) != 0; }
    void set(std::string key, std::string value) { entries_[std::move(key)] = std::move(value); }
    void erase(const std::string& key) { entries_.erase(key); }
    [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
    [[nodiscard]] const std::unordered_map<std::string, std::string, detail::BytesHash>& entries() const noexcept {
        return entries_;
    }

private:
    std::unordered_map<std::string, std::string, detail::BytesHash> entries_;
};

// What undoing writes achieved: how many were put back, how many could not be (the kernel
// refused the undo too), and the first of those refusals.
struct RollbackResult {
    std::size_t undone = 0;
    std::size_t failed = 0;
    std::string first_failure;

    [[nodiscard]] bool complete() const noexcept { return failed == 0; }
    // "put back the 3 map entries already written", or what could not be.
    [[nodiscard]] std::string describe() const;
};

// A write the kernel refused (a full map, no memory, a map changed behind the daemon's back)
// in the middle of one of FabricMapSync's calls, thrown after the writes that call had made
// were undone: rollback() says whether all of them were.
class MapSyncError : public std::runtime_error {
public:
    MapSyncError(const std::string& cause, int error_number, RollbackResult rollback);
    [[nodiscard]] int error_number() const noexcept { return error_number_; }
    [[nodiscard]] const RollbackResult& rollback() const noexcept { return rollback_; }

private:
    int error_number_;
    RollbackResult rollback_;
};

class FabricMapSync {
public:
    explicit FabricMapSync(MapWriter& writer) : writer_(writer) {}

    // Each of these is all or nothing: when the kernel refuses a write, the writes the call made
    // before it are undone and MapSyncError is thrown, so the maps hold what they held before.
    //
    // Applies a plan: its erases, then its upserts, each only when it changes the map.
    SyncCounts apply(const FabricMapPlan& plan);
    // Makes the maps hold exactly `full` (plan_full's result): upserts what differs and erases
    // every entry `full` does not name. The start, and a repair after doubt.
    SyncCounts reconcile(const FabricMapPlan& full);
    // Makes the port map hold exactly `desired`.
    SyncCounts sync_ports(const PortTable& desired);

    // Several calls as one: every write from begin() on is remembered, so that rollback() can
    // undo them all (etcd's change, written ahead of its snapshot, then the snapshot's entries).
    // commit() forgets them. Transactions do not nest.
    void begin();
    void commit();
    // Undoes every write since begin(), newest first, trying each even when one is refused.
    RollbackResult rollback();
    [[nodiscard]] bool in_transaction() const noexcept { return in_transaction_; }
    // Whether some undo was refused since the last reconcile() that succeeded: then the maps
    // hold part of a change that was given up, and only a reconcile() puts them right.
    [[nodiscard]] bool diverged() const noexcept { return diverged_; }
    // Takes what `map` holds now as what was last written (a map adopted from a previous
    // instance), so the next reconcile or sync_ports erases what the fabric no longer has,
    // rewrites what differs and leaves the rest: no flush. Returns the number of entries.
    std::size_t adopt(MapId map);

    [[nodiscard]] std::size_t size(MapId map) const noexcept { return shadows_[static_cast<std::size_t>(map)].size(); }
    [[nodiscard]] const MapShadow& shadow(MapId map) const noexcept { return shadows_[static_cast<std::size_t>(map)]; }
    // Every write since construction.
    [[nodiscard]] const SyncCounts& totals() const noexcept { return totals_; }

private:
    // A write made, and what its key held before it (nullopt: nothing).
    struct Undo {
        MapId map;
        std::string key;
        std::optional<std::string> previous;
    };

    template <class K, class V>
    void apply_table(MapId map, const TableChanges<K, V>& changes, SyncCounts& counts);
    template <class K, class V>
    void reconcile_table(MapId map, const TableChanges<K, V>& full, SyncCounts& counts);
    void upsert(MapId map, const std::string& key, const std::string& value, SyncCounts& counts);
    void erase(MapId map, const std::string& key, SyncCounts& counts);
    // Runs `write` (which writes through upsert() and erase()) as one call: all or nothing.
    template <class Write>
    SyncCounts all_or_nothing(Write&& write);
    // Undoes the journal's writes from `mark` on, newest first.
    RollbackResult undo_to(std::size_t mark);

    MapWriter& writer_;
    std::array<MapShadow, kMapCount> shadows_;
    SyncCounts totals_;
    std::vector<Undo> journal_;  // the writes of the call or transaction in progress
    bool in_transaction_ = false;
    bool diverged_ = false;
};

}  // namespace andromeda::io
