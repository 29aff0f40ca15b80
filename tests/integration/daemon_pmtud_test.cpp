// Path MTU discovery through the overlay, end to end, with real tenants' kernels and tools
// (docs/pipeline.md, PMTUD): on a 1500-byte underlay the inner MTU is 1450, tenants keep
// 1500-byte interfaces, and the distributed gateway 10.0.0.1 answers too-big DF packets with
// Fragmentation Needed (mtu 1450). Topology: daemon_fixture.hpp's TwoNodes (t10 on node1, t20
// on node2, configs/node<N>.toml).
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "daemon_fixture.hpp"
#include "inet_sockets.hpp"

namespace andromeda::testing {
namespace {

class Pmtud : public TwoNodes {
protected:
    void start_and_connect() {
        start_both();
        ASSERT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.20"); }, 10s)) << logs();
        for (Netns* t : {t10_, t20_}) ASSERT_TRUE(contains(t->run({"ip", "link", "show", "eth0"}), "mtu 1500"));
    }
};

// 1472 bytes of payload make a 1500-byte packet: it leaves the tenant's 1500-byte interface,
// does not fit the overlay, and the gateway says so with the inner MTU.
TEST_F(Pmtud, PingWithDontFragmentGetsFragNeededWithTheInnerMtuFromTheGateway) {
    start_and_connect();
    const auto before = counter(0, "dataplane", "frag_needed_sent");
    const auto ping = t10_->try_run({"ping", "-n", "-M", "do", "-s", "1472", "-c", "1", "-W", "2", "10.0.0.20"}, 10s);
    EXPECT_FALSE(ping.ok()) << ping.output;
    EXPECT_TRUE(contains(ping.output, "From 10.0.0.1 icmp_seq=1 Frag needed and DF set (mtu = 1450)")) << ping.output << logs();
    EXPECT_EQ(counter(0, "dataplane", "frag_needed_sent"), before + 1);
    // The tenant's kernel took it: the route to 10.0.0.20 now carries mtu 1450.
    EXPECT_TRUE(contains(t10_->run({"ip", "route", "get", "10.0.0.20"}), "mtu 1450"));
    // And the largest packet that fits goes through.
    const auto fits = t10_->try_run({"ping", "-n", "-M", "do", "-s", "1422", "-c", "1", "-W", "2", "10.0.0.20"}, 10s);
    EXPECT_TRUE(fits.ok()) << fits.output << logs();
}

TEST_F(Pmtud, TracepathFindsPmtu1450) {
    start_and_connect();
    const auto trace = t10_->try_run({"tracepath", "-n", "-m", "4", "10.0.0.20"}, 25s);
    EXPECT_TRUE(contains(trace.output, "pmtu 1450")) << trace.output << logs();
    EXPECT_TRUE(contains(trace.output, "Resume: pmtu 1450")) << trace.output;
    EXPECT_TRUE(contains(trace.output, "reached")) << trace.output;
}

// A bulk upload from a tenant whose interface MTU is 1500: the first full-sized segments are
// too big, the kernel learns 1450 from the gateway's ICMP and the transfer completes byte-exact.
TEST_F(Pmtud, BulkTcpFromA1500ByteTenantCompletes) {
    start_and_connect();
    const auto file = random_bytes(20u << 20, 3);

    InetSocket listener(*t20_, SOCK_STREAM, "10.0.0.20", 5001);
    listener.listen_now();
    Connection c = connect_through(*t10_, listener, "10.0.0.20", 5001);
    ASSERT_TRUE(c.established()) << logs();
    EXPECT_EQ(c.peer.ip, "10.0.0.10");
    const Transfer moved = transfer(c.client, c.served, file, 25s);
    EXPECT_TRUE(moved.sent);
    ASSERT_EQ(moved.received.size(), file.size()) << logs();
    EXPECT_TRUE(moved.received == file) << "the transfer is not byte-exact";
    EXPECT_GT(counter(0, "dataplane", "frag_needed_sent"), 0u);
    EXPECT_TRUE(contains(t10_->run({"ip", "route", "get", "10.0.0.20"}), "mtu 1450"));
}

}  // namespace
}  // namespace andromeda::testing
