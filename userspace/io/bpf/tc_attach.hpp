// A tc program on one interface's ingress. A tc program leaves the device's offloads alone
// (unlike native XDP on a veth, which turns its peer's TSO off), so the fast path runs in tc on
// tenant ports and on the underlay.
//
// Two ways to attach, tried in this order:
//   - tcx (kernel 6.6 and later): a BPF link on the device's ingress, pinned in the instance's
//     pin directory (<pin dir>/links/tc_<ifname>), so the program outlives a killed daemon and a
//     restarted one swaps its own program in atomically (BPF_LINK_UPDATE). Removing the pin of
//     a dead daemon's link detaches it. tcx runs before any clsact filter and costs less per
//     packet than cls_bpf (no qdisc classification around the program).
//   - clsact + cls_bpf (older kernels, or when asked): a filter at a fixed handle and priority,
//     attached with libbpf's bpf_tc_* calls, replacing a previous instance's.
// Whichever is used, the other kind's leftover of ours on that interface is removed, so a daemon
// upgraded across the change never runs two programs on one port.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "io/plan/config.hpp"

namespace andromeda::io {

// handle and priority of every Andromeda cls_bpf filter, so a restarted daemon replaces its
// predecessor's in one step and `tc filter show dev X ingress` shows which is ours.
inline constexpr std::uint32_t kTcHandle = 0xa4d;
inline constexpr std::uint32_t kTcPriority = 0xa4d;


class TcAttachment {
public:
    // Attaches `program_fd` to the ingress of `ifindex` (in this thread's namespace). `link_pin`
    // is where a tcx link is pinned (its directory is created when missing); a link pinned there
    // already (a killed instance's, on this same device) is adopted and its program replaced.
    // Throws IoError.
    TcAttachment(int program_fd, std::uint32_t ifindex, std::string ifname, std::string program_name,
                 TcAttachPreference preference, std::filesystem::path link_pin);
    // Detaches (tcx: the link is detached and its pin removed; clsact: the filter is deleted, the
    // qdisc stays, others may use it).
    ~TcAttachment();
    TcAttachment(const TcAttachment&) = delete;
    TcAttachment& operator=(const TcAttachment&) = delete;

    [[nodiscard]] const std::string& ifname() const noexcept { return ifname_; }
    [[nodiscard]] std::uint32_t ifindex() const noexcept { return ifindex_; }
    [[nodiscard]] const std::string& program_name() const noexcept { return program_; }
    [[nodiscard]] TcAttachMode mode() const noexcept { return mode_; }
    // A previous instance's pinned tcx link on this device was taken over (its program replaced).
    [[nodiscard]] bool adopted() const noexcept { return adopted_; }
    // "tap-blue-10: tc ingress andromeda_tc_tenant (tcx)"
    [[nodiscard]] std::string message() const;
    // Detaches now; false when it was gone already.
    bool detach() noexcept;

private:
    bool attach_tcx(int program_fd);  // false: this kernel has no tcx
    void attach_clsact(int program_fd);

    std::uint32_t ifindex_ = 0;
    std::string ifname_;
    std::string program_;
    std::filesystem::path link_pin_;
    TcAttachMode mode_ = TcAttachMode::tcx;
    int link_fd_ = -1;
    int netns_fd_ = -1;
    bool attached_ = false;
    bool adopted_ = false;
};

// Removes the tcx link pinned at `link_pin` (detaching it from its device, wherever that is);
// false when there was none. For a killed instance's links on ports it no longer has.
bool remove_pinned_tc_link(const std::filesystem::path& link_pin) noexcept;

struct TcProgramInfo {
    std::uint32_t id = 0;
    std::string name;  // as the kernel keeps it: at most 15 characters ("andromeda_tc_te")
    TcAttachMode mode = TcAttachMode::tcx;
};
// The BPF programs on `ifindex`'s tc ingress in this thread's namespace: tcx programs in their
// order, then Andromeda's cls_bpf filter when there is one. For tests and diagnostics.
[[nodiscard]] std::vector<TcProgramInfo> tc_ingress_programs(std::uint32_t ifindex);

}  // namespace andromeda::io
