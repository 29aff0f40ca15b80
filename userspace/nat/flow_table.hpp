// The conntrack table of one shard: a preallocated arena of flows with three indexes:
//  - inside:   (vni, protocol, tenant ip:port, remote ip:port)  -> flow   (tenant-side packets)
//  - outside:  (protocol, nat ip:port, remote ip:port)          -> flow   (uplink-side packets)
//  - endpoint: (vni, tenant ip)                                 -> flows  (expire an endpoint)
// The VNI is part of the inside key, so tenants of two VPCs may use the same private address.
// Expiry is not here: the shard's timing wheel links the flows through their WheelNode.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "nat/chain_index.hpp"
#include "nat/offload.hpp"
#include "nat/timing_wheel.hpp"
#include "nat/types.hpp"

namespace andromeda::nat {

// One flow, in one cache line: everything a packet of an existing flow reads or writes (keys,
// translation, state, the timing-wheel node with its deadline) is here, so a lookup touches the
// bucket head and this line. Creation time, read only by listings, is kept apart. There are no
// per-flow packet counters (like Linux conntrack without nf_conntrack_acct): a second line per
// packet for a listing nicety was not worth it.
//
// For ICMP echo, the "ports" are the echo identifier (tenant's and translated) and remote_port
// is 0. Addresses are host-order numbers (wire::Ipv4Address::value()).
struct alignas(64) Flow {
    std::uint32_t vni = 0;
    std::uint32_t inside_ip = 0;   // the tenant endpoint
    std::uint32_t remote_ip = 0;   // the host outside
    std::uint32_t nat_ip = 0;
    std::uint16_t inside_port = 0;
    std::uint16_t remote_port = 0;
    std::uint16_t nat_port = 0;
    Protocol protocol = Protocol::udp;
    FlowState state = FlowState::unreplied;
    Origin origin = Origin::outbound;
    std::uint8_t fins = 0;         // kFinFromOriginator | kFinFromResponder
    bool in_use = false;
    bool linked = false;           // in the indexes (set by FlowTable::link)
    bool remote_is_nat_address = false;  // hairpin: rechecked when the rules change
    std::uint8_t offload = 0;      // kOffloaded | kInKernel | kOffloadQueued | kOffloadRefused
    OffloadReason offload_reason = OffloadReason::none;  // of the last offload change
    std::uint32_t mapping = kNilId;  // the dynamic mapping it holds; kNilId for port-forward flows
    std::uint32_t rules_generation = 0;  // rules it was last checked against
    WheelNode wheel;               // deadline and expiry links

    static constexpr std::uint8_t kFinFromOriginator = 1;
    static constexpr std::uint8_t kFinFromResponder = 2;
    // `offload` bits (nat_shard_offload.cpp): what the engine wants (kOffloaded), what the daemon
    // was last told (kInKernel), whether a change waits in the shard's queue, and whether the
    // daemon could not install it (never asked again).
    static constexpr std::uint8_t kOffloaded = 1;
    static constexpr std::uint8_t kInKernel = 2;
    static constexpr std::uint8_t kOffloadQueued = 4;
    static constexpr std::uint8_t kOffloadRefused = 8;
};
static_assert(sizeof(Flow) == 64, "a flow is one cache line");

struct InsideKey {
    std::uint32_t vni = 0;
    Protocol protocol = Protocol::udp;
    std::uint32_t inside_ip = 0;
    std::uint16_t inside_port = 0;
    std::uint32_t remote_ip = 0;
    std::uint16_t remote_port = 0;

    [[nodiscard]] bool matches(const Flow& f) const noexcept {
        return f.inside_ip == inside_ip && f.remote_ip == remote_ip && f.inside_port == inside_port &&
               f.remote_port == remote_port && f.vni == vni && f.protocol == protocol;
    }
    [[nodiscard]] static InsideKey of(const Flow& f) noexcept {
        return {f.vni, f.protocol, f.inside_ip, f.inside_port, f.remote_ip, f.remote_port};
    }
};

struct OutsideKey {
    Protocol protocol = Protocol::udp;
    std::uint32_t nat_ip = 0;
    std::uint16_t nat_port = 0;
    std::uint32_t remote_ip = 0;
    std::uint16_t remote_port = 0;

    [[nodiscard]] bool matches(const Flow& f) const noexcept {
        return f.nat_port == nat_port && f.remote_ip == remote_ip && f.remote_port == remote_port &&
               f.nat_ip == nat_ip && f.protocol == protocol;
    }
    [[nodiscard]] static OutsideKey of(const Flow& f) noexcept {
        return {f.protocol, f.nat_ip, f.nat_port, f.remote_ip, f.remote_port};
    }
};

// Two 64-bit words through a seeded multiply-xorshift: cheap, and with a secret seed a tenant
// choosing remote addresses cannot aim its flows at one chain.
[[nodiscard]] inline std::uint64_t hash_words(std::uint64_t seed, std::uint64_t a, std::uint64_t b) noexcept {
    std::uint64_t h = (a ^ seed) * 0x9E3779B97F4A7C15ULL;
    h = (h ^ (h >> 32) ^ b) * 0xD6E8FEB86659FD93ULL;
    return h ^ (h >> 29);
}

class FlowTable {
public:
    FlowTable(std::size_t capacity, std::uint64_t seed);

    [[nodiscard]] std::uint32_t find_inside(const InsideKey& key) const noexcept {
        return inside_.find(hash(key), [&](std::uint32_t id) { return key.matches(flows_[id]); });
    }
    [[nodiscard]] std::uint32_t find_outside(const OutsideKey& key) const noexcept {
        return outside_.find(hash(key), [&](std::uint32_t id) { return key.matches(flows_[id]); });
    }

    // Prefetching for bursts: bucket heads first, then the first flow of each bucket.
    void prefetch_bucket(const InsideKey& key) const noexcept { inside_.prefetch_bucket(hash(key)); }
    void prefetch_bucket(const OutsideKey& key) const noexcept { outside_.prefetch_bucket(hash(key)); }
    void prefetch_first(const InsideKey& key) const noexcept { prefetch_flow(inside_.first(hash(key))); }
    void prefetch_first(const OutsideKey& key) const noexcept { prefetch_flow(outside_.first(hash(key))); }

    // A free entry (marked in use, fields reset), or kNilId when the table is full. Fill in its
    // fields, then link() it.
    [[nodiscard]] std::uint32_t allocate() noexcept;
    void link(std::uint32_t id) noexcept;
    // Takes an entry out of the indexes but keeps it (and its fields) allocated: an offloaded
    // flow that ended waits so until its removal is handed to the daemon.
    void unlink(std::uint32_t id) noexcept;
    // Unlinks and frees an entry.
    void remove(std::uint32_t id) noexcept;

    [[nodiscard]] Flow& operator[](std::uint32_t id) noexcept { return flows_[id]; }
    [[nodiscard]] std::int64_t created_ns(std::uint32_t id) const noexcept { return created_ns_[id]; }
    void set_created_ns(std::uint32_t id, std::int64_t t) noexcept { created_ns_[id] = t; }
    [[nodiscard]] const Flow& operator[](std::uint32_t id) const noexcept { return flows_[id]; }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] std::size_t capacity() const noexcept { return flows_.size(); }
    [[nodiscard]] bool full() const noexcept { return size_ == flows_.size(); }

    // Calls f(id) for each flow of endpoint (vni, ip); f may remove the flow it is given. Cost:
    // that endpoint's flows plus those of endpoints sharing its bucket.
    template <class F>
    void for_each_of_endpoint(std::uint32_t vni, std::uint32_t ip, F&& f) {
        endpoint_.for_each_in_bucket(endpoint_hash(vni, ip), [&](std::uint32_t id) {
            if (flows_[id].vni == vni && flows_[id].inside_ip == ip) f(id);
        });
    }
    // Calls f(id) for every linked flow (listing, reload checks; O(entries ever used)); f may
    // unlink or remove the flow it is given.
    template <class F>
    void for_each(F&& f) const {
        for (std::uint32_t id = 0; id < high_water_; ++id)
            if (flows_[id].linked) f(id);
    }

private:
    void prefetch_flow(std::uint32_t id) const noexcept {
        if (id != kNilId) prefetch_line(&flows_[id]);
    }
    [[nodiscard]] std::uint64_t hash(const InsideKey& k) const noexcept {
        return hash_words(seed_, std::uint64_t{k.inside_ip} << 32 | k.remote_ip,
                          std::uint64_t{k.vni} << 40 | std::uint64_t{static_cast<std::uint8_t>(k.protocol)} << 32 |
                              std::uint64_t{k.inside_port} << 16 | k.remote_port);
    }
    [[nodiscard]] std::uint64_t hash(const OutsideKey& k) const noexcept {
        return hash_words(seed_ ^ 0x5bd1e995, std::uint64_t{k.nat_ip} << 32 | k.remote_ip,
                          std::uint64_t{static_cast<std::uint8_t>(k.protocol)} << 32 |
                              std::uint64_t{k.nat_port} << 16 | k.remote_port);
    }
    [[nodiscard]] std::uint64_t endpoint_hash(std::uint32_t vni, std::uint32_t ip) const noexcept {
        return hash_words(seed_ ^ 0x27d4eb2f, std::uint64_t{vni} << 32 | ip, 0);
    }

    std::uint64_t seed_;
    std::vector<Flow> flows_;
    std::vector<std::int64_t> created_ns_;
    std::vector<std::uint32_t> free_;  // reserved to capacity: pushing never allocates
    std::uint32_t high_water_ = 0;     // ids at or above were never used
    std::size_t size_ = 0;
    ChainIndex inside_;
    ChainIndex outside_;
    ChainMultiIndex endpoint_;
};

}  // namespace andromeda::nat
