#include "daemon/worker_pool.hpp"
#include "util/counters.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <stdexcept>

namespace andromeda::daemon {

namespace {

// Enough frames for every socket's fill ring plus batches in flight, and room for ports a
// reload may add (XskWorker::bind_socket refuses once each socket would get too few). Fill and
// RX rings of 2048 (32 MB of UMEM per worker): with 1024 a worker descheduled for a few ms on a
// busy host let the fill ring run dry and dropped bursts (TCP retransmitted thousands of
// segments per 5 s in bench/e2e; with 2048, a handful).
io::UmemConfig umem_for(std::size_t sockets) {
    io::UmemConfig umem;
    umem.fill_size = umem.rx_size = 2048;
    umem.frame_count = std::bit_ceil(std::max<std::uint32_t>(8192, static_cast<std::uint32_t>(256 * (sockets + 8))));
    return umem;
}


void require_paused(bool running, const char* what) {
    if (running) throw std::logic_error(std::string("WorkerPool::") + what + " needs the workers paused");
}

}  // namespace

WorkerPool::WorkerPool(io::BpfInstance& bpf, fabric::FabricStore& store, nat::NatEngine* nat,
                       const dataplane::PipelineConfig& pipeline, const dataplane::UplinkConfig& uplink,
                       std::vector<OwnedPort> ports, std::uint32_t workers)
    : bpf_(bpf), store_(store), nat_(nat), ports_(std::move(ports)) {
    if (ports_.empty() || ports_.front().role != dataplane::PortRole::underlay)
        throw std::invalid_argument("WorkerPool: the first port must be the underlay");
    worker_count_ = std::max<std::uint32_t>(1, ports_.front().queues);
    const std::uint32_t total = std::max(worker_count_, workers);
    if (total > worker_count_) {
        assignment_.emplace(worker_count_, total);
        for (const OwnedPort& port : ports_)
            if (port.role == dataplane::PortRole::tenant) assignment_->assign(port.ifindex);
    }
    retired_rx_frames_.assign(total, 0);
    workers_.reserve(total);
    for (std::uint32_t w = 0; w < total; ++w) make_worker(w, pipeline, uplink);
    bind_ports();
}

WorkerPool::~WorkerPool() {
    pause();
    for (auto& w : workers_)
        if (w.xsk && !w.xsk->drain_tx(std::chrono::milliseconds(200)))
            spdlog::warn("worker {}: frames still in flight on TX at exit", w.queue);
}

std::vector<std::uint32_t> WorkerPool::queues_for(const OwnedPort& port, std::uint32_t w) const {
    std::vector<std::uint32_t> queues;
    if (assignment_ && port.role == dataplane::PortRole::tenant) {
        if (assignment_->worker_of(port.ifindex) == w)
            for (std::uint32_t q = 0; q < port.queues; ++q) queues.push_back(q);
        return queues;
    }
    for (std::uint32_t q = w; q < port.queues; q += worker_count_) queues.push_back(q);
    return queues;
}

void WorkerPool::make_worker(std::uint32_t w, const dataplane::PipelineConfig& pipeline,
                             const dataplane::UplinkConfig& uplink) {
    Worker worker;
    worker.queue = w;
    worker.tenant_only = w >= worker_count_;
    std::vector<io::SocketSpec> specs;
    for (const OwnedPort& port : ports_)
        for (const std::uint32_t q : queues_for(port, w)) {
            specs.push_back({port.socket_device(), q});
            worker.sockets.push_back({port.ifindex, port.slot, q});
        }
    if (!specs.empty()) worker.xsk = std::make_unique<io::XskWorker>(umem_for(specs.size()), specs);
    worker.handler = std::make_unique<worker::PacketWorker>(pipeline, store_.make_reader(), nat_, uplink);
    register_sockets(worker);
    publish_sockets(worker);
    workers_.push_back(std::move(worker));
}

void WorkerPool::register_sockets(Worker& worker) {
    for (std::size_t i = 0; i < worker.sockets.size(); ++i)
        bpf_.register_socket(worker.sockets[i].slot, worker.sockets[i].queue, worker.xsk->socket(i).fd);
}

io::SocketSpec WorkerPool::spec_of(const SocketBinding& binding) const {
    const OwnedPort* port = find_port(binding.ifindex);
    return {port != nullptr ? port->socket_device() : std::string(), binding.queue};
}

// Ledger gauges (frames_by_owner) describe the live UMEM and are not carried over.
void WorkerPool::retire_counters(const Worker& worker) {
    if (!worker.xsk) return;
    io::WorkerCounters io = worker.xsk->counters();
    io.frames_by_owner = {};
    util::add_counters(retired_io_, io);
    for (std::size_t i = 0; i < worker.xsk->socket_count(); ++i)
        util::add_counters(retired_sockets_, worker.xsk->socket_statistics(i));
    retired_rx_frames_[worker.queue] += io.rx_frames;
}

void WorkerPool::rebuild_xsk(Worker& worker, std::vector<SocketBinding> sockets) {
    if (worker.xsk && !worker.xsk->drain_tx(std::chrono::milliseconds(200)))
        spdlog::warn("worker {}: frames still in flight on TX when rebuilt", worker.queue);
    retire_counters(worker);
    worker.xsk.reset();  // closing its sockets takes them out of the XSKMAP
    worker.sockets.clear();
    if (sockets.empty()) return;
    std::vector<io::SocketSpec> specs;
    for (const SocketBinding& b : sockets) specs.push_back(spec_of(b));
    worker.xsk = std::make_unique<io::XskWorker>(umem_for(specs.size()), specs);
    worker.sockets = std::move(sockets);
    register_sockets(worker);
}

void WorkerPool::publish_sockets(Worker& worker) {
    std::vector<dataplane::PortId> ports;
    for (const auto& s : worker.sockets) ports.push_back(s.ifindex);
    worker.handler->set_sockets(std::move(ports));
}

// The pipelines' port table: every owned port, tenant ports bound to their endpoint by ifindex.
void WorkerPool::bind_ports() {
    std::vector<dataplane::PortBinding> bindings;
    for (const OwnedPort& p : ports_) bindings.push_back({p.ifindex, p.role, {}});
    for (auto& w : workers_) w.handler->pipeline().set_ports(bindings);
}

std::optional<int> WorkerPool::cpu_of(std::size_t w) const noexcept {
    if (cpus_.empty()) return std::nullopt;
    return static_cast<int>(cpus_[w % cpus_.size()]);
}

bool WorkerPool::pinned(std::size_t w) const noexcept {
    return w < workers_.size() && workers_[w].thread && workers_[w].thread->pinned();
}

void WorkerPool::start() {
    if (running_) return;
    for (std::size_t i = 0; i < workers_.size(); ++i)
        if (workers_[i].xsk)  // a tenant-only worker serving no port has nothing to run
            workers_[i].thread = std::make_unique<io::WorkerThread>(*workers_[i].xsk, *workers_[i].handler, cpu_of(i),
                                                                    "andromeda-w" + std::to_string(i));
    running_ = true;
}

void WorkerPool::pause() {
    for (auto& w : workers_) w.thread.reset();  // joins between two batches
    running_ = false;
}

PausedWorkers::~PausedWorkers() {
    try {
        pool_.resume();
    } catch (const std::exception& e) {
        spdlog::critical("restarting the packet workers failed: {}", e.what());
    }
}

void WorkerPool::add_port(const OwnedPort& port) {
    require_paused(running_, "add_port");
    ports_.push_back(port);
    if (assignment_ && port.role == dataplane::PortRole::tenant) assignment_->assign(port.ifindex);
    try {
        for (auto& w : workers_) {
            const auto queues = queues_for(port, w.queue);
            if (queues.empty()) continue;
            if (!w.xsk) {
                std::vector<SocketBinding> sockets;
                for (const std::uint32_t q : queues) sockets.push_back({port.ifindex, port.slot, q});
                rebuild_xsk(w, std::move(sockets));
                continue;
            }
            for (const std::uint32_t q : queues) {
                const std::uint32_t index = w.xsk->bind_socket({port.socket_device(), q});
                w.sockets.push_back({port.ifindex, port.slot, q});
                bpf_.register_socket(port.slot, q, w.xsk->socket(index).fd);
            }
        }
    } catch (...) {
        for (auto& w : workers_) unbind(w, port.ifindex);
        ports_.pop_back();
        if (assignment_) assignment_->release(port.ifindex);
        for (auto& w : workers_) publish_sockets(w);
        throw;
    }
    for (auto& w : workers_) publish_sockets(w);
    bind_ports();
}

// Takes a socket out of the XSKMAP; a failure is only logged, as the socket's close removes the
// entry anyway.
void WorkerPool::unregister_socket(const SocketBinding& s) noexcept {
    try {
        bpf_.unregister_socket(s.slot, s.queue);
    } catch (const std::exception& e) {
        spdlog::warn("{}", e.what());
    }
}

void WorkerPool::unbind(Worker& worker, std::uint32_t ifindex) noexcept {
    // A tenant-only worker's socket 0 is a tenant port's: the AF_XDP worker is rebuilt without it.
    if (worker.tenant_only && !worker.sockets.empty() && worker.sockets.front().ifindex == ifindex) {
        std::vector<SocketBinding> rest;
        for (const SocketBinding& s : worker.sockets)
            if (s.ifindex != ifindex) rest.push_back(s);
        for (const SocketBinding& s : worker.sockets) {
            if (s.ifindex != ifindex) continue;
            unregister_socket(s);
        }
        try {
            rebuild_xsk(worker, std::move(rest));
        } catch (const std::exception& e) {
            spdlog::error("worker {}: rebuilding its AF_XDP sockets without ifindex {} failed, its ports have none: {}",
                          worker.queue, ifindex, e.what());
            worker.xsk.reset();
            worker.sockets.clear();
        }
        return;
    }
    for (std::size_t i = worker.sockets.size(); i-- > 1;) {  // socket 0 is the underlay's, never removed
        const SocketBinding s = worker.sockets[i];
        if (s.ifindex != ifindex) continue;
        unregister_socket(s);
        try {
            worker.xsk->unbind_socket(static_cast<std::uint32_t>(i));
        } catch (const std::exception& e) {
            spdlog::error("unbinding AF_XDP socket of ifindex {} queue {}: {}", ifindex, s.queue, e.what());
        }
        worker.sockets.erase(worker.sockets.begin() + static_cast<std::ptrdiff_t>(i));
    }
}

void WorkerPool::remove_port(std::uint32_t ifindex) {
    require_paused(running_, "remove_port");
    for (auto& w : workers_) {
        unbind(w, ifindex);
        publish_sockets(w);
    }
    std::erase_if(ports_, [&](const OwnedPort& p) { return p.ifindex == ifindex && p.role != dataplane::PortRole::underlay; });
    if (assignment_) assignment_->release(ifindex);
    bind_ports();
}

void WorkerPool::set_next_hop(const wire::IpAddress& node, const wire::MacAddress& mac) {
    require_paused(running_, "set_next_hop");
    for (auto& w : workers_) w.handler->pipeline().set_next_hop(node, mac);
}

void WorkerPool::set_uplink_next_hop(const wire::MacAddress& mac) {
    require_paused(running_, "set_uplink_next_hop");
    for (auto& w : workers_) w.handler->set_uplink_next_hop(mac);
}

const OwnedPort* WorkerPool::find_port(std::uint32_t ifindex) const noexcept {
    const auto it = std::find_if(ports_.begin(), ports_.end(), [&](const OwnedPort& p) { return p.ifindex == ifindex; });
    return it == ports_.end() ? nullptr : &*it;
}

std::vector<std::uint32_t> WorkerPool::workers_of(std::uint32_t ifindex) const {
    std::vector<std::uint32_t> out;
    for (const auto& w : workers_)
        if (std::any_of(w.sockets.begin(), w.sockets.end(), [&](const SocketBinding& s) { return s.ifindex == ifindex; }))
            out.push_back(w.queue);
    return out;
}

std::vector<std::uint32_t> WorkerPool::queues_of(std::uint32_t ifindex) const {
    std::vector<std::uint32_t> queues;
    for (const auto& w : workers_)
        for (const auto& s : w.sockets)
            if (s.ifindex == ifindex) queues.push_back(s.queue);
    std::sort(queues.begin(), queues.end());
    return queues;
}

io::BindMode WorkerPool::bind_mode() const noexcept {
    return workers_.empty() ? io::BindMode::copy : workers_.front().xsk->bind_mode();
}

PoolCounters WorkerPool::counters() const {
    PoolCounters sum;
    sum.io = retired_io_;
    sum.sockets = retired_sockets_;
    for (const auto& w : workers_) {
        if (w.xsk) {
            util::add_counters(sum.io, w.xsk->counters());
            for (std::size_t i = 0; i < w.xsk->socket_count(); ++i)
                util::add_counters(sum.sockets, w.xsk->socket_statistics(i));
        }
        util::add_counters(sum.pipeline, w.handler->pipeline_counters());
        util::add_counters(sum.glue, w.handler->glue_counters());
        util::add_counters(sum.nat_stage, w.handler->nat_stage_counters());
    }
    return sum;
}

std::vector<std::uint64_t> WorkerPool::rx_frames_per_worker() const {
    std::vector<std::uint64_t> out;
    for (const auto& w : workers_) out.push_back(retired_rx_frames_[w.queue] + (w.xsk ? w.xsk->counters().rx_frames : 0));
    return out;
}

std::vector<std::string> WorkerPool::failures() const {
    std::vector<std::string> out;
    for (const auto& w : workers_)
        if (w.thread && !w.thread->failure().empty())
            out.push_back("worker " + std::to_string(w.queue) + ": " + w.thread->failure());
    return out;
}

}  // namespace andromeda::daemon
