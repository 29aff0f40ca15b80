// andromedad end to end, failing closed (docs/operations.md, "What a stopped port does"): a
// tenant whose daemon stopped cleanly, or whose port a reload removed from the fabric, gets
// nothing from its host — no ARP answer for the host's addresses, no ping answered, nothing
// forwarded to another namespace — even on a host set up to route for its tenants; the others
// keep working, and a restart (or a reload that adds the port back) gives it its network again.
// A SIGKILL is not a stop: the port stays up and the kernel forwards as before.
//
// Independent of the path the tenants' traffic takes: registered once (fast path on).
#include <string>

#include "daemon_fixture.hpp"
#include "raw_socket.hpp"
#include "test_frames.hpp"

namespace andromeda::testing {
namespace {

struct TenantOnHost {
    Netns* tenant;           // the tenant's namespace (its interface is eth0)
    std::string address;     // the tenant's address
    Netns* host;             // the host namespace holding its port
    std::string port;        // the tenant's port on that host
    std::string host_address;
    Netns* other;            // another namespace on the underlay (the other host)
    std::string other_address;
};

// What the tenant's host does for it, probed from the tenant.
struct Exposure {
    bool arp_answered = false;  // the tenant learned the MAC of its host's underlay address
    bool ping_answered = false;  // a ping to that address came back
    bool forwarded = false;      // a ping to the other namespace reached that namespace
};

std::ostream& operator<<(std::ostream& out, const Exposure& e) {
    return out << "{arp_answered " << e.arp_answered << ", ping_answered " << e.ping_answered << ", forwarded "
               << e.forwarded << "}";
}

bool link_is_up(const Netns& ns, const std::string& ifname) {
    const auto j = nlohmann::json::parse(ns.run({"ip", "-j", "link", "show", ifname}), nullptr, false);
    if (!j.is_array() || j.empty()) return false;
    for (const auto& flag : j[0].value("flags", nlohmann::json::array()))
        if (flag == "UP") return true;
    return false;
}

bool ipv4_from(const Bytes& frame, const std::string& source) {
    if (frame.size() < 34 || frame[12] != 0x08 || frame[13] != 0x00) return false;
    const std::uint32_t src = std::uint32_t{frame[26]} << 24 | std::uint32_t{frame[27]} << 16 |
                              std::uint32_t{frame[28]} << 8 | frame[29];
    return src == frames::ip(source);
}

// The host set up as one that routes for its tenants would be: forwarding on and a route to the
// tenant through its port (as hosts that route to each workload through its interface have:
// this fails on a port that is down), the other namespace routing back through it; the tenant
// pointed at its host for the underlay's addresses. Then each probe.
Exposure probe(const TenantOnHost& t) {
    t.host->run({"sysctl", "-qw", "net.ipv4.ip_forward=1"});
    (void)t.host->try_run({"ip", "route", "replace", t.address + "/32", "dev", t.port});
    t.other->run({"ip", "route", "replace", t.address + "/32", "via", t.host_address});
    t.tenant->run({"ip", "neigh", "flush", "dev", "eth0"});
    t.tenant->run({"ip", "route", "replace", t.host_address + "/32", "dev", "eth0"});
    t.tenant->run({"ip", "route", "replace", t.other_address + "/32", "via", t.host_address, "dev", "eth0"});

    Exposure e;
    e.ping_answered = t.tenant->try_run({"ping", "-c", "2", "-W", "1", t.host_address}, 10s).ok();
    e.arp_answered = contains(t.tenant->run({"ip", "neigh", "show", t.host_address, "dev", "eth0"}), "lladdr");
    RawSocket seen(*t.other, "eth1");
    (void)t.tenant->try_run({"ping", "-c", "2", "-W", "1", t.other_address}, 10s);
    e.forwarded = !seen.receive(1, 500ms, [&](const Bytes& f) { return ipv4_from(f, t.address); }).empty();
    return e;
}

// Undoes probe()'s host side, so the host is as the fixture built it again.
void unprobe(const TenantOnHost& t) {
    (void)t.host->try_run({"ip", "route", "del", t.address + "/32"});
    (void)t.other->try_run({"ip", "route", "del", t.address + "/32"});
    t.host->run({"sysctl", "-qw", "net.ipv4.ip_forward=0"});
}

bool nothing_exposed(const Exposure& e) { return !e.arp_answered && !e.ping_answered && !e.forwarded; }

TEST_F(TwoNodesFastPath, ACleanStopLeavesTheTenantNothingAndARestartGivesItBack) {
    start_both();
    ASSERT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.20"); }, 5s)) << logs();
    const TenantOnHost t10{t10_, "10.0.0.10", nodes_[0].host, "tap-blue-10", "192.168.1.1", nodes_[1].host, "192.168.1.2"};

    Process& first = *nodes_[0].daemon;
    ASSERT_EQ(first.stop(20s), 0) << first.output();
    EXPECT_TRUE(contains(first.output(), "tenant ports set down")) << first.output();
    EXPECT_FALSE(link_is_up(*nodes_[0].host, "tap-blue-10")) << "a stopped daemon's tenant port is down";
    const Exposure stopped = probe(t10);
    EXPECT_TRUE(nothing_exposed(stopped)) << "after a clean stop the host answers or forwards for the tenant: "
                                          << stopped;
    EXPECT_FALSE(ping_once(*t10_, "10.0.0.20"));
    unprobe(t10);

    Process& second = start_daemon(0);
    EXPECT_TRUE(contains(second.output(), "tap-blue-10: set up")) << second.output();
    EXPECT_TRUE(link_is_up(*nodes_[0].host, "tap-blue-10"));
    EXPECT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.20"); }, 10s)) << "the restart gives it back\n"
                                                                                   << logs();
}

// A crash is not a stop: the kernel goes on forwarding with what the daemon left (its programs
// and pins), so the port stays up.
TEST_F(TwoNodesFastPath, SigkillLeavesThePortUpAndForwarding) {
    start_both();
    ASSERT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.20"); }, 5s)) << logs();
    Process& first = *nodes_[0].daemon;
    kill(first.pid(), SIGKILL);
    ASSERT_NE(first.wait(5s), -1);
    EXPECT_TRUE(link_is_up(*nodes_[0].host, "tap-blue-10"));
    EXPECT_TRUE(ping_once(*t10_, "10.0.0.20")) << "the fast path forwards without its daemon\n" << logs();
}

TEST_F(TwoNodesFastPath, APortRemovedByAReloadLeavesItsTenantNothingWhileTheOthersWork) {
    for (int i = 0; i < 2; ++i) nodes_[i].config = write_config(i, config_with_third_endpoint(i), "-three");
    start_both();
    ASSERT_TRUE(eventually([&] { return ping_once(*t30_, "10.0.0.10"); }, 5s)) << logs();
    const TenantOnHost t30{t30_, "10.0.0.30", nodes_[1].host, "tap-blue-30", "192.168.1.2", nodes_[0].host, "192.168.1.1"};

    const std::string two[2] = {write_config(0, base_config(0), "-two"), write_config(1, base_config(1), "-two")};
    for (int i = 0; i < 2; ++i) {
        const auto r = ctl(i, {"reload", two[i]});
        ASSERT_TRUE(r.ok()) << r.output << logs();
        if (i == 1) {
            EXPECT_TRUE(contains(r.output, "- port tap-blue-30 detached and set down")) << r.output;
        }
    }
    EXPECT_FALSE(link_is_up(*nodes_[1].host, "tap-blue-30")) << "a removed port is down";
    EXPECT_TRUE(link_is_up(*nodes_[1].host, "tap-blue-20")) << "the port that stays is not";
    const Exposure removed = probe(t30);
    EXPECT_TRUE(nothing_exposed(removed)) << "a port removed by a reload lets its host answer or forward for it: "
                                          << removed;
    unprobe(t30);
    EXPECT_TRUE(ping_once(*t10_, "10.0.0.20")) << "the other tenants keep working\n" << logs();
    EXPECT_TRUE(ping_once(*t20_, "10.0.0.10"));

    const std::string three[2] = {write_config(0, config_with_third_endpoint(0), "-three-again"),
                                  write_config(1, config_with_third_endpoint(1), "-three-again")};
    for (int i = 0; i < 2; ++i) {
        const auto r = ctl(i, {"reload", three[i]});
        ASSERT_TRUE(r.ok()) << r.output << logs();
    }
    EXPECT_TRUE(link_is_up(*nodes_[1].host, "tap-blue-30"));
    EXPECT_TRUE(eventually([&] { return ping_once(*t30_, "10.0.0.10"); }, 10s)) << "added back, it works again\n"
                                                                                   << logs();
}

}  // namespace
}  // namespace andromeda::testing
