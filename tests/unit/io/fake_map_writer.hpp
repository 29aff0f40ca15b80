// A MapWriter that keeps the maps in memory, counts the calls it gets and, when armed, refuses
// writes as the kernel does.
#pragma once

#include <array>
#include <cerrno>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "io/plan/io_error.hpp"
#include "io/plan/map_sync.hpp"

namespace andromeda::io::testing {

class FakeMapWriter final : public MapWriter {
public:
    using Table = std::map<std::string, std::string>;

    void upsert(MapId map, std::span<const std::byte> key, std::span<const std::byte> value) override {
        refuse_if_armed(map, "writing");
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
        refuse_if_armed(map, "deleting");
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

    // The kernel refusing writes, as a full map (E2BIG) does: upserts and erases from the
    // `writes`-th from now on (0: the next one) throw IoError, `refusals` of them (then the
    // writer works again). refused() counts them.
    void refuse_after(std::size_t writes, std::size_t refusals = 1) {
        until_refusal_ = writes;
        refusals_left_ = refusals;
    }
    [[nodiscard]] std::size_t refused() const { return refused_; }

    std::array<Table, kMapCount> tables;
    std::array<std::size_t, kMapCount> upserts{}, erases{};
    std::array<std::size_t, kMapCount> capacity{};  // 0: unbounded; else insert() answers full beyond it

private:
    void refuse_if_armed(MapId map, const char* what) {
        if (refusals_left_ == 0) return;
        if (until_refusal_ > 0) {
            --until_refusal_;
            return;
        }
        --refusals_left_;
        ++refused_;
        throw IoError(std::string(what) + " an entry of " + bpf_name(map), E2BIG, "the map is full");
    }

    std::size_t until_refusal_ = 0;
    std::size_t refusals_left_ = 0;
    std::size_t refused_ = 0;

    static std::size_t index(MapId map) { return static_cast<std::size_t>(map); }
    static std::string str(std::span<const std::byte> b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }
};

}  // namespace andromeda::io::testing
