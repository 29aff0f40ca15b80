// The IPv6 gateway against a real Linux tenant: a namespace with IPv6 on and the kernel's defaults
// talks over a veth to an AF_PACKET responder that answers with nothing but the gateway library
// (ND proxy, Router Advertisements and their schedule, ICMPv6 echo). The tenant must autoconfigure
// by SLAAC from the RA (the EUI-64 address in the VPC prefix, the gateway's link-local address as
// default router, the VPC MTU), resolve a VPC peer and the gateway to the gateway MAC, and ping the
// gateway's global and link-local addresses. The pipeline does not call the gateway yet (issue 30);
// this checks that what it will send is what a kernel accepts.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "gateway/icmp_echo.hpp"
#include "gateway/nd_proxy.hpp"
#include "gateway/router_advertisement.hpp"
#include "netns_topology.hpp"
#include "raw_socket.hpp"
#include "support/root.hpp"
#include "wire/ethernet.hpp"
#include "wire/ipv6.hpp"

namespace andromeda::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kTenantMac = "02:00:00:00:00:0a";
constexpr const char* kGatewayMac = "02:aa:00:00:00:01";

wire::Ipv6Address ip6(const char* text) { return *wire::Ipv6Address::parse(text); }

gateway::Ipv6GatewayConfig vpc_gateway() {
    gateway::Ipv6GatewayConfig config;
    config.mac = *wire::MacAddress::parse(kGatewayMac);
    config.prefix = *wire::Ipv6Prefix::parse("fd00:0:0:1::/64");
    config.global_address = ip6("fd00:0:0:1::1");
    config.mtu = 1400;
    config.dns_servers = {ip6("fd00:0:0:1::53")};
    return config;
}

std::uint64_t monotonic_ns() {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

// The gateway side of the veth: every frame from the tenant goes to the gateway library, and
// what it writes goes back; unsolicited RAs as the schedule says.
class Responder {
public:
    Responder(const Netns& ns, const std::string& ifname)
        : socket_(open_packet_socket(ns, ifname)), thread_([this] { run(); }) {}
    ~Responder() {
        stop_ = true;
        thread_.join();
        close(socket_);
    }

    std::atomic<int> advertisements{0}, neighbor_advertisements{0}, echo_replies{0};

private:
    void send(wire::ByteSpan frame) { (void)::send(socket_, frame.data(), frame.size(), 0); }

    void answer(wire::ByteSpan frame) {
        const auto eth = wire::EthernetView::parse(frame);
        if (!eth || eth->ethertype() != wire::ethertype::kIpv6) return;
        const auto ip = wire::Ipv6View::parse(eth->payload());
        if (!ip) return;
        std::vector<std::uint8_t> out(2048);
        switch (gateway::classify_icmpv6(*ip)) {
            case gateway::TenantIcmpv6::neighbor_solicitation: {
                const auto na = gateway::write_neighbor_advertisement_reply(frame, gateway_, asker_, out);
                if (!na.answered()) return;
                ++neighbor_advertisements;  // before the answer leaves: the test reads it once the tenant has it
                send(wire::ByteSpan(out).first(na.length));
                return;
            }
            case gateway::TenantIcmpv6::router_solicitation: {
                const auto ra = gateway::answer_router_solicitation(frame, gateway_, schedule_, monotonic_ns(), out);
                if (!ra.answered()) return;
                ++advertisements;  // before the answer leaves: the test reads it once the tenant has it
                send(wire::ByteSpan(out).first(ra.length));
                return;
            }
            case gateway::TenantIcmpv6::echo_request: {
                const auto echo = gateway::write_echo_reply(frame, gateway_, out);
                if (!echo.replied()) return;
                ++echo_replies;  // before the answer leaves: the test reads it once the tenant has it
                send(wire::ByteSpan(out).first(echo.length));
                return;
            }
            default:
                return;
        }
    }

    void run() {
        std::vector<std::uint8_t> buffer(4096), out(gateway::kMaxRouterAdvertisementFrame);
        while (!stop_) {
            if (const std::size_t n = gateway::advertise_if_due(gateway_, schedule_, monotonic_ns(), out); n != 0) {
                ++advertisements;
                send(wire::ByteSpan(out).first(n));
            }
            pollfd pfd{socket_, POLLIN, 0};
            if (poll(&pfd, 1, 50) <= 0) continue;
            sockaddr_ll from{};
            socklen_t length = sizeof from;
            const ssize_t n =
                recvfrom(socket_, buffer.data(), buffer.size(), 0, reinterpret_cast<sockaddr*>(&from), &length);
            if (n > 0 && from.sll_pkttype != PACKET_OUTGOING)
                answer(wire::ByteSpan(buffer).first(static_cast<std::size_t>(n)));
        }
    }

    const gateway::Ipv6Gateway gateway_{vpc_gateway()};
    const std::vector<wire::Ipv6Address> tenant_addresses_ = {ip6("fd00:0:0:1:0:ff:fe00:a")};
    const gateway::Ipv6Endpoint asker_{*wire::MacAddress::parse(kTenantMac), tenant_addresses_};
    gateway::RouterAdvertisementSchedule schedule_{gateway_.config().router_advertisements, 1};
    int socket_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

// Polls `check` every 200 ms for up to `timeout`.
bool eventually(const std::function<bool()>& check, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (check()) return true;
        std::this_thread::sleep_for(200ms);
    }
    return check();
}

TEST(Ipv6GatewayKernel, LinuxTenantAutoconfiguresResolvesAndPingsTheGateway) {
    ANDROMEDA_REQUIRE_ROOT();
    Topology topo;
    Netns& host = topo.add_namespace("gw");
    Netns& tenant = topo.add_namespace("tenant");
    VethOptions options;
    options.mac_a = kGatewayMac;
    options.mac_b = kTenantMac;
    topo.add_veth(host, "g0", tenant, "t0", options);
    Responder responder(host, "g0");  // g0 keeps IPv6 off: only the library answers

    // The tenant as a container comes up: IPv6 on, the kernel's defaults (accept_ra, DAD, SLAAC).
    tenant.run({"sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=0", "net.ipv6.conf.default.disable_ipv6=0",
                "net.ipv6.conf.t0.disable_ipv6=0"});
    tenant.run({"ip", "link", "set", "t0", "down"});
    tenant.run({"ip", "link", "set", "t0", "up"});

    const auto addresses = [&] { return tenant.run({"ip", "-6", "addr", "show", "dev", "t0"}); };
    // iproute2 prints addresses as inet_ntop does, as Ipv6Address::to_string does.
    const std::string slaac = ip6("fd00:0:0:1:0:ff:fe00:a").to_string() + "/64";
    // Present, and past duplicate address detection (which the gateway must leave unanswered).
    const auto configured = [&] {
        const std::string text = addresses();
        const auto at = text.find(slaac);
        return at != std::string::npos && text.find("tentative", at) == std::string::npos;
    };
    ASSERT_TRUE(eventually(configured, 20s)) << "no SLAAC address from the RA, or DAD never ended:\n" << addresses();
    EXPECT_NE(addresses().find("scope global dynamic"), std::string::npos) << addresses();
    EXPECT_GT(responder.advertisements.load(), 0);

    const std::string routes = tenant.run({"ip", "-6", "route", "show", "dev", "t0"});
    EXPECT_NE(routes.find("default via fe80::aa:ff:fe00:1"), std::string::npos) << routes;
    EXPECT_NE(routes.find("proto ra"), std::string::npos) << routes;
    EXPECT_EQ(tenant.run({"cat", "/proc/sys/net/ipv6/conf/t0/mtu"}), "1400\n") << "the MTU option";

    // The gateway by both its addresses; a peer of the VPC resolves to the gateway MAC.
    for (const char* address : {"fd00:0:0:1::1", "fe80::aa:ff:fe00:1%t0"}) {
        const auto ping = tenant.try_run({"ping", "-6", "-c", "2", "-i", "0.2", "-W", "2", address});
        EXPECT_TRUE(ping.ok()) << address << ":\n" << ping.output;
    }
    EXPECT_GE(responder.echo_replies.load(), 4);
    (void)tenant.try_run({"ping", "-6", "-c", "1", "-W", "1", "fd00:0:0:1:0:ff:fe00:14"});  // nobody answers the echo
    const std::string neighbours = tenant.run({"ip", "-6", "neigh", "show", "dev", "t0"});
    for (const char* neighbour : {"fd00:0:0:1:0:ff:fe00:14", "fd00:0:0:1::1", "fe80::aa:ff:fe00:1"})
        EXPECT_NE(neighbours.find(ip6(neighbour).to_string() + " lladdr 02:aa:00:00:00:01 router"), std::string::npos)
            << neighbour << ":\n"
            << neighbours;
    EXPECT_GE(responder.neighbor_advertisements.load(), 2);
    EXPECT_EQ(addresses().find("dadfailed"), std::string::npos) << "the tenant's DAD must pass:\n" << addresses();
}

}  // namespace
}  // namespace andromeda::testing
