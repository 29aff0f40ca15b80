#include "io/netlink/tap.hpp"

#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "io/plan/io_error.hpp"

namespace andromeda::io {

namespace {

// An open /dev/net/tun attached to tap `name` (created when missing), closed on scope exit.
class TunFile {
public:
    TunFile(const std::string& name, bool multi_queue) {
        if (name.empty() || name.size() >= IFNAMSIZ)
            throw IoError("tap name \"" + name + "\" must have 1 to " + std::to_string(IFNAMSIZ - 1) + " characters",
                          EINVAL);
        fd_ = ::open("/dev/net/tun", O_RDWR | O_CLOEXEC);
        if (fd_ < 0)
            throw IoError("opening /dev/net/tun to create tap " + name + " (is the tun module loaded? modprobe tun)",
                          errno);
        ifreq ifr{};
        std::memcpy(ifr.ifr_name, name.data(), name.size());
        ifr.ifr_flags = static_cast<short>(IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | (multi_queue ? IFF_MULTI_QUEUE : 0));
        if (::ioctl(fd_, TUNSETIFF, &ifr) != 0) {
            const int error = errno;
            ::close(fd_);
            const bool taken = error == EBUSY || error == EINVAL;
            throw IoError("creating tap " + name +
                              (taken ? std::string(" (an interface of that name exists and is not a ") +
                                           (multi_queue ? "multi-queue" : "single-queue") + " tap)"
                                     : ""),
                          error);
        }
    }
    ~TunFile() { ::close(fd_); }
    TunFile(const TunFile&) = delete;
    TunFile& operator=(const TunFile&) = delete;

    // The tap outlives this file: it stays for a VM to attach to.
    void persist(const std::string& name) const {
        if (::ioctl(fd_, TUNSETPERSIST, 1) != 0) throw IoError("making tap " + name + " persistent", errno);
    }

private:
    int fd_ = -1;
};

}  // namespace

std::uint32_t create_tap(const std::string& name, bool multi_queue) {
    {
        TunFile tun(name, multi_queue);
        tun.persist(name);
    }
    return require_interface(name).ifindex;
}

// From netlink (IFLA_LINKINFO), which answers for the caller's namespace, where sysfs would show
// the namespace it was mounted in.
bool is_tap(const InterfaceInfo& link) {
    if (link.driver != "tun") return false;
    return link.tun_type == IFF_TAP || link.tun_type == 0;  // 0: a tun-driver port the kernel did not describe
}

bool is_multi_queue_tap(const InterfaceInfo& link) { return is_tap(link) && link.tun_multi_queue; }

}  // namespace andromeda::io
