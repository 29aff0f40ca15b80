// A thread running one XskWorker, optionally pinned to a CPU (one worker per underlay RX queue,
// each on its own core, keeps a queue's frames on one cache).
#pragma once

#include <optional>
#include <string>
#include <thread>

#include "io/xsk/xsk_worker.hpp"

namespace andromeda::io {

// Pins the calling thread; false (with errno set) when the kernel refuses.
bool pin_current_thread_to_cpu(int cpu) noexcept;

class WorkerThread {
public:
    // Starts worker.run(handler) on a new thread and returns once it runs (and is pinned). A
    // non-empty `name` (at most 15 characters) names the thread, as top -H and /proc show it.
    WorkerThread(XskWorker& worker, FrameHandler& handler, std::optional<int> cpu = std::nullopt,
                 std::string name = {});
    // Stops and joins.
    ~WorkerThread();
    WorkerThread(const WorkerThread&) = delete;
    WorkerThread& operator=(const WorkerThread&) = delete;

    void stop();
    [[nodiscard]] bool pinned() const noexcept { return pinned_; }
    // What ended the thread early (an exception from the handler), or empty.
    [[nodiscard]] std::string failure() const;

private:
    XskWorker& worker_;
    bool pinned_ = false;
    std::string failure_;
    std::jthread thread_;
};

}  // namespace andromeda::io
