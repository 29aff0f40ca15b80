// Property tests of the DHCP server and the DNS forwarder: scapy's requests mutated at random (bit
// flips, byte changes, truncations, with the checksums made right again so the mutations reach
// the parsers) never crash either, and whatever they send is well-formed: Ethernet, IPv4 and UDP
// with valid checksums around a message that parses, to the asker's port.
#include <gtest/gtest.h>

#include <random>

#include "unit/gateway/dhcp_dns_world.hpp"
#include "wire/dhcp.hpp"
#include "wire/ethernet.hpp"
#include "wire/ipv4.hpp"
#include "wire/udp.hpp"
#include "support/sanitizer_scale.hpp"

namespace andromeda::gateway {
namespace {

using namespace testing;

// Makes the IPv4 header checksum and the UDP length and checksum right for what the frame now holds
// (an untagged frame with a 20-byte IPv4 header, as the goldens are).
void fix_checksums(Bytes& f) {
    if (f.size() < 42) return;
    test_support::put16(&f[14 + 2], static_cast<std::uint16_t>(f.size() - 14));
    test_support::put16(&f[14 + 10], 0);
    test_support::put16(&f[14 + 10], test_support::checksum_of(test_support::ones_sum(&f[14], 20)));
    const std::size_t udp_length = f.size() - 34;
    test_support::put16(&f[34 + 4], static_cast<std::uint16_t>(udp_length));
    test_support::put16(&f[34 + 6], 0);
    const std::uint32_t pseudo = test_support::ones_sum(&f[26], 8) + 17 + static_cast<std::uint32_t>(udp_length);
    const std::uint16_t check = test_support::checksum_of(test_support::ones_sum(&f[34], udp_length, pseudo));
    test_support::put16(&f[34 + 6], check == 0 ? 0xffff : check);
}

Bytes mutate(Bytes f, std::mt19937& rng) {
    switch (rng() % 4) {
        case 0:
            for (int i = 1 + static_cast<int>(rng() % 4); i > 0; --i) f[42 + rng() % (f.size() - 42)] ^= static_cast<std::uint8_t>(1 << rng() % 8);
            break;
        case 1:
            for (int i = 1 + static_cast<int>(rng() % 4); i > 0; --i) f[42 + rng() % (f.size() - 42)] = static_cast<std::uint8_t>(rng() % 3 ? rng() % 64 : rng());
            break;
        case 2: f.resize(42 + rng() % (f.size() - 41)); break;
        default:
            for (std::size_t i = rng() % 64; i > 0; --i) f.push_back(static_cast<std::uint8_t>(rng()));
            break;
    }
    if (rng() % 16 != 0) fix_checksums(f);
    return f;
}

// The UDP payload of a well-formed reply to the VM: checksums valid, from the gateway's `port`.
std::optional<Bytes> check_reply(const Bytes& frame, std::uint16_t port) {
    const auto eth = wire::EthernetView::parse(frame);
    EXPECT_TRUE(eth);
    if (!eth) return std::nullopt;
    EXPECT_EQ(eth->source(), vpc_gateway().mac);
    const auto ip = wire::Ipv4View::parse(eth->payload());
    EXPECT_TRUE(ip && ip->checksum_valid());
    if (!ip) return std::nullopt;
    EXPECT_EQ(ip->source(), vpc_gateway().ipv4);
    const auto udp = wire::UdpView::parse(ip->payload());
    EXPECT_TRUE(udp && udp->checksum() != 0 && udp->checksum_valid(ip->source(), ip->destination()));
    if (!udp) return std::nullopt;
    EXPECT_EQ(udp->source_port(), port);
    return Bytes(udp->payload().begin(), udp->payload().end());
}

TEST(DhcpServerPropertyTest, MutatedRequestsNeverCrashTheServerAndEveryReplyIsWellFormed) {
    const char* requests[] = {"dhcp_discover", "dhcp_request", "dhcp_request_wrong_address", "dhcp_request_renewing",
                              "dhcp_inform", "dhcp_release", "dhcp_decline", "dhcp_discover_overload"};
    std::mt19937 rng(67);
    DhcpServerConfig config;
    config.rate = {1'000'000, 1'000'000, 64};  // the limiter is not under test here
    DhcpServer server(config);
    const DhcpEndpoint e = endpoint();
    std::size_t replies = 0;
    Bytes out(kDhcpReplyFrameRoom);
    const int rounds = andromeda::test::sanitizer_scaled(20000);
    for (int round = 0; round < rounds; ++round) {
        const Bytes frame = mutate(golden(requests[rng() % std::size(requests)]), rng);
        const DhcpReply r = server.handle(frame, e, round * kSecond, out);
        if (!r.replied()) continue;
        ++replies;
        ASSERT_LE(r.length, out.size());
        const auto message = check_reply(Bytes(out.begin(), out.begin() + static_cast<long>(r.length)), 67);
        ASSERT_TRUE(message);
        const auto dhcp = wire::DhcpView::parse(*message);
        ASSERT_TRUE(dhcp) << to_string(dhcp.error().kind);
        EXPECT_EQ(dhcp->op(), wire::dhcp_op::kBootReply);
        EXPECT_EQ(dhcp->client_mac(), e.mac) << "only the endpoint is ever answered";
        EXPECT_GE(message->size(), wire::kBootpMinMessageLength);
        EXPECT_LE(message->size() + 28, std::size_t{e.mtu});
        const auto type = dhcp->message_type();
        ASSERT_TRUE(type);
        EXPECT_TRUE(*type == wire::dhcp_message_type::kOffer || *type == wire::dhcp_message_type::kAck ||
                    *type == wire::dhcp_message_type::kNak);
        if (*type != wire::dhcp_message_type::kNak && dhcp->yiaddr().value() != 0) {
            EXPECT_EQ(dhcp->yiaddr(), e.address);
        }
    }
    EXPECT_GT(replies, static_cast<std::size_t>(rounds / 20)) << "the mutations should leave many requests answerable";
    const DhcpCounters& c = server.counters();
    EXPECT_EQ(c.offers + c.acks + c.naks, replies);
}

TEST(DnsForwarderPropertyTest, MutatedQueriesAndAnswersNeverCrashTheForwarderAndEveryReplyIsWellFormed) {
    const char* queries[] = {"dns_query_a", "dns_query_aaaa_edns", "dns_query_nxdomain", "dns_query_nodata",
                             "dns_query_upstream", "dns_query_pointer_loop"};
    std::mt19937 rng(68);
    const DnsZone zone = blue_zone();
    const DnsVpc vpc{vpc_gateway(), &zone, 1450};
    DnsForwarderConfig config;
    config.upstreams = {DnsUpstream{ipv4("192.0.2.53"), 53}, DnsUpstream{ipv4("192.0.2.54"), 53}};
    config.max_in_flight = 32;
    config.seed = 9;
    DnsForwarder forwarder(config);
    Bytes out(4096);
    const Bytes upstream_answer = golden("dns_answer_upstream");
    std::size_t replies = 0;
    std::uint64_t now = 0;
    const int rounds = andromeda::test::sanitizer_scaled(20000);
    for (int round = 0; round < rounds; ++round) {
        now += kSecond / 4;
        const Bytes frame = mutate(golden(queries[rng() % std::size(queries)]), rng);
        DnsAction a = forwarder.handle_udp_query(frame, vpc, now, out);
        if (a.kind == DnsActionKind::forward) {
            ASSERT_LT(a.upstream, config.upstreams.size());
            // Answer it now and then, sometimes with a mutated answer carrying its ID.
            Bytes answer = mutate(upstream_answer, rng);
            if (answer.size() >= 44) std::copy(out.begin(), out.begin() + 2, answer.begin() + 42);
            if (rng() % 2) a = forwarder.handle_upstream_answer(wire::ByteSpan(answer).subspan(42), a.upstream, out);
        }
        while (a.kind != DnsActionKind::reply_udp) {
            a = forwarder.poll_timeouts(now, out);
            if (a.outcome == DnsOutcome::idle) break;
        }
        if (a.kind != DnsActionKind::reply_udp) continue;
        ++replies;
        const auto message = check_reply(Bytes(out.begin(), out.begin() + static_cast<long>(a.length)), 53);
        ASSERT_TRUE(message);
        const auto dns = wire::DnsMessageView::parse(*message);
        ASSERT_TRUE(dns) << to_string(dns.error().kind) << " " << to_string(a.outcome);
        EXPECT_TRUE(dns->header().response);
        EXPECT_LE(message->size(), std::size_t{1450 - 28});
        ASSERT_LE(forwarder.in_flight(), config.max_in_flight);
    }
    EXPECT_GT(replies, static_cast<std::size_t>(rounds / 4));
    const DnsCounters& c = forwarder.counters();
    EXPECT_GT(c.answered_locally, 0u);
    EXPECT_GT(c.formerr, 0u);
    EXPECT_GT(c.answers_returned, 0u);
    EXPECT_GT(c.timeouts, 0u);
}

}  // namespace
}  // namespace andromeda::gateway
