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

// Every field of struct andromeda_xdp_stats, in declaration order (a static_assert in the .cpp
// catches a counter added in shared/ but not here).
inline constexpr std::array<XdpCounterField, 15> kXdpCounterFields = {{
    {"rx_packets", &andromeda_xdp_stats::rx_packets},
    {"pass_host", &andromeda_xdp_stats::pass_host},
    {"pass_unknown_port", &andromeda_xdp_stats::pass_unknown_port},
    {"redirect_overlay", &andromeda_xdp_stats::redirect_overlay},
    {"redirect_tenant", &andromeda_xdp_stats::redirect_tenant},
    {"redirect_uplink", &andromeda_xdp_stats::redirect_uplink},
    {"drop_truncated", &andromeda_xdp_stats::drop_truncated},
    {"drop_bad_ip_header", &andromeda_xdp_stats::drop_bad_ip_header},
    {"drop_overlay_fragment", &andromeda_xdp_stats::drop_overlay_fragment},
    {"drop_unknown_peer", &andromeda_xdp_stats::drop_unknown_peer},
    {"drop_bad_overlay_header", &andromeda_xdp_stats::drop_bad_overlay_header},
    {"drop_unknown_vni", &andromeda_xdp_stats::drop_unknown_vni},
    {"drop_spoofed_mac", &andromeda_xdp_stats::drop_spoofed_mac},
    {"drop_no_socket", &andromeda_xdp_stats::drop_no_socket},
    {"pass_fastpath", &andromeda_xdp_stats::pass_fastpath},
}};

class XdpStats {
public:
    XdpStats() = default;
    // Sums one value per possible CPU.
    explicit XdpStats(std::span<const andromeda_xdp_stats> per_cpu) noexcept;

    [[nodiscard]] std::uint64_t rx_packets() const noexcept { return totals_.rx_packets; }
    [[nodiscard]] std::uint64_t pass_host() const noexcept { return totals_.pass_host; }
    [[nodiscard]] std::uint64_t pass_unknown_port() const noexcept { return totals_.pass_unknown_port; }
    [[nodiscard]] std::uint64_t redirect_overlay() const noexcept { return totals_.redirect_overlay; }
    [[nodiscard]] std::uint64_t redirect_tenant() const noexcept { return totals_.redirect_tenant; }
    [[nodiscard]] std::uint64_t redirect_uplink() const noexcept { return totals_.redirect_uplink; }
    [[nodiscard]] std::uint64_t drop_truncated() const noexcept { return totals_.drop_truncated; }
    [[nodiscard]] std::uint64_t drop_bad_ip_header() const noexcept { return totals_.drop_bad_ip_header; }
    [[nodiscard]] std::uint64_t drop_overlay_fragment() const noexcept { return totals_.drop_overlay_fragment; }
    [[nodiscard]] std::uint64_t drop_unknown_peer() const noexcept { return totals_.drop_unknown_peer; }
    [[nodiscard]] std::uint64_t drop_bad_overlay_header() const noexcept { return totals_.drop_bad_overlay_header; }
    [[nodiscard]] std::uint64_t drop_unknown_vni() const noexcept { return totals_.drop_unknown_vni; }
    [[nodiscard]] std::uint64_t drop_spoofed_mac() const noexcept { return totals_.drop_spoofed_mac; }
    [[nodiscard]] std::uint64_t drop_no_socket() const noexcept { return totals_.drop_no_socket; }
    [[nodiscard]] std::uint64_t pass_fastpath() const noexcept { return totals_.pass_fastpath; }

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
    ANDROMEDA_FP_STATS(ANDROMEDA_FP_ENTRY)
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
