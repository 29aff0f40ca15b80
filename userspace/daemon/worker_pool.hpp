// The packet workers of one andromedad: one per underlay RX queue, each an AF_XDP worker (one
// UMEM shared by its sockets: the underlay's queue, and the queues of the other ports that fall
// to it) run by its own thread around a PacketWorker (pipeline, fabric reader, NAT).
//
// [node] workers above the underlay's queue count adds tenant-only workers: every tenant port
// then goes to one of them (PortAssignment: stable, least-loaded), so one tenant's punts cannot
// fill the worker that carries the underlay and NAT. A tenant-only worker has no underlay
// socket: what it sends to the underlay or the uplink goes through its packet socket as a copy
// (glue counter tx_copied). It has an AF_XDP worker only while it serves a port, and since an
// AF_XDP worker's first socket carries the UMEM's rings, removing that port rebuilds it from the
// remaining ones (their counters carry over into the pool's sums).
//
// Reconfiguration (ports added or removed by a reload, next hops learned) happens while the
// threads are paused: a pause joins them between two batches, so frames wait on the RX rings
// and nothing is lost; no lock is taken on the per-packet path.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/port_assignment.hpp"
#include "dataplane/pipeline_config.hpp"
#include "fabric/store.hpp"
#include "io/bpf/bpf_instance.hpp"
#include "io/xsk/worker_thread.hpp"
#include "io/xsk/xsk_worker.hpp"
#include "nat/nat_engine.hpp"
#include "worker/packet_worker.hpp"

namespace andromeda::daemon {

// A port Andromeda owns: its XSKMAP slot and how many of its RX queues get a socket.
struct OwnedPort {
    std::string name;
    std::uint32_t ifindex = 0;
    dataplane::PortRole role = dataplane::PortRole::tenant;
    std::uint32_t slot = 0;
    std::uint32_t queues = 1;
    // The interface its sockets bind to when not `name` itself: a tenant port's punt pair's
    // steering end (io/netlink/punt_pair.hpp).
    std::string device;

    [[nodiscard]] const std::string& socket_device() const noexcept { return device.empty() ? name : device; }
};

// Sums over every worker.
struct PoolCounters {
    io::WorkerCounters io;
    io::SocketStatistics sockets;
    dataplane::PipelineCounters pipeline;
    dataplane::NatStageCounters nat_stage;
    worker::GlueCounters glue;
};

class WorkerPool {
public:
    // `ports` must start with the underlay; one worker per underlay RX queue, and tenant-only
    // workers up to `workers` ([node] workers; 0 or fewer than the underlay's queues: none).
    // Binds every socket and registers it in the XSKMAP; threads start with start(). Throws
    // io::IoError.
    WorkerPool(io::BpfInstance& bpf, fabric::FabricStore& store, nat::NatEngine* nat,
               const dataplane::PipelineConfig& pipeline, const dataplane::UplinkConfig& uplink,
               std::vector<OwnedPort> ports, std::uint32_t workers = 0);
    // Stops the threads and lets TX drain; the sockets close with their workers.
    ~WorkerPool();
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    // CPUs for the worker threads, from [node] worker_cpus: worker w runs on cpus[w % size]; empty
    // leaves them unpinned. Takes effect at the next start().
    void set_cpus(std::vector<std::uint32_t> cpus) { cpus_ = std::move(cpus); }
    // The CPU worker w is pinned to, or nullopt.
    [[nodiscard]] std::optional<int> cpu_of(std::size_t w) const noexcept;
    // Whether worker w's thread is pinned right now (false while paused or when pinning failed).
    [[nodiscard]] bool pinned(std::size_t w) const noexcept;

    void start();
    void pause();
    void resume() { start(); }
    [[nodiscard]] bool running() const noexcept { return running_; }

    // While paused. add_port throws io::IoError, leaving nothing of the port behind.
    void add_port(const OwnedPort& port);
    void remove_port(std::uint32_t ifindex);
    void set_next_hop(const wire::IpAddress& node, const wire::MacAddress& mac);
    void set_uplink_next_hop(const wire::MacAddress& mac);

    [[nodiscard]] std::size_t size() const noexcept { return workers_.size(); }
    // Workers without an underlay queue, which the tenant ports are spread over.
    [[nodiscard]] std::size_t tenant_only_workers() const noexcept { return workers_.size() - worker_count_; }
    // The workers that have a socket of `ifindex`, in order.
    [[nodiscard]] std::vector<std::uint32_t> workers_of(std::uint32_t ifindex) const;
    [[nodiscard]] const std::vector<OwnedPort>& ports() const noexcept { return ports_; }
    [[nodiscard]] const OwnedPort* find_port(std::uint32_t ifindex) const noexcept;
    // The RX queues of `ifindex` that have a socket, and how the sockets are bound.
    [[nodiscard]] std::vector<std::uint32_t> queues_of(std::uint32_t ifindex) const;
    [[nodiscard]] io::BindMode bind_mode() const noexcept;
    [[nodiscard]] PoolCounters counters() const;
    // Frames each worker received, in worker (underlay queue) order.
    [[nodiscard]] std::vector<std::uint64_t> rx_frames_per_worker() const;
    // Why a worker thread stopped early, if one did.
    [[nodiscard]] std::vector<std::string> failures() const;

private:
    struct SocketBinding {
        std::uint32_t ifindex = 0;
        std::uint32_t slot = 0;
        std::uint32_t queue = 0;
    };
    struct Worker {
        std::uint32_t queue = 0;  // its underlay RX queue; its index for a tenant-only worker
        bool tenant_only = false;
        std::unique_ptr<io::XskWorker> xsk;  // null: a tenant-only worker serving no port
        std::unique_ptr<worker::PacketWorker> handler;
        std::vector<SocketBinding> sockets;  // index = the XskWorker's socket index
        std::unique_ptr<io::WorkerThread> thread;
    };

    // Queues of `port` that worker `w` serves: q with q % (underlay queues) == w; with tenant-only
    // workers, a tenant port's every queue on its assigned worker.
    [[nodiscard]] std::vector<std::uint32_t> queues_for(const OwnedPort& port, std::uint32_t w) const;
    void make_worker(std::uint32_t w, const dataplane::PipelineConfig& pipeline, const dataplane::UplinkConfig& uplink);
    // Replaces a tenant-only worker's AF_XDP worker by one with `sockets` (none: no AF_XDP worker).
    void rebuild_xsk(Worker& worker, std::vector<SocketBinding> sockets);
    void register_sockets(Worker& worker);
    void retire_counters(const Worker& worker);
    [[nodiscard]] io::SocketSpec spec_of(const SocketBinding& binding) const;
    void publish_sockets(Worker& worker);
    void bind_ports();
    void unbind(Worker& worker, std::uint32_t ifindex) noexcept;
    void unregister_socket(const SocketBinding& s) noexcept;

    io::BpfInstance& bpf_;
    fabric::FabricStore& store_;
    nat::NatEngine* nat_;
    std::vector<OwnedPort> ports_;
    std::vector<Worker> workers_;
    std::uint32_t worker_count_ = 1;  // the underlay's workers (its RX queues)
    std::optional<PortAssignment> assignment_;  // with tenant-only workers
    // What rebuilt AF_XDP workers had counted, so sums never go backwards.
    io::WorkerCounters retired_io_;
    io::SocketStatistics retired_sockets_;
    std::vector<std::uint64_t> retired_rx_frames_;  // by worker
    std::vector<std::uint32_t> cpus_;
    bool running_ = false;
};

// Pauses the workers for its lifetime, so an exception during reconfiguration cannot leave
// them stopped.
class PausedWorkers {
public:
    explicit PausedWorkers(WorkerPool& pool) : pool_(pool) { pool_.pause(); }
    ~PausedWorkers();
    PausedWorkers(const PausedWorkers&) = delete;
    PausedWorkers& operator=(const PausedWorkers&) = delete;

private:
    WorkerPool& pool_;
};

}  // namespace andromeda::daemon
