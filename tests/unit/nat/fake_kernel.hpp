// A stand-in for the kernel fast path in the NAT's offload tests: a map of both directions of
// every installed flow, keyed as docs/nat.md says the BPF map is, that applies the engine's
// install/removal requests (checking that each makes sense), translates the packets it holds a
// key for exactly as the engine would (written independently: full checksum recomputation, not
// the engine's incremental patches) and punts everything else (TCP SYN/FIN/RST, ICMP other than
// echo request out / echo reply in, fragments), and plays the daemon's periodic sync.
#pragma once

#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "nat_test_packets.hpp"

namespace andromeda::nat::test {

// A flow's identity, from what the engine hands out and from what it lists.
using FlowTuple = std::tuple<std::uint32_t, int, int, bool, std::uint32_t, std::uint16_t, std::uint32_t, std::uint16_t,
                             std::uint32_t, std::uint16_t>;
inline FlowTuple tuple_of(const OffloadedFlow& f) {
    return {f.vni, static_cast<int>(f.protocol), static_cast<int>(f.origin), f.port_forward, f.tenant.value(), f.tenant_port,
            f.nat.value(), f.nat_port, f.remote.value(), f.remote_port};
}
inline FlowTuple tuple_of(const FlowInfo& f) {
    const bool out = f.origin == Origin::outbound;
    const FlowEndpoints& tenant_side = out ? f.original : f.translated;
    const FlowEndpoints& nat_side = out ? f.translated : f.original;
    return tuple_of(OffloadedFlow{f.vni, f.protocol, f.origin, f.port_forward,
                                  out ? tenant_side.source : tenant_side.destination,
                                  out ? tenant_side.source_port : tenant_side.destination_port,
                                  out ? nat_side.source : nat_side.destination,
                                  out ? nat_side.source_port : nat_side.destination_port,
                                  out ? tenant_side.destination : nat_side.source,
                                  out ? tenant_side.destination_port : nat_side.source_port});
}

class FakeKernel {
public:
    struct Entry {
        OffloadedFlow flow;
        TimePoint last_used{};
        KernelCounts counts;
    };
    using Key = std::tuple<int, std::uint32_t, int, std::uint32_t, std::uint16_t, std::uint32_t, std::uint16_t>;

    static Key key_of(const OffloadKey& k) {
        return {static_cast<int>(k.direction), k.vni, static_cast<int>(k.protocol), k.source.value(), k.source_port,
                k.destination.value(), k.destination_port};
    }

    // Applies one drained change. An install must not overwrite a key (the engine hands out the
    // removal of a key before a new flow's install of it); a removal must find what was
    // installed, unless the sync already deleted it.
    ::testing::AssertionResult apply(const OffloadChange& c, TimePoint now) {
        for (const OffloadDirection d : {OffloadDirection::outbound, OffloadDirection::inbound}) {
            const Key key = key_of(c.flow.key(d));
            const auto it = entries_.find(key);
            if (c.kind == OffloadChange::Kind::install) {
                if (it != entries_.end())
                    return ::testing::AssertionFailure() << "install over an existing entry: " << describe(c.flow)
                                                         << " over " << describe(it->second.flow);
                entries_[key] = Entry{c.flow, now, {}};
            } else if (it != entries_.end()) {
                if (!(it->second.flow == c.flow)) return ::testing::AssertionFailure() << "removal of another flow's entry";
                entries_.erase(it);
            } else if (!deleted_by_sync_.contains(key)) {  // (or never written)
                return ::testing::AssertionFailure() << "removal of an entry never installed";
            }
            deleted_by_sync_.erase(key);
        }
        return ::testing::AssertionSuccess();
    }

    // Drains everything the engine has queued, in spans of `span`.
    ::testing::AssertionResult drain(NatEngine& nat, TimePoint now, std::size_t span = 64,
                                     std::vector<OffloadChange>* seen = nullptr) {
        std::vector<OffloadChange> out(span);
        for (;;) {
            const std::size_t n = nat.drain_offload_changes(out);
            for (std::size_t i = 0; i < n; ++i) {
                if (seen) seen->push_back(out[i]);
                if (auto r = apply(out[i], now); !r) return r;
            }
            if (n < out.size()) return ::testing::AssertionSuccess();
        }
    }

    // The daemon's sync: every entry is reported; those the engine disowns are deleted (their
    // flows returned, once per entry).
    std::vector<OffloadedFlow> sync(NatEngine& nat, TimePoint now) {
        std::vector<OffloadedFlow> deleted;
        for (auto it = entries_.begin(); it != entries_.end();) {
            const auto direction = static_cast<OffloadDirection>(std::get<0>(it->first));
            if (nat.touch_offloaded(it->second.flow, direction, it->second.last_used, it->second.counts, now)) {
                ++it;
            } else {
                deleted_by_sync_.insert(it->first);
                deleted.push_back(it->second.flow);
                it = entries_.erase(it);
            }
        }
        return deleted;
    }

    // Translates `ipv4` if the kernel would (true; `result` as the engine reports it), else
    // leaves it untouched for the pipeline (false).
    bool translate(bool outbound, std::uint32_t vni, Bytes& ipv4, TimePoint now, NatResult& result) {
        const auto v = wire::Ipv4View::parse(ipv4);
        if (!v || v->is_fragment() || !v->checksum_valid()) return false;
        const auto l4 = v->payload();
        OffloadKey key;
        key.direction = outbound ? OffloadDirection::outbound : OffloadDirection::inbound;
        key.vni = outbound ? vni : 0;
        key.source = v->source();
        key.destination = v->destination();
        if (v->protocol() == wire::ip_protocol::kIcmp) {
            if (l4.size() < 8 || l4[1] != 0 ||
                l4[0] != (outbound ? wire::icmpv4_type::kEchoRequest : wire::icmpv4_type::kEchoReply))
                return false;
            key.protocol = Protocol::icmp;
            (outbound ? key.source_port : key.destination_port) = wire::load_be16(&l4[4]);
        } else if (v->protocol() == wire::ip_protocol::kUdp || v->protocol() == wire::ip_protocol::kTcp) {
            const bool tcp = v->protocol() == wire::ip_protocol::kTcp;
            if (l4.size() < (tcp ? 20u : 8u)) return false;
            if (tcp && (l4[13] & (wire::tcp_flag::kSyn | wire::tcp_flag::kFin | wire::tcp_flag::kRst))) return false;
            key.protocol = tcp ? Protocol::tcp : Protocol::udp;
            key.source_port = wire::load_be16(&l4[0]);
            key.destination_port = wire::load_be16(&l4[2]);
        } else {
            return false;
        }
        const auto it = entries_.find(key_of(key));
        if (it == entries_.end()) return false;
        Entry& e = it->second;
        rewrite(ipv4, outbound, e.flow);
        e.last_used = now;
        ++e.counts.packets;
        e.counts.bytes += ipv4.size();
        result = NatResult{};
        if (!outbound) {
            result.to_tenant = true;
            result.vni = e.flow.vni;
            result.tenant = e.flow.tenant;
        }
        return true;
    }

    [[nodiscard]] const std::map<Key, Entry>& entries() const { return entries_; }
    static std::string describe(const OffloadedFlow& f) {
        return std::string(to_string(f.protocol)) + " vni " + std::to_string(f.vni) + " " + std::string(to_string(f.origin)) +
               (f.port_forward ? " forward " : " ") + f.tenant.to_string() + ":" + std::to_string(f.tenant_port) +
               " nat " + f.nat.to_string() + ":" + std::to_string(f.nat_port) + " remote " + f.remote.to_string() + ":" +
               std::to_string(f.remote_port);
    }
    // Every flow the kernel holds (once, though it has two entries).
    [[nodiscard]] std::vector<OffloadedFlow> flows() const {
        std::vector<OffloadedFlow> out;
        for (const auto& [key, e] : entries_)
            if (std::get<0>(key) == static_cast<int>(OffloadDirection::inbound)) out.push_back(e.flow);
        return out;
    }
    // An install the daemon could not write: a later removal of it deletes nothing.
    void not_written(const OffloadedFlow& flow) {
        deleted_by_sync_.insert(key_of(flow.outbound_key()));
        deleted_by_sync_.insert(key_of(flow.inbound_key()));
    }

private:
    // Address, port / echo id, then every checksum recomputed from scratch (UDP 0 stays 0).
    static void rewrite(Bytes& ipv4, bool outbound, const OffloadedFlow& f) {
        const auto v = *wire::MutableIpv4View::parse(ipv4);
        const std::size_t l4 = v.ihl() * 4u;
        const std::uint8_t protocol = v.protocol();
        wire::store_be32(&ipv4[outbound ? 12 : 16], (outbound ? f.nat : f.tenant).value());
        const std::uint16_t port = outbound ? f.nat_port : f.tenant_port;
        if (protocol == wire::ip_protocol::kIcmp) {
            wire::store_be16(&ipv4[l4 + 4], port);
        } else {
            wire::store_be16(&ipv4[l4 + (outbound ? 0 : 2)], port);
        }
        v.update_checksum();
        const auto view = *wire::Ipv4View::parse(ipv4);
        const auto payload = wire::MutableByteSpan(ipv4).subspan(l4, view.payload().size());
        if (protocol == wire::ip_protocol::kIcmp) {
            wire::MutableIcmpv4View::parse(payload)->update_checksum();
        } else if (protocol == wire::ip_protocol::kTcp) {
            wire::MutableTcpView::parse(payload)->update_checksum(view.source(), view.destination());
        } else if (wire::load_be16(&payload[6]) != 0) {
            wire::MutableUdpView::parse(payload)->update_checksum(view.source(), view.destination());
        }
    }

    std::map<Key, Entry> entries_;
    std::set<Key> deleted_by_sync_;
};

}  // namespace andromeda::nat::test
