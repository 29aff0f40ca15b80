#include "io/bpf/xdp_attach.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/if_link.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xdp/libxdp.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "io/bpf/library_log.hpp"
#include "io/netlink/netns.hpp"
#include "io/plan/io_error.hpp"

namespace andromeda::io {

namespace {

xdp_attach_mode libxdp_mode(XdpMode mode) noexcept { return mode == XdpMode::native ? XDP_MODE_NATIVE : XDP_MODE_SKB; }

bool same_netns(int netns_fd) noexcept {
    struct stat ours {}, theirs {};
    return stat("/proc/thread-self/ns/net", &ours) == 0 && fstat(netns_fd, &theirs) == 0 && ours.st_ino == theirs.st_ino &&
           ours.st_dev == theirs.st_dev;
}

// The name the kernel reports for libxdp's dispatcher (its program is xdp_dispatcher, truncated
// to BPF_OBJ_NAME_LEN like every program name).
constexpr const char* kLibxdpDispatcherName = "xdp_dispatcher";

// libxdp returns NULL or an error pointer when nothing is attached.
xdp_multiprog* multiprog_on(std::uint32_t ifindex) {
    xdp_multiprog* mp = xdp_multiprog__get_from_ifindex(static_cast<int>(ifindex));
    if (mp == nullptr || libxdp_get_error(mp) != 0) return nullptr;
    return mp;
}

std::string describe(const AttachedProgram& p) {
    return p.name + " prog id " + std::to_string(p.id) + " (" + to_string(p.mode) +
           (p.dispatcher ? ", in libxdp's dispatcher)" : ")");
}

std::string hint_for_native(int error) {
    switch (error) {
    case ERANGE:
    case EINVAL: return "the MTU may be too large for native XDP on this driver (veth: keep the peer's MTU <= ~3500)";
    case EOPNOTSUPP: return "the driver has no native XDP support";
    case EBUSY:
    case EEXIST: return "another XDP program holds the interface";
    default: return {};
    }
}

}  // namespace

std::string AttachReport::message() const {
    std::string out = ifname + ": XDP " + to_string(mode) + (dispatcher ? " (via libxdp's dispatcher)" : " (attached directly)");
    if (!native_refusal.empty()) out += "; native mode refused: " + native_refusal;
    if (!replaced.empty()) out += "; replaced " + replaced + (replaced_in_place ? " in place" : "");
    return out;
}

// libxdp 1.3's xdp_multiprog__get_from_ifindex leaks the descriptor it opens for an attached
// program (it duplicates it and closes only the duplicate): every query of a port with a
// program cost one descriptor, two per tenant port plumbed and unplumbed. What runs on a port
// is therefore read with the kernel's own query, and libxdp asked only for the components of a
// dispatcher, which we never install on the kernels we test.
std::vector<AttachedProgram> xdp_programs_on(std::uint32_t ifindex) {
    std::vector<AttachedProgram> found;
    bpf_xdp_query_opts query{};
    query.sz = sizeof query;
    if (bpf_xdp_query(static_cast<int>(ifindex), 0, &query) != 0) return found;
    std::uint32_t id = 0;
    XdpMode mode = XdpMode::native;
    if (query.attach_mode == XDP_ATTACHED_DRV || (query.attach_mode == XDP_ATTACHED_MULTI && query.drv_prog_id != 0)) {
        id = query.drv_prog_id;
    } else if (query.attach_mode == XDP_ATTACHED_SKB || query.attach_mode == XDP_ATTACHED_MULTI) {
        id = query.skb_prog_id;
        mode = XdpMode::generic;
    }
    if (id == 0) return found;  // nothing, or offloaded to hardware (not ours)
    std::string name;
    if (const int fd = bpf_prog_get_fd_by_id(id); fd >= 0) {
        bpf_prog_info info{};
        __u32 len = sizeof info;
        if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0) name = info.name;
        close(fd);
    }
    if (name != kLibxdpDispatcherName) {
        found.push_back({name, id, false, mode});
        return found;
    }
    xdp_multiprog* mp = multiprog_on(ifindex);
    if (mp == nullptr) {
        found.push_back({name, id, true, mode});
        return found;
    }
    for (auto* p = xdp_multiprog__next_prog(nullptr, mp); p != nullptr; p = xdp_multiprog__next_prog(p, mp))
        found.push_back({xdp_program__name(p), xdp_program__id(p), true, mode});
    if (found.empty()) found.push_back({name, id, true, mode});
    xdp_multiprog__close(mp);
    return found;
}

XdpAttachment::XdpAttachment(int prog_fd, const InterfaceInfo& link, XdpModePreference preference, bool replace_foreign) {
    report_.ifname = link.name;
    report_.ifindex = link.ifindex;
    netns_fd_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (netns_fd_ < 0) throw IoError("opening this thread's network namespace", errno);
    try {
        program_ = xdp_program__from_fd(prog_fd);
        if (const long err = libxdp_get_error(program_); err != 0 || program_ == nullptr) {
            program_ = nullptr;
            throw IoError("libxdp could not take the loaded XDP program", static_cast<int>(err ? -err : EINVAL));
        }
        if (!replace_leftovers(prog_fd, preference, replace_foreign)) attach_preferring(preference);
    } catch (...) {
        release();
        throw;
    }
    const auto now = xdp_programs_on(link.ifindex);
    report_.dispatcher = !now.empty() && now.front().dispatcher;
    spdlog::info("{}", report_.message());
}

XdpAttachment::~XdpAttachment() {
    detach();
    release();
}

void XdpAttachment::release() noexcept {
    if (program_ != nullptr) xdp_program__close(program_);
    program_ = nullptr;
    if (netns_fd_ >= 0) close(netns_fd_);
    netns_fd_ = -1;
}

void XdpAttachment::attach_preferring(XdpModePreference preference) {
    std::string native_failure, generic_failure;
    if (preference != XdpModePreference::generic_only && try_attach(XdpMode::native, native_failure)) return;
    if (preference != XdpModePreference::native_only && try_attach(XdpMode::generic, generic_failure)) {
        report_.native_refusal = native_failure;
        return;
    }
    const std::string why = native_failure.empty()    ? generic_failure
                            : generic_failure.empty() ? native_failure
                                                      : native_failure + "; generic: " + generic_failure;
    throw IoError("attaching XDP to " + report_.ifname + " (mode " + to_string(preference) + ") failed: " + why, 0,
                  "see `ip -d link show " + report_.ifname + "`; generic mode works on any interface");
}

bool XdpAttachment::replace_leftovers(int prog_fd, XdpModePreference preference, bool replace_foreign) {
    const auto present = xdp_programs_on(report_.ifindex);
    if (present.empty()) return false;
    bool foreign = false;
    for (const auto& p : present) foreign = foreign || p.name != kXdpProgramName;
    if (foreign && !replace_foreign)
        throw IoError(report_.ifname + " already runs XDP program " + describe(present.front()) +
                          ", which is not Andromeda's",
                      EBUSY,
                      "remove it (`ip link set dev " + report_.ifname + " xdp off`, or `xdp-loader unload " +
                          report_.ifname + " --all`) or set replace_foreign_xdp");
    for (const auto& p : present) report_.replaced += (report_.replaced.empty() ? "" : ", ") + describe(p);
    // A dispatcher is libxdp's to take apart (it keeps pins of its own): detached, then attached.
    if (present.size() == 1 && !present.front().dispatcher && replace_in_place(prog_fd, preference, present.front()))
        return true;
    detach_leftovers(present);
    return false;
}

// Between a detach and an attach the port runs no program, and what the pipeline should have
// had reaches the host's stack (overlay packets: a port unreachable each). The kernel swaps
// the program in one step when told which program it expects to find there.
bool XdpAttachment::replace_in_place(int prog_fd, XdpModePreference preference, const AttachedProgram& present) {
    if ((present.mode == XdpMode::native && preference == XdpModePreference::generic_only) ||
        (present.mode == XdpMode::generic && preference == XdpModePreference::native_only))
        return false;  // a mode change: the kernel runs one mode at a time
    const int old_fd = bpf_prog_get_fd_by_id(present.id);
    if (old_fd < 0) {
        spdlog::warn("{}: reading the leftover XDP program {}: {}; detaching it instead", report_.ifname,
                     describe(present), std::strerror(errno));
        return false;
    }
    bpf_xdp_attach_opts opts{};
    opts.sz = sizeof opts;
    opts.old_prog_fd = old_fd;
    const __u32 flags = XDP_FLAGS_REPLACE | (present.mode == XdpMode::native ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE);
    const int rc = bpf_xdp_attach(static_cast<int>(report_.ifindex), prog_fd, flags, &opts);
    close(old_fd);
    if (rc != 0) {
        spdlog::warn("{}: replacing the leftover XDP program {} in place: {}; detaching it instead", report_.ifname,
                     describe(present), std::strerror(-rc));
        return false;
    }
    attached_ = true;
    report_.mode = present.mode;
    report_.replaced_in_place = true;
    spdlog::info("recovered from a previous instance: replaced XDP {} on {} in place", report_.replaced,
                 report_.ifname);
    return true;
}

void XdpAttachment::detach_leftovers(const std::vector<AttachedProgram>& present) {
    LibraryLogCapture quiet;
    xdp_multiprog* mp = multiprog_on(report_.ifindex);
    const int rc = mp != nullptr ? xdp_multiprog__detach(mp) : 0;
    if (mp != nullptr) xdp_multiprog__close(mp);
    if (rc != 0)
        throw IoError("detaching the leftover XDP program " + describe(present.front()) + " from " + report_.ifname, -rc,
                      quiet.tail());
    spdlog::info("recovered from a previous instance: detached XDP {} from {}", report_.replaced, report_.ifname);
}

bool XdpAttachment::try_attach(XdpMode mode, std::string& failure) {
    LibraryLogCapture capture;  // the dispatcher probe warns even when the fallback works
    const int rc = xdp_program__attach(program_, static_cast<int>(report_.ifindex), libxdp_mode(mode), 0);
    if (rc == 0) {
        attached_ = true;
        report_.mode = mode;
        return true;
    }
    failure = std::strerror(-rc);
    if (const auto hint = hint_for_native(-rc); mode == XdpMode::native && !hint.empty()) failure += " (" + hint + ")";
    for (const auto& line : capture.lines())
        if (line.find("Kernel error message") != std::string::npos) failure += "; " + line;
    return false;
}

bool XdpAttachment::detach() noexcept {
    if (!attached_ || program_ == nullptr) return true;
    if (same_netns(netns_fd_)) return detach_here();
    bool detached = false;
    try {
        run_in_netns_thread("/proc/self/fd/" + std::to_string(netns_fd_), [&] { detached = detach_here(); });
    } catch (const std::exception& e) {
        spdlog::warn("detaching XDP from {}: {}", report_.ifname, e.what());
    }
    return detached;
}

bool XdpAttachment::detach_here() noexcept {
    LibraryLogCapture quiet;
    int rc = 0;
    if (report_.dispatcher) {
        rc = xdp_program__detach(program_, static_cast<int>(report_.ifindex), libxdp_mode(report_.mode), 0);
    } else {
        // Ours alone, attached directly: detached only if it is still the program there
        // (XDP_FLAGS_REPLACE naming it), and without libxdp's query, which leaks a descriptor.
        bpf_xdp_attach_opts opts{};
        opts.sz = sizeof opts;
        opts.old_prog_fd = xdp_program__fd(program_);
        const __u32 flags = XDP_FLAGS_REPLACE | (report_.mode == XdpMode::native ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE);
        rc = bpf_xdp_detach(static_cast<int>(report_.ifindex), flags, &opts);
        if (rc == -EEXIST) rc = -ENOENT;  // another program replaced ours: nothing of ours to detach
    }
    if (rc != 0 && rc != -ENOENT) {
        spdlog::warn("detaching XDP from {}: {} {}", report_.ifname, std::strerror(-rc), quiet.tail());
        return false;
    }
    attached_ = false;
    spdlog::info("{}: XDP detached", report_.ifname);
    return true;
}

}  // namespace andromeda::io
