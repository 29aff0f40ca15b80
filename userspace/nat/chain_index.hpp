// Preallocated chained hash indexes over entries named by a dense uint32 id (the flow and
// mapping arenas). The index stores only links; the caller keeps the keys in its entries and
// supplies each entry's hash and an equality test, so one arena can carry several indexes
// without copying keys.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace andromeda::nat {

inline constexpr std::uint32_t kNilId = 0xFFFFFFFF;

// A read prefetch. Inline assembly on x86-64 because GCC drops __builtin_prefetch entirely for
// the baseline -march=x86-64 (it only emits prefetcht0 when the target arch names SSE prefetch).
inline void prefetch_line(const void* address) noexcept {
#if defined(__x86_64__)
    asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(address)));
#else
    __builtin_prefetch(address);
#endif
}

// Unique keys. Twice as many buckets as entries (rounded up to a power of two): a full table
// averages at most 1.25 entries compared per successful lookup, each a cache line of the arena,
// and the singly linked removal walk stays short.
class ChainIndex {
public:
    explicit ChainIndex(std::size_t capacity)
        : heads_(std::bit_ceil(std::max<std::size_t>(capacity * 2, 2)), kNilId), next_(capacity, kNilId),
          mask_(heads_.size() - 1) {}

    void insert(std::uint32_t id, std::uint64_t hash) noexcept {
        std::uint32_t& head = heads_[hash & mask_];
        next_[id] = head;
        head = id;
    }
    void remove(std::uint32_t id, std::uint64_t hash) noexcept {
        for (std::uint32_t* link = &heads_[hash & mask_]; *link != kNilId; link = &next_[*link]) {
            if (*link == id) {
                *link = next_[id];
                next_[id] = kNilId;
                return;
            }
        }
    }
    // Burst lookups in two steps, each issued for every packet before the next step, so the
    // cache misses of a burst overlap instead of following one another.
    void prefetch_bucket(std::uint64_t hash) const noexcept { prefetch_line(&heads_[hash & mask_]); }
    [[nodiscard]] std::uint32_t first(std::uint64_t hash) const noexcept { return heads_[hash & mask_]; }

    // The first id in the hash's chain for which matches(id) holds, or kNilId.
    template <class Matches>
    [[nodiscard]] std::uint32_t find(std::uint64_t hash, Matches&& matches) const noexcept {
        for (std::uint32_t id = heads_[hash & mask_]; id != kNilId; id = next_[id])
            if (matches(id)) return id;
        return kNilId;
    }

private:
    std::vector<std::uint32_t> heads_;
    std::vector<std::uint32_t> next_;
    std::size_t mask_;
};

// Non-unique keys (all flows of one endpoint share a key), doubly linked so removing one entry
// is O(1) however many share its bucket.
class ChainMultiIndex {
public:
    ChainMultiIndex(std::size_t capacity, std::size_t buckets)
        : heads_(std::bit_ceil(std::max<std::size_t>(buckets, 2)), kNilId), next_(capacity, kNilId),
          prev_(capacity, kNilId), mask_(heads_.size() - 1) {}

    void insert(std::uint32_t id, std::uint64_t hash) noexcept {
        std::uint32_t& head = heads_[hash & mask_];
        next_[id] = head;
        prev_[id] = kNilId;
        if (head != kNilId) prev_[head] = id;
        head = id;
    }
    void remove(std::uint32_t id, std::uint64_t hash) noexcept {
        if (prev_[id] != kNilId) {
            next_[prev_[id]] = next_[id];
        } else {
            heads_[hash & mask_] = next_[id];
        }
        if (next_[id] != kNilId) prev_[next_[id]] = prev_[id];
        next_[id] = prev_[id] = kNilId;
    }
    // Calls f(id) for every entry in the hash's bucket; f may remove the entry it is given.
    template <class F>
    void for_each_in_bucket(std::uint64_t hash, F&& f) {
        for (std::uint32_t id = heads_[hash & mask_]; id != kNilId;) {
            const std::uint32_t next = next_[id];
            f(id);
            id = next;
        }
    }

private:
    std::vector<std::uint32_t> heads_;
    std::vector<std::uint32_t> next_;
    std::vector<std::uint32_t> prev_;
    std::size_t mask_;
};

}  // namespace andromeda::nat
