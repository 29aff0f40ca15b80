#include "worker/packet_worker.hpp"

#include <algorithm>

namespace andromeda::worker {

using dataplane::PortId;

PacketWorker::PacketWorker(dataplane::PipelineConfig config, fabric::FabricReader reader, nat::NatEngine* nat,
                           const dataplane::UplinkConfig& uplink)
    : pipeline_(std::move(config)), stage_(pipeline_, nat, uplink), reader_(std::move(reader)) {}

PacketWorker::~PacketWorker() = default;

void PacketWorker::set_sockets(std::vector<PortId> socket_ports) {
    socket_ports_ = std::move(socket_ports);
    socket_of_port_.reset(socket_ports_.size());
    // A port with several sockets here (several of its queues) sends on the first.
    for (std::uint32_t i = 0; i < socket_ports_.size(); ++i) socket_of_port_.insert(socket_ports_[i], i);
}

dataplane::PipelineCounters PacketWorker::pipeline_counters() const { return published_pipeline_.load(); }

GlueCounters PacketWorker::glue_counters() const { return published_glue_.load(); }

dataplane::NatStageCounters PacketWorker::nat_stage_counters() const { return published_stage_.load(); }

void PacketWorker::publish_counters() noexcept {
    glue_.emitter = emitter_.counters();
    published_pipeline_.store(pipeline_.counters());
    published_glue_.store(glue_);
    published_stage_.store(stage_.counters());
}

void PacketWorker::handle(std::uint32_t socket, std::span<io::Frame> frames, io::FrameOutput& out) noexcept {
    ++glue_.batches;
    const PortId port = socket < socket_ports_.size() ? socket_ports_[socket] : dataplane::kNoPort;
    {
        const auto fabric = reader_.read();
        for (std::size_t start = 0; start < frames.size(); start += dataplane::kMaxBatch) {
            const auto part = frames.subspan(start, std::min(dataplane::kMaxBatch, frames.size() - start));
            if (fabric.get() == nullptr) {
                glue_.no_fabric += part.size();
                for (io::Frame& f : part) out.drop(f);
                continue;
            }
            for (std::size_t i = 0; i < part.size(); ++i) rx_[i] = dataplane::RxFrame{port, buffer_of(part[i])};
            process(part, *fabric, out);
        }
    }
    publish_counters();
}

void PacketWorker::process(std::span<io::Frame> frames, const fabric::FabricSnapshot& fabric,
                           io::FrameOutput& out) noexcept {
    const std::size_t n = frames.size();
    emitter_.begin(frames, out);
    dataplane::FrameSink sink(emissions_, spare_buffers_, emitter_);
    stage_.process_batch(std::span(rx_.data(), n), fabric, sink, std::span(results_.data(), n), nat::Clock::now());
    for (const dataplane::Emission& e : sink.emissions()) {
        const FrameEmitter::Placed placed = emitter_.place(e);
        if (placed.frame != nullptr) send(*placed.frame, e.port, out);
        else if (placed.copy) send_copy(e, out);
    }
    emitter_.end(std::span(results_.data(), n));
}

void PacketWorker::send(io::Frame& frame, PortId port, io::FrameOutput& out) noexcept {
    if (const std::uint32_t socket = socket_of(port); socket != kNoSocket) {
        out.transmit(frame, socket);
        return;
    }
    if (port == dataplane::kNoPort) {
        ++glue_.tx_no_port;
        out.drop(frame);
        return;
    }
    // A port whose queues all belong to other workers (a single-queue tenant veth on a
    // multi-queue underlay): hand the kernel a copy.
    if (send_by_copy(port, frame.bytes())) out.release(frame);
    else out.drop(frame);
}

bool PacketWorker::send_by_copy(PortId port, std::span<const std::uint8_t> bytes) noexcept {
    switch (packet_socket_.send(port, bytes)) {
        case io::PacketSocket::Sent::sent: ++glue_.tx_copied; return true;
        case io::PacketSocket::Sent::busy: ++glue_.tx_copy_busy; return false;
        case io::PacketSocket::Sent::refused: break;
    }
    ++glue_.tx_copy_failed;
    return false;
}

// A second output from one input chunk (the input frame already carries the first); to a port
// without a socket here (a tenant-only worker's to the underlay), through the packet socket.
void PacketWorker::send_copy(const dataplane::Emission& e, io::FrameOutput& out) noexcept {
    const std::span<const std::uint8_t> bytes(e.frame.chunk + e.frame.offset, e.frame.length);
    const std::uint32_t socket = socket_of(e.port);
    if (socket != kNoSocket) {
        if (!out.transmit_copy(bytes, socket)) ++glue_.tx_copy_failed;
        return;
    }
    if (e.port != dataplane::kNoPort) send_by_copy(e.port, bytes);
    else ++glue_.tx_no_port;
}

}  // namespace andromeda::worker
