// Security groups with NAT (issue 29), through both nodes' pipelines (nat_pipeline_fixture.hpp):
// egress rules see the tenant's own address (before the source NAT); ingress rules see the
// outside's address and the tenant's port (after the reverse translation); the replies of a
// tenant's own flows come back without a rule; a port forward reaches its endpoint only where an
// ingress rule allows it, whether the endpoint is on another node or on the gateway node itself.
#include "unit/dataplane/nat_pipeline_fixture.hpp"

namespace andromeda::testing::natworld {
namespace {

using dataplane::DropReason;
using dataplane::Verdict;
using nat::test::Endpoints;
using nat::test::endpoints;
namespace flag = wire::tcp_flag;

const wire::Ipv4Address kNat = ipv4("198.51.100.1");
const wire::Ipv4Address kRemote = ipv4("203.0.113.7");
const wire::Ipv4Address kBlue10 = ipv4("10.0.0.10");
const wire::Ipv4Address kBlue11 = ipv4("10.0.0.11");

// Blue gets group "web" (ingress tcp/80 from anywhere, egress udp/53 to 198.51.100.0/24 denied);
// 10.0.0.11 (forward tcp 8080 -> :80) is in it, 10.0.0.20 (forward udp 5353 -> :53) in none.
std::string with_groups(std::string text) {
    const std::string groups = R"([[vpc.security_group]]
name = "web"
[[vpc.security_group.rule]]
direction = "ingress"
protocol = "tcp"
ports = [80]
remote_cidrs = ["0.0.0.0/0"]
[[vpc.security_group.rule]]
direction = "egress"
action = "deny"
protocol = "udp"
ports = [53]
remote_cidrs = ["203.0.113.0/24"]
)";
    const auto blue_endpoints = text.find("[[vpc.endpoint]]");
    text.insert(blue_endpoints, groups);
    const std::string port11 = "port = \"tap-blue-11\"\n";
    text.replace(text.find(port11), port11.size(), port11 + "groups = [\"web\"]\n");
    return text;
}

class NatWithSecurityGroups : public NatPipelineTest {
protected:
    NatWithSecurityGroups() : NatPipelineTest("[1024, 65535]", 4096, with_groups) {}
};

TEST_P(NatWithSecurityGroups, AForwardReachesOnlyAnEndpointWhoseIngressRulesAllowIt) {
    // 8080 -> 10.0.0.11:80 (node1): web lets tcp/80 in from anywhere.
    const Bytes in = expect_delivered(from_outside(nat::test::tcp_packet(kRemote, 50000, kNat, 8080, flag::kSyn)),
                                      kBlue11Port, kBlue11Mac);
    EXPECT_EQ(endpoints(in), (Endpoints{kRemote, 50000, kBlue11, 80}));
    // Its reply leaves by the forward (egress allowed, and a reply anyway).
    const Bytes out = expect_on_uplink(
        from_tenant(kBlue11Port, kBlue11Mac, nat::test::tcp_packet(kBlue11, 80, kRemote, 50000, flag::kSyn | flag::kAck)));
    EXPECT_EQ(endpoints(out), (Endpoints{kNat, 8080, kRemote, 50000}));

    // 5353 -> 10.0.0.20:53 on the gateway node: no rule lets it in; dropped there, by the policy.
    const Sent refused = from_outside(nat::test::udp_packet(kRemote, 7000, kNat, 5353));
    EXPECT_EQ(refused.result.verdict, Verdict::drop);
    EXPECT_EQ(refused.result.drop_reason, DropReason::policy_denied);
    EXPECT_EQ(frame_on(refused, kBlue20Port), nullptr);
}

TEST_P(NatWithSecurityGroups, TheRepliesOfATenantsOwnFlowsComeBackWithoutARule) {
    // 10.0.0.10 is in no group: ingress default deny, egress default allow.
    const Bytes out = expect_on_uplink(from_tenant(kBlue10Port, kBlue10Mac, nat::test::udp_packet(kBlue10, 5000, kRemote, 123)));
    ASSERT_FALSE(out.empty());
    const std::uint16_t port = endpoints(out).source_port;
    const Bytes back = expect_delivered(from_outside(nat::test::udp_packet(kRemote, 123, kNat, port)), kBlue10Port, kBlue10Mac);
    EXPECT_EQ(endpoints(back), (Endpoints{kRemote, 123, kBlue10, 5000}));
}

TEST_P(NatWithSecurityGroups, EgressRulesSeeTheTenantsOwnAddressBeforeTranslation) {
    // web's egress deny of udp/53 to 203.0.113.0/24 stops .11 on node1, before the overlay.
    const Sent denied = send(node1_, kBlue11Port, ethernet_around(kGatewayMac, kBlue11Mac,
                                                                  nat::test::udp_packet(kBlue11, 5001, kRemote, 53)));
    EXPECT_EQ(denied.result.verdict, Verdict::drop);
    EXPECT_EQ(denied.result.drop_reason, DropReason::policy_denied);
    EXPECT_TRUE(denied.frames.empty());
    // The same from .10 (no group) leaves.
    expect_on_uplink(from_tenant(kBlue10Port, kBlue10Mac, nat::test::udp_packet(kBlue10, 5001, kRemote, 53)));
}

INSTANTIATE_TEST_SUITE_P(Modes, NatWithSecurityGroups, ::testing::Values(Mode::copy, Mode::in_place, Mode::batch), mode_name);

}  // namespace
}  // namespace andromeda::testing::natworld
