// The gateway's other IPv6 answers and inputs: ICMPv6 echo to its addresses, Packet Too Big rate
// limited per sender, the configuration checks, the choice of source address, and the
// classification the pipeline dispatches on.
#include <gtest/gtest.h>

#include "gateway/icmp_echo.hpp"
#include "gateway/icmp_error.hpp"
#include "unit/gateway/ipv6_test_gateway.hpp"
#include "wire/icmp.hpp"
#include "wire/ipv6_addressing.hpp"

namespace andromeda::gateway {
namespace {

using namespace ipv6_test;

ts::Icmpv6Frame echo_request(const wire::Ipv6Address& source, const wire::Ipv6Address& destination) {
    ts::Icmpv6Frame f;
    f.src_mac = raw(kTenantMac);
    f.dst_mac = raw(kGatewayMac);
    f.src = raw(source);
    f.dst = raw(destination);
    f.hop_limit = 64;
    f.traffic_class = 0xb8;
    f.type = ts::icmpv6::kEchoRequest;
    f.body = Bytes{0x12, 0x34, 0x00, 0x07, 'p', 'i', 'n', 'g', '6'};
    return f;
}

class Icmpv6EchoTest : public ::testing::Test {
protected:
    EchoReply reply(const ts::Icmpv6Frame& spec) {
        const Bytes request = ts::icmpv6_frame(spec);
        answer_.assign(request.size() + 64, 0xee);
        const EchoReply r = write_echo_reply(request, gateway_, answer_);
        answer_.resize(r.length);
        Bytes in_place = request;
        const EchoReply again = echo_reply_in_place(in_place, gateway_);
        EXPECT_EQ(again.outcome, r.outcome);
        if (r.replied())
            EXPECT_EQ(Bytes(in_place.begin() + static_cast<long>(again.offset),
                            in_place.begin() + static_cast<long>(again.offset + again.length)),
                      answer_)
                << "in place and copied replies agree";
        else
            EXPECT_EQ(in_place, request) << "untouched unless replied";
        return r;
    }

    Ipv6Gateway gateway_{test_config()};
    Bytes answer_;
};

TEST_F(Icmpv6EchoTest, EchoToEitherGatewayAddressIsAnsweredFromIt) {
    for (const auto& [source, destination] :
         {std::pair{kTenant, kGatewayGlobal}, std::pair{kTenantLinkLocal, kGatewayLinkLocal}}) {
        SCOPED_TRACE(destination.to_string());
        ASSERT_EQ(reply(echo_request(source, destination)).outcome, EchoOutcome::replied);
        const Answer a = read_answer(answer_);
        EXPECT_EQ(a.ethernet->destination(), kTenantMac);
        EXPECT_EQ(a.ethernet->source(), kGatewayMac);
        EXPECT_EQ(a.ip->source(), destination);
        EXPECT_EQ(a.ip->destination(), source);
        EXPECT_EQ(a.ip->hop_limit(), 64);
        EXPECT_EQ(a.ip->traffic_class(), 0xb8);
        const auto icmp = wire::Icmpv6View::parse(a.ip->upper_layer_payload());
        EXPECT_EQ(icmp->type(), wire::icmpv6_type::kEchoReply);
        EXPECT_EQ(icmp->code(), 0);
        EXPECT_EQ(icmp->identifier(), 0x1234);
        EXPECT_EQ(icmp->sequence(), 7);
        EXPECT_EQ(Bytes(icmp->body().begin(), icmp->body().end()), (Bytes{'p', 'i', 'n', 'g', '6'}));
        EXPECT_TRUE(icmp->checksum_valid(a.ip->source(), a.ip->destination()));
    }
}

TEST_F(Icmpv6EchoTest, ExtensionHeadersAreLeftOutOfTheReply) {
    ts::Icmpv6Frame with_fragment_header = echo_request(kTenant, kGatewayGlobal);
    with_fragment_header.fragment_header = true;  // atomic: the whole message is there
    const Bytes request = ts::icmpv6_frame(with_fragment_header);
    Bytes in_place = request;
    const EchoReply r = echo_reply_in_place(in_place, gateway_);
    ASSERT_TRUE(r.replied()) << to_string(r.outcome);
    EXPECT_EQ(r.offset, 8u) << "starts past the 8 bytes of the dropped header";
    EXPECT_EQ(r.length, request.size() - 8);
    const Bytes frame(in_place.begin() + 8, in_place.end());
    const Answer a = read_answer(frame);
    EXPECT_EQ(a.ip->extension_header_count(), 0u);
    EXPECT_TRUE(wire::Icmpv6View::parse(a.ip->payload())->checksum_valid(a.ip->source(), a.ip->destination()));
}

TEST_F(Icmpv6EchoTest, WhatIsNotAnswered) {
    EXPECT_EQ(reply(echo_request(kTenant, kPeer)).outcome, EchoOutcome::not_for_gateway);
    EXPECT_EQ(reply(echo_request(kTenant, wire::all_nodes_multicast())).outcome, EchoOutcome::not_for_gateway);
    ts::Icmpv6Frame broken = echo_request(kTenant, kGatewayGlobal);
    broken.break_checksum = true;
    EXPECT_EQ(reply(broken).outcome, EchoOutcome::bad_checksum);
    ts::Icmpv6Frame coded = echo_request(kTenant, kGatewayGlobal);
    coded.code = 1;
    EXPECT_EQ(reply(coded).outcome, EchoOutcome::not_echo_request);
    ts::Icmpv6Frame echo_reply = echo_request(kTenant, kGatewayGlobal);
    echo_reply.type = 129;
    EXPECT_EQ(reply(echo_reply).outcome, EchoOutcome::not_echo_request);
    EXPECT_EQ(reply(echo_request(wire::Ipv6Address{}, kGatewayGlobal)).outcome, EchoOutcome::bad_source);
    EXPECT_EQ(reply(echo_request(ip6("ff02::1"), kGatewayGlobal)).outcome, EchoOutcome::bad_source);
    ts::Icmpv6Frame short_message = echo_request(kTenant, kGatewayGlobal);
    short_message.body = Bytes{1, 2};
    EXPECT_EQ(reply(short_message).outcome, EchoOutcome::not_echo_request);

    const Bytes request = ts::icmpv6_frame(echo_request(kTenant, kGatewayGlobal));
    Bytes tiny(request.size() - 1);
    EXPECT_EQ(write_echo_reply(request, gateway_, tiny).outcome, EchoOutcome::no_room);
    const Bytes ipv4 = ts::arp_request(raw(kTenantMac), ts::ipv4("10.0.0.10"), ts::ipv4("10.0.0.1"));
    EXPECT_EQ(write_echo_reply(ipv4, gateway_, tiny).outcome, EchoOutcome::not_echo_request);
}

TEST_F(Icmpv6EchoTest, LaterFragmentIsNotEchoed) {
    // A non-first fragment of an echo to the gateway: the message is not all there.
    Bytes frame = ts::icmpv6_frame(echo_request(kTenant, kGatewayGlobal));
    ts::Icmpv6Frame spec = echo_request(kTenant, kGatewayGlobal);
    spec.fragment_header = true;
    frame = ts::icmpv6_frame(spec);
    frame[14 + 40 + 3] = 0x08;  // fragment offset 1 (8 bytes)
    Bytes out(frame.size());
    EXPECT_EQ(write_echo_reply(frame, gateway_, out).outcome, EchoOutcome::fragment);
}

// An IPv6 UDP packet from the tenant too big for the MTU.
Bytes oversize(const wire::Ipv6Address& source = kTenant) {
    return ts::ipv6_udp_frame(raw(kTenantMac), raw(kGatewayMac), raw(source), raw(kPeer), 1452);
}

TEST(PacketTooBigTest, RateLimitedPerSenderAndFromTheGatewaysAddress) {
    const Ipv6Gateway gateway(test_config());
    IcmpErrorRateLimiter limiter(RateLimiterConfig{1, 3, 64}, [] { return std::uint64_t{0}; });
    Bytes out(max_icmpv6_error_frame(14));
    for (int i = 0; i < 3; ++i) {
        const IcmpErrorFrame e = write_packet_too_big_rate_limited(oversize(), 1450, gateway, limiter, 100, 0, out);
        ASSERT_EQ(e.outcome, IcmpErrorOutcome::written) << i;
        const Bytes frame(out.begin(), out.begin() + static_cast<long>(e.length));
        const Answer a = read_answer(frame);
        EXPECT_EQ(a.ip->source(), kGatewayGlobal) << "source_for a global sender";
        EXPECT_EQ(a.ip->destination(), kTenant);
        EXPECT_EQ(a.ethernet->source(), kGatewayMac);
        const auto icmp = wire::Icmpv6View::parse(a.ip->upper_layer_payload());
        EXPECT_EQ(icmp->mtu(), 1450u);
        EXPECT_TRUE(icmp->checksum_valid(a.ip->source(), a.ip->destination()));
        EXPECT_EQ(icmp->invoking_packet().size(), kMaxIcmpv6Quote);
    }
    EXPECT_EQ(write_packet_too_big_rate_limited(oversize(), 1450, gateway, limiter, 100, 0, out).outcome,
              IcmpErrorOutcome::rate_limited);
    EXPECT_EQ(write_packet_too_big_rate_limited(oversize(), 1450, gateway, limiter, 200, 0, out).outcome,
              IcmpErrorOutcome::written)
        << "the same address in another VPC has its own bucket";
    EXPECT_EQ(
        write_packet_too_big_rate_limited(oversize(kTenantLinkLocal), 1450, gateway, limiter, 100, 0, out).outcome,
        IcmpErrorOutcome::written)
        << "another sender has its own bucket";
    EXPECT_EQ(write_packet_too_big_rate_limited(oversize(), 1450, gateway, limiter, 100, 1'000'000'000, out).outcome,
              IcmpErrorOutcome::written)
        << "a second later the bucket holds a token again";
}

TEST(PacketTooBigTest, ForbiddenOrMalformedPacketsSpendNoToken) {
    const Ipv6Gateway gateway(test_config());
    IcmpErrorRateLimiter limiter(RateLimiterConfig{1, 1, 64}, [] { return std::uint64_t{0}; });
    Bytes out(max_icmpv6_error_frame(14));
    ts::Icmpv6Frame error_spec;  // an ICMPv6 error from the tenant: never answered with an error
    error_spec.src_mac = raw(kTenantMac);
    error_spec.dst_mac = raw(kGatewayMac);
    error_spec.src = raw(kTenant);
    error_spec.dst = raw(kPeer);
    error_spec.type = 1;
    error_spec.body = Bytes(1400, 0);
    const Bytes icmp_error = ts::icmpv6_frame(error_spec);
    EXPECT_EQ(write_packet_too_big_rate_limited(icmp_error, 1280, gateway, limiter, 1, 0, out).outcome,
              IcmpErrorOutcome::not_allowed);
    EXPECT_EQ(write_packet_too_big_rate_limited(Bytes(30), 1280, gateway, limiter, 1, 0, out).outcome,
              IcmpErrorOutcome::malformed);
    EXPECT_EQ(
        write_packet_too_big_rate_limited(oversize(wire::Ipv6Address{}), 1280, gateway, limiter, 1, 0, out).outcome,
        IcmpErrorOutcome::not_allowed);
    EXPECT_EQ(write_packet_too_big_rate_limited(oversize(), 1280, gateway, limiter, 1, 0, out).outcome,
              IcmpErrorOutcome::written)
        << "the one token of the bucket is still there";
    Bytes tiny(100);
    EXPECT_EQ(write_packet_too_big_rate_limited(oversize(kTenantLinkLocal), 1280, gateway, limiter, 1, 0, tiny).outcome,
              IcmpErrorOutcome::no_room);
}

TEST(Ipv6GatewayTest, SourceAddressFollowsTheDestinationsScope) {
    const Ipv6Gateway gateway(test_config());
    EXPECT_EQ(gateway.link_local(), kGatewayLinkLocal);
    EXPECT_EQ(gateway.source_for(kTenant), kGatewayGlobal);
    EXPECT_EQ(gateway.source_for(ip6("2001:db8::1")), kGatewayGlobal);
    EXPECT_EQ(gateway.source_for(kTenantLinkLocal), kGatewayLinkLocal);
    EXPECT_TRUE(gateway.is_gateway_address(kGatewayGlobal));
    EXPECT_TRUE(gateway.is_gateway_address(kGatewayLinkLocal));
    EXPECT_FALSE(gateway.is_gateway_address(kPeer));
    Ipv6GatewayConfig config = test_config();
    config.global_address.reset();
    const Ipv6Gateway link_local_only(config);
    EXPECT_EQ(link_local_only.source_for(kTenant), kGatewayLinkLocal);
    EXPECT_FALSE(link_local_only.is_gateway_address(kGatewayGlobal));
}

// The problem list for `config` after `change`; each problem must name what it is about.
std::vector<std::string> problems(void (*change)(Ipv6GatewayConfig&)) {
    Ipv6GatewayConfig config = test_config();
    change(config);
    return check_ipv6_gateway_config(config);
}

bool mentions(const std::vector<std::string>& list, const std::string& word) {
    return list.size() == 1 && list[0].find(word) != std::string::npos;
}

TEST(Ipv6GatewayConfigTest, DefaultsAndTheTestConfigAreValid) {
    EXPECT_EQ(check_ipv6_gateway_config(test_config()), std::vector<std::string>{});
    EXPECT_EQ(effective_min_interval_s(RouterAdvertisementConfig{}), 198u);
    EXPECT_EQ(effective_dns_lifetime_s(RouterAdvertisementConfig{}), 1800u);
}

TEST(Ipv6GatewayConfigTest, EveryRuleSaysWhatWouldBeValid) {
    EXPECT_TRUE(mentions(problems([](auto& c) { c.mac = mac("01:00:5e:00:00:01"); }), "unicast MAC"));
    EXPECT_TRUE(mentions(problems([](auto& c) {
                             c.prefix = *wire::Ipv6Prefix::parse("fe80::/64");
                             c.global_address.reset();
                         }),
                         "fe80::/10"));
    EXPECT_TRUE(mentions(problems([](auto& c) {
                             c.prefix = *wire::Ipv6Prefix::parse("::/0");
                             c.router_advertisements.autonomous = false;
                         }),
                         "ULA"));
    EXPECT_TRUE(mentions(problems([](auto& c) { c.prefix = *wire::Ipv6Prefix::parse("fd00::/60"); }), "SLAAC"));
    EXPECT_EQ(problems([](auto& c) {
                  c.prefix = *wire::Ipv6Prefix::parse("fd00::/48");
                  c.global_address = ip6("fd00::1");
                  c.router_advertisements.autonomous = false;
              }),
              std::vector<std::string>{})
        << "without SLAAC any length will do";
    EXPECT_TRUE(mentions(problems([](auto& c) { c.global_address = ip6("fd00:0:0:2::1"); }), "outside the prefix"));
    EXPECT_TRUE(mentions(problems([](auto& c) { c.global_address = ip6("fd00:0:0:1::"); }), "Subnet-Router anycast"));
    EXPECT_TRUE(mentions(problems([](auto& c) { c.mtu = 1279; }), "1280"));
    EXPECT_TRUE(mentions(problems([](auto& c) { c.dns_servers.assign(9, ip6("fd00::53")); }), "at most 8"));
    EXPECT_TRUE(mentions(problems([](auto& c) { c.dns_servers = {ip6("ff02::1")}; }), "not a unicast"));
    EXPECT_TRUE(mentions(problems([](auto& c) { c.router_advertisements.max_interval_s = 3; }), "4 to 1800"));
    EXPECT_TRUE(mentions(problems([](auto& c) {
                             c.router_advertisements.max_interval_s = 1801;
                             c.router_advertisements.router_lifetime_s = 0;
                         }),
                         "4 to 1800"));
    EXPECT_TRUE(mentions(problems([](auto& c) { c.router_advertisements.min_interval_s = 2; }), "min_interval"));
    EXPECT_TRUE(mentions(problems([](auto& c) { c.router_advertisements.min_interval_s = 451; }), "0.75"));
    EXPECT_EQ(problems([](auto& c) { c.router_advertisements.min_interval_s = 450; }), std::vector<std::string>{});
    EXPECT_TRUE(
        mentions(problems([](auto& c) { c.router_advertisements.router_lifetime_s = 599; }), "router_lifetime"));
    EXPECT_TRUE(mentions(problems([](auto& c) { c.router_advertisements.router_lifetime_s = 9001; }), "9000"));
    EXPECT_EQ(problems([](auto& c) { c.router_advertisements.router_lifetime_s = 0; }), std::vector<std::string>{});
    EXPECT_TRUE(mentions(problems([](auto& c) { c.router_advertisements.preferred_lifetime_s = 2'592'001; }),
                         "preferred_lifetime"));
    EXPECT_TRUE(mentions(problems([](auto& c) { c.router_advertisements.router_preference = 2; }), "RFC 4191"));
    EXPECT_TRUE(mentions(problems([](auto& c) { c.router_advertisements.reachable_time_ms = 3'600'001; }), "3600000"));
    EXPECT_TRUE(mentions(problems([](auto& c) { c.router_advertisements.dns_lifetime_s = 599; }), "dns_lifetime"));
}

// A frame's IPv6 view, for classify_icmpv6.
TenantIcmpv6 classify(const Bytes& frame) {
    return classify_icmpv6(*wire::Ipv6View::parse(wire::EthernetView::parse(frame)->payload()));
}

TEST(Ipv6GatewayTest, ClassifiesWhatTheGatewayAnswersAndDrops) {
    ts::Icmpv6Frame f = echo_request(kTenant, kGatewayGlobal);
    EXPECT_EQ(classify(ts::icmpv6_frame(f)), TenantIcmpv6::echo_request);
    const std::pair<std::uint8_t, TenantIcmpv6> types[] = {{133, TenantIcmpv6::router_solicitation},
                                                           {134, TenantIcmpv6::router_advertisement},
                                                           {135, TenantIcmpv6::neighbor_solicitation},
                                                           {136, TenantIcmpv6::neighbor_advertisement},
                                                           {137, TenantIcmpv6::redirect},
                                                           {130, TenantIcmpv6::multicast_listener},
                                                           {131, TenantIcmpv6::multicast_listener},
                                                           {132, TenantIcmpv6::multicast_listener},
                                                           {143, TenantIcmpv6::multicast_listener},
                                                           {129, TenantIcmpv6::other},
                                                           {1, TenantIcmpv6::other},
                                                           {2, TenantIcmpv6::other}};
    for (const auto& [type, kind] : types) {
        f.type = type;
        EXPECT_EQ(classify(ts::icmpv6_frame(f)), kind) << int{type} << " " << to_string(kind);
    }
    EXPECT_EQ(classify(oversize()), TenantIcmpv6::not_icmpv6);
    f.type = 135;
    f.fragment_header = true;
    Bytes later = ts::icmpv6_frame(f);
    EXPECT_EQ(classify(later), TenantIcmpv6::neighbor_solicitation) << "a first fragment still names its type";
    later[14 + 40 + 3] = 0x08;
    EXPECT_EQ(classify(later), TenantIcmpv6::not_icmpv6) << "a later fragment has no ICMPv6 header";
}

}  // namespace
}  // namespace andromeda::gateway
