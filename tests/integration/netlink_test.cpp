// Interface and neighbour lookups over netlink/ethtool inside namespaces (never
// /sys/class/net): names, MACs, MTU, queues, addresses, next-hop MACs resolved by ARP and by
// IPv6 Neighbor Discovery, and the punt pairs the daemon creates for tenant ports.
#include <gtest/gtest.h>
#include <linux/if_tun.h>
#include <net/if.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "io/netlink/interfaces.hpp"
#include "io/netlink/neighbour.hpp"
#include "io/netlink/punt_pair.hpp"
#include "io/netlink/tap.hpp"
#include "io/plan/io_error.hpp"
#include "io_test_support.hpp"
#include "support/root.hpp"

namespace andromeda::io {
namespace {

using andromeda::testing::Netns;
using andromeda::testing::NetnsGuard;
using andromeda::testing::Topology;
using andromeda::testing::VethOptions;
using testing::contains;
using namespace std::chrono_literals;

const wire::Ipv4Address kHost(0xc0a83c01);  // 192.168.60.1
const wire::Ipv4Address kPeer(0xc0a83c02);  // 192.168.60.2

class Netlink : public ::testing::Test {
protected:
    void SetUp() override {
        ANDROMEDA_REQUIRE_ROOT();
        host_ = &topo_.add_namespace("host");
        peer_ = &topo_.add_namespace("peer");
        VethOptions options;
        options.queues = 2;
        options.mtu = 1400;
        options.mac_a = "02:00:00:00:3c:01";
        options.mac_b = "02:00:00:00:3c:02";
        topo_.add_veth(*host_, "eth1", *peer_, "eth1", options);
        topo_.add_address(*host_, "eth1", "192.168.60.1/24");
        topo_.add_address(*peer_, "eth1", "192.168.60.2/24");
    }

    Topology topo_;
    Netns* host_ = nullptr;
    Netns* peer_ = nullptr;
};

TEST_F(Netlink, InterfaceLookupsSeeTheNamespaceTheyRunIn) {
    NetnsGuard in_host(*host_);
    const auto link = find_interface("eth1");
    ASSERT_TRUE(link.has_value());
    EXPECT_EQ(link->ifindex, if_nametoindex("eth1"));
    EXPECT_EQ(link->mac.to_string(), "02:00:00:00:3c:01");
    EXPECT_EQ(link->mtu, 1400u);
    EXPECT_TRUE(link->up);
    EXPECT_EQ(link->rx_queues, 2u);
    EXPECT_EQ(link->driver, "veth");
    EXPECT_EQ(link->xdp_prog_id, 0u);
    EXPECT_TRUE(link->link_netnsid.has_value()) << "the peer lives in another namespace";
    EXPECT_EQ(find_interface(link->ifindex)->name, "eth1");
    EXPECT_EQ(interface_ipv4_addresses(link->ifindex), std::vector<wire::Ipv4Address>{kHost});
    EXPECT_EQ(rx_queue_count("lo"), 1u) << "no channels: one queue";
    EXPECT_FALSE(find_interface("eth0").has_value()) << "the root namespace's eth0 is not visible here";
    try {
        (void)require_interface("nope0");
        FAIL();
    } catch (const IoError& e) {
        EXPECT_TRUE(contains(e.what(), "interface nope0 does not exist in this network namespace")) << e.what();
        EXPECT_TRUE(contains(e.what(), "nsenter --net")) << e.what();
    }
}

TEST_F(Netlink, ResolvesAPeersMacByAskingTheKernel) {
    NetnsGuard in_host(*host_);
    const auto hop = resolve_next_hop(kPeer, 3s);
    EXPECT_EQ(hop.mac.to_string(), "02:00:00:00:3c:02");
    EXPECT_EQ(hop.next_hop, kPeer);
    EXPECT_EQ(hop.ifindex, if_nametoindex("eth1"));
    EXPECT_TRUE(hop.resolved_now) << "the table was empty: the kernel had to ARP";
    EXPECT_FALSE(resolve_next_hop(kPeer, 3s).resolved_now) << "now it is in the table";
    const auto entry = find_neighbour(hop.ifindex, kPeer);
    ASSERT_TRUE(entry.has_value());
    EXPECT_TRUE(entry->usable());
}

TEST_F(Netlink, ResolvesWithAUdpProbeAndThroughAGateway) {
    NetnsGuard in_host(*host_);
    host_->run({"ip", "route", "add", "10.99.0.0/16", "via", "192.168.60.2"});
    const auto hop = resolve_next_hop(wire::Ipv4Address(0x0a630005), 3s, ResolveTrigger::udp_probe);
    EXPECT_EQ(hop.next_hop, kPeer) << "the MAC wanted is the gateway's";
    EXPECT_EQ(hop.mac.to_string(), "02:00:00:00:3c:02");
    EXPECT_TRUE(hop.resolved_now);
}

TEST_F(Netlink, AnUnansweredPeerFailsInBoundedTimeWithAFix) {
    NetnsGuard in_host(*host_);
    const auto started = std::chrono::steady_clock::now();
    try {
        (void)resolve_next_hop(wire::Ipv4Address(0xc0a83c4d), 300ms);  // 192.168.60.77: nobody
        FAIL() << "resolved a host that does not exist";
    } catch (const IoError& e) {
        EXPECT_TRUE(contains(e.what(), "did not answer ARP within 300 ms")) << e.what();
        EXPECT_TRUE(contains(e.what(), "on eth1")) << e.what();
        EXPECT_TRUE(contains(e.what(), "mac = ")) << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
    try {
        (void)resolve_next_hop(wire::Ipv4Address(0xac1fff01), 300ms);  // no route at all
        FAIL();
    } catch (const IoError& e) {
        EXPECT_TRUE(contains(e.what(), "no route to peer node 172.31.255.1")) << e.what();
    }
}

// The same lookups over an IPv6 underlay. The topology's namespaces start with IPv6 off; these
// tests turn it on for eth1 alone, with DAD off first so the link-local address (the source of
// the kernel's own solicitations) and the test's `nodad` addresses are usable at once.
wire::Ipv6Address ip6(const char* text) { return wire::Ipv6Address::parse(text).value(); }

const wire::Ipv6Address kHost6 = ip6("fd00:60::1");
const wire::Ipv6Address kPeer6 = ip6("fd00:60::2");
const wire::Ipv6Address kPeer6Other = ip6("fd00:60::3");      // the same peer's second address
const wire::Ipv6Address kPeer6LinkLocal = ip6("fe80::60:2");  // and its link-local one

class NetlinkIpv6 : public Netlink {
protected:
    void SetUp() override {
        Netlink::SetUp();
        if (IsSkipped() || HasFatalFailure()) return;
        enable_ipv6(*host_, {"fd00:60::1/64"});
        enable_ipv6(*peer_, {"fd00:60::2/64", "fd00:60::3/64", "fe80::60:2/64"});
    }

    static void enable_ipv6(const Netns& ns, const std::vector<std::string>& addresses) {
        ns.run({"sysctl", "-q", "-w", "net.ipv6.conf.eth1.accept_dad=0"});
        ns.run({"sysctl", "-q", "-w", "net.ipv6.conf.eth1.disable_ipv6=0"});
        for (const auto& address : addresses) ns.run({"ip", "-6", "addr", "add", address, "dev", "eth1", "nodad"});
    }
};

TEST_F(NetlinkIpv6, ResolvesAnOnLinkPeerByNeighborDiscoveryWithEitherTrigger) {
    NetnsGuard in_host(*host_);
    const std::uint32_t eth1 = if_nametoindex("eth1");
    const auto route = route_to(kPeer6);
    ASSERT_TRUE(route.has_value());
    EXPECT_EQ(route->ifindex, eth1);
    EXPECT_FALSE(route->gateway.has_value()) << "on the link";
    EXPECT_EQ(route->source, kHost6);
    EXPECT_FALSE(find_neighbour(eth1, kPeer6).has_value()) << "nothing asked yet";

    const auto hop = resolve_next_hop(kPeer6, 3s);
    EXPECT_EQ(hop.peer, kPeer6);
    EXPECT_EQ(hop.next_hop, kPeer6);
    EXPECT_EQ(hop.ifindex, eth1);
    EXPECT_EQ(hop.mac.to_string(), "02:00:00:00:3c:02");
    EXPECT_TRUE(hop.resolved_now) << "the table was empty: the kernel had to solicit";
    EXPECT_FALSE(resolve_next_hop(kPeer6, 3s).resolved_now) << "now it is in the table";
    const auto entry = find_neighbour(eth1, kPeer6);
    ASSERT_TRUE(entry.has_value());
    EXPECT_TRUE(entry->usable());
    EXPECT_EQ(entry->ip, kPeer6);
    EXPECT_EQ(entry->mac->to_string(), "02:00:00:00:3c:02");
    EXPECT_FALSE(find_neighbour(eth1, ip6("fd00:60::4")).has_value());

    const auto probed = resolve_next_hop(kPeer6Other, 3s, ResolveTrigger::udp_probe);
    EXPECT_EQ(probed.next_hop, kPeer6Other);
    EXPECT_EQ(probed.mac.to_string(), "02:00:00:00:3c:02");
    EXPECT_TRUE(probed.resolved_now) << "a datagram of ours made the kernel solicit";
}

TEST_F(NetlinkIpv6, ResolvesThroughAGlobalOrALinkLocalGateway) {
    NetnsGuard in_host(*host_);
    host_->run({"ip", "-6", "route", "add", "fd99:1::/64", "via", "fd00:60::2"});
    host_->run({"ip", "-6", "route", "add", "fd99:2::/64", "via", "fe80::60:2", "dev", "eth1"});
    const std::uint32_t eth1 = if_nametoindex("eth1");

    const auto route = route_to(ip6("fd99:2::5"));
    ASSERT_TRUE(route.has_value());
    EXPECT_EQ(route->ifindex, eth1);
    EXPECT_EQ(route->gateway, kPeer6LinkLocal) << "a link-local gateway is one of eth1's neighbours";

    const auto global = resolve_next_hop(ip6("fd99:1::5"), 3s, ResolveTrigger::udp_probe);
    EXPECT_EQ(global.peer, ip6("fd99:1::5"));
    EXPECT_EQ(global.next_hop, kPeer6) << "the MAC wanted is the gateway's";
    EXPECT_EQ(global.ifindex, eth1);
    EXPECT_EQ(global.mac.to_string(), "02:00:00:00:3c:02");
    EXPECT_TRUE(global.resolved_now);

    const auto link_local = resolve_next_hop(ip6("fd99:2::5"), 3s);
    EXPECT_EQ(link_local.next_hop, kPeer6LinkLocal);
    EXPECT_EQ(link_local.ifindex, eth1);
    EXPECT_EQ(link_local.mac.to_string(), "02:00:00:00:3c:02");
    EXPECT_TRUE(link_local.resolved_now);
}

TEST_F(NetlinkIpv6, AnUnansweredOrUnroutablePeerFailsInBoundedTimeWithAFix) {
    NetnsGuard in_host(*host_);
    for (const auto trigger : {ResolveTrigger::netlink_use, ResolveTrigger::udp_probe}) {
        const auto started = std::chrono::steady_clock::now();
        try {
            (void)resolve_next_hop(ip6("fd00:60::77"), 300ms, trigger);  // nobody
            ADD_FAILURE() << "resolved a host that does not exist";
        } catch (const IoError& e) {
            EXPECT_TRUE(contains(e.what(), "the next hop fd00:60::77 towards peer fd00:60::77 on eth1")) << e.what();
            EXPECT_TRUE(contains(e.what(), "did not answer Neighbor Discovery within 300 ms")) << e.what();
            EXPECT_TRUE(contains(e.what(), "mac = ")) << e.what();
        }
        EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
    }

    EXPECT_FALSE(route_to(ip6("fd7f::1")).has_value()) << "no default route in the namespace";
    try {
        (void)resolve_next_hop(ip6("fd7f::1"), 300ms);
        ADD_FAILURE() << "resolved a peer without a route";
    } catch (const IoError& e) {
        EXPECT_EQ(e.error_number(), ENETUNREACH);
        EXPECT_TRUE(contains(e.what(), "no route to peer node fd7f::1")) << e.what();
        EXPECT_TRUE(contains(e.what(), "disable_ipv6=0")) << e.what();
    }
    host_->run({"ip", "-6", "route", "add", "unreachable", "fd7e::/64"});
    EXPECT_FALSE(route_to(ip6("fd7e::1")).has_value()) << "an unreachable route is no route";
}

// A tenant port's punt pair: both ends up with the tenant port's MTU, TX checksum offload off on
// the visible end (where the kernel finishes what the tenant left CHECKSUM_PARTIAL) and left on
// on the steering end, IPv6 off on both; a crashed instance's pair is replaced, and the pair is
// gone with its owner.
// A VM's tap (docs/vm-tenants.md): created persistent, single- or multi-queue, told apart from
// a veth by what netlink says about it in this namespace, and adopted when it is already there.
TEST_F(Netlink, TapsAreCreatedSingleOrMultiQueueAndToldApart) {
    NetnsGuard in_host(*host_);
    const std::uint32_t single = create_tap("tq0");
    const std::uint32_t multi = create_tap("tq1", true);
    const auto a = find_interface("tq0");
    const auto b = find_interface("tq1");
    const auto veth = find_interface("eth1");
    ASSERT_TRUE(a && b && veth);
    EXPECT_EQ(a->ifindex, single);
    EXPECT_EQ(b->ifindex, multi);
    EXPECT_EQ(a->tun_type, IFF_TAP);
    EXPECT_TRUE(is_tap(*a) && is_tap(*b));
    EXPECT_FALSE(is_multi_queue_tap(*a));
    EXPECT_TRUE(is_multi_queue_tap(*b));
    EXPECT_FALSE(is_tap(*veth));
    EXPECT_FALSE(is_multi_queue_tap(*veth));
    const std::string details = host_->run({"ip", "-d", "link", "show", "tq1"});
    EXPECT_TRUE(contains(details, "multi_queue") && contains(details, "vnet_hdr on") && contains(details, "persist on"))
        << details;
    EXPECT_EQ(create_tap("tq0"), single) << "a tap of the same kind is adopted";
    try {
        create_tap("tq0", true);
        ADD_FAILURE() << "a single-queue tap cannot be opened multi-queue";
    } catch (const IoError& e) {
        EXPECT_TRUE(
            contains(e.what(), "creating tap tq0 (an interface of that name exists and is not a multi-queue tap)"))
            << e.what();
    }
}

TEST_F(Netlink, PuntPairIsCreatedConfiguredAdoptedReplacedAndDeleted) {
    Netns& tenant = topo_.add_namespace("tenant");
    topo_.add_veth(*host_, "tap0", tenant, "eth0");
    NetnsGuard in_host(*host_);
    const std::uint32_t tap = if_nametoindex("tap0");
    ASSERT_NE(tap, 0u);
    EXPECT_EQ(tx_checksum_offload("tap0"), true) << "tenant ports stay at the kernel's defaults";
    {
        const PuntPair pair(tap, 1450);
        const PuntDevices& d = pair.devices();
        EXPECT_EQ(d.visible, "anp" + std::to_string(tap));
        EXPECT_EQ(d.steering, "anx" + std::to_string(tap));
        for (const auto& [name, ifindex] : {std::pair{d.visible, d.visible_ifindex}, {d.steering, d.steering_ifindex}}) {
            const auto info = find_interface(name);
            ASSERT_TRUE(info.has_value()) << name;
            EXPECT_EQ(info->ifindex, ifindex) << name;
            EXPECT_TRUE(info->up) << name;
            EXPECT_EQ(info->mtu, 1450u) << name;
            EXPECT_EQ(info->driver, "veth") << name;
            EXPECT_TRUE(interface_ipv4_addresses(ifindex).empty()) << name;
            std::ifstream ipv6("/proc/sys/net/ipv6/conf/" + name + "/disable_ipv6");
            std::string value;
            if (ipv6 >> value) {
                EXPECT_EQ(value, "1") << name;
            }
        }
        EXPECT_EQ(tx_checksum_offload(d.visible), false);
        EXPECT_EQ(tx_checksum_offload(d.steering), true);

        EXPECT_FALSE(pair.adopted());

        // A daemon restarted after kill -9 adopts the pair its predecessor left (the tenant's
        // tc program keeps punting into it), unless its MTU is not the one wanted any more.
        const PuntPair adopted(tap, 1450);
        EXPECT_TRUE(adopted.adopted());
        EXPECT_EQ(adopted.devices().visible_ifindex, d.visible_ifindex);
        EXPECT_EQ(adopted.devices().steering_ifindex, d.steering_ifindex);
        const PuntPair replaced(tap, 1500);
        EXPECT_FALSE(replaced.adopted());
        EXPECT_NE(replaced.devices().visible_ifindex, d.visible_ifindex);
        EXPECT_EQ(find_interface(d.visible)->mtu, 1500u);
        EXPECT_EQ(tx_checksum_offload(d.visible), false);
    }
    EXPECT_FALSE(find_interface("anp" + std::to_string(tap)).has_value());
    EXPECT_FALSE(find_interface("anx" + std::to_string(tap)).has_value());
    EXPECT_FALSE(delete_link("anp" + std::to_string(tap))) << "nothing left to delete";
}

}  // namespace
}  // namespace andromeda::io
