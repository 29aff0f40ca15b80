// What the offload tests share: an engine with offload on, one VPC with a TCP and a UDP port
// forward, and helpers that open flows the way tenants and remote hosts do.
#pragma once

#include <vector>

#include "nat_test_packets.hpp"

namespace andromeda::nat::test {

namespace flag = wire::tcp_flag;

inline NatSettings offload_settings(std::size_t shards = 1, std::size_t max_flows = 1024) {
    NatSettings s = small_settings(max_flows, shards);
    s.offload.enabled = true;
    return s;
}

class OffloadTest : public ::testing::Test {
protected:
    static constexpr std::uint32_t kVni = 100;
    const Ipv4Address kNat = ip("198.51.100.1");
    const Ipv4Address kTenant = ip("10.0.0.10");
    const Ipv4Address kServer = ip("10.0.0.20");
    const Ipv4Address kRemote = ip("203.0.113.7");
    static constexpr double kT0 = 1000.0;
    static constexpr double kNs = 1e-9;

    explicit OffloadTest(NatSettings settings = offload_settings()) : nat(settings) {}
    void SetUp() override { nat.set_rules(rules()); }

    std::shared_ptr<const NatRules> rules(std::vector<PortForward> forwards = {{Protocol::tcp, 8088, ip("10.0.0.20"), 80},
                                                                             {Protocol::udp, 5353, ip("10.0.0.20"), 53}}) {
        return one_vpc_rules(kVni, kNat, kDefaultPortMin, kDefaultPortMax, std::move(forwards));
    }

    NatResult out(Bytes p, double t) {
        const NatResult r = nat.outbound(kVni, p, at(t));
        last = p;
        return r;
    }
    NatResult in(Bytes p, double t) {
        const NatResult r = nat.inbound(p, at(t));
        last = p;
        return r;
    }
    std::vector<OffloadChange> drain(std::size_t span = 64) {
        std::vector<OffloadChange> all, out(span);
        for (;;) {
            const std::size_t n = nat.drain_offload_changes(out);
            all.insert(all.end(), out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n));
            if (n < span) return all;
        }
    }
    // A UDP flow from the tenant; returns its NAT port.
    std::uint16_t open_udp(Ipv4Address tenant, std::uint16_t port, Ipv4Address remote, std::uint16_t remote_port,
                           double t = kT0) {
        EXPECT_TRUE(out(udp_packet(tenant, port, remote, remote_port), t).translated());
        return endpoints(last).source_port;
    }
    // A TCP connection from the tenant through its handshake (established when `ack`).
    std::uint16_t open_tcp(std::uint16_t port, std::uint16_t remote_port, double t = kT0, bool ack = true) {
        EXPECT_TRUE(out(tcp_packet(kTenant, port, kRemote, remote_port, flag::kSyn), t).translated());
        const std::uint16_t nat_port = endpoints(last).source_port;
        EXPECT_TRUE(in(tcp_packet(kRemote, remote_port, kNat, nat_port, flag::kSyn | flag::kAck), t).translated());
        if (ack) {
            EXPECT_TRUE(out(tcp_packet(kTenant, port, kRemote, remote_port, flag::kAck), t).translated());
        }
        return nat_port;
    }
    OffloadedFlow udp_flow(std::uint16_t port, std::uint16_t nat_port, std::uint16_t remote_port = 53) const {
        return {kVni, Protocol::udp, Origin::outbound, false, kTenant, port, kNat, nat_port, kRemote, remote_port};
    }
    OffloadedFlow tcp_flow(std::uint16_t port, std::uint16_t nat_port, std::uint16_t remote_port) const {
        return {kVni, Protocol::tcp, Origin::outbound, false, kTenant, port, kNat, nat_port, kRemote, remote_port};
    }
    const FlowInfo* find(const std::vector<FlowInfo>& flows, Protocol p, std::uint16_t tenant_port) {
        for (const FlowInfo& f : flows) {
            const std::uint16_t port = f.origin == Origin::outbound ? f.original.source_port : f.translated.destination_port;
            if (f.protocol == p && port == tenant_port) return &f;
        }
        return nullptr;
    }

    NatEngine nat;
    Bytes last;
};

}  // namespace andromeda::nat::test
