// A tc (clsact) program on one interface's ingress, attached with libbpf's bpf_tc_* calls at a
// fixed handle and priority, replacing a previous instance's program there. A tc program leaves
// the device's offloads alone (unlike native XDP on a veth, which turns its peer's TSO off), so the
// fast path runs in tc on tenant ports and on the underlay.
#pragma once

#include <cstdint>
#include <string>

namespace andromeda::io {

// handle and priority of every Andromeda tc filter, so a restarted daemon replaces its
// predecessor's in one step and `tc filter show dev X ingress` shows which is ours.
inline constexpr std::uint32_t kTcHandle = 0xa4d;
inline constexpr std::uint32_t kTcPriority = 0xa4d;

class TcAttachment {
public:
    // Attaches `program_fd` to the ingress of `ifindex` (in this thread's namespace), creating the
    // clsact qdisc when missing. Throws IoError.
    TcAttachment(int program_fd, std::uint32_t ifindex, std::string ifname, std::string program_name);
    // Detaches the filter (the clsact qdisc stays: others may use it).
    ~TcAttachment();
    TcAttachment(const TcAttachment&) = delete;
    TcAttachment& operator=(const TcAttachment&) = delete;

    [[nodiscard]] const std::string& ifname() const noexcept { return ifname_; }
    [[nodiscard]] std::uint32_t ifindex() const noexcept { return ifindex_; }
    [[nodiscard]] const std::string& program_name() const noexcept { return program_; }
    // "tap-blue-10: tc ingress andromeda_tc_tenant"
    [[nodiscard]] std::string message() const;
    // Detaches now; false when it was gone already.
    bool detach() noexcept;

private:
    std::uint32_t ifindex_ = 0;
    std::string ifname_;
    std::string program_;
    int netns_fd_ = -1;
    bool attached_ = false;
};

}  // namespace andromeda::io
