#include "daemon/packet_worker.hpp"

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "wire/bytes.hpp"

namespace andromeda::daemon {

namespace {

using dataplane::PortId;

dataplane::PacketBuffer buffer_of(const io::Frame& f) noexcept {
    return {f.chunk(), f.chunk_size(), static_cast<std::uint32_t>(f.data() - f.chunk()), f.length()};
}

}  // namespace

GlueCounters& GlueCounters::operator+=(const GlueCounters& o) noexcept {
    batches += o.batches;
    no_fabric += o.no_fabric;
    spare_shortfall += o.spare_shortfall;
    tx_copied += o.tx_copied;
    tx_copy_failed += o.tx_copy_failed;
    tx_no_port += o.tx_no_port;
    return *this;
}

PacketWorker::PacketWorker(dataplane::PipelineConfig config, fabric::FabricReader reader, nat::NatEngine* nat,
                           const dataplane::UplinkConfig& uplink)
    : pipeline_(std::move(config)), stage_(pipeline_, nat, uplink), reader_(std::move(reader)) {
    // Protocol 0: this socket only sends; it never receives a copy of anyone's traffic.
    packet_socket_ = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (packet_socket_ < 0) throw std::system_error(errno, std::generic_category(), "opening an AF_PACKET socket");
}

PacketWorker::~PacketWorker() {
    if (packet_socket_ >= 0) close(packet_socket_);
}

void PacketWorker::set_sockets(std::vector<PortId> socket_ports) {
    socket_ports_ = std::move(socket_ports);
    socket_of_port_.clear();
    // A port with several sockets here (several of its queues) sends on the first.
    for (std::uint32_t i = 0; i < socket_ports_.size(); ++i) socket_of_port_.emplace(socket_ports_[i], i);
}

dataplane::PipelineCounters PacketWorker::pipeline_counters() const {
    std::lock_guard lock(published_mutex_);
    return published_pipeline_;
}

GlueCounters PacketWorker::glue_counters() const {
    std::lock_guard lock(published_mutex_);
    return published_glue_;
}

dataplane::NatStageCounters PacketWorker::nat_stage_counters() const {
    std::lock_guard lock(published_mutex_);
    return published_stage_;
}

void PacketWorker::publish_counters() noexcept {
    std::lock_guard lock(published_mutex_);
    published_pipeline_ = pipeline_.counters();
    published_glue_ = glue_;
    published_stage_ = stage_.counters();
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
    const std::size_t spares = take_spares(n + kExtraSpares, out);
    dataplane::FrameSink sink(emissions_, std::span(spare_buffers_.data(), spares));
    stage_.process_batch(std::span(rx_.data(), n), fabric, sink, std::span(results_.data(), n), nat::Clock::now());
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

std::size_t PacketWorker::take_spares(std::size_t wanted, io::FrameOutput& out) noexcept {
    wanted = std::min(wanted, kMaxSpares);
    std::size_t got = 0;
    for (; got < wanted; ++got) {
        io::Frame* f = out.allocate();
        if (f == nullptr) break;
        spare_frames_[got] = f;
        spare_buffers_[got] = buffer_of(*f);
    }
    if (got < wanted) ++glue_.spare_shortfall;
    spare_count_ = got;
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
                const auto it = socket_of_port_.find(e.port);
                if (it == socket_of_port_.end() ||
                    !out.transmit_copy(std::span(e.frame.chunk + e.frame.offset, e.frame.length), it->second))
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
    if (const auto it = socket_of_port_.find(port); it != socket_of_port_.end()) {
        out.transmit(frame, it->second);
        return;
    }
    if (port == dataplane::kNoPort || frame.length() < ETH_HLEN) {
        ++glue_.tx_no_port;
        out.drop(frame);
        return;
    }
    // A port whose queues all belong to other workers (a single-queue tenant veth on a
    // multi-queue underlay): hand the kernel a copy.
    sockaddr_ll addr{};
    addr.sll_family = AF_PACKET;
    addr.sll_ifindex = static_cast<int>(port);
    addr.sll_protocol = htons(wire::load_be16(frame.data() + 12));
    addr.sll_halen = ETH_ALEN;
    std::copy_n(frame.data(), ETH_ALEN, addr.sll_addr);
    const ssize_t sent = sendto(packet_socket_, frame.data(), frame.length(), MSG_DONTWAIT,
                                reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    if (sent == static_cast<ssize_t>(frame.length())) {
        ++glue_.tx_copied;
        out.release(frame);
    } else {
        ++glue_.tx_copy_failed;
        out.drop(frame);
    }
}

}  // namespace andromeda::daemon
