#include "io/bpf/tc_attach.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <system_error>

#include "io/bpf/library_log.hpp"
#include "io/netlink/netns.hpp"
#include "io/plan/io_error.hpp"

namespace andromeda::io {

namespace {

// Kernel UAPI values from 6.6 (tcx). Debian 12's linux/bpf.h (6.1) predates them; the numbers
// are part of the kernel's ABI and never change.
constexpr auto kBpfTcxIngress = static_cast<bpf_attach_type>(46);  // BPF_TCX_INGRESS
constexpr __u32 kBpfLinkTypeTcx = 11;                              // BPF_LINK_TYPE_TCX

// The head of struct bpf_link_info as the kernel fills it for a tcx link (type, id, prog_id,
// then the 8-byte aligned union whose tcx member is {ifindex, attach_type}). The kernel copies
// as much as the caller's buffer holds.
struct TcxLinkInfo {
    __u32 type;
    __u32 id;
    __u32 prog_id;
    __u32 pad;
    __u32 ifindex;
    __u32 attach_type;
};

bool in_netns(int netns_fd) noexcept {
    struct stat ours {}, theirs {};
    return stat("/proc/thread-self/ns/net", &ours) == 0 && fstat(netns_fd, &theirs) == 0 && ours.st_ino == theirs.st_ino &&
           ours.st_dev == theirs.st_dev;
}

// Deletes Andromeda's cls_bpf filter on `ifindex`'s ingress, in this thread's namespace. Often
// there is none (or no clsact qdisc): libbpf's complaint about that is not shown.
bool detach_cls_bpf(std::uint32_t ifindex) noexcept {
    const LibraryLogCapture quiet;
    LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = static_cast<int>(ifindex), .attach_point = BPF_TC_INGRESS);
    LIBBPF_OPTS(bpf_tc_opts, opts, .handle = kTcHandle, .priority = kTcPriority);
    return bpf_tc_detach(&hook, &opts) == 0;
}

std::string program_name_of(__u32 id) {
    const int fd = bpf_prog_get_fd_by_id(id);
    if (fd < 0) return "prog id " + std::to_string(id);
    bpf_prog_info info{};
    __u32 length = sizeof info;
    std::string name = bpf_obj_get_info_by_fd(fd, &info, &length) == 0 ? std::string(info.name) : std::string();
    close(fd);
    return name.empty() ? "prog id " + std::to_string(id) : name;
}

}  // namespace


TcAttachment::TcAttachment(int program_fd, std::uint32_t ifindex, std::string ifname, std::string program_name,
                           TcAttachPreference preference, std::filesystem::path link_pin)
    : ifindex_(ifindex), ifname_(std::move(ifname)), program_(std::move(program_name)), link_pin_(std::move(link_pin)) {
    if (preference != TcAttachPreference::clsact_only && attach_tcx(program_fd)) {
        mode_ = TcAttachMode::tcx;
        // A cls_bpf filter of ours left there by a build that attached that way would run after
        // this program on what it passes on: gone now.
        detach_cls_bpf(ifindex_);
    } else {
        if (preference == TcAttachPreference::tcx_only)
            throw IoError("attaching " + program_ + " to the tcx ingress of " + ifname_, EOPNOTSUPP,
                          "this kernel has no tcx (Linux 6.6 and later); use clsact");
        attach_clsact(program_fd);
        mode_ = TcAttachMode::clsact;
        // A tcx link of ours would run before the filter and take every packet: gone now.
        remove_pinned_tc_link(link_pin_);
    }
    attached_ = true;
    netns_fd_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
}

bool TcAttachment::attach_tcx(int program_fd) {
    // A previous instance's link on this device (it was killed): its program is replaced in one
    // step, so the device never runs without one.
    if (const int pinned = bpf_obj_get(link_pin_.c_str()); pinned >= 0) {
        TcxLinkInfo info{};
        __u32 length = sizeof info;
        const bool ours = bpf_obj_get_info_by_fd(pinned, &info, &length) == 0 && info.type == kBpfLinkTypeTcx &&
                          info.ifindex == ifindex_ && info.attach_type == static_cast<__u32>(kBpfTcxIngress);
        if (ours && bpf_link_update(pinned, program_fd, nullptr) == 0) {
            link_fd_ = pinned;
            adopted_ = true;
            return true;
        }
        // Not adoptable (a link on a device of that name that has since been recreated, or
        // something else pinned there): detached and removed before a link of our own is made.
        bpf_link_detach(pinned);
        close(pinned);
        if (unlink(link_pin_.c_str()) != 0 && errno != ENOENT)
            throw IoError("removing the stale tc link pin " + link_pin_.string(), errno);
    }
    const int fd = bpf_link_create(program_fd, static_cast<int>(ifindex_), kBpfTcxIngress, nullptr);
    if (fd < 0) {
        const int error = errno;
        // A kernel without tcx does not know the attach type.
        if (error == EINVAL) return false;
        throw IoError("attaching " + program_ + " to the tcx ingress of " + ifname_, error);
    }
    std::error_code ec;
    std::filesystem::create_directories(link_pin_.parent_path(), ec);
    if (ec || bpf_obj_pin(fd, link_pin_.c_str()) != 0) {
        const int error = ec ? ec.value() : errno;
        bpf_link_detach(fd);
        close(fd);
        throw IoError("pinning the tc link of " + ifname_ + " at " + link_pin_.string(), error);
    }
    link_fd_ = fd;
    return true;
}

void TcAttachment::attach_clsact(int program_fd) {
    LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = static_cast<int>(ifindex_), .attach_point = BPF_TC_INGRESS);
    if (const int rc = bpf_tc_hook_create(&hook); rc != 0 && rc != -EEXIST)
        throw IoError("creating the clsact qdisc on " + ifname_, -rc);
    LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = program_fd, .flags = BPF_TC_F_REPLACE, .handle = kTcHandle,
                .priority = kTcPriority);
    if (const int rc = bpf_tc_attach(&hook, &opts); rc != 0)
        throw IoError("attaching " + program_ + " to the tc ingress of " + ifname_, -rc);
}

TcAttachment::~TcAttachment() {
    detach();
    if (netns_fd_ >= 0) close(netns_fd_);
}

std::string TcAttachment::message() const {
    return ifname_ + ": tc ingress " + program_ + " (" + to_string(mode_) + (adopted_ ? ", adopted" : "") + ")";
}

bool TcAttachment::detach() noexcept {
    if (!attached_) return false;
    attached_ = false;
    if (mode_ == TcAttachMode::tcx) {
        // Through the link itself, so the namespace does not matter.
        const bool detached = bpf_link_detach(link_fd_) == 0;
        unlink(link_pin_.c_str());
        close(link_fd_);
        link_fd_ = -1;
        return detached;
    }
    try {
        if (netns_fd_ < 0 || in_netns(netns_fd_)) return detach_cls_bpf(ifindex_);
        bool detached = false;
        run_in_netns_thread("/proc/self/fd/" + std::to_string(netns_fd_), [&] { detached = detach_cls_bpf(ifindex_); });
        return detached;
    } catch (const std::exception&) {
        return false;
    }
}

bool remove_pinned_tc_link(const std::filesystem::path& link_pin) noexcept {
    const int fd = bpf_obj_get(link_pin.c_str());
    if (fd < 0) return false;
    bpf_link_detach(fd);
    close(fd);
    return unlink(link_pin.c_str()) == 0;
}

std::vector<TcProgramInfo> tc_ingress_programs(std::uint32_t ifindex) {
    std::vector<TcProgramInfo> out;
    std::array<__u32, 64> ids{};
    __u32 count = ids.size();
    if (bpf_prog_query(static_cast<int>(ifindex), kBpfTcxIngress, 0, nullptr, ids.data(), &count) == 0)
        for (__u32 i = 0; i < count && i < ids.size(); ++i) out.push_back({ids[i], program_name_of(ids[i]), TcAttachMode::tcx});
    route_library_logs_to_spdlog();
    const LibraryLogCapture quiet;  // no qdisc, no filter: libbpf complains, nothing is wrong
    LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = static_cast<int>(ifindex), .attach_point = BPF_TC_INGRESS);
    LIBBPF_OPTS(bpf_tc_opts, opts, .handle = kTcHandle, .priority = kTcPriority);
    if (bpf_tc_query(&hook, &opts) == 0 && opts.prog_id != 0)
        out.push_back({opts.prog_id, program_name_of(opts.prog_id), TcAttachMode::clsact});
    return out;
}

}  // namespace andromeda::io
