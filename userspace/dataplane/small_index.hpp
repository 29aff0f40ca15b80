// A small open-addressing map from 32-bit keys (VNIs, IPv4 addresses) to 32-bit indexes or to
// pointers (null: missing), filled when a snapshot generation is prepared and then only read.
// Fibonacci hashing (one multiply) instead of the snapshot's 64-bit finalizer: these keys are few
// and the per-packet path looks two of them up per overlay packet.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

namespace andromeda::dataplane::detail {

template <class Value>
class SmallIndex {
    static_assert(std::is_same_v<Value, std::uint32_t> || std::is_pointer_v<Value>);

public:
    static constexpr Value kMissing = [] {
        if constexpr (std::is_pointer_v<Value>)
            return Value{nullptr};
        else
            return Value{0xffffffff};
    }();

    SmallIndex() { reset(0); }

    // Empties the map and sizes it for `count` keys at a load factor of at most 1/2. Never
    // empty, so find() needs no emptiness check.
    void reset(std::size_t count) {
        std::size_t capacity = 4;
        shift_ = 62;
        while (capacity < count * 2) {
            capacity *= 2;
            --shift_;
        }
        slots_.assign(capacity, Slot{});
        mask_ = capacity - 1;
    }
    // The first insertion of a key wins.
    void insert(std::uint32_t key, Value value) {
        for (std::size_t i = slot_of(key);; i = (i + 1) & mask_) {
            if (slots_[i].value == kMissing) {
                slots_[i] = {key, value};
                return;
            }
            if (slots_[i].key == key) return;
        }
    }
    [[gnu::always_inline]] [[nodiscard]] Value find(std::uint32_t key) const noexcept {
        const Slot* slots = slots_.data();
        for (std::size_t i = slot_of(key);; i = (i + 1) & mask_) {
            const Slot& slot = slots[i];
            if (slot.key == key || slot.value == kMissing) return slot.value;
        }
    }

private:
    struct Slot {
        std::uint32_t key = 0;
        Value value = kMissing;
    };
    [[nodiscard]] std::size_t slot_of(std::uint32_t key) const noexcept {
        return static_cast<std::size_t>((std::uint64_t{key} * 0x9E3779B97F4A7C15ull) >> shift_);
    }

    std::vector<Slot> slots_;
    std::size_t mask_ = 0;  // slots_.size() - 1
    unsigned shift_ = 62;
};

}  // namespace andromeda::dataplane::detail
