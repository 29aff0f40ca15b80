// A MapWriter that keeps the maps in memory and counts the calls it gets.
#pragma once

#include <array>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "io/plan/map_sync.hpp"

namespace andromeda::io::testing {

class FakeMapWriter final : public MapWriter {
public:
    using Table = std::map<std::string, std::string>;

    void upsert(MapId map, std::span<const std::byte> key, std::span<const std::byte> value) override {
        tables[index(map)][str(key)] = str(value);
        ++upserts[index(map)];
    }
    InsertResult insert(MapId map, std::span<const std::byte> key, std::span<const std::byte> value) override {
        auto& t = tables[index(map)];
        if (t.count(str(key)) != 0) return InsertResult::exists;
        if (capacity[index(map)] != 0 && t.size() >= capacity[index(map)]) return InsertResult::full;
        t[str(key)] = str(value);
        ++upserts[index(map)];
        return InsertResult::inserted;
    }
    [[nodiscard]] std::optional<std::string> lookup(MapId map, std::span<const std::byte> key) const override {
        const auto& t = tables[index(map)];
        const auto it = t.find(str(key));
        if (it == t.end()) return std::nullopt;
        return it->second;
    }
    void erase(MapId map, std::span<const std::byte> key) override {
        tables[index(map)].erase(str(key));
        ++erases[index(map)];
    }
    [[nodiscard]] std::vector<std::pair<std::string, std::string>> entries(MapId map) const override {
        const auto& t = tables[index(map)];
        return {t.begin(), t.end()};
    }
    [[nodiscard]] std::size_t calls() const {
        std::size_t n = 0;
        for (std::size_t i = 0; i < kMapCount; ++i) n += upserts[i] + erases[i];
        return n;
    }
    [[nodiscard]] const Table& table(MapId map) const { return tables[index(map)]; }
    template <class K, class V>
    [[nodiscard]] const V* find(MapId map, const K& key) const {
        const auto& t = tables[index(map)];
        const auto it = t.find(std::string(reinterpret_cast<const char*>(&key), sizeof key));
        return it == t.end() ? nullptr : reinterpret_cast<const V*>(it->second.data());
    }

    std::array<Table, kMapCount> tables;
    std::array<std::size_t, kMapCount> upserts{}, erases{};
    std::array<std::size_t, kMapCount> capacity{};  // 0: unbounded; else insert() answers full beyond it

private:
    static std::size_t index(MapId map) { return static_cast<std::size_t>(map); }
    static std::string str(std::span<const std::byte> b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }
};

}  // namespace andromeda::io::testing
