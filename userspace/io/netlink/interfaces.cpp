#include "io/netlink/interfaces.hpp"

#include <arpa/inet.h>
#include <linux/ethtool.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "io/netlink/netlink.hpp"
#include "io/netlink/netns.hpp"
#include "io/plan/io_error.hpp"

namespace andromeda::io {

namespace {

// One ethtool ioctl; false when the driver does not implement it (or the interface is gone).
bool ethtool_query(std::string_view ifname, void* command) {
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    ifreq ifr{};
    ifname.copy(ifr.ifr_name, IFNAMSIZ - 1);
    ifr.ifr_data = static_cast<char*>(command);
    const bool ok = ioctl(fd, SIOCETHTOOL, &ifr) == 0;
    close(fd);
    return ok;
}

std::string driver_name(std::string_view ifname) {
    ethtool_drvinfo info{};
    info.cmd = ETHTOOL_GDRVINFO;
    if (!ethtool_query(ifname, &info)) return {};
    return std::string(info.driver, strnlen(info.driver, sizeof info.driver));
}

InterfaceInfo parse_link(const nlmsghdr& message) {
    const auto& ifi = fixed_header<ifinfomsg>(message);
    const auto attrs = attributes_after<ifinfomsg>(message);
    InterfaceInfo info;
    info.ifindex = static_cast<std::uint32_t>(ifi.ifi_index);
    info.up = (ifi.ifi_flags & IFF_UP) != 0;
    info.name = attrs.string(IFLA_IFNAME).value_or("");
    info.mtu = attrs.u32(IFLA_MTU).value_or(0);
    if (const auto mac = attrs.bytes(IFLA_ADDRESS); mac.size() == 6) info.mac = wire::MacAddress::from_bytes(mac.data());
    const auto xdp = attrs.nested(IFLA_XDP);
    info.xdp_attached = xdp.u8(IFLA_XDP_ATTACHED).value_or(XDP_ATTACHED_NONE);
    info.xdp_prog_id = xdp.u32(IFLA_XDP_PROG_ID).value_or(0);
    info.link_ifindex = attrs.u32(IFLA_LINK).value_or(0);
    if (const auto nsid = attrs.u32(IFLA_LINK_NETNSID)) info.link_netnsid = static_cast<std::int32_t>(*nsid);
    const auto link_info = attrs.nested(IFLA_LINKINFO);
    if (link_info.string(IFLA_INFO_KIND) == "tun") {
        const auto tun = link_info.nested(IFLA_INFO_DATA);
        info.tun_type = tun.u8(IFLA_TUN_TYPE).value_or(0);
        info.tun_multi_queue = tun.u8(IFLA_TUN_MULTI_QUEUE).value_or(0) != 0;
    }
    return info;
}

std::optional<InterfaceInfo> get_link(std::uint32_t ifindex, const std::string& name) {
    ifinfomsg ifi{};
    ifi.ifi_family = AF_UNSPEC;
    ifi.ifi_index = static_cast<int>(ifindex);
    NetlinkRequest request(RTM_GETLINK, 0, &ifi, sizeof ifi);
    if (!name.empty()) request.add_string(IFLA_IFNAME, name);
    std::optional<InterfaceInfo> found;
    RtnetlinkSocket netlink;
    const int rc = netlink.transact(request, [&](const nlmsghdr& m) {
        if (m.nlmsg_type == RTM_NEWLINK) found = parse_link(m);
    });
    if (rc == -ENODEV || rc == -ENOENT) return std::nullopt;
    if (rc != 0) throw IoError("netlink RTM_GETLINK for " + (name.empty() ? std::to_string(ifindex) : name), -rc);
    if (found) {
        found->rx_queues = rx_queue_count(found->name);
        found->driver = driver_name(found->name);
    }
    return found;
}

}  // namespace

std::optional<InterfaceInfo> find_interface(std::string_view name) {
    if (name.empty() || name.size() >= IFNAMSIZ) return std::nullopt;
    return get_link(0, std::string(name));
}

std::optional<InterfaceInfo> find_interface(std::uint32_t ifindex) { return get_link(ifindex, {}); }

InterfaceInfo require_interface(std::string_view name) {
    if (auto info = find_interface(name)) return *info;
    throw IoError("interface " + std::string(name) + " does not exist in this network namespace", ENODEV,
                  "check the name in node.toml, and start andromedad in the namespace that holds it "
                  "(nsenter --net=/run/netns/<ns>)");
}

bool set_link_up(std::uint32_t ifindex, bool up) {
    ifinfomsg info{};
    info.ifi_family = AF_UNSPEC;
    info.ifi_index = static_cast<int>(ifindex);
    info.ifi_flags = up ? IFF_UP : 0;
    info.ifi_change = IFF_UP;
    NetlinkRequest request(RTM_NEWLINK, 0, &info, sizeof info);
    RtnetlinkSocket netlink;
    const int rc = netlink.transact(request);
    if (rc == -ENODEV) return false;
    if (rc != 0) throw IoError("setting interface " + std::to_string(ifindex) + (up ? " up" : " down"), -rc);
    return true;
}

namespace {

// RTM_GETADDR for one family: each address's IFA_LOCAL (IFA_ADDRESS when absent) of `size`
// bytes, primary ones first (IPv6 has no secondaries).
template <typename Address, int kFamily, std::size_t kSize>
std::vector<Address> interface_addresses(std::uint32_t ifindex) {
    ifaddrmsg ifa{};
    ifa.ifa_family = kFamily;
    NetlinkRequest request(RTM_GETADDR, NLM_F_DUMP, &ifa, sizeof ifa);
    std::vector<Address> primary, secondary;
    RtnetlinkSocket netlink;
    const int rc = netlink.transact(request, [&](const nlmsghdr& m) {
        const auto& a = fixed_header<ifaddrmsg>(m);
        if (m.nlmsg_type != RTM_NEWADDR || a.ifa_index != ifindex || a.ifa_family != kFamily) return;
        const auto attrs = attributes_after<ifaddrmsg>(m);
        const auto local = attrs.bytes(IFA_LOCAL).size() == kSize ? attrs.bytes(IFA_LOCAL) : attrs.bytes(IFA_ADDRESS);
        if (local.size() != kSize) return;
        ((a.ifa_flags & IFA_F_SECONDARY) ? secondary : primary).push_back(Address::from_bytes(local.data()));
    });
    if (rc != 0) throw IoError("netlink RTM_GETADDR", -rc);
    primary.insert(primary.end(), secondary.begin(), secondary.end());
    return primary;
}

}  // namespace

std::vector<wire::Ipv4Address> interface_ipv4_addresses(std::uint32_t ifindex) {
    return interface_addresses<wire::Ipv4Address, AF_INET, 4>(ifindex);
}

std::vector<wire::Ipv6Address> interface_ipv6_addresses(std::uint32_t ifindex) {
    return interface_addresses<wire::Ipv6Address, AF_INET6, 16>(ifindex);
}

std::uint32_t rx_queue_count(std::string_view ifname) {
    ethtool_channels channels{};
    channels.cmd = ETHTOOL_GCHANNELS;
    if (!ethtool_query(ifname, &channels)) return 1;
    const std::uint32_t queues = channels.rx_count + channels.combined_count;
    return queues == 0 ? 1 : queues;
}

std::optional<bool> tx_checksum_offload(std::string_view ifname) {
    ethtool_value value{};
    value.cmd = ETHTOOL_GTXCSUM;
    if (!ethtool_query(ifname, &value)) return std::nullopt;
    return value.data != 0;
}


}  // namespace andromeda::io
