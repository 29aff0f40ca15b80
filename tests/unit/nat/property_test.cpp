// Properties over random traffic:
//  - every packet the NAT translates has all its checksums right by full recomputation (the
//    incremental RFC 1624 patches equal a recompute), including odd lengths, IPv4 options, UDP
//    without checksum and ICMP errors quoting any length;
//  - an outbound packet leaves with a NAT address as source: a private address never leaks;
//  - a reply reaches the tenant that opened the flow;
//  - random and mutated bytes never crash the engine.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "nat_test_packets.hpp"
#include "support/sanitizer_scale.hpp"

namespace andromeda::nat {
namespace {

using namespace test;

struct Sent {  // a translated outbound packet and who sent it
    Bytes packet;
    std::uint32_t vni;
    Endpoints tenant_side;
};

class RandomTraffic {
public:
    explicit RandomTraffic(std::uint32_t seed) : rng_(seed) {}

    Bytes outbound_packet(Endpoints& e) {
        e.source = Ipv4Address(0x0a000000u + pick(1, 6));
        e.source_port = static_cast<std::uint16_t>(pick(0, 3) == 0 ? pick(1, 1023) : pick(30000, 30040));
        e.destination = Ipv4Address(0xcb007100u + pick(1, 4));
        e.destination_port = static_cast<std::uint16_t>(pick(1, 3) * 1000);
        return build(e, pick(0, 2));
    }
    // A packet from e.source to e.destination; kind 0 UDP, 1 TCP, 2 ICMP echo (request or reply).
    Bytes build(const Endpoints& e, std::uint32_t kind, bool reply = false) {
        const std::size_t payload = pick(0, 40);  // odd lengths included
        const std::size_t options = pick(0, 3) == 0 ? 4 * pick(1, 10) : 0;
        const std::size_t l4_header = kind == 1 ? 20 + 4 * pick(0, 3) : 8;
        Bytes packet(20 + options + l4_header + payload);
        for (auto& b : packet) b = static_cast<std::uint8_t>(rng_());
        wire::Ipv4Header h;
        h.total_length = static_cast<std::uint16_t>(packet.size());
        h.protocol = kind == 0 ? wire::ip_protocol::kUdp : kind == 1 ? wire::ip_protocol::kTcp : wire::ip_protocol::kIcmp;
        h.source = e.source;
        h.destination = e.destination;
        h.ttl = static_cast<std::uint8_t>(pick(1, 255));
        const Bytes option_bytes(options, 1);  // NOPs
        h.options = option_bytes;
        wire::write_ipv4_header(packet, h);
        const auto l4 = wire::MutableByteSpan(packet).subspan(20 + options);
        if (kind == 0) {
            wire::write_udp_header(l4, {e.source_port, e.destination_port, static_cast<std::uint16_t>(l4.size()), 0});
            if (pick(0, 4) != 0) wire::MutableUdpView::parse(l4)->update_checksum(e.source, e.destination);
        } else if (kind == 1) {
            wire::store_be16(&l4[0], e.source_port);
            wire::store_be16(&l4[2], e.destination_port);
            l4[12] = static_cast<std::uint8_t>(l4_header / 4 << 4);
            l4[13] = reply ? static_cast<std::uint8_t>(rng_() | wire::tcp_flag::kAck)
                           : pick(0, 3) ? wire::tcp_flag::kSyn : static_cast<std::uint8_t>(rng_());
            wire::MutableTcpView::parse(l4)->update_checksum(e.source, e.destination);
        } else {
            l4[0] = reply ? wire::icmpv4_type::kEchoReply : wire::icmpv4_type::kEchoRequest;
            l4[1] = 0;
            wire::store_be16(&l4[4], e.source_port);
            wire::MutableIcmpv4View::parse(l4)->update_checksum();
        }
        return packet;
    }
    std::uint32_t pick(std::uint32_t lo, std::uint32_t hi) { return lo + rng_() % (hi - lo + 1); }
    std::mt19937& rng() { return rng_; }

private:
    std::mt19937 rng_;
};

std::uint32_t kind_of(const Bytes& p) {
    const std::uint8_t protocol = p[9];
    return protocol == wire::ip_protocol::kUdp ? 0 : protocol == wire::ip_protocol::kTcp ? 1 : 2;
}

TEST(NatProperty, IncrementalChecksumsEqualFullRecomputeAndNothingPrivateLeaks) {
    for (std::uint32_t seed = 1; seed <= 4; ++seed) {
        RandomTraffic traffic(seed);
        const std::map<std::uint32_t, Ipv4Address> nat_of{{100, ip("198.51.100.1")}, {200, ip("198.51.100.2")}};
        NatEngine nat(small_settings(4096, seed));
        nat.set_rules(std::make_shared<const NatRules>(std::vector<VpcNatConfig>{
            {100, nat_of.at(100), 20000, 40000, {{Protocol::udp, 53, ip("10.0.0.1"), 5353}}},
            {200, nat_of.at(200), 1024, 65535, {}}}));
        std::vector<Sent> sent;
        std::size_t translated = 0, replies = 0, errors = 0;
        for (int i = 0; i < 6000; ++i) {
            const double now = 1 + i * 0.01;
            Endpoints e;
            const std::uint32_t vni = traffic.pick(0, 1) ? 100 : 200;
            Bytes p = traffic.outbound_packet(e);
            const NatResult r = nat.outbound(vni, p, at(now));
            if (r.translated()) {
                ++translated;
                ASSERT_TRUE(checksums_valid(p)) << "seed " << seed << " packet " << i;
                ASSERT_EQ(endpoints(p).source, nat_of.at(vni));  // never a private source
                ASSERT_EQ(endpoints(p).destination, e.destination);
                sent.push_back({p, vni, e});
            }
            if (sent.empty()) continue;
            const Sent& s = sent[traffic.pick(0, static_cast<std::uint32_t>(sent.size() - 1))];
            const Endpoints out = endpoints(s.packet);
            if (traffic.pick(0, 3) != 0) {  // the remote answers
                Bytes answer = traffic.build({out.destination, out.destination_port, out.source, out.source_port},
                                             kind_of(s.packet), true);
                const NatResult back = nat.inbound(answer, at(now));
                if (back.translated()) {
                    ++replies;
                    ASSERT_TRUE(checksums_valid(answer)) << "seed " << seed << " reply " << i;
                    ASSERT_EQ(back.tenant, s.tenant_side.source);
                    ASSERT_EQ(back.vni, s.vni);
                }
            } else {  // a router on the path reports an error quoting some of it
                const std::size_t quote = traffic.pick(static_cast<std::uint32_t>((s.packet[0] & 0xf) * 4 + 8),
                                                       static_cast<std::uint32_t>(s.packet.size()));
                Bytes error = icmp_error(ip("192.0.2.1"), out.source, traffic.pick(0, 1) ? 3 : 11,
                                         static_cast<std::uint8_t>(traffic.pick(0, 4)), 1280, s.packet, quote);
                const NatResult back = nat.inbound(error, at(now));
                if (back.translated()) {
                    ++errors;
                    ASSERT_TRUE(checksums_valid(error)) << "seed " << seed << " error " << i;
                    ASSERT_EQ(back.tenant, s.tenant_side.source);
                }
            }
        }
        // The traffic really exercised all paths.
        EXPECT_GT(translated, 1000u);
        EXPECT_GT(replies, 500u);
        EXPECT_GT(errors, 200u);
    }
}

// translate_burst gives exactly what one call per packet gives: same bytes, same results, same
// counters (two engines with the same seed see the same traffic, one in bursts).
TEST(NatProperty, BurstsEqualOnePacketAtATime) {
    RandomTraffic traffic(7);
    const auto rules = std::make_shared<const NatRules>(std::vector<VpcNatConfig>{
        {100, ip("198.51.100.1"), 1024, 65535, {{Protocol::tcp, 8080, ip("10.0.0.1"), 80}}},
        {200, ip("198.51.100.2"), 1024, 65535, {}}});
    NatEngine single(small_settings(4096, 3)), burst(small_settings(4096, 3));
    single.set_rules(rules);
    burst.set_rules(rules);
    std::vector<Bytes> sent;  // translated outbound packets, to answer
    for (int round = 0; round < 300; ++round) {
        const std::size_t n = traffic.pick(1, 100);
        std::vector<Bytes> one_by_one, together;
        std::vector<NatBurstPacket> items;
        for (std::size_t k = 0; k < n; ++k) {
            Endpoints e;
            const bool outbound = sent.empty() || traffic.pick(0, 1);
            Bytes p;
            if (outbound) {
                p = traffic.outbound_packet(e);
                if (traffic.pick(0, 9) == 0) p = udp_packet(e.source, e.source_port, ip("198.51.100.1"), 8080);
            } else {
                const Endpoints o = endpoints(sent[traffic.pick(0, static_cast<std::uint32_t>(sent.size() - 1))]);
                p = traffic.build({o.destination, o.destination_port, o.source, o.source_port}, traffic.pick(0, 2), true);
            }
            if (traffic.pick(0, 20) == 0) p.resize(p.size() / 2);
            one_by_one.push_back(p);
            together.push_back(p);
            items.push_back({{}, outbound, traffic.pick(0, 1) ? 100u : 200u, {}});
        }
        for (std::size_t k = 0; k < n; ++k) items[k].ipv4 = together[k];
        burst.translate_burst(items, at(round));
        for (std::size_t k = 0; k < n; ++k) {
            const NatResult r = items[k].outbound ? single.outbound(items[k].vni, one_by_one[k], at(round))
                                                  : single.inbound(one_by_one[k], at(round));
            ASSERT_EQ(r.drop, items[k].result.drop) << round << "/" << k;
            ASSERT_EQ(r.to_tenant, items[k].result.to_tenant);
            ASSERT_EQ(r.vni, items[k].result.vni);
            ASSERT_EQ(r.tenant, items[k].result.tenant);
            ASSERT_EQ(one_by_one[k], together[k]);
            if (r.translated() && items[k].outbound && !r.to_tenant) sent.push_back(together[k]);
        }
    }
    EXPECT_GT(sent.size(), 1000u);
    auto named = [](const NatCounters& c) {
        std::map<std::string, std::uint64_t> m;
        c.for_each([&](std::string_view name, std::uint64_t v) { m.emplace(name, v); });
        return m;
    };
    EXPECT_EQ(named(single.counters()), named(burst.counters()));
}

TEST(NatProperty, RandomAndMutatedBytesNeverCrashOrLeak) {
    RandomTraffic traffic(99);
    NatEngine nat(small_settings(512, 2));
    nat.set_rules(one_vpc_rules(1, ip("198.51.100.1"), 1024, 65535, {{Protocol::tcp, 80, ip("10.0.0.1"), 80}}));
    for (int i = 0; i < andromeda::test::sanitizer_scaled(200'000); ++i) {
        Bytes p;
        if (i % 2 == 0) {
            p.resize(traffic.pick(0, 120));
            for (auto& b : p) b = static_cast<std::uint8_t>(traffic.rng()());
            if (!p.empty() && traffic.pick(0, 1)) p[0] = static_cast<std::uint8_t>(0x45 + traffic.pick(0, 3));
        } else {
            Endpoints e;
            p = traffic.outbound_packet(e);
            for (std::uint32_t flips = traffic.pick(1, 4); flips > 0; --flips)
                p[traffic.pick(0, static_cast<std::uint32_t>(p.size() - 1))] ^= static_cast<std::uint8_t>(1u << traffic.pick(0, 7));
            if (traffic.pick(0, 5) == 0) p.resize(traffic.pick(0, static_cast<std::uint32_t>(p.size())));
        }
        Bytes copy = p;
        const NatResult out = nat.outbound(1, p, at(i * 0.001));
        if (out.translated() && !out.to_tenant) {
            ASSERT_EQ(endpoints(p).source, ip("198.51.100.1"));
        }
        if (!out.translated()) {
            ASSERT_EQ(p, copy);
        }
        (void)nat.inbound(copy, at(i * 0.001));
        if (i % 10'000 == 0) nat.expire(at(i * 0.001));
    }
    const NatCounters c = nat.counters();
    EXPECT_GT(c.drop_malformed, 0u);
    EXPECT_GT(c.translated_outbound, 0u);
}

}  // namespace
}  // namespace andromeda::nat
