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

    // `bytes` random bytes from t10 to t20 over TCP through the tenants' tunnel: whether they
    // arrived, byte for byte, within `timeout`.
    ::testing::AssertionResult tcp_through_tunnel(std::size_t bytes, std::chrono::seconds timeout) {
        Process& receiver = topo_.spawn(*t20_, {"sh", "-c", "nc -l 10.99.0.20 5301 </dev/null | sha256sum"});
        if (!eventually([&] { return contains(t20_->try_run({"ss", "-Hltn", "sport = :5301"}).output, "5301"); }, 5s))
            return ::testing::AssertionFailure() << "the receiver never listened";
        const std::string blob = "/tmp/" + topo_.prefix() + "tunnel-blob";
        files_.push_back(blob);
        if (!run_command({"sh", "-c", "head -c " + std::to_string(bytes) + " /dev/urandom > " + blob}, 60s).ok())
            return ::testing::AssertionFailure() << "could not write " << blob;
        const auto sent = run_command({"sha256sum", blob});
        const auto start = std::chrono::steady_clock::now();
        const auto sender = t10_->try_run({"sh", "-c", "nc -N 10.99.0.20 5301 < " + blob}, timeout);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (!sender.ok())
            return ::testing::AssertionFailure() << "the sender did not finish within " << timeout.count()
                                                 << " s (exit " << sender.exit_code << "): " << sender.output;
        if (receiver.wait(20s) == -1) return ::testing::AssertionFailure() << "the receiver never saw the end";
        if (!contains(receiver.output(), sent.output.substr(0, 64)))
            return ::testing::AssertionFailure()
                   << "sent " << sent.output.substr(0, 64) << ", received " << receiver.output();
        std::printf("%zu bytes through the tenants' own VXLAN in %.2f s (%.0f Mbit/s)\n", bytes, seconds,
                    static_cast<double>(bytes) * 8 / 1e6 / seconds);
        return ::testing::AssertionSuccess();
    }
};

TEST_F(TenantTunnel, PingAndTcpThroughATenantsOwnVxlanArriveByteExact) {
    start_with_tunnels();
    if (HasFatalFailure()) return;
    ASSERT_TRUE(eventually([&] { return ping_once(*t10_, "10.99.0.20"); }, 5s)) << logs();
    const auto ping = t10_->try_run({"ping", "-c", "5", "-i", "0.2", "-W", "1", "10.99.0.20"});
    EXPECT_TRUE(ping.ok() && contains(ping.output, " 0% packet loss")) << ping.output << logs();

    EXPECT_TRUE(tcp_through_tunnel(20'000'000, 60s)) << logs();

    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(counter(i, "fastpath", "drop_adjust_failed"), 0u) << nodes_[i].name;
        EXPECT_EQ(counter(i, "io", "ledger_violations"), 0u) << nodes_[i].name;
    }
    if (fast_path_on()) {
        // Both directions carry the tunnel's state (data one way, ACKs the other) and were handed
        // to the pipeline for it.
        for (int i = 0; i < 2; ++i) {
            const auto tunnel = counter(i, "fastpath", "punt_tenant_tunnel");
            std::printf("%s: punt_tenant_tunnel %llu, punt_too_big %llu, encap_packets %llu\n", nodes_[i].name.c_str(),
                        static_cast<unsigned long long>(tunnel),
                        static_cast<unsigned long long>(counter(i, "fastpath", "punt_too_big")),
                        static_cast<unsigned long long>(counter(i, "fastpath", "encap_packets")));
            EXPECT_GT(tunnel, 100u) << nodes_[i].name;
        }
    }
}

}  // namespace
}  // namespace andromeda::testing
