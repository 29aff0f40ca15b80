// ICMP error translation (RFC 5508) checked byte for byte against packets scapy built
// (tests/data/nat/make_icmp_errors.py): PMTUD's Fragmentation Needed and traceroute's Time
// Exceeded back to the tenant, and a tenant's Port Unreachable out through a port forward.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "nat_test_packets.hpp"

namespace andromeda::nat {
namespace {

using namespace test;

Bytes load_hex(const std::string& name) {
    std::ifstream in(std::string(ANDROMEDA_SOURCE_DIR) + "/tests/data/nat/" + name + ".hex");
    std::string hex;
    in >> hex;
    Bytes out;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
        out.push_back(static_cast<std::uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
    if (out.empty()) ADD_FAILURE() << "missing or empty golden packet " << name;
    return out;
}

class IcmpErrorGolden : public ::testing::Test {
protected:
    static constexpr std::uint32_t kVni = 100;
    NatEngine nat{small_settings()};

    void SetUp() override {
        // As the script says: one port (61000) to allocate, one forward udp :5353 -> 10.0.0.20:53.
        nat.set_rules(one_vpc_rules(kVni, ip("198.51.100.1"), 61000, 61000,
                                    {{Protocol::udp, 5353, ip("10.0.0.20"), 53}}));
    }

    // Feeds `input` through the NAT in `direction` and expects exactly `expected`'s bytes.
    NatResult expect_translation(const std::string& input, const std::string& expected, bool outbound) {
        Bytes packet = load_hex(input);
        const NatResult r = outbound ? nat.outbound(kVni, packet, at(10)) : nat.inbound(packet, at(10));
        EXPECT_TRUE(r.translated()) << input << ": " << to_string(r.drop);
        EXPECT_EQ(packet, load_hex(expected)) << input << " -> " << expected;
        EXPECT_TRUE(checksums_valid(packet)) << expected;
        return r;
    }
};

TEST_F(IcmpErrorGolden, FragmentationNeededReachesTheTenantWithItsOwnPacketQuoted) {
    expect_translation("udp_tenant", "udp_translated", true);
    const NatResult r = expect_translation("udp_frag_needed", "udp_frag_needed_to_tenant", false);
    EXPECT_TRUE(r.to_tenant);
    EXPECT_EQ(r.vni, kVni);
    EXPECT_EQ(r.tenant, ip("10.0.0.10"));
    // The next-hop MTU is untouched: PMTUD learns 1280.
    EXPECT_EQ(wire::load_be16(&load_hex("udp_frag_needed_to_tenant")[20 + 6]), 1280);
    EXPECT_EQ(nat.counters().icmp_errors_translated, 1u);
}

TEST_F(IcmpErrorGolden, TimeExceededWithAnEightByteQuoteOfTcp) {
    expect_translation("tcp_tenant", "tcp_translated", true);
    expect_translation("tcp_time_exceeded", "tcp_time_exceeded_to_tenant", false);
}

TEST_F(IcmpErrorGolden, TimeExceededForAPingRestoresTheEchoIdentifier) {
    expect_translation("ping_tenant", "ping_translated", true);
    expect_translation("ping_time_exceeded", "ping_time_exceeded_to_tenant", false);
}

TEST_F(IcmpErrorGolden, TenantPortUnreachableLeavesThroughTheForwardWithTheNatAddress) {
    const NatResult in = expect_translation("fwd_inbound", "fwd_delivered", false);
    EXPECT_EQ(in.tenant, ip("10.0.0.20"));
    const NatResult out = expect_translation("fwd_port_unreachable", "fwd_port_unreachable_translated", true);
    EXPECT_FALSE(out.to_tenant);
}

TEST_F(IcmpErrorGolden, ErrorForAnUnknownFlowIsDroppedUntouched) {
    Bytes packet = load_hex("udp_frag_needed");  // no flow: the tenant never sent
    const Bytes before = packet;
    EXPECT_EQ(nat.inbound(packet, at(10)).drop, DropReason::icmp_error_no_flow);
    EXPECT_EQ(packet, before);
    Bytes outbound_error = load_hex("fwd_port_unreachable");  // no inbound flow yet
    EXPECT_EQ(nat.outbound(kVni, outbound_error, at(10)).drop, DropReason::icmp_error_no_flow);
}

TEST_F(IcmpErrorGolden, ErrorsDoNotRefreshTheFlow) {
    expect_translation("udp_tenant", "udp_translated", true);  // at 10 s: expires at 130 s
    Bytes error = load_hex("udp_frag_needed");
    ASSERT_TRUE(nat.inbound(error, at(129)).translated());
    Bytes late = load_hex("udp_frag_needed");
    EXPECT_EQ(nat.inbound(late, at(130)).drop, DropReason::icmp_error_no_flow);
}

// An error about a UDP packet sent without checksum: the quoted checksum stays 0.
TEST(IcmpError, QuotedUdpWithoutChecksumStaysWithout) {
    NatEngine nat{small_settings()};
    nat.set_rules(one_vpc_rules(7, ip("198.51.100.1"), 61000, 61000));
    Bytes sent = udp_packet(ip("10.0.0.10"), 40000, ip("203.0.113.7"), 4242, 32, false);
    const Bytes original = sent;
    ASSERT_TRUE(nat.outbound(7, sent, at(1)).translated());
    EXPECT_EQ(udp_checksum_field(sent), 0);
    Bytes error = icmp_error(ip("192.0.2.1"), ip("198.51.100.1"), 3, 4, 1280, sent, 28);
    ASSERT_TRUE(nat.inbound(error, at(2)).translated());
    EXPECT_TRUE(checksums_valid(error));
    EXPECT_TRUE(std::equal(original.begin(), original.begin() + 28, error.begin() + 28));
}

}  // namespace
}  // namespace andromeda::nat
