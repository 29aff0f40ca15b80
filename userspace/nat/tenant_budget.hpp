// The rate at which one tenant may open NAT flows: a budget per (VNI, inside address), shared by
// every shard (a tenant's flows land in the shards of their ports, all of them).
//
// A tenant that opens new flows as fast as it can (a UDP scan, a SYN flood outward) costs the
// gateway a port, a flow entry and the slow path's time for each; without a budget of its own it
// exhausts the VPC's ports and the table, and delays every other tenant's first packets. Each
// tenant gets `rate` new flows per second, `burst` at once (GCRA: one deadline per tenant, no
// floating point). Refused first packets are dropped as tenant_flow_rate_limited; the tenant's
// established flows are untouched.
//
// Tenants are tracked in a fixed open-addressing table (no allocation on the packet path): a
// tenant whose budget is full again holds nothing worth keeping and its slot is reused; when the
// probe window holds none such, the least recently refilled is forgotten (that tenant starts
// afresh, with a full burst). The hash is seeded, so a remote host cannot aim collisions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "nat/spin_lock.hpp"

namespace andromeda::nat {

struct TenantFlowLimit {
    std::uint32_t rate = 0;   // new flows per second per tenant; 0: unlimited
    std::uint32_t burst = 0;  // at once (at least 1 when rate is set)
    friend bool operator==(const TenantFlowLimit&, const TenantFlowLimit&) = default;
};

class TenantFlowBudget {
public:
    // `tenants`: how many tenants are tracked at once (rounded up to a power of two).
    TenantFlowBudget(TenantFlowLimit limit, std::size_t tenants, std::uint64_t seed);

    // Takes one new flow from tenant (vni, ip)'s budget at `now_ns`; false when it has none left.
    [[nodiscard]] bool take(std::uint32_t vni, std::uint32_t ip, std::int64_t now_ns) noexcept;

    // A new limit (a reload): tenants keep their place, measured against it from now on.
    void set_limit(TenantFlowLimit limit) noexcept;
    [[nodiscard]] TenantFlowLimit limit() const noexcept;

    // Tenants tracked now (for tests and stats).
    [[nodiscard]] std::size_t tracked() const noexcept;

    static constexpr std::size_t kProbe = 16;

private:
    struct Slot {
        std::uint64_t key = 0;  // vni << 32 | ip, plus one; 0 is an empty slot
        std::int64_t tat = 0;   // the theoretical arrival time of the next flow (GCRA)
    };
    [[nodiscard]] std::size_t index(std::uint64_t key) const noexcept;

    mutable SpinLock lock_;
    TenantFlowLimit limit_;
    std::int64_t interval_ns_ = 0;   // 1 s / rate
    std::int64_t tolerance_ns_ = 0;  // burst * interval
    std::vector<Slot> slots_;
    std::size_t mask_ = 0;
    std::uint64_t seed_;
};

}  // namespace andromeda::nat
