// The compiled matcher against a brute-force reference: random rule sets (priorities that tie,
// overlapping port ranges and CIDRs, references to groups whose members change) and random
// packets; the two must agree on the action and on the rule that decided.
#include <gtest/gtest.h>

#include <random>
#include <stdexcept>

#include "policy/compiled_policy.hpp"
#include "policy_fabric.hpp"

namespace andromeda::policy::testing {
namespace {

using fabric::PolicyProtocol;
using fabric::SecurityGroup;
using fabric::SecurityRule;

// The reference: every rule of every group of the endpoint, each matched by its definition;
// the winner is the least (priority, deny before allow, group, place); none: the default.
struct Reference {
    bool found = false;
    PolicyAction action = PolicyAction::deny;
    std::string group;
    std::int32_t index = -1;
};

bool reference_matches(const fabric::FabricSnapshot& s, const SecurityRule& r, const PacketMatch& p) {
    if (r.protocol != PolicyProtocol::any && static_cast<std::uint8_t>(r.protocol) != p.protocol) return false;
    if ((r.protocol == PolicyProtocol::tcp || r.protocol == PolicyProtocol::udp) && !r.ports.empty()) {
        bool in = false;
        for (const auto& range : r.ports) in = in || (p.port >= range.first && p.port <= range.last);
        if (!in) return false;
    }
    if (r.protocol == PolicyProtocol::icmp) {
        if (r.icmp_type >= 0 && r.icmp_type != p.icmp_type) return false;
        if (r.icmp_code >= 0 && r.icmp_code != p.icmp_code) return false;
    }
    if (r.remote_cidrs.empty() && r.remote_groups.empty()) return true;
    for (const auto& c : r.remote_cidrs)
        if (c.contains(wire::Ipv4Address(p.remote))) return true;
    for (const fabric::Endpoint& e : s.endpoints())
        for (const auto& g : r.remote_groups)
            if (e.ip.value() == p.remote && std::find(e.groups.begin(), e.groups.end(), g) != e.groups.end())
                return true;
    return false;
}

Reference reference_decide(const fabric::FabricSnapshot& s, const fabric::Endpoint& e, PolicyDirection d,
                           const PacketMatch& p) {
    const fabric::Vpc& vpc = s.vpcs()[e.vpc_index];
    Reference best;
    std::size_t best_group = 0;
    for (std::size_t g = 0; g < vpc.security_groups.size(); ++g) {
        const SecurityGroup& group = vpc.security_groups[g];
        if (std::find(e.groups.begin(), e.groups.end(), group.name) == e.groups.end()) continue;
        for (std::size_t i = 0; i < group.rules.size(); ++i) {
            const SecurityRule& r = group.rules[i];
            if (r.direction != d || !reference_matches(s, r, p)) continue;
            const SecurityRule* cur = best.found ? &vpc.security_groups[best_group].rules[static_cast<std::size_t>(best.index)]
                                                 : nullptr;
            const bool better =
                cur == nullptr || r.priority < cur->priority ||
                (r.priority == cur->priority && r.action == PolicyAction::deny && cur->action == PolicyAction::allow);
            if (better) {
                best = {true, r.action, group.name, static_cast<std::int32_t>(i)};
                best_group = g;
            }
        }
    }
    if (!best.found) best.action = vpc.default_action(d);
    return best;
}

class RandomPolicies {
public:
    explicit RandomPolicies(std::uint32_t seed) : rng_(seed) {}

    std::uint32_t pick(std::uint32_t n) { return std::uniform_int_distribution<std::uint32_t>(0, n - 1)(rng_); }

    SecurityRule rule(std::size_t groups) {
        SecurityRule r;
        r.direction = pick(2) ? PolicyDirection::ingress : PolicyDirection::egress;
        r.action = pick(3) == 0 ? PolicyAction::deny : PolicyAction::allow;
        r.priority = 10 * (1 + pick(6));  // few values: ties happen
        const PolicyProtocol protocols[] = {PolicyProtocol::any, PolicyProtocol::tcp, PolicyProtocol::udp, PolicyProtocol::icmp};
        r.protocol = protocols[pick(4)];
        if (r.protocol == PolicyProtocol::tcp || r.protocol == PolicyProtocol::udp) {
            for (std::uint32_t n = pick(3); n > 0; --n) {
                const auto first = static_cast<std::uint16_t>(pick(100));
                r.ports.push_back({first, static_cast<std::uint16_t>(first + pick(30))});
            }
        }
        if (r.protocol == PolicyProtocol::icmp && pick(2)) {
            r.icmp_type = static_cast<std::int16_t>(pick(2) ? 8 : 3);
            if (pick(2)) r.icmp_code = static_cast<std::int16_t>(pick(3));
        }
        for (std::uint32_t n = pick(3); n > 0; --n) {
            // 10.0.0.0/24 and 10.0.1.0/24, cut into /24 to /32 prefixes (no host bits: a valid CIDR).
            const auto length = static_cast<std::uint8_t>(24 + pick(9));
            const std::uint32_t address = (10u << 24) | (pick(2) << 8) | pick(256);
            const std::uint32_t mask = length == 32 ? 0xFFFFFFFFu : ~((1u << (32 - length)) - 1);
            const auto prefix = wire::Ipv4Prefix::parse(wire::Ipv4Address(address & mask).to_string() + "/" +
                                                        std::to_string(length));
            if (!prefix) throw std::logic_error("the generator made an invalid CIDR");
            r.remote_cidrs.push_back(*prefix);
        }
        if (pick(3) == 0) r.remote_groups.push_back("g" + std::to_string(pick(static_cast<std::uint32_t>(groups))));
        return r;
    }

    PacketMatch packet() {
        PacketMatch p;
        const std::uint8_t protocols[] = {6, 17, 1, 47};
        p.protocol = protocols[pick(4)];
        p.remote = (10u << 24) | (pick(2) << 8) | pick(256);
        if (pick(10) == 0) p.remote = 0xC0A80000u | pick(65536);  // outside the VPC
        if (p.protocol == 6 || p.protocol == 17) p.port = static_cast<std::uint16_t>(pick(140));
        if (p.protocol == 1) {
            p.icmp_type = static_cast<std::int16_t>(pick(2) ? 8 : 3);
            p.icmp_code = static_cast<std::int16_t>(pick(3));
        }
        return p;
    }

    std::mt19937 rng_;
};

TEST(PolicyMatcher, AgreesWithTheReferenceOnRandomRuleSetsAndPackets) {
    const auto base = load(blue_fabric(""));
    HitCounters counters;
    std::size_t decided_by_rule = 0, decided_by_default = 0;
    for (std::uint32_t seed = 1; seed <= 300; ++seed) {
        RandomPolicies rnd(seed);
        const std::size_t group_count = 1 + rnd.pick(4);
        std::vector<SecurityGroup> groups(group_count);
        for (std::size_t g = 0; g < group_count; ++g) {
            groups[g].name = "g" + std::to_string(g);
            for (std::uint32_t n = rnd.pick(12); n > 0; --n) groups[g].rules.push_back(rnd.rule(group_count));
        }
        std::vector<std::vector<std::string>> members(4);
        for (auto& m : members)
            for (std::size_t g = 0; g < group_count; ++g)
                if (rnd.pick(2)) m.push_back("g" + std::to_string(g));
        const auto ingress = rnd.pick(2) ? std::optional(PolicyAction::allow) : std::nullopt;
        const auto snapshot = with_policy(*base, groups, members, seed, ingress);
        const auto policy = CompiledPolicy::compile(*snapshot, counters);
        for (const fabric::Endpoint& e : snapshot->endpoints()) {
            for (int n = 0; n < 200; ++n) {
                const PolicyDirection d = rnd.pick(2) ? PolicyDirection::ingress : PolicyDirection::egress;
                const PacketMatch p = rnd.packet();
                const RuleSet* set = policy->rules_for(e.position, d);
                ASSERT_NE(set, nullptr);
                const Decision got = set->decide(p);
                const Reference want = reference_decide(*snapshot, e, d, p);
                const RuleInfo& info = policy->rules()[got.rule];
                ASSERT_EQ(got.action, want.action) << "seed " << seed << " endpoint " << e.ip.to_string();
                ASSERT_EQ(info.group, want.group) << "seed " << seed;
                ASSERT_EQ(info.index, want.index) << "seed " << seed;
                ASSERT_EQ(info.direction, d);
                (want.found ? decided_by_rule : decided_by_default)++;
            }
        }
    }
    // The generator exercises both outcomes often.
    EXPECT_GT(decided_by_rule, 20000u);
    EXPECT_GT(decided_by_default, 20000u);
}

TEST(PolicyMatcher, EndpointsWithTheSameGroupsShareOneRuleSet) {
    const auto base = load(blue_fabric(""));
    HitCounters counters;
    std::vector<SecurityGroup> groups(2);
    groups[0].name = "web";
    groups[1].name = "app";
    const auto snapshot = with_policy(*base, groups, {{"web"}, {"web"}, {"app", "web"}, {}}, 1);
    const auto policy = CompiledPolicy::compile(*snapshot, counters);
    EXPECT_EQ(policy->rule_sets(), 3u);  // {web}, {app, web}, {}
    EXPECT_EQ(policy->rules_for(0, PolicyDirection::ingress), policy->rules_for(1, PolicyDirection::ingress));
}

TEST(PolicyMatcher, ARemoteGroupFollowsItsMembers) {
    const auto base = load(blue_fabric(""));
    HitCounters counters;
    std::vector<SecurityGroup> groups(2);
    groups[0].name = "web";
    groups[1].name = "app";
    SecurityRule from_app;
    from_app.protocol = PolicyProtocol::tcp;
    from_app.ports = {{80, 80}};
    from_app.remote_groups = {"app"};
    groups[0].rules = {from_app};
    PacketMatch p;
    p.protocol = 6;
    p.remote = wire::Ipv4Address::parse("10.0.0.20")->value();
    p.port = 80;
    // .10 is web; .20 (endpoint 2) joins app, then leaves it.
    auto policy = CompiledPolicy::compile(*with_policy(*base, groups, {{"web"}, {}, {"app"}, {}}, 1), counters);
    EXPECT_EQ(policy->rules_for(0, PolicyDirection::ingress)->decide(p).action, PolicyAction::allow);
    policy = CompiledPolicy::compile(*with_policy(*base, groups, {{"web"}, {}, {}, {}}, 2), counters);
    EXPECT_EQ(policy->rules_for(0, PolicyDirection::ingress)->decide(p).action, PolicyAction::deny);
}

TEST(PolicyMatcher, AVpcWithoutAFirewallHasNoRuleSets) {
    const auto snapshot = load(blue_fabric(""));
    HitCounters counters;
    const auto policy = CompiledPolicy::compile(*snapshot, counters);
    EXPECT_FALSE(policy->enforced(0));
    EXPECT_EQ(policy->rules_for(0, PolicyDirection::ingress), nullptr);
}

TEST(PolicyMatcher, AddressSetsMergeAndFindRanges) {
    AddressSet set;
    set.add(*wire::Ipv4Prefix::parse("10.0.0.0/25"));
    set.add(*wire::Ipv4Prefix::parse("10.0.0.128/25"));
    set.add(0xFFFFFFFFu, 0xFFFFFFFFu);
    set.add(5, 5);
    set.finish();
    EXPECT_EQ(set.ranges(), 3u);
    EXPECT_TRUE(set.contains(wire::Ipv4Address::parse("10.0.0.255")->value()));
    EXPECT_FALSE(set.contains(wire::Ipv4Address::parse("10.0.1.0")->value()));
    EXPECT_TRUE(set.contains(0xFFFFFFFFu));
    EXPECT_FALSE(set.contains(4));
    AddressSet everything;
    everything.add(*wire::Ipv4Prefix::parse("0.0.0.0/0"));
    everything.finish();
    EXPECT_TRUE(everything.contains(0));
    EXPECT_TRUE(everything.contains(0xFFFFFFFFu));
}

}  // namespace
}  // namespace andromeda::policy::testing
