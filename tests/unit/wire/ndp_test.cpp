// Neighbor Discovery messages and options: every rule of the views, the validators (RFC 4861
// 6.1.1, 6.1.2, 7.1.1, 7.1.2, RFC 6980) and the builders, on frames built byte by byte by
// tests/support/icmpv6_frame_builder.hpp.
#include "wire/ndp.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "support/icmpv6_frame_builder.hpp"
#include "wire/ethernet.hpp"
#include "wire/ipv6_addressing.hpp"

namespace andromeda::wire {
namespace {

namespace ts = test_support;
using Bytes = std::vector<std::uint8_t>;

const ts::Mac kTenantMac = ts::mac("02:00:00:00:00:0a");
const ts::Ipv6Address kTenant = ts::ipv6("fd00::a");
const ts::Ipv6Address kTenantLinkLocal = ts::ipv6("fe80::ff:fe00:a");
const ts::Ipv6Address kPeer = ts::ipv6("fd00::14");

// A valid NS from the tenant for the peer, to its solicited-node group, with the tenant's MAC.
ts::Icmpv6Frame neighbor_solicitation() {
    ts::Icmpv6Frame f;
    f.src_mac = kTenantMac;
    f.dst_mac = ts::multicast_mac(ts::solicited_node(kPeer));
    f.src = kTenant;
    f.dst = ts::solicited_node(kPeer);
    f.type = ts::icmpv6::kNeighborSolicitation;
    f.body = ts::ns_body(kPeer, ts::link_layer_option(1, kTenantMac));
    return f;
}

ts::Icmpv6Frame router_solicitation() {
    ts::Icmpv6Frame f;
    f.src_mac = kTenantMac;
    f.dst_mac = ts::mac("33:33:00:00:00:02");
    f.src = kTenantLinkLocal;
    f.dst = ts::ipv6("ff02::2");
    f.type = ts::icmpv6::kRouterSolicitation;
    f.body = ts::rs_body(ts::link_layer_option(1, kTenantMac));
    return f;
}

ts::Icmpv6Frame neighbor_advertisement(std::uint8_t flags, const ts::Ipv6Address& dst) {
    ts::Icmpv6Frame f;
    f.src_mac = kTenantMac;
    f.dst_mac = ts::multicast_mac(dst);
    f.src = kTenant;
    f.dst = dst;
    f.type = ts::icmpv6::kNeighborAdvertisement;
    f.body = ts::ns_body(kTenant, ts::link_layer_option(2, kTenantMac));
    f.body[0] = flags;
    return f;
}

ts::Icmpv6Frame router_advertisement(const ts::Ipv6Address& src) {
    ts::Icmpv6Frame f;
    f.src_mac = kTenantMac;
    f.dst_mac = ts::mac("33:33:00:00:00:01");
    f.src = src;
    f.dst = ts::ipv6("ff02::1");
    f.type = ts::icmpv6::kRouterAdvertisement;
    f.body = Bytes{64, 0xc8, 0x07, 0x08, 0, 0, 0x75, 0x30, 0, 0, 0x03, 0xe8};
    return f;
}

// The validator's verdict on the frame `spec` builds.
template <class Validate>
NdpError verdict(const ts::Icmpv6Frame& spec, Validate validate) {
    const Bytes frame = ts::icmpv6_frame(spec);
    const auto eth = EthernetView::parse(frame);
    const auto ip = Ipv6View::parse(eth->payload());
    EXPECT_TRUE(ip);
    const auto parsed = validate(*ip);
    return parsed ? NdpError::None : parsed.error();
}

NdpError ns_verdict(const ts::Icmpv6Frame& s) { return verdict(s, validate_neighbor_solicitation); }
NdpError rs_verdict(const ts::Icmpv6Frame& s) { return verdict(s, validate_router_solicitation); }
NdpError na_verdict(const ts::Icmpv6Frame& s) { return verdict(s, validate_neighbor_advertisement); }
NdpError ra_verdict(const ts::Icmpv6Frame& s) { return verdict(s, validate_router_advertisement); }

TEST(NdpValidation, WellFormedMessagesPass) {
    EXPECT_EQ(ns_verdict(neighbor_solicitation()), NdpError::None);
    EXPECT_EQ(rs_verdict(router_solicitation()), NdpError::None);
    EXPECT_EQ(na_verdict(neighbor_advertisement(0x20, ts::ipv6("ff02::1"))), NdpError::None);
    EXPECT_EQ(na_verdict(neighbor_advertisement(0xe0, kPeer)), NdpError::None);
    EXPECT_EQ(ra_verdict(router_advertisement(ts::ipv6("fe80::1"))), NdpError::None);
}

TEST(NdpValidation, HopLimitOtherThan255IsRefused) {
    for (std::uint8_t hop_limit : {0, 1, 64, 254}) {
        auto ns = neighbor_solicitation();
        ns.hop_limit = hop_limit;
        EXPECT_EQ(ns_verdict(ns), NdpError::BadHopLimit) << int{hop_limit};
        auto rs = router_solicitation();
        rs.hop_limit = hop_limit;
        EXPECT_EQ(rs_verdict(rs), NdpError::BadHopLimit);
    }
}

TEST(NdpValidation, NonZeroCodeBadChecksumFragmentAndOtherUpperLayerAreRefused) {
    auto ns = neighbor_solicitation();
    ns.code = 1;
    EXPECT_EQ(ns_verdict(ns), NdpError::BadCode);
    ns = neighbor_solicitation();
    ns.break_checksum = true;
    EXPECT_EQ(ns_verdict(ns), NdpError::BadChecksum);
    ns = neighbor_solicitation();
    ns.fragment_header = true;  // even an atomic fragment (RFC 6980 5)
    EXPECT_EQ(ns_verdict(ns), NdpError::Fragmented);
    ns = neighbor_solicitation();
    ns.next_header = 17;
    EXPECT_EQ(ns_verdict(ns), NdpError::NotIcmpv6);
    auto rs = router_solicitation();
    rs.code = 7;
    EXPECT_EQ(rs_verdict(rs), NdpError::BadCode);
}

TEST(NdpValidation, WrongTypeAndShortMessagesAreRefused) {
    auto rs = router_solicitation();
    EXPECT_EQ(ns_verdict(rs), NdpError::WrongType);
    auto ns = neighbor_solicitation();
    ns.body.resize(19);  // one byte short of the 24-byte fixed part
    EXPECT_EQ(ns_verdict(ns), NdpError::Truncated);
    rs.body.resize(3);
    EXPECT_EQ(rs_verdict(rs), NdpError::Truncated);
    auto ra = router_advertisement(ts::ipv6("fe80::1"));
    ra.body.resize(11);
    EXPECT_EQ(ra_verdict(ra), NdpError::Truncated);
}

TEST(NdpValidation, ZeroLengthOrOverlongOptionMakesTheMessageInvalid) {
    auto ns = neighbor_solicitation();
    ns.body = ts::ns_body(kPeer, ts::concat({ts::nd_option(200, Bytes(6, 1)), ts::nd_option(1, Bytes(6, 2), 0)}));
    EXPECT_EQ(ns_verdict(ns), NdpError::BadOptionLength);
    ns.body = ts::ns_body(kPeer, ts::nd_option(1, Bytes(6, 2), 2));  // claims 16 bytes, has 8
    EXPECT_EQ(ns_verdict(ns), NdpError::BadOptionLength);
    ns.body = ts::ns_body(kPeer, Bytes{1});  // a lone byte where an option header should be
    EXPECT_EQ(ns_verdict(ns), NdpError::BadOptionLength);
    auto rs = router_solicitation();
    rs.body = ts::rs_body(ts::nd_option(1, Bytes(6, 2), 0));
    EXPECT_EQ(rs_verdict(rs), NdpError::BadOptionLength);
}

TEST(NdpValidation, LinkLayerOptionMustHoldOneMac) {
    auto ns = neighbor_solicitation();
    ns.body = ts::ns_body(kPeer, ts::nd_option(1, Bytes(14, 0xaa)));  // 16 bytes: not Ethernet
    EXPECT_EQ(ns_verdict(ns), NdpError::BadLinkLayerOption);
    auto na = neighbor_advertisement(0x20, ts::ipv6("ff02::1"));
    na.body = ts::ns_body(kTenant, ts::nd_option(2, Bytes(14, 0xaa)));
    EXPECT_EQ(na_verdict(na), NdpError::BadLinkLayerOption);
}

TEST(NdpValidation, UnknownOptionsAreSkipped) {
    auto ns = neighbor_solicitation();
    ns.body = ts::ns_body(kPeer, ts::concat({ts::nd_option(250, Bytes(20, 7)), ts::link_layer_option(1, kTenantMac)}));
    EXPECT_EQ(ns_verdict(ns), NdpError::None);
    const Bytes frame = ts::icmpv6_frame(ns);
    const auto ip = Ipv6View::parse(EthernetView::parse(frame)->payload());
    const auto view = validate_neighbor_solicitation(*ip);
    ASSERT_TRUE(view);
    EXPECT_EQ(view->options().count(250), 1u);
    EXPECT_EQ(view->options().source_link_layer_address(), MacAddress(kTenantMac));
}

TEST(NdpValidation, DuplicateAddressDetectionRules) {
    auto dad = neighbor_solicitation();
    dad.src = ts::Ipv6Address{};
    dad.body = ts::ns_body(kPeer);
    EXPECT_EQ(ns_verdict(dad), NdpError::None) << "from :: to the solicited-node group, no options";
    auto with_option = dad;
    with_option.body = ts::ns_body(kPeer, ts::link_layer_option(1, kTenantMac));
    EXPECT_EQ(ns_verdict(with_option), NdpError::UnspecifiedSourceWithLinkLayerOption);
    auto unicast = dad;
    unicast.dst = kPeer;
    EXPECT_EQ(ns_verdict(unicast), NdpError::UnspecifiedSourceNotToSolicitedNode);
    auto all_nodes = dad;
    all_nodes.dst = ts::ipv6("ff02::1");
    EXPECT_EQ(ns_verdict(all_nodes), NdpError::UnspecifiedSourceNotToSolicitedNode);
    // From a real address, a unicast NS (neighbour unreachability detection) is fine.
    auto nud = neighbor_solicitation();
    nud.dst = kPeer;
    EXPECT_EQ(ns_verdict(nud), NdpError::None);
}

TEST(NdpValidation, MulticastTargetIsRefused) {
    auto ns = neighbor_solicitation();
    ns.body = ts::ns_body(ts::ipv6("ff02::1"));
    EXPECT_EQ(ns_verdict(ns), NdpError::MulticastTarget);
    auto na = neighbor_advertisement(0x20, ts::ipv6("ff02::1"));
    na.body = ts::ns_body(ts::ipv6("ff05::2"));
    na.body[0] = 0x20;
    EXPECT_EQ(na_verdict(na), NdpError::MulticastTarget);
}

TEST(NdpValidation, RouterSolicitationFromUnspecifiedMustNotCarryItsMac) {
    auto rs = router_solicitation();
    rs.src = ts::Ipv6Address{};
    EXPECT_EQ(rs_verdict(rs), NdpError::UnspecifiedSourceWithLinkLayerOption);
    rs.body = ts::rs_body();
    EXPECT_EQ(rs_verdict(rs), NdpError::None);
}

TEST(NdpValidation, SolicitedAdvertisementToMulticastIsRefused) {
    EXPECT_EQ(na_verdict(neighbor_advertisement(0x40, ts::ipv6("ff02::1"))), NdpError::SolicitedToMulticast);
    EXPECT_EQ(na_verdict(neighbor_advertisement(0x40, kPeer)), NdpError::None);
}

TEST(NdpValidation, RouterAdvertisementMustComeFromLinkLocal) {
    EXPECT_EQ(ra_verdict(router_advertisement(ts::ipv6("fd00::1"))), NdpError::NotLinkLocalSource);
    EXPECT_EQ(ra_verdict(router_advertisement(ts::Ipv6Address{})), NdpError::NotLinkLocalSource);
}

// A multicast address is never a source (RFC 4291 2.7): a gateway answering such a solicitation
// would send a solicited advertisement to a group (found by ndp_fuzz).
TEST(NdpValidation, NoMessageFromAMulticastSourceIsAccepted) {
    auto ns = neighbor_solicitation();
    ns.src = ts::ipv6("ff02::1");
    EXPECT_EQ(ns_verdict(ns), NdpError::MulticastSource);
    auto na = neighbor_advertisement(0x20, kPeer);
    na.src = ts::ipv6("ff05::2");
    EXPECT_EQ(na_verdict(na), NdpError::MulticastSource);
    auto rs = router_solicitation();
    rs.src = ts::ipv6("ff02::2");
    EXPECT_EQ(rs_verdict(rs), NdpError::MulticastSource);
}

TEST(NdpViews, FieldsOfAnAdvertisement) {
    const Bytes frame = ts::icmpv6_frame(router_advertisement(ts::ipv6("fe80::1")));
    const auto ip = Ipv6View::parse(EthernetView::parse(frame)->payload());
    const auto ra = validate_router_advertisement(*ip);
    ASSERT_TRUE(ra);
    EXPECT_EQ(ra->current_hop_limit(), 64);
    EXPECT_TRUE(ra->managed());
    EXPECT_TRUE(ra->other_configuration());
    EXPECT_EQ(ra->router_preference(), router_preference::kHigh);
    EXPECT_EQ(ra->router_lifetime(), 0x0708);
    EXPECT_EQ(ra->reachable_time(), 30000u);
    EXPECT_EQ(ra->retrans_timer(), 1000u);
    EXPECT_TRUE(ra->options().empty());

    const Bytes na_frame = ts::icmpv6_frame(neighbor_advertisement(0xa0, kPeer));
    const auto na =
        NeighborAdvertisementView::parse(Ipv6View::parse(EthernetView::parse(na_frame)->payload())->payload());
    ASSERT_TRUE(na);
    EXPECT_TRUE(na->router());
    EXPECT_FALSE(na->solicited());
    EXPECT_TRUE(na->override_flag());
    EXPECT_EQ(na->target(), Ipv6Address(kTenant));
    EXPECT_EQ(na->options().target_link_layer_address(), MacAddress(kTenantMac));
    EXPECT_FALSE(na->options().source_link_layer_address());
}

TEST(NdpOptionsTest, DecodersRefuseOtherTypesAndWrongLengths) {
    const Bytes mtu = ts::nd_option(5, Bytes{0, 0, 0, 0, 0x05, 0xdc});
    const Bytes long_mtu = ts::nd_option(5, Bytes(14, 0));
    const Bytes prefix = ts::nd_option(3, Bytes(30, 0));
    const Bytes short_prefix = ts::nd_option(3, Bytes(22, 0));
    EXPECT_EQ(decode_mtu({5, mtu}), 1500u);
    EXPECT_FALSE(decode_mtu({5, long_mtu}));
    EXPECT_FALSE(decode_mtu({3, prefix}));
    EXPECT_TRUE(decode_prefix_information({3, prefix}));
    EXPECT_FALSE(decode_prefix_information({3, short_prefix}));
    EXPECT_FALSE(decode_link_layer_address({5, mtu}));
    // RDNSS: an odd length of at least 3 units (the data here follows the 2-byte header).
    EXPECT_FALSE(RdnssView::parse({25, ts::nd_option(25, Bytes(6, 0))}));   // 1 unit
    EXPECT_FALSE(RdnssView::parse({25, ts::nd_option(25, Bytes(14, 0))}));  // 2 units
    EXPECT_FALSE(RdnssView::parse({25, ts::nd_option(25, Bytes(30, 0))}));  // 4 units
    EXPECT_FALSE(RdnssView::parse({24, ts::nd_option(24, Bytes(22, 0))}));  // another type
    const auto one = RdnssView::parse({25, ts::nd_option(25, Bytes(22, 0))});
    ASSERT_TRUE(one);
    EXPECT_EQ(one->address_count(), 1u);
    const auto two = RdnssView::parse({25, ts::nd_option(25, Bytes(38, 0))});
    ASSERT_TRUE(two);
    EXPECT_EQ(two->address_count(), 2u);
}

TEST(NdpOptionsTest, WriterWritesWholeOptionsOrNothing) {
    Bytes out(20, 0xee);
    NdpOptionWriter writer(out);
    EXPECT_TRUE(writer.mtu(1450));
    EXPECT_FALSE(writer.prefix_information({64, true, true, 1, 1, Ipv6Address{}})) << "32 bytes into 12";
    EXPECT_TRUE(writer.failed());
    EXPECT_EQ(writer.length(), 8u);
    EXPECT_EQ(out[8], 0xee) << "nothing of the refused option written";
    EXPECT_FALSE(writer.mtu(1)) << "a failed writer stays failed";

    Bytes room(4096);
    NdpOptionWriter servers(room);
    EXPECT_FALSE(servers.recursive_dns_servers(1, {}));
    NdpOptionWriter many(room);
    const std::vector<Ipv6Address> too_many(kMaxRdnssAddresses + 1);
    EXPECT_FALSE(many.recursive_dns_servers(1, too_many));
    NdpOptionWriter most(room);
    EXPECT_TRUE(most.recursive_dns_servers(1, std::span(too_many).first(kMaxRdnssAddresses)));
    EXPECT_EQ(most.length(), 8 + 16 * kMaxRdnssAddresses);
    EXPECT_EQ(room[1], 255);
    NdpOptionWriter raw(room);
    EXPECT_TRUE(raw.option(200, Bytes{1, 2, 3, 4, 5, 6, 7}));
    EXPECT_EQ(raw.length(), 16u) << "2 + 7 bytes padded to two units";
    EXPECT_FALSE(raw.option(200, Bytes(2039, 0))) << "past 255 units";
    const auto walked = NdpOptions::parse(ByteSpan(room).first(16));
    ASSERT_TRUE(walked);
    EXPECT_EQ(walked->count(200), 1u);
}

TEST(NdpBuilders, RefuseSmallBuffersAndBadPreference) {
    Bytes out(23);
    EXPECT_EQ(write_neighbor_solicitation(out, Ipv6Address{}), 0u);
    EXPECT_EQ(write_neighbor_advertisement(out, {}), 0u);
    EXPECT_EQ(write_router_advertisement(MutableByteSpan(out).first(15), {}), 0u);
    EXPECT_EQ(write_router_solicitation(MutableByteSpan(out).first(7)), 0u);
    RouterAdvertisementHeader bad;
    bad.router_preference = 4;
    EXPECT_EQ(write_router_advertisement(out, bad), 0u);
    EXPECT_EQ(write_router_solicitation(out), kRouterSolicitationLength);
}

}  // namespace
}  // namespace andromeda::wire
