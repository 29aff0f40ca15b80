#include "io/plan/nat_flow_map.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace andromeda::io {

namespace {

// The flow fields of an entry, without what the kernel writes (use and counts).
bool same_flow(const andromeda_nat_entry& a, const andromeda_nat_entry& b) noexcept {
    return std::memcmp(&a, &b, offsetof(andromeda_nat_entry, last_used_ns)) == 0;
}

nat::TimePoint time_of(__u64 ns) noexcept { return nat::TimePoint(std::chrono::nanoseconds(ns)); }

bool known_protocol(std::uint8_t p) noexcept {
    return p == static_cast<std::uint8_t>(nat::Protocol::tcp) || p == static_cast<std::uint8_t>(nat::Protocol::udp) ||
           p == static_cast<std::uint8_t>(nat::Protocol::icmp);
}

}  // namespace

andromeda_nat_key nat_flow_key(const nat::OffloadKey& key) noexcept {
    andromeda_nat_key k{};
    k.src = htonl(key.source.value());
    k.dst = htonl(key.destination.value());
    k.sport = htons(key.source_port);
    k.dport = htons(key.destination_port);
    k.vni = key.direction == nat::OffloadDirection::outbound ? key.vni : 0;
    k.protocol = static_cast<__u8>(key.protocol);
    k.direction = key.direction == nat::OffloadDirection::outbound ? ANDROMEDA_NAT_OUTBOUND : ANDROMEDA_NAT_INBOUND;
    return k;
}

andromeda_nat_entry nat_flow_entry(const nat::OffloadedFlow& flow) noexcept {
    andromeda_nat_entry e{};
    e.vni = flow.vni;
    e.tenant_ip = htonl(flow.tenant.value());
    e.nat_ip = htonl(flow.nat.value());
    e.remote_ip = htonl(flow.remote.value());
    e.tenant_port = htons(flow.tenant_port);
    e.nat_port = htons(flow.nat_port);
    e.remote_port = htons(flow.remote_port);
    e.protocol = static_cast<__u8>(flow.protocol);
    e.flags = static_cast<__u8>((flow.port_forward ? ANDROMEDA_NAT_F_PORT_FORWARD : 0) |
                                (flow.origin == nat::Origin::inbound ? ANDROMEDA_NAT_F_INBOUND_ORIGIN : 0));
    return e;
}

std::optional<nat::OffloadedFlow> offloaded_flow_of(const andromeda_nat_entry& e) noexcept {
    if (!known_protocol(e.protocol)) return std::nullopt;
    nat::OffloadedFlow f;
    f.vni = e.vni;
    f.protocol = static_cast<nat::Protocol>(e.protocol);
    f.origin = (e.flags & ANDROMEDA_NAT_F_INBOUND_ORIGIN) ? nat::Origin::inbound : nat::Origin::outbound;
    f.port_forward = (e.flags & ANDROMEDA_NAT_F_PORT_FORWARD) != 0;
    f.tenant = wire::Ipv4Address(ntohl(e.tenant_ip));
    f.tenant_port = ntohs(e.tenant_port);
    f.nat = wire::Ipv4Address(ntohl(e.nat_ip));
    f.nat_port = ntohs(e.nat_port);
    f.remote = wire::Ipv4Address(ntohl(e.remote_ip));
    f.remote_port = ntohs(e.remote_port);
    return f;
}

void NatFlowMap::erase_flow(const nat::OffloadedFlow& flow) {
    const andromeda_nat_entry ours = nat_flow_entry(flow);
    for (const auto direction : {nat::OffloadDirection::outbound, nat::OffloadDirection::inbound}) {
        const andromeda_nat_key key = nat_flow_key(flow.key(direction));
        const auto value = writer_.lookup(MapId::nat_flows, map_bytes(key));
        if (value && same_flow(map_struct<andromeda_nat_entry>(*value), ours)) writer_.erase(MapId::nat_flows, map_bytes(key));
    }
}

void NatFlowMap::install(const nat::OffloadedFlow& flow, nat::NatEngine& engine, nat::TimePoint now) {
    andromeda_nat_entry entry = nat_flow_entry(flow);
    // Its last use until the kernel's first packet: now (what a restart's adoption reads).
    entry.last_used_ns = static_cast<__u64>(nat::to_ns(now));
    const andromeda_nat_key out = nat_flow_key(flow.outbound_key());
    const andromeda_nat_key in = nat_flow_key(flow.inbound_key());
    const auto first = writer_.insert(MapId::nat_flows, map_bytes(out), map_bytes(entry));
    auto second = MapWriter::InsertResult::full;
    if (first == MapWriter::InsertResult::inserted) {
        second = writer_.insert(MapId::nat_flows, map_bytes(in), map_bytes(entry));
        if (second == MapWriter::InsertResult::inserted) {
            ++counters_.installs;
            return;
        }
        writer_.erase(MapId::nat_flows, map_bytes(out));  // ours, written a moment ago
    }
    const auto refused = first == MapWriter::InsertResult::inserted ? second : first;
    ++(refused == MapWriter::InsertResult::full ? counters_.install_full : counters_.install_conflict);
    engine.offload_failed(flow, now);
}

void NatFlowMap::apply(std::span<const nat::OffloadChange> changes, nat::NatEngine& engine, nat::TimePoint now) {
    // The engine hands every removal before any install, so a key an ended flow held is free
    // again by the time a new flow on it is installed.
    for (const nat::OffloadChange& c : changes) {
        if (c.kind != nat::OffloadChange::Kind::remove) continue;
        erase_flow(c.flow);
        ++counters_.removals;
    }
    for (const nat::OffloadChange& c : changes)
        if (c.kind == nat::OffloadChange::Kind::install) install(c.flow, engine, now);
}

std::size_t NatFlowMap::sync(nat::NatEngine& engine, nat::TimePoint now) {
    const auto entries = writer_.entries(MapId::nat_flows);
    ++counters_.syncs;
    counters_.entries_synced += entries.size();
    for (const auto& [key_bytes, value_bytes] : entries) {
        const auto key = map_struct<andromeda_nat_key>(key_bytes);
        const auto entry = map_struct<andromeda_nat_entry>(value_bytes);
        const auto flow = offloaded_flow_of(entry);
        const auto direction =
            key.direction == ANDROMEDA_NAT_INBOUND ? nat::OffloadDirection::inbound : nat::OffloadDirection::outbound;
        if (flow && engine.touch_offloaded(*flow, direction, time_of(entry.last_used_ns),
                                           nat::KernelCounts{entry.packets, entry.bytes}, now))
            continue;
        // Not a flow the engine has offloaded as written (it ended, or its removal was lost):
        // this entry goes; its twin, if it is the same flow, is found and removed in its turn.
        writer_.erase(MapId::nat_flows, map_bytes(key));
        ++counters_.stale_deleted;
    }
    return entries.size();
}

std::size_t NatFlowMap::adopt(nat::NatEngine& engine, nat::TimePoint now) {
    struct Seen {
        andromeda_nat_entry entry{};
        bool outbound = false, inbound = false;
        __u64 last_used = 0, inbound_packets = 0;
    };
    std::map<std::string, Seen> flows;  // by the outbound key's bytes: one record per flow
    for (const auto& [key_bytes, value_bytes] : writer_.entries(MapId::nat_flows)) {
        const auto key = map_struct<andromeda_nat_key>(key_bytes);
        const auto entry = map_struct<andromeda_nat_entry>(value_bytes);
        const auto flow = offloaded_flow_of(entry);
        if (!flow) {
            writer_.erase(MapId::nat_flows, map_bytes(key));
            ++counters_.adopt_refused;
            continue;
        }
        const andromeda_nat_key out = nat_flow_key(flow->outbound_key());
        Seen& s = flows[std::string(reinterpret_cast<const char*>(&out), sizeof out)];
        if ((s.outbound || s.inbound) && !same_flow(s.entry, entry)) {
            writer_.erase(MapId::nat_flows, map_bytes(key));  // two flows claiming one tuple: keep the first
            ++counters_.adopt_refused;
            continue;
        }
        s.entry = entry;
        (key.direction == ANDROMEDA_NAT_INBOUND ? s.inbound : s.outbound) = true;
        s.last_used = std::max(s.last_used, static_cast<__u64>(entry.last_used_ns));
        if (key.direction == ANDROMEDA_NAT_INBOUND) s.inbound_packets = entry.packets;
    }
    std::size_t adopted = 0;
    for (const auto& [out_key, s] : flows) {
        const nat::OffloadedFlow flow = *offloaded_flow_of(s.entry);
        const nat::FlowState state = flow.protocol == nat::Protocol::tcp ? nat::FlowState::tcp_established
                                     : s.inbound_packets > 0           ? nat::FlowState::replied
                                                                       : nat::FlowState::unreplied;
        // An entry without a recorded use (written by something other than install()) counts as
        // used now: adoption must not end a flow the kernel may be carrying.
        const nat::TimePoint last_used = s.last_used != 0 ? time_of(s.last_used) : now;
        if (!engine.adopt(flow, state, last_used, now)) {
            erase_flow(flow);
            ++counters_.adopt_refused;
            continue;
        }
        // A flow with one direction only (a daemon killed between the two writes) gets its twin.
        const andromeda_nat_entry entry = nat_flow_entry(flow);
        if (!s.outbound) writer_.insert(MapId::nat_flows, map_bytes(nat_flow_key(flow.outbound_key())), map_bytes(entry));
        if (!s.inbound) writer_.insert(MapId::nat_flows, map_bytes(nat_flow_key(flow.inbound_key())), map_bytes(entry));
        ++counters_.adopted;
        ++adopted;
    }
    return adopted;
}

}  // namespace andromeda::io
