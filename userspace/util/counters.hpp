// Counter structs, one convention for all of them (the XDP and fast-path structs shared with BPF,
// the pipeline's, the NAT engine's and stage's, the I/O worker's, the sockets', the glue's):
//
//  - a plain struct whose every member is a std::uint64_t (or an array of them), so a struct is
//    an array of counters: add_counters() sums two of them, word by word, and nothing can be
//    forgotten when a field is added;
//  - a for_each(f) that calls f(name, value) for every counter, in declaration order: the names
//    `andromedactl stats`, the metrics and the tests read;
//  - fields and names from one X-list, so a counter is declared and named once:
//
//      #define ANDROMEDA_GLUE_COUNTERS(X) X(batches) X(no_fabric)
//      struct GlueCounters {
//          ANDROMEDA_GLUE_COUNTERS(ANDROMEDA_COUNTER_FIELD)
//          template <class F> void for_each(F&& f) const { ANDROMEDA_GLUE_COUNTERS(ANDROMEDA_COUNTER_VISIT) }
//      };
//
//    and a layer's drop reasons (shared/andromeda_drops.h) as fields drop_<reason> with
//    ANDROMEDA_DROP_COUNTER_FIELD / ANDROMEDA_DROP_COUNTER_VISIT. A list puts one X(...) per line
//    and a note on a field in a C comment: a // comment would swallow the line spliced after it.
//
// tests/unit/daemon/counter_structs_test.cpp holds every counter struct to both: each word
// summed, each word named exactly once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#define ANDROMEDA_COUNTER_FIELD(name) std::uint64_t name = 0;
#define ANDROMEDA_COUNTER_VISIT(name) f(#name, name);
#define ANDROMEDA_DROP_COUNTER_FIELD(name, id, description) std::uint64_t drop_##name = 0;
#define ANDROMEDA_DROP_COUNTER_VISIT(name, id, description) f("drop_" #name, drop_##name);

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
