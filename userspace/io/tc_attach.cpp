#include "io/tc_attach.hpp"

#include <bpf/libbpf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "io/io_error.hpp"
#include "io/netns.hpp"

namespace andromeda::io {

namespace {

bool in_netns(int netns_fd) noexcept {
    struct stat ours {}, theirs {};
    return stat("/proc/thread-self/ns/net", &ours) == 0 && fstat(netns_fd, &theirs) == 0 && ours.st_ino == theirs.st_ino &&
           ours.st_dev == theirs.st_dev;
}

}  // namespace

TcAttachment::TcAttachment(int program_fd, std::uint32_t ifindex, std::string ifname, std::string program_name)
    : ifindex_(ifindex), ifname_(std::move(ifname)), program_(std::move(program_name)) {
    LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = static_cast<int>(ifindex_), .attach_point = BPF_TC_INGRESS);
    if (const int rc = bpf_tc_hook_create(&hook); rc != 0 && rc != -EEXIST)
        throw IoError("creating the clsact qdisc on " + ifname_, -rc);
    LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = program_fd, .flags = BPF_TC_F_REPLACE, .handle = kTcHandle,
                .priority = kTcPriority);
    if (const int rc = bpf_tc_attach(&hook, &opts); rc != 0)
        throw IoError("attaching " + program_ + " to the tc ingress of " + ifname_, -rc);
    attached_ = true;
    netns_fd_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
}

TcAttachment::~TcAttachment() {
    detach();
    if (netns_fd_ >= 0) close(netns_fd_);
}

std::string TcAttachment::message() const { return ifname_ + ": tc ingress " + program_; }

bool TcAttachment::detach() noexcept {
    if (!attached_) return false;
    attached_ = false;
    const auto detach_here = [this] {
        LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = static_cast<int>(ifindex_), .attach_point = BPF_TC_INGRESS);
        LIBBPF_OPTS(bpf_tc_opts, opts, .handle = kTcHandle, .priority = kTcPriority);
        return bpf_tc_detach(&hook, &opts) == 0;
    };
    try {
        if (netns_fd_ < 0 || in_netns(netns_fd_)) return detach_here();
        bool detached = false;
        run_in_netns_thread("/proc/self/fd/" + std::to_string(netns_fd_), [&] { detached = detach_here(); });
        return detached;
    } catch (const std::exception&) {
        return false;
    }
}

}  // namespace andromeda::io
