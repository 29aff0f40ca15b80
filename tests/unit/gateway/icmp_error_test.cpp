// PMTUD errors: Fragmentation Needed and Packet Too Big, field by field, with the quoting limits
// of RFC 1812 / RFC 4443 and the cases where no error may be sent.
#include <gtest/gtest.h>

#include "gateway/icmp_error.hpp"
#include "unit/dataplane/frame_validator.hpp"
#include "unit/dataplane/test_frames.hpp"

namespace andromeda::gateway {
namespace {

using testing::Bytes;
using testing::ipv4;
using testing::ipv6;
using testing::mac;

const GatewayAddress kGateway{mac("02:00:00:00:00:ff"), ipv4("10.0.0.1")};
const wire::MacAddress kTenant = mac("02:00:00:00:00:10");

testing::Ipv4Spec oversize(std::size_t payload) {
    testing::Ipv4Spec s;
    s.src_mac = kTenant;
    s.dst_mac = kGateway.mac;
    s.src = ipv4("10.0.0.10");
    s.dst = ipv4("10.0.0.20");
    s.payload = payload;
    s.dont_fragment = true;
    return s;
}

TEST(IcmpErrorTest, FragmentationNeededFieldByFieldQuotingUpTo576Bytes) {
    const Bytes offending = testing::ipv4_frame(oversize(1472));
    Bytes out(max_icmpv4_error_frame(14));
    const IcmpErrorFrame error = write_fragmentation_needed(offending, 1450, kGateway, 77, out);
    ASSERT_EQ(error.outcome, IcmpErrorOutcome::written) << to_string(error.outcome);
    ASSERT_EQ(error.length, 14u + 576u);
    out.resize(error.length);
    EXPECT_EQ(testing::frame_problems(out), std::vector<std::string>{});

    const auto eth = wire::EthernetView::parse(out);
    EXPECT_EQ(eth->destination(), kTenant);
    EXPECT_EQ(eth->source(), kGateway.mac);
    const auto ip = wire::Ipv4View::parse(eth->payload());
    EXPECT_EQ(ip->total_length(), 576);
    EXPECT_EQ(ip->source(), kGateway.ipv4);
    EXPECT_EQ(ip->destination(), ipv4("10.0.0.10"));
    EXPECT_EQ(ip->protocol(), wire::ip_protocol::kIcmp);
    EXPECT_EQ(ip->ttl(), 64);
    EXPECT_EQ(ip->identification(), 77);
    EXPECT_TRUE(ip->checksum_valid());
    const auto icmp = wire::Icmpv4View::parse(ip->payload());
    EXPECT_TRUE(icmp->is_fragmentation_needed());
    EXPECT_EQ(icmp->type(), 3);
    EXPECT_EQ(icmp->code(), 4);
    EXPECT_EQ(icmp->next_hop_mtu(), 1450);
    EXPECT_EQ(wire::load_be16(icmp->message().data() + 4), 0);  // unused half of the word
    EXPECT_TRUE(icmp->checksum_valid());
    const auto quote = icmp->original_datagram();
    ASSERT_EQ(quote.size(), kMaxIcmpv4Quote);
    EXPECT_TRUE(std::equal(quote.begin(), quote.end(), offending.begin() + 14));
}

TEST(IcmpErrorTest, ShortOffendingPacketIsQuotedWhole) {
    const Bytes offending = testing::ipv4_frame(oversize(20));
    Bytes out(max_icmpv4_error_frame(14));
    const IcmpErrorFrame error = write_fragmentation_needed(offending, 1400, kGateway, 1, out);
    ASSERT_TRUE(error.written());
    EXPECT_EQ(error.length, 14u + 20 + 8 + (offending.size() - 14));
}

TEST(IcmpErrorTest, NoErrorAboutErrorsFragmentsOrNonUnicast) {
    testing::Ipv4Spec icmp_error = oversize(600);
    icmp_error.protocol = wire::ip_protocol::kIcmp;
    icmp_error.icmp_type = wire::icmpv4_type::kDestinationUnreachable;
    testing::Ipv4Spec echo = icmp_error;
    echo.icmp_type = wire::icmpv4_type::kEchoRequest;
    testing::Ipv4Spec later_fragment = oversize(600);
    later_fragment.dont_fragment = false;
    later_fragment.fragment_offset = 100;
    testing::Ipv4Spec first_fragment = later_fragment;
    first_fragment.fragment_offset = 0;
    first_fragment.more_fragments = true;
    testing::Ipv4Spec multicast = oversize(600);
    multicast.dst = ipv4("239.1.2.3");
    testing::Ipv4Spec broadcast = oversize(600);
    broadcast.dst = ipv4("255.255.255.255");
    testing::Ipv4Spec unspecified = oversize(600);
    unspecified.src = ipv4("0.0.0.0");
    const std::pair<testing::Ipv4Spec, bool> cases[] = {
        {icmp_error, false}, {echo, true},       {later_fragment, false}, {first_fragment, true},
        {multicast, false},  {broadcast, false}, {unspecified, false},
    };
    for (const auto& [spec, allowed] : cases) {
        const Bytes frame = testing::ipv4_frame(spec);
        EXPECT_EQ(icmpv4_error_allowed(*wire::Ipv4View::parse(wire::ByteSpan(frame).subspan(14))), allowed);
        Bytes out(max_icmpv4_error_frame(14));
        EXPECT_EQ(write_fragmentation_needed(frame, 1400, kGateway, 1, out).outcome,
                  allowed ? IcmpErrorOutcome::written : IcmpErrorOutcome::not_allowed);
    }
}

TEST(IcmpErrorTest, MalformedOrNoRoomIsRefused) {
    Bytes out(max_icmpv4_error_frame(14));
    EXPECT_EQ(write_fragmentation_needed(Bytes(30, 0), 1400, kGateway, 1, out).outcome, IcmpErrorOutcome::malformed);
    const Bytes v6 = testing::ipv6_udp_frame(kTenant, kGateway.mac, ipv6("fd00::10"), ipv6("fd00::20"), 10);
    EXPECT_EQ(write_fragmentation_needed(v6, 1400, kGateway, 1, out).outcome, IcmpErrorOutcome::malformed);
    Bytes small(100);
    EXPECT_EQ(write_fragmentation_needed(testing::ipv4_frame(oversize(1000)), 1400, kGateway, 1, small).outcome,
              IcmpErrorOutcome::no_room);
}

TEST(IcmpErrorTest, PacketTooBigFieldByFieldQuotingUpTo1280Bytes) {
    const wire::Ipv6Address tenant = ipv6("fd00::10");
    const Bytes offending = testing::ipv6_udp_frame(kTenant, kGateway.mac, tenant, ipv6("fd00::20"), 1452);
    const wire::Ipv6Address source = ipv6_link_local(kGateway.mac);
    EXPECT_EQ(source, ipv6("fe80::ff:fe00:ff"));
    Bytes out(max_icmpv6_error_frame(14));
    const IcmpErrorFrame error = write_packet_too_big(offending, 1450, kGateway.mac, source, out);
    ASSERT_TRUE(error.written()) << to_string(error.outcome);
    ASSERT_EQ(error.length, 14u + 1280u);
    out.resize(error.length);
    EXPECT_EQ(testing::frame_problems(out), std::vector<std::string>{});
    const auto eth = wire::EthernetView::parse(out);
    EXPECT_EQ(eth->destination(), kTenant);
    EXPECT_EQ(eth->source(), kGateway.mac);
    EXPECT_EQ(eth->ethertype(), wire::ethertype::kIpv6);
    const auto ip = wire::Ipv6View::parse(eth->payload());
    EXPECT_EQ(ip->source(), source);
    EXPECT_EQ(ip->destination(), tenant);
    EXPECT_EQ(ip->hop_limit(), 64);
    EXPECT_EQ(ip->next_header(), wire::ip_protocol::kIcmpv6);
    const auto icmp = wire::Icmpv6View::parse(ip->upper_layer_payload());
    EXPECT_EQ(icmp->type(), wire::icmpv6_type::kPacketTooBig);
    EXPECT_EQ(icmp->code(), 0);
    EXPECT_EQ(icmp->mtu(), 1450u);
    EXPECT_TRUE(icmp->checksum_valid(source, tenant));
    const auto quote = icmp->invoking_packet();
    ASSERT_EQ(quote.size(), kMaxIcmpv6Quote);
    EXPECT_TRUE(std::equal(quote.begin(), quote.end(), offending.begin() + 14));
}

TEST(IcmpErrorTest, PacketTooBigRules) {
    const wire::Ipv6Address gw = ipv6_link_local(kGateway.mac);
    Bytes out(max_icmpv6_error_frame(14));
    // To a multicast group: allowed for Packet Too Big (RFC 4443 2.4 e.2), not for other errors.
    const Bytes multicast = testing::ipv6_udp_frame(kTenant, kGateway.mac, ipv6("fd00::10"), ipv6("ff0e::1"), 1500);
    EXPECT_TRUE(write_packet_too_big(multicast, 1450, kGateway.mac, gw, out).written());
    EXPECT_FALSE(icmpv6_error_allowed(*wire::Ipv6View::parse(wire::ByteSpan(multicast).subspan(14)), false));
    const Bytes unspecified = testing::ipv6_udp_frame(kTenant, kGateway.mac, ipv6("::"), ipv6("fd00::20"), 1500);
    EXPECT_EQ(write_packet_too_big(unspecified, 1450, kGateway.mac, gw, out).outcome, IcmpErrorOutcome::not_allowed);
    // An ICMPv6 error is never the subject of another.
    Bytes error_frame = testing::ipv6_udp_frame(kTenant, kGateway.mac, ipv6("fd00::10"), ipv6("fd00::20"), 1500);
    error_frame[14 + 6] = wire::ip_protocol::kIcmpv6;
    error_frame[14 + 40] = wire::icmpv6_type::kDestinationUnreachable;
    EXPECT_EQ(write_packet_too_big(error_frame, 1450, kGateway.mac, gw, out).outcome, IcmpErrorOutcome::not_allowed);
    error_frame[14 + 40] = wire::icmpv6_type::kEchoRequest;
    EXPECT_TRUE(write_packet_too_big(error_frame, 1450, kGateway.mac, gw, out).written());
    EXPECT_EQ(write_packet_too_big(testing::ipv4_frame(oversize(10)), 1450, kGateway.mac, gw, out).outcome,
              IcmpErrorOutcome::malformed);
}

}  // namespace
}  // namespace andromeda::gateway
