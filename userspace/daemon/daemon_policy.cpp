// `andromedactl policy`: every rule of every security group with its hit count, the firewall's
// counters, and the first flows it tracks.
#include "daemon/daemon.hpp"

namespace andromeda::daemon {

namespace {

std::string address_text(const policy::Address& address) { return address.to_string(); }

std::string protocol_text(std::uint8_t p) {
    switch (p) {
        case 1: return "icmp";
        case 6: return "tcp";
        case 17: return "udp";
        case 58: return "icmpv6";
        default: return std::to_string(p);
    }
}

}  // namespace

std::vector<control::FirewallFlow> Daemon::firewall_flows(std::size_t limit) const {
    std::vector<control::FirewallFlow> out;
    const auto compiled = firewall_->current_policy();
    for (const policy::FlowView& f : firewall_->flows(limit)) {
        control::FirewallFlow flow;
        flow.vni = f.key.vni;
        flow.endpoint = address_text(f.key.local);
        flow.direction = to_string(f.key.direction);
        flow.protocol = protocol_text(f.key.protocol);
        flow.tuple = {address_text(f.key.source), f.key.source_port, address_text(f.key.destination),
                      f.key.destination_port};
        flow.packets = f.packets;
        flow.idle_seconds = static_cast<double>(f.idle_ns) / 1e9;
        flow.closing = f.closing;
        // The rule that opened it, when the flow was judged under the current policy (an older
        // one's flow is judged again by its next packet).
        if (compiled && f.epoch == compiled->epoch() && f.rule < compiled->rules().size()) {
            const policy::RuleInfo& r = compiled->rules()[f.rule];
            flow.rule = r.group.empty() ? r.text : r.group + "[" + std::to_string(r.index) + "]";
        }
        out.push_back(std::move(flow));
    }
    return out;
}

control::PolicyReply Daemon::policy() const {
    control::PolicyReply reply;
    const auto snapshot = store_.current();
    if (!snapshot) return reply;
    const auto compiled = firewall_->policy_for(*snapshot);
    reply.generation = snapshot->generation();
    for (std::size_t v = 0; v < snapshot->vpcs().size(); ++v)
        if (compiled->enforced(static_cast<std::uint32_t>(v))) reply.enforced_vpcs.push_back(snapshot->vpcs()[v].name);
    for (const policy::RuleInfo& r : compiled->rules()) {
        control::PolicyRule rule;
        rule.vpc = r.vpc;
        rule.group = r.group;
        rule.index = r.index;
        rule.direction = to_string(r.direction);
        rule.action = to_string(r.action);
        rule.priority = r.priority;
        rule.rule = r.text;
        rule.hits = r.hits->load(std::memory_order_relaxed);
        reply.rules.push_back(std::move(rule));
    }
    const policy::FirewallCounters c = firewall_->counters();
    reply.flows = c.flows;
    reply.opened = c.opened;
    reply.denied = c.denied;
    reply.revoked = c.revoked;
    reply.expired = c.expired;
    reply.fragments_unknown = c.fragments_unknown;
    reply.table_full = c.table_full;
    reply.unopened = c.unopened;
    return reply;
}

}  // namespace andromeda::daemon
