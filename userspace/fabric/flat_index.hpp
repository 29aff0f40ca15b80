// An open-addressing hash index from 64-bit keys to 32-bit values: filled once while a snapshot
// is built, then only read. Lookups touch one contiguous array and never allocate.
#pragma once

#include <cstdint>
#include <vector>

namespace andromeda::fabric {

class FlatIndex {
public:
    static constexpr std::uint32_t kEmpty = 0xFFFFFFFF;

    // Sizes the table for `count` entries at a load factor of at most 1/2.
    void reserve(std::size_t count);
    // For string keys `key` is a hash and several values may share it; find() then asks.
    void insert(std::uint64_t key, std::uint32_t value);

    [[nodiscard]] std::uint32_t find(std::uint64_t key) const noexcept {
        return find(key, [](std::uint32_t) { return true; });
    }
    // The first value stored under `key` that `matches` accepts, or kEmpty.
    template <class Match>
    [[nodiscard]] std::uint32_t find(std::uint64_t key, Match&& matches) const noexcept {
        if (slots_.empty()) return kEmpty;
        for (std::uint64_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
            const Slot& slot = slots_[i];
            if (slot.value == kEmpty) return kEmpty;
            if (slot.key == key && matches(slot.value)) return slot.value;
        }
    }
    [[nodiscard]] std::size_t memory_bytes() const noexcept { return slots_.capacity() * sizeof(Slot); }

    // A 64-bit finalizer (from MurmurHash3): keys like (vni << 32 | ip) differ only in low bits.
    static constexpr std::uint64_t mix(std::uint64_t k) noexcept {
        k ^= k >> 33;
        k *= 0xff51afd7ed558ccdull;
        k ^= k >> 33;
        k *= 0xc4ceb9fe1a85ec53ull;
        k ^= k >> 33;
        return k;
    }

private:
    struct Slot {
        std::uint64_t key = 0;
        std::uint32_t value = kEmpty;
    };
    std::vector<Slot> slots_;
    std::uint64_t mask_ = 0;
};

}  // namespace andromeda::fabric
