// The thread that owns the security groups' kernel flow cache (docs/security-groups.md, "the
// pipeline decides, the kernel carries"): woken by each install, and every few milliseconds, it
// drains what the firewall allowed or ended into andromeda_policy_flows, and every second it
// reads the kernel's use back into the firewall (so a flow busy in the kernel never expires
// there) and deletes what the firewall no longer has installed. The flows of a changed policy need no deletion to stop: the VPC's entry in
// andromeda_vnis carries the new generation, which none of them has.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "io/plan/policy_flow_map.hpp"
#include "policy/firewall.hpp"

namespace andromeda::daemon {

class PolicyOffloadLoop {
public:
    static constexpr std::chrono::milliseconds kDrainPeriod{2};
    static constexpr std::chrono::milliseconds kSyncPeriod{1000};

    // `writer` is the BPF maps' (BpfInstance::map_writer()); borrowed. Turns the firewall's
    // kernel flows on.
    PolicyOffloadLoop(std::shared_ptr<policy::Firewall> firewall, io::MapWriter& writer);
    ~PolicyOffloadLoop();  // stops the thread; the kernel keeps its flows (a restart adopts them)
    PolicyOffloadLoop(const PolicyOffloadLoop&) = delete;
    PolicyOffloadLoop& operator=(const PolicyOffloadLoop&) = delete;

    // After a restart, before the workers start: the map's flows into the firewall.
    std::size_t adopt();
    void start();

    [[nodiscard]] io::PolicyFlowMapCounters counters() const;

private:
    void run();
    void drain_locked();

    std::shared_ptr<policy::Firewall> firewall_;
    mutable std::mutex mutex_;  // guards map_, last_error_ (the last one logged), stopping_
    io::PolicyFlowMap map_;
    std::string last_error_;
    std::condition_variable stop_cv_;
    bool stopping_ = false;
    std::atomic<bool> wake_{false};  // an install is waiting
    std::thread thread_;
};

}  // namespace andromeda::daemon
