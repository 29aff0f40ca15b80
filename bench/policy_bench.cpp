// Security groups on the per-packet path (issue 29):
//  - BM_PolicyDecide/N: one decision of an endpoint's rule set of N rules (10, 100, 1000) for a
//    packet that only the last rule matches: the whole ordered list is walked (the worst case;
//    a rule that matches earlier stops the walk there);
//  - BM_FirewallNewFlow/N: the stateful firewall's verdict on the first packet of a new inbound
//    flow (parse, two table lookups, the N-rule walk, the insert);
//  - BM_FirewallEstablished: a packet of an open flow (parse and one lookup), any N.
#include <benchmark/benchmark.h>

#include <vector>

#include "policy/firewall.hpp"
#include "unit/policy/policy_fabric.hpp"
#include "wire/bytes.hpp"

namespace {

using namespace andromeda;
using fabric::PolicyProtocol;

// N ingress allow rules of group web, TCP and UDP ports and /28s the benchmark's packets miss, and
// last an allow of any TCP.
std::shared_ptr<const fabric::FabricSnapshot> fabric_with_rules(std::size_t n) {
    static const auto base = policy::testing::load(policy::testing::blue_fabric(""));
    fabric::SecurityGroup web{"web", {}};
    for (std::size_t i = 0; i < n; ++i) {
        fabric::SecurityRule r;
        r.protocol = i % 2 == 0 ? PolicyProtocol::tcp : PolicyProtocol::udp;
        r.ports = {{static_cast<std::uint16_t>(1000 + i), static_cast<std::uint16_t>(1000 + i)}};
        r.remote_cidrs = {*wire::Ipv4Prefix::parse("10.0." + std::to_string(1 + i % 200) + ".0/28")};
        r.priority = static_cast<std::uint32_t>(100 + i);
        web.rules.push_back(r);
    }
    // The last to decide: any TCP. A packet the N rules miss walks them all, then opens its flow.
    fabric::SecurityRule any_tcp;
    any_tcp.protocol = PolicyProtocol::tcp;
    any_tcp.priority = 65000;
    web.rules.push_back(any_tcp);
    return policy::testing::with_policy(*base, {web}, {{"web"}, {}, {}, {}}, n + 1);
}

std::vector<std::uint8_t> tcp_packet(std::uint32_t src, std::uint32_t dst, std::uint16_t sport, std::uint16_t dport) {
    std::vector<std::uint8_t> p(40, 0);
    p[0] = 0x45;
    wire::store_be16(&p[2], 40);
    p[8] = 64;
    p[9] = 6;
    wire::store_be32(&p[12], src);
    wire::store_be32(&p[16], dst);
    wire::store_be16(&p[20], sport);
    wire::store_be16(&p[22], dport);
    p[32] = 0x50;
    p[33] = 0x10;
    return p;
}

constexpr std::uint32_t kWeb = (10u << 24) | 10;    // 10.0.0.10
constexpr std::uint32_t kClient = (10u << 24) | 20;  // 10.0.0.20

void BM_PolicyDecide(benchmark::State& state) {
    const auto snapshot = fabric_with_rules(static_cast<std::size_t>(state.range(0)));
    policy::HitCounters counters;
    const auto compiled = policy::CompiledPolicy::compile(*snapshot, counters);
    const policy::RuleSet* set = compiled->rules_for(0, fabric::PolicyDirection::ingress);
    policy::PacketMatch p;
    p.protocol = 6;
    p.remote = policy::Address::v4(kClient);
    p.port = 80;
    for (auto _ : state) {
        benchmark::DoNotOptimize(set->decide(p));
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PolicyDecide)->Arg(10)->Arg(100)->Arg(1000);

void BM_FirewallNewFlow(benchmark::State& state) {
    const auto snapshot = fabric_with_rules(static_cast<std::size_t>(state.range(0)));
    policy::FirewallSettings settings;
    settings.max_flows = 1u << 22;
    policy::Firewall firewall(settings);
    const auto compiled = firewall.policy_for(*snapshot);
    const fabric::Endpoint& web = snapshot->endpoints()[0];
    // Ingress of web from a new source port (and address) each time: every packet opens a flow.
    std::uint32_t n = 0;
    auto packet = tcp_packet(kClient, kWeb, 1, 80);
    for (auto _ : state) {
        ++n;
        wire::store_be16(&packet[20], static_cast<std::uint16_t>(n));
        wire::store_be32(&packet[12], kClient + (n >> 16));
        benchmark::DoNotOptimize(firewall.check(*compiled, web, fabric::PolicyDirection::ingress, packet));
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FirewallNewFlow)->Arg(10)->Arg(100)->Arg(1000);

void BM_FirewallEstablished(benchmark::State& state) {
    const auto snapshot = fabric_with_rules(100);
    policy::Firewall firewall;
    const auto compiled = firewall.policy_for(*snapshot);
    const fabric::Endpoint& web = snapshot->endpoints()[0];
    const auto packet = tcp_packet(kWeb, kClient, 40000, 80);
    (void)firewall.check(*compiled, web, fabric::PolicyDirection::egress, packet);
    for (auto _ : state)
        benchmark::DoNotOptimize(firewall.check(*compiled, web, fabric::PolicyDirection::egress, packet));
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FirewallEstablished);

}  // namespace

BENCHMARK_MAIN();
