// Publishing fabric snapshots to packet workers, RCU-style.
//
// Why not std::atomic<std::shared_ptr>: libstdc++ implements it with a lock bit in the control
// block pointer (is_lock_free() is false), so a reader could spin behind the writer or behind
// other readers, and every read would bump a shared reference count on one cache line.
//
// Instead: epoch-based reclamation. The current snapshot is a plain atomic pointer. Each reader
// (one per worker thread) owns a cache-line slot; entering a read section stores the global
// epoch into it, leaving stores 0. That is two stores and two loads, no lock, no wait, no
// shared write. The writer swaps the pointer, advances the epoch and retires the old snapshot
// tagged with the new epoch; a retired snapshot is released only once every slot is idle or
// shows an epoch at least that new: such a reader entered after the swap and cannot hold it.
// Readers therefore always see one whole snapshot, and no snapshot is freed under them.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

#include "fabric/snapshot.hpp"

namespace andromeda::fabric {

class SnapshotPublisher;

// A worker's handle. Owned and used by one thread; read sections may nest.
class FabricReader {
public:
    class Guard {
    public:
        ~Guard() { reader_->leave(); }
        Guard(const Guard&) = delete;
        Guard& operator=(const Guard&) = delete;
        // Null only before anything was published.
        [[nodiscard]] const FabricSnapshot* get() const noexcept { return snapshot_; }
        const FabricSnapshot* operator->() const noexcept { return snapshot_; }
        const FabricSnapshot& operator*() const noexcept { return *snapshot_; }

    private:
        friend class FabricReader;
        Guard(FabricReader* reader, const FabricSnapshot* snapshot) : reader_(reader), snapshot_(snapshot) {}
        FabricReader* reader_;
        const FabricSnapshot* snapshot_;
    };

    FabricReader(FabricReader&& other) noexcept;
    FabricReader& operator=(FabricReader&&) = delete;
    FabricReader(const FabricReader&) = delete;
    ~FabricReader();

    // The snapshot stays valid, and the same, until the outermost Guard is destroyed.
    [[nodiscard]] Guard read() noexcept;

private:
    friend class SnapshotPublisher;
    FabricReader(SnapshotPublisher* publisher, std::size_t slot) : publisher_(publisher), slot_(slot) {}
    void leave() noexcept;

    SnapshotPublisher* publisher_;
    std::size_t slot_;
    std::uint32_t depth_ = 0;
    const FabricSnapshot* snapshot_ = nullptr;
};

class SnapshotPublisher {
public:
    static constexpr std::size_t kMaxReaders = 128;

    SnapshotPublisher() = default;
    SnapshotPublisher(const SnapshotPublisher&) = delete;
    SnapshotPublisher& operator=(const SnapshotPublisher&) = delete;
    // Every FabricReader must be gone by now.
    ~SnapshotPublisher() = default;

    // Throws std::length_error when kMaxReaders readers exist.
    [[nodiscard]] FabricReader make_reader();

    // Makes `next` current with one atomic swap and retires the previous snapshot.
    void publish(std::shared_ptr<const FabricSnapshot> next);
    // The current snapshot for control-plane use (not for the per-packet path).
    [[nodiscard]] std::shared_ptr<const FabricSnapshot> current() const;

    // Releases retired snapshots no reader can still hold; returns how many remain retired.
    std::size_t reclaim();
    // Waits (yielding) until every retired snapshot is released.
    void synchronize();

private:
    friend class FabricReader;
    struct alignas(64) ReaderSlot {
        std::atomic<std::uint64_t> epoch{0};  // 0: not in a read section
        std::atomic<bool> in_use{false};
    };
    struct Retired {
        std::uint64_t epoch;
        std::shared_ptr<const FabricSnapshot> snapshot;
    };
    std::size_t reclaim_locked();

    std::atomic<const FabricSnapshot*> current_{nullptr};
    std::atomic<std::uint64_t> epoch_{1};
    std::array<ReaderSlot, kMaxReaders> slots_;

    mutable std::mutex writer_mutex_;  // writers and registration only; readers never take it
    std::shared_ptr<const FabricSnapshot> current_owner_;
    std::deque<Retired> retired_;
};

}  // namespace andromeda::fabric
