// GoogleTest fixture for NatPipeline end to end: node1 (tenants) and node2 (NAT gateway) of
// nat_world.hpp, each frame carried hop by hop through both nodes' NatPipelines, in one of three
// modes (copy, in place, batch) so every test covers all of NatPipeline's entry points.
#pragma once

#include <functional>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "unit/dataplane/frame_validator.hpp"
#include "unit/dataplane/nat_world.hpp"
#include "unit/dataplane/pipeline_fixture.hpp"
#include "unit/nat/nat_test_packets.hpp"

namespace andromeda::testing::natworld {

enum class Mode { copy, in_place, batch };

inline std::string mode_name(const ::testing::TestParamInfo<Mode>& info) {
    return info.param == Mode::copy ? "copy" : info.param == Mode::in_place ? "in_place" : "batch";
}

// What one node did with one frame: its result and copies of the frames it emitted.
struct Sent {
    dataplane::NatFrameResult result;
    std::vector<std::pair<PortId, Bytes>> frames;
};

inline const Bytes* frame_on(const Sent& sent, PortId port) {
    for (const auto& [p, bytes] : sent.frames)
        if (p == port) return &bytes;
    return nullptr;
}

// The IPv4 packet of an untagged frame.
inline Bytes ip_of(const Bytes& frame) { return Bytes(frame.begin() + 14, frame.end()); }

inline bool contains_address(const Bytes& bytes, wire::Ipv4Address address) {
    const std::uint8_t a[4] = {static_cast<std::uint8_t>(address.value() >> 24),
                               static_cast<std::uint8_t>(address.value() >> 16),
                               static_cast<std::uint8_t>(address.value() >> 8),
                               static_cast<std::uint8_t>(address.value())};
    return std::search(bytes.begin(), bytes.end(), a, a + 4) != bytes.end();
}

class NatPipelineTest : public ::testing::TestWithParam<Mode> {
protected:
    // `edit`, when given, rewrites both nodes' fabric text (e.g. to add security groups).
    explicit NatPipelineTest(const std::string& port_range = "[1024, 65535]", std::size_t max_flows = 4096,
                             const std::function<std::string(std::string)>& edit = {})
        : engine_(small_nat_settings(max_flows)),
          node1_(load_fabric(edited(nat_fabric_text("node1", port_range), edit)), "node1", nullptr),
          node2_(load_fabric(edited(nat_fabric_text("node2", port_range), edit)), "node2", &engine_) {}

    static std::string edited(std::string text, const std::function<std::string(std::string)>& edit) {
        return edit ? edit(std::move(text)) : text;
    }

    Sent send(NatNode& node, PortId port, const Bytes& frame) {
        Sent sent;
        dataplane::FrameSink& sink = node.out.fresh();
        ChunkFrame chunk(frame);
        switch (GetParam()) {
            case Mode::copy: sent.result = node.stage.process(port, frame, *node.fabric, sink, now_); break;
            case Mode::in_place:
                sent.result = node.stage.process_in_place(port, chunk.buffer, *node.fabric, sink, now_);
                break;
            case Mode::batch: {
                const dataplane::RxFrame rx{port, chunk.buffer};
                dataplane::NatFrameResult results[1];
                EXPECT_EQ(node.stage.process_batch({&rx, 1}, *node.fabric, sink, results, now_), 1u);
                sent.result = results[0];
                break;
            }
        }
        EXPECT_NE(sent.result.verdict, dataplane::Verdict::to_nat);
        EXPECT_EQ(sent.result.emissions, node.out.emissions().size());
        for (std::size_t i = 0; i < node.out.emissions().size(); ++i)
            sent.frames.emplace_back(node.out.emissions()[i].port, node.out.frame(i));
        return sent;
    }

    // A tenant frame on node1 for the outside: carried to node2 through the overlay; node2's outcome.
    Sent from_tenant(PortId tenant_port, const wire::MacAddress& tenant_mac, const Bytes& ipv4) {
        const Sent first = send(node1_, tenant_port, ethernet_around(kGatewayMac, tenant_mac, ipv4));
        EXPECT_EQ(first.result.verdict, dataplane::Verdict::forward);
        const Bytes* overlay = frame_on(first, kUnderlay);
        if (overlay == nullptr) {
            ADD_FAILURE() << "node1 sent nothing to the underlay";
            return first;
        }
        return send(node2_, kUnderlay, *overlay);
    }

    // A packet from the outside on node2's uplink; when node2 encapsulates it, node1's outcome.
    Sent from_outside(const Bytes& ipv4) {
        const Sent at_gateway = send(node2_, kUplink, ethernet_around(kUplinkMac, kRouterMac, ipv4));
        const Bytes* overlay = frame_on(at_gateway, kUnderlay);
        if (overlay == nullptr) return at_gateway;
        EXPECT_EQ(at_gateway.result.path, dataplane::NatPath::to_tenant);
        return send(node1_, kUnderlay, *overlay);
    }

    // The frame on the uplink: right L2 header, every checksum valid, no private address.
    Bytes expect_on_uplink(const Sent& sent) {
        EXPECT_EQ(sent.result.verdict, dataplane::Verdict::forward);
        EXPECT_EQ(sent.result.path, dataplane::NatPath::to_uplink);
        const Bytes* frame = frame_on(sent, kUplink);
        if (frame == nullptr || frame->size() < 34) {
            ADD_FAILURE() << "nothing on the uplink";
            return {};
        }
        EXPECT_EQ(sent.frames.size(), 1u);
        EXPECT_TRUE(std::equal(kRouterMac.bytes().begin(), kRouterMac.bytes().end(), frame->begin()));
        EXPECT_TRUE(std::equal(kUplinkMac.bytes().begin(), kUplinkMac.bytes().end(), frame->begin() + 6));
        EXPECT_EQ(wire::load_be16(frame->data() + 12), wire::ethertype::kIpv4);
        EXPECT_EQ(frame_problems(*frame), std::vector<std::string>{});
        EXPECT_TRUE(nat::test::checksums_valid(ip_of(*frame)));
        for (const char* private_ip : {"10.0.0.10", "10.0.0.11", "10.0.0.20"})
            EXPECT_FALSE(contains_address(*frame, ipv4(private_ip))) << private_ip << " leaked to the uplink";
        return ip_of(*frame);
    }

    // The frame delivered to a tenant port: its MACs, every checksum valid; its IPv4 packet.
    Bytes expect_delivered(const Sent& sent, PortId port, const wire::MacAddress& tenant_mac) {
        EXPECT_EQ(sent.result.verdict, dataplane::Verdict::deliver);
        const Bytes* frame = frame_on(sent, port);
        if (frame == nullptr || frame->size() < 34) {
            ADD_FAILURE() << "nothing delivered on port " << port;
            return {};
        }
        EXPECT_TRUE(std::equal(tenant_mac.bytes().begin(), tenant_mac.bytes().end(), frame->begin()));
        EXPECT_TRUE(std::equal(kGatewayMac.bytes().begin(), kGatewayMac.bytes().end(), frame->begin() + 6));
        EXPECT_EQ(frame_problems(*frame), std::vector<std::string>{});
        EXPECT_TRUE(nat::test::checksums_valid(ip_of(*frame)));
        return ip_of(*frame);
    }

    void advance(double seconds) { now_ += std::chrono::duration_cast<nat::Duration>(std::chrono::duration<double>(seconds)); }

    nat::NatEngine engine_;
    NatNode node1_;
    NatNode node2_;
    nat::TimePoint now_ = nat::test::at(1000);
};

}  // namespace andromeda::testing::natworld
