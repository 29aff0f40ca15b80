#include "nat/nat_shard.hpp"

#include <algorithm>
#include <bit>
#include <utility>

#include "nat/flow_state.hpp"
#include "nat/nat_shard_inline.hpp"

namespace andromeda::nat {
namespace {

std::size_t wheel_slots(const NatSettings& s) {
    const auto& t = s.timeouts;
    const auto longest = std::max({t.tcp_handshake, t.tcp_established, t.tcp_closing, t.udp, t.icmp});
    const auto grace = s.offload.enabled ? s.offload.grace : std::chrono::milliseconds(0);
    const auto tick = std::max<std::int64_t>(s.wheel_tick.count(), 1);
    const auto needed =
        static_cast<std::size_t>((std::chrono::milliseconds(longest) + grace).count() / tick + 2);
    return std::min<std::size_t>(needed, std::size_t{1} << 20);
}

std::uint16_t remote_port_of(const NatPacket& p, bool from_inside) noexcept {
    if (p.protocol == Protocol::icmp) return 0;  // echo flows are keyed by identifier alone
    return from_inside ? p.destination_port : p.source_port;
}

}  // namespace

NatShard::NatShard(std::size_t index, std::size_t shard_count, const NatSettings& settings, std::uint64_t seed)
    : index_(index), shard_count_(shard_count), settings_(settings), seed_(seed),
      flows_((settings.max_flows + shard_count - 1) / shard_count, seed),
      mappings_((settings.max_flows + shard_count - 1) / shard_count, seed ^ 0x9E3779B97F4A7C15ULL),
      ports_(index, shard_count, settings.max_nat_addresses),
      wheel_(FlowWheelNodes{&flows_}, std::chrono::duration_cast<Duration>(settings.wheel_tick).count(),
             wheel_slots(settings)),
      offload_enabled_(settings.offload.enabled),
      offload_grace_ns_(std::chrono::duration_cast<Duration>(settings.offload.grace).count()),
      offload_next_(offload_enabled_ ? flows_.capacity() : 0, kNilId),
      kernel_counts_(offload_enabled_ ? 2 * flows_.capacity() : 0) {}

void NatShard::set_rules(std::shared_ptr<const NatRules> rules, std::uint32_t generation) {
    rules_ = std::move(rules);
    generation_ = generation;
}

std::int64_t NatShard::timeout_ns(Protocol p, FlowState s) const noexcept {
    return std::chrono::duration_cast<Duration>(idle_timeout(settings_.timeouts, p, s)).count();
}

bool NatShard::still_valid(Flow& f) noexcept {
    const VpcNatConfig* vpc = rules_ ? rules_->find_vpc(f.vni) : nullptr;
    if (!vpc || vpc->nat_address.value() != f.nat_ip) return false;
    if (f.mapping == kNilId) {  // a port-forward flow: its forward must still lead to its endpoint
        const ForwardMatch* forward = rules_->find_forward(wire::Ipv4Address(f.nat_ip), f.protocol, f.nat_port);
        if (!forward || forward->vni != f.vni || forward->forward.endpoint_ip.value() != f.inside_ip ||
            forward->forward.endpoint_port != f.inside_port)
            return false;
    } else if (f.protocol != Protocol::icmp &&
               rules_->find_forward_from_endpoint(f.vni, f.protocol, wire::Ipv4Address(f.inside_ip), f.inside_port)) {
        return false;  // a forward now covers its tenant port: that port's flows leave from the forward
    }
    f.rules_generation = generation_;
    f.remote_is_nat_address = rules_->is_nat_address(wire::Ipv4Address(f.remote_ip));
    return true;
}

// ---- outbound: tenant -> outside ---------------------------------------------------------

// Results are written field by field into the caller's `out`: a ShardOutcome returned by value
// was copied with one 16-byte load of bytes just written by narrower stores, a store-forwarding
// stall that cost more than the lookup. (Rare paths still assign whole outcomes.)
void NatShard::outbound(std::uint32_t vni, const NatPacket& p, std::int64_t now, ShardOutcome& out) noexcept {
    out.retry_shard = ShardOutcome::kNoShard;
    if (!rules_ || p.kind == PacketKind::icmp_error || p.kind == PacketKind::icmp_echo_reply) {
        out = outbound_special(vni, p, now);
        return;
    }
    const InsideKey key{vni, p.protocol, p.source, p.source_port, p.destination, remote_port_of(p, true)};
    std::uint32_t id = live(flows_.find_inside(key), now);
    if (id == kNilId) {
        const ShardOutcome opened = open_outbound(vni, p, key, now, id);
        if (id == kNilId) {
            out = opened;
            return;
        }
    }
    track(id, true, p.tcp_flags, now);
    const Flow& f = flows_[id];
    rewrite_source(p, f.nat_ip, f.nat_port);
    ++counters_.translated_outbound;
    out.drop = DropReason::none;
    out.to_nat_address = f.remote_is_nat_address;
}

ShardOutcome NatShard::outbound_special(std::uint32_t vni, const NatPacket& p, std::int64_t now) noexcept {
    if (!rules_) return drop(DropReason::no_nat_config);
    if (p.kind == PacketKind::icmp_error) return outbound_icmp_error(vni, p, now);
    // Tenants are never pinged through the NAT, so they have no echo to answer.
    return drop(DropReason::unsupported_icmp);
}

ShardOutcome NatShard::open_outbound(std::uint32_t vni, const NatPacket& p, const InsideKey& key, std::int64_t now,
                                     std::uint32_t& id) noexcept {
    const VpcNatConfig* vpc = rules_->find_vpc(vni);
    if (!vpc) return drop(DropReason::no_nat_config);
    // A port-forward endpoint's flows live in the shard of its forwarded port.
    if (const std::uint32_t owner = forward_owner(vni, p); owner != ShardOutcome::kNoShard) {
        return ShardOutcome::retry_in(owner);
    }
    if (p.protocol == Protocol::tcp && !is_tcp_open(p.tcp_flags)) return drop(DropReason::tcp_not_syn);
    return create_outbound(vni, *vpc, p, key, now, id);
}

ShardOutcome NatShard::create_outbound(std::uint32_t vni, const VpcNatConfig& vpc, const NatPacket& p,
                                       const InsideKey& key, std::int64_t now, std::uint32_t& id) noexcept {
    // A forwarded endpoint sends from its forwarded port (a static mapping, owned by this shard:
    // see forward_owner); a dynamic mapping it had from before the forward is stale (still_valid).
    const ForwardMatch* forward =
        p.protocol == Protocol::icmp
            ? nullptr
            : rules_->find_forward_from_endpoint(vni, p.protocol, wire::Ipv4Address(p.source), p.source_port);
    std::uint32_t mapping =
        forward ? kNilId : mappings_.find_inside(vni, p.protocol, p.source, p.source_port, vpc.nat_address.value());
    if (flows_.full()) return drop(DropReason::table_full);  // before taking a port for nothing
    // A forwarded endpoint's flows are the outside's doing as much as its own: not budgeted.
    if (!forward && tenant_budget_ != nullptr && !tenant_budget_->take(vni, p.source, now))
        return drop(DropReason::tenant_flow_rate_limited);
    if (mapping == kNilId && !forward) {
        if (const DropReason r = mapping_for(vni, vpc, p, mapping); r != DropReason::none) return drop(r);
    }
    Flow fields;
    fields.vni = vni;
    fields.protocol = p.protocol;
    fields.inside_ip = key.inside_ip;
    fields.inside_port = key.inside_port;
    fields.remote_ip = key.remote_ip;
    fields.remote_port = key.remote_port;
    fields.nat_ip = vpc.nat_address.value();
    fields.nat_port = forward ? forward->forward.nat_port : mappings_[mapping].nat_port;
    fields.mapping = mapping;
    fields.origin = Origin::outbound;
    if (const DropReason r = add_flow(fields, now, id); r != DropReason::none) {
        release_mapping_if_unused(mapping);
        return drop(r);
    }
    return ShardOutcome::translated();
}

std::uint32_t NatShard::forward_owner(std::uint32_t vni, const NatPacket& p) const noexcept {
    if (p.protocol == Protocol::icmp) return ShardOutcome::kNoShard;
    const ForwardMatch* forward =
        rules_->find_forward_from_endpoint(vni, p.protocol, wire::Ipv4Address(p.source), p.source_port);
    if (!forward || ports_.owns(forward->forward.nat_port)) return ShardOutcome::kNoShard;
    return static_cast<std::uint32_t>(PortAllocator::owner_shard(forward->forward.nat_port, shard_count_));
}

DropReason NatShard::mapping_for(std::uint32_t vni, const VpcNatConfig& vpc, const NatPacket& p,
                                 std::uint32_t& mapping) noexcept {
    const std::uint32_t pool = ports_.pool_for(vpc.nat_address);
    if (pool == PortAllocator::kNoPool) return DropReason::nat_address_limit;
    const NatRules& rules = *rules_;
    const auto reserved = [&](std::uint16_t port) { return rules.is_forwarded(vpc.nat_address, p.protocol, port); };
    const std::uint64_t hint = hash_words(seed_, std::uint64_t{vni} << 32 | p.source, p.source_port);
    const auto port = ports_.allocate(pool, p.protocol, vpc.port_min, vpc.port_max, p.source_port, hint, reserved);
    if (!port) return DropReason::ports_exhausted;
    mapping = mappings_.add(Mapping{vni, p.source, vpc.nat_address.value(), p.source_port, *port, p.protocol,
                                    false, pool, 0});
    if (mapping == kNilId) {  // cannot happen while mappings <= flows, but never leak a port
        ports_.release(pool, p.protocol, *port);
        return DropReason::table_full;
    }
    ++counters_.mappings_created;
    if (*port == p.source_port) ++counters_.ports_preserved;
    return DropReason::none;
}

DropReason NatShard::add_flow(const Flow& fields, std::int64_t now, std::uint32_t& id) noexcept {
    // The translated tuple must name one flow only (a forward may share a port with an older
    // dynamic mapping, or an inbound flow may already use the tenant's side of the tuple).
    // Pin the mapping: removing an expired flow below must not release it under us.
    if (fields.mapping != kNilId) ++mappings_[fields.mapping].flows;
    DropReason refused = DropReason::none;
    if (live(flows_.find_outside(OutsideKey::of(fields)), now) != kNilId ||
        live(flows_.find_inside(InsideKey::of(fields)), now) != kNilId) {
        refused = DropReason::tuple_conflict;
    } else if (id = flows_.allocate(); id == kNilId) {
        refused = DropReason::table_full;
    }
    if (refused != DropReason::none) {
        if (fields.mapping != kNilId) --mappings_[fields.mapping].flows;  // the caller releases it
        return refused;
    }
    Flow& f = flows_[id];
    f = fields;
    f.in_use = true;
    f.linked = false;
    f.state = initial_state(fields.protocol);
    flows_.set_created_ns(id, now);
    f.rules_generation = generation_;
    f.remote_is_nat_address = rules_->is_nat_address(wire::Ipv4Address(f.remote_ip));
    flows_.link(id);
    wheel_.schedule(id, now + timeout_ns(f.protocol, f.state), now);
    ++counters_.flows_created;
    return DropReason::none;
}

// ---- inbound: outside -> tenant ----------------------------------------------------------

void NatShard::inbound(const NatPacket& p, std::int64_t now, ShardOutcome& out) noexcept {
    out.retry_shard = ShardOutcome::kNoShard;
    out.to_nat_address = false;
    if (!rules_ || p.kind == PacketKind::icmp_error || p.kind == PacketKind::icmp_echo_request) {
        out = inbound_special(p, now);
        return;
    }
    const OutsideKey key{p.protocol, p.destination, p.destination_port, p.source, remote_port_of(p, false)};
    std::uint32_t id = live(flows_.find_outside(key), now);
    if (id == kNilId) {
        const ShardOutcome opened = rules_->is_nat_address(wire::Ipv4Address(p.destination))
                                        ? create_inbound(p, key, now, id)
                                        : drop(DropReason::not_nat_address);
        if (id == kNilId) {
            out = opened;
            return;
        }
    }
    track(id, false, p.tcp_flags, now);
    const Flow& f = flows_[id];
    rewrite_destination(p, f.inside_ip, f.inside_port);
    ++counters_.translated_inbound;
    out.drop = DropReason::none;
    out.vni = f.vni;
    out.tenant = f.inside_ip;
}

ShardOutcome NatShard::inbound_special(const NatPacket& p, std::int64_t now) noexcept {
    if (!rules_) return drop(DropReason::no_nat_config);
    if (p.kind == PacketKind::icmp_error) return inbound_icmp_error(p, now);
    // Pings to a NAT address are the gateway's to answer, not a tenant's.
    return drop(DropReason::no_flow);
}

ShardOutcome NatShard::create_inbound(const NatPacket& p, const OutsideKey& key, std::int64_t now,
                                      std::uint32_t& id) noexcept {
    Flow fields;
    fields.protocol = p.protocol;
    fields.remote_ip = key.remote_ip;
    fields.remote_port = key.remote_port;
    fields.nat_ip = key.nat_ip;
    fields.nat_port = key.nat_port;
    fields.origin = Origin::inbound;
    if (p.protocol == Protocol::icmp) return drop(DropReason::no_flow);
    if (const ForwardMatch* forward = rules_->find_forward(wire::Ipv4Address(p.destination), p.protocol,
                                                           p.destination_port)) {
        if (p.protocol == Protocol::tcp && !is_tcp_open(p.tcp_flags)) return drop(DropReason::tcp_not_syn);
        fields.vni = forward->vni;
        fields.inside_ip = forward->forward.endpoint_ip.value();
        fields.inside_port = forward->forward.endpoint_port;
    } else if (p.protocol == Protocol::udp && settings_.udp_filtering == UdpFiltering::endpoint_independent) {
        const std::uint32_t mapping = mappings_.find_outside(Protocol::udp, p.destination, p.destination_port);
        // A mapping held only by ended flows (until the kernel forgets them) takes nobody in.
        if (mapping == kNilId || mappings_[mapping].flows == 0) return drop(DropReason::no_flow);
        const Mapping& m = mappings_[mapping];
        const VpcNatConfig* vpc = rules_->find_vpc(m.vni);
        if (!vpc || vpc->nat_address.value() != m.nat_ip) return drop(DropReason::no_flow);  // draining
        fields.vni = m.vni;
        fields.inside_ip = m.inside_ip;
        fields.inside_port = m.inside_port;
        fields.mapping = mapping;
    } else {
        return drop(DropReason::no_flow);
    }
    if (const DropReason r = add_flow(fields, now, id); r != DropReason::none) {
        release_mapping_if_unused(fields.mapping);
        return drop(r);
    }
    return ShardOutcome::translated();
}

void NatShard::prefetch(std::uint32_t vni, const NatPacket& p, bool outbound, int step) const noexcept {
    if (p.kind == PacketKind::icmp_error) return;  // rare: keyed by the quoted packet
    if (outbound) {
        const InsideKey key{vni, p.protocol, p.source, p.source_port, p.destination, remote_port_of(p, true)};
        if (step == 0) flows_.prefetch_bucket(key); else flows_.prefetch_first(key);
    } else {
        const OutsideKey key{p.protocol, p.destination, p.destination_port, p.source, remote_port_of(p, false)};
        if (step == 0) flows_.prefetch_bucket(key); else flows_.prefetch_first(key);
    }
}

// ---- flow bookkeeping --------------------------------------------------------------------

void NatShard::remove_flow(std::uint32_t id, Removal why) noexcept {
    wheel_.cancel(id);
    switch (why) {
        case Removal::expired: ++counters_.flows_expired; break;
        case Removal::endpoint: ++counters_.flows_removed_endpoint; break;
        case Removal::stale: ++counters_.flows_removed_stale; break;
    }
    if (flows_[id].offload & (Flow::kInKernel | Flow::kOffloadQueued)) [[unlikely]] {
        retire_offloaded(id, why);
        return;
    }
    free_flow(id);
}

void NatShard::free_flow(std::uint32_t id) noexcept {
    const std::uint32_t mapping = flows_[id].mapping;
    const bool retired = !flows_[id].linked;
    flows_.remove(id);
    if (mapping != kNilId) {
        --(retired ? mappings_[mapping].retired : mappings_[mapping].flows);
        release_mapping_if_unused(mapping);
    }
}

void NatShard::release_mapping_if_unused(std::uint32_t mapping) noexcept {
    if (mapping == kNilId || mappings_[mapping].flows != 0 || mappings_[mapping].retired != 0) return;
    const Mapping& m = mappings_[mapping];
    ports_.release(m.pool, m.protocol, m.nat_port);
    mappings_.remove(mapping);
    ++counters_.mappings_released;
}

std::size_t NatShard::expire(std::int64_t now, std::size_t budget) noexcept {
    return wheel_.advance(now, budget, [&](std::uint32_t id) { remove_flow(id, Removal::expired); });
}

std::size_t NatShard::expire_endpoint(std::uint32_t vni, std::uint32_t ip) noexcept {
    std::size_t removed = 0;
    flows_.for_each_of_endpoint(vni, ip, [&](std::uint32_t id) {
        remove_flow(id, Removal::endpoint);
        ++removed;
    });
    return removed;
}

void NatShard::collect(std::int64_t now, std::vector<FlowInfo>& out, std::size_t limit) const {
    flows_.for_each([&](std::uint32_t id) {
        if (out.size() >= limit || wheel_.expired(id, now)) return;
        const Flow& f = flows_[id];
        const wire::Ipv4Address inside(f.inside_ip), remote(f.remote_ip), nat(f.nat_ip);
        FlowInfo info;
        info.vni = f.vni;
        info.protocol = f.protocol;
        info.origin = f.origin;
        info.state = f.state;
        info.port_forward = f.mapping == kNilId;
        if (f.origin == Origin::outbound) {
            info.original = {inside, f.inside_port, remote, f.remote_port};
            info.translated = {nat, f.nat_port, remote, f.remote_port};
        } else {
            info.original = {remote, f.remote_port, nat, f.nat_port};
            info.translated = {remote, f.remote_port, inside, f.inside_port};
        }
        info.age = Duration(now - flows_.created_ns(id));
        info.expires_in = Duration(wheel_.deadline(id) - now);
        info.offloaded = (f.offload & Flow::kOffloaded) != 0;
        if (!kernel_counts_.empty()) {
            info.kernel_original = kernel_counts_[2 * std::size_t{id}];
            info.kernel_reply = kernel_counts_[2 * std::size_t{id} + 1];
        }
        out.push_back(info);
    });
}

}  // namespace andromeda::nat
