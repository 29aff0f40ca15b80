// The pipeline's outputs as AF_XDP frames. The pipeline writes into chunks it is lent (a batch's
// input frames, and spare frames it asks for) and names each output as an Emission: a port and a
// (chunk, offset, length) view. This turns them back into the worker's frames: an emission from
// an input chunk is that input frame, the first time (a second one from the same chunk is sent as
// a copy); one in a spare is the spare frame lent with that chunk (spares are used in order, so
// the search moves forward). An emission that names no frame of the batch, or does not fit its
// chunk, is a pipeline bug: it is counted, never sent. At the end of a batch the spares no
// emission was placed in go back to the pool, and every input without a fate is dropped (its result says
// drop) or released (its output went into spares).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "dataplane/nat_pipeline.hpp"
#include "dataplane/packet_buffer.hpp"
#include "io/xsk/frame.hpp"
#include "util/counters.hpp"

namespace andromeda::worker {

#define ANDROMEDA_EMITTER_COUNTERS(X)                                                              \
    X(spare_shortfall)       /* times the pipeline asked for spare frames and the UMEM had none */ \
    X(emission_unmatched)    /* an emission in a chunk that is no frame of its batch: a bug */     \
    X(emission_out_of_chunk) /* an emission that does not fit its chunk: a bug */

struct EmitterCounters {
    ANDROMEDA_EMITTER_COUNTERS(ANDROMEDA_COUNTER_FIELD)

    // Calls f(name, value) for every counter (util/counters.hpp).
    template <class F>
    void for_each(F&& f) const {
        ANDROMEDA_EMITTER_COUNTERS(ANDROMEDA_COUNTER_VISIT)
    }
};

class FrameEmitter final : public dataplane::SpareSupply {
public:
    static constexpr std::size_t kMaxSpares = dataplane::kMaxBatch + 4;

    // A batch of `inputs` (at most dataplane::kMaxBatch) begins: none has a fate yet, and spares
    // are allocated from `out` when the pipeline asks (supply()) until end().
    void begin(std::span<io::Frame> inputs, io::FrameOutput& out) noexcept;
    // dataplane::SpareSupply: frames from the UMEM, while a batch runs.
    std::size_t supply(std::span<dataplane::PacketBuffer> into) noexcept override;

    // Where an emission goes: `frame`, placed where the emission says (send it), or a copy of
    // the emission's bytes (`copy`: a second output from one input chunk), or nowhere (counted).
    struct Placed {
        io::Frame* frame = nullptr;
        bool copy = false;
    };
    [[nodiscard]] Placed place(const dataplane::Emission& emission) noexcept;

    // After the emissions: gives back the spares no emission was placed in, and gives every
    // input without a fate one by its result.
    void end(std::span<const dataplane::NatFrameResult> results) noexcept;

    [[nodiscard]] const EmitterCounters& counters() const noexcept { return counters_; }

private:
    std::span<io::Frame> inputs_;
    io::FrameOutput* out_ = nullptr;  // while a batch runs
    std::array<bool, dataplane::kMaxBatch> fated_{};
    std::array<io::Frame*, kMaxSpares> spares_{};
    std::array<bool, kMaxSpares> spare_placed_{};
    std::size_t spare_count_ = 0;
    std::size_t next_spare_ = 0;  // place() searches spares from here
    EmitterCounters counters_;
};

[[nodiscard]] inline dataplane::PacketBuffer buffer_of(const io::Frame& f) noexcept {
    return {f.chunk(), f.chunk_size(), static_cast<std::uint32_t>(f.data() - f.chunk()), f.length()};
}

}  // namespace andromeda::worker
