// Big-endian loads and stores over raw bytes. Every wire view is built on these; they use memcpy
// so unaligned packet offsets are fine and the compiler emits a single load plus bswap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace andromeda::wire {

using ByteSpan = std::span<const std::uint8_t>;
using MutableByteSpan = std::span<std::uint8_t>;

[[nodiscard]] inline std::uint16_t load_be16(const std::uint8_t* p) noexcept {
    std::uint16_t v;
    std::memcpy(&v, p, sizeof v);
    return __builtin_bswap16(v);
}

[[nodiscard]] inline std::uint32_t load_be32(const std::uint8_t* p) noexcept {
    std::uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return __builtin_bswap32(v);
}

// 24-bit big-endian field (VNIs).
[[nodiscard]] inline std::uint32_t load_be24(const std::uint8_t* p) noexcept {
    return static_cast<std::uint32_t>(p[0]) << 16 | static_cast<std::uint32_t>(p[1]) << 8 | p[2];
}

inline void store_be16(std::uint8_t* p, std::uint16_t v) noexcept {
    v = __builtin_bswap16(v);
    std::memcpy(p, &v, sizeof v);
}

inline void store_be32(std::uint8_t* p, std::uint32_t v) noexcept {
    v = __builtin_bswap32(v);
    std::memcpy(p, &v, sizeof v);
}

inline void store_be24(std::uint8_t* p, std::uint32_t v) noexcept {
    p[0] = static_cast<std::uint8_t>(v >> 16);
    p[1] = static_cast<std::uint8_t>(v >> 8);
    p[2] = static_cast<std::uint8_t>(v);
}

// memcpy for frames the per-packet path copies, inline for the short ones (16 to 128 bytes) that
// dominate small-packet traffic, where a libc call costs more than the copy: 16-byte blocks from
// both ends, overlapping in the middle (2, 4 or 8 of them), chosen by two predictable compares
// rather than a jump table. `dst` and `src` must not overlap.
inline constexpr std::size_t kInlineCopyMax = 128;  // longer frames: libc memcpy

[[gnu::always_inline]] inline void copy_frame(std::uint8_t* dst, const std::uint8_t* src, std::size_t n) noexcept {
    if (n < 16 || n > kInlineCopyMax) {
        std::memcpy(dst, src, n);
        return;
    }
    const auto block = [dst, src](std::size_t at) noexcept { std::memcpy(dst + at, src + at, 16); };
    if (n > 64) {  // 65-128: the first and the last 64 bytes
        block(0);
        block(16);
        block(32);
        block(48);
        block(n - 64);
        block(n - 48);
        block(n - 32);
        block(n - 16);
    } else if (n > 32) {  // 33-64: the first and the last 32
        block(0);
        block(16);
        block(n - 32);
        block(n - 16);
    } else {  // 16-32
        block(0);
        block(n - 16);
    }
}

}  // namespace andromeda::wire
