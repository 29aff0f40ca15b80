// Frames as the AF_XDP loop holds them: a chunk of UMEM with the frame somewhere inside it, the
// bytes in front of the frame free for headers (headroom). The pipeline never allocates per
// packet: frames it forwards either reuse the input chunk (in place) or go into spare chunks the
// caller lends it through a FrameSink, and every output is an Emission naming its port.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "wire/bytes.hpp"

namespace andromeda::dataplane {

// A port as the daemon numbers it (the interface index, by convention).
using PortId = std::uint32_t;
inline constexpr PortId kNoPort = 0xffffffff;

// At most this many frames per process_batch call: what one AF_XDP RX burst hands over.
inline constexpr std::size_t kMaxBatch = 64;

// One UMEM-like chunk holding one frame at [offset, offset + length).
struct PacketBuffer {
    std::uint8_t* chunk = nullptr;
    std::uint32_t size = 0;    // chunk size
    std::uint32_t offset = 0;  // where the frame starts; everything before it is headroom
    std::uint32_t length = 0;

    [[nodiscard]] std::uint8_t* data() const noexcept { return chunk + offset; }
    [[nodiscard]] std::uint32_t headroom() const noexcept { return offset; }
    // Bytes from the frame start to the chunk end: the largest frame that fits at `offset`.
    [[nodiscard]] std::uint32_t capacity() const noexcept { return size - offset; }
    [[nodiscard]] wire::MutableByteSpan bytes() const noexcept { return {data(), length}; }
};

// A frame the pipeline wants sent.
struct Emission {
    PortId port = kNoPort;
    PacketBuffer frame;
    // The batch index of the input frame whose chunk this is (in-place processing), or -1 when
    // the frame is in one of the sink's spare chunks.
    std::int32_t input_index = -1;
};

// A frame received on a port, for process_batch.
struct RxFrame {
    PortId port = kNoPort;
    PacketBuffer buffer;
};

// Where a FrameSink gets spare chunks on demand (the daemon's workers: from the UMEM's free
// frames), so a batch that needs none, the common case, takes none.
class SpareSupply {
public:
    // Fills up to into.size() spares (each an empty frame at its offset) into `into`; returns how
    // many it could.
    virtual std::size_t supply(std::span<PacketBuffer> into) noexcept = 0;

protected:
    ~SpareSupply() = default;
};

// Where the pipeline puts its output: emission slots and spare chunks, both lent by the caller
// and reused across calls (reset()). Spares are taken strictly in order and only when a frame is
// emitted into one, so after a call spares()[0, spares_used()) are exactly the chunks in use by
// emissions and the rest can go back to the caller's pool untouched. The spares are either all
// lent up front, or taken from a SpareSupply as they are needed (into the caller's storage).
class FrameSink {
public:
    FrameSink() = default;
    FrameSink(std::span<Emission> slots, std::span<const PacketBuffer> spares) noexcept
        : slots_(slots), spares_(spares.data()), available_(spares.size()) {}
    // Spares on demand: up to storage.size() of them, asked of `supply` when first needed.
    FrameSink(std::span<Emission> slots, std::span<PacketBuffer> storage, SpareSupply& supply) noexcept
        : slots_(slots), spares_(storage.data()), storage_(storage), supply_(&supply) {}

    void reset() noexcept {
        emitted_ = 0;
        spares_used_ = 0;
    }

    [[nodiscard]] std::span<const Emission> emissions() const noexcept { return slots_.first(emitted_); }
    [[nodiscard]] std::size_t spares_used() const noexcept { return spares_used_; }
    // The spares lent so far (all of them, or those the supply gave).
    [[nodiscard]] std::span<const PacketBuffer> spares() const noexcept { return {spares_, available_}; }

    [[nodiscard]] std::size_t free_slots() const noexcept { return slots_.size() - emitted_; }
    // Spares left to emit into, after asking the supply for one more if none is left.
    [[nodiscard]] std::size_t free_spares() noexcept {
        (void)has_spares(1);
        return available_ - spares_used_;
    }
    // Whether `frames` more frames can be emitted into spare chunks (asking the supply for what
    // is missing).
    [[nodiscard]] bool can_emit_spares(std::size_t frames) noexcept {
        return free_slots() >= frames && has_spares(frames);
    }
    // The i-th spare not yet used (precondition: i < free_spares()), its frame empty at its offset.
    [[nodiscard]] PacketBuffer peek_spare(std::size_t i = 0) const noexcept {
        PacketBuffer b = spares_[spares_used_ + i];
        b.length = 0;
        return b;
    }

    // Emits a frame written into the next spare (peek_spare(0)); `frame` is its final extent.
    // Always inlined: out of line, the call was a tenth of an express-lane packet.
    [[gnu::always_inline]] void emit_spare(PortId port, const PacketBuffer& frame) noexcept {
        store(slots_[emitted_++], port, frame, -1);
        ++spares_used_;
    }
    // Emits (part of) an input chunk. Precondition: free_slots() > 0.
    [[gnu::always_inline]] void emit_input(PortId port, const PacketBuffer& frame, std::int32_t input_index) noexcept {
        store(slots_[emitted_++], port, frame, input_index);
    }

private:
    bool has_spares(std::size_t count) noexcept {
        if (available_ - spares_used_ >= count) return true;
        if (supply_ == nullptr) return false;
        const std::size_t missing = count - (available_ - spares_used_);
        if (missing > storage_.size() - available_) return false;
        available_ += supply_->supply(storage_.subspan(available_, missing));
        return available_ - spares_used_ >= count;
    }

    // Field by field: a freshly built Emission copied as a whole was reloaded 16 bytes at a time
    // over its 4-byte stores, stalling on store forwarding.
    static void store(Emission& e, PortId port, const PacketBuffer& frame, std::int32_t input_index) noexcept {
        e.port = port;
        e.frame.chunk = frame.chunk;
        e.frame.size = frame.size;
        e.frame.offset = frame.offset;
        e.frame.length = frame.length;
        e.input_index = input_index;
    }

    std::span<Emission> slots_;
    const PacketBuffer* spares_ = nullptr;
    std::size_t available_ = 0;       // spares_[0, available_) are lent
    std::span<PacketBuffer> storage_;  // on demand: where the supply's spares go
    SpareSupply* supply_ = nullptr;
    std::size_t emitted_ = 0;
    std::size_t spares_used_ = 0;
};

}  // namespace andromeda::dataplane
