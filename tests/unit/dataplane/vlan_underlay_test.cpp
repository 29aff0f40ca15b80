// [node] underlay_vlan: the pipeline tags every outer frame with the VID (54 outer bytes) in the
// copy, in-place and batch variants, for fragments and for NAT's way back too, and each tagged
// frame is byte for byte the untagged one with the tag inserted after the MACs. On the underlay,
// frames tagged with the VID or untagged (a NIC's VLAN offload strips the tag before XDP) are
// decapsulated; another VID is dropped as wrong_underlay_vlan.
#include <gtest/gtest.h>

#include "overlay/decap.hpp"
#include "overlay/outer_template.hpp"
#include "unit/dataplane/pipeline_fixture.hpp"

namespace andromeda::testing {
namespace {

using dataplane::DropReason;
using dataplane::FrameResult;
using dataplane::RxFrame;
using dataplane::Verdict;

constexpr std::uint16_t kVid = 100;

// The shared test fabric with underlay_vlan set and every peer's MAC pinned (required with a VLAN).
std::string vlan_fabric_text(std::uint16_t vid) {
    std::string text = fabric_text("node1", "underlay_vlan = " + std::to_string(vid) + "\n");
    for (const auto& [node, mac] : {std::pair{"node1", "02:00:00:00:a1:01"}, std::pair{"node2", "02:00:00:00:a1:02"},
                                    std::pair{"node3", "02:00:00:00:a1:03"}}) {
        const std::string entry = std::string("name = \"") + node + "\"\naddress = ";
        const auto at = text.find(entry);
        const auto end = text.find('\n', at + entry.size());
        text.insert(end + 1, std::string("mac = \"") + mac + "\"\n");
    }
    return text;
}

// The untagged frame `plain` with an 802.1Q tag of kVid inserted after its MACs.
Bytes with_tag(const Bytes& plain) {
    if (plain.size() < 14) return {};
    Bytes tagged(plain.size() + 4);
    std::copy(plain.begin(), plain.begin() + 12, tagged.begin());
    wire::store_be16(tagged.data() + 12, 0x8100);
    wire::store_be16(tagged.data() + 14, kVid);
    std::copy(plain.begin() + 12, plain.end(), tagged.begin() + 16);
    return tagged;
}

class VlanPipelineTest : public PipelineTest {
protected:
    VlanPipelineTest() { fabric_ = load_fabric(vlan_fabric_text(kVid)); }

    // The same frame through an untagged pipeline of the same fabric (fresh IP IDs, as ours).
    Bytes untagged_encap(const Bytes& frame) {
        dataplane::Pipeline plain(node_config("node1"));
        const auto snapshot = load_fabric(fabric_text("node1"));
        SinkStorage out;
        const FrameResult r = plain.process(kBlue10Port, frame, *snapshot, out.fresh());
        EXPECT_EQ(r.verdict, Verdict::forward);
        return r.emissions == 1 ? out.frame(0) : Bytes{};
    }
};

TEST_F(VlanPipelineTest, TheVlanComesFromTheConfigAndNeedsPinnedMacs) {
    EXPECT_EQ(fabric_->local().underlay_vlan, kVid);
    std::string errors;
    EXPECT_EQ(try_load_fabric(fabric_text("node1", "underlay_vlan = 100\n"), 1, errors), nullptr);
    EXPECT_NE(errors.find("node \"node2\" has no pinned next-hop MAC"), std::string::npos) << errors;
}

TEST_F(VlanPipelineTest, CopyVariantEmitsTheUntaggedFrameWithTheTagInserted) {
    const Bytes frame = ipv4_frame(blue10_to("10.0.0.20"));
    const FrameResult r = run(kBlue10Port, frame);
    ASSERT_EQ(r.verdict, Verdict::forward) << to_string(r.drop_reason);
    ASSERT_EQ(out_.emissions().size(), 1u);
    EXPECT_EQ(out_.emissions()[0].port, kUnderlayPort);
    const Bytes tagged = out_.frame(0);
    ASSERT_EQ(tagged.size(), frame.size() + 54);
    EXPECT_EQ(tagged, with_tag(untagged_encap(frame)));
    const auto decap = overlay::decapsulate(tagged, {});
    ASSERT_TRUE(decap.ok()) << to_string(decap.error);
    EXPECT_EQ(decap.packet.outer_vlan_id, kVid);
    EXPECT_EQ(decap.packet.outer_dst_mac, kNode2Mac);
    EXPECT_EQ(decap.packet.outer_dst_ip, kNode2Ip);
    EXPECT_EQ(decap.packet.vni, 100u);
    EXPECT_EQ(Bytes(decap.packet.inner.begin() + 6, decap.packet.inner.end()), Bytes(frame.begin() + 6, frame.end()));
    EXPECT_EQ(pipeline_.counters().encapsulated, 1u);
}

TEST_F(VlanPipelineTest, InPlaceVariantWritesTheTaggedHeadersIntoTheHeadroom) {
    const Bytes frame = ipv4_frame(blue10_to("10.0.0.20"));
    ChunkFrame chunk(frame, 256);
    ASSERT_EQ(run_in_place(kBlue10Port, chunk).verdict, Verdict::forward);
    expect_encapsulated_in_headroom(chunk, 54);
    EXPECT_EQ(out_.frame(0), with_tag(untagged_encap(frame)));
    EXPECT_EQ(pipeline_.counters().in_place_fallback_copies, 0u);

    // 52 bytes of headroom would do untagged, not tagged: a copy, still tagged.
    ChunkFrame tight(frame, 52);
    ASSERT_EQ(run_in_place(kBlue10Port, tight).verdict, Verdict::forward);
    EXPECT_EQ(out_.emissions()[0].input_index, -1);
    EXPECT_EQ(pipeline_.counters().in_place_fallback_copies, 1u);
    const Bytes copied = out_.frame(0);
    ASSERT_EQ(copied.size(), frame.size() + 54);
    EXPECT_EQ(wire::load_be16(copied.data() + 12), 0x8100);
    EXPECT_EQ(wire::load_be16(copied.data() + 14), kVid);
    EXPECT_TRUE(overlay::decapsulate(copied, {}).ok());
}

TEST_F(VlanPipelineTest, ABatchTagsEveryOuterFrameFragmentsIncluded) {
    std::vector<ChunkFrame> chunks;
    chunks.emplace_back(ipv4_frame(blue10_to("10.0.0.20")));
    chunks.emplace_back(ipv4_frame(blue10_to("10.0.0.11")));  // local: delivered untouched, no tag
    Ipv4Spec big = blue10_to("10.0.0.20");
    big.payload = 3000;
    big.dont_fragment = false;
    chunks.emplace_back(ipv4_frame(big));
    chunks.emplace_back(ipv4_frame(blue10_to("10.0.0.20", wire::ip_protocol::kTcp)));
    std::vector<RxFrame> burst;
    for (auto& c : chunks) burst.push_back({kBlue10Port, c.buffer});
    std::vector<FrameResult> results(burst.size());
    ASSERT_EQ(pipeline_.process_batch(burst, *fabric_, out_.fresh(), results), burst.size());
    EXPECT_EQ(results[0].verdict, Verdict::forward);
    EXPECT_EQ(results[1].verdict, Verdict::deliver);
    EXPECT_EQ(results[2].verdict, Verdict::forward);
    EXPECT_EQ(results[2].emissions, 3);
    EXPECT_EQ(results[3].verdict, Verdict::forward);
    const auto e = out_.emissions();
    ASSERT_EQ(e.size(), 6u);
    std::size_t tagged = 0;
    for (std::size_t i = 0; i < e.size(); ++i) {
        const Bytes f = out_.frame(i);
        if (e[i].port == kBlue11Port) {
            EXPECT_EQ(wire::load_be16(f.data() + 12), 0x0800) << "a local delivery carries no tag";
            continue;
        }
        ASSERT_EQ(e[i].port, kUnderlayPort);
        ASSERT_EQ(wire::load_be16(f.data() + 12), 0x8100) << "emission " << i;
        EXPECT_EQ(wire::load_be16(f.data() + 14), kVid);
        const auto decap = overlay::decapsulate(f, {});
        ASSERT_TRUE(decap.ok()) << "emission " << i << ": " << to_string(decap.error);
        EXPECT_EQ(decap.packet.inner_offset, 54u);
        // The underlay MTU (IP) is the same with a tag: each fragment's outer IP packet fits 1500.
        EXPECT_LE(f.size() - 18, 1500u);
        ++tagged;
    }
    EXPECT_EQ(tagged, 5u);
    EXPECT_EQ(pipeline_.counters().fragments_sent, 3u);
}

TEST_F(VlanPipelineTest, RouteFromNatEncapsulatesTagged) {
    Ipv4Spec s;
    s.src_mac = kGatewayMac;
    s.dst_mac = kGatewayMac;
    s.src = ipv4("8.8.8.8");
    s.dst = ipv4("192.168.50.20");
    ASSERT_EQ(pipeline_.route_from_nat(400, ipv4_frame(s), *fabric_, out_.fresh()).verdict, Verdict::forward);
    const Bytes f = out_.frame(0);
    EXPECT_EQ(wire::load_be16(f.data() + 12), 0x8100);
    EXPECT_EQ(wire::load_be16(f.data() + 14), kVid);
    EXPECT_TRUE(overlay::decapsulate(f, {}).ok());
}

// Blue 10.0.0.20 (node2) -> 10.0.0.10, encapsulated by node2 with `vid` (0: untagged).
Bytes from_node2(std::uint16_t vid) {
    Ipv4Spec s;
    s.src_mac = kBlue20Mac;
    s.dst_mac = kBlue10Mac;
    s.src = ipv4("10.0.0.20");
    s.dst = ipv4("10.0.0.10");
    s.protocol = wire::ip_protocol::kUdp;
    overlay::OuterTemplateConfig c;
    c.src_mac = kNode2Mac;
    c.dst_mac = kNode1Mac;
    c.src_ip = kNode2Ip;
    c.dst_ip = kNode1Ip;
    c.vlan_id = vid;
    overlay::OuterTemplate t(c);
    const Bytes inner = ipv4_frame(s);
    Bytes out(inner.size() + 54);
    overlay::OverlayFields fields;
    fields.vni = 100;
    out.resize(t.encapsulate(inner, out, fields));
    return out;
}

TEST_F(VlanPipelineTest, UnderlayAcceptsItsVidAndUntaggedAndDropsAnotherVid) {
    for (const bool in_place : {false, true}) {
        pipeline_.reset_counters();
        for (const std::uint16_t vid : {kVid, std::uint16_t{0}}) {
            ChunkFrame chunk(from_node2(vid));
            const FrameResult r =
                in_place ? run_in_place(kUnderlayPort, chunk) : run(kUnderlayPort, from_node2(vid));
            ASSERT_EQ(r.verdict, Verdict::deliver) << "vid " << vid << ": " << to_string(r.drop_reason);
            EXPECT_EQ(out_.emissions()[0].port, kBlue10Port);
            EXPECT_EQ(wire::load_be16(out_.frame(0).data() + 12), 0x0800);
        }
        ChunkFrame other(from_node2(200));
        const FrameResult r = in_place ? run_in_place(kUnderlayPort, other) : run(kUnderlayPort, from_node2(200));
        EXPECT_EQ(r.verdict, Verdict::drop);
        EXPECT_EQ(r.drop_reason, DropReason::wrong_underlay_vlan);
        EXPECT_EQ(drops(DropReason::wrong_underlay_vlan), 1u);
        EXPECT_EQ(pipeline_.counters().delivered, 2u);
    }
}

// Without underlay_vlan nothing changes: untagged 50-byte outer headers, any tag accepted.
class NoVlanPipelineTest : public PipelineTest {};

TEST_F(NoVlanPipelineTest, UntaggedOuterFramesAndAnyTagAccepted) {
    ASSERT_EQ(run(kBlue10Port, ipv4_frame(blue10_to("10.0.0.20"))).verdict, Verdict::forward);
    EXPECT_EQ(out_.frame(0).size(), ipv4_frame(blue10_to("10.0.0.20")).size() + 50);
    EXPECT_EQ(wire::load_be16(out_.frame(0).data() + 12), 0x0800);
    for (const std::uint16_t vid : {std::uint16_t{0}, kVid, std::uint16_t{200}})
        EXPECT_EQ(run(kUnderlayPort, from_node2(vid)).verdict, Verdict::deliver) << "vid " << vid;
    EXPECT_EQ(drops(DropReason::wrong_underlay_vlan), 0u);
}

}  // namespace
}  // namespace andromeda::testing
