#include "policy/firewall.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include "wire/ipv6.hpp"

namespace andromeda::policy {

namespace {

constexpr std::uint8_t kIcmp = 1;
constexpr std::uint8_t kTcp = 6;
constexpr std::uint8_t kUdp = 17;
constexpr std::uint8_t kIcmpv6 = 58;

std::uint64_t mix(std::uint64_t h, std::uint64_t v) noexcept {
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h * 0xBF58476D1CE4E5B9ull;
}

std::uint64_t steady_ns() {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

PolicyDirection opposite(PolicyDirection d) noexcept {
    return d == PolicyDirection::ingress ? PolicyDirection::egress : PolicyDirection::ingress;
}

bool is_icmp_error(std::uint8_t type) noexcept { return type == 3 || type == 11 || type == 12; }
// Destination Unreachable, Packet Too Big, Time Exceeded, Parameter Problem (RFC 4443).
bool is_icmpv6_error(std::uint8_t type) noexcept { return type >= 1 && type <= 4; }

// The flow key of the IPv4 packet at `ip` (at least `size` bytes, header checked by the caller for
// the outer packet; for a quoted one only what is there). Ports of TCP and UDP; for ICMP echo the
// identifier, on the requester's side of the tuple so a reply is the request's reverse.
struct Parsed {
    FlowKey key;
    PacketMatch match;
    bool ok = false;
    bool non_first_fragment = false;
    bool more_fragments = false;
    std::uint32_t ip_id = 0;  // IPv4: 16 bits; IPv6: the fragment header's 32
    bool closing = false;  // TCP FIN or RST
    bool tcp_first = false;  // TCP SYN without ACK: the segment that opens a connection
    bool icmp_error = false;
    const std::uint8_t* quoted = nullptr;  // ICMP error: the packet it is about
    std::size_t quoted_size = 0;
};

// The ICMP messages of one family the firewall tells apart.
struct IcmpMessages {
    std::uint8_t protocol, echo_request, echo_reply;
    bool (*is_error)(std::uint8_t type) noexcept;
    std::size_t smallest_quote;  // a quoted IP header
};
constexpr IcmpMessages kIcmpv4{kIcmp, 8, 0, is_icmp_error, 20};
constexpr IcmpMessages kIcmpv6Messages{kIcmpv6, 128, 129, is_icmpv6_error, wire::kIpv6HeaderLength};

// The transport header of `p`'s packet at `l4` (`l4_size` bytes of it): TCP and UDP ports (and
// TCP's FIN or RST), an ICMP echo's identifier on the requester's side of the tuple, an ICMP
// error's quote. False when too short for what its protocol needs.
bool read_transport(Parsed& p, const std::uint8_t* l4, std::size_t l4_size, bool is_quote,
                    const IcmpMessages& icmp) noexcept {
    FlowKey& k = p.key;
    if (k.protocol == kTcp || k.protocol == kUdp) {
        if (k.protocol == kTcp && l4_size < (is_quote ? 4u : 14u)) return false;
        if (l4_size < 4) return false;
        if (k.protocol == kTcp && !is_quote) {
            p.closing = (l4[13] & 0x05) != 0;      // FIN, RST
            p.tcp_first = (l4[13] & 0x12) == 0x02;  // SYN, not ACK
        }
        k.source_port = wire::load_be16(l4);
        k.destination_port = wire::load_be16(l4 + 2);
        p.match.port = k.destination_port;
        return true;
    }
    if (k.protocol != icmp.protocol) return true;
    if (l4_size < 4) return false;
    p.match.icmp_type = l4[0];
    p.match.icmp_code = l4[1];
    if (l4[0] == icmp.echo_request || l4[0] == icmp.echo_reply) {
        if (l4_size < 8) return false;
        (l4[0] == icmp.echo_request ? k.source_port : k.destination_port) = wire::load_be16(l4 + 4);
    } else if (!is_quote && icmp.is_error(l4[0]) && l4_size >= 8 + icmp.smallest_quote) {
        p.icmp_error = true;
        p.quoted = l4 + 8;
        p.quoted_size = l4_size - 8;
    }
    return true;
}

Parsed parse(const std::uint8_t* ip, std::size_t size, std::uint32_t vni, Address local, PolicyDirection d,
             bool is_quote) {
    Parsed p;
    if (size < 20) return p;
    const std::size_t ihl = static_cast<std::size_t>(ip[0] & 0x0f) * 4;
    if (ihl < 20 || size < ihl) return p;
    std::size_t total = wire::load_be16(ip + 2);
    if (!is_quote && (total < ihl || total > size)) return p;
    if (is_quote || total > size) total = size;  // a quote is cut short by design
    FlowKey& k = p.key;
    k.vni = vni;
    k.local = local;
    k.protocol = ip[9];
    k.direction = d;
    p.ip_id = wire::load_be16(ip + 4);
    k.source = Address::v4(wire::load_be32(ip + 12));
    k.destination = Address::v4(wire::load_be32(ip + 16));
    const std::uint16_t frag = wire::load_be16(ip + 6);
    p.more_fragments = (frag & 0x2000) != 0;
    p.match.protocol = k.protocol;
    p.match.remote = d == PolicyDirection::ingress ? k.source : k.destination;
    if ((frag & 0x1fff) != 0) {
        p.non_first_fragment = true;
        p.ok = true;
        return p;
    }
    p.ok = read_transport(p, ip + ihl, total - ihl, is_quote, kIcmpv4);
    return p;
}

// The same of the IPv6 packet at `ip`: the extension headers walked to the upper layer (at most
// eight, as the pipeline walks them), a fragment header's identification and offset, ICMPv6 echo
// identifiers and the packet an ICMPv6 error quotes.
Parsed parse6(const std::uint8_t* ip, std::size_t size, std::uint32_t vni, Address local, PolicyDirection d,
              bool is_quote) {
    Parsed p;
    if (size < wire::kIpv6HeaderLength || (ip[0] >> 4) != 6) return p;
    std::size_t total = wire::kIpv6HeaderLength + wire::load_be16(ip + 4);
    if (!is_quote && total > size) return p;
    if (is_quote || total > size) total = std::min(total, size);  // a quote is cut short by design
    const wire::ByteSpan packet(ip, total);
    const wire::detail::Ipv6Walk walk = wire::detail::walk_ipv6_extension_headers(packet);
    if (walk.error != wire::ParseError::None) return p;
    FlowKey& k = p.key;
    k.vni = vni;
    k.local = local;
    k.source = Address::from_bytes(ip + 8);
    k.destination = Address::from_bytes(ip + 24);
    k.protocol = walk.upper_layer_protocol;
    k.direction = d;
    p.match.protocol = k.protocol;
    p.match.remote = d == PolicyDirection::ingress ? k.source : k.destination;
    if (walk.fragment_header_offset != 0) {
        const std::uint8_t* fragment = ip + walk.fragment_header_offset;
        p.ip_id = wire::load_be32(fragment + 4);
        p.more_fragments = (fragment[3] & 1) != 0;
        if ((wire::load_be16(fragment + 2) >> 3) != 0) {
            p.non_first_fragment = true;
            p.ok = true;
            return p;
        }
    }
    p.ok = read_transport(p, ip + walk.upper_layer_offset, total - walk.upper_layer_offset, is_quote, kIcmpv6Messages);
    return p;
}

Parsed parse_any(const std::uint8_t* ip, std::size_t size, std::uint32_t vni, Address local, PolicyDirection d,
                 bool is_quote) {
    if (size == 0) return {};
    return (ip[0] >> 4) == 6 ? parse6(ip, size, vni, local, d, is_quote) : parse(ip, size, vni, local, d, is_quote);
}

std::uint64_t mix(std::uint64_t h, const Address& a) noexcept {
    return mix(mix(h, a.high ^ (a.v6 ? 0x6ull << 60 : 0)), a.low);
}

}  // namespace

std::size_t FlowKeyHash::operator()(const FlowKey& k) const noexcept {
    std::uint64_t h = mix(mix(mix(k.vni, k.local), k.source), k.destination);
    h = mix(h, (std::uint64_t{k.source_port} << 24) | (std::uint64_t{k.destination_port} << 8) | k.protocol);
    return static_cast<std::size_t>(mix(h, static_cast<std::uint64_t>(k.direction)));
}

std::size_t Firewall::FragmentKeyHash::operator()(const FragmentKey& k) const noexcept {
    const std::uint64_t h = mix(mix(mix(k.vni, k.local), k.source), k.destination);
    return static_cast<std::size_t>(mix(h, (std::uint64_t{k.id} << 16) | (std::uint64_t{k.protocol} << 8) |
                                               static_cast<std::uint64_t>(k.direction)));
}

const char* to_string(Outcome o) noexcept {
    switch (o) {
        case Outcome::not_enforced: return "not_enforced";
        case Outcome::established: return "established";
        case Outcome::reply: return "reply";
        case Outcome::related: return "related";
        case Outcome::fragment: return "fragment";
        case Outcome::opened: return "opened";
        case Outcome::unopened: return "unopened";
        case Outcome::denied: return "denied";
        case Outcome::revoked: return "revoked";
        case Outcome::fragment_unknown: return "fragment_unknown";
        case Outcome::malformed: return "malformed";
        case Outcome::table_full: return "table_full";
    }
    return "unknown";
}

Firewall::Firewall(FirewallSettings settings, Clock clock) : settings_(settings), clock_(std::move(clock)) {
    if (!clock_) clock_ = steady_ns;
}

std::shared_ptr<const CompiledPolicy> Firewall::policy_for(const fabric::FabricSnapshot& fabric) {
    std::lock_guard lock(policy_mutex_);
    auto same = [&](const std::shared_ptr<const CompiledPolicy>& p) {
        return p && p->source() == &fabric && p->generation() == fabric.generation();
    };
    // Workers move to a new snapshot one by one: one still on the previous one gets the policy
    // it had, not a recompile with a new epoch (two epochs in use would have every packet of every
    // flow judged again, back and forth).
    if (same(policy_)) return policy_;
    if (same(previous_)) return previous_;
    previous_ = std::move(policy_);
    policy_ = CompiledPolicy::compile(fabric, hits_, ++epoch_);
    return policy_;
}

std::shared_ptr<const CompiledPolicy> Firewall::current_policy() const {
    std::lock_guard lock(policy_mutex_);
    return policy_;
}

std::uint64_t Firewall::timeout_of(const FlowKey& key, const Entry& e) const noexcept {
    if (key.protocol == kTcp) return e.closing ? settings_.tcp_closing_timeout_ns : settings_.tcp_timeout_ns;
    if (key.protocol == kUdp) return settings_.udp_timeout_ns;
    return settings_.other_timeout_ns;
}

Firewall::Located Firewall::find(const FlowKey& key, std::uint64_t now, bool closing, std::uint64_t generation,
                                 bool* stale, std::uint32_t* rule) {
    for (const bool reply : {false, true}) {
        const FlowKey k = reply ? key.reversed() : key;
        Shard& s = shard_of(k);
        std::lock_guard lock(s.lock);
        auto it = s.flows.find(k);
        if (it == s.flows.end()) continue;
        Entry& e = it->second;
        if (now - e.last_seen > timeout_of(k, e)) continue;  // expired, not yet swept: a new flow
        e.last_seen = now;
        ++e.packets;
        e.closing = e.closing || closing;
        *stale = e.generation != generation;
        *rule = e.rule;
        return {k, true, reply};
    }
    return {};
}

void Firewall::erase(const FlowKey& key) {
    Shard& s = shard_of(key);
    std::lock_guard lock(s.lock);
    const auto it = s.flows.find(key);
    if (it == s.flows.end()) return;
    if (it->second.kernel_generation != 0) ask_kernel(KernelChange::Kind::remove, key, it->second, it->second.kernel_generation);
    s.flows.erase(it);
    size_.fetch_sub(1, std::memory_order_relaxed);
}

void Firewall::ask_kernel(KernelChange::Kind kind, const FlowKey& key, const Entry& e, std::uint32_t generation) {
    {
        std::lock_guard lock(kernel_mutex_);
        kernel_changes_.push_back({kind, {key, generation, e.rule}});
    }
    if (kind == KernelChange::Kind::install && kernel_wake_) kernel_wake_();
}

void Firewall::note_kernel(const FlowKey& flow_key, std::uint32_t generation, bool eligible, bool closing,
                           std::uint64_t now) {
    if (generation == 0 || !kernel_flows_.load(std::memory_order_relaxed)) return;
    constexpr std::uint64_t kAskAgainNs = 1'000'000'000;
    Shard& s = shard_of(flow_key);
    std::lock_guard lock(s.lock);
    const auto it = s.flows.find(flow_key);
    if (it == s.flows.end()) return;
    Entry& e = it->second;
    // A closing connection stays in the kernel (its FIN and RST come here, and the close is
    // tracked here): taking it out at the FIN would send its last packets, already on their way
    // through a peer's kernel, to this pipeline instead. It leaves when it expires.
    if (closing || e.closing || !eligible) return;
    if (e.kernel_generation == generation && now - e.kernel_asked < kAskAgainNs) return;
    e.kernel_generation = generation;
    e.kernel_asked = now;
    ask_kernel(KernelChange::Kind::install, flow_key, e, generation);
}

std::vector<KernelChange> Firewall::drain_kernel_changes() {
    std::lock_guard lock(kernel_mutex_);
    return std::exchange(kernel_changes_, {});
}

bool Firewall::kernel_seen(const FlowKey& key, std::uint32_t generation, std::uint64_t last_seen_ns) {
    for (const bool reply : {false, true}) {
        const FlowKey k = reply ? key.reversed() : key;
        Shard& s = shard_of(k);
        std::lock_guard lock(s.lock);
        const auto it = s.flows.find(k);
        if (it == s.flows.end() || it->second.kernel_generation != generation) continue;
        it->second.last_seen = std::max(it->second.last_seen, last_seen_ns);
        return true;
    }
    return false;
}

bool Firewall::adopt(const KernelFlow& flow) {
    const std::uint64_t t = now();
    Shard& s = shard_of(flow.key);
    std::lock_guard lock(s.lock);
    auto it = s.flows.find(flow.key);
    if (it == s.flows.end()) {
        if (size_.load(std::memory_order_relaxed) >= settings_.max_flows) return false;
        it = s.flows.emplace(flow.key, Entry{}).first;
        size_.fetch_add(1, std::memory_order_relaxed);
    }
    // Epoch 0 is no policy's (they count from 1): the flow's next packet here is judged again.
    Entry& e = it->second;
    e.rule = flow.rule;
    e.generation = 0;
    e.last_seen = t;
    e.kernel_generation = flow.generation;
    e.kernel_asked = t;
    return true;
}

bool Firewall::insert(const FlowKey& key, std::uint32_t rule, std::uint64_t generation, std::uint64_t now, bool closing) {
    Shard& s = shard_of(key);
    std::lock_guard lock(s.lock);
    auto it = s.flows.find(key);
    if (it == s.flows.end()) {
        if (size_.load(std::memory_order_relaxed) >= settings_.max_flows) return false;
        it = s.flows.emplace(key, Entry{}).first;
        size_.fetch_add(1, std::memory_order_relaxed);
    }
    Entry& e = it->second;
    e.rule = rule;
    e.generation = generation;
    e.last_seen = now;
    ++e.packets;
    e.closing = closing;
    return true;
}

CheckResult Firewall::check(const CompiledPolicy& policy, const fabric::Endpoint& local, PolicyDirection direction,
                            wire::ByteSpan ip_packet) {
    const RuleSet* rules = policy.rules_for(local.position, direction);
    if (rules == nullptr) return {true, Outcome::not_enforced, 0};
    const bool v6 = !ip_packet.empty() && (ip_packet[0] >> 4) == 6;
    if (v6 && !local.ipv6) {  // the pipeline routes IPv6 only to and from endpoints with an address
        denied_.fetch_add(1, std::memory_order_relaxed);
        return {false, Outcome::malformed, rules->fallback.rule};
    }
    const Address self = v6 ? Address::of(*local.ipv6) : Address::v4(local.ip);
    const Parsed p = parse_any(ip_packet.data(), ip_packet.size(), local.vni, self, direction, false);
    if (!p.ok) {
        denied_.fetch_add(1, std::memory_order_relaxed);
        return {false, Outcome::malformed, rules->fallback.rule};
    }
    const std::uint64_t t = now();
    const std::uint64_t generation = policy.epoch();

    if (p.non_first_fragment) {
        const FragmentKey fk{p.key.vni, p.key.local, p.key.source, p.key.destination, p.ip_id, p.key.protocol, direction};
        std::lock_guard lock(fragment_lock_);
        auto it = fragments_.find(fk);
        if (it != fragments_.end() && t - it->second <= settings_.fragment_timeout_ns) return {true, Outcome::fragment, 0};
        fragments_unknown_.fetch_add(1, std::memory_order_relaxed);
        return {false, Outcome::fragment_unknown, 0};
    }

    bool stale = false;
    std::uint32_t rule = 0;
    if (p.icmp_error) {
        const Parsed quoted = v6 ? parse6(p.quoted, p.quoted_size, local.vni, self, opposite(direction), true)
                                 : parse(p.quoted, p.quoted_size, local.vni, self, opposite(direction), true);
        if (quoted.ok && !quoted.non_first_fragment &&
            find(quoted.key, t, false, generation, &stale, &rule).found && !stale)
            return {true, Outcome::related, rule};
    }

    // What the kernel's flow cache may carry: TCP and UDP, unfragmented (IPv6 in its own map).
    const std::uint32_t kernel = policy.kernel_generation(local.vni);
    const bool eligible = (p.key.protocol == kTcp || p.key.protocol == kUdp) && !p.more_fragments;

    const Located flow = find(p.key, t, p.closing, generation, &stale, &rule);
    if (flow.found && !stale) {
        note_kernel(flow.key, kernel, eligible, p.closing, t);
        return {true, flow.is_reply ? Outcome::reply : Outcome::established, rule};
    }
    if (flow.found) {
        // Judged again under the current policy, as the packet that opened it: a reply stays
        // allowed exactly while its flow would still be opened.
        const PolicyDirection opened_as = flow.key.direction;
        const RuleSet* own = policy.rules_for(local.position, opened_as);
        PacketMatch match = p.match;
        if (flow.is_reply) {
            match.remote = p.match.remote;  // the same peer, seen from the other direction
            match.port = flow.key.destination_port;
            if (p.key.protocol == kIcmp || p.key.protocol == kIcmpv6) {  // the echo request
                match.icmp_type = p.key.protocol == kIcmp ? 8 : 128;
                match.icmp_code = 0;
            }
        }
        const Decision again = own->decide(match);
        if (again.action == PolicyAction::allow) {
            insert(flow.key, again.rule, generation, t, p.closing);
            note_kernel(flow.key, kernel, eligible, p.closing, t);
            return {true, flow.is_reply ? Outcome::reply : Outcome::established, again.rule};
        }
        erase(flow.key);
        policy.count(again.rule);
        revoked_.fetch_add(1, std::memory_order_relaxed);
        return {false, Outcome::revoked, again.rule};
    }

    const Decision d = rules->decide(p.match);
    if (d.action == PolicyAction::deny) {
        policy.count(d.rule);
        denied_.fetch_add(1, std::memory_order_relaxed);
        return {false, Outcome::denied, d.rule};
    }
    // Only a connection's first segment opens a TCP flow. One from the middle of a connection (it
    // was open before its VPC had groups, or before this daemon started) cannot say which side
    // opened it: a flow opened by the protected side's ACK would pass the other side's segments
    // as its replies, unjudged, and whether a connection the rules refuse lived on would depend on
    // which of its packets came first. So it is judged by the rules alone, packet by packet.
    if (p.key.protocol == kTcp && !p.tcp_first) {
        unopened_.fetch_add(1, std::memory_order_relaxed);
        return {true, Outcome::unopened, d.rule};
    }
    policy.count(d.rule);
    if (!insert(p.key, d.rule, generation, t, p.closing)) {
        table_full_.fetch_add(1, std::memory_order_relaxed);
        return {false, Outcome::table_full, d.rule};
    }
    if (p.more_fragments) {
        const FragmentKey fk{p.key.vni, p.key.local, p.key.source, p.key.destination, p.ip_id, p.key.protocol, direction};
        std::lock_guard lock(fragment_lock_);
        // Bounded like the flows: beyond it the rest of a datagram is dropped, its first
        // fragment having passed (reassembly at the receiver then times out).
        if (fragments_.size() < settings_.max_flows) fragments_[fk] = t;
    }
    note_kernel(p.key, kernel, eligible, p.closing, t);
    opened_.fetch_add(1, std::memory_order_relaxed);
    return {true, Outcome::opened, d.rule};
}

std::size_t Firewall::expire() {
    const std::uint64_t t = now();
    std::size_t removed = 0;
    for (Shard& s : shards_) {
        std::lock_guard lock(s.lock);
        for (auto it = s.flows.begin(); it != s.flows.end();) {
            if (t - it->second.last_seen > timeout_of(it->first, it->second)) {
                if (it->second.kernel_generation != 0)
                    ask_kernel(KernelChange::Kind::remove, it->first, it->second, it->second.kernel_generation);
                it = s.flows.erase(it);
                ++removed;
            } else {
                ++it;
            }
        }
    }
    size_.fetch_sub(removed, std::memory_order_relaxed);
    expired_.fetch_add(removed, std::memory_order_relaxed);
    std::lock_guard lock(fragment_lock_);
    for (auto it = fragments_.begin(); it != fragments_.end();)
        it = t - it->second > settings_.fragment_timeout_ns ? fragments_.erase(it) : std::next(it);
    return removed;
}

std::vector<FlowView> Firewall::flows(std::size_t limit) const {
    const std::uint64_t t = clock_();
    std::vector<FlowView> out;
    for (const Shard& s : shards_) {
        std::lock_guard lock(s.lock);
        for (const auto& [key, e] : s.flows) {
            if (out.size() >= limit) return out;
            out.push_back({key, e.rule, e.generation, e.packets, t - e.last_seen, e.closing});
        }
    }
    return out;
}

FirewallCounters Firewall::counters() const {
    FirewallCounters c;
    c.flows = size_.load(std::memory_order_relaxed);
    c.opened = opened_.load(std::memory_order_relaxed);
    c.unopened = unopened_.load(std::memory_order_relaxed);
    c.denied = denied_.load(std::memory_order_relaxed);
    c.revoked = revoked_.load(std::memory_order_relaxed);
    c.expired = expired_.load(std::memory_order_relaxed);
    c.fragments_unknown = fragments_unknown_.load(std::memory_order_relaxed);
    c.table_full = table_full_.load(std::memory_order_relaxed);
    return c;
}

}  // namespace andromeda::policy
