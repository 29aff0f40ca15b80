// GoogleTest fixture for one node's pipeline over the shared test fabric (pipeline_world.hpp).
#pragma once

#include <gtest/gtest.h>

#include "overlay/outer_template.hpp"
#include "unit/dataplane/frame_validator.hpp"
#include "unit/dataplane/pipeline_world.hpp"

namespace andromeda::testing {

inline std::shared_ptr<const fabric::FabricSnapshot> load_fabric(const std::string& text, std::uint64_t generation = 1) {
    std::string errors;
    auto snapshot = try_load_fabric(text, generation, errors);
    if (!snapshot) ADD_FAILURE() << errors;
    return snapshot;
}

// Fixture for one node's pipeline over the shared fabric.
class PipelineTest : public ::testing::Test {
protected:
    explicit PipelineTest(const std::string& local = "node1", const std::string& extra_node = "")
        : fabric_(load_fabric(fabric_text(local, extra_node))), pipeline_(node_config(local)) {}

    dataplane::FrameResult run(PortId port, const Bytes& frame) {
        return pipeline_.process(port, frame, *fabric_, out_.fresh());
    }
    dataplane::FrameResult run_in_place(PortId port, ChunkFrame& frame) {
        return pipeline_.process_in_place(port, frame.buffer, *fabric_, out_.fresh());
    }
    std::uint64_t drops(dataplane::DropReason reason) const {
        return dataplane::drop_count(pipeline_.counters().drops, reason);
    }
    // The first emission reuses `chunk`, the input of an in-place run: `header` bytes of outer
    // headers written into its headroom in front of the frame, no spare taken.
    void expect_encapsulated_in_headroom(const ChunkFrame& chunk, std::size_t header) {
        ASSERT_FALSE(out_.emissions().empty());
        const auto& e = out_.emissions()[0];
        EXPECT_EQ(e.input_index, 0);
        EXPECT_EQ(e.frame.chunk, chunk.chunk.data());
        EXPECT_EQ(e.frame.offset, chunk.buffer.offset - header);
        EXPECT_EQ(e.frame.length, chunk.buffer.length + header);
        EXPECT_EQ(out_.sink().spares_used(), 0u);
    }
    // Every emitted frame passes the validator (transport checksums included).
    void expect_valid_emissions(bool sender_content = true) const {
        for (std::size_t i = 0; i < out_.emissions().size(); ++i) {
            const Bytes f = out_.frame(i);
            EXPECT_EQ(frame_problems(f, {sender_content}), std::vector<std::string>{}) << "emission " << i;
        }
    }

    std::shared_ptr<const fabric::FabricSnapshot> fabric_;
    dataplane::Pipeline pipeline_;
    SinkStorage out_;
};

// `sent` is VXLAN from node1 to node2 for `vni` as node1 sends it: node2's MAC, the two nodes'
// addresses, a valid outer header checksum, UDP to 4789, the I bit.
inline void expect_vxlan_from_node1_to_node2(const Bytes& sent, std::uint32_t vni) {
    ASSERT_GE(sent.size(), 50u);
    EXPECT_EQ(wire::MacAddress::from_bytes(sent.data()), kNode2Mac);
    const auto outer = wire::Ipv4View::parse(wire::ByteSpan(sent).subspan(14));
    ASSERT_TRUE(outer);
    EXPECT_EQ(outer->source(), kNode1Ip);
    EXPECT_EQ(outer->destination(), kNode2Ip);
    EXPECT_TRUE(outer->checksum_valid());
    EXPECT_EQ(wire::load_be16(sent.data() + 36), 4789);
    EXPECT_EQ(sent[42], 0x08);
    EXPECT_EQ(wire::load_be32(sent.data() + 46) >> 8, vni);
}

// An overlay packet as `from` would send it to `to` (node2 to node1 by default).
inline Bytes overlay_packet(const Bytes& inner, std::uint32_t vni, wire::Ipv4Address from = kNode2Ip,
                            wire::Ipv4Address to = kNode1Ip, std::uint8_t hop_limit = 64, std::uint8_t flags = 0,
                            overlay::EncapKind kind = overlay::EncapKind::andromeda) {
    overlay::OuterTemplateConfig c;
    c.kind = kind;
    c.src_mac = kNode2Mac;
    c.dst_mac = kNode1Mac;
    c.src_ip = from;
    c.dst_ip = to;
    overlay::OuterTemplate t(c);
    Bytes out(inner.size() + 50);
    overlay::OverlayFields fields;
    fields.vni = vni;
    fields.hop_limit = hop_limit;
    fields.flags = flags;
    out.resize(t.encapsulate(inner, out, fields));
    return out;
}

// Tenant frame specs for blue 10.0.0.10 on node1.
inline Ipv4Spec blue10_to(std::string_view dst, std::uint8_t protocol = wire::ip_protocol::kUdp) {
    Ipv4Spec s;
    s.src_mac = kBlue10Mac;
    s.dst_mac = kGatewayMac;
    s.src = ipv4("10.0.0.10");
    s.dst = ipv4(dst);
    s.protocol = protocol;
    return s;
}

}  // namespace andromeda::testing
