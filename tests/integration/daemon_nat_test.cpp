// andromedad as a NAT gateway, end to end: tenants reach servers in an "outside" namespace behind
// the gateway node's uplink and see only the NAT address; a port forward reaches a tenant from
// outside; frag-needed from a narrower outside link is translated back to the tenant.
//
//   t10 ns: eth0 10.0.0.10 ── host1 ns [node1]: tap-blue-10, eth1 192.168.1.1 ─┐ bridge
//   t20 ns: eth0 10.0.0.20 ── host2 ns [gw]:    tap-blue-20, eth1 192.168.1.2 ─┘
//                                                eth2 203.0.113.2 (+ NAT address .10) ── outside ns: eth0 203.0.113.1
//   (NatGatewayBehindNarrowLink: outside ns routes on to far ns 198.51.100.2 over a 1200-byte link)
#include "io/plan/map_ids.hpp"
#include "long_ping.hpp"
#include "nat_fixture.hpp"

namespace andromeda::testing {
namespace {

TEST_F(NatGateway, TenantReachesTheOutsideAsTheNatAddress) {
    ASSERT_NO_FATAL_FAILURE(start_and_reach_outside({tenant_}));

    Process& server = topo_.spawn(*outside_, {"nc", "-l", "-n", "-v", "8080"});
    ASSERT_TRUE(eventually([&] { return contains(outside_->try_run({"ss", "-Hltn", "sport = :8080"}).output, "8080"); }, 5s));
    const auto client = tenant_->try_run({"sh", "-c", "echo hello-from-the-vpc | nc -N 203.0.113.1 8080"}, 10s);
    EXPECT_TRUE(client.ok()) << client.output << logs();
    ASSERT_NE(server.wait(10s), -1);
    EXPECT_TRUE(contains(server.output(), "hello-from-the-vpc")) << server.output();
    EXPECT_TRUE(contains(server.output(), "203.0.113.10")) << "the server must see the NAT address: " << server.output();
    EXPECT_FALSE(contains(server.output(), "10.0.0.10")) << server.output();

    const auto flows = ctl_json(1, "conntrack");
    EXPECT_GE(flows.value("count", 0), 2) << flows.dump(2);  // the echo and the TCP connection
    const auto stats = ctl_json(1, "stats");
    EXPECT_GT(stats.value(nlohmann::json::json_pointer("/nat/translated_outbound"), std::uint64_t{0}), 0u);
    EXPECT_GT(stats.value(nlohmann::json::json_pointer("/nat/translated_inbound"), std::uint64_t{0}), 0u);
    EXPECT_GT(stats.value(nlohmann::json::json_pointer("/xdp/redirect_uplink"), std::uint64_t{0}), 0u);
    // node1 sent t10's traffic to the NAT node: its fast path in the kernel, else its pipeline.
    EXPECT_GT(stat(ctl_json(0, "stats"), fast_path() ? "/fastpath/to_nat_node_packets" : "/dataplane/sent_to_nat_gateway"),
              0u);
}


// Both tenants (one behind node1, one on the gateway node) fetch a file over TCP from a server
// outside and query a UDP service there: the bytes arrive intact, and the servers see only
// 203.0.113.10. The tenants' interfaces are 1500 bytes, so the server's segments to t10 are too
// big for the overlay: PMTUD towards the outside must work for the fetch to complete.
TEST_F(NatGateway, TenantsFetchOverTcpAndQueryUdpAsTheNatAddress) {
    ASSERT_NO_FATAL_FAILURE(start_and_reach_outside({tenant_, tenant20_}));

    InetSocket tcp_server(*outside_, SOCK_STREAM, "203.0.113.1", 8000);
    tcp_server.listen_now();
    InetSocket udp_server(*outside_, SOCK_DGRAM, "203.0.113.1", 5300);
    const auto file = random_bytes(2 << 20, 7);  // 2 MiB: full-sized segments towards the tenant

    for (Netns* t : {tenant_, tenant20_}) {
        SCOPED_TRACE(t->name());
        Connection c = connect_through(*t, tcp_server, "203.0.113.1", 8000);
        ASSERT_TRUE(c.established()) << logs();
        EXPECT_EQ(c.peer.ip, "203.0.113.10") << "the server must see the NAT address";
        const Transfer fetched = transfer(c.served, c.client, file, 20s);
        EXPECT_EQ(fetched.received.size(), file.size()) << logs();
        EXPECT_TRUE(fetched.received == file) << "the fetched file differs";

        InetSocket resolver(*t, SOCK_DGRAM, "0.0.0.0", 0);
        ASSERT_TRUE(resolver.send_datagram("query " + t->name(), "203.0.113.1", 5300));
        std::string query;
        InetAddress from;
        ASSERT_TRUE(udp_server.receive_datagram(query, from, 10s)) << logs();
        EXPECT_EQ(query, "query " + t->name());
        EXPECT_EQ(from.ip, "203.0.113.10") << "the UDP service must see the NAT address";
        ASSERT_TRUE(udp_server.send_datagram("answer " + t->name(), from.ip, from.port));
        std::string answer;
        InetAddress answered_by;
        ASSERT_TRUE(resolver.receive_datagram(answer, answered_by, 10s)) << logs();
        EXPECT_EQ(answer, "answer " + t->name());
        EXPECT_EQ(answered_by.ip, "203.0.113.1");
        EXPECT_EQ(answered_by.port, 5300);
    }
    const auto stats = ctl_json(1, "stats");
    EXPECT_GT(stat(stats, "/nat/translated_outbound"), 0u) << stats.dump(2);
    EXPECT_GT(stat(stats, "/nat/translated_inbound"), 0u) << stats.dump(2);
    // The server's full-sized segments to t10 do not fit the overlay: the gateway answered with
    // Fragmentation Needed through the NAT, and the server's kernel took it.
    EXPECT_GT(stat(stats, "/dataplane/frag_needed_sent"), 0u) << stats.dump(2);
    EXPECT_GT(stat(stats, "/nat/icmp_errors_translated"), 0u) << stats.dump(2);
    EXPECT_TRUE(contains(outside_->run({"ip", "route", "get", "203.0.113.10"}), "mtu 1450"))
        << outside_->run({"ip", "route", "get", "203.0.113.10"});
}

// The port forward 203.0.113.10:8080/tcp -> 10.0.0.10:80: a client outside reaches the tenant's
// service through the NAT address, data flows both ways, and the tenant sees the client's real
// address and port.
TEST_F(NatGateway, PortForwardReachesATenantServiceFromOutside) {
    ASSERT_NO_FATAL_FAILURE(start_and_reach_outside({tenant_}));
    InetSocket service(*tenant_, SOCK_STREAM, "10.0.0.10", 80);
    service.listen_now();

    InetSocket client(*outside_, SOCK_STREAM);
    ASSERT_TRUE(client.connect_to("203.0.113.10", 8080, 10s)) << logs();
    InetAddress peer;
    InetSocket served = service.accept_one(10s, &peer);
    ASSERT_TRUE(served.valid());
    EXPECT_EQ(peer.ip, "203.0.113.1") << "the tenant sees the outside client's own address";
    EXPECT_EQ(peer.port, client.local().port);

    ASSERT_TRUE(client.send_all("GET / from outside\n", 5s));
    client.shutdown_write();
    EXPECT_EQ(served.receive_text(1024, 10s), "GET / from outside\n") << logs();
    ASSERT_TRUE(served.send_all("200 from 10.0.0.10\n", 5s));
    served.shutdown_write();
    EXPECT_EQ(client.receive_text(1024, 10s), "200 from 10.0.0.10\n") << logs();

    const auto flows = ctl_json(1, "conntrack");
    EXPECT_TRUE(contains(flows.dump(), "10.0.0.10")) << flows.dump(2);
    // A port that is not forwarded stays closed: no flow, nothing reaches a tenant.
    InetSocket stranger(*outside_, SOCK_STREAM);
    EXPECT_FALSE(stranger.connect_to("203.0.113.10", 8081, 1s));
    EXPECT_GT(stat(ctl_json(1, "stats"), "/nat/drop_no_flow"), 0u);
}

// Two tenants bind the same source port (inside the NAT's port range) and talk to the same
// server over TCP and UDP: both work, each gets its own answers, and the server sees two
// different NAT ports on 203.0.113.10.
TEST_F(NatGateway, TwoTenantsWithTheSameSourcePortGetTwoNatPorts) {
    ASSERT_NO_FATAL_FAILURE(start_and_reach_outside({tenant_, tenant20_}));
    constexpr std::uint16_t kSourcePort = 25000;

    InetSocket tcp_server(*outside_, SOCK_STREAM, "203.0.113.1", 8000);
    tcp_server.listen_now();
    InetSocket clients[2] = {InetSocket(*tenant_, SOCK_STREAM, "0.0.0.0", kSourcePort),
                             InetSocket(*tenant20_, SOCK_STREAM, "0.0.0.0", kSourcePort)};
    const std::string names[2] = {"t10", "t20"};
    for (int i = 0; i < 2; ++i) {
        ASSERT_TRUE(clients[i].connect_to("203.0.113.1", 8000, 10s)) << names[i] << "\n" << logs();
        ASSERT_TRUE(clients[i].send_all(names[i], 5s));
        clients[i].shutdown_write();
    }
    std::uint16_t tcp_ports[2] = {0, 0};
    for (auto& port : tcp_ports) {
        InetAddress peer;
        InetSocket served = tcp_server.accept_one(10s, &peer);
        ASSERT_TRUE(served.valid()) << logs();
        EXPECT_EQ(peer.ip, "203.0.113.10");
        port = peer.port;
        const std::string name = served.receive_text(64, 10s);
        ASSERT_TRUE(served.send_all("hello " + name, 5s));
    }
    EXPECT_NE(tcp_ports[0], tcp_ports[1]) << "two tenants, one NAT port";
    for (int i = 0; i < 2; ++i) EXPECT_EQ(clients[i].receive_text(64, 10s), "hello " + names[i]) << logs();

    InetSocket udp_server(*outside_, SOCK_DGRAM, "203.0.113.1", 5300);
    InetSocket resolvers[2] = {InetSocket(*tenant_, SOCK_DGRAM, "0.0.0.0", kSourcePort),
                               InetSocket(*tenant20_, SOCK_DGRAM, "0.0.0.0", kSourcePort)};
    std::uint16_t udp_ports[2] = {0, 0};
    for (int i = 0; i < 2; ++i) {
        ASSERT_TRUE(resolvers[i].send_datagram(names[i], "203.0.113.1", 5300));
        std::string query;
        InetAddress from;
        ASSERT_TRUE(udp_server.receive_datagram(query, from, 10s)) << logs();
        EXPECT_EQ(query, names[i]);
        EXPECT_EQ(from.ip, "203.0.113.10");
        udp_ports[i] = from.port;
        ASSERT_TRUE(udp_server.send_datagram("answer " + query, from.ip, from.port));
    }
    EXPECT_NE(udp_ports[0], udp_ports[1]);
    for (int i = 0; i < 2; ++i) {
        std::string answer;
        InetAddress from;
        ASSERT_TRUE(resolvers[i].receive_datagram(answer, from, 10s)) << names[i] << "\n" << logs();
        EXPECT_EQ(answer, "answer " + names[i]);
    }
    // The first tenant to use the port keeps it (port preservation); the other gets another.
    EXPECT_TRUE(tcp_ports[0] == kSourcePort || tcp_ports[1] == kSourcePort) << tcp_ports[0] << " " << tcp_ports[1];
    EXPECT_GE(stat(ctl_json(1, "stats"), "/nat/ports_preserved"), 2u);
}

// Issue 32: one tenant opening new NAT flows as fast as a socket sends (UDP to a new outside
// port each time: each datagram a new flow at the gateway) gets its budget ([node.uplink]
// new_flows_per_tenant, at its default of 1000/s and 2000 at once) and no more; the rest are
// dropped at the gateway as tenant_flow_rate_limited. Meanwhile the other tenant opens a TCP
// connection through the NAT within kBound, and the flooder's flow already open keeps working.
TEST_F(NatGateway, ATenantOpeningFlowsAsFastAsItCanGetsItsBudgetAndTheOtherOpensItsOwn) {
    ASSERT_NO_FATAL_FAILURE(start_and_reach_outside({tenant_, tenant20_}));
    constexpr auto kBound = 5s;  // generous on a 2-core box with one core spent on the flood
    InetSocket listener = outside_listener();
    Connection before = connect_through(*tenant_, listener, "203.0.113.1", 8000);
    ASSERT_TRUE(before.established()) << logs();
    const nlohmann::json stats_before = ctl_json(1, "stats");

    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> sent{0};
    InetSocket flood_socket(*tenant_, SOCK_DGRAM, "0.0.0.0", 0);
    const auto started = std::chrono::steady_clock::now();
    std::thread flood([&] {
        const char payload[32] = {};
        for (std::uint32_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
            const sockaddr_in to = make_sockaddr("203.0.113.1", static_cast<std::uint16_t>(10000 + i % 50000));
            if (sendto(flood_socket.fd(), payload, sizeof payload, 0, reinterpret_cast<const sockaddr*>(&to), sizeof to) > 0)
                sent.fetch_add(1, std::memory_order_relaxed);
        }
    });
    std::this_thread::sleep_for(2s);  // past the flooder's burst

    Connection neighbour = connect_through(*tenant20_, listener, "203.0.113.1", 8000, kBound);
    // The flooder's connection opened before the flood carries data both ways.
    const bool old_flow_works = before.client.send_all("still here\n", 5s) && before.served.receive_text(11, 5s) == "still here\n";
    stop = true;
    flood.join();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const StatsDelta delta{stats_before, ctl_json(1, "stats")};

    EXPECT_TRUE(neighbour.established())
        << "the other tenant's TCP connection through the NAT within " << kBound.count() << " s\n" << logs();
    EXPECT_EQ(neighbour.peer.ip, "203.0.113.10");
    EXPECT_TRUE(old_flow_works) << "an established flow of the flooding tenant";
    const std::uint64_t limited = delta("/nat/drop_tenant_flow_rate_limited");
    const std::uint64_t created = delta("/nat/flows_created");
    std::cout << "flood: " << sent.load() << " datagrams in " << seconds << " s; gateway: " << created
              << " flows created, " << limited << " refused as tenant_flow_rate_limited\n";
    EXPECT_GT(sent.load(), 5000u) << "the flood must outrun the budget for the test to mean anything";
    EXPECT_GT(limited, 0u) << delta.after.dump(2);
    // Its budget (2000 at once, 1000/s) and the neighbour's connection; half a second more for
    // datagrams still in flight when the clock was read.
    EXPECT_LE(created, 2000 + static_cast<std::uint64_t>(1000 * (seconds + 0.5))) << delta.after.dump(2);
}


// The outside network is narrower than the overlay: the server sits behind a router whose link
// to it has a 1200-byte MTU. The router's frag-needed, addressed to the NAT address, is
// translated back to the tenant (ping sees it; a bulk TCP upload completes on the learned MTU).
class NatGatewayBehindNarrowLink : public NatGateway {
protected:
    void SetUp() override {
        NatGateway::SetUp();
        if (IsSkipped()) return;
        far_ = &topo_.add_namespace("far");
        VethOptions narrow;
        narrow.mtu = 1200;
        topo_.add_veth(*outside_, "eth1", *far_, "eth0", narrow);
        topo_.add_address(*outside_, "eth1", "198.51.100.1/24");
        topo_.add_address(*far_, "eth0", "198.51.100.2/24");
        far_->run({"ip", "route", "add", "default", "via", "198.51.100.1"});
        outside_->run({"sysctl", "-q", "-w", "net.ipv4.ip_forward=1"});
    }

    Netns* far_ = nullptr;
};

TEST_F(NatGatewayBehindNarrowLink, FragNeededFromTheOutsideReachesTheTenant) {
    start();
    ASSERT_TRUE(eventually([&] { return tenant_->try_run({"ping", "-c", "1", "-W", "1", "198.51.100.2"}, 5s).ok(); }, 10s))
        << logs();
    const auto before = stat(ctl_json(1, "stats"), "/nat/icmp_errors_translated");

    // 1328 bytes: fits the overlay (1450), not the far link (1200).
    const auto ping = tenant_->try_run({"ping", "-n", "-M", "do", "-s", "1300", "-c", "1", "-W", "2", "198.51.100.2"}, 10s);
    EXPECT_TRUE(contains(ping.output, "From 203.0.113.1 icmp_seq=1 Frag needed and DF set (mtu = 1200)"))
        << ping.output << logs();
    EXPECT_GT(stat(ctl_json(1, "stats"), "/nat/icmp_errors_translated"), before);

    // A bulk upload from the tenant (interface MTU 1500, so it first tries 1450, then 1200).
    InetSocket server(*far_, SOCK_STREAM, "198.51.100.2", 9000);
    server.listen_now();
    InetSocket client(*tenant_, SOCK_STREAM);
    ASSERT_TRUE(client.connect_to("198.51.100.2", 9000, 10s)) << logs();
    InetAddress peer;
    InetSocket served = server.accept_one(10s, &peer);
    ASSERT_TRUE(served.valid());
    EXPECT_EQ(peer.ip, "203.0.113.10");
    const auto file = random_bytes(4 << 20, 11);
    const Transfer uploaded = transfer(client, served, file, 25s);
    EXPECT_EQ(uploaded.received.size(), file.size()) << logs();
    EXPECT_TRUE(uploaded.received == file) << "the upload differs";
    EXPECT_TRUE(contains(tenant_->run({"ip", "route", "get", "198.51.100.2"}), "mtu 1200"))
        << tenant_->run({"ip", "route", "get", "198.51.100.2"});
}
// The datapath outlives the daemon: node1's andromedad is killed (SIGKILL: nothing cleaned up)
// in the middle of a 5-second ping -i 0.01 from t10 to t20 across the overlay, and a second
// andromedad is started on the same config while the ping still runs. The fast path it left
// attached keeps forwarding, the new daemon adopts its maps without a flush, and the ping loses
// nothing. The new daemon then serves what only the pipeline does: a new ARP resolution and a
// NAT flow. Runs the fast path on both registrations (what it proves is the fast path's).
class NatGatewayKilled : public NatGateway {
protected:
    bool fast_path() const override { return true; }
};

TEST_F(NatGatewayKilled, Sigkill9MidPingLosesNothingAndTheNextDaemonAdoptsTheDatapath) {
    start();
    ASSERT_TRUE(eventually([&] { return tenant_->try_run({"ping", "-c", "1", "-W", "1", "10.0.0.20"}, 5s).ok(); }, 10s))
        << logs();
    const auto encapsulated = [&] {
        return stat(ctl_json(0, "stats"), "/fastpath/encap_packets");
    };
    Process& ping = start_long_ping(topo_, *tenant_, "10.0.0.20");
    const std::uint64_t before = encapsulated();
    ASSERT_TRUE(eventually([&] { return encapsulated() > before + 50; }, 5s)) << "the ping is under way";

    Process& old = *daemons_[0];
    ASSERT_EQ(kill(old.pid(), SIGKILL), 0);
    ASSERT_NE(old.wait(10s), -1);
    std::this_thread::sleep_for(1500ms);  // 150 pings with no andromedad on node1 (not an assertion)
    EXPECT_TRUE(ping.running()) << "the ping ended before the restart: the test proves less than it says";

    daemons_[0] = &topo_.spawn(*host1_, {kDaemon, "-c", configs_[0]});
    ASSERT_TRUE(daemons_[0]->wait_for_output(" ready: ", 20s)) << daemons_[0]->output();
    const std::string restarted = daemons_[0]->output();
    EXPECT_TRUE(contains(restarted, "adopted " + std::to_string(io::kMapCount) + " pinned maps")) << restarted;
    EXPECT_TRUE(contains(restarted, "fabric +0 -0")) << "the adopted maps were not rewritten:\n" << restarted;
    // tcx (kernels from 6.6): the pinned links were kept and their programs swapped in place.
    if (contains(restarted, "(tcx")) {
        EXPECT_TRUE(contains(restarted, "tap-blue-10: tc ingress andromeda_tc_tenant (tcx, adopted)")) << restarted;
    }
    std::this_thread::sleep_for(500ms);  // pings through the adopting daemon's datapath
    const PingTally tally = stop_long_ping(ping);
    EXPECT_TRUE(tally.stopped) << "the restart must happen while the ping runs: " << tally.output;
    EXPECT_GT(tally.answered_through, 150u) << tally.output;
    EXPECT_EQ(tally.first_lost, 0u) << "an echo lost across the kill and the restart\n" << tally.output << logs();
    // The adopted counters went on counting through the outage: every echo answered was
    // encapsulated by the fast path (the counter counts from node1's first daemon on), those sent
    // while node1 had no daemon included. The daemon publishes its counters periodically: wait
    // for the last ones.
    EXPECT_TRUE(eventually([&] { return encapsulated() >= tally.answered_through; }, 5s))
        << "the pings crossed the fast path while node1 had no daemon: " << encapsulated() << " encapsulated, "
        << tally.answered_through << " echoes answered";

    // What only the pipeline does, served by the new daemon: ARP for a neighbour the tenant has
    // forgotten (answered by the gateway), and a NAT flow to the outside.
    tenant_->run({"ip", "neigh", "flush", "dev", "eth0"});
    EXPECT_TRUE(eventually([&] { return tenant_->try_run({"ping", "-c", "1", "-W", "1", "10.0.0.20"}, 5s).ok(); }, 5s))
        << logs();
    EXPECT_GE(stat(ctl_json(0, "stats"), "/dataplane/arp_replies"), 1u);
    InetSocket server(*outside_, SOCK_STREAM, "203.0.113.1", 8001);
    server.listen_now();
    InetSocket client(*tenant_, SOCK_STREAM);
    ASSERT_TRUE(client.connect_to("203.0.113.1", 8001, 10s)) << logs();
    InetAddress peer;
    InetSocket served = server.accept_one(10s, &peer);
    ASSERT_TRUE(served.valid());
    EXPECT_EQ(peer.ip, "203.0.113.10") << "the outside sees the NAT address";
    const std::string hello = "after the restart";
    ASSERT_TRUE(client.send_all(hello.data(), hello.size(), 5s));
    client.shutdown_write();
    const auto got = served.receive_all(hello.size() + 1, 5s);
    EXPECT_EQ(std::string(got.begin(), got.end()), hello);
}

}  // namespace
}  // namespace andromeda::testing
