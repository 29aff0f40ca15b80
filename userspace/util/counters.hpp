// Counter structs, one convention for all of them (the XDP and fast-path structs shared with BPF,
// the pipeline's, the NAT engine's and stage's, the I/O worker's, the sockets', the glue's):
//
//  - a plain struct whose every member is a std::uint64_t (or an array of them), so a struct is
//    an array of counters: add_counters() sums two of them, word by word, and nothing can be
//    forgotten when a field is added;
//  - a for_each(f) that calls f(name, value) for every counter, in declaration order: the names
//    `andromedactl stats`, the metrics and the tests read.
//
// tests/unit/util/counters_test.cpp holds every counter struct to both: each word summed, each
// word named exactly once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace andromeda::util {

template <class Counters>
concept CounterStruct = std::is_trivially_copyable_v<Counters> && std::is_standard_layout_v<Counters> &&
                        sizeof(Counters) % sizeof(std::uint64_t) == 0;

// into += from, counter by counter.
template <CounterStruct Counters>
void add_counters(Counters& into, const Counters& from) noexcept {
    constexpr std::size_t n = sizeof(Counters) / sizeof(std::uint64_t);
    std::uint64_t a[n];
    std::uint64_t b[n];
    std::memcpy(a, &into, sizeof a);
    std::memcpy(b, &from, sizeof b);
    for (std::size_t i = 0; i < n; ++i) a[i] += b[i];
    std::memcpy(static_cast<void*>(&into), a, sizeof a);
}

}  // namespace andromeda::util
