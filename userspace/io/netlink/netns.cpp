#include "io/netlink/netns.hpp"

#include <fcntl.h>
#include <linux/net_namespace.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <thread>

#include "io/netlink/netlink.hpp"
#include "io/plan/io_error.hpp"

namespace andromeda::io {

namespace {

std::optional<std::int32_t> nsid_of(RtnetlinkSocket& netlink, int ns_fd) {
    rtgenmsg gen{};
    gen.rtgen_family = AF_UNSPEC;
    NetlinkRequest request(RTM_GETNSID, 0, &gen, sizeof gen);
    request.add_value<std::uint32_t>(NETNSA_FD, static_cast<std::uint32_t>(ns_fd));
    std::optional<std::int32_t> nsid;
    const int rc = netlink.transact(request, [&](const nlmsghdr& m) {
        if (m.nlmsg_type != RTM_NEWNSID) return;
        if (const auto id = attributes_after<rtgenmsg>(m).u32(NETNSA_NSID)) nsid = static_cast<std::int32_t>(*id);
    });
    if (rc != 0 || !nsid || *nsid < 0) return std::nullopt;  // NETNSA_NSID_NOT_ASSIGNED is -1
    return nsid;
}

}  // namespace

std::optional<std::filesystem::path> find_named_netns(std::int32_t nsid) {
    std::error_code ec;
    RtnetlinkSocket netlink;
    for (const auto& entry : std::filesystem::directory_iterator("/run/netns", ec)) {
        const int fd = open(entry.path().c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        const auto id = nsid_of(netlink, fd);
        close(fd);
        if (id == nsid) return entry.path();
    }
    return std::nullopt;
}

void run_in_netns_thread(const std::filesystem::path& ns, const std::function<void()>& task) {
    const int fd = open(ns.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw IoError("opening network namespace " + ns.string(), errno);
    int setns_error = 0;
    std::exception_ptr failure;
    std::thread worker([&] {
        if (setns(fd, CLONE_NEWNET) != 0) {
            setns_error = errno;
            return;
        }
        try {
            task();
        } catch (...) {
            failure = std::current_exception();
        }
    });
    worker.join();
    close(fd);
    if (setns_error != 0) throw IoError("entering network namespace " + ns.string(), setns_error);
    if (failure) std::rethrow_exception(failure);
}

}  // namespace andromeda::io
