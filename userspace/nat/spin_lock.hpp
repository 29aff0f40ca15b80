// A test-and-test-and-set lock for the NAT shards: held for one packet's lookup and rewrite
// (tens of nanoseconds), where a futex mutex's extra atomic on unlock is a visible cost. After a
// short spin it yields, so a holder preempted on an oversubscribed host does not stall waiters
// for a whole time slice.
#pragma once

#include <atomic>
#include <thread>

namespace andromeda::nat {

class SpinLock {
public:
    void lock() noexcept {
        for (;;) {
            if (!locked_.exchange(true, std::memory_order_acquire)) return;
            for (int spins = 0; locked_.load(std::memory_order_relaxed); ++spins) {
                if (spins < 64) {
                    pause();
                } else {
                    std::this_thread::yield();
                }
            }
        }
    }
    void unlock() noexcept { locked_.store(false, std::memory_order_release); }

private:
    static void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        asm volatile("yield");
#endif
    }
    std::atomic<bool> locked_{false};
};

}  // namespace andromeda::nat
