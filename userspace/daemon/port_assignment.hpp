// Which packet worker serves each tenant port when [node] workers asks for more workers than the
// underlay has RX queues. The workers past the underlay's queues ("tenant-only") take the tenant
// ports, so one tenant's punts cannot fill the worker that also carries the underlay and NAT.
//
// The choice is stable and deterministic: a port keeps its worker for as long as it stays (a
// reload only moves ports it adds or removes), and a new port goes to the least-loaded candidate,
// ties to the lowest index. Without tenant-only workers every worker is a candidate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace andromeda::daemon {

class PortAssignment {
public:
    // `workers` >= `underlay_workers` >= 1; throws std::invalid_argument otherwise.
    PortAssignment(std::uint32_t underlay_workers, std::uint32_t workers);

    // The worker serving `ifindex`: the one it already has, or the least-loaded candidate.
    std::uint32_t assign(std::uint32_t ifindex);
    // Forgets `ifindex` (a removed port); unknown ports are ignored.
    void release(std::uint32_t ifindex) noexcept;

    [[nodiscard]] std::optional<std::uint32_t> worker_of(std::uint32_t ifindex) const noexcept;
    // Tenant ports per worker, by worker index.
    [[nodiscard]] const std::vector<std::size_t>& load() const noexcept { return load_; }
    [[nodiscard]] std::uint32_t workers() const noexcept { return static_cast<std::uint32_t>(load_.size()); }
    [[nodiscard]] std::uint32_t underlay_workers() const noexcept { return underlay_workers_; }

private:
    std::uint32_t underlay_workers_;
    std::vector<std::size_t> load_;
    std::map<std::uint32_t, std::uint32_t> worker_of_;  // ifindex -> worker
};

}  // namespace andromeda::daemon
