// FrameEmitter: every emission of the pipeline leaves in the frame that holds it (its input
// frame, or the spare lent with its chunk), a second output of one input as a copy, and nothing
// is lost silently: unused spares go back, inputs without an output get their fate from their
// result, and an emission that names no frame of the batch is counted.
#include "worker/frame_emitter.hpp"

#include <gtest/gtest.h>

#include <array>
#include <deque>
#include <vector>

namespace andromeda::worker {
namespace {

constexpr std::uint32_t kChunk = 2048;

// Chunks of memory standing in for a UMEM, and a record of every fate given.
class FakeOutput final : public io::FrameOutput {
public:
    explicit FakeOutput(std::size_t spares) {
        for (std::size_t i = 0; i < spares; ++i) free_.push_back(make_frame());
    }
    io::Frame make_frame(std::uint32_t offset = 256, std::uint32_t length = 0) {
        chunks_.emplace_back();
        return io::Frame(chunks_.back().data(), kChunk, offset, length);
    }

    void transmit(io::Frame& frame, std::uint32_t) noexcept override { transmitted.push_back(frame.chunk()); }
    void drop(io::Frame& frame) noexcept override { dropped.push_back(frame.chunk()); }
    io::Frame* allocate() noexcept override {
        if (free_.empty()) return nullptr;
        lent_.push_back(free_.front());
        free_.pop_front();
        return &lent_.back();
    }
    void release(io::Frame& frame) noexcept override { released.push_back(frame.chunk()); }
    bool transmit_copy(std::span<const std::uint8_t>, std::uint32_t) noexcept override { return true; }

    std::vector<std::uint8_t*> transmitted, dropped, released;

private:
    std::deque<std::array<std::uint8_t, kChunk>> chunks_;  // deque: chunks never move
    std::deque<io::Frame> free_, lent_;
};

dataplane::Emission emission(std::uint8_t* chunk, std::uint32_t offset, std::uint32_t length, std::int32_t input = -1) {
    return {7, dataplane::PacketBuffer{chunk, kChunk, offset, length}, input};
}

dataplane::NatFrameResult result(dataplane::Verdict verdict) {
    dataplane::NatFrameResult r;
    r.verdict = verdict;
    return r;
}

// A batch begun: `inputs` frames of 100 bytes, and `pool` free frames to lend as spares.
struct Batch {
    Batch(std::size_t input_count, std::size_t pool) : out(pool) {
        for (std::size_t i = 0; i < input_count; ++i) inputs.push_back(out.make_frame(256, 100));
        emitter.begin(inputs, out);
    }
    // What the pipeline asks for: `count` spares (the pool may have fewer).
    std::vector<dataplane::PacketBuffer> lend(std::size_t count) {
        std::vector<dataplane::PacketBuffer> spares(count);
        spares.resize(emitter.supply(spares));
        return spares;
    }
    FakeOutput out;
    std::vector<io::Frame> inputs;
    FrameEmitter emitter;
};

TEST(FrameEmitter, AnInputsFirstEmissionIsTheInputFramePlacedWhereItSays) {
    Batch b(2, 0);
    const auto placed = b.emitter.place(emission(b.inputs[0].chunk(), 206, 150, 0));  // 50 bytes pushed in front
    ASSERT_EQ(placed.frame, &b.inputs[0]);
    EXPECT_EQ(placed.frame->data(), b.inputs[0].chunk() + 206);
    EXPECT_EQ(placed.frame->length(), 150u);
    // A second output of the same input chunk goes as a copy.
    const auto second = b.emitter.place(emission(b.inputs[0].chunk(), 206, 150, 0));
    EXPECT_EQ(second.frame, nullptr);
    EXPECT_TRUE(second.copy);
    // The other input emitted nothing: its result decides.
    const std::array results{result(dataplane::Verdict::forward), result(dataplane::Verdict::drop)};
    b.emitter.end(results);
    EXPECT_EQ(b.out.dropped, std::vector<std::uint8_t*>{b.inputs[1].chunk()});
    EXPECT_TRUE(b.out.released.empty());
}

TEST(FrameEmitter, AnInputWhoseOutputWentIntoSparesIsReleasedNotDropped) {
    Batch b(1, 0);
    const std::array results{result(dataplane::Verdict::reply)};
    b.emitter.end(results);
    EXPECT_EQ(b.out.released, std::vector<std::uint8_t*>{b.inputs[0].chunk()});
    EXPECT_TRUE(b.out.dropped.empty());
}

TEST(FrameEmitter, SparesAreFoundByTheirChunkAndTheUnusedOnesGoBack) {
    Batch b(0, 3);
    const auto spares = b.lend(3);
    ASSERT_EQ(spares.size(), 3u);
    const auto first = b.emitter.place(emission(spares[0].chunk, 320, 60));
    const auto third = b.emitter.place(emission(spares[2].chunk, 320, 1400));
    ASSERT_NE(first.frame, nullptr);
    ASSERT_NE(third.frame, nullptr);
    EXPECT_EQ(first.frame->chunk(), spares[0].chunk);
    EXPECT_EQ(third.frame->chunk(), spares[2].chunk);
    EXPECT_EQ(third.frame->length(), 1400u);
    b.emitter.end({});
    EXPECT_EQ(b.out.released, std::vector<std::uint8_t*>{spares[1].chunk});
    EXPECT_EQ(b.emitter.counters().emission_unmatched, 0u);
}

TEST(FrameEmitter, AnEmissionInNoFrameOfTheBatchIsCountedNotSent) {
    Batch b(0, 1);
    const auto spares = b.lend(1);
    ASSERT_EQ(spares.size(), 1u);
    std::array<std::uint8_t, kChunk> elsewhere{};
    const auto placed = b.emitter.place(emission(elsewhere.data(), 0, 60));
    EXPECT_EQ(placed.frame, nullptr);
    EXPECT_FALSE(placed.copy);
    EXPECT_EQ(b.emitter.counters().emission_unmatched, 1u);
    // The spare stays there for the emission that really is in it.
    EXPECT_NE(b.emitter.place(emission(spares[0].chunk, 0, 60)).frame, nullptr);
    b.emitter.end({});
    EXPECT_TRUE(b.out.released.empty());
}

TEST(FrameEmitter, AnEmissionBeyondItsChunkDropsTheFrameAndIsCounted) {
    Batch b(1, 0);
    const auto placed = b.emitter.place(emission(b.inputs[0].chunk(), kChunk - 10, 60, 0));
    EXPECT_EQ(placed.frame, nullptr);
    EXPECT_EQ(b.emitter.counters().emission_out_of_chunk, 1u);
    EXPECT_EQ(b.out.dropped, std::vector<std::uint8_t*>{b.inputs[0].chunk()});
    const std::array results{result(dataplane::Verdict::forward)};
    b.emitter.end(results);
    EXPECT_EQ(b.out.dropped.size(), 1u) << "one fate per frame";
}

TEST(FrameEmitter, AnEmptyPoolIsAShortfall) {
    Batch b(0, 1);
    EXPECT_EQ(b.lend(2).size(), 1u);
    EXPECT_EQ(b.emitter.counters().spare_shortfall, 1u);
    b.emitter.end({});
    EXPECT_EQ(b.out.released.size(), 1u);
}

}  // namespace
}  // namespace andromeda::worker
