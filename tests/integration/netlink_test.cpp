// Interface and neighbour lookups over netlink/ethtool inside namespaces (never
// /sys/class/net): names, MACs, MTU, queues, addresses, next-hop MACs resolved by ARP, and the
// TX checksum offload check for tenant veths.
#include <gtest/gtest.h>
#include <net/if.h>

#include <chrono>

#include "io/interfaces.hpp"
#include "io/io_error.hpp"
#include "io/neighbour.hpp"
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

TEST_F(Netlink, WarnsWhenTheTenantSideOfAVethOffloadsTxChecksums) {
    Netns& tenant = topo_.add_namespace("tenant");
    VethOptions offloading;
    offloading.tx_checksum_offload = true;  // the kernel's default for veth
    topo_.add_veth(*host_, "tap0", tenant, "eth0", offloading);
    NetnsGuard in_host(*host_);
    EXPECT_EQ(tx_checksum_offload("tap0"), true);
    EXPECT_EQ(veth_peer_tx_checksum_offload("tap0"), true) << "found the peer in the tenant's namespace";
    const std::string warning = tenant_checksum_warning("tap0");
    EXPECT_TRUE(contains(warning, "ethtool -K <tenant interface> tx off")) << warning;

    tenant.run({"ethtool", "-K", "eth0", "tx", "off"});
    EXPECT_EQ(veth_peer_tx_checksum_offload("tap0"), false);
    EXPECT_TRUE(tenant_checksum_warning("tap0").empty());
    EXPECT_EQ(veth_peer_tx_checksum_offload("lo"), std::nullopt) << "not a veth";
}

}  // namespace
}  // namespace andromeda::io
