// One AF_XDP worker: a UMEM shared by all its sockets (the underlay socket of one RX queue and
// the tenant sockets of the same queue), the frame pool and ledger, and the receive/transmit
// loop. One thread runs it (WorkerThread); nothing in it is shared with other workers.
//
// Bind: all sockets of a UMEM have one mode, the first bind's (the kernel shares a UMEM only
// within a mode). `best` binds everything zero-copy and, if any socket refuses, rebinds
// everything in copy mode; the per-socket reports say what each achieved (XDP_OPTIONS).
#pragma once

#include <poll.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "io/plan/config.hpp"
#include "io/xsk/frame.hpp"
#include "io/xsk/frame_ledger.hpp"
#include "io/xsk/xsk_socket.hpp"
#include "util/counters.hpp"
#include "util/drop_reasons.hpp"

struct xsk_umem;

namespace andromeda::io {

#define ANDROMEDA_WORKER_COUNTERS(X)                                      \
    X(rx_frames)                                                          \
    X(rx_batches)                                                         \
    X(tx_frames)    /* put on a TX ring */                                \
    X(tx_completed) /* returned by the kernel after sending */            \
    X(allocated)    /* frames handed to the handler by allocate() */      \
    X(released)     /* frames the handler gave back unused (release()) */ \
    X(alloc_failed) /* allocate() found the pool empty */                 \
    X(tx_wakeups)   /* sendto() kicks for need_wakeup */                  \
    X(ledger_violations)                                                  \
    X(fate_errors) /* a frame given a second fate (a handler bug); the first stands */

// Readable from any thread while the worker runs.
struct WorkerCounters {
    ANDROMEDA_WORKER_COUNTERS(ANDROMEDA_COUNTER_FIELD)
    std::array<std::uint64_t, kDropReasonCount> drops{};            // by util::drop_slot(DropReason)
    std::array<std::uint64_t, kFrameOwnerCount> frames_by_owner{};  // the ledger, per pass

    [[nodiscard]] std::uint64_t dropped() const noexcept;
    // Calls f(name, value) for every counter (util/counters.hpp): "drop_<reason>", "frames_<owner>".
    template <class F>
    void for_each(F&& f) const {
        ANDROMEDA_WORKER_COUNTERS(ANDROMEDA_COUNTER_VISIT)
#define ANDROMEDA_WORKER_DROP_VISIT(name, id, description) f("drop_" #name, drop(DropReason::name));
        ANDROMEDA_DROPS_IO(ANDROMEDA_WORKER_DROP_VISIT)
#undef ANDROMEDA_WORKER_DROP_VISIT
        for (std::size_t i = 0; i < kFrameOwnerCount; ++i)
            f(std::string("frames_") + to_string(static_cast<FrameOwner>(i)), frames_by_owner[i]);
    }
    [[nodiscard]] std::uint64_t drop(DropReason r) const noexcept {
        const std::size_t slot = util::drop_slot(r);
        return slot < drops.size() ? drops[slot] : 0;
    }
};

class XskWorker final : private FrameOutput {
public:
    // Creates the UMEM and binds one socket per spec, in the calling thread's network namespace.
    // Throws IoError (with the driver's reason) when a socket cannot be bound.
    XskWorker(const UmemConfig& config, std::vector<SocketSpec> sockets, BindPreference bind = BindPreference::best);
    ~XskWorker();
    XskWorker(const XskWorker&) = delete;
    XskWorker& operator=(const XskWorker&) = delete;

    [[nodiscard]] std::size_t socket_count() const noexcept { return sockets_.size(); }
    [[nodiscard]] const SocketReport& socket(std::size_t index) const noexcept { return sockets_[index]->report; }
    [[nodiscard]] SocketStatistics socket_statistics(std::size_t index) const noexcept {
        return sockets_[index]->statistics();
    }
    [[nodiscard]] BindMode bind_mode() const noexcept { return mode_; }
    // Why zero-copy was refused, when `best` fell back to copy.
    [[nodiscard]] const std::string& zero_copy_refusal() const noexcept { return zero_copy_refusal_; }
    // How many offsets received frames are staggered over (UmemConfig::stagger_slots() in
    // unaligned-chunk mode; 1 when the kernel or driver refused it).
    [[nodiscard]] std::uint32_t stagger_slots() const noexcept { return stagger_slots_; }

    // Reconfiguration while no thread runs the worker (a daemon reload adding or removing a
    // tenant port): frames already on the other sockets' rings wait there meanwhile.
    // Binds one more socket in the worker's bind mode and returns its index. Throws IoError.
    std::uint32_t bind_socket(const SocketSpec& spec);
    // Unbinds socket `index` (not 0: the first socket's rings are the UMEM's). Frames on its fill
    // and RX rings return to the pool, its TX is drained (bounded); later sockets move down one
    // index. Returns the frames that could not be recovered (held by the kernel), normally 0.
    std::uint32_t unbind_socket(std::uint32_t index);

    // One pass: reclaim TX completions, refill the fill rings, receive one batch per socket and
    // hand it to `handler`, send what it queued. When nothing arrived and `timeout_ms` > 0,
    // sleeps in poll() until traffic, wake() or the timeout. Returns the frames received.
    std::size_t poll_once(FrameHandler& handler, int timeout_ms);
    // poll_once until `stop` is requested (wake() is called on request).
    void run(FrameHandler& handler, std::stop_token stop);
    // Interrupts a poll() in progress; callable from any thread.
    void wake() noexcept;
    // Kicks TX and reclaims completions until no frame is in flight or `timeout` passes;
    // returns whether everything came back. For shutdown and tests.
    bool drain_tx(std::chrono::milliseconds timeout);

    [[nodiscard]] WorkerCounters counters() const noexcept;
    // The frame ledger; read it from the worker's own thread, or while it does not run.
    [[nodiscard]] const FrameLedger& ledger() const noexcept { return ledger_; }

private:
    struct AtomicCounters;

    void bind_all(BindMode mode, const std::vector<SocketSpec>& specs);
    void unbind_all() noexcept;
    void add_socket(const SocketSpec& spec, BindMode mode);
    void set_fill_targets() noexcept;
    std::uint32_t recover_frames(XskSocket& s) noexcept;
    void reclaim_completions() noexcept;
    void refill() noexcept;
    std::size_t receive(std::uint32_t socket, FrameHandler& handler) noexcept;
    void settle(std::span<Frame> frames) noexcept;
    void flush_tx() noexcept;
    void wait_for_traffic(int timeout_ms) noexcept;
    void release_frame(std::uint32_t index) noexcept;
    void count_drop(DropReason reason, std::uint64_t n = 1) noexcept;
    void publish_ledger() noexcept;
    [[nodiscard]] Frame make_frame(std::uint32_t index, std::uint32_t offset, std::uint32_t length,
                                   std::uint32_t socket) const noexcept;
    // The UMEM address frame `index` is posted at (its chunk, plus its stagger).
    [[nodiscard]] std::uint64_t fill_address(std::uint32_t index) const noexcept {
        return std::uint64_t{index} * config_.frame_size + UmemConfig::stagger_of(index, stagger_slots_);
    }
    // Binds every spec in `mode`, frames staggered over `slots` offsets (more than 1: a UMEM in
    // unaligned-chunk mode); falls back to 1 when that is refused.
    void bind_attempt(BindMode mode, std::uint32_t slots, const std::vector<SocketSpec>& specs);

    // FrameOutput
    void transmit(Frame& frame, std::uint32_t socket) noexcept override;
    void drop(Frame& frame) noexcept override;
    Frame* allocate() noexcept override;
    void release(Frame& frame) noexcept override;
    bool transmit_copy(std::span<const std::uint8_t> bytes, std::uint32_t socket) noexcept override;

    UmemConfig config_;
    std::uint8_t* area_ = nullptr;
    std::size_t area_size_ = 0;
    xsk_umem* umem_ = nullptr;
    std::uint32_t stagger_slots_ = 1;  // more than 1: the UMEM is in unaligned-chunk mode
    std::vector<std::unique_ptr<XskSocket>> sockets_;
    BindMode mode_ = BindMode::copy;
    std::string zero_copy_refusal_;
    FrameLedger ledger_;
    std::vector<std::uint32_t> free_frames_;  // the free pool, a stack of chunk numbers
    std::vector<Frame> rx_batch_;
    std::vector<Frame> allocated_;  // frames allocate() handed out during the current batch
    std::vector<pollfd> poll_fds_;
    int wake_fd_ = -1;
    std::unique_ptr<AtomicCounters> counters_;
};

}  // namespace andromeda::io
