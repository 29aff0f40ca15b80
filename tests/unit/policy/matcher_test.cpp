// The compiled matcher against a brute-force reference: random rule sets (priorities that tie,
// overlapping port ranges and CIDRs, references to groups whose members change) and random
// packets; the two must agree on the action and on the rule that decided.
#include <gtest/gtest.h>

#include <random>
#include <sstream>
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
    if (r.protocol == PolicyProtocol::icmp || r.protocol == PolicyProtocol::icmpv6) {
        if (r.icmp_type >= 0 && r.icmp_type != p.icmp_type) return false;
        if (r.icmp_code >= 0 && r.icmp_code != p.icmp_code) return false;
    }
    if (r.remote_cidrs.empty() && r.remote_cidrs6.empty() && r.remote_groups.empty()) return true;
    if (!p.remote.v6)
        for (const auto& c : r.remote_cidrs)
            if (c.contains(wire::Ipv4Address(p.remote.v4_value()))) return true;
    if (p.remote.v6)
        for (const auto& c : r.remote_cidrs6)
            if (c.contains(p.remote.v6_value())) return true;
    for (const fabric::Endpoint& e : s.endpoints()) {
        const bool is_remote = p.remote.v6 ? e.ipv6 && *e.ipv6 == p.remote.v6_value() : e.ip.value() == p.remote.v4_value();
        for (const auto& g : r.remote_groups)
            if (is_remote && std::find(e.groups.begin(), e.groups.end(), g) != e.groups.end()) return true;
    }
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
        const PolicyProtocol protocols[] = {PolicyProtocol::any, PolicyProtocol::tcp, PolicyProtocol::udp,
                                            PolicyProtocol::icmp, PolicyProtocol::icmpv6};
        r.protocol = protocols[pick(5)];
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
        if (r.protocol == PolicyProtocol::icmpv6 && pick(2)) {
            r.icmp_type = static_cast<std::int16_t>(pick(2) ? 128 : 1);
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
        for (std::uint32_t n = pick(3); n > 0; --n) {
            // fd00:0:0:100::/120 cut into /120 to /128, now and then a prefix reaching far beyond
            // it (a /64 or /0: ranges that cross the halves of the address), or another /64.
            const unsigned kind = pick(8);
            std::string text;
            if (kind == 0) text = "::/0";
            else if (kind == 1) text = "fd00:0:0:100::/64";
            else if (kind == 2) text = "fd00:0:0:101::/64";
            else {
                const unsigned length = 120 + pick(9);
                const unsigned host = pick(256) & (length == 128 ? 0xFFu : ~((1u << (128 - length)) - 1) & 0xFFu);
                std::ostringstream hex;
                hex << std::hex << host;
                text = "fd00:0:0:100::" + hex.str() + "/" + std::to_string(length);
            }
            const auto prefix = wire::Ipv6Prefix::parse(text);
            if (!prefix) throw std::logic_error("the generator made an invalid IPv6 CIDR: " + text);
            r.remote_cidrs6.push_back(*prefix);
        }
        if (pick(3) == 0) r.remote_groups.push_back("g" + std::to_string(pick(static_cast<std::uint32_t>(groups))));
        return r;
    }

    PacketMatch packet() {
        PacketMatch p;
        const bool v6 = pick(2) == 0;
        const std::uint8_t protocols[] = {6, 17, static_cast<std::uint8_t>(v6 ? 58 : 1), 47};
        p.protocol = protocols[pick(4)];
        if (!v6) {
            p.remote = Address::v4((10u << 24) | (pick(2) << 8) | pick(256));
            if (pick(10) == 0) p.remote = Address::v4(0xC0A80000u | pick(65536));  // outside the VPC
        } else {
            // In the VPC's /64 (the endpoints are ::10, ::11, ::20, ::21), in the next one, or
            // the IPv4-mapped form of a VPC address (IPv6, never the IPv4 peer).
            const unsigned where = pick(10);
            p.remote = Address{true, where == 0 ? 0xfd00000000000101ull : 0xfd00000000000100ull, pick(256)};
            if (where == 1) p.remote = Address{true, 0, 0x0000FFFF0A000000ull | pick(256)};
        }
        if (p.protocol == 6 || p.protocol == 17) p.port = static_cast<std::uint16_t>(pick(140));
        if (p.protocol == 1) {
            p.icmp_type = static_cast<std::int16_t>(pick(2) ? 8 : 3);
            p.icmp_code = static_cast<std::int16_t>(pick(3));
        }
        if (p.protocol == 58) {
            p.icmp_type = static_cast<std::int16_t>(pick(2) ? 128 : 1);
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
    p.remote = Address::v4(*wire::Ipv4Address::parse("10.0.0.20"));
    p.port = 80;
    PacketMatch p6 = p;  // the same member by its IPv6 address
    p6.remote = Address::of(*wire::Ipv6Address::parse("fd00:0:0:100::20"));
    // .10 is web; .20 (endpoint 2) joins app, then leaves it.
    auto policy = CompiledPolicy::compile(*with_policy(*base, groups, {{"web"}, {}, {"app"}, {}}, 1), counters);
    EXPECT_EQ(policy->rules_for(0, PolicyDirection::ingress)->decide(p).action, PolicyAction::allow);
    EXPECT_EQ(policy->rules_for(0, PolicyDirection::ingress)->decide(p6).action, PolicyAction::allow);
    policy = CompiledPolicy::compile(*with_policy(*base, groups, {{"web"}, {}, {}, {}}, 2), counters);
    EXPECT_EQ(policy->rules_for(0, PolicyDirection::ingress)->decide(p).action, PolicyAction::deny);
    EXPECT_EQ(policy->rules_for(0, PolicyDirection::ingress)->decide(p6).action, PolicyAction::deny);
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
    set.add(Address::v4(0xFFFFFFFFu));
    set.add(Address::v4(5));
    set.finish();
    EXPECT_EQ(set.ranges(), 3u);
    EXPECT_TRUE(set.contains(Address::v4(*wire::Ipv4Address::parse("10.0.0.255"))));
    EXPECT_FALSE(set.contains(Address::v4(*wire::Ipv4Address::parse("10.0.1.0"))));
    EXPECT_TRUE(set.contains(Address::v4(0xFFFFFFFFu)));
    EXPECT_FALSE(set.contains(Address::v4(4)));
    AddressSet everything;
    everything.add(*wire::Ipv4Prefix::parse("0.0.0.0/0"));
    everything.finish();
    EXPECT_TRUE(everything.contains(Address::v4(0)));
    EXPECT_TRUE(everything.contains(Address::v4(0xFFFFFFFFu)));
    // IPv4 ranges never hold an IPv6 address, not even the IPv4-mapped one.
    EXPECT_FALSE(everything.contains(Address::of(*wire::Ipv6Address::parse("::ffff:10.0.0.1"))));
    EXPECT_FALSE(everything.contains(Address::of(*wire::Ipv6Address::parse("::"))));
}

TEST(PolicyMatcher, Ipv6AddressSetsMergeAcrossTheHalvesOfTheAddress) {
    const auto v6 = [](const char* text) { return Address::of(*wire::Ipv6Address::parse(text)); };
    AddressSet set;
    // Two /65s make the /64 (a range that ends in the low half's last value, then one that starts
    // at its first); a /127 right after it joins, a /128 one past that does not.
    set.add(*wire::Ipv6Prefix::parse("fd00:0:0:1::/65"));
    set.add(*wire::Ipv6Prefix::parse("fd00:0:0:1:8000::/65"));
    set.add(*wire::Ipv6Prefix::parse("fd00:0:0:2::/127"));
    set.add(*wire::Ipv6Prefix::parse("fd00:0:0:2::3/128"));
    set.add(*wire::Ipv4Prefix::parse("10.0.0.0/8"));
    set.finish();
    EXPECT_EQ(set.ranges(), 3u);  // 10/8; fd00:0:0:1::/64 + fd00:0:0:2::/127; fd00:0:0:2::3
    EXPECT_TRUE(set.contains(v6("fd00:0:0:1::")));
    EXPECT_TRUE(set.contains(v6("fd00:0:0:1:7fff:ffff:ffff:ffff")));
    EXPECT_TRUE(set.contains(v6("fd00:0:0:1:ffff:ffff:ffff:ffff")));
    EXPECT_TRUE(set.contains(v6("fd00:0:0:2::1")));
    EXPECT_FALSE(set.contains(v6("fd00:0:0:2::2")));
    EXPECT_TRUE(set.contains(v6("fd00:0:0:2::3")));
    EXPECT_FALSE(set.contains(v6("fd00:0:0:0:ffff:ffff:ffff:ffff")));
    EXPECT_FALSE(set.contains(v6("fd00:0:0:2::4")));
    EXPECT_TRUE(set.contains(Address::v4(*wire::Ipv4Address::parse("10.1.2.3"))));
    EXPECT_FALSE(set.contains(v6("::a01:203")));  // 10.1.2.3's bits, as IPv6
    AddressSet everything;
    everything.add(*wire::Ipv6Prefix::parse("::/0"));
    everything.add(*wire::Ipv6Prefix::parse("fd00::/8"));
    everything.finish();
    EXPECT_EQ(everything.ranges(), 1u);
    EXPECT_TRUE(everything.contains(v6("::")));
    EXPECT_TRUE(everything.contains(v6("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")));
    EXPECT_FALSE(everything.contains(Address::v4(0)));
}

}  // namespace
}  // namespace andromeda::policy::testing
