// Receive Packet Steering (RPS) on a tenant port, through sysfs.
//
// A veth (or tap) delivers what its far end sends into the backlog of the CPU that sent it
// (netif_rx). A tenant's TCP sends from two CPUs at once, its application's and the one that takes
// its ACKs, so one flow's packets land in two CPUs' backlogs and whichever CPU runs ahead
// overtakes the other: the receiver sees the flow out of order and answers with duplicate ACKs
// and spurious retransmissions. With RPS set on the port's RX queue the kernel queues each packet
// on the backlog its flow hash picks instead, one CPU per flow, in the order it was sent; flows
// still spread over every CPU. A NIC's RSS does the same for what arrives from the wire.
// docs/fastpath.md, "A tenant's flow in order".
//
// The kernel has no netlink attribute for it: the mask is /sys/class/net/<dev>/queues/rx-N/rps_cpus
// of the sysfs the daemon sees, which shows the devices of the namespace that mounted it. The
// ifindex and MAC in that directory are checked against the port's first, so a sysfs of another namespace
// (a daemon entered into a namespace by nsenter, without remounting /sys) is noticed, not
// written; the daemon then mounts a sysfs of its own namespace for a moment, on a thread with a
// private mount namespace, and writes there.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace andromeda::io {

// A set of CPUs as the kernel writes its masks: 32-bit words, least significant first (word 0
// holds CPUs 0-31), without trailing zero words (the empty set is no words).
using CpuMask = std::vector<std::uint32_t>;

// The kernel's CPU list format ("0-3,8,10-11\n", /sys/devices/system/cpu/online). nullopt when
// it is not one: an empty or reversed range, a CPU of 65,536 or more, or any other byte.
[[nodiscard]] std::optional<CpuMask> parse_cpu_list(std::string_view text);
// The kernel's hex mask format ("3\n", "00000000,00000103": groups of at most 8 hex digits,
// most significant first). nullopt when it is not one.
[[nodiscard]] std::optional<CpuMask> parse_cpu_mask(std::string_view text);
// `mask` in the format parse_cpu_mask reads ("0" for the empty set).
[[nodiscard]] std::string format_cpu_mask(std::span<const std::uint32_t> mask);
// `mask` in the format parse_cpu_list reads ("0-3,8"; empty for the empty set), for people.
[[nodiscard]] std::string format_cpu_list(std::span<const std::uint32_t> mask);

// A device as netlink shows it in the daemon's network namespace: what its sysfs directory must
// show too (ifindex numbers repeat from one namespace to the next; the MAC makes a same-named
// device of another namespace with the same ifindex all but impossible to take for it).
struct RpsDevice {
    std::string name;
    std::uint32_t ifindex = 0;
    std::string mac;  // as sysfs writes it, "02:00:00:00:00:10"
};

// What steer did to one device.
struct RpsOutcome {
    std::size_t queues = 0;  // RX queues the device has in sysfs
    std::size_t set = 0;     // set to the CPUs asked for (their mask was empty)
    std::size_t kept = 0;    // left alone: already had a mask (the operator's, or ours)
    std::string error;       // why nothing was done, if so (no sysfs for it, wrong namespace)
};

class RpsSteering {
public:
    // Steers over `cpus` (an empty set turns steering off: nothing is ever written). `sysfs` is
    // where sysfs is mounted; tests point it at a directory of their own.
    explicit RpsSteering(CpuMask cpus, std::filesystem::path sysfs = "/sys")
        : cpus_(std::move(cpus)), sysfs_(std::move(sysfs)) {}

    // The CPUs this machine has online (<sysfs>/devices/system/cpu/online), or the empty set
    // when there is only one (nothing to steer between) or the file cannot be read.
    [[nodiscard]] static CpuMask online_cpus(const std::filesystem::path& sysfs = "/sys");

    [[nodiscard]] const CpuMask& cpus() const noexcept { return cpus_; }

    // Sets every RX queue of `device` whose rps_cpus is empty (the kernel's default) to this
    // steering's CPUs; a queue with a mask already keeps it. Nothing is written to a sysfs device
    // whose ifindex or MAC is not the device's: with the real /sys, a sysfs of this network
    // namespace is tried next (above). Does not throw.
    [[nodiscard]] RpsOutcome steer(const RpsDevice& device) const noexcept;
    // Empties the mask of every RX queue of `device` that holds exactly this steering's CPUs (what
    // steer() wrote, or what a killed predecessor's did); other masks are left alone. Returns the
    // queues emptied. Does not throw.
    std::size_t release(const RpsDevice& device) const noexcept;

private:
    // steer() and release() in sysfs_ alone: false when sysfs_ does not show the device.
    bool steer_here(const RpsDevice& device, RpsOutcome& out) const noexcept;
    bool release_here(const RpsDevice& device, std::size_t& emptied) const noexcept;
    // The device's queues/rx-* directories, or nullopt (and `error` set) when its sysfs directory
    // is missing or shows another device.
    [[nodiscard]] std::optional<std::vector<std::filesystem::path>> rx_queues(const RpsDevice& device,
                                                                              std::string& error) const;

    CpuMask cpus_;
    std::filesystem::path sysfs_;
};

}  // namespace andromeda::io
