// The in-place and batch variants, the sink's buffer accounting, snapshot changes, and counters.
#include <gtest/gtest.h>

#include <set>

#include "overlay/decap.hpp"
#include "unit/dataplane/pipeline_fixture.hpp"
#include "util/counters.hpp"

namespace andromeda::testing {
namespace {

using dataplane::DropReason;
using dataplane::FrameResult;
using dataplane::RxFrame;
using dataplane::Verdict;

class BatchTest : public PipelineTest {};

TEST_F(BatchTest, InPlaceEncapsulationWritesIntoTheHeadroom) {
    const Bytes frame = ipv4_frame(blue10_to("10.0.0.20"));
    ChunkFrame chunk(frame, 256);
    ASSERT_EQ(run_in_place(kBlue10Port, chunk).verdict, Verdict::forward);
    expect_encapsulated_in_headroom(chunk, 50);
    // Same bytes as the copy variant (its IP ID is one further on).
    const Bytes in_place = out_.frame(0);
    ASSERT_EQ(run(kBlue10Port, frame).verdict, Verdict::forward);
    Bytes copied = out_.frame(0);
    EXPECT_EQ(wire::load_be16(copied.data() + 18), 2);
    copied[18 + 1] = 1;                                   // ID 2 -> 1
    wire::store_be16(copied.data() + 24, wire::load_be16(in_place.data() + 24));  // and its checksum
    EXPECT_EQ(copied, in_place);
    EXPECT_EQ(pipeline_.counters().in_place_fallback_copies, 0u);
}

TEST_F(BatchTest, WithoutHeadroomInPlaceFallsBackToACopy) {
    const Bytes frame = ipv4_frame(blue10_to("10.0.0.20"));
    ChunkFrame chunk(frame, 20);
    ASSERT_EQ(run_in_place(kBlue10Port, chunk).verdict, Verdict::forward);
    EXPECT_EQ(out_.emissions()[0].input_index, -1);
    EXPECT_EQ(out_.sink().spares_used(), 1u);
    EXPECT_EQ(pipeline_.counters().in_place_fallback_copies, 1u);
    expect_valid_emissions();
    EXPECT_TRUE(std::equal(frame.begin() + 6, frame.end(), chunk.chunk.begin() + 20 + 6));  // input intact but dst MAC
}

TEST_F(BatchTest, ABurstIsProcessedFrameByFrameWithItsOwnResults) {
    std::vector<ChunkFrame> chunks;
    chunks.emplace_back(ipv4_frame(blue10_to("10.0.0.20")));
    chunks.emplace_back(ipv4_frame(blue10_to("10.0.0.11")));
    chunks.emplace_back(arp_request(kBlue10Mac, ipv4("10.0.0.10"), ipv4("10.0.0.20")));
    chunks.emplace_back(ipv4_frame(blue10_to("10.0.0.99")));
    Ipv4Spec big = blue10_to("10.0.0.20");
    big.payload = 3000;
    chunks.emplace_back(ipv4_frame(big));
    std::vector<RxFrame> burst;
    for (auto& c : chunks) burst.push_back({kBlue10Port, c.buffer});
    // Results left over from an earlier burst: every field must be overwritten.
    const FrameResult stale{Verdict::to_nat, DropReason::unknown_vni, 9,
                            dataplane::NatRequest{dataplane::NatDirection::inbound, 7, 7, 7, 7}};
    std::vector<FrameResult> results(burst.size(), stale);
    ASSERT_EQ(pipeline_.process_batch(burst, *fabric_, out_.fresh(), results), burst.size());
    EXPECT_EQ(results[0].verdict, Verdict::forward);
    EXPECT_EQ(results[1].verdict, Verdict::deliver);
    EXPECT_EQ(results[2].verdict, Verdict::reply);
    EXPECT_EQ(results[3].drop_reason, DropReason::no_such_endpoint);
    EXPECT_EQ(results[4].verdict, Verdict::forward);
    EXPECT_EQ(results[4].emissions, 3);
    for (std::size_t i = 0; i < results.size(); ++i) {
        SCOPED_TRACE(i);
        EXPECT_EQ(results[i].emissions, i == 3 ? 0 : i == 4 ? 3 : 1);
        EXPECT_EQ(results[i].drop_reason, i == 3 ? DropReason::no_such_endpoint : DropReason::none);
        EXPECT_EQ(results[i].nat.direction, dataplane::NatDirection::outbound);
        EXPECT_EQ(results[i].nat.vni, 0u);
        EXPECT_EQ(results[i].nat.frame_length, 0u);
    }
    const auto e = out_.emissions();
    ASSERT_EQ(e.size(), 6u);
    EXPECT_EQ(e[0].input_index, 0);
    EXPECT_EQ(e[1].input_index, 1);
    EXPECT_EQ(e[1].port, kBlue11Port);
    EXPECT_EQ(e[2].input_index, 2);
    for (std::size_t i = 3; i < 6; ++i) EXPECT_EQ(e[i].input_index, -1);  // fragments use spares
    EXPECT_EQ(out_.sink().spares_used(), 3u);
    expect_valid_emissions();
}

TEST_F(BatchTest, ABatchIsAtMost64Frames) {
    std::vector<ChunkFrame> chunks;
    chunks.reserve(70);
    for (int i = 0; i < 70; ++i) chunks.emplace_back(ipv4_frame(blue10_to("10.0.0.20")));
    std::vector<RxFrame> burst;
    for (auto& c : chunks) burst.push_back({kBlue10Port, c.buffer});
    std::vector<FrameResult> results(burst.size());
    EXPECT_EQ(pipeline_.process_batch(burst, *fabric_, out_.fresh(), results), dataplane::kMaxBatch);
    EXPECT_EQ(out_.emissions().size(), dataplane::kMaxBatch);
    EXPECT_EQ(pipeline_.counters().rx_tenant, dataplane::kMaxBatch);
}

TEST_F(BatchTest, AFullSinkDropsWithNoTxBuffer) {
    std::vector<dataplane::Emission> one_slot(1);
    dataplane::FrameSink sink(one_slot, {});
    const Bytes frame = ipv4_frame(blue10_to("10.0.0.20"));
    EXPECT_EQ(pipeline_.process(kBlue10Port, frame, *fabric_, sink).drop_reason, DropReason::no_tx_buffer);  // no spare
    ChunkFrame first(frame);
    ChunkFrame second(frame);
    EXPECT_EQ(pipeline_.process_in_place(kBlue10Port, first.buffer, *fabric_, sink).verdict, Verdict::forward);
    EXPECT_EQ(pipeline_.process_in_place(kBlue10Port, second.buffer, *fabric_, sink).drop_reason,
              DropReason::no_tx_buffer);
    EXPECT_TRUE(std::equal(frame.begin(), frame.end(), second.chunk.begin() + 256));  // a dropped frame is untouched
}

// A sink whose spares come from a SpareSupply on demand, as the daemon's workers run it: a
// batch that forwards in place, delivers and answers ARP asks for none; a frame fragmented into
// three asks for exactly three; a supply that runs dry drops with no_tx_buffer.
class CountingSupply final : public dataplane::SpareSupply {
public:
    explicit CountingSupply(std::size_t frames) : chunks_(frames, Bytes(4096)) {}
    std::size_t supply(std::span<dataplane::PacketBuffer> into) noexcept override {
        ++calls;
        std::size_t got = 0;
        for (; got < into.size() && given < chunks_.size(); ++got, ++given)
            into[got] = {chunks_[given].data(), 4096, 256, 0};
        return got;
    }
    std::size_t calls = 0;
    std::size_t given = 0;

private:
    std::vector<Bytes> chunks_;
};

TEST_F(BatchTest, OnDemandSparesAreTakenOnlyForFramesEmittedIntoThem) {
    std::vector<dataplane::Emission> slots(256);
    std::vector<dataplane::PacketBuffer> storage(16);
    CountingSupply supply(16);
    std::vector<ChunkFrame> chunks;
    chunks.emplace_back(ipv4_frame(blue10_to("10.0.0.20")));
    chunks.emplace_back(ipv4_frame(blue10_to("10.0.0.11")));
    chunks.emplace_back(arp_request(kBlue10Mac, ipv4("10.0.0.10"), ipv4("10.0.0.20")));
    std::vector<RxFrame> burst;
    for (auto& c : chunks) burst.push_back({kBlue10Port, c.buffer});
    std::vector<FrameResult> results(burst.size());
    {
        dataplane::FrameSink sink(slots, storage, supply);
        ASSERT_EQ(pipeline_.process_batch(burst, *fabric_, sink, results), burst.size());
        EXPECT_EQ(sink.emissions().size(), 3u);
        EXPECT_EQ(supply.calls, 0u) << "nothing went into a spare";
        EXPECT_TRUE(sink.spares().empty());
    }
    Ipv4Spec big = blue10_to("10.0.0.20");
    big.payload = 3000;
    ChunkFrame fragmented(ipv4_frame(big));
    std::vector<RxFrame> one{{kBlue10Port, fragmented.buffer}};
    std::vector<FrameResult> result(1);
    {
        dataplane::FrameSink sink(slots, storage, supply);
        ASSERT_EQ(pipeline_.process_batch(one, *fabric_, sink, result), 1u);
        EXPECT_EQ(result[0].verdict, Verdict::forward);
        EXPECT_EQ(result[0].emissions, 3);
        EXPECT_EQ(supply.given, 3u) << "exactly the fragments' spares";
        EXPECT_EQ(sink.spares().size(), 3u);
        EXPECT_EQ(sink.spares_used(), 3u);
    }
    CountingSupply dry(2);
    {
        dataplane::FrameSink sink(slots, storage, dry);
        ChunkFrame again(ipv4_frame(big));
        std::vector<RxFrame> rx{{kBlue10Port, again.buffer}};
        ASSERT_EQ(pipeline_.process_batch(rx, *fabric_, sink, result), 1u);
        EXPECT_EQ(result[0].drop_reason, DropReason::no_tx_buffer);
        EXPECT_EQ(sink.spares_used(), 0u) << "the two spares it got go back unused";
        EXPECT_EQ(sink.spares().size(), 2u);
    }
}

TEST_F(BatchTest, TooSmallSparesDropWithTxBufferTooSmall) {
    SinkStorage tiny(4, 256 + 100);
    const Bytes frame = ipv4_frame(blue10_to("10.0.0.20"));
    EXPECT_EQ(pipeline_.process(kBlue10Port, frame, *fabric_, tiny.fresh()).drop_reason, DropReason::tx_buffer_too_small);
    EXPECT_EQ(tiny.sink().spares_used(), 0u);
}

TEST_F(BatchTest, ANewSnapshotGenerationRebuildsTemplatesAndKeepsIpIds) {
    const Bytes frame = ipv4_frame(blue10_to("10.0.0.20"));
    ASSERT_EQ(run(kBlue10Port, frame).verdict, Verdict::forward);
    ASSERT_EQ(run(kBlue10Port, frame).verdict, Verdict::forward);
    EXPECT_EQ(pipeline_.counters().fabric_rebuilds, 1u);
    // Reload: 10.0.0.20 moved to node3, whose next hop the daemon then learns.
    std::string text = fabric_text("node1");
    text.replace(text.find("node = \"node2\"\nport = \"tap-blue-20\""), 14, "node = \"node3\"");
    auto moved = load_fabric(text, 2);
    EXPECT_EQ(pipeline_.process(kBlue10Port, frame, *moved, out_.fresh()).drop_reason, DropReason::no_next_hop);
    EXPECT_EQ(pipeline_.counters().fabric_rebuilds, 2u);
    pipeline_.set_next_hop(kNode3Ip, mac("02:00:00:00:a1:03"));
    ASSERT_EQ(pipeline_.process(kBlue10Port, frame, *moved, out_.fresh()).verdict, Verdict::forward);
    const auto decap = overlay::decapsulate(out_.view(0), {});
    EXPECT_EQ(decap.packet.outer_dst_ip, kNode3Ip);
    EXPECT_EQ(decap.packet.outer_dst_mac, mac("02:00:00:00:a1:03"));
    // Back to the first snapshot: node2's template continues at ID 3.
    ASSERT_EQ(run(kBlue10Port, frame).verdict, Verdict::forward);
    EXPECT_EQ(wire::load_be16(out_.frame(0).data() + 18), 3);
}

TEST_F(BatchTest, PortsCanBeRebound) {
    pipeline_.set_ports({{kUnderlayPort, dataplane::PortRole::underlay, ""}, {77, dataplane::PortRole::tenant, "tap-blue-10"}});
    const Bytes frame = ipv4_frame(blue10_to("10.0.0.20"));
    EXPECT_EQ(run(kBlue10Port, frame).drop_reason, DropReason::unknown_port);
    EXPECT_EQ(run(77, frame).verdict, Verdict::forward);
}

TEST_F(BatchTest, TenantPortsCanBeBoundByIfindex) {
    fabric::LoadOptions options;
    options.ports = fabric::resolve_port_names([](std::string_view name) -> std::optional<std::uint32_t> {
        return name == "tap-blue-10" ? std::optional<std::uint32_t>(42) : std::nullopt;
    });
    auto fabric = fabric::load_fabric_string(fabric_text("node1"), "test.toml", options).snapshot;
    ASSERT_TRUE(fabric);
    pipeline_.set_ports({{kUnderlayPort, dataplane::PortRole::underlay, ""}, {42, dataplane::PortRole::tenant, ""}});
    EXPECT_EQ(pipeline_.process(42, ipv4_frame(blue10_to("10.0.0.20")), *fabric, out_.fresh()).verdict, Verdict::forward);
}

TEST_F(BatchTest, VerdictCountersSumToTheFramesIn) {
    const std::vector<std::pair<PortId, Bytes>> inputs = {
        {kBlue10Port, ipv4_frame(blue10_to("10.0.0.20"))},
        {kBlue10Port, ipv4_frame(blue10_to("10.0.0.11"))},
        {kBlue10Port, arp_request(kBlue10Mac, ipv4("10.0.0.10"), ipv4("10.0.0.1"))},
        {kBlue10Port, Bytes(3, 0)},
        {kUnderlayPort, Bytes(60, 0)},
        {kUplinkPort, ipv4_frame(blue10_to("203.0.113.10"))},
        {kUnknownPort, Bytes(60, 0)},
    };
    for (const auto& [port, frame] : inputs) run(port, frame);
    const auto& c = pipeline_.counters();
    EXPECT_EQ(c.forwarded + c.delivered + c.replied + c.to_nat + c.dropped, inputs.size());
    EXPECT_EQ(c.forwarded, 1u);
    EXPECT_EQ(c.delivered, 1u);
    EXPECT_EQ(c.replied, 1u);
    EXPECT_EQ(c.to_nat, 1u);
    EXPECT_EQ(c.dropped, 3u);
    EXPECT_EQ(c.rx_tenant + c.rx_underlay + c.rx_uplink, inputs.size() - 1);  // the unknown port has no role
    dataplane::PipelineCounters sum;
    util::add_counters(sum, c);
    util::add_counters(sum, c);
    EXPECT_EQ(sum.dropped, 6u);
    EXPECT_EQ(sum.drops.unknown_port, 2u);
    pipeline_.reset_counters();
    EXPECT_EQ(pipeline_.counters().forwarded, 0u);
}

TEST(DropReasonTest, EveryReasonHasAUniqueNameADescriptionAndItsOwnCounter) {
    std::set<std::string_view> names;
    dataplane::DropCounters counters;
    for (std::size_t i = 1; i <= dataplane::kDropReasonCount; ++i) {
        const auto reason = static_cast<DropReason>(i);
        const std::string_view name = to_string(reason);
        EXPECT_NE(name, "unknown");
        EXPECT_TRUE(names.insert(name).second) << name;
        EXPECT_FALSE(describe(reason).empty());
        std::uint64_t* counter = dataplane::drop_counter(counters, reason);
        ASSERT_NE(counter, nullptr);
        EXPECT_EQ(*counter, 0u) << name << " shares a field";
        *counter = i;
    }
    EXPECT_EQ(dataplane::drop_counter(counters, DropReason::none), nullptr);
    EXPECT_EQ(counters.unknown_port, 1u);
    EXPECT_EQ(dataplane::drop_count(counters, DropReason::flood_no_members), dataplane::kDropReasonCount);
    EXPECT_EQ(to_string(Verdict::to_nat), "to_nat");
    dataplane::DecapErrorCounters decap;
    for (int e = 1; e <= static_cast<int>(overlay::DecapError::inner_frame_too_short); ++e)
        EXPECT_NE(dataplane::decap_error_counter(decap, static_cast<overlay::DecapError>(e)), nullptr);
}

}  // namespace
}  // namespace andromeda::testing
