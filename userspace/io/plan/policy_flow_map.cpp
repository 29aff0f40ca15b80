#include "io/plan/policy_flow_map.hpp"

#include <arpa/inet.h>

#include <string>

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

policy::FlowKey policy_flow_key_of(const andromeda_policy_flow_key& k) noexcept {
    policy::FlowKey key;
    key.vni = k.vni;
    key.source = policy::Address::v4(ntohl(k.saddr));
    key.destination = policy::Address::v4(ntohl(k.daddr));
    key.source_port = ntohs(k.sport);
    key.destination_port = ntohs(k.dport);
    key.protocol = k.protocol;
    key.direction = k.direction == ANDROMEDA_POLICY_EGRESS ? policy::PolicyDirection::egress : policy::PolicyDirection::ingress;
    // The endpoint whose policy it is: the sender going out, the receiver coming in.
    key.local = key.direction == policy::PolicyDirection::egress ? key.source : key.destination;
    return key;
}

void PolicyFlowMap::apply(std::span<const policy::KernelChange> changes) {
    for (const policy::KernelChange& c : changes) {
        if (c.flow.key.source.v6) continue;  // the map is keyed by IPv4; the firewall asks for none
        const andromeda_policy_flow_key own = policy_flow_key(c.flow.key);
        const andromeda_policy_flow_key reply = policy_flow_key(c.flow.key.reversed());
        if (c.kind == policy::KernelChange::Kind::remove) {
            writer_.erase(MapId::policy_flows, map_bytes(own));
            writer_.erase(MapId::policy_flows, map_bytes(reply));
            ++counters_.removals;
            continue;
        }
        andromeda_policy_flow value{};
        value.generation = c.flow.generation;
        value.rule = c.flow.rule;
        writer_.upsert(MapId::policy_flows, map_bytes(own), map_bytes(value));
        value.flags = ANDROMEDA_POLICY_FLOW_F_REPLY;
        writer_.upsert(MapId::policy_flows, map_bytes(reply), map_bytes(value));
        ++counters_.installs;
    }
}

std::size_t PolicyFlowMap::sync(policy::Firewall& firewall) {
    const auto entries = writer_.entries(MapId::policy_flows);
    ++counters_.syncs;
    for (const auto& [k, v] : entries) {
        const auto key = map_struct<andromeda_policy_flow_key>(k);
        const auto value = map_struct<andromeda_policy_flow>(v);
        if (firewall.kernel_seen(policy_flow_key_of(key), value.generation, value.last_seen_ns)) continue;
        writer_.erase(MapId::policy_flows, std::as_bytes(std::span(k)));
        ++counters_.stale_deleted;
    }
    counters_.entries_synced += entries.size();
    return entries.size();
}

std::size_t PolicyFlowMap::adopt(policy::Firewall& firewall) {
    std::size_t adopted = 0;
    for (const auto& [k, v] : writer_.entries(MapId::policy_flows)) {
        const auto value = map_struct<andromeda_policy_flow>(v);
        if (value.flags & ANDROMEDA_POLICY_FLOW_F_REPLY) continue;  // its flow comes with the other entry
        const auto key = map_struct<andromeda_policy_flow_key>(k);
        if (firewall.adopt({policy_flow_key_of(key), value.generation, value.rule})) ++adopted;
    }
    counters_.adopted += adopted;
    return adopted;
}

}  // namespace andromeda::io
