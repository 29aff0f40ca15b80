// Engine-wide NAT settings: table bounds, timeouts, filtering behaviour, sharding.
//
// These are fixed for the engine's lifetime (they size preallocated tables); the per-VPC rules
// (NAT address, port range, port forwards) change on reload and live in NatRules instead.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "nat/tenant_budget.hpp"
#include "nat/types.hpp"

namespace andromeda::nat {

// Idle timeouts per state. A flow whose last packet was at t expires at exactly t + timeout:
// a packet arriving at that instant no longer matches it.
struct NatTimeouts {
    std::chrono::seconds tcp_handshake{30};         // syn_sent, syn_received
    std::chrono::seconds tcp_established{2 * 3600 + 4 * 60};  // RFC 5382 REQ-5 minimum
    std::chrono::seconds tcp_closing{30};           // fin_wait, closing, reset
    std::chrono::seconds udp{120};                  // RFC 4787 REQ-5 minimum
    std::chrono::seconds icmp{60};                  // RFC 5508 REQ-1 minimum

    friend bool operator==(const NatTimeouts&, const NatTimeouts&) = default;
};

// RFC 4787 section 5 filtering for UDP. TCP and ICMP are always address-and-port-dependent
// (only replies to a tenant's own flows, plus port forwards, get in).
enum class UdpFiltering : std::uint8_t {
    address_and_port_dependent,  // only the exact remote ip:port a tenant sent to may answer
    endpoint_independent,        // anyone may send to an existing mapping ("full cone")
};

// Handing established flows to the kernel fast path (docs/nat.md, "Offload to the kernel").
struct NatOffloadSettings {
    // Off: no flow is ever offloaded, and the engine behaves exactly as without a kernel path.
    bool enabled = false;
    // An offloaded flow is expired only this long after its deadline: the kernel's use of it
    // reaches the engine through the daemon's periodic sync (touch_offloaded), so a flow busy in
    // the kernel must outlive one sync interval past its last refresh. At least the sync
    // interval plus the time one sync takes.
    std::chrono::milliseconds grace{2000};
    // Changes waiting for drain_offload_changes(), per shard, beyond which a new install is
    // deferred to the flow's next packet (counted as offload_queue_full). Removals are never
    // refused: each flow is queued at most once, so the queue never outgrows the flow table.
    std::size_t queue_limit = 65536;
};

struct NatSettings {
    // Flows across all shards; each shard preallocates max_flows / shards (rounded up).
    std::size_t max_flows = 1'000'000;
    // Independent partitions of the table, each with its own lock. Use at least one per worker.
    std::size_t shards = 1;
    // Distinct NAT addresses each shard can allocate ports on at the same time.
    std::size_t max_nat_addresses = 64;
    NatTimeouts timeouts;
    // Granularity of the timing wheel: an expired flow's entry is reclaimed at most one tick
    // after its deadline (lookups honour the exact deadline regardless).
    std::chrono::milliseconds wheel_tick{1000};
    UdpFiltering udp_filtering = UdpFiltering::address_and_port_dependent;
    // Seed for the table hashes; 0 picks a random one (so remote hosts cannot aim collisions).
    std::uint64_t hash_seed = 0;
    NatOffloadSettings offload;
    // New outbound flows per tenant (VNI, inside address): tenant_budget.hpp. Changeable at
    // run time (NatEngine::set_tenant_flow_limit); the number of tenants tracked is not.
    TenantFlowLimit tenant_flows{};  // unlimited unless the daemon says ([node.uplink])
    std::size_t tenants_tracked = 65536;
};

// Empty when the settings are usable, else what is wrong (for a config error message).
[[nodiscard]] std::string validate(const NatSettings& settings);

}  // namespace andromeda::nat
