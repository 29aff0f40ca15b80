#include "io/plan/policy_flow_map.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <string>
#include <type_traits>

namespace andromeda::io {

andromeda_policy_flow_key policy_flow_key(const policy::FlowKey& key) noexcept {
    andromeda_policy_flow_key k{};
    k.vni = key.vni;
    k.saddr = htonl(key.source.v4_value());
    k.daddr = htonl(key.destination.v4_value());
    k.sport = htons(key.source_port);
    k.dport = htons(key.destination_port);
    k.protocol = key.protocol;
    k.direction = key.direction == policy::PolicyDirection::egress ? ANDROMEDA_POLICY_EGRESS : ANDROMEDA_POLICY_INGRESS;
    return k;
}

namespace {

policy::FlowKey key_from_map(std::uint32_t vni, policy::Address source, policy::Address destination, __be16 sport,
                             __be16 dport, std::uint8_t protocol, std::uint8_t direction) noexcept {
    policy::FlowKey key;
    key.vni = vni;
    key.source = source;
    key.destination = destination;
    key.source_port = ntohs(sport);
    key.destination_port = ntohs(dport);
    key.protocol = protocol;
    key.direction = direction == ANDROMEDA_POLICY_EGRESS ? policy::PolicyDirection::egress : policy::PolicyDirection::ingress;
    // The endpoint whose policy it is: the sender going out, the receiver coming in.
    key.local = key.direction == policy::PolicyDirection::egress ? key.source : key.destination;
    return key;
}

void copy_address(std::uint8_t (&out)[16], const policy::Address& a) noexcept {
    const auto bytes = a.v6_value().bytes();
    std::copy(bytes.begin(), bytes.end(), out);
}

template <class Key>
Key map_key(const policy::FlowKey& key) noexcept {
    if constexpr (std::is_same_v<Key, andromeda_policy_flow6_key>) return policy_flow6_key(key);
    else return policy_flow_key(key);
}

}  // namespace

policy::FlowKey policy_flow_key_of(const andromeda_policy_flow_key& k) noexcept {
    return key_from_map(k.vni, policy::Address::v4(ntohl(k.saddr)), policy::Address::v4(ntohl(k.daddr)), k.sport,
                        k.dport, k.protocol, k.direction);
}

andromeda_policy_flow6_key policy_flow6_key(const policy::FlowKey& key) noexcept {
    andromeda_policy_flow6_key k{};
    k.vni = key.vni;
    copy_address(k.saddr, key.source);
    copy_address(k.daddr, key.destination);
    k.sport = htons(key.source_port);
    k.dport = htons(key.destination_port);
    k.protocol = key.protocol;
    k.direction = key.direction == policy::PolicyDirection::egress ? ANDROMEDA_POLICY_EGRESS : ANDROMEDA_POLICY_INGRESS;
    return k;
}

policy::FlowKey policy_flow_key_of(const andromeda_policy_flow6_key& k) noexcept {
    return key_from_map(k.vni, policy::Address::from_bytes(k.saddr), policy::Address::from_bytes(k.daddr), k.sport,
                        k.dport, k.protocol, k.direction);
}

template <class Key>
void PolicyFlowMap::apply_one(MapId map, const policy::KernelChange& c) {
    const Key own = map_key<Key>(c.flow.key);
    const Key reply = map_key<Key>(c.flow.key.reversed());
    if (c.kind == policy::KernelChange::Kind::remove) {
        writer_.erase(map, map_bytes(own));
        writer_.erase(map, map_bytes(reply));
        ++counters_.removals;
        return;
    }
    andromeda_policy_flow value{};
    value.generation = c.flow.generation;
    value.rule = c.flow.rule;
    writer_.upsert(map, map_bytes(own), map_bytes(value));
    value.flags = ANDROMEDA_POLICY_FLOW_F_REPLY;
    writer_.upsert(map, map_bytes(reply), map_bytes(value));
    ++counters_.installs;
}

void PolicyFlowMap::apply(std::span<const policy::KernelChange> changes) {
    for (const policy::KernelChange& c : changes) {
        if (c.flow.key.source.v6) apply_one<andromeda_policy_flow6_key>(MapId::policy_flows6, c);
        else apply_one<andromeda_policy_flow_key>(MapId::policy_flows, c);
    }
}

template <class Key>
std::size_t PolicyFlowMap::sync_map(MapId id, policy::Firewall& firewall) {
    const auto entries = writer_.entries(id);
    for (const auto& [k, v] : entries) {
        const auto key = map_struct<Key>(k);
        const auto value = map_struct<andromeda_policy_flow>(v);
        if (firewall.kernel_seen(policy_flow_key_of(key), value.generation, value.last_seen_ns)) continue;
        writer_.erase(id, std::as_bytes(std::span(k)));
        ++counters_.stale_deleted;
    }
    counters_.entries_synced += entries.size();
    return entries.size();
}

std::size_t PolicyFlowMap::sync(policy::Firewall& firewall) {
    ++counters_.syncs;
    return sync_map<andromeda_policy_flow_key>(MapId::policy_flows, firewall) +
           sync_map<andromeda_policy_flow6_key>(MapId::policy_flows6, firewall);
}

template <class Key>
std::size_t PolicyFlowMap::adopt_map(MapId id, policy::Firewall& firewall) {
    std::size_t adopted = 0;
    for (const auto& [k, v] : writer_.entries(id)) {
        const auto value = map_struct<andromeda_policy_flow>(v);
        if (value.flags & ANDROMEDA_POLICY_FLOW_F_REPLY) continue;  // its flow comes with the other entry
        const auto key = map_struct<Key>(k);
        if (firewall.adopt({policy_flow_key_of(key), value.generation, value.rule})) ++adopted;
    }
    return adopted;
}

std::size_t PolicyFlowMap::adopt(policy::Firewall& firewall) {
    const std::size_t adopted = adopt_map<andromeda_policy_flow_key>(MapId::policy_flows, firewall) +
                                adopt_map<andromeda_policy_flow6_key>(MapId::policy_flows6, firewall);
    counters_.adopted += adopted;
    return adopted;
}

}  // namespace andromeda::io
