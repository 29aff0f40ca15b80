// An underlay narrower than underlay_mtu, end to end: node1 and node2 are routed through two
// router namespaces whose link between them carries 1400 bytes, while both nodes keep
// underlay_mtu 1500 (inner MTU 1450). The routers' kernels answer the nodes' DF outer packets
// with ICMP fragmentation needed (mtu 1400); the daemon learns it for that peer, and the tenants
// then get PMTUD answers from the gateway with 1400 less the overlay (1350), on whichever path
// (the fast path's andromeda_peer_mtu, or the pipeline's own check) carries the traffic.
//
//   t10 ─ node1 eth1 192.168.1.1 ─ r1 ══ 1400 ══ r2 ─ 192.168.2.2 eth1 node2 ─ t20
//
// NarrowIpv6Underlay is the same over an IPv6 underlay (fd00:1::1 and fd00:2::2, the routers'
// link fd00:99::/64): the routers answer with ICMPv6 Packet Too Big (RFC 8201), the pipeline
// (which carries an IPv6 underlay) learns 1400, and the tenants get 1400 less 70 (1330).
#include <gtest/gtest.h>

#include <random>
#include <string_view>
#include <thread>
#include <tuple>

#include "daemon_fixture.hpp"
#include "inet_sockets.hpp"

namespace andromeda::testing {
namespace {

class NarrowUnderlay : public TwoNodes {
protected:
    void SetUp() override { build(false); }

    // The routed underlay of the header's picture, over IPv4 or (`ipv6`) IPv6.
    void build(bool ipv6) {
        ANDROMEDA_REQUIRE_ROOT();
        sweep_stale_control_sockets();
        io::testing::sweep_stale_test_pins();
        Netns& h1 = topo_.add_namespace("host1");
        Netns& h2 = topo_.add_namespace("host2");
        Netns& r1 = topo_.add_namespace("r1");
        Netns& r2 = topo_.add_namespace("r2");
        VethOptions narrow;
        narrow.mtu = 1400;
        topo_.add_veth(h1, "eth1", r1, "a1", {});
        topo_.add_veth(r1, "n1", r2, "n2", narrow);
        topo_.add_veth(r2, "b2", h2, "eth1", {});
        // {namespace, interface, IPv4 address, IPv6 address}
        const std::tuple<Netns*, const char*, const char*, const char*> addresses[] = {
            {&h1, "eth1", "192.168.1.1/24", "fd00:1::1/64"},  {&r1, "a1", "192.168.1.254/24", "fd00:1::fe/64"},
            {&r1, "n1", "10.99.0.1/30", "fd00:99::1/64"},     {&r2, "n2", "10.99.0.2/30", "fd00:99::2/64"},
            {&r2, "b2", "192.168.2.254/24", "fd00:2::fe/64"}, {&h2, "eth1", "192.168.2.2/24", "fd00:2::2/64"}};
        for (const auto& [ns, ifname, v4, v6] : addresses) {
            if (!ipv6) {
                topo_.add_address(*ns, ifname, v4);
                continue;
            }
            const std::string conf = std::string("net.ipv6.conf.") + ifname;
            ns->run({"sysctl", "-qw", conf + ".disable_ipv6=0", conf + ".accept_dad=0"});
            ns->run({"ip", "-6", "addr", "add", v6, "dev", ifname, "nodad"});
        }
        const std::string family = ipv6 ? "-6" : "-4";
        const auto route = [&](Netns& ns, const char* v4, const char* v6) {
            const std::string_view r = ipv6 ? v6 : v4;
            const auto space = r.find(' ');
            ns.run({"ip", family, "route", "add", std::string(r.substr(0, space)), "via", std::string(r.substr(space + 1))});
        };
        route(h1, "192.168.2.0/24 192.168.1.254", "fd00:2::/64 fd00:1::fe");
        route(h2, "192.168.1.0/24 192.168.2.254", "fd00:1::/64 fd00:2::fe");
        route(r1, "192.168.2.0/24 10.99.0.2", "fd00:2::/64 fd00:99::2");
        route(r2, "192.168.1.0/24 10.99.0.1", "fd00:1::/64 fd00:99::1");
        for (Netns* r : {&r1, &r2}) {
            r->run({"sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1"});
            // Every too-big packet answered.
            r->run({"sysctl", "-qw", "net.ipv4.icmp_ratelimit=0", "net.ipv6.icmp.ratelimit=0"});
        }
        Netns* hosts[] = {&h1, &h2};
        for (int i = 0; i < 2; ++i) {
            nodes_[i].name = "t" + std::to_string(getpid()) + "-node" + std::to_string(i + 1);
            nodes_[i].host = hosts[i];
        }
        for (int i = 0; i < 2; ++i) {
            std::string text = base_config(i);
            replace_all(text, "\"192.168.1.1\"", ipv6 ? "\"fd00:1::1\"" : "\"192.168.1.1\"");
            replace_all(text, "\"192.168.1.2\"", ipv6 ? "\"fd00:2::2\"" : "\"192.168.2.2\"");
            nodes_[i].config = write_config(i, text);
        }
        t10_ = &add_tenant(h1, "tap-blue-10", "10");
        t20_ = &add_tenant(h2, "tap-blue-20", "20");
        t30_ = &add_tenant(h2, "tap-blue-30", "30");
    }

    void start_and_connect() {
        start_both();
        ASSERT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.20"); }, 10s)) << logs();
    }

    // What the family changes: node2's address, the overlay's bytes (50, or 70 over IPv6), what
    // the routers say, and whether the kernel fast path carries the traffic (IPv4's only).
    struct Family {
        std::string peer;         // node2's underlay address
        std::uint32_t overhead;   // 1400 less this is what the tenants are told
        std::string report;       // how the daemon's log names the routers' message
        bool kernel_fast_path;    // the fast path carries it (with its registration's path on)
    };
    static Family ipv4() { return {"192.168.2.2", 50, "ICMP fragmentation needed", true}; }
    static Family ipv6() { return {"fd00:2::2", 70, "ICMPv6 Packet Too Big", false}; }

    // A ping as large as the VPC's MTU (1500 less the overhead) with DF: sent, lost on the narrow
    // link, whose router reports it to node1; node1 learns 1400 for node2, and the next such ping
    // gets "Frag needed" with 1400 less the overhead from the gateway; the largest that fits goes
    // through.
    void dont_fragment_ping_learns_the_path(const Family& f) {
        start_and_connect();
        const std::uint32_t told = 1400 - f.overhead;
        const std::string full = std::to_string(1500 - f.overhead - 28);
        const auto lost = t10_->try_run({"ping", "-n", "-M", "do", "-s", full, "-c", "1", "-W", "1", "10.0.0.20"}, 10s);
        EXPECT_FALSE(lost.ok()) << lost.output;
        ASSERT_TRUE(eventually([&] { return counter(0, "dataplane", "underlay_pmtu_learned") >= 1; }, 5s)) << logs();
        EXPECT_EQ(counter(0, "dataplane", "underlay_pmtu_ignored"), 0u);
        // The fabric view shows the peer's path MTU (and the daemon's tick has put it in the map).
        ASSERT_TRUE(eventually([&] { return contains(ctl(0, {"fabric"}).output, "1400 (learned"); }, 5s))
            << ctl(0, {"fabric"}).output;
        EXPECT_TRUE(eventually([&] {
            return contains(nodes_[0].daemon->output(), "underlay path to " + f.peer + " carries at most 1400 bytes (" +
                                                            f.report + "; underlay_mtu 1500)");
        }, 3s)) << logs();
        std::this_thread::sleep_for(1200ms);  // one tick: the fast path's map written
        const auto answered =
            t10_->try_run({"ping", "-n", "-M", "do", "-s", full, "-c", "1", "-W", "2", "10.0.0.20"}, 10s);
        EXPECT_TRUE(contains(answered.output, "From 10.0.0.1 icmp_seq=1 Frag needed and DF set (mtu = " +
                                                  std::to_string(told) + ")"))
            << answered.output << logs();
        EXPECT_TRUE(contains(t10_->run({"ip", "route", "get", "10.0.0.20"}), "mtu " + std::to_string(told)));
        // On the fast path the kernel's encap sized it by andromeda_peer_mtu and left it to the pipeline.
        if (fast_path() && f.kernel_fast_path) {
            EXPECT_GE(counter(0, "fastpath", "punt_too_big"), 1u);
        }
        const std::string fitting = std::to_string(told - 28);
        const auto fits = t10_->try_run({"ping", "-n", "-M", "do", "-s", fitting, "-c", "1", "-W", "2", "10.0.0.20"}, 10s);
        EXPECT_TRUE(fits.ok()) << fits.output << logs();
        const auto json = ctl_json(0, "fabric");
        bool shown = false;
        for (const auto& n : json["nodes"])
            if (n.value("address", "") == f.peer) shown = n.value("path_mtu", 0u) == 1400u;
        EXPECT_TRUE(shown) << json.dump();
    }

    // A bulk upload from a tenant at the kernel's default offloads (TSO: GSO packets on the fast
    // path): the first full-sized segments die on the narrow link, the daemon learns 1400, the
    // tenant learns 1400 less the overhead from the gateway, and 10 MB arrive byte-exact.
    void bulk_tcp_crosses_the_narrow_path(const Family& f) {
        start_and_connect();
        const auto file = random_bytes(10u << 20, 32);
        InetSocket listener(*t20_, SOCK_STREAM, "10.0.0.20", 5001);
        listener.listen_now();
        Connection c = connect_through(*t10_, listener, "10.0.0.20", 5001);
        ASSERT_TRUE(c.established()) << logs();
        const Transfer moved = transfer(c.client, c.served, file, 40s);
        EXPECT_TRUE(moved.sent);
        ASSERT_EQ(moved.received.size(), file.size()) << logs();
        EXPECT_TRUE(moved.received == file) << "the transfer is not byte-exact";
        EXPECT_GE(counter(0, "dataplane", "underlay_pmtu_learned"), 1u);
        EXPECT_GT(counter(0, "dataplane", "frag_needed_sent"), 0u);
        EXPECT_TRUE(contains(t10_->run({"ip", "route", "get", "10.0.0.20"}), "mtu " + std::to_string(1400 - f.overhead)));
        if (fast_path() && f.kernel_fast_path) {
            EXPECT_GE(counter(0, "fastpath", "punt_too_big"), 1u);
            EXPECT_GT(counter(0, "fastpath", "encap_gso_packets"), 0u);  // the rest went whole through the kernel
        }
    }
};

// 1450 bytes fit the configured underlay (1500 less 50): learned, then told 1350.
TEST_F(NarrowUnderlay, DontFragmentPingLearnsThePathAndGetsFragNeededWithTheNarrowerMtu) {
    dont_fragment_ping_learns_the_path(ipv4());
}

TEST_F(NarrowUnderlay, BulkTcpCrossesTheNarrowPathByteExact) { bulk_tcp_crosses_the_narrow_path(ipv4()); }

class NarrowIpv6Underlay : public NarrowUnderlay {
protected:
    void SetUp() override { build(true); }
};

// Over an IPv6 underlay the VPC's MTU is 1500 - 70 = 1430: a 1430-byte DF ping leaves as a
// 1500-byte outer packet, r1 answers node1 with Packet Too Big (mtu 1400), the pipeline (which
// carries an IPv6 underlay) learns it for fd00:2::2, and the tenant is told 1330.
TEST_F(NarrowIpv6Underlay, DontFragmentPingLearnsThePathFromPacketTooBigAndGetsFragNeededWith1330) {
    dont_fragment_ping_learns_the_path(ipv6());
}

TEST_F(NarrowIpv6Underlay, BulkTcpCrossesTheNarrowPathByteExact) { bulk_tcp_crosses_the_narrow_path(ipv6()); }

}  // namespace
}  // namespace andromeda::testing
