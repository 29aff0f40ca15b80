// For running the XDP program through BPF_PROG_TEST_RUN outside the daemon (the BPF fixture
// test and the xdp_cost bench): the skeleton as an owning pointer, and a network namespace of the
// calling process's own, so the ifindexes and AF_XDP sockets it uses belong to no one else.
#pragma once

#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include "andromeda_xdp.skel.h"

namespace andromeda::testing {

struct SkelDeleter {
    void operator()(andromeda_xdp* s) const { andromeda_xdp::destroy(s); }
};
using Skel = std::unique_ptr<andromeda_xdp, SkelDeleter>;

// Moves the process into a new network namespace with its loopback up; false when it cannot.
inline bool enter_private_netns() {
    if (unshare(CLONE_NEWNET) != 0) return false;
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    ifreq ifr{};
    std::strcpy(ifr.ifr_name, "lo");
    const bool ok = fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 &&
                    (ifr.ifr_flags |= IFF_UP, ioctl(fd, SIOCSIFFLAGS, &ifr) == 0);
    if (fd >= 0) close(fd);
    return ok;
}

}  // namespace andromeda::testing
