// A frame while a worker holds it, and what a frame handler (the daemon's glue around the
// dataplane pipeline) can do with it. Frames live in the worker's UMEM: moving one from a tenant
// socket to the underlay socket is a descriptor hand-over, and encapsulation grows the frame
// into the headroom in front of it (push_front), with no copy.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "util/drop_reasons.hpp"

namespace andromeda::io {

// Why the I/O layer let go of a frame without sending it: shared/andromeda_drops.h, ANDROMEDA_DROPS_IO.
ANDROMEDA_DEFINE_DROP_REASONS(DropReason, kDropReasonCount, none, "not dropped", ANDROMEDA_DROPS_IO)

inline constexpr std::uint32_t kNoSocket = 0xFFFFFFFF;

class Frame {
public:
    Frame() = default;
    // Bytes [offset, offset + length) of `chunk`: how XskWorker hands out a UMEM frame, and how
    // a handler's unit test makes one (only a fake FrameOutput may take such a frame).
    Frame(std::uint8_t* chunk, std::uint32_t chunk_size, std::uint32_t offset, std::uint32_t length) noexcept
        : chunk_(chunk), chunk_size_(chunk_size), offset_(offset), length_(length) {}

    [[nodiscard]] std::uint8_t* data() const noexcept { return chunk_ + offset_; }
    [[nodiscard]] std::uint32_t length() const noexcept { return length_; }
    [[nodiscard]] std::span<std::uint8_t> bytes() const noexcept { return {data(), length_}; }
    // Bytes free in front of data(): at least the UMEM's frame headroom.
    [[nodiscard]] std::uint32_t headroom() const noexcept { return offset_; }
    // The socket (index in the worker) the frame arrived on; kNoSocket for allocated frames.
    [[nodiscard]] std::uint32_t socket() const noexcept { return socket_; }
    // The whole UMEM chunk the frame lives in, for code that works on (chunk, offset, length)
    // views such as dataplane::PacketBuffer.
    [[nodiscard]] std::uint8_t* chunk() const noexcept { return chunk_; }
    [[nodiscard]] std::uint32_t chunk_size() const noexcept { return chunk_size_; }

    // Grows the frame by `n` bytes at the front (encapsulation); false when the headroom is short.
    bool push_front(std::uint32_t n) noexcept {
        if (n > offset_) return false;
        offset_ -= n;
        length_ += n;
        return true;
    }
    // Sets the length (trim, or grow towards the chunk's end); false when the chunk is too small.
    bool set_length(std::uint32_t n) noexcept {
        if (offset_ + n > chunk_size_) return false;
        length_ = n;
        return true;
    }
    // Places the frame at [offset, offset + length) of its chunk, e.g. where a pipeline that
    // rewrote the chunk says the result is; false (nothing changed) when it does not fit.
    bool reframe(std::uint32_t offset, std::uint32_t length) noexcept {
        if (offset > chunk_size_ || length > chunk_size_ - offset) return false;
        offset_ = offset;
        length_ = length;
        return true;
    }

private:
    friend class XskWorker;
    enum class Fate : std::uint8_t { pending, transmit, dropped };

    std::uint8_t* chunk_ = nullptr;
    std::uint32_t index_ = 0;  // chunk number in the UMEM
    std::uint32_t chunk_size_ = 0;
    std::uint32_t offset_ = 0;
    std::uint32_t length_ = 0;
    std::uint32_t socket_ = kNoSocket;
    Fate fate_ = Fate::pending;
};

// What a handler can do with frames; implemented by the worker.
class FrameOutput {
public:
    // Sends `frame` out of `socket` (any socket of this worker, the arrival one included).
    virtual void transmit(Frame& frame, std::uint32_t socket) noexcept = 0;
    // Frees `frame` (DropReason::handler).
    virtual void drop(Frame& frame) noexcept = 0;
    // A fresh frame for a packet the handler generates (an ARP or ICMP reply), with the full
    // headroom in front; nullptr when the worker has none to spare. It must be transmitted or
    // dropped during this call of the handler.
    virtual Frame* allocate() noexcept = 0;
    // Returns a frame to the pool without counting a drop: a spare allocate()d for a pipeline
    // that did not need it.
    virtual void release(Frame& frame) noexcept = 0;
    // Copies `bytes` into a fresh frame and sends it out of `socket`: the hand-off for frames
    // that arrived in another worker's UMEM. False when no frame was free or it does not fit.
    virtual bool transmit_copy(std::span<const std::uint8_t> bytes, std::uint32_t socket) noexcept = 0;

protected:
    ~FrameOutput() = default;
};

class FrameHandler {
public:
    virtual ~FrameHandler() = default;
    // One RX batch of up to UmemConfig::batch_size frames from socket `socket`. Every frame
    // should get a fate through `out`; the worker drops the rest (DropReason::unhandled).
    // The per-packet path does not throw: a frame in flight would have no owner.
    virtual void handle(std::uint32_t socket, std::span<Frame> frames, FrameOutput& out) noexcept = 0;
};

}  // namespace andromeda::io
