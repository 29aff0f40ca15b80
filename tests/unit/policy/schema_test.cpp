// The security-group schema: what loads, and every error with its file, line, key and remedy.
#include <gtest/gtest.h>

#include "policy/compiled_policy.hpp"
#include "policy_fabric.hpp"

namespace andromeda::policy::testing {
namespace {

std::vector<std::string> errors_of(const std::string& text) {
    const fabric::LoadResult result = fabric::load_fabric_string(text, "t.toml");
    std::vector<std::string> messages;
    for (const auto& e : result.errors) messages.push_back(e.to_string());
    return messages;
}

const std::string kWebAndApp = R"(
[[vpc.security_group]]
name = "web"
[[vpc.security_group.rule]]
direction = "ingress"
protocol = "tcp"
ports = [80, "8000-8099"]
remote_groups = ["app"]
priority = 100
description = "web from app"
[[vpc.security_group.rule]]
direction = "ingress"
action = "deny"
protocol = "tcp"
ports = [80]
remote_cidrs = ["10.0.0.0/24"]
priority = 200
[[vpc.security_group]]
name = "app"
)";

TEST(PolicySchema, GroupsRulesAndMembershipsLoad) {
    const auto snapshot = load(blue_fabric(kWebAndApp, {R"(["web"])", R"(["app", "web"])"}));
    const fabric::Vpc& vpc = snapshot->vpcs()[0];
    ASSERT_TRUE(vpc.firewall());
    EXPECT_EQ(vpc.default_action(fabric::PolicyDirection::ingress), fabric::PolicyAction::deny);
    EXPECT_EQ(vpc.default_action(fabric::PolicyDirection::egress), fabric::PolicyAction::allow);
    ASSERT_EQ(vpc.security_groups.size(), 2u);
    const fabric::SecurityRule& r = vpc.security_groups[0].rules[0];
    EXPECT_EQ(r.protocol, fabric::PolicyProtocol::tcp);
    EXPECT_EQ(r.ports, (std::vector<fabric::PortRange>{{80, 80}, {8000, 8099}}));
    EXPECT_EQ(r.remote_groups, std::vector<std::string>{"app"});
    EXPECT_EQ(r.priority, 100u);
    EXPECT_EQ(r.description, "web from app");
    EXPECT_EQ(vpc.security_groups[0].rules[1].action, fabric::PolicyAction::deny);
    const fabric::Endpoint* e = snapshot->find_endpoint(100, *wire::Ipv4Address::parse("10.0.0.11"));
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->groups, (std::vector<std::string>{"app", "web"}));
}

TEST(PolicySchema, AVpcWithoutGroupsOrDefaultsIsOpen) {
    const auto snapshot = load(blue_fabric(""));
    EXPECT_FALSE(snapshot->vpcs()[0].firewall());
    const auto defaulted = load(blue_fabric("default_ingress = \"allow\"\n"));
    EXPECT_TRUE(defaulted->vpcs()[0].firewall());
    EXPECT_EQ(defaulted->vpcs()[0].default_action(fabric::PolicyDirection::ingress), fabric::PolicyAction::allow);
}

TEST(PolicySchema, EveryMistakeIsReportedWithItsLine) {
    const std::string groups = R"(default_egress = "drop"
[[vpc.security_group]]
name = "web"
[[vpc.security_group.rule]]
direction = "inbound"
protocol = "sctp"
[[vpc.security_group.rule]]
direction = "ingress"
protocol = "icmp"
ports = [80]
[[vpc.security_group.rule]]
direction = "egress"
protocol = "tcp"
ports = ["90-80", 70000]
icmp_code = 3
[[vpc.security_group.rule]]
direction = "ingress"
remote_groups = ["db"]
remote_cidrs = ["10.0.0.0/33"]
priority = 0
[[vpc.security_group]]
name = "web"
)";
    EXPECT_EQ(errors_of(blue_fabric(groups, {R"(["web", "cache"])"})),
              (std::vector<std::string>{
                  "t.toml:14: vpc[0].default_egress: \"drop\" is not an action; expected \"allow\" or \"deny\"",
                  "t.toml:18: vpc[0].security_group[0].rule[0].direction: \"inbound\" is not a direction; expected "
                  "\"ingress\" or \"egress\"",
                  "t.toml:19: vpc[0].security_group[0].rule[0].protocol: \"sctp\" is not a protocol a rule can match; "
                  "expected \"tcp\", \"udp\", \"icmp\", \"icmpv6\" or \"any\"",
                  "t.toml:23: vpc[0].security_group[0].rule[1].ports: ports with protocol \"icmp\"; ports need protocol "
                  "= \"tcp\" or \"udp\" (ICMP has icmp_type and icmp_code)",
                  "t.toml:27: vpc[0].security_group[0].rule[2].ports: \"90-80\" is not a port or port range; a port "
                  "0-65535 or \"first-last\" with first <= last, e.g. ports = [22, \"8000-8099\"]",
                  "t.toml:27: vpc[0].security_group[0].rule[2].ports: 70000 is not a port or port range; a port "
                  "0-65535 or \"first-last\" with first <= last, e.g. ports = [22, \"8000-8099\"]",
                  "t.toml:28: vpc[0].security_group[0].rule[2].icmp_code: icmp_code without protocol = \"icmp\" or "
                  "\"icmpv6\"; add protocol = \"icmp\" (IPv4) or \"icmpv6\" (IPv6), or remove it",
                  "t.toml:32: vpc[0].security_group[0].rule[3].remote_cidrs: \"10.0.0.0/33\" is not a CIDR prefix; "
                  "expected a network address and prefix length such as \"10.0.0.0/24\"",
                  "t.toml:33: vpc[0].security_group[0].rule[3].priority: 0 is out of range; the lower number decides "
                  "first; valid is 1 to 65535",
                  "t.toml:35: vpc[0].security_group[1].name: security group \"web\" is defined twice in VPC \"blue\" "
                  "(first at line 15); give each group of a VPC its own name",
                  "t.toml:42: vpc[0].endpoint[0].groups: no security group \"cache\" in VPC \"blue\"; name one of \"web\"",
              }));
}

TEST(PolicySchema, AReferenceToAnUnknownGroupNamesTheKnownOnes) {
    const std::string groups = R"([[vpc.security_group]]
name = "web"
[[vpc.security_group.rule]]
direction = "ingress"
remote_groups = ["db"]
)";
    EXPECT_EQ(errors_of(blue_fabric(groups)),
              std::vector<std::string>{"t.toml:16: vpc[0].security_group[0].rule[0].remote_groups: no security group "
                                       "\"db\" in VPC \"blue\"; name one of this VPC's groups: \"web\""});
}

TEST(PolicySchema, ARuleShadowedByOneThatDecidesFirstIsDead) {
    const std::string groups = R"([[vpc.security_group]]
name = "web"
[[vpc.security_group.rule]]
direction = "ingress"
protocol = "tcp"
remote_cidrs = ["10.0.0.0/8"]
priority = 100
[[vpc.security_group.rule]]
direction = "ingress"
action = "deny"
protocol = "tcp"
ports = ["20-30"]
remote_cidrs = ["10.1.0.0/16"]
priority = 200
)";
    EXPECT_EQ(errors_of(blue_fabric(groups)),
              std::vector<std::string>{
                  "t.toml:21: vpc[0].security_group[0].rule[1]: can never decide: rule[0] (line 16, priority 100, "
                  "allow) matches every packet it does and decides first; give it a lower priority number than 100, "
                  "narrow rule[0], or remove it"});
    // Decides first instead: fine.
    EXPECT_TRUE(errors_of(blue_fabric(std::string(groups).replace(groups.rfind("200"), 3, "50"))).empty());
}

TEST(PolicySchema, OverlappingRulesWithOnePriorityAndTwoActionsAreAmbiguous) {
    const std::string groups = R"([[vpc.security_group]]
name = "web"
[[vpc.security_group.rule]]
direction = "ingress"
protocol = "tcp"
ports = ["80-90"]
priority = 100
[[vpc.security_group.rule]]
direction = "ingress"
action = "deny"
protocol = "tcp"
ports = ["85-95"]
priority = 100
)";
    EXPECT_EQ(errors_of(blue_fabric(groups)),
              std::vector<std::string>{
                  "t.toml:21: vpc[0].security_group[0].rule[1]: priority 100 is also rule[0] (line 16, priority 100, "
                  "allow)'s, with the other action, and the two can match the same packet; give one of them another "
                  "priority: the lower number decides first"});
    // Ports that never meet: no ambiguity.
    EXPECT_TRUE(errors_of(blue_fabric(std::string(groups).replace(groups.find("85-95"), 5, "91-95"))).empty());
}

// IPv6 (docs/security-groups.md, "IPv6"): remote_cidrs mixes both families, icmpv6 is a protocol
// of its own, and a rule that could match neither family is refused.
TEST(PolicySchema, Ipv6CidrsAndIcmpv6Load) {
    const auto snapshot = load(blue_fabric(R"([[vpc.security_group]]
name = "web"
[[vpc.security_group.rule]]
direction = "ingress"
protocol = "tcp"
ports = [443]
remote_cidrs = ["10.0.0.0/24", "fd00:0:0:100::/64", "::/0"]
[[vpc.security_group.rule]]
direction = "ingress"
protocol = "icmpv6"
icmp_type = 128
icmp_code = 0
priority = 90
)"));
    const auto& rules = snapshot->vpcs()[0].security_groups[0].rules;
    ASSERT_EQ(rules.size(), 2u);
    EXPECT_EQ(rules[0].remote_cidrs.size(), 1u);
    ASSERT_EQ(rules[0].remote_cidrs6.size(), 2u);
    EXPECT_EQ(rules[0].remote_cidrs6[0], *wire::Ipv6Prefix::parse("fd00:0:0:100::/64"));
    EXPECT_EQ(rules[0].remote_cidrs6[1].length(), 0u);
    EXPECT_EQ(describe(rules[0]), "ingress allow tcp 443 from 10.0.0.0/24, fd00:0:0:100::/64, ::/0 (priority 1000)");
    EXPECT_EQ(rules[1].protocol, fabric::PolicyProtocol::icmpv6);
    EXPECT_EQ(rules[1].icmp_type, 128);
    EXPECT_EQ(describe(rules[1]), "ingress allow icmpv6 type 128 code 0 from any (priority 90)");
}

TEST(PolicySchema, Ipv6MistakesAreReportedWithTheirLine) {
    const std::string groups = R"([[vpc.security_group]]
name = "web"
[[vpc.security_group.rule]]
direction = "ingress"
remote_cidrs = ["fd00:0:0:100::1/64", "fd00::/129", "fd00:::/8"]
[[vpc.security_group.rule]]
direction = "ingress"
protocol = "icmp"
remote_cidrs = ["fd00::/8"]
[[vpc.security_group.rule]]
direction = "egress"
protocol = "icmpv6"
remote_cidrs = ["10.0.0.0/8"]
)";
    EXPECT_EQ(errors_of(blue_fabric(groups)),
              (std::vector<std::string>{
                  "t.toml:18: vpc[0].security_group[0].rule[0].remote_cidrs: \"fd00:0:0:100::1/64\" has host bits "
                  "set; did you mean \"fd00:0:0:100::/64\"?",
                  "t.toml:18: vpc[0].security_group[0].rule[0].remote_cidrs: \"fd00::/129\" is not a CIDR prefix; "
                  "expected a network address and prefix length such as \"10.0.0.0/24\" or \"fd00::/64\"",
                  "t.toml:18: vpc[0].security_group[0].rule[0].remote_cidrs: \"fd00:::/8\" is not a CIDR prefix; "
                  "expected a network address and prefix length such as \"10.0.0.0/24\" or \"fd00::/64\"",
                  "t.toml:22: vpc[0].security_group[0].rule[1].remote_cidrs: protocol \"icmp\" with only IPv6 "
                  "remote_cidrs can match no packet; icmp is IPv4's: use protocol = \"icmpv6\" for IPv6 peers, or "
                  "give IPv4 CIDRs",
                  "t.toml:26: vpc[0].security_group[0].rule[2].remote_cidrs: protocol \"icmpv6\" with only IPv4 "
                  "remote_cidrs can match no packet; icmpv6 is IPv6's: use protocol = \"icmp\" for IPv4 peers, or "
                  "give IPv6 CIDRs"}));
}

TEST(PolicySchema, Ipv6PrefixesShadowAndOverlapByTheirFamily) {
    const std::string groups = R"([[vpc.security_group]]
name = "web"
[[vpc.security_group.rule]]
direction = "ingress"
protocol = "tcp"
remote_cidrs = ["fd00::/16"]
priority = 100
[[vpc.security_group.rule]]
direction = "ingress"
action = "deny"
protocol = "tcp"
ports = [22]
remote_cidrs = ["fd00:0:0:100::/64"]
priority = 200
)";
    EXPECT_EQ(errors_of(blue_fabric(groups)),
              std::vector<std::string>{
                  "t.toml:21: vpc[0].security_group[0].rule[1]: can never decide: rule[0] (line 16, priority 100, "
                  "allow) matches every packet it does and decides first; give it a lower priority number than 100, "
                  "narrow rule[0], or remove it"});
    // An IPv4 prefix never covers an IPv6 one, nor meets it at one priority.
    std::string other_family = groups;
    other_family.replace(other_family.find("fd00::/16"), 9, "0.0.0.0/0");
    EXPECT_TRUE(errors_of(blue_fabric(other_family)).empty());
    other_family.replace(other_family.rfind("200"), 3, "100");
    EXPECT_TRUE(errors_of(blue_fabric(other_family)).empty());
    // Two IPv6 prefixes that meet, at one priority with two actions: ambiguous.
    std::string same_priority = groups;
    same_priority.replace(same_priority.rfind("200"), 3, "100");
    EXPECT_EQ(errors_of(blue_fabric(same_priority)).size(), 1u);
}

}  // namespace
}  // namespace andromeda::policy::testing
