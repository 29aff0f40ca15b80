// A value that one thread (a packet worker) writes and any thread reads, without a lock: a
// sequence lock. The writer never waits; a reader copies and retries while a write is under
// way. Every word is accessed atomically (relaxed), so there is no data race, only the sequence
// number deciding whether a copy is whole.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <type_traits>

namespace andromeda::worker {

template <class T>
class Published {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % sizeof(std::uint64_t) == 0,
                  "Published<T> copies T as 64-bit words");
    static constexpr std::size_t kWords = sizeof(T) / sizeof(std::uint64_t);

public:
    // The writer's thread only.
    void store(const T& value) noexcept {
        const auto words = std::bit_cast<std::array<std::uint64_t, kWords>>(value);
        const std::uint64_t seq = seq_.load(std::memory_order_relaxed);
        seq_.store(seq + 1, std::memory_order_relaxed);  // odd: a write is under way
        std::atomic_thread_fence(std::memory_order_release);
        for (std::size_t i = 0; i < kWords; ++i) std::atomic_ref(words_[i]).store(words[i], std::memory_order_relaxed);
        seq_.store(seq + 2, std::memory_order_release);
    }

    // Any thread.
    [[nodiscard]] T load() const noexcept {
        std::array<std::uint64_t, kWords> words;
        for (;;) {
            const std::uint64_t before = seq_.load(std::memory_order_acquire);
            if ((before & 1) == 0) {
                for (std::size_t i = 0; i < kWords; ++i)
                    words[i] = std::atomic_ref(words_[i]).load(std::memory_order_relaxed);
                std::atomic_thread_fence(std::memory_order_acquire);
                if (seq_.load(std::memory_order_relaxed) == before) break;
            }
        }
        return std::bit_cast<T>(words);
    }

private:
    std::atomic<std::uint64_t> seq_{0};
    alignas(std::atomic_ref<std::uint64_t>::required_alignment) mutable std::array<std::uint64_t, kWords> words_{};
};

}  // namespace andromeda::worker
