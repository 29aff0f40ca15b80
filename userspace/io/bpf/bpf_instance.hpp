// One andromedad instance's BPF side, from start to clean exit:
//   - mounts bpffs at /sys/fs/bpf when missing, locks the instance's pin directory;
//   - removes pins a crashed previous instance left there (and says so), adopting its maps only
//     when they carry this build's layout stamp (ANDROMEDA_MAP_LAYOUT, <pin dir>/layout);
//   - probes what the kernel's BPF helpers take (io/bpf/kernel_probe.hpp);
//   - opens the skeleton, sets the rodata (overlay port, encap kind, the probes' answers), loads,
//     pins every map
//     as <pin dir>/<name without andromeda_> so `bpftool map dump pinned` prints named fields;
//   - attaches XDP to the ports (native, else generic), replacing a previous instance's
//     leftover program in place (io/bpf/xdp_attach.hpp), and detaches on destruction;
//   - attaches the fast path's tc programs (tcx links pinned under <pin dir>/links, else clsact),
//     taking over a previous instance's links in place and releasing those no port claims;
//   - registers AF_XDP sockets in the XSKMAP, reads and publishes counters.
// Attach calls resolve interface names in the calling thread's network namespace.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "andromeda_kern_user.h"
#include "io/bpf/bpffs.hpp"
#include "io/bpf/kernel_probe.hpp"
#include "io/bpf/tc_attach.hpp"
#include "io/bpf/xdp_attach.hpp"
#include "io/bpf/xdp_stats.hpp"
#include "io/plan/config.hpp"
#include "io/plan/map_ids.hpp"
#include "io/plan/map_sync.hpp"
#include "io/plan/port_table.hpp"
#include "io/plan/punt_limit.hpp"

struct andromeda_xdp;

namespace andromeda::io {

// A MapWriter over a loaded skeleton's maps (what BpfInstance::map_writer() is), for tests and
// tools that load the object themselves.
[[nodiscard]] std::unique_ptr<MapWriter> make_map_writer(andromeda_xdp& skel);

// The pin (in the pin directory) of the map layout stamp: ANDROMEDA_MAP_LAYOUT, written once the
// maps are pinned and checked before a restarted instance adopts them.
inline constexpr const char* kLayoutPin = "layout";

// What starting over a crashed instance's leftovers took.
struct RecoveryReport {
    std::filesystem::path pin_dir;
    bool mounted_bpffs = false;
    // Maps a previous instance left pinned (it was killed, not stopped) and this one took over
    // with their contents, so the fast path it left running keeps forwarding (names, sorted).
    std::vector<std::string> adopted_pins;
    std::string adoption_refused;           // why they could not be adopted, when they could not
    std::vector<std::string> removed_pins;  // names of the stale pins removed
    std::vector<std::string> detached;      // "eth1: andromeda_xdp prog id 163 (native)"
    std::vector<std::string> replaced_xdp;  // the same, for a program swapped for ours in place
    std::vector<std::string> adopted_tc;    // ports whose pinned tcx link was taken over
    std::vector<std::string> released_tc;   // ports whose leftover tcx link no port claimed


    [[nodiscard]] bool recovered() const noexcept {
        return !adopted_pins.empty() || !removed_pins.empty() || !detached.empty() || !replaced_xdp.empty() ||
               !adopted_tc.empty() || !released_tc.empty();
    }
    // "recovered from a previous instance: adopted 11 pinned maps from ...; replaced XDP on
    // ... in place", or empty when there was nothing to recover.
    [[nodiscard]] std::string message() const;
};

class BpfInstance {
public:
    // Throws IoError saying what failed and how to fix it.
    explicit BpfInstance(InstanceConfig config);
    // Detaches from every port, unpins the maps and removes the pin directory.
    ~BpfInstance();
    BpfInstance(const BpfInstance&) = delete;
    BpfInstance& operator=(const BpfInstance&) = delete;

    // Attaches the program to `ifname` (in this thread's namespace), in `mode` when given, else
    // in the instance's xdp_mode. Attaching a port twice returns the first report.
    const AttachReport& attach(std::string_view ifname, std::optional<XdpModePreference> mode = std::nullopt);
    // Detaches from `ifname`; false when it was not attached.
    bool detach(std::string_view ifname);
    [[nodiscard]] std::vector<AttachReport> attachments() const;

    // The kernel fast path's tc programs (bpf/tc_*.bpf.c).
    enum class TcProgram : std::uint8_t { tenant, punt, underlay, uplink, reseg };
    // Attaches `program` to the tc ingress of `ifname` (this thread's namespace), replacing a
    // previous instance's; attaching a port twice keeps the first. Throws IoError.
    const TcAttachment& attach_tc(std::string_view ifname, TcProgram program);
    // Detaches the tcx links a previous instance left pinned on ports this one has not attached
    // (ports gone from the fabric while no daemon ran). Call once the startup's ports are
    // attached; returns their port names.
    std::vector<std::string> release_unclaimed_tc_links();
    // Detaches the tc program from `ifname`; false when none of ours was there.
    bool detach_tc(std::string_view ifname);
    // (name, ifindex) of every device carrying one of this instance's tc programs.
    [[nodiscard]] std::vector<std::pair<std::string, std::uint32_t>> tc_devices() const;
    // The tc program on `ifname`'s ingress and how it is attached ("andromeda_tc_tenant (tcx)"),
    // or empty.
    [[nodiscard]] std::string tc_program_on(std::string_view ifname) const;
    // Writes andromeda_fp_config: the fast path runs while `config.enabled` is set. Throws IoError.
    void set_fast_path(const andromeda_fp_config& config);
    // What andromeda_fp_config holds now (a predecessor's, on a restart that adopted the maps).
    [[nodiscard]] andromeda_fp_config fast_path() const;
    [[nodiscard]] FastPathStats read_fast_path_stats() const { return io::read_fast_path_stats(map_fd(MapId::fp_stats)); }

    // The punt bucket of every tenant port of `ports` (andromeda_punt_limits, by slot) set to
    // `limit`, written only where it differs. Call before the ports are steered. Throws IoError.
    void set_punt_limits(const PortTable& ports, PuntLimit limit);
    // What the bucket of `slot` holds now (its counters), or nullopt when it cannot be read.
    [[nodiscard]] std::optional<andromeda_punt_limit> punt_bucket(std::uint32_t slot) const;

    // XSKMAP entry for (port slot, RX queue): where the XDP program redirects that queue.
    void register_socket(std::uint32_t slot, std::uint32_t queue, int xsk_fd);
    void unregister_socket(std::uint32_t slot, std::uint32_t queue);

    [[nodiscard]] int map_fd(MapId map) const noexcept;
    [[nodiscard]] std::filesystem::path pin_path(MapId map) const { return config_.pin_dir / pin_name(map); }
    [[nodiscard]] int program_fd() const noexcept;
    [[nodiscard]] std::uint32_t program_id() const noexcept { return program_id_; }
    // Writes into the maps of this instance; give it to a FabricMapSync.
    [[nodiscard]] MapWriter& map_writer() noexcept { return *writer_; }

    [[nodiscard]] XdpStats read_stats() const { return read_xdp_stats(map_fd(MapId::stats)); }
    void publish_daemon_stats(const andromeda_daemon_stats& stats) { write_daemon_stats(map_fd(MapId::daemon_stats), stats); }

    [[nodiscard]] const RecoveryReport& recovery() const noexcept { return recovery_; }
    // What the kernel's helpers were found to take, and so what the programs were loaded to use.
    [[nodiscard]] const KernelFeatures& kernel_features() const noexcept { return kernel_; }
    [[nodiscard]] const InstanceConfig& config() const noexcept { return config_; }

private:
    struct SkeletonDeleter {
        void operator()(andromeda_xdp* skel) const noexcept;
    };
    struct Port {
        std::string ifname;
        std::unique_ptr<XdpAttachment> attachment;
    };
    // Loads the object with every map pinned under pin_dir, reusing the maps pinned there
    // already (libbpf checks that each matches its definition). Throws IoError.
    void load_and_pin();
    // Pins left by a daemon of another map layout (or none) are removed, not adopted: `left`
    // is emptied and the log says so.
    void refuse_other_layouts(std::vector<std::string>& left);
    void unpin_all() noexcept;
    [[nodiscard]] std::filesystem::path tc_link_pin(std::string_view ifname) const;

    InstanceConfig config_;
    RecoveryReport recovery_;
    KernelFeatures kernel_;
    std::unique_ptr<InstanceDirectory> directory_;
    std::unique_ptr<andromeda_xdp, SkeletonDeleter> skel_;
    std::unique_ptr<MapWriter> writer_;
    std::uint32_t program_id_ = 0;
    std::vector<Port> ports_;
    std::vector<std::unique_ptr<TcAttachment>> tc_;
    std::vector<std::string> leftover_tc_links_;  // pin names under <pin dir>/links not yet claimed
};

}  // namespace andromeda::io
