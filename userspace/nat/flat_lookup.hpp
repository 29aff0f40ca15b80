// A build-once, read-many open-addressing table from a small key to a uint32 index, for the
// rules lookups on the per-packet path (std::unordered_map chases a pointer per lookup).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace andromeda::nat {

// Key: equality-comparable; Hash: std::uint64_t(const Key&). Capacity is fixed at construction;
// insert() past it is a precondition violation (the builder sizes it from the item count).
template <class Key, class Hash>
class FlatLookup {
public:
    static constexpr std::uint32_t kMissing = 0xFFFFFFFF;

    explicit FlatLookup(std::size_t expected_items = 0)
        : slots_(std::bit_ceil(expected_items * 2 + 2)), mask_(slots_.size() - 1) {}

    // Returns false (and changes nothing) when the key is already present.
    bool insert(const Key& key, std::uint32_t value) {
        for (std::size_t i = Hash{}(key) & mask_;; i = (i + 1) & mask_) {
            Slot& s = slots_[i];
            if (s.value == kMissing) {
                s.key = key;
                s.value = value;
                return true;
            }
            if (s.key == key) return false;
        }
    }

    [[nodiscard]] std::uint32_t find(const Key& key) const noexcept {
        for (std::size_t i = Hash{}(key) & mask_;; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (s.value == kMissing) return kMissing;
            if (s.key == key) return s.value;
        }
    }

private:
    struct Slot {
        Key key{};
        std::uint32_t value = kMissing;
    };
    std::vector<Slot> slots_;  // at most half full, so probes stay short and always end
    std::size_t mask_;
};

// A 64-bit mix (the murmur3 finaliser): enough for keys built from config, which no remote
// host chooses.
[[nodiscard]] constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

}  // namespace andromeda::nat
