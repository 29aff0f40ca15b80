// A hashed timing wheel (Varghese & Lauck, scheme 6) over entries named by a dense uint32 id.
//
// Each entry carries its own deadline. A slot holds an intrusive doubly linked list of the
// entries due in that tick. Why this shape:
//  - advance() visits only the slots whose tick has come and, in them, only entries that either
//    expire now or were refreshed since they were filed: the cost of a tick is proportional to
//    what expires (plus earlier activity), never to the table size.
//  - refresh() is O(1) and usually a single store: a later deadline leaves the entry where it
//    is ("lazy"), and the slot re-files it when it fires. An earlier deadline (a TCP flow going
//    from established to closing) moves it at once, so a closed flow's entry is reclaimed on
//    time.
//  - cancel() is O(1) (doubly linked), for flows removed before their deadline.
// The tick is a granularity for reclaiming entries only: callers compare deadlines themselves
// (expired(id, now)) so behaviour is exact to the nanosecond.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace andromeda::nat {

class TimingWheel {
public:
    static constexpr std::uint32_t kNil = 0xFFFFFFFF;

    // `capacity` ids (0..capacity-1); `tick_ns` > 0; `slot_count` rounded up to a power of two.
    // A wheel spanning the longest timeout (slot_count * tick >= timeout) files every entry once
    // per deadline; a longer deadline is re-filed once per rotation.
    TimingWheel(std::size_t capacity, std::int64_t tick_ns, std::size_t slot_count);

    // Files `id` (not currently scheduled) to expire at deadline_ns. `now_ns` anchors the wheel
    // the first time it is used.
    void schedule(std::uint32_t id, std::int64_t deadline_ns, std::int64_t now_ns) noexcept;
    // Sets a new deadline for a scheduled id in O(1).
    void refresh(std::uint32_t id, std::int64_t deadline_ns) noexcept;
    void cancel(std::uint32_t id) noexcept;

    [[nodiscard]] bool scheduled(std::uint32_t id) const noexcept { return nodes_[id].scheduled; }
    [[nodiscard]] std::int64_t deadline(std::uint32_t id) const noexcept { return nodes_[id].deadline; }
    // A deadline at or before `now` has passed: an entry is expired at exactly its deadline.
    [[nodiscard]] bool expired(std::uint32_t id, std::int64_t now_ns) const noexcept {
        return nodes_[id].deadline <= now_ns;
    }

    // Processes every tick up to now_ns: each entry whose deadline has passed is unscheduled and
    // handed to on_expire(id), at most `budget` of them (the rest wait for the next call, so a
    // caller can bound the time spent). Returns the number expired. on_expire may cancel `id`
    // (a no-op by then) but must not cancel or schedule other ids.
    template <class OnExpire>
    std::size_t advance(std::int64_t now_ns, std::size_t budget, OnExpire&& on_expire);

    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] std::size_t slot_count() const noexcept { return heads_.size(); }
    [[nodiscard]] std::int64_t tick_ns() const noexcept { return tick_ns_; }
    // Entries visited but not expired by advance() so far (re-filed after a refresh).
    [[nodiscard]] std::uint64_t refiled() const noexcept { return refiled_; }

private:
    struct Node {
        std::int64_t deadline = 0;
        std::int64_t filed_tick = 0;  // the tick whose slot holds the entry
        std::uint32_t next = kNil;
        std::uint32_t prev = kNil;
        bool scheduled = false;
    };

    [[nodiscard]] std::int64_t tick_of(std::int64_t deadline_ns) const noexcept;  // ceiling
    void anchor(std::int64_t now_ns) noexcept;
    void link(std::uint32_t id, std::int64_t tick) noexcept;
    void unlink(std::uint32_t id) noexcept;
    // Returns false when the budget ran out inside the slot.
    template <class OnExpire>
    bool fire_slot(std::int64_t now_ns, std::size_t& budget, std::size_t& expired, OnExpire& on_expire);

    std::vector<Node> nodes_;
    std::vector<std::uint32_t> heads_;
    std::size_t mask_;
    std::int64_t tick_ns_;
    std::int64_t next_tick_ = 0;  // the first tick not yet fully processed
    bool anchored_ = false;
    std::size_t size_ = 0;
    std::uint64_t refiled_ = 0;
};

template <class OnExpire>
std::size_t TimingWheel::advance(std::int64_t now_ns, std::size_t budget, OnExpire&& on_expire) {
    anchor(now_ns);
    const std::int64_t last_tick = now_ns >= 0 ? now_ns / tick_ns_ : -1;  // ticks at or before now
    // After a long pause one rotation visits every slot: no need to walk empty ones repeatedly.
    const auto slots = static_cast<std::int64_t>(heads_.size());
    if (last_tick - next_tick_ >= slots) next_tick_ = last_tick - slots + 1;
    std::size_t expired = 0;
    while (next_tick_ <= last_tick && budget > 0) {
        if (!fire_slot(now_ns, budget, expired, on_expire)) break;
        ++next_tick_;
    }
    return expired;
}

template <class OnExpire>
bool TimingWheel::fire_slot(std::int64_t now_ns, std::size_t& budget, std::size_t& expired, OnExpire& on_expire) {
    const std::size_t slot = static_cast<std::size_t>(next_tick_) & mask_;
    std::uint32_t id = heads_[slot];
    while (id != kNil) {
        Node& node = nodes_[id];
        const std::uint32_t next = node.next;
        if (node.deadline <= now_ns) {
            if (budget == 0) return false;
            unlink(id);
            node.scheduled = false;
            --size_;
            --budget;
            ++expired;
            on_expire(id);
        } else if (node.filed_tick <= next_tick_) {
            // Refreshed since it was filed (or due in a later rotation): file it where it is due.
            // Its deadline is after now, so that tick is after this one and after now.
            unlink(id);
            link(id, tick_of(node.deadline));
            ++refiled_;
        }
        id = next;
    }
    return true;
}

}  // namespace andromeda::nat
