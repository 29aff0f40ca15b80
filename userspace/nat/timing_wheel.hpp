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
//
// The nodes live where the owner wants them (`Nodes` maps an id to its WheelNode): the NAT keeps
// each flow's node in the flow's own cache line, so a packet touches one line, not two.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

namespace andromeda::nat {

struct WheelNode {
    static constexpr std::int64_t kUnscheduled = std::numeric_limits<std::int64_t>::min();
    static constexpr std::uint32_t kNil = 0xFFFFFFFF;

    std::int64_t deadline = 0;
    std::int64_t filed_tick = kUnscheduled;  // the tick whose slot holds the entry
    std::uint32_t next = kNil;
    std::uint32_t prev = kNil;
};

template <class Nodes>  // WheelNode& Nodes::operator()(std::uint32_t id) const
class BasicTimingWheel {
public:
    static constexpr std::uint32_t kNil = WheelNode::kNil;

    // `tick_ns` > 0; `slot_count` rounded up to a power of two. A wheel spanning the longest
    // timeout (slot_count * tick >= timeout) files every entry once per deadline; a longer
    // deadline is re-filed once per rotation.
    BasicTimingWheel(Nodes nodes, std::int64_t tick_ns, std::size_t slot_count)
        : nodes_(std::move(nodes)), heads_(std::bit_ceil(std::max<std::size_t>(slot_count, 2)), kNil),
          mask_(heads_.size() - 1), tick_ns_(std::max<std::int64_t>(tick_ns, 1)) {}

    // Files `id` (not currently scheduled) to expire at deadline_ns. `now_ns` anchors the wheel
    // the first time it is used.
    void schedule(std::uint32_t id, std::int64_t deadline_ns, std::int64_t now_ns) noexcept {
        anchor(now_ns);
        nodes_(id).deadline = deadline_ns;
        link(id, tick_of(deadline_ns));
        ++size_;
    }
    // Sets a new deadline for a scheduled id in O(1). An entry is never filed after the tick of
    // its deadline, so a later deadline (the common case: another packet, same timeout) needs
    // neither a division nor a move.
    void refresh(std::uint32_t id, std::int64_t deadline_ns) noexcept {
        WheelNode& node = nodes_(id);
        const bool later = deadline_ns >= node.deadline;
        node.deadline = deadline_ns;
        if (later) return;
        const std::int64_t tick = std::max(tick_of(deadline_ns), next_tick_);
        if (tick < node.filed_tick) {  // earlier than where it waits: move it now
            unlink(id);
            link(id, tick);
        }
    }
    void cancel(std::uint32_t id) noexcept {
        if (!scheduled(id)) return;
        unlink(id);
        nodes_(id).filed_tick = WheelNode::kUnscheduled;
        --size_;
    }

    [[nodiscard]] bool scheduled(std::uint32_t id) const noexcept {
        return nodes_(id).filed_tick != WheelNode::kUnscheduled;
    }
    [[nodiscard]] std::int64_t deadline(std::uint32_t id) const noexcept { return nodes_(id).deadline; }
    // A deadline at or before `now` has passed: an entry is expired at exactly its deadline.
    [[nodiscard]] bool expired(std::uint32_t id, std::int64_t now_ns) const noexcept {
        return nodes_(id).deadline <= now_ns;
    }

    // Processes every tick up to now_ns: each entry whose deadline has passed is unscheduled and
    // handed to on_expire(id), at most `budget` of them (the rest wait for the next call, so a
    // caller can bound the time spent). Returns the number expired. on_expire may cancel `id`
    // (a no-op by then) but must not cancel or schedule other ids.
    template <class OnExpire>
    std::size_t advance(std::int64_t now_ns, std::size_t budget, OnExpire&& on_expire) {
        anchor(now_ns);
        const std::int64_t last_tick = floor_tick(now_ns);  // ticks at or before now
        // After a long pause one rotation visits every slot: no need to walk empty ones twice.
        const auto slots = static_cast<std::int64_t>(heads_.size());
        if (last_tick - next_tick_ >= slots) next_tick_ = last_tick - slots + 1;
        std::size_t expired = 0;
        while (next_tick_ <= last_tick && budget > 0) {
            if (!fire_slot(now_ns, budget, expired, on_expire)) break;
            ++next_tick_;
        }
        return expired;
    }

    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] std::size_t slot_count() const noexcept { return heads_.size(); }
    [[nodiscard]] std::int64_t tick_ns() const noexcept { return tick_ns_; }
    // Entries visited but not expired by advance() so far (re-filed after a refresh).
    [[nodiscard]] std::uint64_t refiled() const noexcept { return refiled_; }

private:
    [[nodiscard]] std::int64_t floor_tick(std::int64_t t) const noexcept {
        const std::int64_t q = t / tick_ns_;
        return q - ((t % tick_ns_) < 0 ? 1 : 0);
    }
    [[nodiscard]] std::int64_t tick_of(std::int64_t deadline_ns) const noexcept {  // ceiling
        const std::int64_t q = deadline_ns / tick_ns_;
        return q + ((deadline_ns % tick_ns_) > 0 ? 1 : 0);
    }
    void anchor(std::int64_t now_ns) noexcept {
        if (anchored_) return;
        anchored_ = true;
        next_tick_ = floor_tick(now_ns);
    }
    void link(std::uint32_t id, std::int64_t tick) noexcept {
        // A tick already processed (clock skew between callers) is filed in the next one to run.
        tick = std::max(tick, next_tick_);
        WheelNode& node = nodes_(id);
        const std::size_t slot = static_cast<std::size_t>(tick) & mask_;
        node.filed_tick = tick;
        node.prev = kNil;
        node.next = heads_[slot];
        if (node.next != kNil) nodes_(node.next).prev = id;
        heads_[slot] = id;
    }
    void unlink(std::uint32_t id) noexcept {
        WheelNode& node = nodes_(id);
        if (node.prev != kNil) {
            nodes_(node.prev).next = node.next;
        } else {
            heads_[static_cast<std::size_t>(node.filed_tick) & mask_] = node.next;
        }
        if (node.next != kNil) nodes_(node.next).prev = node.prev;
        node.next = node.prev = kNil;
    }
    // Returns false when the budget ran out inside the slot.
    template <class OnExpire>
    bool fire_slot(std::int64_t now_ns, std::size_t& budget, std::size_t& expired, OnExpire& on_expire) {
        std::uint32_t id = heads_[static_cast<std::size_t>(next_tick_) & mask_];
        while (id != kNil) {
            WheelNode& node = nodes_(id);
            const std::uint32_t next = node.next;
            if (node.deadline <= now_ns) {
                if (budget == 0) return false;
                unlink(id);
                node.filed_tick = WheelNode::kUnscheduled;
                --size_;
                --budget;
                ++expired;
                on_expire(id);
            } else if (node.filed_tick <= next_tick_) {
                // Refreshed since it was filed (or due in a later rotation): file it where it is
                // due. Its deadline is after now, so that tick is after this one.
                unlink(id);
                link(id, tick_of(node.deadline));
                ++refiled_;
            }
            id = next;
        }
        return true;
    }

    Nodes nodes_;
    std::vector<std::uint32_t> heads_;
    std::size_t mask_;
    std::int64_t tick_ns_;
    std::int64_t next_tick_ = 0;  // the first tick not yet fully processed
    bool anchored_ = false;
    std::size_t size_ = 0;
    std::uint64_t refiled_ = 0;
};

// Nodes in a vector of their own: the wheel as a standalone structure.
class OwnWheelNodes {
public:
    explicit OwnWheelNodes(std::size_t capacity) : nodes_(std::make_shared<std::vector<WheelNode>>(capacity)) {}
    WheelNode& operator()(std::uint32_t id) const noexcept { return (*nodes_)[id]; }

private:
    std::shared_ptr<std::vector<WheelNode>> nodes_;
};

class TimingWheel : public BasicTimingWheel<OwnWheelNodes> {
public:
    TimingWheel(std::size_t capacity, std::int64_t tick_ns, std::size_t slot_count)
        : BasicTimingWheel(OwnWheelNodes(capacity), tick_ns, slot_count) {}
};

}  // namespace andromeda::nat
