// Who owns each UMEM frame. Every frame is owned by exactly one of:
//   free_pool  the worker's spare frames, ready for a fill ring or a generated packet
//   fill_ring  posted to a fill ring: the kernel holds it until it comes back on an RX ring
//   worker     received (or allocated) and being processed in the current batch
//   tx_ring    posted to a TX ring: the kernel holds it until it comes back on a completion ring
// Every hand-over goes through move(), which checks the frame really was where the caller says.
// A mismatch (a double free, a frame the kernel returned twice) is counted, never silently
// absorbed, so tests and `andromedactl status` can prove that no drop path leaks frames.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace andromeda::io {

enum class FrameOwner : std::uint8_t { free_pool, fill_ring, worker, tx_ring };
inline constexpr std::size_t kFrameOwnerCount = 4;

[[nodiscard]] const char* to_string(FrameOwner owner) noexcept;

class FrameLedger {
public:
    // All frames start in the free pool.
    explicit FrameLedger(std::uint32_t frame_count);

    // Hands `frame` from `from` to `to`. Returns false, changing nothing but the violation
    // count, when the frame does not exist or is not owned by `from`.
    bool move(std::uint32_t frame, FrameOwner from, FrameOwner to) noexcept {
        if (frame >= owners_.size() || owners_[frame] != from) {
            ++violations_;
            return false;
        }
        owners_[frame] = to;
        --counts_[static_cast<std::size_t>(from)];
        ++counts_[static_cast<std::size_t>(to)];
        return true;
    }

    [[nodiscard]] FrameOwner owner(std::uint32_t frame) const noexcept { return owners_[frame]; }
    [[nodiscard]] std::uint32_t count(FrameOwner owner) const noexcept {
        return counts_[static_cast<std::size_t>(owner)];
    }
    [[nodiscard]] std::uint32_t frame_count() const noexcept { return static_cast<std::uint32_t>(owners_.size()); }
    [[nodiscard]] std::uint64_t violations() const noexcept { return violations_; }

    // Recounts every frame's owner and compares with the running counts: true when they agree,
    // add up to the frame count and no violation was ever seen. O(frames).
    [[nodiscard]] bool audit() const;
    // "free_pool 3000, fill_ring 1024, worker 0, tx_ring 72, violations 0".
    [[nodiscard]] std::string summary() const;

private:
    std::vector<FrameOwner> owners_;
    std::array<std::uint32_t, kFrameOwnerCount> counts_{};
    std::uint64_t violations_ = 0;
};

}  // namespace andromeda::io
