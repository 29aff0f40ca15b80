#include "policy/compiled_policy.hpp"

#include <algorithm>
#include <array>
#include <unordered_map>

#include "fabric/policy_generation.hpp"

namespace andromeda::policy {

void AddressSet::add(const wire::Ipv4Prefix& prefix) {
    const std::uint32_t first = prefix.network().value();
    const std::uint32_t size_minus_one =
        prefix.length() == 0 ? 0xFFFFFFFFu : (std::uint32_t{1} << (32 - prefix.length())) - 1;
    add(Address::v4(first), Address::v4(first + size_minus_one));
}

void AddressSet::add(const wire::Ipv6Prefix& prefix) {
    const Address first = Address::of(prefix.network());
    // The host bits, as a mask over each half: a /0 to /64 spans all of `low` and part of `high`.
    const unsigned length = prefix.length();
    const auto host_mask = [](unsigned bits) {  // the low `bits` bits set, 0 <= bits <= 64
        return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
    };
    const std::uint64_t high_hosts = length >= 64 ? 0 : host_mask(64 - length);
    const std::uint64_t low_hosts = length >= 128 ? 0 : host_mask(length >= 64 ? 128 - length : 64);
    add(first, Address{true, first.high | high_hosts, first.low | low_hosts});
}

void AddressSet::finish() {
    std::sort(ranges_.begin(), ranges_.end());
    std::vector<std::pair<Address, Address>> merged;
    for (const auto& r : ranges_) {
        const bool joins = !merged.empty() && merged.back().second.v6 == r.first.v6 &&
                           (merged.back().second.is_last() || r.first <= merged.back().second.next());
        if (joins) {
            merged.back().second = std::max(merged.back().second, r.second);
        } else {
            merged.push_back(r);
        }
    }
    ranges_ = std::move(merged);
}

bool AddressSet::contains(const Address& ip) const noexcept {
    // The last range starting at or before ip.
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), ip,
                               [](const Address& v, const std::pair<Address, Address>& r) { return v < r.first; });
    if (it == ranges_.begin()) return false;
    --it;
    return ip <= it->second;
}

bool CompiledRule::matches(const PacketMatch& p) const noexcept {
    if (protocol != 0 && protocol != p.protocol) return false;
    if (!ports.empty()) {
        bool in = false;
        for (const fabric::PortRange& r : ports) in = in || r.contains(p.port);
        if (!in) return false;
    }
    if (icmp_type >= 0 && icmp_type != p.icmp_type) return false;  // icmp and icmpv6 rules alone have one
    if (icmp_code >= 0 && icmp_code != p.icmp_code) return false;
    return any_remote || remote.contains(p.remote);
}

std::atomic<std::uint64_t>* HitCounters::counter(const std::string& key) {
    std::lock_guard lock(mutex_);
    auto& slot = counters_[key];
    if (!slot) slot = std::make_unique<std::atomic<std::uint64_t>>(0);
    return slot.get();
}

std::string describe(const fabric::SecurityRule& rule) {
    std::string out = std::string(to_string(rule.direction)) + " " + to_string(rule.action) + " " + to_string(rule.protocol);
    for (std::size_t i = 0; i < rule.ports.size(); ++i) {
        out += i == 0 ? " " : ",";
        out += std::to_string(rule.ports[i].first);
        if (rule.ports[i].last != rule.ports[i].first) out += "-" + std::to_string(rule.ports[i].last);
    }
    if (rule.icmp_type >= 0) out += " type " + std::to_string(rule.icmp_type);
    if (rule.icmp_code >= 0) out += " code " + std::to_string(rule.icmp_code);
    out += rule.direction == PolicyDirection::ingress ? " from " : " to ";
    if (rule.any_remote()) out += "any";
    bool first = true;
    for (const auto& c : rule.remote_cidrs) {
        out += (first ? "" : ", ") + c.to_string();
        first = false;
    }
    for (const auto& c : rule.remote_cidrs6) {
        out += (first ? "" : ", ") + c.to_string();
        first = false;
    }
    for (const auto& g : rule.remote_groups) {
        out += (first ? "group " : ", group ") + g;
        first = false;
    }
    return out + " (priority " + std::to_string(rule.priority) + ")";
}

namespace {

// Decided first: the lower priority number; at the same priority, a deny; then as written.
bool decides_before(const CompiledRule& a, const CompiledRule& b) {
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.action != b.action) return a.action == PolicyAction::deny;
    return a.id < b.id;
}

}  // namespace

std::shared_ptr<const CompiledPolicy> CompiledPolicy::compile(const fabric::FabricSnapshot& fabric, HitCounters& counters,
                                                               std::uint64_t epoch) {
    auto out = std::make_shared<CompiledPolicy>();
    out->generation_ = fabric.generation();
    out->epoch_ = epoch;
    out->source_ = &fabric;
    const auto vpcs = fabric.vpcs();
    out->enforced_.assign(vpcs.size(), false);
    const auto endpoints = fabric.endpoints();
    out->set_of_endpoint_.assign(endpoints.size(), kNone);

    bool any = false;
    for (std::size_t v = 0; v < vpcs.size(); ++v) any = any || (out->enforced_[v] = vpcs[v].firewall());
    if (!any) return out;
    out->kernel_generations_ = fabric::policy_generations(fabric);

    // Members of each group, by VPC: [vpc][group] -> addresses (IPv4, and IPv6 where they have it).
    std::vector<std::vector<std::vector<Address>>> members(vpcs.size());
    for (std::size_t v = 0; v < vpcs.size(); ++v)
        if (out->enforced_[v]) members[v].resize(vpcs[v].security_groups.size());
    auto group_index = [&](std::size_t v, const std::string& name) -> std::size_t {
        const auto& groups = vpcs[v].security_groups;
        for (std::size_t g = 0; g < groups.size(); ++g)
            if (groups[g].name == name) return g;
        return groups.size();
    };
    for (const fabric::Endpoint& e : endpoints) {
        if (e.vpc_index >= vpcs.size() || !out->enforced_[e.vpc_index]) continue;
        for (const std::string& g : e.groups) {
            const std::size_t gi = group_index(e.vpc_index, g);
            if (gi >= members[e.vpc_index].size()) continue;
            members[e.vpc_index][gi].push_back(Address::v4(e.ip));
            if (e.ipv6) members[e.vpc_index][gi].push_back(Address::of(*e.ipv6));
        }
    }

    // Each group's rules compiled once; the defaults as rules of their own.
    std::vector<std::vector<std::vector<CompiledRule>>> compiled(vpcs.size());  // [vpc][group]
    std::vector<std::array<Decision, 2>> defaults(vpcs.size());
    for (std::size_t v = 0; v < vpcs.size(); ++v) {
        if (!out->enforced_[v]) continue;
        const fabric::Vpc& vpc = vpcs[v];
        for (const PolicyDirection d : {PolicyDirection::ingress, PolicyDirection::egress}) {
            RuleInfo info;
            info.vpc = vpc.name;
            info.direction = d;
            info.action = vpc.default_action(d);
            info.text = std::string(to_string(d)) + " default " + to_string(info.action);
            info.hits = counters.counter(vpc.name + "//" + info.text);
            defaults[v][d == PolicyDirection::egress ? 1 : 0] = {info.action, static_cast<std::uint32_t>(out->infos_.size())};
            out->infos_.push_back(std::move(info));
        }
        compiled[v].resize(vpc.security_groups.size());
        for (std::size_t g = 0; g < vpc.security_groups.size(); ++g) {
            const fabric::SecurityGroup& group = vpc.security_groups[g];
            for (std::size_t r = 0; r < group.rules.size(); ++r) {
                const fabric::SecurityRule& rule = group.rules[r];
                CompiledRule c;
                c.priority = rule.priority;
                c.action = rule.action;
                c.protocol = static_cast<std::uint8_t>(rule.protocol);
                c.icmp_type = rule.icmp_type;
                c.icmp_code = rule.icmp_code;
                c.ports = rule.ports;
                c.any_remote = rule.any_remote();
                for (const auto& prefix : rule.remote_cidrs) c.remote.add(prefix);
                for (const auto& prefix : rule.remote_cidrs6) c.remote.add(prefix);
                for (const auto& ref : rule.remote_groups) {
                    const std::size_t gi = group_index(v, ref);
                    if (gi >= members[v].size()) continue;  // validation refuses it; match nothing
                    for (const Address& ip : members[v][gi]) c.remote.add(ip);
                }
                c.remote.finish();
                c.id = static_cast<std::uint32_t>(out->infos_.size());
                RuleInfo info;
                info.vpc = vpc.name;
                info.group = group.name;
                info.index = static_cast<std::int32_t>(r);
                info.direction = rule.direction;
                info.action = rule.action;
                info.priority = rule.priority;
                info.text = describe(rule);
                info.hits = counters.counter(vpc.name + "/" + group.name + "/" + std::to_string(r) + "/" + info.text);
                out->infos_.push_back(std::move(info));
                compiled[v][g].push_back(std::move(c));
            }
        }
    }

    // One rule set per (VPC, set of groups), shared by the endpoints that have it.
    std::unordered_map<std::string, std::uint32_t> set_by_key;
    for (const fabric::Endpoint& e : endpoints) {
        if (e.vpc_index >= vpcs.size() || !out->enforced_[e.vpc_index]) continue;
        std::vector<std::size_t> groups;
        for (const std::string& g : e.groups) {
            const std::size_t gi = group_index(e.vpc_index, g);
            if (gi < compiled[e.vpc_index].size()) groups.push_back(gi);
        }
        std::sort(groups.begin(), groups.end());
        groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
        std::string key = std::to_string(e.vpc_index);
        for (const std::size_t g : groups) key += "," + std::to_string(g);
        auto [it, inserted] = set_by_key.emplace(key, static_cast<std::uint32_t>(out->sets_.size() / 2));
        if (inserted) {
            for (const PolicyDirection d : {PolicyDirection::ingress, PolicyDirection::egress}) {
                RuleSet set;
                set.fallback = defaults[e.vpc_index][d == PolicyDirection::egress ? 1 : 0];
                for (const std::size_t g : groups)
                    for (const CompiledRule& c : compiled[e.vpc_index][g])
                        if (out->infos_[c.id].direction == d) set.rules.push_back(c);
                std::sort(set.rules.begin(), set.rules.end(), decides_before);
                out->sets_.push_back(std::move(set));
            }
        }
        if (e.position < out->set_of_endpoint_.size()) out->set_of_endpoint_[e.position] = it->second;
    }
    return out;
}

}  // namespace andromeda::policy
