// Two pipelines wired back to back in memory (node1's underlay output is node2's underlay input),
// and the Light-Andromeda reference capture replayed into a pipeline configured as its node2.
#include <gtest/gtest.h>
#include <pcap/pcap.h>

#include "overlay/decap.hpp"
#include "support/fabric_builder.hpp"
#include "unit/dataplane/pipeline_fixture.hpp"
#include "unit/dataplane/reassembly.hpp"

namespace andromeda::testing {
namespace {

using dataplane::DropReason;
using dataplane::Verdict;

class BackToBackTest : public ::testing::Test {
protected:
    BackToBackTest()
        : fabric1_(load_fabric(fabric_text("node1"))), fabric2_(load_fabric(fabric_text("node2"))),
          node1_(node_config("node1")), node2_(node_config("node2")) {}

    // Sends `frame` from blue .10's port on node1 and returns what node2 puts on blue .20's port.
    std::vector<Bytes> across(const Bytes& frame, bool in_place) {
        ChunkFrame chunk(frame);
        const auto r = in_place ? node1_.process_in_place(kBlue10Port, chunk.buffer, *fabric1_, wire_.fresh())
                                : node1_.process(kBlue10Port, frame, *fabric1_, wire_.fresh());
        EXPECT_EQ(r.verdict, Verdict::forward) << to_string(r.drop_reason);
        std::vector<Bytes> delivered;
        for (std::size_t i = 0; i < wire_.emissions().size(); ++i) {
            EXPECT_EQ(wire_.emissions()[i].port, kUnderlayPort);
            ChunkFrame packet(wire_.frame(i));
            const auto d = in_place ? node2_.process_in_place(kUnderlayPort, packet.buffer, *fabric2_, tenant_.fresh())
                                    : node2_.process(kUnderlayPort, wire_.frame(i), *fabric2_, tenant_.fresh());
            EXPECT_EQ(d.verdict, Verdict::deliver) << to_string(d.drop_reason);
            for (std::size_t j = 0; j < tenant_.emissions().size(); ++j) {
                EXPECT_EQ(tenant_.emissions()[j].port, kBlue20Port);
                delivered.push_back(tenant_.frame(j));
            }
        }
        return delivered;
    }

    static Bytes with_rewritten_macs(Bytes frame) {
        kBlue20Mac.copy_to(frame.data());
        kGatewayMac.copy_to(frame.data() + 6);
        return frame;
    }

    std::shared_ptr<const fabric::FabricSnapshot> fabric1_, fabric2_;
    dataplane::Pipeline node1_, node2_;
    SinkStorage wire_, tenant_;
};

TEST_F(BackToBackTest, FramesArriveByteIdenticalExceptForTheMacRewrite) {
    for (const bool in_place : {false, true}) {
        for (const std::uint8_t protocol : {wire::ip_protocol::kUdp, wire::ip_protocol::kTcp, wire::ip_protocol::kIcmp}) {
            for (const std::size_t payload : {0u, 18u, 1000u, 1402u}) {  // 1402 + TCP = 1450
                SCOPED_TRACE(std::to_string(in_place) + " " + std::to_string(protocol) + " " + std::to_string(payload));
                Ipv4Spec s = blue10_to("10.0.0.20", protocol);
                s.payload = payload;
                s.dont_fragment = true;
                s.fill = static_cast<std::uint8_t>(payload);
                const Bytes frame = ipv4_frame(s);
                const auto delivered = across(frame, in_place);
                ASSERT_EQ(delivered.size(), 1u);
                EXPECT_EQ(delivered[0], with_rewritten_macs(frame));
            }
        }
    }
}

// The copy variants move a long frame within its spare chunk for aligned copies; a spare chunk
// with no room for that move must still get the frame (the general path writes it unmoved).
TEST_F(BackToBackTest, CopiesIntoSpareChunksWithoutRoomToSpareStillArrive) {
    constexpr std::size_t kHeadroom = 256;
    for (const std::size_t payload : {1000u, 1402u}) {
        SCOPED_TRACE(payload);
        Ipv4Spec s = blue10_to("10.0.0.20", wire::ip_protocol::kUdp);
        s.payload = payload;
        s.dont_fragment = true;
        const Bytes frame = ipv4_frame(s);
        const std::size_t outer = overlay::kOuterHeadersSize;
        SinkStorage tight_wire(4, kHeadroom + outer + frame.size(), kHeadroom);
        const auto r = node1_.process(kBlue10Port, frame, *fabric1_, tight_wire.fresh());
        ASSERT_EQ(r.verdict, Verdict::forward) << to_string(r.drop_reason);
        ASSERT_EQ(tight_wire.emissions().size(), 1u);
        const Bytes packet = tight_wire.frame(0);
        ASSERT_EQ(packet.size(), frame.size() + outer);

        SinkStorage tight_tenant(4, kHeadroom + frame.size(), kHeadroom);
        const auto d = node2_.process(kUnderlayPort, packet, *fabric2_, tight_tenant.fresh());
        ASSERT_EQ(d.verdict, Verdict::deliver) << to_string(d.drop_reason);
        ASSERT_EQ(tight_tenant.emissions().size(), 1u);
        EXPECT_EQ(tight_tenant.frame(0), with_rewritten_macs(frame));
    }
}

TEST_F(BackToBackTest, FragmentsArriveAndReassembleToTheOriginal) {
    Ipv4Spec s = blue10_to("10.0.0.20");
    s.payload = 3500;
    const Bytes frame = ipv4_frame(s);
    const auto delivered = across(frame, true);
    ASSERT_EQ(delivered.size(), 3u);
    for (const Bytes& f : delivered) {
        EXPECT_EQ(frame_problems(f, {false}), std::vector<std::string>{});
        EXPECT_EQ(wire::EthernetView::parse(f)->destination(), kBlue20Mac);
        EXPECT_EQ(wire::EthernetView::parse(f)->source(), kGatewayMac);
    }
    std::string error;
    const auto packet = reassemble_ipv4(delivered, error);
    ASSERT_TRUE(packet) << error;
    EXPECT_EQ(*packet, Bytes(frame.begin() + 14, frame.end()));
}

TEST_F(BackToBackTest, TheOtherWayRoundToo) {
    Ipv4Spec s;
    s.src_mac = kBlue20Mac;
    s.dst_mac = kGatewayMac;
    s.src = ipv4("10.0.0.20");
    s.dst = ipv4("10.0.0.10");
    const Bytes frame = ipv4_frame(s);
    ASSERT_EQ(node2_.process(kBlue20Port, frame, *fabric2_, wire_.fresh()).verdict, Verdict::forward);
    ASSERT_EQ(node1_.process(kUnderlayPort, wire_.frame(0), *fabric1_, tenant_.fresh()).verdict, Verdict::deliver);
    Bytes expected = frame;
    kBlue10Mac.copy_to(expected.data());
    kGatewayMac.copy_to(expected.data() + 6);
    EXPECT_EQ(tenant_.frame(0), expected);
    EXPECT_EQ(tenant_.emissions()[0].port, kBlue10Port);
}

// --- the reference capture ---------------------------------------------------------------

std::vector<Bytes> read_pcap(const std::string& path) {
    char error[PCAP_ERRBUF_SIZE] = {};
    pcap_t* pcap = pcap_open_offline(path.c_str(), error);
    if (pcap == nullptr) {
        ADD_FAILURE() << path << ": " << error;
        return {};
    }
    std::vector<Bytes> packets;
    pcap_pkthdr* header = nullptr;
    const u_char* data = nullptr;
    while (pcap_next_ex(pcap, &header, &data) == 1) packets.emplace_back(data, data + header->caplen);
    pcap_close(pcap);
    return packets;
}

// The reference topology (testdata/light-andromeda/README.md) from node 192.168.1.2's side.
const std::string kReferenceNode2 = test_support::FabricBuilder("node2", "192.168.1.2")
                                         .peer("node1", "192.168.1.1", "02:00:00:00:a1:01")
                                         .vpc("reference", 100, "10.0.0.0/24", "10.0.0.1")
                                         .vpc_key("gateway_mac = \"02:00:00:00:00:ff\"")
                                         .endpoint("10.0.0.10", "02:00:00:00:00:10", "node1")
                                         .endpoint("10.0.0.20", "02:00:00:00:00:20", "node2", "tap20")
                                         .toml();

constexpr dataplane::PortId kTap20 = 5;

dataplane::Pipeline reference_node2() {
    dataplane::PipelineConfig c;
    c.underlay_mac = kNode2Mac;
    c.ports = {{kUnderlayPort, dataplane::PortRole::underlay, ""}, {kTap20, dataplane::PortRole::tenant, "tap20"}};
    return dataplane::Pipeline(c);
}

TEST(ReferenceCaptureTest, EveryInnerFrameFor10_0_0_20IsDeliveredIntact) {
    const auto packets = read_pcap(std::string(ANDROMEDA_TESTDATA_DIR) + "/light-andromeda/underlay.pcap");
    ASSERT_GE(packets.size(), 15u);
    auto fabric = load_fabric(kReferenceNode2);
    dataplane::Pipeline node2 = reference_node2();
    SinkStorage out;
    std::size_t delivered = 0;
    for (std::size_t i = 0; i < packets.size(); ++i) {
        SCOPED_TRACE("packet " + std::to_string(i + 1));
        const auto decap = overlay::decapsulate(packets[i], {});
        ASSERT_TRUE(decap.ok());
        const auto r = node2.process(kUnderlayPort, packets[i], *fabric, out.fresh());
        if (decap.packet.outer_dst_ip != kNode2Ip) {
            EXPECT_EQ(r.drop_reason, DropReason::not_for_this_node);
            continue;
        }
        ASSERT_EQ(r.verdict, Verdict::deliver) << to_string(r.drop_reason);
        EXPECT_EQ(out.emissions()[0].port, kTap20);
        Bytes expected(decap.packet.inner.begin(), decap.packet.inner.end());
        kGatewayMac.copy_to(expected.data() + 6);  // the only change: from the gateway
        EXPECT_EQ(out.frame(0), expected);
        EXPECT_EQ(frame_problems(out.frame(0)), std::vector<std::string>{});
        ++delivered;
    }
    EXPECT_EQ(delivered, 9u);  // 3 echo requests, 5 TCP segments, 1 UDP datagram
    EXPECT_EQ(node2.counters().delivered_from_fabric, 9u);
}

TEST(ReferenceCaptureTest, Node2sOwnTrafficIsEncapsulatedAsTheReferenceDid) {
    // What tenant 10.0.0.20 sent (to the gateway MAC) re-encapsulated by our node2 must be what
    // the reference put on the wire, byte for byte: same flow hashes, ports, IDs, checksums.
    const auto packets = read_pcap(std::string(ANDROMEDA_TESTDATA_DIR) + "/light-andromeda/underlay.pcap");
    auto fabric = load_fabric(kReferenceNode2);
    dataplane::Pipeline node2 = reference_node2();
    SinkStorage out;
    std::size_t compared = 0;
    for (std::size_t i = 0; i < packets.size(); ++i) {
        const auto decap = overlay::decapsulate(packets[i], {});
        if (!decap.ok() || decap.packet.outer_src_ip != kNode2Ip) continue;
        SCOPED_TRACE("packet " + std::to_string(i + 1));
        Bytes tenant_frame(decap.packet.inner.begin(), decap.packet.inner.end());
        kGatewayMac.copy_to(tenant_frame.data());
        ASSERT_EQ(node2.process(kTap20, tenant_frame, *fabric, out.fresh()).verdict, Verdict::forward);
        // The reference writes the same two fixed outer MACs in both directions (its README);
        // ours are node2's own and its next hop's. Everything after them must match.
        const Bytes ours = out.frame(0);
        EXPECT_EQ(wire::EthernetView::parse(ours)->source(), kNode2Mac);
        EXPECT_EQ(wire::EthernetView::parse(ours)->destination(), kNode1Mac);
        EXPECT_EQ(Bytes(ours.begin() + 12, ours.end()), Bytes(packets[i].begin() + 12, packets[i].end()));
        ++compared;
    }
    EXPECT_EQ(compared, 6u);  // 3 echo replies, 3 TCP segments
}

}  // namespace
}  // namespace andromeda::testing
