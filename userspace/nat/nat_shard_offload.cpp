// The shard's side of the kernel fast path: which flows the kernel carries, the queue of
// install/removal requests the daemon drains, its periodic sync, adoption after a restart and
// the eager end of flows a reload no longer allows.
//
// A flow's `offload` bits hold what the engine wants (kOffloaded) and what the daemon was last
// told (kInKernel). A change only puts the flow in a queue (once, however often it changes);
// drain_offload compares the two then and hands out an install, a removal or nothing. So a flow
// installed and ended between two drains costs the daemon nothing, every handed-out install is
// followed by exactly one removal (unless the flow is still offloaded), and no removal is ever
// handed out for a flow that was not installed. An ended flow the kernel still has keeps its
// slot, its mapping and its NAT port until its removal is handed out: the port cannot go to
// another tenant while the kernel still translates it. The queues are lists through the flow
// slots, so they can never be full; only installs are deferred beyond `queue_limit`.
#include <algorithm>

#include "nat/flow_state.hpp"
#include "nat/nat_shard.hpp"
#include "nat/nat_shard_inline.hpp"

namespace andromeda::nat {
namespace {

OffloadedFlow offloaded_flow(const Flow& f) noexcept {
    return {f.vni,
            f.protocol,
            f.origin,
            f.mapping == kNilId,
            wire::Ipv4Address(f.inside_ip),
            f.inside_port,
            wire::Ipv4Address(f.nat_ip),
            f.nat_port,
            wire::Ipv4Address(f.remote_ip),
            f.remote_port};
}

OffloadReason removal_reason(const Flow& f) noexcept {
    if (f.remote_is_nat_address) return OffloadReason::hairpin;
    return f.state == FlowState::tcp_reset ? OffloadReason::tcp_reset : OffloadReason::tcp_fin;
}

}  // namespace

void NatShard::change_offload(std::uint32_t id, bool offload) noexcept {
    Flow& f = flows_[id];
    if (offload) {
        if (f.mapping == kNilId && !forward_replies_here(f)) {
            f.offload |= Flow::kOffloadRefused;  // the engine answers for it elsewhere: never in the kernel
            return;
        }
        if (!(f.offload & Flow::kOffloadQueued) && pending_offload_changes() >= settings_.offload.queue_limit) {
            ++counters_.offload_queue_full;  // asked again on the flow's next packet
            return;
        }
        f.offload |= Flow::kOffloaded;
        f.offload_reason = f.protocol == Protocol::tcp ? OffloadReason::tcp_established : OffloadReason::new_flow;
        if (!(f.offload & Flow::kInKernel)) kernel_counts_[2 * std::size_t{id}] = kernel_counts_[2 * std::size_t{id} + 1] = {};
    } else {
        f.offload &= static_cast<std::uint8_t>(~Flow::kOffloaded);
        f.offload_reason = removal_reason(f);
    }
    enqueue_offload(id);
}

// The endpoint's packets of a port-forward flow reach this flow when the endpoint's port is this
// shard's (they are looked up here first), or when its forward is the only one leading to that
// endpoint port (they are sent on here, see forward_owner). An endpoint port behind several
// forwards can have one flow per forward with the same tenant-side tuple, one per shard: the
// engine answers with the one in the endpoint port's shard, so only that one may be offloaded.
bool NatShard::forward_replies_here(const Flow& f) const noexcept {
    if (PortAllocator::owner_shard(f.inside_port, shard_count_) == index_) return true;
    const ForwardMatch* forward =
        rules_->find_forward_from_endpoint(f.vni, f.protocol, wire::Ipv4Address(f.inside_ip), f.inside_port);
    return forward && !forward->endpoint_shared && ports_.owns(forward->forward.nat_port);
}

void NatShard::retire_offloaded(std::uint32_t id, Removal why) noexcept {
    Flow& f = flows_[id];
    flows_.unlink(id);
    if (f.mapping != kNilId) {  // held, not used: a forward may now win over it (forward_owner)
        --mappings_[f.mapping].flows;
        ++mappings_[f.mapping].retired;
    }
    f.offload &= static_cast<std::uint8_t>(~Flow::kOffloaded);
    f.offload_reason = why == Removal::expired    ? OffloadReason::expired
                       : why == Removal::endpoint ? OffloadReason::endpoint_removed
                                                  : OffloadReason::stale;
    enqueue_offload(id);
    ++retired_;
}

void NatShard::enqueue_offload(std::uint32_t id) noexcept {
    Flow& f = flows_[id];
    if (f.offload & Flow::kOffloadQueued) return;
    f.offload |= Flow::kOffloadQueued;
    OffloadQueue& queue = (f.offload & Flow::kInKernel) ? removal_queue_ : install_queue_;
    offload_next_[id] = kNilId;
    if (queue.tail == kNilId) {
        queue.head = id;
    } else {
        offload_next_[queue.tail] = id;
    }
    queue.tail = id;
    ++queue.size;
}

std::size_t NatShard::drain_offload(std::span<OffloadChange> out, bool installs) noexcept {
    std::size_t n = drain_queue(removal_queue_, out);
    if (installs) n += drain_queue(install_queue_, out.subspan(n));
    return n;
}

std::size_t NatShard::drain_queue(OffloadQueue& queue, std::span<OffloadChange> out) noexcept {
    std::size_t n = 0;
    while (n < out.size() && queue.head != kNilId) {
        const std::uint32_t id = queue.head;
        queue.head = offload_next_[id];
        if (queue.head == kNilId) queue.tail = kNilId;
        --queue.size;
        Flow& f = flows_[id];
        f.offload &= static_cast<std::uint8_t>(~Flow::kOffloadQueued);
        const bool wanted = (f.offload & Flow::kOffloaded) != 0;
        const bool told = (f.offload & Flow::kInKernel) != 0;
        if (wanted && !told) {
            out[n++] = {OffloadChange::Kind::install, f.offload_reason, offloaded_flow(f)};
            f.offload |= Flow::kInKernel;
            ++counters_.offload_installs;
        } else if (!wanted && told) {
            out[n++] = {OffloadChange::Kind::remove, f.offload_reason, offloaded_flow(f)};
            f.offload &= static_cast<std::uint8_t>(~Flow::kInKernel);
            ++counters_.offload_removals;
        }
        if (!f.linked) {  // ended while the kernel had it: its removal is out, free it now
            --retired_;
            free_flow(id);
        }
    }
    return n;
}

std::uint32_t NatShard::find_offloaded(const OffloadedFlow& k, std::int64_t now) noexcept {
    const std::uint32_t id =
        live(flows_.find_outside({k.protocol, k.nat.value(), k.nat_port, k.remote.value(), k.remote_port}), now);
    if (id == kNilId || offloaded_flow(flows_[id]) != k) return kNilId;
    return id;
}

bool NatShard::touch_offloaded(const OffloadedFlow& k, std::int64_t last_used, const KernelCounts* outbound,
                               const KernelCounts* inbound, std::int64_t now) noexcept {
    const std::uint32_t id = offload_enabled_ ? find_offloaded(k, now) : kNilId;
    if (id == kNilId || !(flows_[id].offload & Flow::kOffloaded)) {
        // The daemon deletes the kernel's copy now: a queued removal of this flow hands out
        // nothing, and should it become eligible again it is installed afresh.
        if (id != kNilId) flows_[id].offload &= static_cast<std::uint8_t>(~Flow::kInKernel);
        ++counters_.offload_touch_unknown;
        return false;
    }
    Flow& f = flows_[id];
    const bool outbound_first = f.origin == Origin::outbound;  // the original direction's counts go first
    KernelCounts* counts = &kernel_counts_[2 * std::size_t{id}];
    if (outbound) counts[outbound_first ? 0 : 1] = *outbound;
    if (inbound) counts[outbound_first ? 1 : 0] = *inbound;
    if (counts[1].packets > 0 && f.state == FlowState::unreplied) f.state = FlowState::replied;
    // Never earlier: the engine may have seen a later packet (a punted one) than the kernel.
    const std::int64_t deadline = last_used + timeout_ns(f.protocol, f.state) + offload_grace_ns_;
    if (deadline > wheel_.deadline(id)) wheel_.refresh(id, deadline);
    ++counters_.offload_touched;
    return true;
}

bool NatShard::offload_failed(const OffloadedFlow& k, std::int64_t now) noexcept {
    const std::uint32_t id = offload_enabled_ ? find_offloaded(k, now) : kNilId;
    if (id == kNilId) return false;
    Flow& f = flows_[id];
    f.offload &= static_cast<std::uint8_t>(~Flow::kInKernel);  // a queued removal now hands out nothing
    if (f.offload & Flow::kOffloaded) {
        f.offload &= static_cast<std::uint8_t>(~Flow::kOffloaded);
        f.offload |= Flow::kOffloadRefused;
        wheel_.refresh(id, wheel_.deadline(id) - offload_grace_ns_);  // the pipeline's exact timeout again
        ++counters_.offload_install_failed;
    }
    return true;
}

std::size_t NatShard::remove_stale(std::int64_t now) noexcept {
    std::size_t ended = 0;
    flows_.for_each([&](std::uint32_t id) {
        Flow& f = flows_[id];
        if (wheel_.expired(id, now)) {
            remove_flow(id, Removal::expired);
            ++ended;
        } else if (f.rules_generation != generation_) {
            if (!still_valid(f)) {
                remove_flow(id, Removal::stale);
                ++ended;
            } else if ((f.offload & Flow::kOffloaded) && !offload_eligible(f)) {
                change_offload(id, false);  // its remote became a NAT address: the pipeline hairpins it
                wheel_.refresh(id, wheel_.deadline(id) - offload_grace_ns_);
            }
        }
    });
    return ended;
}

// ---- adoption: a flow the kernel carried for a previous daemon -----------------------------

bool NatShard::adoptable(const OffloadedFlow& k, FlowState state) const noexcept {
    if (!offload_enabled_ || !rules_) return false;
    const bool tcp = k.protocol == Protocol::tcp;
    if (tcp ? state != FlowState::tcp_established : state != FlowState::unreplied && state != FlowState::replied)
        return false;
    if (k.protocol == Protocol::icmp && (k.remote_port != 0 || k.origin != Origin::outbound || k.port_forward))
        return false;
    // Both directions' packets must reach this shard: the NAT port's owner, which for a dynamic
    // mapping is also the tenant port's (a different shard count since the kernel's flow began
    // breaks that; such flows are refused and the daemon deletes them).
    if (!ports_.owns(k.nat_port)) return false;
    if (!k.port_forward && PortAllocator::owner_shard(k.tenant_port, shard_count_) != index_) return false;
    const VpcNatConfig* vpc = rules_->find_vpc(k.vni);
    if (!vpc || vpc->nat_address != k.nat || rules_->is_nat_address(k.remote)) return false;
    if (k.port_forward) {
        const ForwardMatch* forward = rules_->find_forward(k.nat, k.protocol, k.nat_port);
        Flow f;
        f.vni = k.vni;
        f.protocol = k.protocol;
        f.inside_ip = k.tenant.value();
        f.inside_port = k.tenant_port;
        return forward && forward->vni == k.vni && forward->forward.endpoint_ip == k.tenant &&
               forward->forward.endpoint_port == k.tenant_port && forward_replies_here(f);
    }
    // Outside-opened flows without a forward exist only under endpoint-independent UDP filtering.
    return k.origin == Origin::outbound || k.protocol == Protocol::udp;
}

// The tenant's mapping to k.nat_port: the existing one, or a new one on exactly that port.
bool NatShard::adopt_mapping(const OffloadedFlow& k, std::uint32_t& mapping) noexcept {
    mapping = mappings_.find_inside(k.vni, k.protocol, k.tenant.value(), k.tenant_port, k.nat.value());
    if (mapping != kNilId) return mappings_[mapping].nat_port == k.nat_port;
    const std::uint32_t pool = ports_.pool_for(k.nat);
    if (pool == PortAllocator::kNoPool || !ports_.reserve(pool, k.protocol, k.nat_port)) return false;
    mapping = mappings_.add(
        Mapping{k.vni, k.tenant.value(), k.nat.value(), k.tenant_port, k.nat_port, k.protocol, false, pool, 0});
    if (mapping == kNilId) {
        ports_.release(pool, k.protocol, k.nat_port);
        return false;
    }
    ++counters_.mappings_created;
    return true;
}

bool NatShard::adopt(const OffloadedFlow& k, FlowState state, std::int64_t last_used, std::int64_t now) noexcept {
    const std::int64_t deadline = last_used + timeout_ns(k.protocol, state) + offload_grace_ns_;
    Flow fields;
    fields.vni = k.vni;
    fields.protocol = k.protocol;
    fields.inside_ip = k.tenant.value();
    fields.inside_port = k.tenant_port;
    fields.remote_ip = k.remote.value();
    fields.remote_port = k.remote_port;
    fields.nat_ip = k.nat.value();
    fields.nat_port = k.nat_port;
    fields.origin = k.origin;
    // Checked before a mapping is made, so a refusal changes nothing.
    const bool refused = !adoptable(k, state) || deadline <= now || flows_.full() ||
                         live(flows_.find_inside(InsideKey::of(fields)), now) != kNilId ||
                         live(flows_.find_outside(OutsideKey::of(fields)), now) != kNilId;
    std::uint32_t id = kNilId;
    if (refused || (!k.port_forward && !adopt_mapping(k, fields.mapping)) || add_flow(fields, now, id) != DropReason::none) {
        if (!refused) release_mapping_if_unused(fields.mapping);
        ++counters_.offload_adopt_refused;
        return false;
    }
    Flow& f = flows_[id];
    f.state = state;
    f.offload = Flow::kOffloaded | Flow::kInKernel;
    wheel_.refresh(id, deadline);
    ++counters_.offload_adopted;
    return true;
}

}  // namespace andromeda::nat
