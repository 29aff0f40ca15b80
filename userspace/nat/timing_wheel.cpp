#include "nat/timing_wheel.hpp"

#include <algorithm>
#include <bit>

namespace andromeda::nat {

TimingWheel::TimingWheel(std::size_t capacity, std::int64_t tick_ns, std::size_t slot_count)
    : nodes_(capacity), heads_(std::bit_ceil(std::max<std::size_t>(slot_count, 2)), kNil),
      mask_(heads_.size() - 1), tick_ns_(std::max<std::int64_t>(tick_ns, 1)) {}

std::int64_t TimingWheel::tick_of(std::int64_t deadline_ns) const noexcept {
    // Ceiling division that is also right for negative times (a clock epoch is arbitrary).
    const std::int64_t q = deadline_ns / tick_ns_;
    return q + ((deadline_ns % tick_ns_) > 0 ? 1 : 0);
}

void TimingWheel::anchor(std::int64_t now_ns) noexcept {
    if (anchored_) return;
    anchored_ = true;
    next_tick_ = now_ns >= 0 ? now_ns / tick_ns_ : -1;
}

void TimingWheel::schedule(std::uint32_t id, std::int64_t deadline_ns, std::int64_t now_ns) noexcept {
    anchor(now_ns);
    nodes_[id].deadline = deadline_ns;
    nodes_[id].scheduled = true;
    link(id, tick_of(deadline_ns));
    ++size_;
}

void TimingWheel::refresh(std::uint32_t id, std::int64_t deadline_ns) noexcept {
    Node& node = nodes_[id];
    node.deadline = deadline_ns;
    const std::int64_t tick = std::max(tick_of(deadline_ns), next_tick_);
    if (tick < node.filed_tick) {  // earlier than where it waits: move it now
        unlink(id);
        link(id, tick);
    }
}

void TimingWheel::cancel(std::uint32_t id) noexcept {
    if (!nodes_[id].scheduled) return;
    unlink(id);
    nodes_[id].scheduled = false;
    --size_;
}

void TimingWheel::link(std::uint32_t id, std::int64_t tick) noexcept {
    // A tick already processed (clock skew between callers) is filed in the next one to run.
    tick = std::max(tick, next_tick_);
    Node& node = nodes_[id];
    const std::size_t slot = static_cast<std::size_t>(tick) & mask_;
    node.filed_tick = tick;
    node.prev = kNil;
    node.next = heads_[slot];
    if (node.next != kNil) nodes_[node.next].prev = id;
    heads_[slot] = id;
}

void TimingWheel::unlink(std::uint32_t id) noexcept {
    Node& node = nodes_[id];
    if (node.prev != kNil) {
        nodes_[node.prev].next = node.next;
    } else {
        heads_[static_cast<std::size_t>(node.filed_tick) & mask_] = node.next;
    }
    if (node.next != kNil) nodes_[node.next].prev = node.prev;
    node.next = node.prev = kNil;
}

}  // namespace andromeda::nat
