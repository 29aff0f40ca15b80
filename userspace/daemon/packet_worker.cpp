#include "daemon/packet_worker.hpp"

#include <algorithm>

namespace andromeda::daemon {

namespace {

using dataplane::PortId;

dataplane::PacketBuffer buffer_of(const io::Frame& f) noexcept {
    return {f.chunk(), f.chunk_size(), static_cast<std::uint32_t>(f.data() - f.chunk()), f.length()};
}

}  // namespace

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
    std::fill_n(fated_.begin(), n, false);
    spare_count_ = 0;
    out_ = &out;
    dataplane::FrameSink sink(emissions_, spare_buffers_, *this);
    stage_.process_batch(std::span(rx_.data(), n), fabric, sink, std::span(results_.data(), n), nat::Clock::now());
    out_ = nullptr;
    emit_all(sink, frames, out);
    release_spares(sink.spares_used(), out);
    for (std::size_t i = 0; i < n; ++i) {
        if (fated_[i]) continue;
        // Not emitted itself: dropped (its counters say why), or its output went into spare
        // frames (fragments, ICMP errors, a NAT-translated copy routed into the fabric).
        if (results_[i].verdict == dataplane::Verdict::drop) out.drop(frames[i]);
        else out.release(frames[i]);
    }
}

std::size_t PacketWorker::supply(std::span<dataplane::PacketBuffer> into) noexcept {
    std::size_t got = 0;
    for (; got < into.size() && spare_count_ < kMaxSpares; ++got) {
        io::Frame* f = out_ != nullptr ? out_->allocate() : nullptr;
        if (f == nullptr) break;
        spare_frames_[spare_count_++] = f;
        into[got] = buffer_of(*f);
    }
    if (got < into.size()) ++glue_.spare_shortfall;
    return got;
}

void PacketWorker::release_spares(std::size_t used, io::FrameOutput& out) noexcept {
    for (std::size_t i = used; i < spare_count_; ++i) out.release(*spare_frames_[i]);
    spare_count_ = 0;
}

void PacketWorker::emit_all(const dataplane::FrameSink& sink, std::span<io::Frame> inputs,
                            io::FrameOutput& out) noexcept {
    std::size_t next_spare = 0;
    for (const dataplane::Emission& e : sink.emissions()) {
        io::Frame* frame = nullptr;
        if (e.input_index >= 0 && static_cast<std::size_t>(e.input_index) < inputs.size()) {
            const auto i = static_cast<std::size_t>(e.input_index);
            if (fated_[i]) {  // a second output from one input chunk: send a copy of it
                const std::uint32_t socket = socket_of(e.port);
                if (socket == kNoSocket ||
                    !out.transmit_copy(std::span(e.frame.chunk + e.frame.offset, e.frame.length), socket))
                    ++glue_.tx_copy_failed;
                continue;
            }
            fated_[i] = true;
            frame = &inputs[i];
        } else {
            // Spares are used strictly in order, so the k-th spare emission is in spare k.
            for (std::size_t k = next_spare; k < spare_count_; ++k) {
                if (spare_frames_[k]->chunk() != e.frame.chunk) continue;
                frame = spare_frames_[k];
                next_spare = k + 1;
                break;
            }
            if (frame == nullptr) continue;
        }
        if (!frame->reframe(e.frame.offset, e.frame.length)) {
            out.drop(*frame);
            continue;
        }
        send(*frame, e.port, out);
    }
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
    if (packet_socket_.send(port, frame.bytes())) {
        ++glue_.tx_copied;
        out.release(frame);
    } else {
        ++glue_.tx_copy_failed;
        out.drop(frame);
    }
}

}  // namespace andromeda::daemon
