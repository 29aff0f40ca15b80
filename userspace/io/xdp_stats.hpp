// The XDP program's per-CPU counters summed into one typed value (Katran style: a getter per
// counter, and a table of names for printing), and the daemon's own counters it publishes
// next to them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "andromeda_kern_user.h"

namespace andromeda::io {

struct XdpCounterField {
    std::string_view name;
    __u64 andromeda_xdp_stats::*member;
};

// Every field of struct andromeda_xdp_stats, in declaration order, from the X-macro that defines
// the struct in shared/, so the C++ list can never miss a field.
inline constexpr std::array kXdpCounterFields = {
#define ANDROMEDA_XDP_ENTRY(field) XdpCounterField{#field, &andromeda_xdp_stats::field},
#define ANDROMEDA_XDP_DROP_ENTRY(name, id, description) XdpCounterField{"drop_" #name, &andromeda_xdp_stats::drop_##name},
    ANDROMEDA_XDP_STATS(ANDROMEDA_XDP_ENTRY, ANDROMEDA_XDP_DROP_ENTRY)
#undef ANDROMEDA_XDP_DROP_ENTRY
#undef ANDROMEDA_XDP_ENTRY
};

class XdpStats {
public:
    XdpStats() = default;
    // Sums one value per possible CPU.
    explicit XdpStats(std::span<const andromeda_xdp_stats> per_cpu) noexcept;

    // One getter per counter, named as the field.
#define ANDROMEDA_XDP_GETTER(field) \
    [[nodiscard]] std::uint64_t field() const noexcept { return totals_.field; }
#define ANDROMEDA_XDP_DROP_GETTER(name, id, description) \
    [[nodiscard]] std::uint64_t drop_##name() const noexcept { return totals_.drop_##name; }
    ANDROMEDA_XDP_STATS(ANDROMEDA_XDP_GETTER, ANDROMEDA_XDP_DROP_GETTER)
#undef ANDROMEDA_XDP_DROP_GETTER
#undef ANDROMEDA_XDP_GETTER

    // Sum of every drop_* counter.
    [[nodiscard]] std::uint64_t drops() const noexcept;
    // A counter by its field name ("drop_unknown_vni"), for CLIs and tests.
    [[nodiscard]] std::optional<std::uint64_t> value(std::string_view name) const noexcept;
    [[nodiscard]] const andromeda_xdp_stats& totals() const noexcept { return totals_; }

private:
    andromeda_xdp_stats totals_{};
};

// The kernel fast path's counters (struct andromeda_fp_stats), named by the X-macro that defines
// the struct in shared/, so the C++ list can never miss a field.
struct FastPathCounterField {
    std::string_view name;
    __u64 andromeda_fp_stats::*member;
};

inline constexpr std::array kFastPathCounterFields = {
#define ANDROMEDA_FP_ENTRY(field) FastPathCounterField{#field, &andromeda_fp_stats::field},
#define ANDROMEDA_FP_DROP_ENTRY(name, id, description) FastPathCounterField{"drop_" #name, &andromeda_fp_stats::drop_##name},
    ANDROMEDA_FP_STATS(ANDROMEDA_FP_ENTRY, ANDROMEDA_FP_DROP_ENTRY)
#undef ANDROMEDA_FP_DROP_ENTRY
#undef ANDROMEDA_FP_ENTRY
};

class FastPathStats {
public:
    FastPathStats() = default;
    explicit FastPathStats(std::span<const andromeda_fp_stats> per_cpu) noexcept;

    // A counter by its field name ("punt_no_route"), for CLIs and tests.
    [[nodiscard]] std::optional<std::uint64_t> value(std::string_view name) const noexcept;
    [[nodiscard]] const andromeda_fp_stats& totals() const noexcept { return totals_; }
    // Packets punted to the pipeline, and dropped by the fast path (port security and the rest).
    [[nodiscard]] std::uint64_t punted() const noexcept { return totals_.punt_packets; }
    [[nodiscard]] std::uint64_t drops() const noexcept;

private:
    andromeda_fp_stats totals_{};
};

// Reads and sums the per-CPU andromeda_fp_stats map. Throws IoError.
[[nodiscard]] FastPathStats read_fast_path_stats(int fp_stats_map_fd);

// Reads and sums the per-CPU andromeda_stats map. Throws IoError.
[[nodiscard]] XdpStats read_xdp_stats(int stats_map_fd);
// andromeda_daemon_stats has one entry (key 0). Both throw IoError.
void write_daemon_stats(int daemon_stats_map_fd, const andromeda_daemon_stats& stats);
[[nodiscard]] andromeda_daemon_stats read_daemon_stats(int daemon_stats_map_fd);

}  // namespace andromeda::io
