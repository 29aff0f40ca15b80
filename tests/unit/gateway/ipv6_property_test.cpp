// Property tests for the gateway's IPv6 side: for random gateways and random requests (valid ones,
// valid ones with bytes changed or cut, and noise), nothing crashes, the judges agree with the
// writers, and every frame the gateway writes is one a receiver accepts: it parses, its lengths
// agree, its checksum verifies, and an NA or RA passes RFC 4861's receive checks.
#include <gtest/gtest.h>

#include <random>

#include "gateway/icmp_echo.hpp"
#include "gateway/icmp_error.hpp"
#include "gateway/nd_proxy.hpp"
#include "gateway/router_advertisement.hpp"
#include "unit/dataplane/frame_validator.hpp"
#include "unit/gateway/ipv6_test_gateway.hpp"
#include "wire/ipv6_addressing.hpp"

namespace andromeda::gateway {
namespace {

using namespace ipv6_test;

class Random {
public:
    explicit Random(std::uint32_t seed) : engine_(seed) {}
    std::uint32_t below(std::uint32_t n) { return std::uniform_int_distribution<std::uint32_t>(0, n - 1)(engine_); }
    bool coin() { return below(2) == 1; }
    std::uint8_t byte() { return static_cast<std::uint8_t>(below(256)); }
    template <std::size_t N>
    std::array<std::uint8_t, N> bytes() {
        std::array<std::uint8_t, N> a{};
        for (auto& v : a) v = byte();
        return a;
    }

private:
    std::mt19937 engine_;
};

Ipv6GatewayConfig random_config(Random& random) {
    Ipv6GatewayConfig config = test_config();
    auto m = random.bytes<6>();
    m[0] = static_cast<std::uint8_t>((m[0] & 0xfe) | 0x02);
    config.mac = wire::MacAddress(m);
    auto prefix = random.bytes<16>();
    prefix[0] = 0xfd;
    config.prefix = wire::Ipv6Prefix(wire::Ipv6Address(prefix), 64);
    config.global_address.reset();
    if (random.coin()) {
        auto global = config.prefix.network().bytes();
        global[15] = static_cast<std::uint8_t>(1 + random.below(200));
        config.global_address = wire::Ipv6Address(global);
    }
    config.mtu = 1280 + random.below(8000);
    config.dns_servers.clear();
    for (std::uint32_t n = random.below(kMaxDnsServers + 1); n > 0; --n)
        config.dns_servers.push_back(wire::Ipv6Address(random.bytes<16>()));
    config.router_advertisements.autonomous = random.coin();
    config.router_advertisements.managed = random.coin();
    EXPECT_EQ(check_ipv6_gateway_config(config), std::vector<std::string>{});
    return config;
}

// An address the request may name: the gateway's, one of the prefix, the asker's, or anything.
wire::Ipv6Address random_address(Random& random, const Ipv6Gateway& gateway) {
    auto in_prefix = gateway.prefix().network().bytes();
    for (std::size_t i = 8; i < 16; ++i) in_prefix[i] = random.byte();
    switch (random.below(6)) {
        case 0:
            return gateway.link_local();
        case 1:
            return gateway.global_address().value_or(gateway.link_local());
        case 2:
            return kTenant;
        case 3:
            return wire::Ipv6Address{};
        case 4:
            return wire::Ipv6Address(random.bytes<16>());
        default:
            return wire::Ipv6Address(in_prefix);
    }
}

// A request of a random kind, mostly valid, then perhaps damaged.
Bytes random_request(Random& random, const Ipv6Gateway& gateway) {
    ts::Icmpv6Frame f;
    const wire::Ipv6Address source = random.coin() ? kTenant : random_address(random, gateway);
    const wire::Ipv6Address target = random_address(random, gateway);
    switch (random.below(4)) {
        case 0:
            f = solicitation(source, target);
            break;
        case 1:
            f = router_solicitation(random.coin() ? kTenantLinkLocal : source);
            break;
        default:
            f = solicitation(source, target);
            f.type = ts::icmpv6::kEchoRequest;
            f.dst = raw(target);
            f.hop_limit = random.byte();
            break;
    }
    if (random.below(4) == 0) f.tags = {ts::VlanTag{0x8100, static_cast<std::uint16_t>(random.below(4096)), 0, false}};
    if (random.below(8) == 0) f.fragment_header = true;
    if (random.below(8) == 0) f.hop_limit = random.byte();
    for (std::uint32_t n = random.below(3); n > 0; --n) {  // an option of one unit: known, unknown, or length 0
        static constexpr std::uint8_t kTypes[] = {1, 2, 3, 5, 25, 31, 200, 253};
        const Bytes data = {random.byte(), random.byte(), random.byte(), random.byte(), random.byte(), random.byte()};
        const Bytes option = ts::nd_option(kTypes[random.below(8)], data, random.below(16) == 0 ? 0 : 1);
        f.body.insert(f.body.end(), option.begin(), option.end());
    }
    Bytes frame = ts::icmpv6_frame(f);
    if (random.below(4) == 0) frame[random.below(static_cast<std::uint32_t>(frame.size()))] ^= random.byte();
    if (random.below(8) == 0) frame.resize(random.below(static_cast<std::uint32_t>(frame.size()) + 1));
    if (random.below(16) == 0) frame.insert(frame.end(), random.below(30), 0);  // Ethernet padding
    return frame;
}

// What every frame the gateway writes must be; returns its IPv6 view's checks as failures.
void expect_well_formed(const Bytes& frame, const Ipv6Gateway& gateway) {
    EXPECT_EQ(testing::frame_problems(frame), std::vector<std::string>{});
    const Answer a = read_answer(frame);
    if (!a.ip) return;
    EXPECT_EQ(a.ethernet->source(), gateway.mac());
    const auto message = a.ip->upper_layer_payload();
    ASSERT_FALSE(message.empty());
    if (message[0] == wire::icmpv6_type::kNeighborAdvertisement) {
        const auto na = wire::validate_neighbor_advertisement(*a.ip);
        EXPECT_TRUE(na) << wire::to_string(na.error());
        if (na) {
            EXPECT_EQ(na->options().target_link_layer_address(), gateway.mac());
        }
    } else if (message[0] == wire::icmpv6_type::kRouterAdvertisement) {
        const auto ra = wire::validate_router_advertisement(*a.ip);
        EXPECT_TRUE(ra) << wire::to_string(ra.error());
        if (ra) {
            EXPECT_EQ(ra->options().mtu(), gateway.config().mtu);
        }
    } else {
        EXPECT_TRUE(message[0] == wire::icmpv6_type::kEchoReply || message[0] == wire::icmpv6_type::kPacketTooBig)
            << int{message[0]};
        EXPECT_FALSE(wire::is_multicast(a.ip->source()));
    }
}

TEST(GatewayIpv6Property, AnswersToRandomRequestsAreAlwaysWellFormed) {
    Random random(30);
    std::size_t advertisements = 0, router_advertisements = 0, echoes = 0, errors = 0, refused = 0;
    for (int g = 0; g < 40; ++g) {
        const Ipv6Gateway gateway(random_config(random));
        RouterAdvertisementSchedule schedule(gateway.config().router_advertisements, static_cast<std::uint64_t>(g));
        IcmpErrorRateLimiter limiter({}, [] { return std::uint64_t{0}; });
        std::uint64_t now = 0;
        for (int i = 0; i < 250; ++i) {
            const Bytes request = random_request(random, gateway);
            now += random.below(4) * kNanosecondsPerSecond;
            Bytes out(2048);

            const NdProxyReply na = write_neighbor_advertisement_reply(request, gateway, kAsker, out);
            EXPECT_EQ(judge_neighbor_solicitation(request, gateway, kAsker).outcome, na.outcome);
            if (na.answered())
                expect_well_formed(Bytes(out.begin(), out.begin() + static_cast<long>(na.length)), gateway);

            const RouterAdvertisementReply ra = answer_router_solicitation(request, gateway, schedule, now, out);
            if (ra.answered())
                expect_well_formed(Bytes(out.begin(), out.begin() + static_cast<long>(ra.length)), gateway);
            const RouterAdvertisementReply ra_judged = judge_router_solicitation(request, gateway);
            if (ra.answered() || ra.outcome == RouterSolicitationOutcome::deferred)
                EXPECT_TRUE(ra_judged.answered());
            else
                EXPECT_EQ(ra_judged.outcome, ra.outcome);

            const EchoReply echo = write_echo_reply(request, gateway, out);
            if (echo.replied())
                expect_well_formed(Bytes(out.begin(), out.begin() + static_cast<long>(echo.length)), gateway);
            Bytes in_place = request;
            const EchoReply echoed = echo_reply_in_place(in_place, gateway);
            EXPECT_EQ(echoed.outcome, echo.outcome);

            const IcmpErrorFrame ptb = write_packet_too_big_rate_limited(request, 1280, gateway, limiter, 1, now, out);
            if (ptb.written())
                expect_well_formed(Bytes(out.begin(), out.begin() + static_cast<long>(ptb.length)), gateway);

            advertisements += na.answered();
            router_advertisements += ra.answered();
            echoes += echo.replied();
            errors += ptb.written();
            refused += !(na.answered() || ra.answered() || echo.replied() || ptb.written());
        }
        Bytes out(kMaxRouterAdvertisementFrame);
        out.resize(write_unsolicited_router_advertisement(gateway, out));
        expect_well_formed(out, gateway);
    }
    // The random requests must exercise every answer, not only the refusals.
    EXPECT_GT(advertisements, 500u);
    EXPECT_GT(router_advertisements, 200u);
    EXPECT_GT(echoes, 200u);
    EXPECT_GT(errors, 500u);
    EXPECT_GT(refused, 1000u);
}

TEST(GatewayIpv6Property, NoiseNeverCrashes) {
    Random random(4443);
    const Ipv6Gateway gateway(test_config());
    RouterAdvertisementSchedule schedule(gateway.config().router_advertisements, 1);
    IcmpErrorRateLimiter limiter;
    for (int i = 0; i < 20000; ++i) {
        Bytes frame(random.below(200));
        for (auto& b : frame) b = random.byte();
        if (frame.size() > 20 && random.coin()) {  // Ethernet/IPv6 with a length that may fit
            frame[12] = 0x86;
            frame[13] = 0xdd;
            frame[14] = static_cast<std::uint8_t>(0x60 | (frame[14] & 0x0f));
            frame[18] = 0;
            frame[19] = static_cast<std::uint8_t>(random.below(static_cast<std::uint32_t>(frame.size())));
            if (frame.size() > 20) frame[20] = random.coin() ? 58 : frame[20];
        }
        Bytes out(random.below(300));
        (void)write_neighbor_advertisement_reply(frame, gateway, kAsker, out);
        (void)answer_router_solicitation(frame, gateway, schedule, static_cast<std::uint64_t>(i) * 1'000'000'000, out);
        (void)write_echo_reply(frame, gateway, out);
        (void)write_packet_too_big_rate_limited(frame, 1280, gateway, limiter, 1, 0, out);
        Bytes in_place = frame;
        (void)echo_reply_in_place(in_place, gateway);
    }
}

}  // namespace
}  // namespace andromeda::gateway
