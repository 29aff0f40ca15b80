// Router Advertisements: what a solicitation gets (unicast or all-nodes, or deferred within the
// port's schedule), what every advertisement carries, and the solicitations that get nothing.
#include "gateway/router_advertisement.hpp"

#include <gtest/gtest.h>

#include "unit/gateway/ipv6_test_gateway.hpp"
#include "wire/ipv6_addressing.hpp"

namespace andromeda::gateway {
namespace {

using namespace ipv6_test;

constexpr std::uint64_t kSecond = kNanosecondsPerSecond;

class RouterAdvertisementTest : public ::testing::Test {
protected:
    RouterAdvertisementReply ask(const ts::Icmpv6Frame& spec, std::uint64_t now = 100 * kSecond) {
        const Bytes request = ts::icmpv6_frame(spec);
        answer_.assign(kMaxRouterAdvertisementFrame, 0xee);
        const RouterAdvertisementReply judged = judge_router_solicitation(request, gateway_);
        const RouterAdvertisementReply reply = answer_router_solicitation(request, gateway_, schedule_, now, answer_);
        if (reply.answered()) {
            EXPECT_EQ(judged.outcome, reply.outcome);
            EXPECT_EQ(judged.length, reply.length);
        } else {
            EXPECT_EQ(answer_, Bytes(kMaxRouterAdvertisementFrame, 0xee)) << "nothing written";
        }
        answer_.resize(reply.length);
        return reply;
    }

    // The advertisement in `frame`, checked as a host checks one (RFC 4861 6.1.2).
    wire::RouterAdvertisementView advertisement(const Bytes& frame) {
        read_ = read_answer(frame);
        const auto ra = wire::validate_router_advertisement(*read_.ip);
        EXPECT_TRUE(ra) << wire::to_string(ra.error());
        EXPECT_EQ(read_.ethernet->source(), kGatewayMac);
        EXPECT_EQ(read_.ip->source(), kGatewayLinkLocal);
        EXPECT_EQ(read_.ip->hop_limit(), 255);
        return *ra;
    }

    Ipv6Gateway gateway_{test_config()};
    RouterAdvertisementSchedule schedule_{test_config().router_advertisements, 1};
    Bytes answer_;
    Answer read_;
};

TEST_F(RouterAdvertisementTest, SolicitationFromAnAddressIsAnsweredUnicastWithEverything) {
    const RouterAdvertisementReply reply = ask(router_solicitation(kTenantLinkLocal));
    ASSERT_EQ(reply.outcome, RouterSolicitationOutcome::answered_unicast) << to_string(reply.outcome);
    const auto ra = advertisement(answer_);
    EXPECT_EQ(read_.ethernet->destination(), kTenantMac);
    EXPECT_EQ(read_.ip->destination(), kTenantLinkLocal);

    EXPECT_EQ(ra.current_hop_limit(), 64);
    EXPECT_FALSE(ra.managed());
    EXPECT_FALSE(ra.other_configuration());
    EXPECT_EQ(ra.router_preference(), wire::router_preference::kMedium);
    EXPECT_EQ(ra.router_lifetime(), 1800);
    EXPECT_EQ(ra.reachable_time(), 0u);
    EXPECT_EQ(ra.retrans_timer(), 0u);

    const wire::NdpOptions& options = ra.options();
    EXPECT_EQ(options.source_link_layer_address(), kGatewayMac);
    EXPECT_EQ(options.mtu(), 1450u) << "the VPC MTU";
    ASSERT_EQ(options.count(wire::ndp_option::kPrefixInformation), 1u);
    const auto prefix = wire::decode_prefix_information(*options.find(wire::ndp_option::kPrefixInformation));
    ASSERT_TRUE(prefix);
    EXPECT_EQ(*prefix, (wire::PrefixInformation{64, true, true, 2'592'000, 604'800, ip6("fd00:0:0:1::")}));
    const auto rdnss = wire::RdnssView::parse(*options.find(wire::ndp_option::kRecursiveDnsServer));
    ASSERT_TRUE(rdnss);
    EXPECT_EQ(rdnss->lifetime(), 1800u) << "3 * max_interval by default (RFC 8106 5.1)";
    ASSERT_EQ(rdnss->address_count(), 2u);
    EXPECT_EQ(rdnss->address(0), kDns[0]);
    EXPECT_EQ(rdnss->address(1), kDns[1]);
    EXPECT_EQ(reply.length, 14u + 40 + router_advertisement_message_length(gateway_));
}

TEST_F(RouterAdvertisementTest, SolicitationFromUnspecifiedIsAnsweredToAllNodes) {
    ASSERT_EQ(ask(router_solicitation(wire::Ipv6Address{})).outcome, RouterSolicitationOutcome::answered_multicast);
    advertisement(answer_);
    EXPECT_EQ(read_.ip->destination(), wire::all_nodes_multicast());
    EXPECT_EQ(read_.ethernet->destination(), mac("33:33:00:00:00:01"));
}

TEST_F(RouterAdvertisementTest, SolicitationFromAGlobalAddressIsAnsweredToIt) {
    ASSERT_EQ(ask(router_solicitation(kTenant)).outcome, RouterSolicitationOutcome::answered_unicast);
    advertisement(answer_);
    EXPECT_EQ(read_.ip->destination(), kTenant);
}

TEST_F(RouterAdvertisementTest, InvalidSolicitationsGetNothing) {
    ts::Icmpv6Frame forwarded = router_solicitation(kTenantLinkLocal);
    forwarded.hop_limit = 254;
    RouterAdvertisementReply reply = ask(forwarded);
    EXPECT_EQ(reply.outcome, RouterSolicitationOutcome::invalid);
    EXPECT_EQ(reply.error, wire::NdpError::BadHopLimit);

    ts::Icmpv6Frame unspecified_with_mac = router_solicitation(wire::Ipv6Address{});
    unspecified_with_mac.body = ts::rs_body(ts::link_layer_option(1, raw(kTenantMac)));
    EXPECT_EQ(ask(unspecified_with_mac).error, wire::NdpError::UnspecifiedSourceWithLinkLayerOption);

    ts::Icmpv6Frame coded = router_solicitation(kTenantLinkLocal);
    coded.code = 1;
    EXPECT_EQ(ask(coded).error, wire::NdpError::BadCode);

    ts::Icmpv6Frame short_one = router_solicitation(kTenantLinkLocal);
    short_one.body = Bytes{0, 0};
    EXPECT_EQ(ask(short_one).error, wire::NdpError::Truncated);

    EXPECT_EQ(ask(solicitation(kTenant, kPeer)).outcome, RouterSolicitationOutcome::not_router_solicitation);
    EXPECT_EQ(schedule_.advertisements(), 0u) << "nothing recorded for what was not answered";
}

TEST_F(RouterAdvertisementTest, SettingsAreAdvertisedAsConfigured) {
    Ipv6GatewayConfig config = test_config();
    config.dns_servers.clear();
    config.mtu = 9000;
    RouterAdvertisementConfig& ra = config.router_advertisements;
    ra.managed = true;
    ra.other_configuration = true;
    ra.router_preference = wire::router_preference::kLow;
    ra.current_hop_limit = 0;
    ra.router_lifetime_s = 0;
    ra.reachable_time_ms = 30000;
    ra.retrans_timer_ms = 1000;
    ra.on_link = false;
    ra.autonomous = false;
    ra.valid_lifetime_s = wire::kInfiniteLifetime;
    ra.preferred_lifetime_s = 3600;
    gateway_ = Ipv6Gateway(config);
    ASSERT_TRUE(ask(router_solicitation(kTenantLinkLocal)).answered());
    const auto view = advertisement(answer_);
    EXPECT_EQ(view.header(), (wire::RouterAdvertisementHeader{0, true, true, 3, 0, 30000, 1000}));
    EXPECT_EQ(view.options().mtu(), 9000u);
    EXPECT_FALSE(view.options().find(wire::ndp_option::kRecursiveDnsServer)) << "no DNS servers, no RDNSS";
    EXPECT_EQ(*wire::decode_prefix_information(*view.options().find(wire::ndp_option::kPrefixInformation)),
              (wire::PrefixInformation{64, false, false, wire::kInfiniteLifetime, 3600, ip6("fd00:0:0:1::")}));
}

TEST_F(RouterAdvertisementTest, SecondSolicitationWithinThreeSecondsIsDeferredToTheSchedule) {
    ASSERT_TRUE(ask(router_solicitation(kTenantLinkLocal), 100 * kSecond).answered());
    EXPECT_EQ(ask(router_solicitation(kTenantLinkLocal), 101 * kSecond).outcome, RouterSolicitationOutcome::deferred);
    EXPECT_EQ(schedule_.next_due(101 * kSecond), 103 * kSecond) << "the unsolicited RA answers it";
    EXPECT_EQ(ask(router_solicitation(wire::Ipv6Address{}), 102 * kSecond).outcome,
              RouterSolicitationOutcome::deferred);
    EXPECT_TRUE(ask(router_solicitation(kTenantLinkLocal), 103 * kSecond).answered());
}

TEST_F(RouterAdvertisementTest, NoRoomLeavesTheScheduleAlone) {
    const Bytes request = ts::icmpv6_frame(router_solicitation(kTenantLinkLocal));
    Bytes small(judge_router_solicitation(request, gateway_).length - 1);
    EXPECT_EQ(answer_router_solicitation(request, gateway_, schedule_, 50 * kSecond, small).outcome,
              RouterSolicitationOutcome::no_room);
    EXPECT_TRUE(ask(router_solicitation(kTenantLinkLocal), 50 * kSecond).answered()) << "not held back by the failure";
}

TEST_F(RouterAdvertisementTest, UnsolicitedAndCeasingAdvertisements) {
    Bytes frame(kMaxRouterAdvertisementFrame);
    frame.resize(write_unsolicited_router_advertisement(gateway_, frame));
    const auto ra = advertisement(frame);
    EXPECT_EQ(read_.ip->destination(), wire::all_nodes_multicast());
    EXPECT_EQ(read_.ethernet->destination(), mac("33:33:00:00:00:01"));
    EXPECT_EQ(read_.ethernet->vlan_count(), 0u);
    EXPECT_EQ(ra.router_lifetime(), 1800);

    Bytes farewell(kMaxRouterAdvertisementFrame);
    farewell.resize(write_unsolicited_router_advertisement(gateway_, farewell, true));
    EXPECT_EQ(advertisement(farewell).router_lifetime(), 0) << "RFC 4861 6.2.5";
    EXPECT_EQ(farewell.size(), frame.size());

    Bytes tiny(frame.size() - 1);
    EXPECT_EQ(write_unsolicited_router_advertisement(gateway_, tiny), 0u);
}

TEST_F(RouterAdvertisementTest, AdvertiseIfDueFollowsTheSchedule) {
    Bytes frame(kMaxRouterAdvertisementFrame);
    EXPECT_NE(advertise_if_due(gateway_, schedule_, 10 * kSecond, frame), 0u) << "the first is due at once";
    const std::uint64_t next = schedule_.next_due(10 * kSecond);
    EXPECT_EQ(next, 26 * kSecond) << "initial advertisements 16 s apart (the drawn interval is at least 198 s)";
    EXPECT_EQ(advertise_if_due(gateway_, schedule_, next - 1, frame), 0u);
    EXPECT_NE(advertise_if_due(gateway_, schedule_, next, frame), 0u);
    Bytes tiny(10);
    const std::uint64_t due = schedule_.next_due(next);
    EXPECT_EQ(advertise_if_due(gateway_, schedule_, due, tiny), 0u);
    EXPECT_EQ(schedule_.next_due(due), due) << "a failed write leaves it due";
}

TEST_F(RouterAdvertisementTest, LargestAdvertisementFitsTheBound) {
    Ipv6GatewayConfig config = test_config();
    config.dns_servers.assign(kMaxDnsServers + 3, ip6("2001:db8::53"));  // unchecked: more than advertised
    gateway_ = Ipv6Gateway(config);
    ts::Icmpv6Frame tagged = router_solicitation(kTenantLinkLocal);
    tagged.tags = {ts::VlanTag{0x88a8, 1, 0, false}, ts::VlanTag{0x8100, 2, 0, false}};
    const RouterAdvertisementReply reply = ask(tagged);
    ASSERT_TRUE(reply.answered());
    EXPECT_EQ(reply.length, kMaxRouterAdvertisementFrame);
    const auto ra = advertisement(answer_);
    EXPECT_EQ(wire::RdnssView::parse(*ra.options().find(wire::ndp_option::kRecursiveDnsServer))->address_count(),
              kMaxDnsServers);
}

}  // namespace
}  // namespace andromeda::gateway
