// std::bit_cast under another name: the libc++ of Emscripten 3.1 (the playground's WebAssembly
// build) lacks it; the compiler builtin behind it is in both GCC and clang.
#pragma once

#include <type_traits>

namespace andromeda::util {

template <class To, class From>
    requires(sizeof(To) == sizeof(From) && std::is_trivially_copyable_v<To> && std::is_trivially_copyable_v<From>)
[[nodiscard]] constexpr To bit_cast(const From& from) noexcept {
    return __builtin_bit_cast(To, from);
}

}  // namespace andromeda::util
