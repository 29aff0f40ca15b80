// The thread that owns the kernel's NAT flows (docs/nat.md, "Offload to the kernel"): every few
// milliseconds it drains what the NAT engine decided (installs once a flow is established,
// removals when it ends) into andromeda_nat_flows, and every second it reads the kernel's use of
// the flows back into the engine (so a flow busy in the kernel never expires) and deletes what the
// engine no longer knows. A reload flushes it before it reports success, so a flow a removed rule,
// forward or endpoint ends is out of the kernel by then.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "io/plan/nat_flow_map.hpp"
#include "nat/nat_engine.hpp"

namespace andromeda::daemon {

class NatOffloadLoop {
public:
    static constexpr std::chrono::milliseconds kDrainPeriod{2};
    static constexpr std::chrono::milliseconds kSyncPeriod{1000};

    // Borrows both; `writer` is the BPF maps' (BpfInstance::map_writer()). The engine's offload
    // grace must exceed kSyncPeriod and a sync's duration.
    NatOffloadLoop(nat::NatEngine& engine, io::MapWriter& writer);
    ~NatOffloadLoop();  // stops the thread; the kernel keeps what it holds (a restart adopts it)
    NatOffloadLoop(const NatOffloadLoop&) = delete;
    NatOffloadLoop& operator=(const NatOffloadLoop&) = delete;

    // After a restart, before the workers start: the map's flows into the engine. Returns them.
    std::size_t adopt(nat::TimePoint now);
    // Starts the thread.
    void start();
    // Everything the engine has decided, in the kernel now (a reload calls it last).
    void flush(nat::TimePoint now);

    [[nodiscard]] io::NatFlowMapCounters counters() const;

private:
    void run();
    void drain_locked(nat::TimePoint now);

    nat::NatEngine& engine_;
    mutable std::mutex mutex_;  // guards map_, last_error_ (the thread and flush())
    io::NatFlowMap map_;
    std::string last_error_;
    std::condition_variable stop_cv_;
    bool stopping_ = false;  // guarded by mutex_
    std::thread thread_;
};

}  // namespace andromeda::daemon
