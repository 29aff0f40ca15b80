#include "worker/frame_emitter.hpp"

#include <algorithm>

namespace andromeda::worker {

void FrameEmitter::begin(std::span<io::Frame> inputs, io::FrameOutput& out) noexcept {
    inputs_ = inputs.first(std::min(inputs.size(), fated_.size()));
    out_ = &out;
    std::fill_n(fated_.begin(), inputs_.size(), false);
    spare_count_ = 0;
    next_spare_ = 0;
}

std::size_t FrameEmitter::supply(std::span<dataplane::PacketBuffer> into) noexcept {
    std::size_t got = 0;
    for (; got < into.size() && spare_count_ < kMaxSpares; ++got) {
        io::Frame* f = out_ != nullptr ? out_->allocate() : nullptr;
        if (f == nullptr) break;
        spare_placed_[spare_count_] = false;
        spares_[spare_count_++] = f;
        into[got] = buffer_of(*f);
    }
    if (got < into.size()) ++counters_.spare_shortfall;
    return got;
}

FrameEmitter::Placed FrameEmitter::place(const dataplane::Emission& e) noexcept {
    io::Frame* frame = nullptr;
    if (e.input_index >= 0 && static_cast<std::size_t>(e.input_index) < inputs_.size()) {
        const auto i = static_cast<std::size_t>(e.input_index);
        if (fated_[i]) return {nullptr, true};
        fated_[i] = true;
        frame = &inputs_[i];
    } else {
        for (std::size_t k = next_spare_; k < spare_count_ && frame == nullptr; ++k) {
            if (spares_[k]->chunk() != e.frame.chunk) continue;
            frame = spares_[k];
            spare_placed_[k] = true;
            next_spare_ = k + 1;
        }
        if (frame == nullptr) {
            ++counters_.emission_unmatched;
            return {};
        }
    }
    if (!frame->reframe(e.frame.offset, e.frame.length)) {
        ++counters_.emission_out_of_chunk;
        out_->drop(*frame);
        return {};
    }
    return {frame, false};
}

void FrameEmitter::end(std::span<const dataplane::NatFrameResult> results) noexcept {
    for (std::size_t k = 0; k < spare_count_; ++k)
        if (!spare_placed_[k]) out_->release(*spares_[k]);
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
        if (fated_[i]) continue;
        // Not emitted itself: dropped (its counters say why), or its output went into spare
        // frames (fragments, ICMP errors, a NAT-translated copy routed into the fabric).
        if (i < results.size() && results[i].verdict == dataplane::Verdict::drop) out_->drop(inputs_[i]);
        else out_->release(inputs_[i]);
    }
    out_ = nullptr;
    spare_count_ = 0;
}

}  // namespace andromeda::worker
