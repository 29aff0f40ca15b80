#include "wire/ipv6.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace andromeda::wire {
namespace {

const Ipv6Address kSrc = *Ipv6Address::parse("fd00::a");
const Ipv6Address kDst = *Ipv6Address::parse("2001:db8::14");

Ipv6Header sample_header(std::uint8_t next_header, std::uint16_t payload_length) {
    return Ipv6Header{0xb8, 0xabcde, payload_length, next_header, 63, kSrc, kDst};
}

TEST(Ipv6, FixedHeaderRoundTrip) {
    std::vector<std::uint8_t> buf(40 + 16 + 6, 0);  // 6 bytes past the payload length
    const auto h = sample_header(ip_protocol::kUdp, 16);
    ASSERT_EQ(write_ipv6_header(buf, h), 40u);
    const auto ip = Ipv6View::parse(buf);
    ASSERT_TRUE(ip);
    EXPECT_EQ(ip->version(), 6);
    EXPECT_EQ(ip->traffic_class(), 0xb8);
    EXPECT_EQ(ip->flow_label(), 0xabcdeu);
    EXPECT_EQ(ip->payload_length(), 16);
    EXPECT_EQ(ip->next_header(), ip_protocol::kUdp);
    EXPECT_EQ(ip->hop_limit(), 63);
    EXPECT_EQ(ip->source(), kSrc);
    EXPECT_EQ(ip->destination(), kDst);
    EXPECT_EQ(ip->header(), h);
    EXPECT_EQ(ip->packet().size(), 56u);
    EXPECT_EQ(ip->payload().size(), 16u);
    EXPECT_EQ(ip->upper_layer_protocol(), ip_protocol::kUdp);
    EXPECT_EQ(ip->upper_layer_offset(), 40u);
    EXPECT_EQ(ip->upper_layer_payload().size(), 16u);
    EXPECT_EQ(ip->extension_header_count(), 0u);
    EXPECT_FALSE(ip->extension_header(0));
    EXPECT_FALSE(ip->has_fragment_header());
    EXPECT_FALSE(ip->is_fragment());
}

// Builds fixed header + HBH (router alert) + routing + fragment + destination options + 12
// bytes of TCP-ish payload.
std::vector<std::uint8_t> chain_packet(std::uint16_t fragment_offset, bool more) {
    std::vector<std::uint8_t> buf(40 + 8 + 24 + 8 + 8 + 12, 0xcc);
    std::size_t off = 40;
    const std::vector<std::uint8_t> router_alert = {5, 2, 0, 0};
    off += write_ipv6_options_header(std::span(buf).subspan(off), ip_protocol::kRouting, router_alert);
    std::vector<std::uint8_t> routing_data(20, 0);  // reserved + one address
    off += write_ipv6_routing_header(std::span(buf).subspan(off), ip_protocol::kFragment, 0, 1, routing_data);
    off += write_ipv6_fragment_header(std::span(buf).subspan(off), ip_protocol::kDestinationOptions,
                                      fragment_offset, more, 0xdeadbeef);
    off += write_ipv6_options_header(std::span(buf).subspan(off), ip_protocol::kTcp, {});
    EXPECT_EQ(off, buf.size() - 12);
    EXPECT_EQ(write_ipv6_header(buf, sample_header(ip_protocol::kHopByHop,
                                                   static_cast<std::uint16_t>(buf.size() - 40))), 40u);
    return buf;
}

TEST(Ipv6, WalksExtensionHeaders) {
    const auto buf = chain_packet(0, true);
    const auto ip = Ipv6View::parse(buf);
    ASSERT_TRUE(ip);
    EXPECT_EQ(ip->next_header(), ip_protocol::kHopByHop);
    EXPECT_EQ(ip->extension_header_count(), 4u);
    EXPECT_EQ(ip->upper_layer_protocol(), ip_protocol::kTcp);
    EXPECT_EQ(ip->upper_layer_offset(), 40u + 8 + 24 + 8 + 8);
    EXPECT_EQ(ip->upper_layer_payload().size(), 12u);
    EXPECT_TRUE(ip->has_fragment_header());
    EXPECT_TRUE(ip->more_fragments());
    EXPECT_EQ(ip->fragment_offset(), 0);
    EXPECT_EQ(ip->fragment_identification(), 0xdeadbeefu);
    EXPECT_TRUE(ip->is_fragment());
    const std::uint8_t types[] = {ip_protocol::kHopByHop, ip_protocol::kRouting, ip_protocol::kFragment,
                                  ip_protocol::kDestinationOptions};
    const std::size_t lengths[] = {8, 24, 8, 8};
    for (std::size_t i = 0; i < 4; ++i) {
        const auto ext = ip->extension_header(i);
        ASSERT_TRUE(ext);
        EXPECT_EQ(ext->type, types[i]);
        EXPECT_EQ(ext->bytes.size(), lengths[i]);
    }
    // Options header padding: router alert (4 bytes) + PadN of 2 bytes; empty one gets PadN of 6.
    EXPECT_EQ(buf[46], 1);
    EXPECT_EQ(buf[47], 0);
    EXPECT_EQ(buf[82], 1);
    EXPECT_EQ(buf[83], 4);
    EXPECT_FALSE(ip->extension_header(4));
}

TEST(Ipv6, FinalDestinationFollowsRoutingHeader) {
    auto buf = chain_packet(0, false);
    const auto final_hop = *Ipv6Address::parse("2001:db8::99");
    final_hop.copy_to(&buf[48 + 8]);  // the routing header's only address
    auto ip = Ipv6View::parse(buf);
    ASSERT_TRUE(ip);
    EXPECT_EQ(ip->destination(), kDst);
    EXPECT_EQ(ip->final_destination(), final_hop);
    EXPECT_EQ(ip->pseudo_header_sum(),
              pseudo_header_sum(kSrc, final_hop, ip_protocol::kTcp, static_cast<std::uint32_t>(12)));
    buf[48 + 3] = 0;  // no segments left: the destination is already the final one
    ip = Ipv6View::parse(buf);
    ASSERT_TRUE(ip);
    EXPECT_EQ(ip->final_destination(), kDst);
    // A segment routing header (type 4) names the final destination first.
    buf[48 + 2] = 4;
    buf[48 + 3] = 1;
    ip = Ipv6View::parse(buf);
    ASSERT_TRUE(ip);
    EXPECT_EQ(ip->final_destination(), final_hop);
}

TEST(Ipv6, LaterFragmentStopsAtFragmentHeader) {
    const auto buf = chain_packet(185, false);
    const auto ip = Ipv6View::parse(buf);
    ASSERT_TRUE(ip);
    EXPECT_EQ(ip->fragment_offset(), 185);
    EXPECT_FALSE(ip->more_fragments());
    EXPECT_TRUE(ip->is_fragment());
    EXPECT_EQ(ip->extension_header_count(), 3u);
    EXPECT_EQ(ip->upper_layer_protocol(), ip_protocol::kDestinationOptions);
    EXPECT_EQ(ip->upper_layer_offset(), 40u + 8 + 24 + 8);
}

TEST(Ipv6, BuilderRefusals) {
    std::vector<std::uint8_t> buf(39);
    EXPECT_EQ(write_ipv6_header(buf, Ipv6Header{}), 0u);
    EXPECT_EQ(write_ipv6_fragment_header(std::span(buf).first(7), 6, 0, false, 0), 0u);
    const std::vector<std::uint8_t> bad_routing(5);
    EXPECT_EQ(write_ipv6_routing_header(buf, 6, 0, 0, bad_routing), 0u);
    const std::vector<std::uint8_t> options(40);
    EXPECT_EQ(write_ipv6_options_header(buf, 6, options), 0u);  // needs 48 bytes
    // Pad1 when exactly one byte is left over.
    std::vector<std::uint8_t> out(8, 0xff);
    const std::vector<std::uint8_t> five(5, 0xee);
    ASSERT_EQ(write_ipv6_options_header(out, 6, five), 8u);
    EXPECT_EQ(out[7], 0);
}

TEST(Ipv6, ParseErrors) {
    auto buf = chain_packet(0, false);
    EXPECT_EQ(Ipv6View::parse(std::span(buf).first(39)).error(), ParseError::Truncated);
    EXPECT_EQ(Ipv6View::parse(std::span(buf).first(buf.size() - 1)).error(), ParseError::Truncated);
    auto bad = buf;
    bad[0] = 0x45;
    EXPECT_EQ(Ipv6View::parse(bad).error(), ParseError::BadVersion);
    // A payload length that ends inside the routing header.
    bad = buf;
    store_be16(&bad[4], 8 + 10);
    EXPECT_EQ(Ipv6View::parse(bad).error(), ParseError::Truncated);
    // Nine destination-options headers in a row.
    std::vector<std::uint8_t> chain(40 + 9 * 8 + 8);
    for (std::size_t i = 0; i < 9; ++i)
        write_ipv6_options_header(std::span(chain).subspan(40 + i * 8), ip_protocol::kDestinationOptions, {});
    write_ipv6_header(chain, sample_header(ip_protocol::kDestinationOptions, 9 * 8 + 8));
    EXPECT_EQ(Ipv6View::parse(chain).error(), ParseError::TooManyExtensionHeaders);
    chain[40 + 7 * 8] = ip_protocol::kUdp;  // eight is fine
    const auto ip = Ipv6View::parse(chain);
    ASSERT_TRUE(ip);
    EXPECT_EQ(ip->extension_header_count(), 8u);
    EXPECT_EQ(ip->upper_layer_protocol(), ip_protocol::kUdp);
}

TEST(Ipv6, MutableSetters) {
    auto buf = chain_packet(0, false);
    const auto ip = MutableIpv6View::parse(buf);
    ASSERT_TRUE(ip);
    ip->set_hop_limit(1);
    ip->set_traffic_class(0x12);
    ip->set_flow_label(0x54321);
    ip->set_source(kDst);
    ip->set_destination(kSrc);
    EXPECT_EQ(ip->hop_limit(), 1);
    EXPECT_EQ(ip->traffic_class(), 0x12);
    EXPECT_EQ(ip->flow_label(), 0x54321u);
    EXPECT_EQ(ip->version(), 6);
    EXPECT_EQ(ip->source(), kDst);
    EXPECT_EQ(ip->destination(), kSrc);
}

// Random extension chains: valid packets, their truncations, and random mutations of them must
// never be read out of bounds; a successful walk ends inside the packet.
TEST(Ipv6, PropertyRandomChainsStayInBounds) {
    std::mt19937 rng(8200);
    const std::uint8_t ext_types[] = {ip_protocol::kHopByHop, ip_protocol::kRouting, ip_protocol::kFragment,
                                      ip_protocol::kDestinationOptions, ip_protocol::kAuthentication};
    for (int iter = 0; iter < 5000; ++iter) {
        std::vector<std::uint8_t> buf(40 + rng() % 200);
        for (auto& b : buf) b = static_cast<std::uint8_t>(rng());
        buf[0] = static_cast<std::uint8_t>(0x60 | (buf[0] & 0x0f));
        buf[6] = ext_types[rng() % 5];
        for (std::size_t off = 40; off + 1 < buf.size(); off += 8) {
            if (rng() % 2) buf[off] = ext_types[rng() % 5];
            buf[off + 1] = static_cast<std::uint8_t>(rng() % 3);
        }
        store_be16(&buf[4], static_cast<std::uint16_t>(rng() % 3 == 0 ? rng() : buf.size() - 40));
        const std::size_t cut = rng() % 4 == 0 ? rng() % (buf.size() + 1) : buf.size();
        const std::vector<std::uint8_t> input(buf.begin(), buf.begin() + static_cast<long>(cut));
        const auto ip = Ipv6View::parse(input);
        if (!ip) continue;
        ASSERT_LE(ip->packet().size(), input.size());
        ASSERT_LE(ip->upper_layer_offset(), ip->packet().size());
        ASSERT_LE(ip->extension_header_count(), kMaxIpv6ExtensionHeaders);
        std::size_t total = 40;
        for (std::size_t i = 0; i < ip->extension_header_count(); ++i) total += ip->extension_header(i)->bytes.size();
        ASSERT_EQ(total, ip->upper_layer_offset());
        (void)ip->fragment_offset();
        (void)ip->fragment_identification();
        (void)ip->pseudo_header_sum();
        (void)ip->final_destination();
    }
}

}  // namespace
}  // namespace andromeda::wire
