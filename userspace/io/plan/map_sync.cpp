#include "io/plan/map_sync.hpp"

#include <set>

#include "io/plan/io_error.hpp"

namespace andromeda::io {

namespace {

std::span<const std::byte> as_bytes(const std::string& s) noexcept {
    return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

}  // namespace

MapWriteCounts SyncCounts::total() const noexcept {
    MapWriteCounts sum;
    for (const auto& m : maps) sum += m;
    return sum;
}

SyncCounts& SyncCounts::operator+=(const SyncCounts& o) noexcept {
    for (std::size_t i = 0; i < maps.size(); ++i) maps[i] += o.maps[i];
    return *this;
}

std::string SyncCounts::summary() const {
    std::string out;
    for (const MapId id : kAllMaps) {
        const auto& m = (*this)[id];
        if (m.writes() + m.unchanged == 0) continue;
        if (!out.empty()) out += ", ";
        out += std::string(pin_name(id)) + " +" + std::to_string(m.upserts) + " -" + std::to_string(m.erases) + " (=" +
               std::to_string(m.unchanged) + " unchanged)";
    }
    return out.empty() ? "no map changes" : out;
}

std::string RollbackResult::describe() const {
    const std::size_t written = undone + failed;
    const auto entries = [](std::size_t n) { return std::to_string(n) + (n == 1 ? " map entry" : " map entries"); };
    if (written == 0) return "nothing had been written yet";
    if (complete()) return "put back the " + entries(written) + " already written";
    return "put back " + std::to_string(undone) + " of the " + entries(written) + " already written; " +
           std::to_string(failed) + " could not be (" + first_failure +
           "): the maps hold part of the refused change until a reload succeeds";
}

MapSyncError::MapSyncError(const std::string& cause, int error_number, RollbackResult rollback)
    : std::runtime_error(cause + "; " + rollback.describe()),
      error_number_(error_number),
      rollback_(std::move(rollback)) {}

// The journal entry goes in first: a write it could not record would be one rollback misses.
void FabricMapSync::upsert(MapId map, const std::string& key, const std::string& value, SyncCounts& counts) {
    MapShadow& shadow = shadows_[static_cast<std::size_t>(map)];
    if (shadow.holds(key, value)) {
        ++counts[map].unchanged;
        return;
    }
    const auto held = shadow.entries().find(key);
    journal_.push_back({map, key, held == shadow.entries().end() ? std::nullopt : std::optional(held->second)});
    try {
        writer_.upsert(map, as_bytes(key), as_bytes(value));
    } catch (...) {
        journal_.pop_back();  // a refused write changed nothing
        throw;
    }
    shadow.set(key, value);
    ++counts[map].upserts;
}

void FabricMapSync::erase(MapId map, const std::string& key, SyncCounts& counts) {
    MapShadow& shadow = shadows_[static_cast<std::size_t>(map)];
    const auto held = shadow.entries().find(key);
    if (held == shadow.entries().end()) {
        ++counts[map].unchanged;
        return;
    }
    journal_.push_back({map, key, held->second});
    try {
        writer_.erase(map, as_bytes(key));
    } catch (...) {
        journal_.pop_back();
        throw;
    }
    shadow.erase(key);
    ++counts[map].erases;
}

RollbackResult FabricMapSync::undo_to(std::size_t mark) {
    RollbackResult result;
    for (; journal_.size() > mark; journal_.pop_back()) {
        const Undo& undo = journal_.back();
        MapShadow& shadow = shadows_[static_cast<std::size_t>(undo.map)];
        try {
            if (undo.previous) {
                writer_.upsert(undo.map, as_bytes(undo.key), as_bytes(*undo.previous));
                shadow.set(undo.key, *undo.previous);
                ++totals_[undo.map].upserts;
            } else {
                writer_.erase(undo.map, as_bytes(undo.key));
                shadow.erase(undo.key);
                ++totals_[undo.map].erases;
            }
            ++result.undone;
        } catch (const std::exception& e) {
            // The shadow keeps what the map holds: the write, not undone.
            if (result.failed++ == 0) result.first_failure = e.what();
        }
    }
    if (!result.complete()) diverged_ = true;
    return result;
}

template <class Write>
SyncCounts FabricMapSync::all_or_nothing(Write&& write) {
    const std::size_t mark = journal_.size();
    SyncCounts counts;
    try {
        write(counts);
    } catch (const IoError& e) {
        totals_ += counts;
        throw MapSyncError(e.what(), e.error_number(), undo_to(mark));
    } catch (...) {
        totals_ += counts;
        (void)undo_to(mark);
        throw;
    }
    if (!in_transaction_) journal_.clear();
    totals_ += counts;
    return counts;
}

void FabricMapSync::begin() {
    journal_.clear();
    in_transaction_ = true;
}

void FabricMapSync::commit() {
    journal_.clear();
    in_transaction_ = false;
}

RollbackResult FabricMapSync::rollback() {
    RollbackResult result = undo_to(0);
    in_transaction_ = false;
    return result;
}

template <class K, class V>
void FabricMapSync::apply_table(MapId map, const TableChanges<K, V>& changes, SyncCounts& counts) {
    // A key erased and upserted in one plan (an address passed from one node to another) is
    // one overwrite, not a delete and an insert, and never absent in between.
    std::set<std::string> upserted;
    for (const auto& [key, value] : changes.upserts) upserted.insert(detail::bytes_of(key));
    for (const K& key : changes.erases)
        if (upserted.count(detail::bytes_of(key)) == 0) erase(map, detail::bytes_of(key), counts);
    for (const auto& [key, value] : changes.upserts) upsert(map, detail::bytes_of(key), detail::bytes_of(value), counts);
}

template <class K, class V>
void FabricMapSync::reconcile_table(MapId map, const TableChanges<K, V>& full, SyncCounts& counts) {
    std::set<std::string> wanted;
    for (const auto& [key, value] : full.upserts) wanted.insert(detail::bytes_of(key));
    std::vector<std::string> stale;
    for (const auto& [key, value] : shadows_[static_cast<std::size_t>(map)].entries())
        if (wanted.count(key) == 0) stale.push_back(key);
    for (const auto& key : stale) erase(map, key, counts);
    for (const auto& [key, value] : full.upserts) upsert(map, detail::bytes_of(key), detail::bytes_of(value), counts);
}

SyncCounts FabricMapSync::apply(const FabricMapPlan& plan) {
    return all_or_nothing([&](SyncCounts& counts) {
        apply_table(MapId::peers, plan.peers, counts);
        apply_table(MapId::vnis, plan.vnis, counts);
        apply_table(MapId::nat_addrs, plan.nat_addrs, counts);
        apply_table(MapId::vpc_cidrs, plan.vpc_cidrs, counts);
        apply_table(MapId::fabric, plan.fabric, counts);
        apply_table(MapId::fabric6, plan.fabric6, counts);
    });
}

SyncCounts FabricMapSync::reconcile(const FabricMapPlan& full) {
    SyncCounts counts = all_or_nothing([&](SyncCounts& c) {
        reconcile_table(MapId::peers, full.peers, c);
        reconcile_table(MapId::vnis, full.vnis, c);
        reconcile_table(MapId::nat_addrs, full.nat_addrs, c);
        reconcile_table(MapId::vpc_cidrs, full.vpc_cidrs, c);
        reconcile_table(MapId::fabric, full.fabric, c);
        reconcile_table(MapId::fabric6, full.fabric6, c);
    });
    diverged_ = false;  // the maps hold exactly `full` now
    return counts;
}

std::size_t FabricMapSync::adopt(MapId map) {
    MapShadow& shadow = shadows_[static_cast<std::size_t>(map)];
    std::size_t n = 0;
    for (auto& [key, value] : writer_.entries(map)) {
        shadow.set(std::move(key), std::move(value));
        ++n;
    }
    return n;
}

SyncCounts FabricMapSync::sync_ports(const PortTable& desired) {
    TableChanges<std::uint32_t, andromeda_port> full;
    for (const auto& [ifindex, port] : desired) full.upserts.emplace_back(ifindex, port);
    return all_or_nothing([&](SyncCounts& counts) { reconcile_table(MapId::ports, full, counts); });
}

}  // namespace andromeda::io
