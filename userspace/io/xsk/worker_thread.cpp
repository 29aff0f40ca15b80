#include "io/xsk/worker_thread.hpp"

#include <pthread.h>
#include <sched.h>

#include <latch>

#include <spdlog/spdlog.h>

namespace andromeda::io {

bool pin_current_thread_to_cpu(int cpu) noexcept {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    const int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    errno = rc;
    return rc == 0;
}

WorkerThread::WorkerThread(XskWorker& worker, FrameHandler& handler, std::optional<int> cpu, std::string name)
    : worker_(worker) {
    std::latch started(1);
    thread_ = std::jthread([this, &handler, &started, cpu, name = std::move(name)](std::stop_token stop) {
        if (!name.empty()) pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
        if (cpu) {
            pinned_ = pin_current_thread_to_cpu(*cpu);
            if (!pinned_) spdlog::warn("AF_XDP worker: could not pin to CPU {}: {}", *cpu, std::strerror(errno));
        }
        started.count_down();
        try {
            worker_.run(handler, stop);
        } catch (const std::exception& e) {
            failure_ = e.what();
            spdlog::error("AF_XDP worker stopped: {}", failure_);
        }
    });
    started.wait();
}

WorkerThread::~WorkerThread() { stop(); }

void WorkerThread::stop() {
    if (!thread_.joinable()) return;
    thread_.request_stop();
    thread_.join();
}

std::string WorkerThread::failure() const { return thread_.joinable() ? std::string{} : failure_; }

}  // namespace andromeda::io
