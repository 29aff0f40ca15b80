// The gateway's DHCP and DNS services per message: a DHCP exchange (DISCOVER -> OFFER, REQUEST ->
// ACK, each a whole frame in and a whole reply frame out), VPC names answered locally (answers
// per second, from a zone of 1 and of 10,000 names), and a forwarded query's round trip through
// the forwarder (query -> forward, upstream answer -> reply frame), sockets excluded.
// Each benchmark checks its first result and fails with SkipWithError if the path it times is not
// the one it names.
#include <benchmark/benchmark.h>

#include <string>

#include "unit/gateway/dhcp_dns_world.hpp"
#include "wire/dhcp.hpp"

namespace {

using namespace andromeda;
using namespace andromeda::gateway;
using namespace andromeda::gateway::testing;

DhcpServerConfig unlimited() {
    DhcpServerConfig c;
    c.rate = {1'000'000'000, 1'000'000'000, 1024};  // the rate limiter's bucket, not its refusals
    return c;
}

void report(benchmark::State& state, std::size_t messages_per_iteration, const char* unit) {
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * messages_per_iteration));
    state.counters[unit] = benchmark::Counter(static_cast<double>(messages_per_iteration),
                                              benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_DhcpDiscoverOffer(benchmark::State& state) {
    DhcpServer server(unlimited());
    const DhcpEndpoint e = endpoint();
    const Bytes discover = udp_frame({}, DhcpClientMessage{}
                                             .type(wire::dhcp_message_type::kDiscover)
                                             .option(wire::dhcp_option::kParameterRequestList, Bytes{1, 28, 2, 3, 15, 6, 12, 26})
                                             .bytes());
    Bytes out(kDhcpReplyFrameRoom);
    std::uint64_t now = kSecond;
    if (server.handle(discover, e, now, out).outcome != DhcpOutcome::offered) state.SkipWithError("no OFFER");
    for (auto _ : state) {
        now += 1000;
        benchmark::DoNotOptimize(server.handle(discover, e, now, out));
        benchmark::ClobberMemory();
    }
    report(state, 1, "ns_per_message");
}

void BM_DhcpExchange(benchmark::State& state) {
    DhcpServer server(unlimited());
    const DhcpEndpoint e = endpoint();
    const Bytes prl{1, 28, 2, 3, 15, 6, 12, 26};
    const Bytes discover = udp_frame({}, DhcpClientMessage{}
                                             .type(wire::dhcp_message_type::kDiscover)
                                             .option(wire::dhcp_option::kParameterRequestList, prl)
                                             .bytes());
    const Bytes request = udp_frame({}, DhcpClientMessage{}
                                            .type(wire::dhcp_message_type::kRequest)
                                            .address_option(wire::dhcp_option::kServerIdentifier, e.gateway.ipv4)
                                            .address_option(wire::dhcp_option::kRequestedAddress, e.address)
                                            .option(wire::dhcp_option::kParameterRequestList, prl)
                                            .bytes());
    Bytes out(kDhcpReplyFrameRoom);
    std::uint64_t now = kSecond;
    if (server.handle(discover, e, now, out).outcome != DhcpOutcome::offered ||
        server.handle(request, e, now, out).outcome != DhcpOutcome::acked)
        state.SkipWithError("no OFFER and ACK");
    for (auto _ : state) {
        now += 1000;
        benchmark::DoNotOptimize(server.handle(discover, e, now, out));
        benchmark::DoNotOptimize(server.handle(request, e, now, out));
        benchmark::ClobberMemory();
    }
    report(state, 1, "ns_per_exchange");
}

// A zone of `names` endpoints ("host0" ... ), "web" among them.
DnsZone zone_of(std::size_t names) {
    DnsZone zone = blue_zone();
    std::string error;
    for (std::size_t i = 0; zone.size() < names; ++i)
        zone.add("host" + std::to_string(i), {wire::Ipv4Address(static_cast<std::uint32_t>(0x0a010000 + i)), std::nullopt},
                 error);
    return zone;
}

UdpFrameSpec to_gateway() {
    UdpFrameSpec s;
    s.src = endpoint().address;
    s.dst = vpc_gateway().ipv4;
    s.dst_mac = vpc_gateway().mac;
    s.src_port = 33333;
    s.dst_port = 53;
    return s;
}

void BM_DnsLocalAnswer(benchmark::State& state) {
    const DnsZone zone = zone_of(static_cast<std::size_t>(state.range(0)));
    const DnsVpc vpc{vpc_gateway(), &zone, 1450};
    DnsForwarder forwarder(DnsForwarderConfig{});
    const Bytes query = udp_frame(to_gateway(), DnsQuery{}.bytes());
    Bytes out(2048);
    if (forwarder.handle_udp_query(query, vpc, kSecond, out).outcome != DnsOutcome::answered)
        state.SkipWithError("not answered locally");
    for (auto _ : state) {
        benchmark::DoNotOptimize(forwarder.handle_udp_query(query, vpc, kSecond, out));
        benchmark::ClobberMemory();
    }
    report(state, 1, "ns_per_answer");
}

void BM_DnsForwardedRoundTrip(benchmark::State& state) {
    const DnsZone zone = blue_zone();
    const DnsVpc vpc{vpc_gateway(), &zone, 1450};
    DnsForwarderConfig config;
    config.upstreams = {DnsUpstream{wire::Ipv4Address(0xc0000235), 53}};
    config.seed = 5;
    DnsForwarder forwarder(config);
    DnsQuery q;
    q.name = "www.example.com";
    const Bytes query = udp_frame(to_gateway(), q.bytes());
    // The upstream's answer: the query turned into a response with one A record.
    Bytes answer = q.bytes();
    answer[2] = 0x81;
    answer[3] = 0x80;
    answer[7] = 1;
    const Bytes record{0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 7};
    answer.insert(answer.end(), record.begin(), record.end());
    Bytes out(2048);
    std::uint64_t now = kSecond;
    bool ok = true;
    for (auto _ : state) {
        const DnsAction sent = forwarder.handle_udp_query(query, vpc, now, out);
        answer[0] = out[0];  // the ID the forwarder chose
        answer[1] = out[1];
        const DnsAction back = forwarder.handle_upstream_answer(answer, sent.upstream, out);
        ok &= sent.outcome == DnsOutcome::forwarded && back.outcome == DnsOutcome::returned;
        benchmark::DoNotOptimize(back);
        now += 1000;
    }
    if (!ok) state.SkipWithError("not forwarded and returned");
    report(state, 1, "ns_per_query");
}

}  // namespace

BENCHMARK(BM_DhcpDiscoverOffer);
BENCHMARK(BM_DhcpExchange);
BENCHMARK(BM_DnsLocalAnswer)->Arg(1)->Arg(10000);
BENCHMARK(BM_DnsForwardedRoundTrip);
BENCHMARK_MAIN();
