#include "fabric/publisher.hpp"

#include <stdexcept>
#include <thread>

namespace andromeda::fabric {

FabricReader::FabricReader(FabricReader&& other) noexcept
    : publisher_(other.publisher_), slot_(other.slot_), depth_(other.depth_), snapshot_(other.snapshot_) {
    other.publisher_ = nullptr;
}

FabricReader::~FabricReader() {
    if (publisher_ == nullptr) return;
    auto& slot = publisher_->slots_[slot_];
    slot.epoch.store(0, std::memory_order_release);
    slot.in_use.store(false, std::memory_order_release);
}

FabricReader::Guard FabricReader::read() noexcept {
    if (depth_++ == 0) {
        auto& slot = publisher_->slots_[slot_];
        // Announce the epoch, then load the pointer; both sequentially consistent so the writer,
        // which swaps the pointer and then scans the slots, either sees this announcement or
        // has already swapped before the load below.
        slot.epoch.store(publisher_->epoch_.load(std::memory_order_seq_cst), std::memory_order_seq_cst);
        snapshot_ = publisher_->current_.load(std::memory_order_seq_cst);
    }
    return Guard(this, snapshot_);
}

void FabricReader::leave() noexcept {
    if (--depth_ == 0) publisher_->slots_[slot_].epoch.store(0, std::memory_order_release);
}

FabricReader SnapshotPublisher::make_reader() {
    std::lock_guard lock(writer_mutex_);
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        bool expected = false;
        if (slots_[i].in_use.compare_exchange_strong(expected, true)) return FabricReader(this, i);
    }
    throw std::length_error("andromeda::fabric: more than 128 fabric readers");
}

void SnapshotPublisher::publish(std::shared_ptr<const FabricSnapshot> next) {
    std::lock_guard lock(writer_mutex_);
    current_.store(next.get(), std::memory_order_seq_cst);
    const std::uint64_t retire_epoch = epoch_.fetch_add(1, std::memory_order_seq_cst) + 1;
    if (current_owner_) retired_.push_back({retire_epoch, std::move(current_owner_)});
    current_owner_ = std::move(next);
    reclaim_locked();
}

std::shared_ptr<const FabricSnapshot> SnapshotPublisher::current() const {
    std::lock_guard lock(writer_mutex_);
    return current_owner_;
}

std::size_t SnapshotPublisher::reclaim() {
    std::lock_guard lock(writer_mutex_);
    return reclaim_locked();
}

std::size_t SnapshotPublisher::reclaim_locked() {
    std::uint64_t oldest_active = UINT64_MAX;
    for (const auto& slot : slots_) {
        const std::uint64_t epoch = slot.epoch.load(std::memory_order_seq_cst);
        if (epoch != 0 && epoch < oldest_active) oldest_active = epoch;
    }
    // Retired in epoch order, so release from the front.
    while (!retired_.empty() && retired_.front().epoch <= oldest_active) retired_.pop_front();
    return retired_.size();
}

void SnapshotPublisher::synchronize() {
    while (reclaim() != 0) std::this_thread::yield();
}

}  // namespace andromeda::fabric
