#include "io/xsk/xsk_worker.hpp"

#include <linux/if_xdp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <spdlog/spdlog.h>

#include "io/bpf/library_log.hpp"
#include "io/plan/io_error.hpp"

namespace andromeda::io {

namespace {

using Clock = std::chrono::steady_clock;
// How long a bind waits for a queue a killed predecessor's socket still holds (add_socket).
constexpr std::chrono::milliseconds kBusyQueueWait{3000};
constexpr auto kRelaxed = std::memory_order_relaxed;
constexpr std::uint32_t kAllocationsPerRxFrame = 4;

// Counters have one writer (the worker thread): a load and a store, no locked read-modify-write.
template <class T>
void bump(std::atomic<T>& counter, T n = 1) noexcept {
    counter.store(counter.load(kRelaxed) + n, kRelaxed);
}

std::string bind_hint(int error, BindMode mode, const SocketSpec& spec) {
    switch (error) {
    case EBUSY: return "another AF_XDP socket holds this queue; is a previous andromedad still running?";
    case EINVAL: return "check that " + spec.ifname + " has a queue " + std::to_string(spec.queue);
    case EOPNOTSUPP:
        return mode == BindMode::zero_copy ? "the driver has no AF_XDP zero-copy support" : "the driver refused AF_XDP";
    case ENODEV: return spec.ifname + " does not exist in this network namespace";
    default: return {};
    }
}

}  // namespace

struct XskWorker::AtomicCounters {
#define ANDROMEDA_ATOMIC_COUNTER(name) std::atomic<std::uint64_t> name{0};
    ANDROMEDA_WORKER_COUNTERS(ANDROMEDA_ATOMIC_COUNTER)
#undef ANDROMEDA_ATOMIC_COUNTER
    std::array<std::atomic<std::uint64_t>, kDropReasonCount> drops{};  // by util::drop_slot
    std::array<std::atomic<std::uint32_t>, kFrameOwnerCount> owners{};
};

std::uint64_t WorkerCounters::dropped() const noexcept {
    std::uint64_t sum = 0;
    for (const auto d : drops) sum += d;
    return sum;
}

XskWorker::XskWorker(const UmemConfig& config, std::vector<SocketSpec> specs, BindPreference bind)
    : config_(config), ledger_(config.frame_count), counters_(std::make_unique<AtomicCounters>()) {
    config_.validate();
    if (specs.empty()) throw IoError("an AF_XDP worker needs at least one socket", EINVAL);
    const std::uint32_t per_socket = config_.frame_count / static_cast<std::uint32_t>(2 * specs.size());
    if (per_socket < config_.batch_size)
        throw IoError("frame_count " + std::to_string(config_.frame_count) + " is too small for " +
                          std::to_string(specs.size()) + " sockets",
                      EINVAL, "give each socket at least 2 x batch_size frames");
    area_size_ = std::size_t{config_.frame_count} * config_.frame_size;
    void* area = mmap(nullptr, area_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (area == MAP_FAILED) throw IoError("allocating the UMEM (" + std::to_string(area_size_) + " bytes)", errno);
    area_ = static_cast<std::uint8_t*>(area);
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    for (std::uint32_t i = config_.frame_count; i-- > 0;) free_frames_.push_back(i);
    rx_batch_.reserve(config_.batch_size);
    // Room for a pipeline's spares: replies and fragments, a few per received frame.
    allocated_.reserve(kAllocationsPerRxFrame * config_.batch_size);
    try {
        if (bind == BindPreference::copy_only) {
            bind_attempt(BindMode::copy, config_.stagger_slots(), specs);
        } else {
            try {
                bind_attempt(BindMode::zero_copy, config_.stagger_slots(), specs);
            } catch (const IoError& e) {
                if (bind == BindPreference::zero_copy_only) throw;
                zero_copy_refusal_ = e.what();
                unbind_all();
                bind_attempt(BindMode::copy, config_.stagger_slots(), specs);
            }
        }
    } catch (...) {
        unbind_all();
        munmap(area_, area_size_);
        close(wake_fd_);
        throw;
    }
    mode_ = sockets_.front()->report.mode;
    poll_fds_.reserve(sockets_.size() + 1);
    set_fill_targets();
    if (!zero_copy_refusal_.empty())
        spdlog::info("AF_XDP zero-copy refused ({}); {} sockets bound in copy mode", zero_copy_refusal_, sockets_.size());
    for (const auto& s : sockets_) spdlog::info("{}", s->report.message());
    refill();
    publish_ledger();
}

XskWorker::~XskWorker() {
    unbind_all();
    munmap(area_, area_size_);
    close(wake_fd_);
}

void XskWorker::bind_all(BindMode mode, const std::vector<SocketSpec>& specs) {
    for (const auto& spec : specs) add_socket(spec, mode);
}

void XskWorker::bind_attempt(BindMode mode, std::uint32_t slots, const std::vector<SocketSpec>& specs) {
    stagger_slots_ = slots;
    try {
        bind_all(mode, specs);
    } catch (const IoError& e) {
        if (slots <= 1) throw;
        // Maybe a kernel or zero-copy driver without unaligned chunks: the same, unstaggered. If
        // that fails too, the mode itself was refused, and that error is the one to report.
        unbind_all();
        stagger_slots_ = 1;
        bind_all(mode, specs);
        spdlog::info("AF_XDP {}: unaligned chunks refused ({}); frames are not staggered", to_string(mode), e.what());
    }
}

void XskWorker::add_socket(const SocketSpec& spec, BindMode mode) {
    auto s = std::make_unique<XskSocket>();
    s->spec = spec;
    if (umem_ == nullptr) {
        // The first socket's fill and completion rings are the UMEM's own.
        xsk_umem_config umem_config{};
        umem_config.fill_size = config_.fill_size;
        umem_config.comp_size = config_.completion_size;
        // Staggered, the kernel's chunk ends where the next frame's stride begins (see
        // UmemConfig::registered_chunk_size); our indexing keeps frame_size as the stride.
        const bool unaligned = stagger_slots_ > 1;
        umem_config.frame_size = unaligned ? config_.registered_chunk_size() : config_.frame_size;
        umem_config.frame_headroom = config_.frame_headroom;
        umem_config.flags = unaligned ? XDP_UMEM_UNALIGNED_CHUNK_FLAG : 0;
        if (const int rc = xsk_umem__create(&umem_, area_, area_size_, &s->fill, &s->completion, &umem_config); rc != 0)
            throw IoError("registering the UMEM", -rc);
    }
    xsk_socket_config socket_config{};
    socket_config.rx_size = config_.rx_size;
    socket_config.tx_size = config_.tx_size;
    socket_config.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;  // our XDP program, our XSKMAP
    socket_config.bind_flags = XDP_USE_NEED_WAKEUP | (mode == BindMode::zero_copy ? XDP_ZEROCOPY : XDP_COPY);
    LibraryLogCapture capture;
    // EBUSY right after a kill -9: the dead process's socket on this queue is released by the
    // kernel's deferred work, which a loaded host runs late. Waiting a little for it beats failing
    // the start (and with it the fast path this start adopted); a live holder still fails.
    const auto give_up = Clock::now() + kBusyQueueWait;
    int rc = 0;
    for (bool logged = false;; logged = true) {
        rc = xsk_socket__create_shared(&s->xsk, spec.ifname.c_str(), spec.queue, umem_, &s->rx, &s->tx, &s->fill,
                                       &s->completion, &socket_config);
        if (rc != -EBUSY || Clock::now() >= give_up) break;
        if (!logged)
            spdlog::info("{} queue {}: busy, waiting up to {} ms for the previous instance's socket to be released",
                         spec.ifname, spec.queue, kBusyQueueWait.count());
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (rc != 0)
        throw IoError("binding AF_XDP (" + std::string(to_string(mode)) + ") to " + spec.ifname + " queue " +
                          std::to_string(spec.queue),
                      -rc, bind_hint(-rc, mode, spec));
    s->report = {spec.ifname, spec.queue, bound_mode(s->fd()), true, s->fd()};
    s->pending_tx.reserve((1 + kAllocationsPerRxFrame) * config_.batch_size);
    sockets_.push_back(std::move(s));
}

void XskWorker::unbind_all() noexcept {
    for (auto it = sockets_.rbegin(); it != sockets_.rend(); ++it) xsk_socket__delete((*it)->xsk);
    sockets_.clear();
    if (umem_ != nullptr) xsk_umem__delete(umem_);
    umem_ = nullptr;
}

void XskWorker::set_fill_targets() noexcept {
    const std::uint32_t per_socket = config_.frame_count / static_cast<std::uint32_t>(2 * sockets_.size());
    for (auto& s : sockets_) s->fill_target = std::min(config_.fill_size, per_socket);
}

std::uint32_t XskWorker::bind_socket(const SocketSpec& spec) {
    if (config_.frame_count / static_cast<std::uint32_t>(2 * (sockets_.size() + 1)) < config_.batch_size)
        throw IoError("frame_count " + std::to_string(config_.frame_count) + " is too small for " +
                          std::to_string(sockets_.size() + 1) + " sockets",
                      EINVAL, "restart andromedad so it sizes the UMEM for every port");
    add_socket(spec, mode_);
    poll_fds_.reserve(sockets_.size() + 1);
    set_fill_targets();
    spdlog::info("{}", sockets_.back()->report.message());
    return static_cast<std::uint32_t>(sockets_.size() - 1);
}

// Once nothing is steered to the socket any more, the frames the kernel still holds for it are
// on its RX ring (never handed to a handler) or still posted on its fill ring: take them back.
std::uint32_t XskWorker::recover_frames(XskSocket& s) noexcept {
    auto give_back = [&](std::uint64_t addr) {
        const auto index = static_cast<std::uint32_t>(xsk_umem__add_offset_to_addr(addr) / config_.frame_size);
        if (index < config_.frame_count && ledger_.move(index, FrameOwner::fill_ring, FrameOwner::free_pool)) {
            free_frames_.push_back(index);
            --s.fill_posted;
        }
    };
    std::uint32_t idx = 0;
    const std::uint32_t received = xsk_ring_cons__peek(&s.rx, config_.rx_size, &idx);
    for (std::uint32_t i = 0; i < received; ++i) give_back(xsk_ring_cons__rx_desc(&s.rx, idx + i)->addr);
    xsk_ring_cons__release(&s.rx, received);
    const std::uint32_t consumed = __atomic_load_n(s.fill.consumer, __ATOMIC_ACQUIRE);
    for (std::uint32_t i = consumed; i != s.fill.cached_prod; ++i) give_back(*xsk_ring_prod__fill_addr(&s.fill, i));
    const auto deadline = Clock::now() + std::chrono::milliseconds(200);
    while (s.tx_in_flight > 0 && Clock::now() < deadline) {
        s.kick_tx();
        reclaim_completions();
        poll(nullptr, 0, 1);
    }
    return s.fill_posted + s.tx_in_flight;
}

std::uint32_t XskWorker::unbind_socket(std::uint32_t index) {
    if (index == 0 || index >= sockets_.size())
        throw IoError("unbinding AF_XDP socket " + std::to_string(index) + " of " + std::to_string(sockets_.size()),
                      EINVAL, "socket 0 holds the UMEM's own rings and stays for the worker's lifetime");
    XskSocket& s = *sockets_[index];
    const std::uint32_t lost = recover_frames(s);
    if (lost > 0)
        spdlog::warn("AF_XDP {} queue {}: {} frames stay with the kernel after unbinding", s.spec.ifname, s.spec.queue,
                     lost);
    xsk_socket__delete(s.xsk);
    sockets_.erase(sockets_.begin() + index);
    set_fill_targets();
    publish_ledger();
    return lost;
}

Frame XskWorker::make_frame(std::uint32_t index, std::uint32_t offset, std::uint32_t length,
                            std::uint32_t socket) const noexcept {
    Frame f;
    f.chunk_ = area_ + std::size_t{index} * config_.frame_size;
    f.index_ = index;
    f.chunk_size_ = config_.frame_size;
    f.offset_ = offset;
    f.length_ = length;
    f.socket_ = socket;
    return f;
}

void XskWorker::release_frame(std::uint32_t index) noexcept {
    if (ledger_.move(index, FrameOwner::worker, FrameOwner::free_pool)) free_frames_.push_back(index);
}

void XskWorker::count_drop(DropReason reason, std::uint64_t n) noexcept {
    bump(counters_->drops[util::drop_slot(reason)], n);
}

void XskWorker::reclaim_completions() noexcept {
    for (auto& s : sockets_) {
        std::uint32_t idx = 0;
        const std::uint32_t n = xsk_ring_cons__peek(&s->completion, config_.completion_size, &idx);
        for (std::uint32_t i = 0; i < n; ++i) {
            const auto index = static_cast<std::uint32_t>(*xsk_ring_cons__comp_addr(&s->completion, idx + i) / config_.frame_size);
            if (ledger_.move(index, FrameOwner::tx_ring, FrameOwner::free_pool)) free_frames_.push_back(index);
        }
        if (n == 0) continue;
        xsk_ring_cons__release(&s->completion, n);
        s->tx_in_flight -= std::min(s->tx_in_flight, n);
        bump(counters_->tx_completed, std::uint64_t{n});
    }
}

void XskWorker::refill() noexcept {
    for (auto& s : sockets_) {
        const std::uint32_t want = s->fill_target - std::min(s->fill_target, s->fill_posted);
        const auto n = static_cast<std::uint32_t>(std::min<std::size_t>(want, free_frames_.size()));
        if (n == 0) continue;
        std::uint32_t idx = 0;
        const std::uint32_t got = xsk_ring_prod__reserve(&s->fill, n, &idx);
        for (std::uint32_t i = 0; i < got; ++i) {
            const std::uint32_t index = free_frames_.back();
            free_frames_.pop_back();
            ledger_.move(index, FrameOwner::free_pool, FrameOwner::fill_ring);
            *xsk_ring_prod__fill_addr(&s->fill, idx + i) = fill_address(index);
        }
        xsk_ring_prod__submit(&s->fill, got);
        s->fill_posted += got;
        // Zero-copy drivers may sleep until told the fill ring has frames again.
        if (got > 0 && xsk_ring_prod__needs_wakeup(&s->fill)) recvfrom(s->fd(), nullptr, 0, MSG_DONTWAIT, nullptr, nullptr);
    }
}

std::size_t XskWorker::receive(std::uint32_t socket, FrameHandler& handler) noexcept {
    XskSocket& s = *sockets_[socket];
    std::uint32_t idx = 0;
    const std::uint32_t n = xsk_ring_cons__peek(&s.rx, config_.batch_size, &idx);
    if (n == 0) return 0;
    rx_batch_.clear();
    for (std::uint32_t i = 0; i < n; ++i) {
        const xdp_desc* d = xsk_ring_cons__rx_desc(&s.rx, idx + i);
        // Unaligned chunks: the offset of the data from the posted address rides in the top bits.
        const std::uint64_t addr = xsk_umem__add_offset_to_addr(d->addr);
        const auto index = static_cast<std::uint32_t>(addr / config_.frame_size);
        const auto offset = static_cast<std::uint32_t>(addr % config_.frame_size);
        --s.fill_posted;
        if (index >= config_.frame_count || offset + d->len > config_.frame_size) {
            count_drop(DropReason::invalid_descriptor);
            continue;
        }
        if (ledger_.move(index, FrameOwner::fill_ring, FrameOwner::worker)) rx_batch_.push_back(make_frame(index, offset, d->len, socket));
        else count_drop(DropReason::invalid_descriptor);
    }
    xsk_ring_cons__release(&s.rx, n);
    bump(counters_->rx_frames, std::uint64_t{rx_batch_.size()});
    bump(counters_->rx_batches, std::uint64_t{1});
    allocated_.clear();
    handler.handle(socket, rx_batch_, *this);
    settle(rx_batch_);
    settle(allocated_);
    allocated_.clear();
    flush_tx();
    return n;
}

void XskWorker::settle(std::span<Frame> frames) noexcept {
    for (Frame& f : frames) {
        if (f.fate_ != Frame::Fate::pending) continue;
        f.fate_ = Frame::Fate::dropped;
        count_drop(DropReason::unhandled);
        release_frame(f.index_);
    }
}

void XskWorker::flush_tx() noexcept {
    for (auto& s : sockets_) {
        auto& pending = s->pending_tx;
        std::size_t sent = 0;
        for (int attempt = 0; attempt < 2 && sent < pending.size(); ++attempt) {
            if (attempt > 0) {  // the ring is full: let the kernel drain it, take back what it sent
                s->kick_tx();
                reclaim_completions();
            }
            std::uint32_t idx = 0;
            const std::uint32_t got = xsk_ring_prod__reserve(&s->tx, static_cast<std::uint32_t>(pending.size() - sent), &idx);
            for (std::uint32_t i = 0; i < got; ++i) {
                const xdp_desc& d = pending[sent + i];
                ledger_.move(static_cast<std::uint32_t>(d.addr / config_.frame_size), FrameOwner::worker, FrameOwner::tx_ring);
                *xsk_ring_prod__tx_desc(&s->tx, idx + i) = d;
            }
            xsk_ring_prod__submit(&s->tx, got);
            sent += got;
            s->tx_in_flight += got;
            bump(counters_->tx_frames, std::uint64_t{got});
        }
        for (std::size_t i = sent; i < pending.size(); ++i) {
            count_drop(DropReason::tx_ring_full);
            release_frame(static_cast<std::uint32_t>(pending[i].addr / config_.frame_size));
        }
        if (!pending.empty() && s->kick_tx()) bump(counters_->tx_wakeups, std::uint64_t{1});
        pending.clear();
    }
    // Copy mode completes during the kick: take the frames back now, so an idle worker does not
    // kick again (an empty sendto per socket) and wake after 1 ms only to collect them.
    reclaim_completions();
}

void XskWorker::transmit(Frame& frame, std::uint32_t socket) noexcept {
    if (frame.fate_ != Frame::Fate::pending) {
        bump(counters_->fate_errors, std::uint64_t{1});
        return;
    }
    frame.fate_ = Frame::Fate::dropped;
    if (socket >= sockets_.size()) {
        count_drop(DropReason::no_such_socket);
        release_frame(frame.index_);
        return;
    }
    auto& pending = sockets_[socket]->pending_tx;
    if (pending.size() == pending.capacity()) {  // never allocate on the per-packet path
        count_drop(DropReason::tx_ring_full);
        release_frame(frame.index_);
        return;
    }
    pending.push_back({std::uint64_t{frame.index_} * config_.frame_size + frame.offset_, frame.length_, 0});
    frame.fate_ = Frame::Fate::transmit;
}

void XskWorker::drop(Frame& frame) noexcept {
    if (frame.fate_ != Frame::Fate::pending) {
        bump(counters_->fate_errors, std::uint64_t{1});
        return;
    }
    frame.fate_ = Frame::Fate::dropped;
    count_drop(DropReason::handler);
    release_frame(frame.index_);
}

Frame* XskWorker::allocate() noexcept {
    if (free_frames_.empty() || allocated_.size() == allocated_.capacity()) {
        bump(counters_->alloc_failed, std::uint64_t{1});
        return nullptr;
    }
    const std::uint32_t index = free_frames_.back();
    free_frames_.pop_back();
    ledger_.move(index, FrameOwner::free_pool, FrameOwner::worker);
    allocated_.push_back(make_frame(index, static_cast<std::uint32_t>(fill_address(index) % config_.frame_size) +
                                               config_.frame_headroom + kKernelRxHeadroom,
                                    0, kNoSocket));
    bump(counters_->allocated, std::uint64_t{1});
    return &allocated_.back();
}

void XskWorker::release(Frame& frame) noexcept {
    if (frame.fate_ != Frame::Fate::pending) {
        bump(counters_->fate_errors, std::uint64_t{1});
        return;
    }
    frame.fate_ = Frame::Fate::dropped;
    bump(counters_->released, std::uint64_t{1});
    release_frame(frame.index_);
}

bool XskWorker::transmit_copy(std::span<const std::uint8_t> bytes, std::uint32_t socket) noexcept {
    Frame* frame = allocate();
    if (frame == nullptr) return false;
    if (!frame->set_length(static_cast<std::uint32_t>(bytes.size()))) {
        drop(*frame);
        return false;
    }
    std::memcpy(frame->data(), bytes.data(), bytes.size());
    transmit(*frame, socket);
    return frame->fate_ == Frame::Fate::transmit;
}

std::size_t XskWorker::poll_once(FrameHandler& handler, int timeout_ms) {
    reclaim_completions();
    refill();
    std::size_t received = 0;
    for (std::uint32_t i = 0; i < sockets_.size(); ++i) received += receive(i, handler);
    if (received == 0 && timeout_ms > 0) wait_for_traffic(timeout_ms);
    publish_ledger();
    return received;
}

void XskWorker::wait_for_traffic(int timeout_ms) noexcept {
    // Frames still in flight need their completions reaped (and copy mode more kicks) soon.
    reclaim_completions();
    bool in_flight = false;
    for (auto& s : sockets_) {
        if (s->tx_in_flight == 0) continue;
        in_flight = true;
        if (s->kick_tx()) bump(counters_->tx_wakeups, std::uint64_t{1});
    }
    auto& fds = poll_fds_;
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    for (const auto& s : sockets_) fds.push_back({s->fd(), POLLIN, 0});
    if (poll(fds.data(), fds.size(), in_flight ? std::min(timeout_ms, 1) : timeout_ms) > 0 && (fds[0].revents & POLLIN)) {
        std::uint64_t value = 0;
        [[maybe_unused]] const ssize_t n = read(wake_fd_, &value, sizeof value);
    }
}

void XskWorker::run(FrameHandler& handler, std::stop_token stop) {
    std::stop_callback wake_on_stop(stop, [this] { wake(); });
    while (!stop.stop_requested()) poll_once(handler, 100);
}

void XskWorker::wake() noexcept {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = write(wake_fd_, &one, sizeof one);
}

bool XskWorker::drain_tx(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        reclaim_completions();
        std::uint32_t in_flight = 0;
        for (auto& s : sockets_) {
            in_flight += s->tx_in_flight;
            if (s->tx_in_flight > 0) s->kick_tx();
        }
        publish_ledger();
        if (in_flight == 0) return true;
        if (Clock::now() >= deadline) return false;
        poll(nullptr, 0, 1);
    }
}

void XskWorker::publish_ledger() noexcept {
    for (std::size_t i = 0; i < kFrameOwnerCount; ++i)
        counters_->owners[i].store(ledger_.count(static_cast<FrameOwner>(i)), kRelaxed);
    counters_->ledger_violations.store(ledger_.violations(), kRelaxed);
}

WorkerCounters XskWorker::counters() const noexcept {
    const AtomicCounters& c = *counters_;
    WorkerCounters out;
#define ANDROMEDA_LOAD_COUNTER(name) out.name = c.name.load(kRelaxed);
    ANDROMEDA_WORKER_COUNTERS(ANDROMEDA_LOAD_COUNTER)
#undef ANDROMEDA_LOAD_COUNTER
    for (std::size_t i = 0; i < kDropReasonCount; ++i) out.drops[i] = c.drops[i].load(kRelaxed);
    for (std::size_t i = 0; i < kFrameOwnerCount; ++i) out.frames_by_owner[i] = c.owners[i].load(kRelaxed);
    return out;
}

}  // namespace andromeda::io
