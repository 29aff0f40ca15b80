// The stateful firewall: flows opened by the rules, replies and related ICMP errors without
// rules, revocation by a new policy, fragments, expiry and the table's bound.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string_view>
#include <thread>

#include "policy/firewall.hpp"
#include "policy_fabric.hpp"
#include "wire/bytes.hpp"

namespace andromeda::policy::testing {
namespace {

using Bytes = std::vector<std::uint8_t>;
using fabric::PolicyProtocol;
using fabric::SecurityGroup;
using fabric::SecurityRule;

// "10.0.0.10" or "fd00:0:0:100::10".
Address ip(const char* text) {
    if (std::string_view(text).find(':') != std::string_view::npos)
        return Address::of(*wire::Ipv6Address::parse(text));
    return Address::v4(*wire::Ipv4Address::parse(text));
}

struct Packet {
    Address src, dst;  // IPv6 addresses build an IPv6 packet (ICMP: ICMPv6)
    std::uint8_t protocol = 6;
    std::uint16_t sport = 40000, dport = 80;
    std::uint8_t tcp_flags = 0x02;  // SYN
    std::uint8_t icmp_type = 8, icmp_code = 0;
    std::uint16_t icmp_id = 7;
    std::uint32_t ip_id = 1;  // IPv6: a fragment header is added when fragmented
    bool more_fragments = false;
    std::uint16_t fragment_offset = 0;
    Bytes quote;  // ICMP errors: the packet they are about
};

Packet pkt(Address src, Address dst, std::uint8_t protocol = 6, std::uint16_t sport = 40000,
           std::uint16_t dport = 80) {
    Packet p;
    p.src = src;
    p.dst = dst;
    p.protocol = protocol;
    p.sport = sport;
    p.dport = dport;
    return p;
}

Bytes build(const Packet& p) {
    Bytes l4;
    if (p.fragment_offset != 0) {
        l4.assign(16, 0xab);
    } else if (p.protocol == 6) {
        l4.assign(20, 0);
        wire::store_be16(&l4[0], p.sport);
        wire::store_be16(&l4[2], p.dport);
        l4[12] = 0x50;
        l4[13] = p.tcp_flags;
    } else if (p.protocol == 17) {
        l4.assign(8, 0);
        wire::store_be16(&l4[0], p.sport);
        wire::store_be16(&l4[2], p.dport);
        wire::store_be16(&l4[4], 8);
    } else if (p.protocol == 1 || p.protocol == 58) {
        l4.assign(8, 0);
        l4[0] = p.icmp_type;
        l4[1] = p.icmp_code;
        wire::store_be16(&l4[4], p.icmp_id);
        for (const std::uint8_t b : p.quote) l4.push_back(b);
    }
    if (p.src.v6) {
        const bool fragmented = p.more_fragments || p.fragment_offset != 0;
        Bytes out(40 + (fragmented ? 8 : 0), 0);
        out[0] = 0x60;
        out[6] = fragmented ? 44 : p.protocol;
        out[7] = 64;
        const auto put = [&](std::size_t at, const Address& a) {
            const auto bytes = a.v6_value().bytes();
            std::copy(bytes.begin(), bytes.end(), out.begin() + static_cast<std::ptrdiff_t>(at));
        };
        put(8, p.src);
        put(24, p.dst);
        if (fragmented) {
            out[40] = p.protocol;
            wire::store_be16(&out[42], static_cast<std::uint16_t>(p.fragment_offset << 3 | (p.more_fragments ? 1 : 0)));
            wire::store_be32(&out[44], p.ip_id);
        }
        out.insert(out.end(), l4.begin(), l4.end());
        wire::store_be16(&out[4], static_cast<std::uint16_t>(out.size() - 40));
        return out;
    }
    Bytes out(20 + l4.size(), 0);
    out[0] = 0x45;
    wire::store_be16(&out[2], static_cast<std::uint16_t>(20 + l4.size()));
    wire::store_be16(&out[4], static_cast<std::uint16_t>(p.ip_id));
    wire::store_be16(&out[6], static_cast<std::uint16_t>((p.more_fragments ? 0x2000 : 0) | p.fragment_offset));
    out[8] = 64;
    out[9] = p.protocol;
    wire::store_be32(&out[12], p.src.v4_value());
    wire::store_be32(&out[16], p.dst.v4_value());
    for (std::size_t i = 0; i < l4.size(); ++i) out[20 + i] = l4[i];
    return out;
}

Packet reply_of(Packet p) {
    std::swap(p.src, p.dst);
    std::swap(p.sport, p.dport);
    p.tcp_flags = 0x12;  // SYN ACK
    if (p.protocol == 1) p.icmp_type = 0;
    if (p.protocol == 58) p.icmp_type = 129;
    return p;
}

// web (.10, .11 on node1) takes tcp/80 from app (.20) and tcp/22 from 10.0.0.21/32; ingress
// otherwise denied, egress allowed (the defaults).
std::vector<SecurityGroup> web_app_ssh() {
    SecurityGroup web{"web", {}};
    SecurityRule http;
    http.protocol = PolicyProtocol::tcp;
    http.ports = {{80, 80}};
    http.remote_groups = {"app"};
    http.priority = 100;
    SecurityRule ssh;
    ssh.protocol = PolicyProtocol::tcp;
    ssh.ports = {{22, 22}};
    ssh.remote_cidrs = {*wire::Ipv4Prefix::parse("10.0.0.21/32")};
    ssh.priority = 110;
    web.rules = {http, ssh};
    return {web, SecurityGroup{"app", {}}};
}

class FirewallTest : public ::testing::Test {
protected:
    FirewallTest() : firewall_(settings(), [this] { return now_; }) {
        base_ = load(blue_fabric(""));
        set_policy(web_app_ssh(), {{"web"}, {"web"}, {"app"}, {}});
    }
    static FirewallSettings settings() {
        FirewallSettings s;
        s.max_flows = 64;
        return s;
    }
    void set_policy(std::vector<SecurityGroup> groups, std::vector<std::vector<std::string>> members) {
        snapshot_ = with_policy(*base_, std::move(groups), members, ++generation_);
        policy_ = firewall_.policy_for(*snapshot_);
    }
    // By either of its addresses.
    const fabric::Endpoint& endpoint(const char* address) {
        const Address a = ip(address);
        for (const fabric::Endpoint& e : snapshot_->endpoints())
            if (a == Address::v4(e.ip) || (e.ipv6 && a == Address::of(*e.ipv6))) return e;
        throw std::logic_error(std::string("no endpoint ") + address);
    }
    // The packet as `at` meets it: ingress when it is the destination, egress when the source.
    CheckResult check(const char* at, const Packet& p) {
        const fabric::Endpoint& e = endpoint(at);
        const PolicyDirection d = p.dst == ip(at) ? PolicyDirection::ingress : PolicyDirection::egress;
        const Bytes bytes = build(p);
        return firewall_.check(*policy_, e, d, bytes);
    }
    const RuleInfo& rule(std::uint32_t id) const { return policy_->rules()[id]; }

    std::uint64_t now_ = 1'000'000'000;
    std::uint64_t generation_ = 0;
    Firewall firewall_;
    std::shared_ptr<const fabric::FabricSnapshot> base_, snapshot_;
    std::shared_ptr<const CompiledPolicy> policy_;
};

TEST_F(FirewallTest, AnAllowedConnectionsRepliesPassWithoutARule) {
    const Packet syn = pkt(ip("10.0.0.20"), ip("10.0.0.10"));
    // At the sender (.20: egress allowed by default) and at the receiver (web: allowed from app).
    EXPECT_EQ(check("10.0.0.20", syn).outcome, Outcome::opened);
    const CheckResult in = check("10.0.0.10", syn);
    EXPECT_EQ(in.outcome, Outcome::opened);
    EXPECT_EQ(rule(in.rule).group, "web");
    EXPECT_EQ(rule(in.rule).index, 0);
    // The replies: egress at web, ingress at app (whose ingress default is deny).
    EXPECT_EQ(check("10.0.0.10", reply_of(syn)).outcome, Outcome::reply);
    EXPECT_EQ(check("10.0.0.20", reply_of(syn)).outcome, Outcome::reply);
    EXPECT_EQ(check("10.0.0.20", syn).outcome, Outcome::established);
    EXPECT_EQ(rule(in.rule).hits->load(), 1u);
}

TEST_F(FirewallTest, WhatNoRuleAllowsIsDeniedByTheDefaultAndCounted) {
    // app -> web on 443: no rule; .21 -> web on 80: not in app.
    const CheckResult https = check("10.0.0.10", pkt(ip("10.0.0.20"), ip("10.0.0.10"), 6, 40000, 443));
    EXPECT_EQ(https.outcome, Outcome::denied);
    EXPECT_EQ(rule(https.rule).group, "");
    EXPECT_EQ(rule(https.rule).text, "ingress default deny");
    EXPECT_EQ(check("10.0.0.10", pkt(ip("10.0.0.21"), ip("10.0.0.10"))).outcome, Outcome::denied);
    EXPECT_EQ(rule(https.rule).hits->load(), 2u);
    // ssh from the one CIDR it names.
    EXPECT_EQ(check("10.0.0.10", pkt(ip("10.0.0.21"), ip("10.0.0.10"), 6, 40000, 22)).outcome, Outcome::opened);
    EXPECT_EQ(check("10.0.0.10", pkt(ip("10.0.0.20"), ip("10.0.0.10"), 6, 40000, 22)).outcome, Outcome::denied);
    // A denied flow stays unknown: the reply of a denied SYN is not a reply.
    EXPECT_EQ(check("10.0.0.20", reply_of(pkt(ip("10.0.0.20"), ip("10.0.0.10"), 6, 40000, 443))).outcome,
              Outcome::denied);
}

TEST_F(FirewallTest, EchoRepliesPassOnlyForEchoRequestsSent) {
    Packet ping = pkt(ip("10.0.0.10"), ip("10.0.0.20"), 1);
    EXPECT_EQ(check("10.0.0.10", ping).outcome, Outcome::opened);       // egress: allowed
    EXPECT_EQ(check("10.0.0.10", reply_of(ping)).outcome, Outcome::reply);  // ingress: the reply
    Packet other = reply_of(ping);
    other.icmp_id = 8;  // another identifier: no request went out with it
    EXPECT_EQ(check("10.0.0.10", other).outcome, Outcome::denied);
}

TEST_F(FirewallTest, IcmpErrorsAboutAnAllowedFlowAreRelated) {
    const Packet query = pkt(ip("10.0.0.10"), ip("10.0.0.20"), 17, 5353, 53);
    EXPECT_EQ(check("10.0.0.10", query).outcome, Outcome::opened);
    Packet unreachable = pkt(ip("10.0.0.20"), ip("10.0.0.10"), 1);
    unreachable.icmp_type = 3;
    unreachable.icmp_code = 3;
    unreachable.quote = build(query);
    unreachable.quote.resize(28);
    EXPECT_EQ(check("10.0.0.10", unreachable).outcome, Outcome::related);
    // About a flow never opened: judged as ICMP, and the ingress default denies it.
    Packet forged = unreachable;
    forged.quote = build(pkt(ip("10.0.0.10"), ip("10.0.0.20"), 17, 5353, 54));
    EXPECT_EQ(check("10.0.0.10", forged).outcome, Outcome::denied);
}

TEST_F(FirewallTest, ANewPolicyRevokesOpenConnectionsItNoLongerAllows) {
    const Packet ssh = pkt(ip("10.0.0.21"), ip("10.0.0.10"), 6, 40000, 22);
    const Packet http = pkt(ip("10.0.0.20"), ip("10.0.0.10"), 6, 40001, 80);
    ASSERT_EQ(check("10.0.0.10", ssh).outcome, Outcome::opened);
    ASSERT_EQ(check("10.0.0.10", http).outcome, Outcome::opened);
    auto groups = web_app_ssh();
    groups[0].rules.pop_back();  // ssh revoked
    set_policy(groups, {{"web"}, {"web"}, {"app"}, {}});
    Packet ssh_data = ssh;
    ssh_data.tcp_flags = 0x10;
    EXPECT_EQ(check("10.0.0.10", ssh_data).outcome, Outcome::revoked);
    EXPECT_EQ(check("10.0.0.10", ssh_data).outcome, Outcome::denied);  // and stays closed
    // web's own segments to the client are egress, which the default still allows; they open
    // nothing (not SYNs), so the client's stay denied rather than pass as their replies.
    Packet web_ack = reply_of(ssh);
    web_ack.tcp_flags = 0x10;
    EXPECT_EQ(check("10.0.0.10", web_ack).outcome, Outcome::unopened);
    EXPECT_EQ(check("10.0.0.10", ssh_data).outcome, Outcome::denied);
    // The connection the new policy still allows carries on, its replies included.
    EXPECT_EQ(check("10.0.0.10", reply_of(http)).outcome, Outcome::reply);
    EXPECT_EQ(check("10.0.0.10", http).outcome, Outcome::established);
    EXPECT_EQ(firewall_.counters().revoked, 1u);
}

// A connection open before its VPC had groups (or before this daemon started) has no flow: its
// next segments are judged by the rules alone, whichever side sends first. Only a SYN without ACK
// opens a TCP flow.
TEST_F(FirewallTest, OnlyASynOpensATcpFlowAndMidConnectionSegmentsMeetTheRules) {
    // .20 -> web:22, which web's rules refuse (ssh only from .21). web's ACK happens to go first:
    // egress allows it, and it opens nothing.
    Packet data = pkt(ip("10.0.0.20"), ip("10.0.0.10"), 6, 40000, 22);
    data.tcp_flags = 0x18;  // PSH ACK
    Packet ack = reply_of(data);
    ack.tcp_flags = 0x10;
    const CheckResult web_ack = check("10.0.0.10", ack);
    EXPECT_TRUE(web_ack.allowed);
    EXPECT_EQ(web_ack.outcome, Outcome::unopened);
    EXPECT_EQ(check("10.0.0.10", data).outcome, Outcome::denied) << "not a reply of web's ACK";
    EXPECT_EQ(firewall_.counters().flows, 0u);
    // What the rules allow passes, packet by packet, without a flow: http from app, mid-connection.
    Packet http = pkt(ip("10.0.0.20"), ip("10.0.0.10"), 6, 40001, 80);
    http.tcp_flags = 0x10;
    EXPECT_EQ(check("10.0.0.10", http).outcome, Outcome::unopened);
    EXPECT_EQ(check("10.0.0.10", http).outcome, Outcome::unopened);
    Packet synack = reply_of(pkt(ip("10.0.0.20"), ip("10.0.0.10"), 6, 40002, 80));  // SYN ACK: not a first segment
    EXPECT_EQ(check("10.0.0.10", synack).outcome, Outcome::unopened);
    Packet v6 = pkt(ip("fd00:0:0:100::20"), ip("fd00:0:0:100::10"), 6, 40003, 80);
    v6.tcp_flags = 0x10;
    EXPECT_EQ(check("fd00:0:0:100::10", v6).outcome, Outcome::unopened);
    EXPECT_EQ(firewall_.counters().flows, 0u);
    EXPECT_EQ(firewall_.counters().unopened, 5u);
    // A SYN opens, and the rule counts the flow it opened, not the segments that opened nothing.
    const CheckResult syn = check("10.0.0.10", pkt(ip("10.0.0.20"), ip("10.0.0.10"), 6, 40004, 80));
    EXPECT_EQ(syn.outcome, Outcome::opened);
    EXPECT_EQ(rule(syn.rule).hits->load(), 1u);
    EXPECT_EQ(firewall_.counters().flows, 1u);
}

TEST_F(FirewallTest, WorkersStillOnThePreviousSnapshotShareItsPolicyAndFlowsStayJudged) {
    const auto old_snapshot = snapshot_;
    const auto old_policy = policy_;
    const Packet syn = pkt(ip("10.0.0.20"), ip("10.0.0.10"));
    ASSERT_EQ(check("10.0.0.10", syn).outcome, Outcome::opened);
    set_policy(web_app_ssh(), {{"web"}, {"web"}, {"app"}, {}});  // the same rules, a new generation
    EXPECT_EQ(firewall_.policy_for(*old_snapshot), old_policy) << "recompiled for a worker not yet moved";
    EXPECT_EQ(firewall_.policy_for(*snapshot_), policy_);
    // Judged again once under the new policy, then established again.
    EXPECT_EQ(check("10.0.0.10", syn).outcome, Outcome::established);
    EXPECT_EQ(check("10.0.0.10", syn).outcome, Outcome::established);
    EXPECT_EQ(firewall_.counters().revoked, 0u);
}

TEST_F(FirewallTest, NonFirstFragmentsFollowTheirFirstFragment) {
    Packet first = pkt(ip("10.0.0.20"), ip("10.0.0.10"), 6, 40000, 80);
    first.ip_id = 99;
    first.more_fragments = true;
    ASSERT_EQ(check("10.0.0.10", first).outcome, Outcome::opened);
    Packet rest = first;
    rest.more_fragments = false;
    rest.fragment_offset = 4;
    EXPECT_EQ(check("10.0.0.10", rest).outcome, Outcome::fragment);
    Packet stray = rest;
    stray.ip_id = 100;
    EXPECT_EQ(check("10.0.0.10", stray).outcome, Outcome::fragment_unknown);
    // Of a denied first fragment: unknown too.
    Packet denied = first;
    denied.ip_id = 101;
    denied.dport = 443;
    EXPECT_EQ(check("10.0.0.10", denied).outcome, Outcome::denied);
    denied.fragment_offset = 4;
    EXPECT_EQ(check("10.0.0.10", denied).outcome, Outcome::fragment_unknown);
}

TEST_F(FirewallTest, IdleFlowsExpireAndClosedOnesSooner) {
    const Packet query = pkt(ip("10.0.0.10"), ip("10.0.0.20"), 17, 5353, 53);
    ASSERT_EQ(check("10.0.0.10", query).outcome, Outcome::opened);
    const Packet syn = pkt(ip("10.0.0.10"), ip("10.0.0.20"), 6, 40000, 5432);
    ASSERT_EQ(check("10.0.0.10", syn).outcome, Outcome::opened);
    Packet fin = reply_of(syn);
    fin.tcp_flags = 0x11;
    ASSERT_EQ(check("10.0.0.10", fin).outcome, Outcome::reply);
    now_ += 31'000'000'000;  // past the closing timeout, within UDP's
    EXPECT_EQ(firewall_.expire(), 1u);
    EXPECT_EQ(check("10.0.0.10", reply_of(query)).outcome, Outcome::reply);
    now_ += 181'000'000'000;
    EXPECT_EQ(firewall_.expire(), 1u);
    EXPECT_EQ(check("10.0.0.10", reply_of(query)).outcome, Outcome::denied);
    EXPECT_EQ(firewall_.counters().flows, 0u);
}

TEST_F(FirewallTest, AFullTableRefusesNewFlowsAndKeepsTheOpenOnes) {
    for (std::uint16_t port = 1; port <= 64; ++port)
        ASSERT_EQ(check("10.0.0.10", pkt(ip("10.0.0.10"), ip("10.0.0.20"), 17, port, 53)).outcome, Outcome::opened);
    EXPECT_EQ(check("10.0.0.10", pkt(ip("10.0.0.10"), ip("10.0.0.20"), 17, 65, 53)).outcome, Outcome::table_full);
    EXPECT_EQ(check("10.0.0.10", reply_of(pkt(ip("10.0.0.10"), ip("10.0.0.20"), 17, 1, 53))).outcome, Outcome::reply);
}

TEST_F(FirewallTest, MalformedPacketsAreDeniedNotRead) {
    Bytes truncated = build(pkt(ip("10.0.0.20"), ip("10.0.0.10")));
    truncated.resize(30);  // total length says 40
    EXPECT_EQ(firewall_.check(*policy_, endpoint("10.0.0.10"), PolicyDirection::ingress, truncated).outcome,
              Outcome::malformed);
    Bytes short_tcp = build(pkt(ip("10.0.0.20"), ip("10.0.0.10")));
    short_tcp.resize(26);
    wire::store_be16(&short_tcp[2], 26);
    EXPECT_EQ(firewall_.check(*policy_, endpoint("10.0.0.10"), PolicyDirection::ingress, short_tcp).outcome,
              Outcome::malformed);
    for (std::size_t n = 0; n < 20; ++n) {
        const Bytes tiny(n, 0x45);
        EXPECT_FALSE(firewall_.check(*policy_, endpoint("10.0.0.10"), PolicyDirection::ingress, tiny).allowed);
    }
}

// IPv6 (docs/security-groups.md, "IPv6"): the same rules and state. web's http rule names group
// app, whose member .20 is fd00:0:0:100::20 too; its ssh rule names an IPv4 CIDR, which no IPv6
// packet matches.
TEST_F(FirewallTest, Ipv6FlowsAreJudgedByTheSameRulesAndTheirRepliesPass) {
    const Packet syn = pkt(ip("fd00:0:0:100::20"), ip("fd00:0:0:100::10"));
    const CheckResult in = check("fd00:0:0:100::10", syn);
    EXPECT_EQ(in.outcome, Outcome::opened);
    EXPECT_EQ(rule(in.rule).group, "web");
    EXPECT_EQ(rule(in.rule).index, 0);
    EXPECT_EQ(check("fd00:0:0:100::10", reply_of(syn)).outcome, Outcome::reply);
    EXPECT_EQ(check("fd00:0:0:100::20", syn).outcome, Outcome::opened);  // egress at app: the default
    EXPECT_EQ(check("fd00:0:0:100::20", reply_of(syn)).outcome, Outcome::reply);
    // The IPv4 flow between the same two is another flow, judged on its own.
    EXPECT_EQ(check("10.0.0.10", pkt(ip("10.0.0.20"), ip("10.0.0.10"))).outcome, Outcome::opened);
    // ssh from .21 over IPv6: its rule's CIDR is IPv4 (10.0.0.21/32), so the default denies it.
    const CheckResult ssh = check("fd00:0:0:100::10", pkt(ip("fd00:0:0:100::21"), ip("fd00:0:0:100::10"), 6, 40000, 22));
    EXPECT_EQ(ssh.outcome, Outcome::denied);
    EXPECT_EQ(rule(ssh.rule).text, "ingress default deny");
    EXPECT_EQ(check("10.0.0.10", pkt(ip("10.0.0.21"), ip("10.0.0.10"), 6, 40000, 22)).outcome, Outcome::opened);
    // A flow's key carries its family's addresses, the endpoint's own included.
    bool found = false;
    for (const FlowView& f : firewall_.flows(100))
        if (f.key.source == ip("fd00:0:0:100::20") && f.key.direction == PolicyDirection::ingress) {
            EXPECT_EQ(f.key.local, ip("fd00:0:0:100::10"));
            EXPECT_EQ(f.key.local.to_string(), "fd00:0:0:100::10");
            found = true;
        }
    EXPECT_TRUE(found);
}

TEST_F(FirewallTest, Icmpv6RulesMatchIcmpv6AloneAndItsEchoAndErrorsAreTracked) {
    auto groups = web_app_ssh();
    SecurityRule ping4;  // icmp: IPv4's, from anywhere
    ping4.protocol = PolicyProtocol::icmp;
    ping4.priority = 120;
    SecurityRule ping6;  // icmpv6 echo requests from the VPC's /64
    ping6.protocol = PolicyProtocol::icmpv6;
    ping6.icmp_type = 128;
    ping6.remote_cidrs6 = {*wire::Ipv6Prefix::parse("fd00:0:0:100::/64")};
    ping6.priority = 130;
    groups[0].rules = {ping4};
    set_policy(groups, {{"web"}, {"web"}, {"app"}, {}});
    Packet echo = pkt(ip("fd00:0:0:100::20"), ip("fd00:0:0:100::10"), 58);
    echo.icmp_type = 128;
    EXPECT_EQ(check("fd00:0:0:100::10", echo).outcome, Outcome::denied) << "an icmp rule allowed ICMPv6";
    EXPECT_EQ(check("10.0.0.10", pkt(ip("10.0.0.20"), ip("10.0.0.10"), 1)).outcome, Outcome::opened);
    groups[0].rules = {ping4, ping6};
    set_policy(groups, {{"web"}, {"web"}, {"app"}, {}});
    const CheckResult in = check("fd00:0:0:100::10", echo);
    EXPECT_EQ(in.outcome, Outcome::opened);
    EXPECT_EQ(rule(in.rule).index, 1);
    EXPECT_EQ(check("fd00:0:0:100::10", reply_of(echo)).outcome, Outcome::reply);
    Packet other = echo;
    other.icmp_type = 135;  // not an echo request: no rule
    EXPECT_EQ(check("fd00:0:0:100::10", other).outcome, Outcome::denied);
    // web pings .21 (egress: allowed); the reply with its identifier passes, another does not.
    const Packet out = [&] {
        Packet p = pkt(ip("fd00:0:0:100::10"), ip("fd00:0:0:100::21"), 58);
        p.icmp_type = 128;
        return p;
    }();
    EXPECT_EQ(check("fd00:0:0:100::10", out).outcome, Outcome::opened);
    EXPECT_EQ(check("fd00:0:0:100::10", reply_of(out)).outcome, Outcome::reply);
    Packet stranger = reply_of(out);
    stranger.icmp_id = 99;
    EXPECT_EQ(check("fd00:0:0:100::10", stranger).outcome, Outcome::denied);
    // A Packet Too Big about web's own UDP flow is related; about a flow it never opened, judged
    // as ICMPv6 (type 2: no rule, the default denies).
    const Packet query = pkt(ip("fd00:0:0:100::10"), ip("fd00:0:0:100::21"), 17, 5353, 53);
    EXPECT_EQ(check("fd00:0:0:100::10", query).outcome, Outcome::opened);
    Packet too_big = pkt(ip("fd00:0:0:100::21"), ip("fd00:0:0:100::10"), 58);
    too_big.icmp_type = 2;
    too_big.quote = build(query);
    EXPECT_EQ(check("fd00:0:0:100::10", too_big).outcome, Outcome::related);
    Packet forged = too_big;
    forged.quote = build(pkt(ip("fd00:0:0:100::10"), ip("fd00:0:0:100::21"), 17, 5353, 54));
    EXPECT_EQ(check("fd00:0:0:100::10", forged).outcome, Outcome::denied);
    // An IPv4 packet's quote in an ICMPv6 error is no IPv6 flow's.
    forged.quote = build(pkt(ip("10.0.0.10"), ip("10.0.0.21"), 17, 5353, 53));
    EXPECT_EQ(check("fd00:0:0:100::10", forged).outcome, Outcome::denied);
}

TEST_F(FirewallTest, Ipv6FragmentsFollowTheirFirstFragmentByTheirIdentification) {
    Packet first = pkt(ip("fd00:0:0:100::20"), ip("fd00:0:0:100::10"), 6, 40000, 80);
    first.ip_id = 0x12345678;  // 32 bits: IPv6's fragment header
    first.more_fragments = true;
    ASSERT_EQ(check("fd00:0:0:100::10", first).outcome, Outcome::opened);
    Packet rest = first;
    rest.more_fragments = false;
    rest.fragment_offset = 3;
    EXPECT_EQ(check("fd00:0:0:100::10", rest).outcome, Outcome::fragment);
    Packet stray = rest;
    stray.ip_id = 0x5678;  // the low 16 bits alone are another datagram
    EXPECT_EQ(check("fd00:0:0:100::10", stray).outcome, Outcome::fragment_unknown);
    Packet denied = first;
    denied.ip_id = 7;
    denied.dport = 443;
    EXPECT_EQ(check("fd00:0:0:100::10", denied).outcome, Outcome::denied);
    denied.fragment_offset = 3;
    EXPECT_EQ(check("fd00:0:0:100::10", denied).outcome, Outcome::fragment_unknown);
}

TEST_F(FirewallTest, MalformedIpv6PacketsAreDeniedNotRead) {
    const fabric::Endpoint& web = endpoint("fd00:0:0:100::10");
    Bytes truncated = build(pkt(ip("fd00:0:0:100::20"), ip("fd00:0:0:100::10")));
    truncated.resize(50);  // the payload length says 20 bytes of TCP
    EXPECT_EQ(firewall_.check(*policy_, web, PolicyDirection::ingress, truncated).outcome, Outcome::malformed);
    Bytes short_tcp = build(pkt(ip("fd00:0:0:100::20"), ip("fd00:0:0:100::10")));
    short_tcp.resize(50);
    wire::store_be16(&short_tcp[4], 10);
    EXPECT_EQ(firewall_.check(*policy_, web, PolicyDirection::ingress, short_tcp).outcome, Outcome::malformed);
    // A chain of extension headers cut short, and one longer than the walk allows.
    Bytes cut = build(pkt(ip("fd00:0:0:100::20"), ip("fd00:0:0:100::10")));
    cut.resize(40 + 6);
    cut[6] = 0;  // hop-by-hop, whose 8 bytes are not all there
    wire::store_be16(&cut[4], 6);
    EXPECT_EQ(firewall_.check(*policy_, web, PolicyDirection::ingress, cut).outcome, Outcome::malformed);
    Bytes chain(40 + 9 * 8, 0);
    chain[0] = 0x60;
    chain[6] = 60;  // nine destination-options headers, each naming the next
    for (std::size_t i = 0; i < 9; ++i) chain[40 + 8 * i] = 60;
    wire::store_be16(&chain[4], 9 * 8);
    EXPECT_EQ(firewall_.check(*policy_, web, PolicyDirection::ingress, chain).outcome, Outcome::malformed);
    // An endpoint without an IPv6 address has no IPv6 flows (the pipeline never asks).
    fabric::Endpoint bare = web;
    bare.ipv6.reset();
    EXPECT_FALSE(firewall_.check(*policy_, bare, PolicyDirection::ingress,
                                 build(pkt(ip("fd00:0:0:100::20"), ip("fd00:0:0:100::10"))))
                     .allowed);
    for (std::size_t n = 1; n < 40; ++n) {
        const Bytes tiny(n, 0x60);
        EXPECT_FALSE(firewall_.check(*policy_, web, PolicyDirection::ingress, tiny).allowed);
    }
}

TEST_F(FirewallTest, WorkersCheckingAtOnceAgree) {
    // Two threads open and answer flows through one firewall; every reply finds its flow.
    std::atomic<int> failures{0};
    auto work = [&](std::uint16_t base) {
        for (std::uint16_t i = 0; i < 2000; ++i) {
            const Packet q = pkt(ip("10.0.0.10"), ip("10.0.0.20"), 17, static_cast<std::uint16_t>(base + i % 30), 53);
            const fabric::Endpoint& e = endpoint("10.0.0.10");
            if (!firewall_.check(*policy_, e, PolicyDirection::egress, build(q)).allowed) ++failures;
            if (!firewall_.check(*policy_, e, PolicyDirection::ingress, build(reply_of(q))).allowed) ++failures;
        }
    };
    std::thread a(work, 1000), b(work, 1010);  // overlapping ports: both threads touch the same flows
    a.join();
    b.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_EQ(firewall_.counters().flows, 40u);
}

// The kernel's flow cache (KernelChange): what the firewall asks the daemon to install and remove.
class FirewallKernelTest : public FirewallTest {
protected:
    FirewallKernelTest() { firewall_.enable_kernel_flows(true); }
    std::uint32_t generation() const { return policy_->kernel_generation(100); }
    // What the firewall asked for since the last call is one removal, of the flow to `port`.
    void expect_one_removal(std::uint16_t port) {
        const auto changes = firewall_.drain_kernel_changes();
        ASSERT_EQ(changes.size(), 1u);
        EXPECT_EQ(changes[0].kind, KernelChange::Kind::remove);
        EXPECT_EQ(changes[0].flow.key.destination_port, port);
    }
};

TEST_F(FirewallKernelTest, AnAllowedTcpOrUdpFlowIsInstalledOnceUnderItsVpcsGeneration) {
    ASSERT_NE(generation(), 0u);
    const Packet syn = pkt(ip("10.0.0.20"), ip("10.0.0.10"));
    ASSERT_EQ(check("10.0.0.10", syn).outcome, Outcome::opened);
    auto changes = firewall_.drain_kernel_changes();
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].kind, KernelChange::Kind::install);
    EXPECT_EQ(changes[0].flow.generation, generation());
    EXPECT_EQ(changes[0].flow.key.source, ip("10.0.0.20"));
    EXPECT_EQ(changes[0].flow.key.local, ip("10.0.0.10"));
    EXPECT_EQ(changes[0].flow.key.direction, PolicyDirection::ingress);
    // Its reply and its next packets ask for nothing more (within the second).
    EXPECT_EQ(check("10.0.0.10", reply_of(syn)).outcome, Outcome::reply);
    Packet ack = syn;
    ack.tcp_flags = 0x10;
    EXPECT_EQ(check("10.0.0.10", ack).outcome, Outcome::established);
    EXPECT_TRUE(firewall_.drain_kernel_changes().empty());
    // A packet of it still here a second later: the kernel lost it (evicted), asked again.
    now_ += 1'500'000'000;
    EXPECT_EQ(check("10.0.0.10", ack).outcome, Outcome::established);
    EXPECT_EQ(firewall_.drain_kernel_changes().size(), 1u);
    // ICMP and denied flows: never installed.
    EXPECT_EQ(check("10.0.0.10", pkt(ip("10.0.0.10"), ip("10.0.0.20"), 1)).outcome, Outcome::opened);
    EXPECT_EQ(check("10.0.0.10", pkt(ip("10.0.0.21"), ip("10.0.0.10"), 6, 40000, 443)).outcome, Outcome::denied);
    EXPECT_TRUE(firewall_.drain_kernel_changes().empty());
}

TEST_F(FirewallKernelTest, Ipv6TcpAndUdpFlowsAreInstalledByTheirIpv6TupleAndIcmpv6IsNot) {
    const Packet syn = pkt(ip("fd00:0:0:100::20"), ip("fd00:0:0:100::10"));
    ASSERT_EQ(check("fd00:0:0:100::10", syn).outcome, Outcome::opened);
    auto changes = firewall_.drain_kernel_changes();
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0].kind, KernelChange::Kind::install);
    EXPECT_EQ(changes[0].flow.generation, generation());
    EXPECT_EQ(changes[0].flow.key.source, ip("fd00:0:0:100::20"));
    EXPECT_EQ(changes[0].flow.key.local, ip("fd00:0:0:100::10"));
    EXPECT_EQ(changes[0].flow.key.direction, PolicyDirection::ingress);
    EXPECT_EQ(check("fd00:0:0:100::10", reply_of(syn)).outcome, Outcome::reply);
    EXPECT_TRUE(firewall_.drain_kernel_changes().empty());
    // The kernel's use keeps it, by the IPv6 tuple of its reply.
    EXPECT_TRUE(firewall_.kernel_seen(changes[0].flow.key.reversed(), generation(), now_));
    // ICMPv6 and a first fragment: the pipeline's, never installed.
    Packet echo = pkt(ip("fd00:0:0:100::10"), ip("fd00:0:0:100::20"), 58);
    echo.icmp_type = 128;
    EXPECT_EQ(check("fd00:0:0:100::10", echo).outcome, Outcome::opened);
    Packet first = pkt(ip("fd00:0:0:100::10"), ip("fd00:0:0:100::20"), 17, 5353, 53);
    first.more_fragments = true;
    EXPECT_EQ(check("fd00:0:0:100::10", first).outcome, Outcome::opened);
    EXPECT_TRUE(firewall_.drain_kernel_changes().empty());
}

TEST_F(FirewallKernelTest, ARevokedOrExpiredFlowIsRemovedAndAClosingOneStaysUntilItExpires) {
    const Packet syn = pkt(ip("10.0.0.20"), ip("10.0.0.10"));
    const Packet ssh = pkt(ip("10.0.0.21"), ip("10.0.0.10"), 6, 40000, 22);
    const Packet dns = pkt(ip("10.0.0.10"), ip("10.0.0.20"), 17, 5353, 53);
    for (const Packet& p : {syn, ssh, dns}) ASSERT_TRUE(check("10.0.0.10", p).allowed);
    ASSERT_EQ(firewall_.drain_kernel_changes().size(), 3u);
    // A FIN: tracked here, and the connection's last packets may still come through the kernel.
    Packet fin = reply_of(syn);
    fin.tcp_flags = 0x11;
    EXPECT_EQ(check("10.0.0.10", fin).outcome, Outcome::reply);
    EXPECT_TRUE(firewall_.drain_kernel_changes().empty());
    // Revoked by a new policy.
    auto groups = web_app_ssh();
    groups[0].rules.pop_back();
    set_policy(groups, {{"web"}, {"web"}, {"app"}, {}});
    Packet ssh_data = ssh;
    ssh_data.tcp_flags = 0x10;
    EXPECT_EQ(check("10.0.0.10", ssh_data).outcome, Outcome::revoked);
    expect_one_removal(22);
    // Expired: the closing connection after 30 s, the UDP flow after 180 s idle.
    now_ += 31'000'000'000;
    EXPECT_EQ(firewall_.expire(), 1u);
    expect_one_removal(80);
    now_ += 150'000'000'000;
    EXPECT_EQ(firewall_.expire(), 1u);
    expect_one_removal(53);
}

TEST_F(FirewallKernelTest, TheKernelsUseKeepsAFlowAliveAndAStaleEntryIsToldApart) {
    const Packet dns = pkt(ip("10.0.0.10"), ip("10.0.0.20"), 17, 5353, 53);
    ASSERT_EQ(check("10.0.0.10", dns).outcome, Outcome::opened);
    const KernelFlow flow = firewall_.drain_kernel_changes().at(0).flow;
    // The kernel carried the replies for 170 s (the sync reports their entry's last use).
    now_ += 170'000'000'000;
    FlowKey reply = flow.key.reversed();
    EXPECT_TRUE(firewall_.kernel_seen(reply, flow.generation, now_));
    now_ += 170'000'000'000;  // 340 s after the query, 170 s after the kernel's last use
    EXPECT_EQ(firewall_.expire(), 0u);
    EXPECT_EQ(check("10.0.0.10", reply_of(dns)).outcome, Outcome::reply);
    // Another generation, or a flow the firewall never had: stale, for the sync to delete.
    EXPECT_FALSE(firewall_.kernel_seen(reply, flow.generation + 1, now_));
    FlowKey other = flow.key;
    other.source_port = 5354;
    EXPECT_FALSE(firewall_.kernel_seen(other, flow.generation, now_));
}

TEST_F(FirewallKernelTest, AnAdoptedFlowsRepliesAreKnownAndItIsJudgedAgain) {
    // A predecessor installed web's egress flow to app (its own direction) under this generation.
    FlowKey key{100, ip("10.0.0.10"), ip("10.0.0.10"), ip("10.0.0.20"), 40000, 5432, 6, PolicyDirection::egress};
    ASSERT_TRUE(firewall_.adopt({key, generation(), 0}));
    EXPECT_TRUE(firewall_.kernel_seen(key.reversed(), generation(), now_));
    // The first packet here is a reply (ingress at web, whose ingress default denies): known.
    Packet back = pkt(ip("10.0.0.20"), ip("10.0.0.10"), 6, 5432, 40000);
    back.tcp_flags = 0x10;
    EXPECT_EQ(check("10.0.0.10", back).outcome, Outcome::reply);
    EXPECT_EQ(firewall_.counters().flows, 1u);
}

TEST_F(FirewallKernelTest, TheGenerationFollowsTheRulesAndTheMembersAndNothingElse) {
    const std::uint32_t before = generation();
    set_policy(web_app_ssh(), {{"web"}, {"web"}, {"app"}, {}});  // the same policy, a new snapshot
    EXPECT_EQ(generation(), before);
    set_policy(web_app_ssh(), {{"web"}, {"web"}, {"app"}, {"app"}});  // .21 joins app
    const std::uint32_t joined = generation();
    EXPECT_NE(joined, before);
    auto groups = web_app_ssh();
    groups[0].rules[0].ports = {{80, 81}};
    set_policy(groups, {{"web"}, {"web"}, {"app"}, {"app"}});
    EXPECT_NE(generation(), joined);
    EXPECT_NE(generation(), before);
}

}  // namespace
}  // namespace andromeda::policy::testing
