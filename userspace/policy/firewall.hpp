// The stateful firewall: security groups (CompiledPolicy) plus connection tracking, one per node,
// shared by every packet worker. A packet is checked once per endpoint it concerns: egress at its
// sender (on the sender's host, before it is encapsulated, delivered or translated) and ingress at
// its receiver (on the receiver's host, before delivery into the tenant port).
//
//   - A packet of a flow the firewall already allowed passes: the flow's own direction, its
//     replies (the reversed tuple, at the same endpoint, in the other direction) and ICMP errors
//     about either (they quote the packet they are about).
//   - Otherwise the rules decide; an allowed packet opens the flow, except a TCP segment other
//     than a SYN without ACK: seen mid-connection, it passes if the rules allow it and opens
//     nothing (it cannot tell which side opened the connection).
//   - A flow remembers the policy generation that allowed it; after a reload (or an etcd change)
//     its next packet is judged again, so a revoked rule stops an open connection at once.
//   - A non-first fragment follows its first fragment (same source, destination, protocol and IP
//     ID); without one it is denied: it carries no ports to judge.
//
// Thread-safe: the tables are sharded behind spin locks; the policy swaps per generation.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "fabric/snapshot.hpp"
#include "nat/spin_lock.hpp"
#include "policy/compiled_policy.hpp"
#include "wire/bytes.hpp"

namespace andromeda::policy {

// A flow as seen at one endpoint in one direction, of either family (the addresses all of one).
struct FlowKey {
    std::uint32_t vni = 0;
    Address local;  // the endpoint whose policy this is: its address of the flow's family
    Address source;
    Address destination;
    std::uint16_t source_port = 0;  // ICMP(v6) echo: the identifier (request: source, reply: destination)
    std::uint16_t destination_port = 0;
    std::uint8_t protocol = 0;
    PolicyDirection direction = PolicyDirection::ingress;

    friend bool operator==(const FlowKey&, const FlowKey&) = default;
    [[nodiscard]] FlowKey reversed() const noexcept {
        return {vni, local, destination, source, destination_port, source_port, protocol,
                direction == PolicyDirection::ingress ? PolicyDirection::egress : PolicyDirection::ingress};
    }
};

struct FlowKeyHash {
    std::size_t operator()(const FlowKey& k) const noexcept;
};

enum class Outcome : std::uint8_t {
    not_enforced,  // the VPC has no firewall
    established,   // a packet of an allowed flow, in its own direction
    reply,         // a reply of an allowed flow
    related,       // an ICMP error about an allowed flow
    fragment,      // a non-first fragment of an allowed first fragment
    opened,        // the rules allowed it: a new flow
    unopened,      // the rules allowed a TCP segment of no tracked connection, not its SYN: no flow
    denied,        // the rules (or the default) denied it
    revoked,       // a flow the current policy no longer allows
    fragment_unknown,
    malformed,     // too short to judge (no ports where the protocol has them)
    table_full,
};

struct CheckResult {
    bool allowed = false;
    Outcome outcome = Outcome::not_enforced;
    std::uint32_t rule = 0;  // opened, denied, revoked: the deciding rule
};

[[nodiscard]] const char* to_string(Outcome o) noexcept;

struct FirewallSettings {
    std::size_t max_flows = 1u << 20;
    std::uint64_t tcp_timeout_ns = 7200ull * 1'000'000'000;        // idle, open connection
    std::uint64_t tcp_closing_timeout_ns = 30ull * 1'000'000'000;  // after a FIN or RST
    std::uint64_t udp_timeout_ns = 180ull * 1'000'000'000;
    std::uint64_t other_timeout_ns = 60ull * 1'000'000'000;  // ICMP and other protocols
    std::uint64_t fragment_timeout_ns = 30ull * 1'000'000'000;
};

// One tracked flow, for `andromedactl conntrack`.
struct FlowView {
    FlowKey key;
    std::uint32_t rule = 0;
    std::uint64_t epoch = 0;  // of the policy that judged it last (CompiledPolicy::epoch)
    std::uint64_t packets = 0;
    std::uint64_t idle_ns = 0;
    bool closing = false;
};

// The kernel's flow cache (shared/andromeda_policy_kern_user.h, bpf/lib/policy.h): the firewall
// asks for each TCP or UDP flow it allowed to be installed there (two entries: the flow's own
// direction and its replies'), and for its removal when it is revoked or expires (a closing
// connection stays until it expires: its last packets may already be in a peer's kernel). The daemon drains the requests into the BPF map and reads the kernel's use back
// (kernel_seen), so that a flow the kernel carries never expires here.
struct KernelFlow {
    FlowKey key;                   // the flow as it was opened; its replies are key.reversed()
    std::uint32_t generation = 0;  // the VPC's policy generation (CompiledPolicy::kernel_generation)
    std::uint32_t rule = 0;
    friend bool operator==(const KernelFlow&, const KernelFlow&) = default;
};

struct KernelChange {
    enum class Kind : std::uint8_t { install, remove };
    Kind kind = Kind::install;
    KernelFlow flow;
};

struct FirewallCounters {
    std::uint64_t flows = 0;  // tracked now
    std::uint64_t opened = 0, denied = 0, revoked = 0, expired = 0, fragments_unknown = 0, table_full = 0;
    std::uint64_t unopened = 0;  // TCP segments passed by the rules alone (Outcome::unopened)
};

class Firewall {
public:
    using Clock = std::function<std::uint64_t()>;  // monotonic ns
    explicit Firewall(FirewallSettings settings = {}, Clock clock = {});

    // The compiled policy of `fabric`, compiled on the first call for its generation.
    [[nodiscard]] std::shared_ptr<const CompiledPolicy> policy_for(const fabric::FabricSnapshot& fabric);
    [[nodiscard]] std::shared_ptr<const CompiledPolicy> current_policy() const;

    // Judges `ip_packet` (an IPv4 packet whose header the caller checked, or an IPv6 packet whose
    // length it did) at `local`, an endpoint of `policy`'s snapshot, in `direction`.
    CheckResult check(const CompiledPolicy& policy, const fabric::Endpoint& local, PolicyDirection direction,
                      wire::ByteSpan ip_packet);

    // Forgets idle flows; returns how many.
    std::size_t expire();

    // The kernel's flow cache (KernelFlow): off until the daemon, which owns the map, turns it on.
    // `wake`, when set, is called (from the worker's thread) after each install asked for, so
    // the daemon writes it at once: a flow's receiver should have it in its kernel before the
    // sender's kernel carries the flow's next packets. Set it before the workers run.
    void enable_kernel_flows(bool on, std::function<void()> wake = {}) {
        kernel_wake_ = std::move(wake);
        kernel_flows_.store(on, std::memory_order_relaxed);
    }
    // The installs and removals asked for since the last call, in order.
    [[nodiscard]] std::vector<KernelChange> drain_kernel_changes();
    // A kernel entry, for the packet tuple `key` (at its endpoint, in its direction), was last used
    // at `last_seen_ns` (steady clock): the flow it belongs to (as itself or as a reply) is kept
    // alive to then. False when the firewall does not have that flow installed under
    // `generation`: the entry is stale, for the caller to delete.
    bool kernel_seen(const FlowKey& key, std::uint32_t generation, std::uint64_t last_seen_ns);
    // After a restart: a flow the previous daemon had installed (its own direction), tracked again
    // as installed under `generation`, and judged by the rules at its next packet here. False when
    // the table is full.
    bool adopt(const KernelFlow& flow);
    [[nodiscard]] std::vector<FlowView> flows(std::size_t limit) const;
    [[nodiscard]] FirewallCounters counters() const;

private:
    struct Entry {
        std::uint32_t rule = 0;
        std::uint64_t generation = 0;
        std::uint64_t last_seen = 0;
        std::uint64_t packets = 0;
        bool closing = false;
        std::uint32_t kernel_generation = 0;  // installed in the kernel under it; 0: not installed
        std::uint64_t kernel_asked = 0;       // when the install was last asked for
    };
    struct Shard {
        mutable nat::SpinLock lock;
        std::unordered_map<FlowKey, Entry, FlowKeyHash> flows;
    };
    static constexpr std::size_t kShards = 64;

    struct Located {
        FlowKey key;  // the flow's own key (the reversed packet key for a reply)
        bool found = false;
        bool is_reply = false;
    };
    // Whether a packet with `key` belongs to a tracked flow (as itself or as a reply); refreshes it.
    Located find(const FlowKey& key, std::uint64_t now, bool closing, std::uint64_t generation, bool* stale,
                 std::uint32_t* rule);
    void erase(const FlowKey& key);
    bool insert(const FlowKey& key, std::uint32_t rule, std::uint64_t generation, std::uint64_t now, bool closing);
    Shard& shard_of(const FlowKey& key) { return shards_[FlowKeyHash{}(key) % kShards]; }
    [[nodiscard]] std::uint64_t timeout_of(const FlowKey& key, const Entry& e) const noexcept;
    [[nodiscard]] std::uint64_t now() const { return clock_(); }
    // The kernel's side of an allowed packet of the flow `flow_key`: an install where the flow is
    // not installed under `generation` (or was asked for over a second ago and the packet still
    // came here: the entry is gone, evicted), a removal when the packet closes it.
    void note_kernel(const FlowKey& flow_key, std::uint32_t generation, bool eligible, bool closing, std::uint64_t now);
    void ask_kernel(KernelChange::Kind kind, const FlowKey& key, const Entry& e, std::uint32_t generation);

    FirewallSettings settings_;
    Clock clock_;
    HitCounters hits_;
    mutable std::mutex policy_mutex_;
    std::shared_ptr<const CompiledPolicy> policy_;
    std::shared_ptr<const CompiledPolicy> previous_;  // the snapshot before, while workers move on
    std::uint64_t epoch_ = 0;
    std::array<Shard, kShards> shards_;
    std::atomic<std::size_t> size_{0};

    struct FragmentKey {
        std::uint32_t vni;
        Address local, source, destination;
        std::uint32_t id;  // IPv4: the 16-bit identification; IPv6: the fragment header's 32
        std::uint8_t protocol;
        PolicyDirection direction;
        friend bool operator==(const FragmentKey&, const FragmentKey&) = default;
    };
    struct FragmentKeyHash {
        std::size_t operator()(const FragmentKey& k) const noexcept;
    };
    mutable nat::SpinLock fragment_lock_;
    std::unordered_map<FragmentKey, std::uint64_t, FragmentKeyHash> fragments_;  // -> when allowed

    std::atomic<bool> kernel_flows_{false};
    std::function<void()> kernel_wake_;
    std::mutex kernel_mutex_;
    std::vector<KernelChange> kernel_changes_;  // guarded by kernel_mutex_

    std::atomic<std::uint64_t> opened_{0}, denied_{0}, revoked_{0}, expired_{0}, fragments_unknown_{0}, table_full_{0},
        unopened_{0};
};

}  // namespace andromeda::policy
