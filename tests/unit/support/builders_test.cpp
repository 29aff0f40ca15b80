// The test-support builders are themselves checked: frames built byte by byte parse with wire's
// views (overlay packets with overlay's decapsulation) and carry checksums wire verifies (two
// implementations that must agree), and the fabric builder's text loads into the fabric it
// describes.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "fabric/loader.hpp"
#include "overlay/decap.hpp"
#include "support/fabric_builder.hpp"
#include "support/frame_builder.hpp"
#include "wire/checksum.hpp"
#include "wire/ethernet.hpp"
#include "wire/ipv4.hpp"
#include "wire/udp.hpp"

namespace andromeda::test_support {
namespace {

TEST(FrameBuilder, ParsesMacAndIpv4TextAndRefusesMalformedText) {
    EXPECT_EQ(parse_mac("02:00:0a:FF:00:10"), (Mac{2, 0, 0x0a, 0xff, 0, 0x10}));
    for (const char* bad : {"", "02:00:00:00:00", "02:00:00:00:00:10:11", "02:00:00:00:00:1g", "02:00:00:00:00:100",
                            "02::00:00:00:10", "02:00:00:00:00:10:"})
        EXPECT_FALSE(parse_mac(bad)) << bad;
    EXPECT_EQ(parse_ipv4("10.0.0.10"), 0x0a00000au);
    EXPECT_EQ(parse_ipv4("255.255.255.255"), 0xffffffffu);
    for (const char* bad : {"", "10.0.0", "10.0.0.256", "10.0.0.1.", "10..0.1", "10.0.0.1 ", "1000.0.0.1"})
        EXPECT_FALSE(parse_ipv4(bad)) << bad;
}

// Random UDP/TCP/ICMP frames with random options, tags and fragment fields: wire parses each one
// back to the same fields, and every checksum verifies with wire's own arithmetic.
TEST(FrameBuilder, RandomFramesParseWithWireAndTheirChecksumsVerify) {
    std::mt19937 rng(7);
    const std::uint8_t protocols[] = {protocol::kUdp, protocol::kTcp, protocol::kIcmp};
    for (int i = 0; i < 2000; ++i) {
        Ipv4Frame s;
        s.src_mac = {2, 0, 0, 0, 0, static_cast<std::uint8_t>(rng())};
        s.dst_mac = {2, 0, 0, 0, 1, static_cast<std::uint8_t>(rng())};
        s.src = static_cast<std::uint32_t>(rng());
        s.dst = static_cast<std::uint32_t>(rng());
        s.protocol = protocols[rng() % 3];
        s.payload = rng() % 1400;
        s.src_port = static_cast<std::uint16_t>(rng());
        s.dst_port = static_cast<std::uint16_t>(rng());
        s.ttl = static_cast<std::uint8_t>(rng());
        s.id = static_cast<std::uint16_t>(rng());
        s.dont_fragment = rng() % 2;
        s.more_fragments = rng() % 4 == 0;
        s.fragment_offset = static_cast<std::uint16_t>(rng() % 3 == 0 ? rng() % 8192 : 0);
        s.options.assign(4 * (rng() % 11), 1);  // NOPs
        s.fill = static_cast<std::uint8_t>(rng());
        for (std::size_t t = rng() % 3; t > 0; --t)
            s.tags.push_back({t == 2 ? std::uint16_t{0x88a8} : std::uint16_t{0x8100}, static_cast<std::uint16_t>(rng() % 4096),
                              static_cast<std::uint8_t>(rng() % 8), rng() % 2 == 0});
        const Bytes f = ipv4_frame(s);

        const auto eth = wire::EthernetView::parse(f);
        ASSERT_TRUE(eth);
        EXPECT_EQ(eth->source().bytes(), s.src_mac);
        EXPECT_EQ(eth->destination().bytes(), s.dst_mac);
        ASSERT_EQ(eth->vlan_count(), s.tags.size());
        for (std::size_t t = 0; t < s.tags.size(); ++t) {
            EXPECT_EQ(eth->tag(t)->tpid, s.tags[t].tpid);
            EXPECT_EQ(eth->tag(t)->vlan_id, s.tags[t].vid);
            EXPECT_EQ(eth->tag(t)->priority, s.tags[t].pcp);
            EXPECT_EQ(eth->tag(t)->drop_eligible, s.tags[t].dei);
        }
        ASSERT_EQ(eth->ethertype(), wire::ethertype::kIpv4);
        const auto ip = wire::Ipv4View::parse(eth->payload());
        ASSERT_TRUE(ip);
        EXPECT_TRUE(wire::checksum_verifies(ip->header_bytes()));
        EXPECT_EQ(ip->header_length(), 20 + s.options.size());
        EXPECT_EQ(ip->source().value(), s.src);
        EXPECT_EQ(ip->destination().value(), s.dst);
        EXPECT_EQ(ip->protocol(), s.protocol);
        EXPECT_EQ(ip->ttl(), s.ttl);
        EXPECT_EQ(ip->identification(), s.id);
        EXPECT_EQ(ip->dont_fragment(), s.dont_fragment);
        EXPECT_EQ(ip->more_fragments(), s.more_fragments);
        EXPECT_EQ(ip->fragment_offset(), s.fragment_offset);
        EXPECT_EQ(ip->payload().size(), s.transport_header() + s.payload);
        const auto l4 = ip->payload();
        const std::uint64_t pseudo = wire::pseudo_header_sum(ip->source(), ip->destination(), s.protocol,
                                                             static_cast<std::uint32_t>(l4.size()));
        if (s.protocol == protocol::kIcmp) {
            EXPECT_TRUE(wire::checksum_verifies(l4));
        } else {
            EXPECT_TRUE(wire::checksum_verifies(l4, pseudo));
            EXPECT_EQ(wire::load_be16(&l4[0]), s.src_port);
            EXPECT_EQ(wire::load_be16(&l4[2]), s.dst_port);
        }
        for (std::size_t b = 0; b < s.payload; ++b)
            ASSERT_EQ(l4[s.transport_header() + b], static_cast<std::uint8_t>(s.fill + b)) << b;
    }
}

// A total length leaves what the headers do not take as payload, and leaves out a transport
// header that does not fit; without `transport` there is none at all.
TEST(FrameBuilder, TotalLengthSizesThePacketAndDropsATransportHeaderThatDoesNotFit) {
    for (const std::uint8_t protocol : {protocol::kUdp, protocol::kTcp, protocol::kIcmp})
        for (std::size_t total = 0; total <= 64; ++total)
            for (const bool transport : {true, false}) {
                Ipv4Frame s;
                s.protocol = protocol;
                s.options.assign(4, 1);
                s.total_length = total;
                s.transport = transport;
                s.fill = 0x40;
                const Bytes f = ipv4_frame(s);
                const std::size_t ip_length = std::max<std::size_t>(total, 24);
                ASSERT_EQ(f.size(), 14 + ip_length) << total;
                const auto ip = wire::Ipv4View::parse(wire::ByteSpan(f).subspan(14));
                ASSERT_TRUE(ip) << total;
                EXPECT_EQ(ip->total_length(), ip_length);
                EXPECT_TRUE(wire::checksum_verifies(ip->header_bytes()));
                const std::size_t header = protocol == protocol::kTcp ? 20 : 8;
                const bool has_header = transport && ip_length - 24 >= header;
                const auto l4 = ip->payload();
                // Without a transport header every byte is payload, counting from the fill.
                if (!has_header) {
                    for (std::size_t b = 0; b < l4.size(); ++b) ASSERT_EQ(l4[b], static_cast<std::uint8_t>(0x40 + b));
                } else if (protocol != protocol::kIcmp) {
                    EXPECT_EQ(wire::load_be16(&l4[0]), s.src_port);
                }
            }
}

TEST(FrameBuilder, OverlayFramesDecapsulateToWhatWasBuilt) {
    std::mt19937 rng(11);
    for (int i = 0; i < 500; ++i) {
        OverlayPacket s;
        s.kind = rng() % 2 ? OverlayKind::vxlan : OverlayKind::andromeda;
        s.src_mac = {2, 0, 0, 0, 0xa1, 2};
        s.dst_mac = {2, 0, 0, 0, 0xa1, 1};
        s.src = 0xc0a80102;
        s.dst = 0xc0a80101;
        s.src_port = static_cast<std::uint16_t>(0xc000 | (rng() & 0x3fff));
        s.dst_port = s.kind == OverlayKind::vxlan ? 4789 : 43481;
        s.vni = rng() & 0xffffff;
        s.hop_limit = static_cast<std::uint8_t>(1 + rng() % 255);
        s.ttl = static_cast<std::uint8_t>(rng());
        s.options.assign(4 * (rng() % 3), 1);
        s.udp_checksum = rng() % 2 == 0;
        s.inner.resize(14 + rng() % 200);
        for (std::uint8_t& b : s.inner) b = static_cast<std::uint8_t>(rng());
        const Bytes f = overlay_frame(s);
        ASSERT_EQ(f.size(), 14 + 20 + s.options.size() + 8 + 8 + s.inner.size());

        const overlay::EncapKind kind =
            s.kind == OverlayKind::vxlan ? overlay::EncapKind::vxlan : overlay::EncapKind::andromeda;
        const auto d = overlay::decapsulate(f, {kind, s.dst_port});
        ASSERT_TRUE(d.ok()) << overlay::to_string(d.error);
        EXPECT_EQ(d.packet.vni, s.vni);
        EXPECT_TRUE(std::equal(d.packet.inner.begin(), d.packet.inner.end(), s.inner.begin(), s.inner.end()));
        EXPECT_EQ(d.packet.outer_src_ip.value(), s.src);
        EXPECT_EQ(d.packet.outer_dst_ip.value(), s.dst);
        EXPECT_EQ(d.packet.outer_ttl, s.ttl);
        EXPECT_EQ(d.packet.outer_src_port, s.src_port);
        if (s.kind == OverlayKind::andromeda) {
            EXPECT_EQ(d.packet.hop_limit, s.hop_limit);
            EXPECT_EQ(d.packet.flow_hash, s.src_port & 0x3fff);
        }
        const auto ip = wire::Ipv4View::parse(wire::ByteSpan(f).subspan(14));
        ASSERT_TRUE(ip);
        EXPECT_TRUE(wire::checksum_verifies(ip->header_bytes()));
        EXPECT_TRUE(ip->dont_fragment());
    }
}

TEST(FrameBuilder, EditsChangeWhatTheyNameAndKeepTheHeaderChecksumWhenAsked) {
    Ipv4Frame s;
    s.total_length = 100;
    const Bytes f = ipv4_frame(s);
    const auto header_verifies = [](const Bytes& frame) {
        return wire::checksum_verifies(wire::ByteSpan(frame).subspan(14, 20));
    };
    EXPECT_FALSE(header_verifies(flipped(f, 24, 0x01)));
    EXPECT_TRUE(header_verifies(flipped(f, 33, 0x01, Ipv4Checksum::refreshed)));
    EXPECT_EQ(flipped(f, 33, 0x01, Ipv4Checksum::refreshed)[33], f[33] ^ 0x01);
    const Bytes longer = with_ipv4_total_length(f, 101);
    EXPECT_EQ(wire::load_be16(&longer[16]), 101);
    EXPECT_TRUE(header_verifies(longer));
    EXPECT_EQ(wire::load_be16(&with_udp_length(f, 7)[38]), 7);
    EXPECT_EQ(resized(f, 10), Bytes(f.begin(), f.begin() + 10));
    EXPECT_EQ(resized(f, f.size() + 3), [&] {
        Bytes padded = f;
        padded.insert(padded.end(), 3, 0);
        return padded;
    }());
    const Bytes qinq = tagged(tagged(f, 0x8100, 100), 0x88a8, 200);
    const auto eth = wire::EthernetView::parse(qinq);
    ASSERT_TRUE(eth);
    ASSERT_EQ(eth->vlan_count(), 2u);
    EXPECT_EQ(eth->tag(0)->tpid, 0x88a8);
    EXPECT_EQ(eth->tag(0)->vlan_id, 200);
    EXPECT_EQ(eth->tag(1)->vlan_id, 100);
    EXPECT_EQ(eth->ethertype(), wire::ethertype::kIpv4);
}

TEST(FrameBuilder, UdpFrameHasTheExactLengthAndNoChecksum) {
    for (std::size_t length : {42u, 60u, 64u, 1514u}) {
        const Bytes f = udp_frame(length, mac("02:00:00:00:00:10"), mac("02:00:00:00:00:ff"), ipv4("10.0.0.10"), ipv4("10.0.0.20"));
        ASSERT_EQ(f.size(), length);
        const auto ip = wire::Ipv4View::parse(wire::ByteSpan(f).subspan(14));
        ASSERT_TRUE(ip);
        EXPECT_EQ(ip->total_length(), length - 14);
        const auto udp = wire::UdpView::parse(ip->payload());
        ASSERT_TRUE(udp);
        EXPECT_EQ(udp->length(), length - 34);
        EXPECT_EQ(udp->checksum(), 0);
    }
}

TEST(FrameBuilder, ArpRequestIsWhatRfc826Says) {
    const Bytes f = arp_request(mac("02:00:00:00:00:10"), ipv4("10.0.0.10"), ipv4("10.0.0.1"));
    ASSERT_EQ(f.size(), 42u);
    const Bytes expected = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 0x10, 0x08, 0x06,  // Ethernet
                            0, 1, 0x08, 0, 6, 4, 0, 1,                                            // request
                            2, 0, 0, 0, 0, 0x10, 10, 0, 0, 10,                                    // sender
                            0, 0, 0, 0, 0, 0, 10, 0, 0, 1};                                       // target
    EXPECT_EQ(f, expected);
}

TEST(FabricBuilder, RendersTablesInNodeTomlOrderWithBlankLinesBetween) {
    const std::string toml =
        two_node_blue("node1").endpoint("10.0.0.10", "02:00:00:00:00:10", "node1", "tap1").toml();
    EXPECT_EQ(toml, R"([node]
name = "node1"
underlay = "eth1"
address = "192.168.1.1"

[[nodes]]
name = "node2"
address = "192.168.1.2"

[[vpc]]
name = "blue"
vni = 100
cidr = "10.0.0.0/24"
gateway = "10.0.0.1"

[[vpc.endpoint]]
ip = "10.0.0.10"
mac = "02:00:00:00:00:10"
node = "node1"
port = "tap1"
)");
}

TEST(FabricBuilder, WhatItBuildsLoadsIntoTheFabricItDescribes) {
    const std::string toml = FabricBuilder("node2", "192.168.1.2")
                                 .node_key("encap = \"vxlan\"")
                                 .uplink("eth2", "203.0.113.2", "203.0.113.1")
                                 .peer("node1", "192.168.1.1", "02:00:00:00:a1:01")
                                 .vpc("blue", 100, "10.0.0.0/24", "10.0.0.1")
                                 .nat("node2", "203.0.113.10")
                                 .endpoint("10.0.0.10", "02:00:00:00:00:10", "node1")
                                 .endpoint("10.0.0.20", "02:00:00:00:00:20", "node2", "tap20")
                                 .vpc("green", 200, "10.0.0.0/24", "10.0.0.1")
                                 .vpc_key("fastpath = false")
                                 .endpoint("10.0.0.20", "02:00:00:c8:00:14", "node1")
                                 .toml();
    const auto loaded = fabric::load_fabric_string(toml, "built.toml");
    ASSERT_TRUE(loaded.ok()) << fabric::to_string(loaded.errors) << toml;
    const auto& f = *loaded.snapshot;
    ASSERT_EQ(f.vpcs().size(), 2u);
    EXPECT_EQ(f.vpcs()[0].name, "blue");
    EXPECT_EQ(f.vpcs()[1].vni, 200u);
    const auto* local = f.find_endpoint(100, wire::Ipv4Address(0x0a000014));
    ASSERT_NE(local, nullptr);
    EXPECT_EQ(f.node_of(*local).name, "node2");
    EXPECT_EQ(local->port, "tap20");
    const auto* green = f.find_endpoint(200, wire::Ipv4Address(0x0a000014));
    ASSERT_NE(green, nullptr);
    EXPECT_EQ(f.node_of(*green).name, "node1");
}

}  // namespace
}  // namespace andromeda::test_support
