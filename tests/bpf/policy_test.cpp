// Security groups in the kernel (bpf/lib/policy.h) against the pipeline's firewall, frame by
// frame (differential_check.hpp says what agreeing means): blue gets security groups, and random
// TCP, UDP and ICMP frames between its endpoints (tenant frames from node1's, overlay packets
// from node2's; many tuples repeated, replies among them, every TCP flag the firewall tracks) run
// through both sides, the firewall's installs written into andromeda_policy_flows after each, as
// the daemon's thread does. The property: the kernel forwards a frame only where the pipeline
// forwards it to the same place, byte for byte, so it never forwards one the policy denies. Then
// a reload that revokes a rule, and more frames: nothing of a revoked flow is forwarded, though
// its entries are still in the map. And proof that the run is not vacuous: the kernel did carry
// established flows, punted first packets, and a kernel that ignores the policy is caught. The
// same over IPv6 (blue is dual-stack: endpoint .N is fd00:0:0:1::N), through
// andromeda_policy_flows6.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "differential_check.hpp"
#include "support/root.hpp"

namespace andromeda::fast_path_test {
namespace {

// web (.10, .12) takes tcp/80 from app (.11, .20, .30) and udp/53 from .21; app may not send
// udp/9999. Ingress otherwise denied, egress allowed (the defaults once a VPC has groups).
std::string groups(std::uint16_t web_port) {
    return R"([[vpc.security_group]]
name = "web"
[[vpc.security_group.rule]]
direction = "ingress"
protocol = "tcp"
ports = [)" + std::to_string(web_port) +
           R"(]
remote_groups = ["app"]
[[vpc.security_group.rule]]
direction = "ingress"
protocol = "udp"
ports = [53]
remote_cidrs = ["10.0.0.21/32"]
[[vpc.security_group]]
name = "app"
[[vpc.security_group.rule]]
direction = "egress"
action = "deny"
protocol = "udp"
ports = [9999]
priority = 50
)";
}

struct Tuple {
    std::uint32_t from, to;  // blue's endpoints by last octet
    std::uint8_t protocol;
    std::uint16_t sport, dport;
    bool v6 = false;  // between their IPv6 addresses (ICMP: ICMPv6)
};

class PolicyCache : public DifferentialTest {
protected:
    void SetUp() override {
        ANDROMEDA_REQUIRE_ROOT();
        world_ = std::make_unique<World>(GetParam(), fabric_toml(GetParam(), {}, true, groups(80)));
        ASSERT_TRUE(world_->error().empty()) << world_->error();
        // Local endpoints with a device (.10, .11) and node2's (.20, .21), both ways; ports the
        // rules name and others.
        const std::uint32_t ends[] = {10, 11, 20, 21};
        for (const std::uint32_t a : ends)
            for (const std::uint32_t b : ends) {
                if (a == b || (a >= 20 && b >= 20)) continue;  // node2 to node2 never reaches node1
                for (const bool v6 : {false, true}) {
                    for (const std::uint16_t port : {80, 53, 22, 9999})
                        for (const std::uint8_t protocol : {kTcp, kUdp})
                            tuples_.push_back({a, b, protocol, static_cast<std::uint16_t>(40000 + a * 10 + b), port, v6});
                    tuples_.push_back({a, b, v6 ? kIcmpv6 : kIcmp, 0, 0, v6});
                }
            }
    }

    // A frame of a random tuple, or its reply; TCP mostly ACK and PSH ACK, SYN, SYN ACK, FIN, RST.
    Case next(std::mt19937& rng) {
        const Tuple& t = tuples_[rng() % tuples_.size()];
        last_v6_ = t.v6;
        const bool reply = rng() % 3 == 0;
        const std::uint32_t from = reply ? t.to : t.from, to = reply ? t.from : t.to;
        const EndpointDef& src = endpoint("blue", from);
        const EndpointDef& dst = endpoint("blue", to);
        static constexpr std::uint8_t kFlags[] = {0x10, 0x18, 0x10, 0x18, 0x02, 0x12, 0x11, 0x04};
        const auto shape = [&](Ipv4Frame f) {
            f.protocol = t.protocol;
            f.src_port = reply ? t.dport : t.sport;
            f.dst_port = reply ? t.sport : t.dport;
            f.tcp_flags = kFlags[rng() % std::size(kFlags)];
            f.icmp_type = reply ? 0 : 8;
            f.payload = 20 + rng() % 600;
            f.total_length.reset();
            return f;
        };
        const std::string name = (t.v6 ? ip6_text(ip6_of(from)) : ip_text(src.ip)) + ":" +
                                 std::to_string(reply ? t.dport : t.sport) + " -> " +
                                 (t.v6 ? ip6_text(ip6_of(to)) : ip_text(dst.ip)) + ":" +
                                 std::to_string(reply ? t.sport : t.dport) + " proto " + std::to_string(t.protocol);
        if (t.v6) {
            Ipv6Spec s = tenant6_spec("blue", from, to, 20 + rng() % 600, t.protocol);
            s.src_port = reply ? t.dport : t.sport;
            s.dst_port = reply ? t.sport : t.dport;
            s.tcp_flags = kFlags[rng() % std::size(kFlags)];
            s.icmp_type = reply ? 129 : 128;
            if (src.node == "node1") return {name, src.port, ipv6(s), ""};
            s.dst_mac = dst.mac;
            return {name + " (overlay)", kUnderlay,
                    overlay(overlay_from(GetParam(), src.node, 100, ipv6(s))), ""};
        }
        if (src.node == "node1") return {name, src.port, ipv4(shape(tenant_spec("blue", from, dst.ip))), ""};
        Ipv4Frame inner = shape(frame_spec(src.mac, src.ip, dst.mac, dst.ip, 100, t.protocol));
        return {name + " (overlay)", kUnderlay, overlay(overlay_from(GetParam(), src.node, 100, ipv4(inner))), ""};
    }

    // `n` frames, the firewall's installs written into the kernel after each.
    Tally run(std::mt19937& rng, int n, const std::string& context) {
        Tally tally;
        for (int i = 0; i < n; ++i) {
            Case c = next(rng);
            c.name += " #" + std::to_string(i);
            const int carried_before = carried(tally);
            run_case(*world_, c, tally, context);
            if (last_v6_ && carried(tally) > carried_before) ++ipv6_carried_;
            installs_ += world_->apply_policy_changes();
        }
        EXPECT_EQ(tally.failures, 0) << context << "\n" << tally.report();
        std::printf("%s (%s):\n%s", context.c_str(), to_string(GetParam()), tally.report().c_str());
        return tally;
    }

    static int carried(const Tally& t) { return t.count("encap") + t.count("local") + t.count("fastpath"); }

    std::vector<Tuple> tuples_;
    bool last_v6_ = false;
    std::size_t ipv6_carried_ = 0;  // IPv6 frames the kernel forwarded
    std::size_t installs_ = 0;
};

TEST_P(PolicyCache, TheKernelForwardsOnlyWhatThePipelineAllowedAndARevokedRuleStopsItsFlows) {
    const std::uint32_t seed = seed_for(2029);
    std::mt19937 rng(seed);
    const Tally before = run(rng, 3000, "seed " + std::to_string(seed));
    // Not vacuous: established flows went through the kernel, first packets to the pipeline.
    EXPECT_GT(carried(before), 300) << before.report();
    EXPECT_GT(before.count("punt_policy_no_flow"), 20) << before.report();
    EXPECT_GT(before.count("punt_policy_control"), 20) << before.report();
    EXPECT_GT(installs_, 20u);
    // ... IPv6 among them: the kernel carried IPv6 flows the pipeline had allowed.
    EXPECT_GT(ipv6_carried_, 100u) << before.report();

    // web's tcp rule moves from 80 to 8080: app's open connections to web:80 are revoked, and the
    // kernel, whose entries for them are still there, must not carry another of their frames.
    ASSERT_TRUE(world_->reload(fabric_toml(GetParam(), {}, true, groups(8080))));
    const Tally after = run(rng, 2000, "after the reload, seed " + std::to_string(seed));
    EXPECT_GT(carried(after), 100) << after.report();
    EXPECT_GT(world_->firewall().counters().revoked, 0u);
}

// The comparison is not blind to a kernel that ignores the policy: with blue's POLICY flag cleared
// in andromeda_vnis (or a cached flow's generation made current), a frame web's ingress denies is
// forwarded by the kernel, and the check reports it.
TEST_P(PolicyCache, AKernelThatIgnoresThePolicyIsCaught) {
    World& w = *world_;
    const int vnis = World::fd(w.skel().maps.andromeda_vnis);
    const __u32 blue_vni = 100;
    const std::uint32_t app = w.tenant(endpoint("blue", 11).port);
    // app -> web:22, denied: over IPv4 and over IPv6.
    Ipv4Frame ssh = tenant_spec("blue", 11, endpoint("blue", 10).ip, 100, kTcp);
    ssh.dst_port = 22;
    ssh.tcp_flags = 0x10;
    Ipv6Spec ssh6 = tenant6_spec("blue", 11, 10, 40, kTcp);
    ssh6.dst_port = 22;
    for (const Bytes& frame : {ipv4(ssh), ipv6(ssh6)}) {
        const auto problems = [&] {
            const TenantBpf b = w.run_tenant(app, frame);
            return check_tenant(frame, b, w.run_pipeline(app, frame), w.underlay());
        };
        EXPECT_EQ(problems(), std::vector<std::string>{});
        EXPECT_EQ(tenant_outcome(w.run_tenant(app, frame), frame).name, "punt_policy_no_flow");
        {
            const auto off = MapEntryOverride::edited<andromeda_vni>(
                vnis, blue_vni, [](andromeda_vni& v) { v.flags &= static_cast<__u8>(~ANDROMEDA_VNI_F_POLICY); });
            ASSERT_EQ(off->error(), "");
            EXPECT_EQ(tenant_outcome(w.run_tenant(app, frame), frame).name, "local");
            EXPECT_EQ(problems().size(), 1u);
        }
        EXPECT_EQ(problems(), std::vector<std::string>{});
    }
}

ANDROMEDA_FOR_BOTH_ENCAPSULATIONS(PolicyCache);

}  // namespace
}  // namespace andromeda::fast_path_test
