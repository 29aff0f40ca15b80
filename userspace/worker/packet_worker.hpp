// One AF_XDP worker's frames through one dataplane pipeline: a batch of frames from one socket
// goes through the pipeline (with its NAT stage, dataplane::NatPipeline) in place, and each
// emission (turned back into a frame by FrameEmitter) leaves on the socket of its port, or, when
// this worker has no socket on that port (a single-queue tenant veth on a multi-queue underlay),
// as a copy through a packet socket. Spare frames are taken from the UMEM only when the pipeline
// asks for one; ports are resolved to sockets once, when the sockets are set. One PacketWorker
// per worker thread; everything but the counter getters is that thread's alone (the setters'
// callers pause the thread first), and the counters are published without a lock (Published<T>).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "dataplane/nat_pipeline.hpp"
#include "dataplane/pipeline.hpp"
#include "fabric/publisher.hpp"
#include "io/xsk/frame.hpp"
#include "io/xsk/packet_socket.hpp"
#include "nat/nat_engine.hpp"
#include "util/counters.hpp"
#include "util/flat_table.hpp"
#include "wire/addresses.hpp"
#include "worker/frame_emitter.hpp"
#include "worker/published.hpp"

namespace andromeda::worker {

// What the worker did besides the pipeline, next to the pipeline's counters.
#define ANDROMEDA_GLUE_COUNTERS(X)                                                 \
    X(batches)                                                                     \
    X(no_fabric)      /* frames dropped before the first snapshot was published */ \
    X(tx_copied)      /* sent through the packet socket: no AF_XDP socket here */  \
    X(tx_copy_busy)   /* ... lost: the kernel's queue for the port was full */     \
    X(tx_copy_failed) /* a copy refused (no such port) or with no UMEM frame */    \
    X(tx_no_port)     /* an emission for a port this node does not own */

struct GlueCounters {
    ANDROMEDA_GLUE_COUNTERS(ANDROMEDA_COUNTER_FIELD)
    EmitterCounters emitter;

    // Calls f(name, value) for every counter (util/counters.hpp).
    template <class F>
    void for_each(F&& f) const {
        ANDROMEDA_GLUE_COUNTERS(ANDROMEDA_COUNTER_VISIT)
        emitter.for_each(f);
    }
};

class PacketWorker final : public io::FrameHandler {
public:
    // `nat` may be null (this node is no NAT gateway). Opens the packet socket used for ports
    // this worker has no AF_XDP socket on; throws io::IoError when it cannot.
    PacketWorker(dataplane::PipelineConfig config, fabric::FabricReader reader, nat::NatEngine* nat,
                 const dataplane::UplinkConfig& uplink);
    ~PacketWorker() override;
    PacketWorker(const PacketWorker&) = delete;
    PacketWorker& operator=(const PacketWorker&) = delete;

    void handle(std::uint32_t socket, std::span<io::Frame> frames, io::FrameOutput& out) noexcept override;

    // Reconfiguration: only while no thread runs this worker.
    // socket_ports[i] is the port (ifindex) of the worker's socket i.
    void set_sockets(std::vector<dataplane::PortId> socket_ports);
    void set_uplink_next_hop(const wire::MacAddress& mac) noexcept { stage_.set_uplink_next_hop(mac); }
    [[nodiscard]] dataplane::Pipeline& pipeline() noexcept { return pipeline_; }

    // Safe from any thread: a copy made at the end of the last batch.
    [[nodiscard]] dataplane::PipelineCounters pipeline_counters() const;
    [[nodiscard]] GlueCounters glue_counters() const;
    [[nodiscard]] dataplane::NatStageCounters nat_stage_counters() const;

private:
    static constexpr std::size_t kMaxEmissions = 4 * dataplane::kMaxBatch;

    void process(std::span<io::Frame> frames, const fabric::FabricSnapshot& fabric, io::FrameOutput& out) noexcept;
    void send(io::Frame& frame, dataplane::PortId port, io::FrameOutput& out) noexcept;
    void send_copy(const dataplane::Emission& emission, io::FrameOutput& out) noexcept;
    // Through the packet socket, counted as tx_copied, tx_copy_busy or tx_copy_failed.
    bool send_by_copy(dataplane::PortId port, std::span<const std::uint8_t> bytes) noexcept;
    // The socket (index in this worker) a port's frames leave on, or kNoSocket.
    [[nodiscard]] std::uint32_t socket_of(dataplane::PortId port) const noexcept { return socket_of_port_.find(port); }
    void publish_counters() noexcept;

    using SocketIndex = util::FlatTable<dataplane::PortId, std::uint32_t, util::Fibonacci32>;
    static constexpr std::uint32_t kNoSocket = SocketIndex::kMissing;

    dataplane::Pipeline pipeline_;
    dataplane::NatPipeline stage_;  // borrows pipeline_
    fabric::FabricReader reader_;
    io::PacketSocket packet_socket_;
    std::vector<dataplane::PortId> socket_ports_;
    SocketIndex socket_of_port_;  // port (ifindex) -> socket index
    GlueCounters glue_;

    // Per-batch scratch, sized once: the per-packet path never allocates.
    std::array<dataplane::RxFrame, dataplane::kMaxBatch> rx_{};
    std::array<dataplane::NatFrameResult, dataplane::kMaxBatch> results_{};
    std::array<dataplane::Emission, kMaxEmissions> emissions_{};
    std::array<dataplane::PacketBuffer, FrameEmitter::kMaxSpares> spare_buffers_{};
    FrameEmitter emitter_;

    Published<dataplane::PipelineCounters> published_pipeline_;
    Published<GlueCounters> published_glue_;
    Published<dataplane::NatStageCounters> published_stage_;
};

}  // namespace andromeda::worker
