#include "io/xdp_stats.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <vector>

#include "io/io_error.hpp"

namespace andromeda::io {

XdpStats::XdpStats(std::span<const andromeda_xdp_stats> per_cpu) noexcept {
    for (const auto& cpu : per_cpu)
        for (const auto& field : kXdpCounterFields) totals_.*(field.member) += cpu.*(field.member);
}

std::uint64_t XdpStats::drops() const noexcept {
    std::uint64_t sum = 0;
    for (const auto& field : kXdpCounterFields)
        if (field.name.starts_with("drop_")) sum += totals_.*(field.member);
    return sum;
}

std::optional<std::uint64_t> XdpStats::value(std::string_view name) const noexcept {
    for (const auto& field : kXdpCounterFields)
        if (field.name == name) return totals_.*(field.member);
    return std::nullopt;
}

FastPathStats::FastPathStats(std::span<const andromeda_fp_stats> per_cpu) noexcept {
    for (const auto& cpu : per_cpu)
        for (const auto& field : kFastPathCounterFields) totals_.*(field.member) += cpu.*(field.member);
}

std::optional<std::uint64_t> FastPathStats::value(std::string_view name) const noexcept {
    for (const auto& field : kFastPathCounterFields)
        if (field.name == name) return totals_.*(field.member);
    return std::nullopt;
}

std::uint64_t FastPathStats::drops() const noexcept {
    std::uint64_t sum = 0;
    for (const auto& field : kFastPathCounterFields)
        if (field.name.starts_with("drop_")) sum += totals_.*(field.member);
    return sum;
}

FastPathStats read_fast_path_stats(int fp_stats_map_fd) {
    const int cpus = libbpf_num_possible_cpus();
    if (cpus <= 0) throw IoError("counting possible CPUs", -cpus);
    std::vector<andromeda_fp_stats> per_cpu(static_cast<std::size_t>(cpus));
    const __u32 key = 0;
    if (bpf_map_lookup_elem(fp_stats_map_fd, &key, per_cpu.data()) != 0) throw IoError("reading andromeda_fp_stats", errno);
    return FastPathStats(per_cpu);
}

XdpStats read_xdp_stats(int stats_map_fd) {
    const int cpus = libbpf_num_possible_cpus();
    if (cpus <= 0) throw IoError("counting possible CPUs", -cpus);
    std::vector<andromeda_xdp_stats> per_cpu(static_cast<std::size_t>(cpus));
    const __u32 key = 0;
    if (bpf_map_lookup_elem(stats_map_fd, &key, per_cpu.data()) != 0) throw IoError("reading andromeda_stats", errno);
    return XdpStats(per_cpu);
}

void write_daemon_stats(int daemon_stats_map_fd, const andromeda_daemon_stats& stats) {
    const __u32 key = 0;
    if (bpf_map_update_elem(daemon_stats_map_fd, &key, &stats, BPF_ANY) != 0)
        throw IoError("writing andromeda_daemon_stats", errno);
}

andromeda_daemon_stats read_daemon_stats(int daemon_stats_map_fd) {
    const __u32 key = 0;
    andromeda_daemon_stats stats{};
    if (bpf_map_lookup_elem(daemon_stats_map_fd, &key, &stats) != 0)
        throw IoError("reading andromeda_daemon_stats", errno);
    return stats;
}

}  // namespace andromeda::io
