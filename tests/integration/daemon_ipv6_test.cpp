// IPv6 tenants through two andromedad instances (issue 30, docs/ipv6.md): containers with the
// kernel's defaults (IPv6 on, offloads on) in a dual-stack VPC configure themselves by SLAAC from
// the gateway's Router Advertisements, resolve each other with the ND proxy, ping each other and
// the gateway across hosts, move 50 MB byte-exact over TCP, and learn the path MTU from the
// gateway's Packet Too Big. A second VPC with the same prefix, and a tenant with the same
// address in it, stays apart. Registered for both paths: the kernel fast path carries the
// tenants' IPv6 between endpoints, the .slowpath twin the pipeline.
#include <filesystem>
#include <fstream>
#include <regex>
#include <tuple>
#include <string>

#include "daemon_fixture.hpp"

namespace andromeda::testing {
namespace {

const std::string kT10 = "fd00:0:0:1:0:ff:fe00:10";  // EUI-64 of 02:00:00:00:00:10 (RFC 5952: fd00::1:0:ff:fe00:10)
const std::string kT20 = "fd00:0:0:1:0:ff:fe00:20";
const std::string kT10Shown = "fd00::1:0:ff:fe00:10";
const std::string kT20Shown = "fd00::1:0:ff:fe00:20";

class DualStack : public TwoNodes {
protected:
    void SetUp() override {
        TwoNodes::SetUp();
        if (IsSkipped()) return;
        for (int i = 0; i < 2; ++i) {
            std::string text = base_config(i);
            replace_all(text, "gateway = \"10.0.0.1\"", "gateway = \"10.0.0.1\"\nipv6_prefix = \"fd00:0:0:1::/64\"");
            replace_all(text, "mac = \"02:00:00:00:00:10\"", "mac = \"02:00:00:00:00:10\"\nipv6 = \"eui64\"");
            replace_all(text, "mac = \"02:00:00:00:00:20\"", "mac = \"02:00:00:00:00:20\"\nipv6 = \"eui64\"");
            // VPC green: the same prefix, and t30 on node2 with t10's very address.
            text += "\n[[vpc]]\nname = \"green\"\nvni = 200\ncidr = \"10.0.0.0/24\"\ngateway = \"10.0.0.1\"\n"
                    "ipv6_prefix = \"fd00:0:0:1::/64\"\n[[vpc.endpoint]]\nip = \"10.0.0.30\"\nmac = \"02:00:00:00:00:30\"\n"
                    "node = \"" + nodes_[1].name + "\"\nport = \"tap-blue-30\"\nipv6 = \"" + kT10 + "\"\n";
            nodes_[i].config = write_config(i, text, "-v6");
        }
    }

    // IPv6 on, as a container has it by default (the topology turns it off in every namespace).
    static void enable_ipv6(const Netns& tenant) {
        tenant.run({"sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=0", "net.ipv6.conf.default.disable_ipv6=0",
                    "net.ipv6.conf.eth0.disable_ipv6=0"});
    }

    // The tenant's global address by SLAAC, past duplicate address detection.
    static bool has_slaac_address(const Netns& tenant, const std::string& address) {
        const auto r = tenant.try_run({"ip", "-6", "addr", "show", "dev", "eth0", "scope", "global"});
        return r.ok() && contains(r.output, address + "/64") && !contains(r.output, "tentative");
    }

    // Both daemons started and IPv6 on in t10 and t20; true once both have their SLAAC address.
    bool start_and_autoconfigure() {
        start_both();
        enable_ipv6(*t10_);
        enable_ipv6(*t20_);
        return eventually([&] { return has_slaac_address(*t10_, kT10Shown) && has_slaac_address(*t20_, kT20Shown); },
                          30s);
    }
};

TEST_F(DualStack, TenantsAutoconfigureFromTheGatewayPingAndMoveFiftyMegabytesOverIpv6) {
    ASSERT_TRUE(start_and_autoconfigure())
        << t10_->try_run({"ip", "-6", "addr"}).output << t20_->try_run({"ip", "-6", "addr"}).output << logs();

    // The gateway is the default router (its link-local address, learned from the RA), and the
    // RA's MTU option (the VPC's, 1450) is the interface's IPv6 MTU.
    const std::string route = t10_->run({"ip", "-6", "route", "show", "default"});
    std::smatch via;
    ASSERT_TRUE(std::regex_search(route, via, std::regex("via (fe80::[0-9a-f:]+) dev eth0 proto ra"))) << route;
    EXPECT_EQ(t10_->run({"cat", "/proc/sys/net/ipv6/conf/eth0/mtu"}), "1450\n");
    EXPECT_GE(counter(0, "router_advertisements", "sent"), 1u);
    const std::string fabric = ctl(0, {"fabric"}).output;
    EXPECT_TRUE(contains(fabric, "ipv6 fd00:0:0:1::/64 router " + via[1].str())) << fabric;
    EXPECT_TRUE(contains(fabric, kT10Shown)) << fabric;

    // ND through the proxy, then ping across hosts both ways and the gateway itself.
    EXPECT_TRUE(t10_->try_run({"ping", "-6", "-c", "3", "-i", "0.2", "-W", "2", kT20}, 15s).ok()) << logs();
    EXPECT_TRUE(t20_->try_run({"ping", "-6", "-c", "3", "-i", "0.2", "-W", "2", kT10}, 15s).ok()) << logs();
    EXPECT_TRUE(t10_->try_run({"ping", "-6", "-c", "2", "-i", "0.2", "-W", "2", via[1].str() + "%eth0"}, 15s).ok());
    // Green's t30 has t10's address, but in another VPC: blue's t20 is not there for it.
    enable_ipv6(*t30_);
    t30_->run({"ip", "-6", "addr", "add", kT10 + "/64", "dev", "eth0", "nodad"});
    EXPECT_FALSE(t30_->try_run({"ping", "-6", "-c", "2", "-i", "0.2", "-W", "1", "-I", kT10, kT20}, 15s).ok());
    EXPECT_GE(counter(1, "dataplane", "drop_no_such_endpoint"), 1u);
    const std::string neighbours = t10_->run({"ip", "-6", "neigh", "show", "dev", "eth0"});
    EXPECT_TRUE(contains(neighbours, kT20Shown)) << neighbours;
    EXPECT_TRUE(contains(neighbours, "router")) << neighbours;  // the gateway answers as a router
    EXPECT_GE(counter(0, "dataplane", "neighbor_advertisements"), 1u);

    // 50 MB over TCP, byte-exact by sha256 on both sides, offloads on.
    const std::string dir = "/tmp/" + topo_.prefix() + "v6";
    std::filesystem::create_directories(dir);
    files_.push_back(dir + "/sent");
    files_.push_back(dir + "/received");
    run_command({"sh", "-c", "head -c 52428800 /dev/urandom > " + dir + "/sent"});
    Process& server = topo_.spawn(*t20_, {"sh", "-c", "exec nc -6 -l " + kT20 + " 5001 > " + dir + "/received"});
    ASSERT_TRUE(eventually([&] { return contains(t20_->run({"ss", "-ltn"}), ":5001"); }, 10s));
    const auto sent = t10_->try_run({"sh", "-c", "nc -6 -N " + kT20 + " 5001 < " + dir + "/sent"}, 120s);
    EXPECT_TRUE(sent.ok()) << sent.output;
    EXPECT_EQ(server.wait(30s), 0);
    const auto sums = run_command({"sh", "-c", "sha256sum < " + dir + "/sent; sha256sum < " + dir + "/received"});
    const std::size_t newline = sums.output.find('\n');
    ASSERT_NE(newline, std::string::npos) << sums.output;
    EXPECT_EQ(sums.output.substr(0, newline), sums.output.substr(newline + 1, newline)) << sums.output;
    EXPECT_EQ(std::filesystem::file_size(dir + "/received"), 52428800u);
    std::filesystem::remove_all(dir);
    EXPECT_EQ(counter(0, "dataplane", "drop_spoofed_source_ip"), 0u);
    EXPECT_EQ(counter(1, "dataplane", "drop_fabric_spoofed_source"), 0u);
    // On the fast path the kernel carried the transfer: node1's tc encapsulated the IPv6 segments
    // (GSO packets whole), node2's XDP passed them to tc, which decapsulated them into t20. (The
    // .slowpath registration runs the same through the pipeline.)
    if (fast_path_on()) {
        EXPECT_GE(counter(0, "fastpath", "ipv6_packets"), 100u);
        EXPECT_GE(counter(1, "fastpath", "ipv6_packets"), 100u);
        EXPECT_GE(counter(0, "fastpath", "encap_gso_packets"), 1u);
    }
}

// A tenant that sends past the VPC MTU (here: its own MTU raised over the RA's) gets Packet Too
// Big from the gateway, and its kernel caches the path MTU, as tracepath -6 would show.
TEST_F(DualStack, APacketPastTheVpcMtuGetsPacketTooBigAndTheTenantLearnsThePathMtu) {
    ASSERT_TRUE(start_and_autoconfigure()) << logs();
    t10_->run({"sysctl", "-q", "-w", "net.ipv6.conf.eth0.mtu=1500"});
    // 1452 bytes of payload + 8 (ICMPv6) + 40 (IPv6) = 1500 > 1450: refused with Packet Too Big.
    // The ping itself fails (the gateway answers it with Packet Too Big, not the peer).
    const auto refused = t10_->try_run({"ping", "-6", "-c", "1", "-W", "1", "-M", "do", "-s", "1452", kT20}, 10s);
    EXPECT_FALSE(refused.ok()) << refused.output;
    EXPECT_TRUE(eventually(
        [&] {
            return contains(t10_->run({"ip", "-6", "route", "get", kT20}), "mtu 1450");
        },
        5s))
        << t10_->run({"ip", "-6", "route", "get", kT20});
    EXPECT_GE(counter(0, "dataplane", "packet_too_big_sent"), 1u);
    // A ping that fits still goes through.
    EXPECT_TRUE(t10_->try_run({"ping", "-6", "-c", "1", "-W", "2", "-s", "1400", kT20}, 10s).ok()) << logs();
}

// Security groups over IPv6 (docs/security-groups.md, "IPv6"): t20 (group web) takes TCP 5001
// from group app (t10, by its SLAAC address) and ICMPv6 echo from the VPC's /64; anything else
// in is refused by the default, as IPv4 is. Replies need no rule. The same verdicts on both
// registrations; on the fast path the pipeline judges the first packets and the kernel carries
// the connection it allowed (andromeda_policy_flows6).
TEST_F(DualStack, SecurityGroupsJudgeIpv6LikeIpv4) {
    const std::string groups =
        "[[vpc.security_group]]\nname = \"web\"\n"
        "[[vpc.security_group.rule]]\ndirection = \"ingress\"\nprotocol = \"tcp\"\nports = [5001]\n"
        "remote_groups = [\"app\"]\npriority = 100\n"
        "[[vpc.security_group.rule]]\ndirection = \"ingress\"\nprotocol = \"icmpv6\"\nicmp_type = 128\n"
        "remote_cidrs = [\"fd00:0:0:1::/64\"]\npriority = 110\n"
        "[[vpc.security_group]]\nname = \"app\"\n";
    for (int i = 0; i < 2; ++i) {
        std::string text = read_text(nodes_[i].config);
        replace_all(text, "mac = \"02:00:00:00:00:10\"\n", "mac = \"02:00:00:00:00:10\"\ngroups = [\"app\"]\n");
        replace_all(text, "mac = \"02:00:00:00:00:20\"\n", "mac = \"02:00:00:00:00:20\"\ngroups = [\"web\"]\n");
        replace_all(text, "\n[[vpc]]\nname = \"green\"", "\n" + groups + "\n[[vpc]]\nname = \"green\"");
        std::ofstream(nodes_[i].config) << text;
    }
    ASSERT_TRUE(start_and_autoconfigure()) << logs();
    // ICMPv6 echo in to web is allowed (and its replies come back); to t10 nothing lets it in.
    EXPECT_TRUE(t10_->try_run({"ping", "-6", "-c", "2", "-i", "0.2", "-W", "2", kT20}, 15s).ok()) << logs();
    EXPECT_FALSE(t20_->try_run({"ping", "-6", "-c", "2", "-i", "0.2", "-W", "1", kT10}, 15s).ok());
    EXPECT_GE(counter(0, "dataplane", "drop_policy_denied"), 1u) << "t10's host refuses the echo in";
    // TCP to the allowed port carries 8 MB whole; to another port it never connects.
    const std::uint64_t decapsulated_before = fast_path_on() ? counter(1, "fastpath", "ipv6_packets") : 0;
    Process& server = topo_.spawn(*t20_, {"sh", "-c", "timeout 30 nc -6 -l " + kT20 + " 5001 | wc -c"});
    ASSERT_TRUE(eventually([&] { return contains(t20_->run({"ss", "-ltn"}), ":5001"); }, 10s));
    const auto sent =
        t10_->try_run({"sh", "-c", "head -c 8388608 /dev/zero | nc -6 -N -w 5 " + kT20 + " 5001"}, 30s);
    EXPECT_TRUE(sent.ok()) << sent.output << logs();
    EXPECT_EQ(server.wait(20s), 0);
    EXPECT_TRUE(contains(server.output(), "8388608")) << server.output();
    // On the fast path the kernel carried it, by the flows the firewalls installed: node1's tc
    // passed the IPv6 segments out by t10's egress entry, node2's decap into t20 by its ingress one.
    if (fast_path_on()) {
        EXPECT_GE(counter(0, "policy_offload", "installs"), 1u);
        EXPECT_GE(counter(1, "policy_offload", "installs"), 1u);
        EXPECT_GE(counter(0, "fastpath", "policy_packets"), 50u) << logs();
        EXPECT_GE(counter(1, "fastpath", "ipv6_packets"), decapsulated_before + 50) << logs();
    }
    const std::uint64_t denied_before = counter(1, "dataplane", "drop_policy_denied");
    topo_.spawn(*t20_, {"sh", "-c", "exec timeout 10 nc -6 -l " + kT20 + " 5002"});
    ASSERT_TRUE(eventually([&] { return contains(t20_->run({"ss", "-ltn"}), ":5002"); }, 10s));
    EXPECT_FALSE(t10_->try_run({"sh", "-c", "echo no | nc -6 -N -w 2 " + kT20 + " 5002"}, 10s).ok());
    EXPECT_GT(counter(1, "dataplane", "drop_policy_denied"), denied_before) << "web's host refuses the SYN";
    // andromedactl shows the IPv6 flows the firewall tracks, by their addresses.
    const std::string flows = ctl(1, {"conntrack"}).output;
    EXPECT_TRUE(contains(flows, "[" + kT10Shown + "]:")) << flows;
    EXPECT_TRUE(contains(flows, "-> [" + kT20Shown + "]:5001")) << flows;
    EXPECT_TRUE(contains(flows, "icmpv6")) << flows;
    EXPECT_TRUE(contains(ctl(1, {"policy"}).output, "ingress allow icmpv6 type 128 from fd00:0:0:1::/64"));
}

// The same tenants over an IPv6 underlay (docs/wire-format.md, "IPv6 underlay"): both nodes
// have IPv6 [node] addresses and resolve each other by Neighbor Discovery; the outer headers
// are IPv6, so the VPC's MTU defaults to the underlay's 1500 less 70 bytes, which the RA tells the
// tenants. With the fast path on the kernel carries it (outer IPv6 headers written and taken by
// tc, the outer UDP checksum derived from the headers: bpf/lib/outer6.h); the .slowpath twin has
// the pipeline carry every packet.
class DualStackOverIpv6Underlay : public DualStack {
protected:
    void SetUp() override {
        DualStack::SetUp();
        if (IsSkipped() || HasFatalFailure()) return;
        move_underlay_to_ipv6();
    }
};

TEST_F(DualStackOverIpv6Underlay, TenantsPingAndMoveDataInBothFamilies) {
    ASSERT_TRUE(start_and_autoconfigure()) << t10_->try_run({"ip", "-6", "addr"}).output << logs();
    EXPECT_EQ(t10_->run({"cat", "/proc/sys/net/ipv6/conf/eth0/mtu"}), "1430\n");
    // The node's own `fastpath = false` (the .slowpath registration) is named first when it is there.
    const std::string status = ctl(0, {"status"}).output;
    EXPECT_TRUE(contains(status, fast_path_on() ? "fast path (tc) + pipeline" : "fast path off: [node] fastpath = false"))
        << status;
    const std::string nodes = ctl(0, {"fabric"}).output;
    EXPECT_TRUE(contains(nodes, underlay6(1))) << nodes;

    for (const std::string& to : {std::string("10.0.0.20"), kT20}) {
        const auto ping = t10_->try_run({"ping", "-c", "3", "-i", "0.2", "-W", "2", to}, 15s);
        EXPECT_TRUE(ping.ok() && contains(ping.output, " 0% packet loss")) << to << ": " << ping.output << logs();
    }
    EXPECT_TRUE(t20_->try_run({"ping", "-c", "3", "-i", "0.2", "-W", "2", kT10}, 15s).ok()) << logs();
    // 8 MB each way over TCP: IPv4 from t10, IPv6 from t20; counted on arrival.
    for (const auto& [from, to, address, port] :
         {std::tuple{t10_, t20_, std::string("10.0.0.20"), 5001}, std::tuple{t20_, t10_, kT10, 5002}}) {
        Netns* const sender = from;  // a lambda may not capture a structured binding (clang)
        Netns* const receiver = to;
        const std::string p = std::to_string(port);
        Process& server = topo_.spawn(*receiver, {"sh", "-c", "timeout 30 nc -l " + address + " " + p + " | wc -c"});
        ASSERT_TRUE(eventually([&] { return contains(receiver->run({"ss", "-Hltn"}), ":" + p); }, 10s));
        const auto sent = sender->try_run({"sh", "-c", "head -c 8388608 /dev/urandom | nc -N -w 5 " + address + " " + p}, 60s);
        EXPECT_TRUE(sent.ok()) << sent.output << logs();
        EXPECT_EQ(server.wait(20s), 0);
        EXPECT_TRUE(contains(server.output(), "8388608")) << address << ": " << server.output();
    }
    for (int i = 0; i < 2; ++i) {
        // Whoever carried them: tc counts GSO packets (each up to 64 KB), the pipeline frames.
        if (fast_path_on()) {
            EXPECT_GT(counter(i, "fastpath", "encap_packets"), 100u) << ctl(i, {"stats"}).output << logs();
            EXPECT_GT(counter(i, "fastpath", "encap_gso_packets"), 10u) << ctl(i, {"stats"}).output;
            // Uneven bursts are made even (encap_gso_resized), or cut by the segmenting pair and
            // checksummed segment by segment (encap_gso_resegmented, reseg_packets): none is left
            // to the pipeline, and the pair refuses nothing the fast path sends it.
            EXPECT_GT(counter(i, "fastpath", "encap_gso_resized"), 0u) << ctl(i, {"stats"}).output;
            EXPECT_EQ(counter(i, "fastpath", "punt_outer_csum"), 0u) << ctl(i, {"stats"}).output;
            EXPECT_GE(counter(i, "fastpath", "reseg_packets"), counter(i, "fastpath", "encap_gso_resegmented") * 2)
                << ctl(i, {"stats"}).output;
            EXPECT_EQ(counter(i, "fastpath", "drop_reseg_unfit"), 0u) << ctl(i, {"stats"}).output;
            const std::string links = nodes_[i].host->run({"ip", "-o", "link", "show"});
            EXPECT_TRUE(contains(links, " ans") && contains(links, " anr")) << "the segmenting pair: " << links;
            EXPECT_GT(counter(i, "fastpath", "decap_packets"), 100u) << ctl(i, {"stats"}).output;
            EXPECT_GT(counter(i, "fastpath", "ipv6_packets"), 100u) << ctl(i, {"stats"}).output;
            // Every packet the fast path took verified (decap_classify_vni6): the pipeline saw
            // none of them fail, and took few (the first, ND, the gateway's).
            EXPECT_LT(counter(i, "dataplane", "delivered_from_fabric"), 100u) << ctl(i, {"stats"}).output;
        } else {
            EXPECT_GT(counter(i, "dataplane", "encapsulated"), 1000u) << logs();
            EXPECT_GT(counter(i, "dataplane", "delivered_from_fabric"), 1000u) << logs();
        }
        EXPECT_EQ(counter(i, "dataplane", "drop_unknown_peer"), 0u);
        EXPECT_EQ(counter(i, "dataplane", "decap_bad_udp_checksum"), 0u);
    }
}

// andromedad --check on an IPv6 underlay: fine as set up; an IPv6 [node] address that is not
// eth1's is a warning that says how to add it; an underlay_mtu above the interface's an error
// whose VPC MTU counts IPv6's 70 bytes of outer headers.
TEST_F(DualStackOverIpv6Underlay, TheHostCheckKnowsTheIpv6Underlay) {
    const auto ok = nodes_[0].host->try_run({kDaemon, "-c", nodes_[0].config, "--check"});
    EXPECT_TRUE(ok.ok() && contains(ok.output, "OK") && contains(ok.output, underlay6(0))) << ok.output;

    // [node] without its address: node1's [[nodes]] entry names it (one peer list fits every host).
    std::string text = read_text(nodes_[0].config);
    const std::string own = "address = \"" + underlay6(0) + "\"\n";
    ASSERT_NE(text.find(own), text.rfind(own)) << "both [node] and [[nodes]] name it";
    text.erase(text.find(own), own.size());
    const auto listed = nodes_[0].host->try_run({kDaemon, "-c", write_config(0, text, "-listed"), "--check"});
    EXPECT_TRUE(listed.ok() && contains(listed.output, "OK") && contains(listed.output, underlay6(0))) << listed.output;

    text = read_text(nodes_[0].config);
    replace_all(text, own, "address = \"fd00:1::9\"\n");
    const auto absent = nodes_[0].host->try_run({kDaemon, "-c", write_config(0, text, "-absent"), "--check"});
    EXPECT_TRUE(absent.ok()) << absent.output;
    EXPECT_TRUE(contains(absent.output, "fd00:1::9 is not an address of eth1") &&
                contains(absent.output, "ip -6 addr add fd00:1::9/64 dev eth1 nodad"))
        << absent.output;

    text = read_text(nodes_[0].config);
    replace_all(text, "[node]\n", "[node]\nunderlay_mtu = 1600\n");
    const auto wide = nodes_[0].host->try_run({kDaemon, "-c", write_config(0, text, "-wide"), "--check"});
    EXPECT_EQ(wide.exit_code, 1) << wide.output;
    EXPECT_TRUE(contains(wide.output, "eth1 has MTU 1500 but underlay_mtu is 1600") &&
                contains(wide.output, "VPC MTUs at most 1430"))
        << wide.output;
}

}  // namespace
}  // namespace andromeda::testing
