#include "io/plan/map_sync.hpp"

#include <set>

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

void FabricMapSync::upsert(MapId map, const std::string& key, const std::string& value, SyncCounts& counts) {
    MapShadow& shadow = shadows_[static_cast<std::size_t>(map)];
    if (shadow.holds(key, value)) {
        ++counts[map].unchanged;
        return;
    }
    writer_.upsert(map, as_bytes(key), as_bytes(value));
    shadow.set(key, value);
    ++counts[map].upserts;
}

void FabricMapSync::erase(MapId map, const std::string& key, SyncCounts& counts) {
    MapShadow& shadow = shadows_[static_cast<std::size_t>(map)];
    if (!shadow.contains(key)) {
        ++counts[map].unchanged;
        return;
    }
    writer_.erase(map, as_bytes(key));
    shadow.erase(key);
    ++counts[map].erases;
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
    SyncCounts counts;
    apply_table(MapId::peers, plan.peers, counts);
    apply_table(MapId::vnis, plan.vnis, counts);
    apply_table(MapId::nat_addrs, plan.nat_addrs, counts);
    apply_table(MapId::vpc_cidrs, plan.vpc_cidrs, counts);
    apply_table(MapId::fabric, plan.fabric, counts);
    totals_ += counts;
    return counts;
}

SyncCounts FabricMapSync::reconcile(const FabricMapPlan& full) {
    SyncCounts counts;
    reconcile_table(MapId::peers, full.peers, counts);
    reconcile_table(MapId::vnis, full.vnis, counts);
    reconcile_table(MapId::nat_addrs, full.nat_addrs, counts);
    reconcile_table(MapId::vpc_cidrs, full.vpc_cidrs, counts);
    reconcile_table(MapId::fabric, full.fabric, counts);
    totals_ += counts;
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
    SyncCounts counts;
    reconcile_table(MapId::ports, full, counts);
    totals_ += counts;
    return counts;
}

}  // namespace andromeda::io
