// The ND proxy, rule by rule: who gets an advertisement (and with which flags, from which
// address, to whom), and which solicitations get nothing.
#include "gateway/nd_proxy.hpp"

#include <gtest/gtest.h>

#include "unit/gateway/ipv6_test_gateway.hpp"
#include "wire/ipv6_addressing.hpp"

namespace andromeda::gateway {
namespace {

using namespace ipv6_test;

class NdProxyTest : public ::testing::Test {
protected:
    // Answers the frame `spec` builds; keeps the answer in answer_.
    NdProxyReply ask(const ts::Icmpv6Frame& spec, const Ipv6Endpoint& asker = kAsker) {
        const Bytes request = ts::icmpv6_frame(spec);
        answer_.assign(kMaxNeighborAdvertisementFrame, 0xee);
        const NdProxyReply reply = write_neighbor_advertisement_reply(request, gateway_, asker, answer_);
        const NdProxyReply judged = judge_neighbor_solicitation(request, gateway_, asker);
        EXPECT_EQ(judged.outcome, reply.outcome);
        EXPECT_EQ(judged.error, reply.error);
        EXPECT_EQ(judged.length, reply.length);
        if (!reply.answered()) {
            EXPECT_EQ(reply.length, 0u);
            EXPECT_EQ(answer_, Bytes(kMaxNeighborAdvertisementFrame, 0xee)) << "nothing written";
        }
        answer_.resize(reply.length);
        return reply;
    }

    // The advertisement in answer_, checked as any receiver would check it.
    wire::NeighborAdvertisementView advertisement() {
        read_ = read_answer(answer_);
        const auto na = wire::validate_neighbor_advertisement(*read_.ip);
        EXPECT_TRUE(na) << wire::to_string(na.error());
        EXPECT_EQ(read_.ethernet->source(), kGatewayMac);
        EXPECT_EQ(read_.ip->hop_limit(), 255);
        EXPECT_EQ(na->options().target_link_layer_address(), kGatewayMac);
        return *na;
    }

    Ipv6Gateway gateway_{test_config()};
    Bytes answer_;
    Answer read_;
};

TEST_F(NdProxyTest, SolicitationForAnotherEndpointGetsTheGatewayMacProxied) {
    const NdProxyReply reply = ask(solicitation(kTenant, kPeer));
    ASSERT_EQ(reply.outcome, NdProxyOutcome::advertised) << to_string(reply.outcome);
    EXPECT_EQ(reply.length, 14u + 40 + 32);
    const auto na = advertisement();
    EXPECT_EQ(na.target(), kPeer);
    EXPECT_TRUE(na.router());
    EXPECT_TRUE(na.solicited());
    EXPECT_FALSE(na.override_flag()) << "RFC 4861 7.2.4: a proxy leaves override clear";
    EXPECT_EQ(read_.ethernet->destination(), kTenantMac);
    EXPECT_EQ(read_.ip->destination(), kTenant);
    EXPECT_EQ(read_.ip->source(), kGatewayGlobal) << "a global asker hears from the global address";
}

TEST_F(NdProxyTest, LinkLocalAskerHearsFromTheGatewayLinkLocal) {
    ASSERT_TRUE(ask(solicitation(kTenantLinkLocal, kPeer)).answered());
    advertisement();
    EXPECT_EQ(read_.ip->source(), kGatewayLinkLocal);
    EXPECT_EQ(read_.ip->destination(), kTenantLinkLocal);
}

TEST_F(NdProxyTest, WithoutAGlobalAddressEveryAnswerComesFromTheLinkLocal) {
    Ipv6GatewayConfig config = test_config();
    config.global_address.reset();
    gateway_ = Ipv6Gateway(config);
    ASSERT_TRUE(ask(solicitation(kTenant, kPeer)).answered());
    advertisement();
    EXPECT_EQ(read_.ip->source(), kGatewayLinkLocal);
    EXPECT_EQ(ask(solicitation(kTenant, kGatewayGlobal)).outcome, NdProxyOutcome::advertised)
        << "fd00:0:0:1::1 is then just an address of the prefix";
    EXPECT_FALSE(advertisement().override_flag());
}

TEST_F(NdProxyTest, GatewaysOwnAddressesAreAdvertisedWithOverrideFromTheTarget) {
    for (const auto& [asker, target] :
         {std::pair{kTenant, kGatewayGlobal}, std::pair{kTenantLinkLocal, kGatewayLinkLocal},
          std::pair{kTenantLinkLocal, kGatewayGlobal}}) {
        SCOPED_TRACE(target.to_string());
        ASSERT_EQ(ask(solicitation(asker, target)).outcome, NdProxyOutcome::advertised);
        const auto na = advertisement();
        EXPECT_EQ(na.target(), target);
        EXPECT_TRUE(na.router());
        EXPECT_TRUE(na.solicited());
        EXPECT_TRUE(na.override_flag());
        EXPECT_EQ(read_.ip->source(), target);
        EXPECT_EQ(read_.ip->destination(), asker);
    }
}

TEST_F(NdProxyTest, AnyAddressOfThePrefixIsAnsweredLikeProxyArp) {
    for (const char* target : {"fd00:0:0:1::99", "fd00:0:0:1::", "fd00:0:0:1:ffff:ffff:ffff:ffff"}) {
        EXPECT_EQ(ask(solicitation(kTenant, ip6(target))).outcome, NdProxyOutcome::advertised) << target;
        EXPECT_EQ(advertisement().target(), ip6(target));
    }
}

TEST_F(NdProxyTest, UnicastNeighborUnreachabilityProbeIsAnsweredToo) {
    ts::Icmpv6Frame nud = solicitation(kTenant, kPeer);
    nud.dst = raw(kPeer);
    nud.dst_mac = raw(kGatewayMac);
    ASSERT_EQ(ask(nud).outcome, NdProxyOutcome::advertised);
    EXPECT_TRUE(advertisement().solicited());
}

TEST_F(NdProxyTest, DuplicateAddressDetectionIsNeverAnsweredForAnEndpoint) {
    const wire::Ipv6Address unspecified{};
    EXPECT_EQ(ask(solicitation(unspecified, kPeer)).outcome, NdProxyOutcome::dad_probe) << "another endpoint's";
    EXPECT_EQ(ask(solicitation(unspecified, kTenant)).outcome, NdProxyOutcome::dad_probe) << "the asker's own";
    EXPECT_EQ(ask(solicitation(unspecified, kTenantLinkLocal)).outcome, NdProxyOutcome::dad_probe);
    EXPECT_EQ(ask(solicitation(unspecified, ip6("fd00:0:0:1::99"))).outcome, NdProxyOutcome::dad_probe);
    EXPECT_EQ(ask(solicitation(unspecified, ip6("2001:db8::1"))).outcome, NdProxyOutcome::dad_probe);
}

TEST_F(NdProxyTest, DuplicateAddressDetectionForTheGatewaysAddressIsDefended) {
    for (const wire::Ipv6Address& target : {kGatewayGlobal, kGatewayLinkLocal}) {
        SCOPED_TRACE(target.to_string());
        ASSERT_EQ(ask(solicitation(wire::Ipv6Address{}, target)).outcome, NdProxyOutcome::defended);
        const auto na = advertisement();
        EXPECT_EQ(na.target(), target);
        EXPECT_FALSE(na.solicited()) << "RFC 4861 7.2.4: to all-nodes, solicited clear";
        EXPECT_TRUE(na.override_flag());
        EXPECT_TRUE(na.router());
        EXPECT_EQ(read_.ip->destination(), wire::all_nodes_multicast());
        EXPECT_EQ(read_.ethernet->destination(), mac("33:33:00:00:00:01"));
        EXPECT_EQ(read_.ip->source(), target);
    }
}

TEST_F(NdProxyTest, OwnAddressIsNotAnswered) {
    EXPECT_EQ(ask(solicitation(kTenantLinkLocal, kTenant)).outcome, NdProxyOutcome::own_address);
    EXPECT_EQ(ask(solicitation(kTenant, kTenant)).outcome, NdProxyOutcome::own_address) << "target = source";
    const std::vector<wire::Ipv6Address> two = {ip6("fd00:0:0:1::a"), ip6("fd00:0:0:1::b")};
    EXPECT_EQ(ask(solicitation(kTenant, ip6("fd00:0:0:1::b")), Ipv6Endpoint{kTenantMac, two}).outcome,
              NdProxyOutcome::own_address);
}

TEST_F(NdProxyTest, TargetsOutsideTheVpcGetNothing) {
    for (const char* target : {"fd00:0:0:2::1", "2001:db8::1", "fe80::1", "fe80::ff:fe00:14"}) {
        EXPECT_EQ(ask(solicitation(kTenant, ip6(target))).outcome, NdProxyOutcome::outside_vpc) << target;
    }
}

TEST_F(NdProxyTest, InvalidSolicitationsAreRefusedWithTheRuleBroken) {
    ts::Icmpv6Frame off_link = solicitation(kTenant, kPeer);
    off_link.hop_limit = 64;
    NdProxyReply reply = ask(off_link);
    EXPECT_EQ(reply.outcome, NdProxyOutcome::invalid);
    EXPECT_EQ(reply.error, wire::NdpError::BadHopLimit);

    ts::Icmpv6Frame dad_with_mac = solicitation(wire::Ipv6Address{}, kPeer);
    dad_with_mac.body = ts::ns_body(raw(kPeer), ts::link_layer_option(1, raw(kTenantMac)));
    EXPECT_EQ(ask(dad_with_mac).error, wire::NdpError::UnspecifiedSourceWithLinkLayerOption);

    ts::Icmpv6Frame multicast_target = solicitation(kTenant, kPeer);
    multicast_target.body = ts::ns_body(ts::ipv6("ff02::1"));
    EXPECT_EQ(ask(multicast_target).error, wire::NdpError::MulticastTarget);

    ts::Icmpv6Frame broken = solicitation(kTenant, kPeer);
    broken.break_checksum = true;
    EXPECT_EQ(ask(broken).error, wire::NdpError::BadChecksum);

    ts::Icmpv6Frame zero_option = solicitation(kTenant, kPeer);
    zero_option.body = ts::ns_body(raw(kPeer), ts::nd_option(1, Bytes(6, 1), 0));
    EXPECT_EQ(ask(zero_option).error, wire::NdpError::BadOptionLength);

    ts::Icmpv6Frame fragment = solicitation(kTenant, kPeer);
    fragment.fragment_header = true;
    EXPECT_EQ(ask(fragment).error, wire::NdpError::Fragmented);
}

TEST_F(NdProxyTest, OtherFramesAreNotSolicitations) {
    EXPECT_EQ(ask(router_solicitation(kTenantLinkLocal)).outcome, NdProxyOutcome::not_neighbor_solicitation);
    const Bytes arp = ts::arp_request(raw(kTenantMac), ts::ipv4("10.0.0.10"), ts::ipv4("10.0.0.1"));
    Bytes out(kMaxNeighborAdvertisementFrame);
    EXPECT_EQ(write_neighbor_advertisement_reply(arp, gateway_, kAsker, out).outcome,
              NdProxyOutcome::not_neighbor_solicitation);
    const Bytes udp = ts::ipv6_udp_frame(raw(kTenantMac), raw(kGatewayMac), raw(kTenant), raw(kPeer), 10);
    EXPECT_EQ(write_neighbor_advertisement_reply(udp, gateway_, kAsker, out).outcome,
              NdProxyOutcome::not_neighbor_solicitation);
    EXPECT_EQ(write_neighbor_advertisement_reply(Bytes(10), gateway_, kAsker, out).outcome,
              NdProxyOutcome::not_neighbor_solicitation);
}

TEST_F(NdProxyTest, VlanTagsAreKeptAndCountTowardsTheLength) {
    ts::Icmpv6Frame tagged = solicitation(kTenant, kPeer);
    tagged.tags = {ts::VlanTag{0x88a8, 100, 3, false}, ts::VlanTag{0x8100, 7, 0, false}};
    const NdProxyReply reply = ask(tagged);
    ASSERT_TRUE(reply.answered());
    EXPECT_EQ(reply.length, kMaxNeighborAdvertisementFrame);
    advertisement();
    ASSERT_EQ(read_.ethernet->vlan_count(), 2u);
    EXPECT_EQ(read_.ethernet->vlan_id(0), 100);
    EXPECT_EQ(read_.ethernet->vlan_id(1), 7);
}

TEST_F(NdProxyTest, TooSmallABufferIsNoRoomAndUntouched) {
    const Bytes request = ts::icmpv6_frame(solicitation(kTenant, kPeer));
    const std::size_t needed = judge_neighbor_solicitation(request, gateway_, kAsker).length;
    Bytes out(needed - 1, 0xee);
    EXPECT_EQ(write_neighbor_advertisement_reply(request, gateway_, kAsker, out).outcome, NdProxyOutcome::no_room);
    EXPECT_EQ(out, Bytes(needed - 1, 0xee));
    out.resize(needed);
    EXPECT_TRUE(write_neighbor_advertisement_reply(request, gateway_, kAsker, out).answered());
}

}  // namespace
}  // namespace andromeda::gateway
