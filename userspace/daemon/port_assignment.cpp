#include "daemon/port_assignment.hpp"

#include <stdexcept>
#include <string>

namespace andromeda::daemon {

PortAssignment::PortAssignment(std::uint32_t underlay_workers, std::uint32_t workers)
    : underlay_workers_(underlay_workers), load_(workers, 0) {
    if (underlay_workers == 0 || workers < underlay_workers)
        throw std::invalid_argument("PortAssignment: " + std::to_string(workers) + " workers for " +
                                    std::to_string(underlay_workers) + " underlay workers");
}

std::uint32_t PortAssignment::assign(std::uint32_t ifindex) {
    if (const auto it = worker_of_.find(ifindex); it != worker_of_.end()) return it->second;
    // Tenant-only workers when there are any, so the underlay's workers keep the underlay and NAT.
    const std::uint32_t first = workers() > underlay_workers_ ? underlay_workers_ : 0;
    std::uint32_t best = first;
    for (std::uint32_t w = first + 1; w < workers(); ++w)
        if (load_[w] < load_[best]) best = w;
    ++load_[best];
    worker_of_.emplace(ifindex, best);
    return best;
}

void PortAssignment::release(std::uint32_t ifindex) noexcept {
    const auto it = worker_of_.find(ifindex);
    if (it == worker_of_.end()) return;
    --load_[it->second];
    worker_of_.erase(it);
}

std::optional<std::uint32_t> PortAssignment::worker_of(std::uint32_t ifindex) const noexcept {
    const auto it = worker_of_.find(ifindex);
    if (it == worker_of_.end()) return std::nullopt;
    return it->second;
}

}  // namespace andromeda::daemon
