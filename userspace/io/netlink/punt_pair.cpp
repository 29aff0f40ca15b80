#include "io/netlink/punt_pair.hpp"

#include <linux/ethtool.h>
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/sockios.h>
#include <linux/veth.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>

#include "io/netlink/interfaces.hpp"
#include "io/netlink/netlink.hpp"
#include "io/plan/io_error.hpp"

namespace andromeda::io {

namespace {

void set_up(RtnetlinkSocket& rtnl, std::uint32_t ifindex, const std::string& name) {
    ifinfomsg info{};
    info.ifi_family = AF_UNSPEC;
    info.ifi_index = static_cast<int>(ifindex);
    info.ifi_flags = IFF_UP;
    info.ifi_change = IFF_UP;
    NetlinkRequest request(RTM_NEWLINK, 0, &info, sizeof info);
    if (const int rc = rtnl.transact(request); rc != 0) throw IoError("setting " + name + " up", -rc);
}

// IPv6 off before the link goes up: no link-local address, no router or neighbour
// solicitations, no MLD reports of the kernel's own going through the pair. A kernel without
// IPv6 has no such file and sends none anyway.
void disable_ipv6(const std::string& name) {
    std::ofstream file("/proc/sys/net/ipv6/conf/" + name + "/disable_ipv6");
    if (file) file << "1\n";
}

void disable_tx_checksum(const std::string& name) {
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw IoError("opening a socket for ethtool", errno);
    ethtool_value value{};
    value.cmd = ETHTOOL_STXCSUM;
    value.data = 0;
    ifreq ifr{};
    name.copy(ifr.ifr_name, IFNAMSIZ - 1);
    ifr.ifr_data = reinterpret_cast<char*>(&value);
    const int rc = ioctl(fd, SIOCETHTOOL, &ifr);
    const int error = errno;
    close(fd);
    if (rc != 0) throw IoError("turning TX checksum offload off on " + name, error);
}

std::uint32_t ifindex_of(const std::string& name) {
    const auto info = find_interface(name);
    if (!info) throw IoError("finding the punt device " + name + " just created", ENODEV);
    return info->ifindex;
}

}  // namespace

bool delete_link(const std::string& name) {
    RtnetlinkSocket rtnl;
    ifinfomsg info{};
    info.ifi_family = AF_UNSPEC;
    NetlinkRequest request(RTM_DELLINK, 0, &info, sizeof info);
    request.add_string(IFLA_IFNAME, name);
    const int rc = rtnl.transact(request);
    if (rc == -ENODEV) return false;
    if (rc != 0) throw IoError("deleting " + name, -rc);
    return true;
}

namespace {

// A pair a killed instance left: both ends there, veths of each other, with the MTU wanted.
bool adoptable(const PuntDevices& d, std::uint32_t mtu) {
    const auto visible = find_interface(d.visible);
    const auto steering = find_interface(d.steering);
    return visible && steering && visible->driver == "veth" && steering->driver == "veth" &&
           visible->link_ifindex == steering->ifindex && steering->link_ifindex == visible->ifindex &&
           !visible->link_netnsid && visible->mtu == mtu && steering->mtu == mtu;
}

}  // namespace

PuntPair::PuntPair(std::uint32_t tenant_ifindex, std::uint32_t mtu)
    : PuntPair(punt_visible_name(tenant_ifindex), punt_steering_name(tenant_ifindex), mtu) {}

PuntPair::PuntPair(std::string visible, std::string steering, std::uint32_t mtu) {
    devices_.visible = std::move(visible);
    devices_.steering = std::move(steering);
    RtnetlinkSocket rtnl;
    if (adoptable(devices_, mtu)) {
        // Kept as it is: the tenant port's tc program (the killed instance's, until this one
        // replaces it) keeps punting into it meanwhile. Its settings are made sure of again.
        adopted_ = true;
        configure(rtnl);
        return;
    }
    delete_link(devices_.visible);  // a crashed instance's pair (deleting one end deletes both)
    delete_link(devices_.steering);
    ifinfomsg info{};
    info.ifi_family = AF_UNSPEC;
    NetlinkRequest request(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &info, sizeof info);
    request.add_string(IFLA_IFNAME, devices_.visible);
    request.add_value<std::uint32_t>(IFLA_MTU, mtu);
    const std::size_t link_info = request.begin_nested(IFLA_LINKINFO);
    request.add_string(IFLA_INFO_KIND, "veth");
    const std::size_t data = request.begin_nested(IFLA_INFO_DATA);
    const std::size_t peer = request.begin_nested(VETH_INFO_PEER);
    request.add_raw(&info, sizeof info);
    request.add_string(IFLA_IFNAME, devices_.steering);
    request.add_value<std::uint32_t>(IFLA_MTU, mtu);
    request.end_nested(peer);
    request.end_nested(data);
    request.end_nested(link_info);
    if (const int rc = rtnl.transact(request); rc != 0)
        throw IoError("creating the punt pair " + devices_.visible + "/" + devices_.steering, -rc,
                      rc == -EOPNOTSUPP ? "the kernel has no veth driver (CONFIG_VETH)" : "");
    try {
        configure(rtnl);
    } catch (...) {
        delete_link(devices_.visible);
        throw;
    }
}

void PuntPair::configure(RtnetlinkSocket& rtnl) {
    devices_.visible_ifindex = ifindex_of(devices_.visible);
    devices_.steering_ifindex = ifindex_of(devices_.steering);
    disable_ipv6(devices_.visible);
    disable_ipv6(devices_.steering);
    disable_tx_checksum(devices_.visible);
    set_up(rtnl, devices_.steering_ifindex, devices_.steering);
    set_up(rtnl, devices_.visible_ifindex, devices_.visible);
}

PuntPair::~PuntPair() {
    try {
        delete_link(devices_.visible);
    } catch (const std::exception&) {
        // Gone with its namespace, or the daemon is exiting anyway: nothing left to free.
    }
}

}  // namespace andromeda::io
