// The one build-once, read-many hash table: filled while a snapshot, a rule set or a worker's
// socket list is built, then only read, on the per-packet path among others. (A snapshot derived
// from another patches its own copy of the other's tables, with erase() and replace(), before it
// is published; nothing changes a table that readers see.) Open addressing with
// linear probing in one contiguous array, at most half full, so every probe ends at an empty slot
// within a few steps and a lookup never allocates or chases a pointer (std::unordered_map does).
//
// Values are 32-bit indexes (kMissing = all ones) or pointers (kMissing = nullptr). The slot is
// taken from the top bits of Hash(key): Fibonacci32 (one multiply) suits the few 32-bit keys of
// the per-packet lookups, Mix64 (the MurmurHash3 finaliser) wider keys whose low bits differ.
// Keys come from configuration, never from a remote host, so no seeded hash is needed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace andromeda::util {

struct Fibonacci32 {
    [[nodiscard]] constexpr std::uint64_t operator()(std::uint32_t key) const noexcept {
        return std::uint64_t{key} * 0x9E3779B97F4A7C15ULL;
    }
};

struct Mix64 {
    [[nodiscard]] constexpr std::uint64_t operator()(std::uint64_t k) const noexcept {
        k ^= k >> 33;
        k *= 0xff51afd7ed558ccdULL;
        k ^= k >> 33;
        k *= 0xc4ceb9fe1a85ec53ULL;
        k ^= k >> 33;
        return k;
    }
};

template <class Key, class Value, class Hash>
class FlatTable {
    static_assert(std::is_same_v<Value, std::uint32_t> || std::is_pointer_v<Value>);

public:
    static constexpr Value kMissing = [] {
        if constexpr (std::is_pointer_v<Value>)
            return Value{nullptr};
        else
            return Value{0xFFFFFFFF};
    }();

    FlatTable() { reset(0); }
    explicit FlatTable(std::size_t count) { reset(count); }

    // Empties the table and sizes it for `count` entries at a load factor of at most 1/2. Never
    // empty (at least 4 slots), so a lookup needs no emptiness check. Inserting more than `count`
    // entries is a precondition violation.
    void reset(std::size_t count) {
        std::size_t capacity = 4;
        shift_ = 62;
        while (capacity < count * 2) {
            capacity *= 2;
            --shift_;
        }
        slots_.assign(capacity, Slot{});
        mask_ = capacity - 1;
        size_ = 0;
    }

    // The first value inserted under a key stays: returns false, changing nothing, for a key
    // that is already there.
    bool insert(const Key& key, Value value) {
        for (std::size_t i = slot_of(key);; i = (i + 1) & mask_) {
            Slot& slot = slots_[i];
            if (slot.value == kMissing) {
                slot = {key, value};
                ++size_;
                return true;
            }
            if (slot.key == key) return false;
        }
    }
    // Another value under a key that may be there already: for keys that are hashes of longer
    // ones (names), which find(key, matches) then tells apart.
    void insert_another(const Key& key, Value value) {
        for (std::size_t i = slot_of(key);; i = (i + 1) & mask_) {
            if (slots_[i].value == kMissing) {
                slots_[i] = {key, value};
                ++size_;
                return;
            }
        }
    }

    // Changes the value of the entry (`key`, `from`) to `to`; false when there is no such entry.
    bool replace(const Key& key, Value from, Value to) noexcept {
        for (std::size_t i = slot_of(key);; i = (i + 1) & mask_) {
            Slot& slot = slots_[i];
            if (slot.value == kMissing) return false;
            if (slot.key == key && slot.value == from) {
                slot.value = to;
                return true;
            }
        }
    }
    // Removes the entry (`key`, `value`); false when there is no such entry. The entries after it
    // in its run move back into the gap (backward-shift deletion), so probes stay as short as if
    // it had never been inserted and no tombstones build up.
    bool erase(const Key& key, Value value) noexcept {
        std::size_t hole = slot_of(key);
        for (;; hole = (hole + 1) & mask_) {
            if (slots_[hole].value == kMissing) return false;
            if (slots_[hole].key == key && slots_[hole].value == value) break;
        }
        for (std::size_t next = (hole + 1) & mask_; slots_[next].value != kMissing; next = (next + 1) & mask_) {
            // An entry may fill the hole unless its home slot lies cyclically in (hole, next].
            const std::size_t home = slot_of(slots_[next].key);
            const bool stays = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next);
            if (stays) continue;
            slots_[hole] = slots_[next];
            hole = next;
        }
        slots_[hole] = Slot{};
        --size_;
        return true;
    }

    // How many entries there are, and how many the table takes (reset()'s count, rounded up).
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] std::size_t capacity() const noexcept { return (mask_ + 1) / 2; }

    // The value under `key` (the first inserted), or kMissing.
    [[gnu::always_inline]] [[nodiscard]] Value find(const Key& key) const noexcept {
        const Slot* slots = slots_.data();
        for (std::size_t i = slot_of(key);; i = (i + 1) & mask_) {
            const Slot& slot = slots[i];
            if (slot.value == kMissing || slot.key == key) return slot.value;
        }
    }
    // The first value under `key` that `matches` accepts, or kMissing.
    template <class Match>
    [[nodiscard]] Value find(const Key& key, Match&& matches) const noexcept {
        for (std::size_t i = slot_of(key);; i = (i + 1) & mask_) {
            const Slot& slot = slots_[i];
            if (slot.value == kMissing) return kMissing;
            if (slot.key == key && matches(slot.value)) return slot.value;
        }
    }

    [[nodiscard]] std::size_t memory_bytes() const noexcept { return slots_.capacity() * sizeof(Slot); }

private:
    struct Slot {
        Key key{};
        Value value = kMissing;
    };
    [[nodiscard]] std::size_t slot_of(const Key& key) const noexcept {
        return static_cast<std::size_t>(Hash{}(key) >> shift_);
    }

    std::vector<Slot> slots_;
    std::size_t mask_ = 0;  // slots_.size() - 1
    std::size_t size_ = 0;
    unsigned shift_ = 62;   // 64 - log2(slots_.size())
};

}  // namespace andromeda::util
