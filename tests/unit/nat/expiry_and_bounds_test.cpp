// Time and limits: idle timeouts at exactly their value (both sides of the instant), the wheel
// reclaiming flows and ports, removal of an endpoint's flows, rule changes, a full table and an
// exhausted port range (new flows dropped and counted, existing ones unaffected).
#include <gtest/gtest.h>

#include <set>

#include "nat_test_packets.hpp"

namespace andromeda::nat {
namespace {

using namespace test;
namespace flag = wire::tcp_flag;

constexpr std::uint32_t kVni = 100;
const Ipv4Address kNat = ip("198.51.100.1");
const Ipv4Address kTenant = ip("10.0.0.10");
const Ipv4Address kRemote = ip("203.0.113.7");
constexpr double kT0 = 1000.0;
constexpr double kNs = 1e-9;

std::unique_ptr<NatEngine> engine(NatSettings settings = small_settings(),
                                  std::shared_ptr<const NatRules> rules = one_vpc_rules(kVni, kNat)) {
    auto nat = std::make_unique<NatEngine>(settings);
    nat->set_rules(std::move(rules));
    return nat;
}

// An outbound packet of the given protocol from tenant port `port` at `t`; returns its NAT port.
std::uint16_t open(NatEngine& nat, Protocol protocol, std::uint16_t port, double t) {
    Bytes p = protocol == Protocol::udp   ? udp_packet(kTenant, port, kRemote, 53)
              : protocol == Protocol::tcp ? tcp_packet(kTenant, port, kRemote, 80, flag::kSyn)
                                          : icmp_echo(kTenant, kRemote, wire::icmpv4_type::kEchoRequest, port, 1);
    EXPECT_TRUE(nat.outbound(kVni, p, at(t)).translated());
    return endpoints(p).source_port;
}

// The reply to open(): translated, or why not.
DropReason reply(NatEngine& nat, Protocol protocol, std::uint16_t nat_port, double t, std::uint8_t tcp_flags = 0) {
    Bytes p = protocol == Protocol::udp   ? udp_packet(kRemote, 53, kNat, nat_port)
              : protocol == Protocol::tcp ? tcp_packet(kRemote, 80, kNat, nat_port, tcp_flags)
                                          : icmp_echo(kRemote, kNat, wire::icmpv4_type::kEchoReply, nat_port, 1);
    return nat.inbound(p, at(t)).drop;
}

struct TimeoutCase {
    const char* name;
    Protocol protocol;
    double timeout;
    std::uint8_t reply_flags;  // TCP: a reply that keeps the state (handshake)
};

class IdleTimeout : public ::testing::TestWithParam<TimeoutCase> {};

// A flow last seen at t0 with timeout T still matches at t0 + T - 1 ns and no longer at t0 + T.
TEST_P(IdleTimeout, FlowExpiresAtExactlyItsTimeout) {
    const TimeoutCase c = GetParam();
    auto nat = engine();
    const std::uint16_t alive = open(*nat, c.protocol, 40000, kT0);
    const std::uint16_t dead = open(*nat, c.protocol, 40001, kT0);
    EXPECT_EQ(reply(*nat, c.protocol, alive, kT0 + c.timeout - kNs, c.reply_flags), DropReason::none);
    EXPECT_EQ(reply(*nat, c.protocol, dead, kT0 + c.timeout, c.reply_flags),
              DropReason::no_flow);
    EXPECT_EQ(nat->counters().flows_expired, 1u);
}

INSTANTIATE_TEST_SUITE_P(
    Defaults, IdleTimeout,
    ::testing::Values(TimeoutCase{"udp_120s", Protocol::udp, 120, 0},
                      TimeoutCase{"icmp_60s", Protocol::icmp, 60, 0},
                      TimeoutCase{"tcp_handshake_30s", Protocol::tcp, 30, flag::kSyn | flag::kAck}),
    [](const auto& test_info) { return std::string(test_info.param.name); });

TEST(Timeouts, EstablishedTcpLastsTwoHoursFourMinutesFromItsLastPacket) {
    auto nat = engine();
    for (const double last : {7440.0, 7440.0 - kNs}) {
        const std::uint16_t port = last == 7440.0 ? 40000 : 40001;
        const std::uint16_t nat_port = open(*nat, Protocol::tcp, port, kT0);
        ASSERT_EQ(reply(*nat, Protocol::tcp, nat_port, kT0, flag::kSyn | flag::kAck), DropReason::none);
        Bytes ack = tcp_packet(kTenant, port, kRemote, 80, flag::kAck);
        ASSERT_TRUE(nat->outbound(kVni, ack, at(kT0 + 1)).translated());
        EXPECT_EQ(reply(*nat, Protocol::tcp, nat_port, kT0 + 1 + last, flag::kAck),
                  last == 7440.0 ? DropReason::no_flow : DropReason::none);
    }
}

TEST(Timeouts, AreConfigurable) {
    NatSettings settings = small_settings();
    settings.timeouts.udp = std::chrono::seconds(5);
    auto nat = engine(settings);
    const std::uint16_t a = open(*nat, Protocol::udp, 40000, kT0);
    const std::uint16_t b = open(*nat, Protocol::udp, 40001, kT0);
    EXPECT_EQ(reply(*nat, Protocol::udp, a, kT0 + 5 - kNs), DropReason::none);
    EXPECT_EQ(reply(*nat, Protocol::udp, b, kT0 + 5), DropReason::no_flow);
}

TEST(Expiry, TheWheelReclaimsFlowsMappingsAndPorts) {
    auto nat = engine();
    for (std::uint16_t port = 40000; port < 40010; ++port) open(*nat, Protocol::udp, port, kT0);
    EXPECT_EQ(nat->flow_count(), 10u);
    EXPECT_EQ(nat->expire(at(kT0 + 120 - kNs)), 0u);
    EXPECT_EQ(nat->flow_count(), 10u);
    // Reclaimed within one wheel tick (1 s) of the deadline.
    EXPECT_EQ(nat->expire(at(kT0 + 121)), 10u);
    EXPECT_EQ(nat->flow_count(), 0u);
    EXPECT_EQ(nat->mapping_count(), 0u);
    EXPECT_TRUE(nat->flows(at(kT0 + 121)).empty());
    const NatCounters c = nat->counters();
    EXPECT_EQ(c.flows_expired, 10u);
    EXPECT_EQ(c.mappings_released, 10u);
    // The ports are free again: another tenant asking for 40000 gets it.
    Bytes other = udp_packet(ip("10.0.0.99"), 40000, kRemote, 53);
    ASSERT_TRUE(nat->outbound(kVni, other, at(kT0 + 122)).translated());
    EXPECT_EQ(endpoints(other).source_port, 40000);
}

TEST(Expiry, ListingHidesFlowsPastTheirDeadline) {
    auto nat = engine();
    open(*nat, Protocol::icmp, 7, kT0);
    EXPECT_EQ(nat->flows(at(kT0 + 60 - kNs)).size(), 1u);
    EXPECT_TRUE(nat->flows(at(kT0 + 60)).empty());
}

TEST(Expiry, RemovingAnEndpointExpiresOnlyItsFlows) {
    auto nat = engine(small_settings(1024, 4),
                      std::make_shared<const NatRules>(std::vector<VpcNatConfig>{
                          {kVni, kNat, 1024, 65535, {}}, {200, ip("198.51.100.2"), 1024, 65535, {}}}));
    std::vector<std::uint16_t> removed_ports;
    for (std::uint16_t port = 40000; port < 40050; ++port) removed_ports.push_back(open(*nat, Protocol::udp, port, kT0));
    Bytes other_tenant = udp_packet(ip("10.0.0.11"), 40000, kRemote, 53);
    Bytes same_ip_other_vpc = udp_packet(kTenant, 40000, kRemote, 53);
    ASSERT_TRUE(nat->outbound(kVni, other_tenant, at(kT0)).translated());
    ASSERT_TRUE(nat->outbound(200, same_ip_other_vpc, at(kT0)).translated());

    EXPECT_EQ(nat->expire_endpoint(kVni, kTenant), 50u);
    EXPECT_EQ(nat->flow_count(), 2u);
    EXPECT_EQ(nat->counters().flows_removed_endpoint, 50u);
    for (const std::uint16_t port : removed_ports) EXPECT_EQ(reply(*nat, Protocol::udp, port, kT0 + 1), DropReason::no_flow);
    Bytes to_other = udp_packet(kRemote, 53, kNat, endpoints(other_tenant).source_port);
    EXPECT_EQ(nat->inbound(to_other, at(kT0 + 1)).tenant, ip("10.0.0.11"));
    Bytes to_other_vpc = udp_packet(kRemote, 53, ip("198.51.100.2"), endpoints(same_ip_other_vpc).source_port);
    EXPECT_EQ(nat->inbound(to_other_vpc, at(kT0 + 1)).vni, 200u);
}

TEST(Rules, ChangingTheNatAddressRetiresOldFlows) {
    auto nat = engine();
    const std::uint16_t port = open(*nat, Protocol::udp, 40000, kT0);
    nat->set_rules(one_vpc_rules(kVni, ip("198.51.100.9")));
    // Replies to the old address are no longer ours; the tenant's next packet uses the new one.
    EXPECT_EQ(reply(*nat, Protocol::udp, port, kT0 + 1), DropReason::not_nat_address);
    Bytes next = udp_packet(kTenant, 40000, kRemote, 53);
    ASSERT_TRUE(nat->outbound(kVni, next, at(kT0 + 2)).translated());
    EXPECT_EQ(endpoints(next).source, ip("198.51.100.9"));
    EXPECT_EQ(nat->counters().flows_removed_stale, 1u);
    EXPECT_EQ(nat->flow_count(), 1u);
    // A VPC that loses NAT altogether: its flows stop translating.
    nat->set_rules(std::make_shared<const NatRules>());
    Bytes after = udp_packet(kTenant, 40000, kRemote, 53);
    EXPECT_EQ(nat->outbound(kVni, after, at(kT0 + 3)).drop, DropReason::no_nat_config);
}

TEST(Bounds, FullTableDropsNewFlowsAndKeepsExistingOnes) {
    auto nat = engine(small_settings(4));
    std::vector<std::uint16_t> ports;
    for (std::uint16_t port = 40000; port < 40004; ++port) ports.push_back(open(*nat, Protocol::udp, port, kT0));
    Bytes fifth = udp_packet(kTenant, 40004, kRemote, 53);
    const Bytes before = fifth;
    EXPECT_EQ(nat->outbound(kVni, fifth, at(kT0)).drop, DropReason::table_full);
    EXPECT_EQ(fifth, before);  // a private address never leaves
    EXPECT_EQ(nat->counters().drop_table_full, 1u);
    EXPECT_EQ(nat->mapping_count(), 4u);  // no port was taken for the refused flow
    for (const std::uint16_t port : ports) EXPECT_EQ(reply(*nat, Protocol::udp, port, kT0 + 1), DropReason::none);
    Bytes again = udp_packet(kTenant, 40000, kRemote, 53);
    EXPECT_TRUE(nat->outbound(kVni, again, at(kT0 + 1)).translated());
    // Room again once flows expire.
    nat->expire(at(kT0 + 200));
    Bytes later = udp_packet(kTenant, 40004, kRemote, 53);
    EXPECT_TRUE(nat->outbound(kVni, later, at(kT0 + 200)).translated());
}

TEST(Bounds, ExhaustedPortRangeDropsNewMappingsAndKeepsExistingOnes) {
    auto nat = engine(small_settings(), one_vpc_rules(kVni, kNat, 2000, 2003));
    std::set<std::uint16_t> ports;
    for (std::uint8_t host = 1; host <= 4; ++host) {
        Bytes p = udp_packet(Ipv4Address(kTenant.value() + host), 40000, kRemote, 53);
        ASSERT_TRUE(nat->outbound(kVni, p, at(kT0)).translated());
        ports.insert(endpoints(p).source_port);
    }
    EXPECT_EQ(ports, (std::set<std::uint16_t>{2000, 2001, 2002, 2003}));
    Bytes fifth = udp_packet(ip("10.0.0.50"), 40000, kRemote, 53);
    const Bytes before = fifth;
    EXPECT_EQ(nat->outbound(kVni, fifth, at(kT0)).drop, DropReason::ports_exhausted);
    EXPECT_EQ(fifth, before);
    EXPECT_EQ(nat->counters().drop_ports_exhausted, 1u);
    EXPECT_EQ(nat->flow_count(), 4u);
    // Existing mappings keep working, towards new destinations too (no new port needed).
    Bytes new_destination = udp_packet(Ipv4Address(kTenant.value() + 1), 40000, ip("192.0.2.1"), 123);
    ASSERT_TRUE(nat->outbound(kVni, new_destination, at(kT0 + 1)).translated());
    // Other protocols have their own ports.
    Bytes tcp = tcp_packet(ip("10.0.0.50"), 40000, kRemote, 80, flag::kSyn);
    EXPECT_TRUE(nat->outbound(kVni, tcp, at(kT0 + 1)).translated());
}

TEST(Bounds, NatAddressLimitIsCountedNotCrashed) {
    NatSettings settings = small_settings();
    settings.max_nat_addresses = 1;
    auto nat = engine(settings, std::make_shared<const NatRules>(std::vector<VpcNatConfig>{
                                    {1, ip("198.51.100.1"), 1024, 65535, {}}, {2, ip("198.51.100.2"), 1024, 65535, {}}}));
    Bytes a = udp_packet(kTenant, 40000, kRemote, 53);
    Bytes b = udp_packet(kTenant, 40000, kRemote, 53);
    ASSERT_TRUE(nat->outbound(1, a, at(kT0)).translated());
    EXPECT_EQ(nat->outbound(2, b, at(kT0)).drop, DropReason::nat_address_limit);
}

}  // namespace
}  // namespace andromeda::nat
