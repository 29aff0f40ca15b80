// The shared test world over an IPv6 underlay (pipeline_world.hpp's with_ipv6_underlay: nodes at
// fd00:1::1, ::2, ::3, blue and green dual-stack) and a fixture parameterized by the encapsulation,
// with an expectation for outer IPv6 packets checked byte by byte against values computed here
// (docs/wire-format.md, "IPv6 underlay"), not by the overlay library.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "overlay/decap.hpp"
#include "overlay/outer_template.hpp"
#include "unit/dataplane/pipeline_fixture.hpp"

namespace andromeda::testing {

// Blue's and green's dual-stack addresses (dual_stack_fabric: EUI-64 of the endpoints' MACs).
inline const wire::Ipv6Address kBlue10v6 = ipv6("fd00:0:0:1:0:ff:fe00:10");
inline const wire::Ipv6Address kBlue20v6 = ipv6("fd00:0:0:1:0:ff:fe00:20");
inline const wire::Ipv6Address kGreen10v6 = ipv6("fd00:0:0:1:0:ff:fec8:a");
inline const wire::Ipv6Address kGreen20v6 = ipv6("fd00:0:0:1:0:ff:fec8:14");

// The dual-stack world of `local` with `kind`'s encapsulation over the IPv6 underlay.
inline std::string ipv6_fabric(overlay::EncapKind kind, const std::string& local = "node1") {
    return with_ipv6_underlay(kind == overlay::EncapKind::vxlan ? dual_stack_vxlan_fabric(local)
                                                                : dual_stack_fabric(local));
}

inline std::uint16_t overlay_port_of(overlay::EncapKind kind) {
    return kind == overlay::EncapKind::vxlan ? 4789 : 43481;
}

// `frame` with its destination MAC replaced, as the pipeline hands a frame to the overlay.
inline Bytes with_destination(Bytes frame, const wire::MacAddress& mac) {
    mac.copy_to(frame.data());
    return frame;
}

// The UDP checksum of the datagram at `udp` under an IPv6 pseudo-header (RFC 8200 section 8.1)
// of `ip`'s addresses, by test_support's RFC 1071 sum: its checksum field counted as 0, a computed
// 0 sent as 0xffff.
inline std::uint16_t udp6_checksum(const std::uint8_t* ip, const std::uint8_t* udp) {
    const std::uint16_t length = test_support::get16(udp + 4);
    Bytes datagram(udp, udp + length);
    datagram[6] = datagram[7] = 0;
    const std::uint32_t pseudo = test_support::ones_sum(ip + 8, 32) + length + 17;
    const std::uint16_t sum = test_support::checksum_of(test_support::ones_sum(datagram.data(), length, pseudo));
    return sum == 0 ? 0xffff : sum;
}

// The outer headers an IPv6 overlay packet is expected to carry (node1 to node2 by default).
struct Outer6 {
    wire::MacAddress dst_mac = kNode2Mac;
    wire::Ipv6Address dst = kNode2Ip6;
    wire::MacAddress src_mac = kNode1Mac;
    wire::Ipv6Address src = kNode1Ip6;
    std::uint16_t vlan = 0;  // an 802.1Q tag between the MACs and 0x86DD
};

// `sent` is `inner` encapsulated for `vni` with `kind` over IPv6 as `outer` says: 70 outer bytes
// (74 tagged), each field checked; the flow label, the UDP source port and (Andromeda) the
// header's hash all carry one hash, `hash` when given.
inline void expect_ipv6_overlay(const Bytes& sent, const Bytes& inner, std::uint32_t vni, overlay::EncapKind kind,
                                const Outer6& outer = {}, std::optional<std::uint16_t> hash = std::nullopt) {
    const std::size_t eth = outer.vlan != 0 ? 18 : 14;
    ASSERT_EQ(sent.size(), eth + 56 + inner.size());
    EXPECT_EQ(wire::MacAddress::from_bytes(sent.data()), outer.dst_mac);
    EXPECT_EQ(wire::MacAddress::from_bytes(sent.data() + 6), outer.src_mac);
    if (outer.vlan != 0) {
        EXPECT_EQ(wire::load_be16(sent.data() + 12), 0x8100);
        EXPECT_EQ(wire::load_be16(sent.data() + 14), outer.vlan);
    }
    EXPECT_EQ(wire::load_be16(sent.data() + eth - 2), 0x86dd);
    const std::uint8_t* ip = sent.data() + eth;
    const std::uint32_t first_word = wire::load_be32(ip);
    EXPECT_EQ(first_word >> 28, 6u) << "version";
    EXPECT_EQ(first_word >> 20 & 0xff, 0u) << "traffic class";
    const std::uint32_t label = first_word & 0xfffff;
    EXPECT_EQ(wire::load_be16(ip + 4), inner.size() + 16) << "payload length: UDP, all there is";
    EXPECT_EQ(ip[6], 17) << "next header";
    EXPECT_EQ(ip[7], 64) << "hop limit";
    EXPECT_EQ(wire::Ipv6Address::from_bytes(ip + 8), outer.src);
    EXPECT_EQ(wire::Ipv6Address::from_bytes(ip + 24), outer.dst);
    const std::uint8_t* udp = ip + 40;
    // The label is the hash in its top 16 bits and the hash's top nibble in its bottom 4.
    const auto label_hash = static_cast<std::uint16_t>(label >> 4);
    EXPECT_EQ(label & 0xf, static_cast<std::uint32_t>(label_hash >> 12)) << "flow label " << std::hex << label;
    if (hash) {
        EXPECT_EQ(label_hash, *hash) << "flow label " << std::hex << label;
    }
    EXPECT_EQ(wire::load_be16(udp), label_hash | 0xc000) << "UDP source port";
    EXPECT_EQ(wire::load_be16(udp + 2), overlay_port_of(kind));
    EXPECT_EQ(wire::load_be16(udp + 4), inner.size() + 16) << "UDP length";
    EXPECT_NE(wire::load_be16(udp + 6), 0) << "UDP checksum: mandatory over IPv6";
    EXPECT_EQ(wire::load_be16(udp + 6), udp6_checksum(ip, udp)) << "UDP checksum";
    const std::uint8_t* header = udp + 8;
    if (kind == overlay::EncapKind::andromeda) {
        EXPECT_EQ(header[0], 0x10) << "version 1, no flags";
        EXPECT_EQ(header[1], 0) << "inner protocol Ethernet";
        EXPECT_EQ(wire::load_be16(header + 2), label_hash) << "the header's flow hash";
        EXPECT_EQ(header[7], 64) << "overlay hop limit";
    } else {
        EXPECT_EQ(header[0], 0x08) << "VXLAN I flag";
        EXPECT_EQ(header[1] | header[2] | header[3] | header[7], 0) << "VXLAN reserved bytes";
    }
    EXPECT_EQ(static_cast<std::uint32_t>(header[4] << 16 | header[5] << 8 | header[6]), vni);
    EXPECT_EQ(Bytes(header + 8, sent.data() + sent.size()), inner);
}

// `inner` for `vni` as node2 sends it over the IPv6 underlay with `kind`: an outer IPv6 template
// from `from` to `to` (node2 to node1 by default).
inline Bytes overlay_packet6(const Bytes& inner, overlay::EncapKind kind, const wire::Ipv6Address& from = kNode2Ip6,
                             const wire::Ipv6Address& to = kNode1Ip6, std::uint32_t vni = 100) {
    overlay::OuterTemplateConfig c;
    c.kind = kind;
    c.src_mac = kNode2Mac;
    c.dst_mac = kNode1Mac;
    c.ipv6 = true;
    c.src_ip6 = from;
    c.dst_ip6 = to;
    overlay::OuterTemplate t(c);
    Bytes out(inner.size() + 70);
    overlay::OverlayFields fields;
    fields.vni = vni;
    fields.flow_hash = 0x1234;
    out.resize(t.encapsulate(inner, out, fields));
    return out;
}

// node1 of the IPv6-underlay world with Andromeda's encapsulation or VXLAN (the test parameter).
class Ipv6UnderlayTest : public ::testing::TestWithParam<overlay::EncapKind> {
protected:
    Ipv6UnderlayTest() : fabric_(load_fabric(ipv6_fabric(GetParam()))), pipeline_(config(true)) {}

    static overlay::EncapKind kind() { return GetParam(); }
    static overlay::DecapConfig decap_config() { return {kind(), 0}; }
    static dataplane::PipelineConfig config(bool express_lanes) {
        dataplane::PipelineConfig c = ipv6_node_config("node1");
        c.express_lanes = express_lanes;
        return c;
    }

    dataplane::FrameResult run(PortId port, const Bytes& frame) {
        return pipeline_.process(port, frame, *fabric_, out_.fresh());
    }
    dataplane::FrameResult run_in_place(PortId port, ChunkFrame& frame) {
        return pipeline_.process_in_place(port, frame.buffer, *fabric_, out_.fresh());
    }

    // What one frame through a pipeline gave: the result and copies of the emissions.
    struct Sent {
        dataplane::FrameResult result;
        std::vector<Bytes> frames;
        std::vector<PortId> ports;
    };
    // `frame` from `port` through `pipeline` (node1's by default) over `fabric` (ours by default),
    // in place unless `copy`: in place is the daemon's way, the outer headers written into the
    // headroom of the frame's own buffer; the copy variant writes a spare buffer.
    Sent send(PortId port, const Bytes& frame, bool copy = false, dataplane::Pipeline* pipeline = nullptr,
              const fabric::FabricSnapshot* fabric = nullptr) {
        dataplane::Pipeline& p = pipeline != nullptr ? *pipeline : pipeline_;
        const fabric::FabricSnapshot& f = fabric != nullptr ? *fabric : *fabric_;
        ChunkFrame chunk(frame);
        Sent sent;
        sent.result = copy ? p.process(port, frame, f, out_.fresh()) : p.process_in_place(port, chunk.buffer, f, out_.fresh());
        for (std::size_t i = 0; i < out_.emissions().size(); ++i) {
            sent.frames.push_back(out_.frame(i));
            sent.ports.push_back(out_.emissions()[i].port);
        }
        return sent;
    }
    // send() expecting exactly one emission with `verdict`: that emission (empty otherwise).
    Bytes one(PortId port, const Bytes& frame, dataplane::Verdict verdict, bool copy = false, dataplane::Pipeline* pipeline = nullptr,
              const fabric::FabricSnapshot* fabric = nullptr) {
        const Sent sent = send(port, frame, copy, pipeline, fabric);
        EXPECT_EQ(sent.result.verdict, verdict) << to_string(sent.result.drop_reason);
        EXPECT_EQ(sent.frames.size(), 1u);
        return sent.result.verdict == verdict && sent.frames.size() == 1 ? sent.frames[0] : Bytes{};
    }

    // `inner` as a peer sends it over the IPv6 underlay (overlay_packet6), with this test's kind.
    static Bytes from_peer(const Bytes& inner, const wire::Ipv6Address& from = kNode2Ip6,
                           const wire::Ipv6Address& to = kNode1Ip6, std::uint32_t vni = 100) {
        return overlay_packet6(inner, kind(), from, to, vni);
    }

    // `frame` from `port` through node1 over the IPv4 underlay of the same world: the first emission.
    static Bytes sent_over_ipv4(PortId port, const Bytes& frame) {
        const auto fabric = load_fabric(kind() == overlay::EncapKind::vxlan ? dual_stack_vxlan_fabric("node1")
                                                                            : dual_stack_fabric("node1"));
        dataplane::Pipeline node1(node_config("node1"));
        SinkStorage out;
        const dataplane::FrameResult r = node1.process(port, frame, *fabric, out.fresh());
        EXPECT_GE(r.emissions, 1) << to_string(r.drop_reason);
        return r.emissions >= 1 ? out.frame(0) : Bytes{};
    }
    // What node1 over an IPv4 underlay delivers of `inner` from node2.
    static Bytes delivered_over_ipv4(const Bytes& inner) {
        return sent_over_ipv4(kUnderlayPort, overlay_packet(inner, 100, kNode2Ip, kNode1Ip, 64, 0, kind()));
    }
    // `sent` (over IPv6) is what the IPv4 underlay sends for `frame`, its outer IP header aside:
    // the same UDP ports, overlay header and inner frame.
    static void expect_as_over_ipv4(const Bytes& sent, PortId port, const Bytes& frame) {
        const Bytes over_ipv4 = sent_over_ipv4(port, frame);
        ASSERT_EQ(over_ipv4.size() + 20, sent.size());
        EXPECT_EQ(Bytes(sent.begin() + 54, sent.begin() + 58), Bytes(over_ipv4.begin() + 34, over_ipv4.begin() + 38));
        EXPECT_EQ(Bytes(sent.begin() + 62, sent.end()), Bytes(over_ipv4.begin() + 42, over_ipv4.end()));
    }

    std::shared_ptr<const fabric::FabricSnapshot> fabric_;
    dataplane::Pipeline pipeline_;
    SinkStorage out_;
};

}  // namespace andromeda::testing
