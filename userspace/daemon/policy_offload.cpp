#include "daemon/policy_offload.hpp"

#include <spdlog/spdlog.h>

#include <pthread.h>

namespace andromeda::daemon {

PolicyOffloadLoop::PolicyOffloadLoop(std::shared_ptr<policy::Firewall> firewall, io::MapWriter& writer)
    : firewall_(std::move(firewall)), map_(writer) {
    firewall_->enable_kernel_flows(true, [this] {
        wake_.store(true, std::memory_order_release);
        stop_cv_.notify_one();
    });
}

PolicyOffloadLoop::~PolicyOffloadLoop() {
    firewall_->enable_kernel_flows(false);
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    stop_cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

std::size_t PolicyOffloadLoop::adopt() {
    std::lock_guard lock(mutex_);
    return map_.adopt(*firewall_);
}

void PolicyOffloadLoop::start() {
    thread_ = std::thread([this] { run(); });
    pthread_setname_np(thread_.native_handle(), "andromeda-sg");
}

void PolicyOffloadLoop::drain_locked() {
    const std::vector<policy::KernelChange> changes = firewall_->drain_kernel_changes();
    if (changes.empty()) return;
    try {
        map_.apply(changes);
    } catch (const std::exception& e) {
        // An install the kernel refused leaves the flow with the pipeline, which asks again a
        // second later; a removal it refused is found by the next sync.
        if (last_error_ != e.what()) spdlog::error("security groups: kernel flows: {}", e.what());
        last_error_ = e.what();
    }
}

void PolicyOffloadLoop::run() {
    auto next_sync = std::chrono::steady_clock::now() + kSyncPeriod;
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        // Woken by an install (a worker does not wait for the lock: a wake it races with costs
        // at most kDrainPeriod).
        stop_cv_.wait_for(lock, kDrainPeriod, [this] { return stopping_ || wake_.load(std::memory_order_acquire); });
        wake_.store(false, std::memory_order_relaxed);
        if (stopping_) break;
        drain_locked();
        const auto now = std::chrono::steady_clock::now();
        if (now < next_sync) continue;
        next_sync = now + kSyncPeriod;
        try {
            map_.sync(*firewall_);
        } catch (const std::exception& e) {
            if (last_error_ != e.what()) spdlog::error("security groups: kernel flow sync: {}", e.what());
            last_error_ = e.what();
        }
    }
}

io::PolicyFlowMapCounters PolicyOffloadLoop::counters() const {
    std::lock_guard lock(mutex_);
    return map_.counters();
}

}  // namespace andromeda::daemon
