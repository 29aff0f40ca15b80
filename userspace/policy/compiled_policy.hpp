// Security groups compiled for the packet path: once per fabric generation, every endpoint of a
// VPC with a firewall gets a rule set per direction (the rules of all its groups, ordered by the
// order they decide in, remote groups resolved to their members' addresses), shared by the
// endpoints with the same groups. Deciding a new flow is then a walk down one ordered list that
// stops at the first rule that matches, each remote set a binary search.
//
// The decision (docs/security-groups.md): of the rules that match, the lowest priority number
// decides, and at the same priority a deny; none: the VPC's default for the direction. A rule
// matches by protocol, the packet's destination port (TCP, UDP) or ICMP type and code, and the
// remote address: the source for ingress, the destination for egress.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "fabric/model.hpp"
#include "fabric/snapshot.hpp"
#include "policy/address.hpp"

namespace andromeda::policy {

using fabric::PolicyAction;
using fabric::PolicyDirection;

// What a rule sees of a packet.
struct PacketMatch {
    std::uint8_t protocol = 0;  // IP protocol number
    Address remote;             // the source for ingress, the destination for egress
    std::uint16_t port = 0;     // TCP/UDP destination port
    std::int16_t icmp_type = -1;
    std::int16_t icmp_code = -1;
};

struct Decision {
    PolicyAction action = PolicyAction::deny;
    std::uint32_t rule = 0;  // index into CompiledPolicy::rules()
};

// Addresses of both families as sorted, disjoint, non-adjacent [first, last] ranges, each within
// one family.
class AddressSet {
public:
    void add(const Address& first, const Address& last) { ranges_.emplace_back(first, last); }
    void add(const Address& one) { add(one, one); }
    void add(const wire::Ipv4Prefix& prefix);
    void add(const wire::Ipv6Prefix& prefix);
    void finish();  // sorts and merges; call once after the adds
    [[nodiscard]] bool contains(const Address& ip) const noexcept;
    [[nodiscard]] std::size_t ranges() const noexcept { return ranges_.size(); }

private:
    std::vector<std::pair<Address, Address>> ranges_;
};

struct CompiledRule {
    std::uint32_t priority = 0;
    PolicyAction action = PolicyAction::allow;
    std::uint8_t protocol = 0;  // 0: any
    bool any_remote = true;
    std::int16_t icmp_type = -1;
    std::int16_t icmp_code = -1;
    std::vector<fabric::PortRange> ports;  // empty: any
    AddressSet remote;
    std::uint32_t id = 0;

    [[nodiscard]] bool matches(const PacketMatch& p) const noexcept;
};

// The rules one endpoint's traffic in one direction meets, in the order they decide.
struct RuleSet {
    std::vector<CompiledRule> rules;
    Decision fallback;  // the VPC's default, as a rule of its own

    [[nodiscard]] Decision decide(const PacketMatch& packet) const noexcept {
        for (const CompiledRule& r : rules)
            if (r.matches(packet)) return {r.action, r.id};
        return fallback;
    }
};

// A rule as people wrote it, for counters, drops and `andromedactl policy`.
struct RuleInfo {
    std::string vpc;
    std::string group;         // empty: the VPC's default
    std::int32_t index = -1;   // the rule's place in its group; -1: the default
    PolicyDirection direction = PolicyDirection::ingress;
    PolicyAction action = PolicyAction::allow;
    std::uint32_t priority = 0;
    std::string text;          // "ingress allow tcp 80 from group app"
    std::atomic<std::uint64_t>* hits = nullptr;  // owned by HitCounters, lives across generations
};

// Per-rule hit counts that outlive a recompile: a rule keeps its count while its VPC, group,
// place and text stay the same.
class HitCounters {
public:
    std::atomic<std::uint64_t>* counter(const std::string& key);

private:
    std::mutex mutex_;
    std::map<std::string, std::unique_ptr<std::atomic<std::uint64_t>>> counters_;
};

class CompiledPolicy {
public:
    // `counters` must outlive the result. `epoch` tells this compile from every other one of the
    // same firewall (flows remember the epoch that allowed them).
    [[nodiscard]] static std::shared_ptr<const CompiledPolicy> compile(const fabric::FabricSnapshot& fabric,
                                                                       HitCounters& counters, std::uint64_t epoch = 0);

    [[nodiscard]] std::uint64_t generation() const noexcept { return generation_; }
    [[nodiscard]] std::uint64_t epoch() const noexcept { return epoch_; }
    [[nodiscard]] const fabric::FabricSnapshot* source() const noexcept { return source_; }
    [[nodiscard]] bool enforced(std::uint32_t vpc_index) const noexcept {
        return vpc_index < enforced_.size() && enforced_[vpc_index];
    }
    // The rule set of the endpoint at `position` of the snapshot's endpoints() in `direction`;
    // null when its VPC has no firewall.
    [[nodiscard]] const RuleSet* rules_for(std::uint32_t position, PolicyDirection direction) const noexcept {
        if (position >= set_of_endpoint_.size() || set_of_endpoint_[position] == kNone) return nullptr;
        return &sets_[set_of_endpoint_[position] * 2 + (direction == PolicyDirection::egress ? 1 : 0)];
    }
    [[nodiscard]] std::span<const RuleInfo> rules() const noexcept { return infos_; }
    [[nodiscard]] std::size_t rule_sets() const noexcept { return sets_.size() / 2; }
    void count(std::uint32_t rule) const noexcept {
        if (rule < infos_.size()) infos_[rule].hits->fetch_add(1, std::memory_order_relaxed);
    }
    // The policy generation of the VPC of `vni` (fabric/policy_generation.hpp), as the kernel's
    // flow cache knows it; 0 for a VPC without a firewall.
    [[nodiscard]] std::uint32_t kernel_generation(std::uint32_t vni) const noexcept {
        const auto it = kernel_generations_.find(vni);
        return it == kernel_generations_.end() ? 0 : it->second;
    }

private:
    static constexpr std::uint32_t kNone = 0xFFFFFFFF;
    std::uint64_t generation_ = 0;
    std::uint64_t epoch_ = 0;
    const fabric::FabricSnapshot* source_ = nullptr;  // for telling snapshots apart, never dereferenced
    std::vector<bool> enforced_;                 // by VPC index
    std::vector<std::uint32_t> set_of_endpoint_;  // by endpoint position
    std::vector<RuleSet> sets_;                  // [2i]: ingress, [2i + 1]: egress
    std::vector<RuleInfo> infos_;
    std::unordered_map<std::uint32_t, std::uint32_t> kernel_generations_;  // VNI -> generation
};

// "ingress allow tcp 80,8000-8099 from 10.0.0.0/8, group app (priority 100)".
[[nodiscard]] std::string describe(const fabric::SecurityRule& rule);

}  // namespace andromeda::policy
