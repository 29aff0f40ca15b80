// Stress and property tests run a quarter of their rounds under AddressSanitizer or
// ThreadSanitizer, which slow such loops 5 to 20 times: the instrumented run is there to catch
// memory and race errors, which the first rounds already exercise; the uninstrumented build
// (build/) runs every round.
#pragma once

#include <algorithm>

namespace andromeda::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

// `rounds`, or a quarter of it (at least 1) in a sanitizer build.
[[nodiscard]] constexpr int sanitizer_scaled(int rounds) noexcept { return kSanitized ? std::max(1, rounds / 4) : rounds; }

}  // namespace andromeda::test
