// andromedad end to end, a tenant's own tunnel: each tenant runs a kernel VXLAN device of its own
// over its VPC address, as a guest running its own overlay (a Kubernetes node, a VPN) does:
//
//   t10 ns: vxt 10.99.0.10 ─VXLAN─ eth0 10.0.0.10 ══ VPC blue: node1 ═ underlay ═ node2 ══╗
//   t20 ns: vxt 10.99.0.20 ─VXLAN─ eth0 10.0.0.20 ═════════════════════════════════════════╝
//
// The tenants keep the kernel's defaults (TSO, TX checksum offload, the VXLAN device's MTU taken
// from eth0), so what their VXLAN device sends carries a tunnel's offload state: a TCP segment
// leaves CHECKSUM_PARTIAL with skb->encapsulation set, a TSO burst as one GSO packet of type
// UDP_TUNNEL. bpf_skb_adjust_room will not put the overlay's headers around that (-EALREADY);
// the fast path punts it (punt_tenant_tunnel), and the punt pair's kernel finishes the
// checksums and segments the bursts for the pipeline. A ping crosses the fast path (no partial
// checksum, no encapsulation flag); TCP through the tenant's tunnel must arrive byte for byte.
// (The VXLAN device's full-size frames, 1450 bytes and its 50, are over the VPC's 1450: those
// are the pipeline's as any frame too big, punt_too_big.)
#include <filesystem>
#include <fstream>
#include <string>

#include "daemon_fixture.hpp"

namespace andromeda::testing {
namespace {

constexpr const char* kTunnelDevice = "vxt";  // inside the tenant's own namespace
constexpr const char* kTunnelVni = "4242";

class TenantTunnel : public TwoNodes {
protected:
    // A VXLAN device in `tenant` towards `remote` (its VPC address), addressed `inner`/24.
    static void add_tenant_vxlan(const Netns& tenant, const std::string& local, const std::string& remote,
                                 const std::string& inner) {
        tenant.run({"ip", "link", "add", kTunnelDevice, "type", "vxlan", "id", kTunnelVni, "local", local, "remote",
                    remote, "dstport", "4789", "dev", "eth0"});
        tenant.run({"ip", "address", "add", inner + "/24", "dev", kTunnelDevice});
        tenant.run({"ip", "link", "set", kTunnelDevice, "up"});
    }

    void start_with_tunnels() {
        start_both();
        ASSERT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.20"); }, 5s)) << logs();
        add_tenant_vxlan(*t10_, "10.0.0.10", "10.0.0.20", "10.99.0.10");
        add_tenant_vxlan(*t20_, "10.0.0.20", "10.0.0.10", "10.99.0.20");
    }

    // `bytes` random bytes over TCP from `client` to `connect_to`, accepted by `server` on
    // `listen_on` (an address of its own; the same port): whether they arrived, byte for byte,
    // within `timeout`.
    ::testing::AssertionResult tcp_transfer(const Netns& client, const std::string& connect_to, const Netns& server,
                                            const std::string& listen_on, int port, std::size_t bytes,
                                            std::chrono::seconds timeout, int connect_port = 0) {
        const std::string p = std::to_string(port);
        Process& receiver =
            topo_.spawn(server, {"sh", "-c", "nc -l " + listen_on + " " + p + " </dev/null | sha256sum"});
        if (!eventually([&] { return contains(server.try_run({"ss", "-Hltn", "sport = :" + p}).output, p); }, 5s))
            return ::testing::AssertionFailure() << "the receiver never listened";
        const std::string blob = "/tmp/" + topo_.prefix() + "tunnel-blob-" + p;
        files_.push_back(blob);
        if (!run_command({"sh", "-c", "head -c " + std::to_string(bytes) + " /dev/urandom > " + blob}, 60s).ok())
            return ::testing::AssertionFailure() << "could not write " << blob;
        const auto sent = run_command({"sha256sum", blob});
        const auto start = std::chrono::steady_clock::now();
        const std::string to = connect_to + " " + std::to_string(connect_port != 0 ? connect_port : port);
        const auto sender = client.try_run({"sh", "-c", "nc -N " + to + " < " + blob}, timeout);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (!sender.ok())
            return ::testing::AssertionFailure() << "the sender did not finish within " << timeout.count()
                                                 << " s (exit " << sender.exit_code << "): " << sender.output;
        if (receiver.wait(20s) == -1) return ::testing::AssertionFailure() << "the receiver never saw the end";
        if (!contains(receiver.output(), sent.output.substr(0, 64)))
            return ::testing::AssertionFailure()
                   << "sent " << sent.output.substr(0, 64) << ", received " << receiver.output();
        std::printf("%zu bytes to %s in %.2f s (%.0f Mbit/s)\n", bytes, to.c_str(), seconds,
                    static_cast<double>(bytes) * 8 / 1e6 / seconds);
        return ::testing::AssertionSuccess();
    }

    void print_counters(int i) {
        std::printf("%s: punt_tenant_tunnel %llu, punt_too_big %llu, encap_packets %llu (GSO %llu)\n",
                    nodes_[i].name.c_str(),
                    static_cast<unsigned long long>(counter(i, "fastpath", "punt_tenant_tunnel")),
                    static_cast<unsigned long long>(counter(i, "fastpath", "punt_too_big")),
                    static_cast<unsigned long long>(counter(i, "fastpath", "encap_packets")),
                    static_cast<unsigned long long>(counter(i, "fastpath", "encap_gso_packets")));
    }
};

TEST_F(TenantTunnel, PingAndTcpThroughATenantsOwnVxlanArriveByteExact) {
    start_with_tunnels();
    if (HasFatalFailure()) return;
    ASSERT_TRUE(eventually([&] { return ping_once(*t10_, "10.99.0.20"); }, 5s)) << logs();
    const auto ping = t10_->try_run({"ping", "-c", "5", "-i", "0.2", "-W", "1", "10.99.0.20"});
    EXPECT_TRUE(ping.ok() && contains(ping.output, " 0% packet loss")) << ping.output << logs();

    EXPECT_TRUE(tcp_transfer(*t10_, "10.99.0.20", *t20_, "10.99.0.20", 5301, 20'000'000, 60s)) << logs();

    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(counter(i, "fastpath", "drop_adjust_failed"), 0u) << nodes_[i].name;
        EXPECT_EQ(counter(i, "io", "ledger_violations"), 0u) << nodes_[i].name;
    }
    if (fast_path_on()) {
        // Both directions carry the tunnel's state (data one way, ACKs the other) and were handed
        // to the pipeline for it.
        for (int i = 0; i < 2; ++i) {
            print_counters(i);
            EXPECT_GT(counter(i, "fastpath", "punt_tenant_tunnel"), 100u) << nodes_[i].name;
        }
    }
}

// A tenant that forwards what the overlay brings it back into the overlay, as a load balancer or a
// VPN gateway in a VPC does: t20 hairpins t10's connection to 10.0.0.20:7000 back to t10's port
// 7001 (NAT, so that what it sends carries its own address). node1's fast path sends t10's TSO
// bursts whole, node2 decapsulates them whole into t20, and t20 forwards them as they are. Where
// the kernel has BPF_F_ADJ_ROOM_DECAP_L4_UDP the decapsulation cleared the tunnel's offload state
// and node2's encap takes what t20 forwards in the kernel again; where it has not (6.18 and
// before) every packet keeps the skb->encapsulation node1's encap set, bursts and single segments
// alike, so node2's encap is refused and punts each (punt_tenant_tunnel). Either way every byte
// arrives and nothing is dropped as adjust_failed. (Measured here, 6.18: node1 encapsulated 1958
// packets, 361 of them GSO, and node2 punted 1957.)
TEST_F(TenantTunnel, WhatATenantForwardsBackIntoTheOverlayArrivesByteExact) {
    start_both();
    ASSERT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.20"); }, 5s)) << logs();
    const std::string rules = "/tmp/" + topo_.prefix() + "hairpin.nft";
    files_.push_back(rules);
    std::ofstream(rules) << "table ip hairpin {\n"
                            "  chain pre { type nat hook prerouting priority dstnat; tcp dport 7000 dnat to "
                            "10.0.0.10:7001; }\n"
                            "  chain post { type nat hook postrouting priority srcnat; ip daddr 10.0.0.10 tcp dport "
                            "7001 masquerade; }\n"
                            "}\n";
    t20_->run({"nft", "-f", rules});
    t20_->run({"sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv4.conf.all.send_redirects=0",
               "net.ipv4.conf.eth0.send_redirects=0"});

    EXPECT_TRUE(tcp_transfer(*t10_, "10.0.0.20", *t10_, "10.0.0.10", 7001, 20'000'000, 60s, 7000)) << logs();

    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(counter(i, "fastpath", "drop_adjust_failed"), 0u) << nodes_[i].name;
        EXPECT_EQ(counter(i, "io", "ledger_violations"), 0u) << nodes_[i].name;
    }
    if (!fast_path_on()) return;
    for (int i = 0; i < 2; ++i) print_counters(i);
    const std::string log = nodes_[1].daemon->output();
    const bool clears = contains(log, "kernel: bpf_skb_adjust_room takes BPF_F_ADJ_ROOM_DECAP_L4_UDP");
    ASSERT_TRUE(clears || contains(log, "kernel: bpf_skb_adjust_room does not take BPF_F_ADJ_ROOM_DECAP_L4_UDP"))
        << "node2 says what its decapsulation does with the tunnel's offload state:\n"
        << log;
    ASSERT_GT(counter(0, "fastpath", "encap_gso_packets"), 0u) << "node1 sent no GSO packet whole: nothing to see";
    if (clears) {
        EXPECT_EQ(counter(1, "fastpath", "punt_tenant_tunnel"), 0u);
        EXPECT_GT(counter(1, "fastpath", "encap_packets"), 100u);
    } else {
        EXPECT_GT(counter(1, "fastpath", "punt_tenant_tunnel"), 100u);
    }
}

}  // namespace
}  // namespace andromeda::testing
