// ICMP errors through the NAT (RFC 5508 section 4): the error quotes a packet of a translated
// flow, so the quoted header and transport are translated back along with the outer header,
// and every checksum involved is patched. Errors do not refresh the flow's timer: otherwise any
// outside host could keep a dead flow alive by sending errors about it.
#include "nat/nat_shard.hpp"
#include "nat/nat_shard_inline.hpp"

namespace andromeda::nat {

// From outside to a tenant, e.g. Fragmentation Needed from a router on the path (PMTUD) or Time
// Exceeded (traceroute). The quoted packet is one the NAT sent: nat ip:port -> remote.
ShardOutcome NatShard::inbound_icmp_error(const NatPacket& p, std::int64_t now) noexcept {
    if (p.inner_source != p.destination) return drop(DropReason::icmp_error_no_flow);  // not about our packet
    const OutsideKey key{p.inner_protocol, p.inner_source, p.inner_source_port, p.inner_destination,
                         p.inner_is_echo ? std::uint16_t{0} : p.inner_destination_port};
    const std::uint32_t id = live(flows_.find_outside(key), now);
    if (id == kNilId) return drop(DropReason::icmp_error_no_flow);
    const Flow& f = flows_[id];
    rewrite_icmp_error_inbound(p, f.inside_ip, f.inside_port);
    ++counters_.translated_inbound;
    ++counters_.icmp_errors_translated;
    return ShardOutcome::translated(f.vni, f.inside_ip);
}

// From a tenant to outside, e.g. Port Unreachable for a forwarded UDP port, or Time Exceeded
// from a router inside the VPC. The quoted packet is one the NAT delivered: remote -> tenant.
// The outer source becomes the NAT address whoever inside sent the error: no private address
// leaves.
ShardOutcome NatShard::outbound_icmp_error(std::uint32_t vni, const NatPacket& p, std::int64_t now) noexcept {
    const InsideKey key{vni, p.inner_protocol, p.inner_destination, p.inner_destination_port, p.inner_source,
                        p.inner_is_echo ? std::uint16_t{0} : p.inner_source_port};
    const std::uint32_t id = live(flows_.find_inside(key), now);
    if (id == kNilId) {
        // A port-forward flow lives in the shard of its forwarded port.
        const ForwardMatch* forward =
            p.inner_is_echo ? nullptr
                            : rules_->find_forward_from_endpoint(vni, p.inner_protocol,
                                                                 wire::Ipv4Address(p.inner_destination),
                                                                 p.inner_destination_port);
        if (forward && !ports_.owns(forward->forward.nat_port)) {
            return ShardOutcome::retry_in(
                static_cast<std::uint32_t>(PortAllocator::owner_shard(forward->forward.nat_port, shard_count_)));
        }
        return drop(DropReason::icmp_error_no_flow);
    }
    const Flow& f = flows_[id];
    rewrite_icmp_error_outbound(p, f.nat_ip, f.nat_port);
    ++counters_.translated_outbound;
    ++counters_.icmp_errors_translated;
    return ShardOutcome::translated();
}

}  // namespace andromeda::nat
