// libFuzzer target: arbitrary packet sequences through the NAT on both sides, with reloads,
// expiry, endpoint removal and listings in between.
//
// Input: byte 0 configures the engine (bits 0-1: shards - 1; bit 2: endpoint-independent UDP
// filtering; bit 3: an 8-port range, to reach exhaustion; bit 4: an 8-flow table; bit 5:
// offload to a model of the kernel's map, drained after every record and synced on listings).
// Then records [op][n][n bytes]: op % 8 = 0/1 tenant packet from VNI 100/200, 2 packet from the
// uplink, 3 clock += n seconds, 4 expire, 5 remove endpoint 10.0.0.n of VNI 100, 6 list and
// render, 7 reload (and remove_stale).
//
// Oracles (abort on violation): a translated packet whose checksums all verified before still
// verifies (incremental patches equal a recompute); an outbound packet leaves with a NAT
// address; a refused packet is left byte for byte as it came (but for a hairpin refused on its
// way back in, already SNATed); the flow count never exceeds the table size. With offload: an
// install never lands on a key the map holds, a removal always finds its flow there (unless the
// sync deleted it), and in the end every flow in the map is adopted by a fresh engine.
#include <array>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "nat/nat_engine.hpp"
#include "wire/icmp.hpp"
#include "wire/ipv4.hpp"
#include "wire/tcp.hpp"
#include "wire/udp.hpp"

namespace {

using namespace andromeda;
using namespace andromeda::nat;

const wire::Ipv4Address kNatBlue(0xC6336401);  // 198.51.100.1
const wire::Ipv4Address kNatRed(0xC6336402);

bool checksums_valid(wire::ByteSpan packet) {
    const auto ip = wire::Ipv4View::parse(packet);
    if (!ip || !ip->checksum_valid()) return false;
    switch (ip->protocol()) {
        case wire::ip_protocol::kTcp: {
            const auto tcp = wire::TcpView::parse(ip->payload());
            return tcp && tcp->checksum_valid(ip->source(), ip->destination());
        }
        case wire::ip_protocol::kUdp: {
            const auto udp = wire::UdpView::parse(ip->payload());
            return udp && udp->checksum_valid(ip->source(), ip->destination());
        }
        case wire::ip_protocol::kIcmp: {
            const auto icmp = wire::Icmpv4View::parse(ip->payload());
            if (!icmp || !icmp->checksum_valid()) return false;
            if (!icmp->is_error()) return true;
            const auto inner = wire::Ipv4View::parse_quoted(icmp->original_datagram());
            return inner && inner->checksum_valid();
        }
        default: return true;
    }
}

void check(bool ok) {
    if (!ok) std::abort();
}

std::shared_ptr<const NatRules> rules(bool tiny_range) {
    const std::uint16_t lo = tiny_range ? 1024 : 1024, hi = tiny_range ? 1031 : 65535;
    return std::make_shared<const NatRules>(std::vector<VpcNatConfig>{
        {100, kNatBlue, lo, hi, {{Protocol::tcp, 80, wire::Ipv4Address(0x0a000014), 8080},
                                 {Protocol::udp, 53, wire::Ipv4Address(0x0a000014), 53}}},
        {200, kNatRed, lo, hi, {}}});
}

void run_packet(NatEngine& nat, int op, std::vector<std::uint8_t>& packet, TimePoint now) {
    const bool valid_before = checksums_valid(packet);
    const std::vector<std::uint8_t> before = packet;
    const std::uint32_t vni = op == 1 ? 200 : 100;
    const NatResult r = op == 2 ? nat.inbound(packet, now) : nat.outbound(vni, packet, now);
    check(packet.size() == before.size());
    if (!r.translated()) {
        // Untouched, except a hairpinned packet refused on its way back in: it already left the
        // tenant's side, so it carries the NAT address as source (and is dropped all the same).
        if (packet != before) {
            const auto ip = wire::Ipv4View::parse(packet);
            check(op != 2 && ip && ip->source() == (vni == 200 ? kNatRed : kNatBlue));
        }
        return;
    }
    if (valid_before) check(checksums_valid(packet));
    if (op != 2 && !r.to_tenant) {
        const auto ip = wire::Ipv4View::parse(packet);
        check(ip && ip->source() == (vni == 200 ? kNatRed : kNatBlue));
    }
}

// The kernel's map as the daemon keeps it: both directions of every installed flow.
class KernelModel {
public:
    void drain(NatEngine& nat) {
        std::array<OffloadChange, 4> out;
        for (std::size_t n = out.size(); n == out.size();) {
            n = nat.drain_offload_changes(out);
            for (std::size_t i = 0; i < n; ++i) apply(out[i]);
        }
    }
    void sync(NatEngine& nat, TimePoint now) {
        for (auto it = entries_.begin(); it != entries_.end();) {
            if (nat.touch_offloaded(it->second, std::get<0>(it->first) ? OffloadDirection::inbound : OffloadDirection::outbound,
                                    now, {1, 100}, now)) {
                ++it;
            } else {
                gone_.insert(it->first);
                it = entries_.erase(it);
            }
        }
    }
    // Every flow the map holds goes into a fresh engine, as after a restart.
    void adopt_all(const NatSettings& settings, std::shared_ptr<const NatRules> rules, TimePoint now) const {
        NatEngine next(settings);
        next.set_rules(std::move(rules));
        std::size_t flows = 0;
        for (const auto& [key, flow] : entries_) {
            if (!std::get<0>(key)) continue;  // once per flow
            ++flows;
            const FlowState state = flow.protocol == Protocol::tcp ? FlowState::tcp_established : FlowState::replied;
            check(next.adopt(flow, state, now, now));
        }
        check(next.flow_count() == flows);
    }

private:
    using Key = std::tuple<bool, std::uint32_t, int, std::uint32_t, std::uint16_t, std::uint32_t, std::uint16_t>;
    static Key key_of(const OffloadKey& k) {
        return {k.direction == OffloadDirection::inbound, k.vni, static_cast<int>(k.protocol), k.source.value(),
                k.source_port, k.destination.value(), k.destination_port};
    }
    void apply(const OffloadChange& c) {
        for (const OffloadKey& k : {c.flow.outbound_key(), c.flow.inbound_key()}) {
            const Key key = key_of(k);
            const auto it = entries_.find(key);
            if (c.kind == OffloadChange::Kind::install) {
                check(it == entries_.end());
                entries_.emplace(key, c.flow);
            } else if (it != entries_.end()) {
                check(it->second == c.flow);
                entries_.erase(it);
            } else {
                check(gone_.contains(key));
            }
            gone_.erase(key);
        }
    }

    std::map<Key, OffloadedFlow> entries_;
    std::set<Key> gone_;  // deleted by the sync
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::uint8_t config = data[0];
    NatSettings settings;
    settings.shards = (config & 3) + 1u;
    settings.udp_filtering = (config & 4) ? UdpFiltering::endpoint_independent : UdpFiltering::address_and_port_dependent;
    settings.max_flows = (config & 16) ? 8 : 256;
    settings.hash_seed = 1;
    settings.max_nat_addresses = 4;  // the target uses two; small pools keep runs fast
    settings.offload.enabled = (config & 32) != 0;
    NatEngine nat(settings);
    KernelModel kernel;
    const bool tiny_range = (config & 8) != 0;
    nat.set_rules(rules(tiny_range));
    TimePoint now = TimePoint{} + std::chrono::seconds(1000);

    std::size_t at = 1;
    while (at + 2 <= size) {
        const int op = data[at] % 8;
        const std::size_t n = data[at + 1];
        at += 2;
        const std::size_t available = std::min(n, size - at);
        switch (op) {
            case 0:
            case 1:
            case 2: {
                std::vector<std::uint8_t> packet(data + at, data + at + available);
                run_packet(nat, op, packet, now);
                at += available;
                break;
            }
            case 3: now += std::chrono::seconds(n); break;
            case 4: nat.expire(now, n + 1); break;
            case 5: nat.expire_endpoint(100, wire::Ipv4Address(0x0a000000u + static_cast<std::uint32_t>(n))); break;
            case 6:
                (void)nat.flows(now, n);
                if (settings.offload.enabled) kernel.sync(nat, now);
                break;
            default:
                nat.set_rules(rules(tiny_range));
                (void)nat.remove_stale(now);
                break;
        }
        check(nat.flow_count() <= settings.max_flows + settings.shards);
        if (settings.offload.enabled) kernel.drain(nat);
    }
    if (settings.offload.enabled) {
        kernel.sync(nat, now);
        kernel.adopt_all(settings, rules(tiny_range), now);
    }
    return 0;
}
