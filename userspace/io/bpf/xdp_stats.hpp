// The XDP program's and the kernel fast path's per-CPU counters summed into one typed value (the
// struct shared with BPF, and a table of its field names from the same X-macro), and the daemon's
// own counters it publishes next to them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "andromeda_kern_user.h"
#include "util/counters.hpp"

namespace andromeda::io {

// One counter of a struct shared with BPF: its name and where it is.
template <class Stats>
struct CounterField {
    std::string_view name;
    __u64 Stats::*member;
};

// Every field of struct andromeda_xdp_stats, in declaration order, from the X-macro that defines
// the struct in shared/, so the C++ list can never miss a field.
inline constexpr std::array kXdpCounterFields = {
#define ANDROMEDA_XDP_ENTRY(field) CounterField<andromeda_xdp_stats>{#field, &andromeda_xdp_stats::field},
#define ANDROMEDA_XDP_DROP_ENTRY(name, id, description) \
    CounterField<andromeda_xdp_stats>{"drop_" #name, &andromeda_xdp_stats::drop_##name},
    ANDROMEDA_XDP_STATS(ANDROMEDA_XDP_ENTRY, ANDROMEDA_XDP_DROP_ENTRY)
#undef ANDROMEDA_XDP_DROP_ENTRY
#undef ANDROMEDA_XDP_ENTRY
};

// The same for the kernel fast path's struct andromeda_fp_stats.
inline constexpr std::array kFastPathCounterFields = {
#define ANDROMEDA_FP_ENTRY(field) CounterField<andromeda_fp_stats>{#field, &andromeda_fp_stats::field},
#define ANDROMEDA_FP_DROP_ENTRY(name, id, description) \
    CounterField<andromeda_fp_stats>{"drop_" #name, &andromeda_fp_stats::drop_##name},
    ANDROMEDA_FP_STATS(ANDROMEDA_FP_ENTRY, ANDROMEDA_FP_DROP_ENTRY)
#undef ANDROMEDA_FP_DROP_ENTRY
#undef ANDROMEDA_FP_ENTRY
};

// A per-CPU counter struct of the BPF side summed over the CPUs (util::add_counters), read by
// field (totals().rx_packets) or by name, and named by its field list.
template <class Stats, const auto& kFields>
class PerCpuTotals {
public:
    PerCpuTotals() = default;
    explicit PerCpuTotals(std::span<const Stats> per_cpu) noexcept {
        for (const Stats& cpu : per_cpu) util::add_counters(totals_, cpu);
    }

    [[nodiscard]] const Stats& totals() const noexcept { return totals_; }
    // A counter by its field name ("drop_unknown_vni"), for CLIs and tests.
    [[nodiscard]] std::optional<std::uint64_t> value(std::string_view name) const noexcept {
        for (const auto& field : kFields)
            if (field.name == name) return totals_.*(field.member);
        return std::nullopt;
    }
    // Sum of every drop_* counter.
    [[nodiscard]] std::uint64_t drops() const noexcept {
        std::uint64_t sum = 0;
        for (const auto& field : kFields)
            if (field.name.starts_with("drop_")) sum += totals_.*(field.member);
        return sum;
    }
    // Calls f(name, value) for every counter (util/counters.hpp).
    template <class F>
    void for_each(F&& f) const {
        for (const auto& field : kFields) f(field.name, totals_.*(field.member));
    }

private:
    Stats totals_{};
};

using XdpStats = PerCpuTotals<andromeda_xdp_stats, kXdpCounterFields>;
using FastPathStats = PerCpuTotals<andromeda_fp_stats, kFastPathCounterFields>;

// Reads and sums the per-CPU andromeda_fp_stats map. Throws IoError.
[[nodiscard]] FastPathStats read_fast_path_stats(int fp_stats_map_fd);

// Reads and sums the per-CPU andromeda_stats map. Throws IoError.
[[nodiscard]] XdpStats read_xdp_stats(int stats_map_fd);
// andromeda_daemon_stats has one entry (key 0). Both throw IoError.
void write_daemon_stats(int daemon_stats_map_fd, const andromeda_daemon_stats& stats);
[[nodiscard]] andromeda_daemon_stats read_daemon_stats(int daemon_stats_map_fd);

}  // namespace andromeda::io
