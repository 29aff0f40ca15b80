#include "daemon/nat_offload.hpp"

#include <spdlog/spdlog.h>

#include <array>
#include <pthread.h>

namespace andromeda::daemon {

NatOffloadLoop::NatOffloadLoop(nat::NatEngine& engine, io::MapWriter& writer) : engine_(engine), map_(writer) {}

NatOffloadLoop::~NatOffloadLoop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    stop_cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

std::size_t NatOffloadLoop::adopt(nat::TimePoint now) {
    std::lock_guard lock(mutex_);
    return map_.adopt(engine_, now);
}

void NatOffloadLoop::start() {
    thread_ = std::thread([this] { run(); });
    pthread_setname_np(thread_.native_handle(), "andromeda-nat");
}

void NatOffloadLoop::drain_locked(nat::TimePoint now) {
    std::array<nat::OffloadChange, 256> changes;
    for (;;) {
        const std::size_t n = engine_.drain_offload_changes(changes);
        if (n == 0) return;
        try {
            map_.apply(std::span(changes.data(), n), engine_, now);
        } catch (const std::exception& e) {
            // A write the kernel refused for another reason than a full map: the flows stay with
            // the pipeline (an install) or are found by the next sync (a removal).
            if (last_error_ != e.what()) spdlog::error("NAT offload: {}", e.what());
            last_error_ = e.what();
        }
        if (n < changes.size()) return;
    }
}

void NatOffloadLoop::flush(nat::TimePoint now) {
    std::lock_guard lock(mutex_);
    drain_locked(now);
}

void NatOffloadLoop::run() {
    auto next_sync = nat::Clock::now() + kSyncPeriod;
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        stop_cv_.wait_for(lock, kDrainPeriod, [this] { return stopping_; });
        if (stopping_) break;
        const nat::TimePoint now = nat::Clock::now();
        drain_locked(now);
        if (now < next_sync) continue;
        next_sync = now + kSyncPeriod;
        try {
            map_.sync(engine_, now);
        } catch (const std::exception& e) {
            if (last_error_ != e.what()) spdlog::error("NAT offload sync: {}", e.what());
            last_error_ = e.what();
        }
    }
}

io::NatFlowMapCounters NatOffloadLoop::counters() const {
    std::lock_guard lock(mutex_);
    return map_.counters();
}

}  // namespace andromeda::daemon
