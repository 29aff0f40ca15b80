// Attaching the XDP program to one interface with libxdp, honestly reported. What is attached is
// read, and our own direct attachment detached, with libbpf (xdp_attach.cpp says why).
//
// libxdp first tries its multiprog dispatcher (which lets several XDP programs share an
// interface) and falls back to attaching the program directly when the kernel cannot run the
// dispatcher. On the kernels we test (6.x, Debian's libxdp 1.3) the dispatcher's compatibility
// probe fails, so the program is attached directly; both outcomes are handled and reported.
// A program loaded elsewhere (our skeleton) is handed to libxdp with xdp_program__from_fd.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/netlink/interfaces.hpp"
#include "io/plan/config.hpp"

struct xdp_program;

namespace andromeda::io {

inline constexpr const char* kXdpProgramName = "andromeda_xdp";

struct AttachReport {
    std::string ifname;
    std::uint32_t ifindex = 0;
    XdpMode mode = XdpMode::native;
    std::string native_refusal;      // why the driver refused native mode, when it did
    bool dispatcher = false;         // attached through libxdp's dispatcher (else directly)
    std::string replaced;            // the leftover program this attach replaced, if any
    bool replaced_in_place = false;  // swapped for it atomically (XDP_FLAGS_REPLACE), not detached first

    // One line for the log and `andromedactl status`.
    [[nodiscard]] std::string message() const;
};

// What libxdp sees on an interface.
struct AttachedProgram {
    std::string name;
    std::uint32_t id = 0;
    bool dispatcher = false;  // a component of libxdp's dispatcher
    XdpMode mode = XdpMode::native;
};
[[nodiscard]] std::vector<AttachedProgram> xdp_programs_on(std::uint32_t ifindex);

class XdpAttachment {
public:
    // Attaches `prog_fd` to `link`. An andromeda_xdp program already there is a previous
    // instance's leftover (named in report().replaced): attached directly, it is swapped for
    // ours in one step (XDP_FLAGS_REPLACE naming it as the expected program), in its own mode
    // when `preference` allows that mode, so the port is never without a program; otherwise
    // (libxdp's dispatcher, a mode change, a refusal) it is detached first. Any other program
    // is an IoError, unless `replace_foreign`. Throws IoError when no mode works.
    XdpAttachment(int prog_fd, const InterfaceInfo& link, XdpModePreference preference, bool replace_foreign);
    ~XdpAttachment();
    XdpAttachment(const XdpAttachment&) = delete;
    XdpAttachment& operator=(const XdpAttachment&) = delete;

    // Detaches (idempotent), from whichever thread. Returns false, logging why, when the
    // kernel refused.
    bool detach() noexcept;
    [[nodiscard]] const AttachReport& report() const noexcept { return report_; }

private:
    // Deals with what runs on the port now; true when ours replaced it in place (attached).
    bool replace_leftovers(int prog_fd, XdpModePreference preference, bool replace_foreign);
    bool replace_in_place(int prog_fd, XdpModePreference preference, const AttachedProgram& present);
    void detach_leftovers(const std::vector<AttachedProgram>& present);
    void attach_preferring(XdpModePreference preference);
    void release() noexcept;
    bool try_attach(XdpMode mode, std::string& failure);

    bool detach_here() noexcept;

    AttachReport report_;
    xdp_program* program_ = nullptr;
    bool attached_ = false;
    // The network namespace the ifindex belongs to: detach() may run on a thread that is
    // elsewhere (a daemon's exit path, a test's teardown), where the same ifindex is another
    // interface.
    int netns_fd_ = -1;
};

}  // namespace andromeda::io
