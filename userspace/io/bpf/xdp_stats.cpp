#include "io/bpf/xdp_stats.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <string>
#include <vector>

#include "io/plan/io_error.hpp"

namespace andromeda::io {

namespace {

// Reads the one entry of a per-CPU array map: one value per possible CPU.
template <class Stats>
std::vector<Stats> read_per_cpu(int map_fd, const char* what) {
    const int cpus = libbpf_num_possible_cpus();
    if (cpus <= 0) throw IoError("counting possible CPUs", -cpus);
    std::vector<Stats> per_cpu(static_cast<std::size_t>(cpus));
    const __u32 key = 0;
    if (bpf_map_lookup_elem(map_fd, &key, per_cpu.data()) != 0) throw IoError(std::string("reading ") + what, errno);
    return per_cpu;
}

}  // namespace

FastPathStats read_fast_path_stats(int fp_stats_map_fd) {
    return FastPathStats(read_per_cpu<andromeda_fp_stats>(fp_stats_map_fd, "andromeda_fp_stats"));
}

XdpStats read_xdp_stats(int stats_map_fd) {
    return XdpStats(read_per_cpu<andromeda_xdp_stats>(stats_map_fd, "andromeda_stats"));
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
