#include "io/xsk/frame_ledger.hpp"

namespace andromeda::io {

const char* to_string(FrameOwner owner) noexcept {
    switch (owner) {
    case FrameOwner::free_pool: return "free_pool";
    case FrameOwner::fill_ring: return "fill_ring";
    case FrameOwner::worker: return "worker";
    case FrameOwner::tx_ring: return "tx_ring";
    }
    return "?";
}

FrameLedger::FrameLedger(std::uint32_t frame_count) : owners_(frame_count, FrameOwner::free_pool) {
    counts_[static_cast<std::size_t>(FrameOwner::free_pool)] = frame_count;
}

bool FrameLedger::audit() const {
    std::array<std::uint32_t, kFrameOwnerCount> recount{};
    for (const FrameOwner owner : owners_) ++recount[static_cast<std::size_t>(owner)];
    std::uint64_t total = 0;
    for (const auto c : counts_) total += c;
    return recount == counts_ && total == owners_.size() && violations_ == 0;
}

std::string FrameLedger::summary() const {
    std::string out;
    for (std::size_t i = 0; i < kFrameOwnerCount; ++i) {
        out += to_string(static_cast<FrameOwner>(i));
        out += ' ' + std::to_string(counts_[i]) + ", ";
    }
    return out + "violations " + std::to_string(violations_);
}

}  // namespace andromeda::io
