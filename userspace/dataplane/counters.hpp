// Per-worker counters: plain structs of named uint64 fields from X-lists (util/counters.hpp:
// summed with util::add_counters, named by for_each), written by one worker without atomics. The
// daemon sums the workers' copies for `andromedactl stats` (the dataplane group) and publishes a
// few totals into the andromeda_daemon_stats map; no BPF map holds them field by field.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dataplane/verdict.hpp"
#include "overlay/decap.hpp"
#include "util/counters.hpp"

namespace andromeda::dataplane {

struct DropCounters {
#define ANDROMEDA_DROP_FIELD(name, id, description) std::uint64_t name = 0;
    ANDROMEDA_DROPS_PIPELINE(ANDROMEDA_DROP_FIELD)
#undef ANDROMEDA_DROP_FIELD
};
static_assert(sizeof(DropCounters) == kDropReasonCount * sizeof(std::uint64_t));

// One field per overlay::DecapError but ok: why a packet on the underlay port was refused.
struct DecapErrorCounters {
#define ANDROMEDA_DECAP_FIELD(name, id, description) std::uint64_t name = 0;
    ANDROMEDA_DROPS_DECAP(ANDROMEDA_DECAP_FIELD)
#undef ANDROMEDA_DECAP_FIELD
};

#define ANDROMEDA_PIPELINE_COUNTERS(X)                                                           \
    /* Frames in, by the role of the port they came from (route_from_nat counts as from_nat). */ \
    X(rx_tenant)                                                                                 \
    X(rx_underlay)                                                                               \
    X(rx_uplink)                                                                                 \
    X(rx_from_nat)                                                                               \
    /* One per verdict; they sum to the frames in. */                                            \
    X(forwarded)                                                                                 \
    X(delivered)                                                                                 \
    X(replied)                                                                                   \
    X(to_nat)                                                                                    \
    X(dropped)                                                                                   \
    /* What the verdicts were made of. */                                                        \
    X(encapsulated)          /* outer packets sent (a fragmented packet counts per fragment) */  \
    X(decapsulated)          /* overlay packets accepted */                                      \
    X(delivered_local)       /* tenant port to tenant port on this host */                       \
    X(delivered_from_fabric) /* decapsulated and delivered */                                    \
    X(checksums_finished)    /* ... of them with a TCP/UDP checksum offload had left unfinished */ \
    X(sent_to_nat_gateway)   /* outside the VPC, encapsulated towards its NAT node */            \
    X(arp_replies)                                                                               \
    X(overlay_arp_replies)      /* ARP answered for a local endpoint to a VXLAN peer's tenant */  \
    X(overlay_neighbor_advertisements) /* ... and Neighbor Solicitations (docs/wire-format.md) */ \
    X(flooded)                  /* broadcast and multicast frames flooded (VXLAN, head-end replication) */ \
    X(flood_copies)             /* ... the copies sent: one per other member of the VPC */ \
    X(echo_replies)             /* ICMP and ICMPv6 */                                             \
    X(neighbor_advertisements)  /* the ND proxy's answers (docs/ipv6.md) */                       \
    X(router_advertisements)    /* answers to Router Solicitations (the daemon sends the others) */ \
    X(dhcp_replies)             /* OFFER, ACK and NAK sent (andromedactl dhcp: the server's own counts) */ \
    X(dns_queries)              /* tenant queries to the gateway handed to its DNS service */     \
    X(frag_needed_sent)                                                                          \
    X(packet_too_big_sent)                                                                       \
    X(packets_fragmented)                                                                        \
    X(fragments_sent)                                                                            \
    X(in_place_fallback_copies) /* in-place encap without the outer headers' headroom */         \
    X(fabric_rebuilds)          /* snapshot-derived state rebuilt (new generation) */          \
    X(underlay_pmtu_learned)    /* fragmentation needed about our outer packet: peer's MTU lowered */ \
    X(underlay_pmtu_ignored)    /* ... refused: not our packet, unknown peer, implausible MTU, truncated */

struct PipelineCounters {
    ANDROMEDA_PIPELINE_COUNTERS(ANDROMEDA_COUNTER_FIELD)
    DropCounters drops;
    DecapErrorCounters decap_errors;

    // Calls f(name, value) for every counter (util/counters.hpp): the drops as "drop_<reason>",
    // the decapsulation refusals as "decap_<error>".
    template <class F>
    void for_each(F&& f) const {
        ANDROMEDA_PIPELINE_COUNTERS(ANDROMEDA_COUNTER_VISIT)
#define ANDROMEDA_PIPELINE_DROP_NAME(name, id, description) f("drop_" #name, drops.name);
        ANDROMEDA_DROPS_PIPELINE(ANDROMEDA_PIPELINE_DROP_NAME)
#undef ANDROMEDA_PIPELINE_DROP_NAME
#define ANDROMEDA_PIPELINE_DECAP_NAME(name, id, description) f("decap_" #name, decap_errors.name);
        ANDROMEDA_DROPS_DECAP(ANDROMEDA_PIPELINE_DECAP_NAME)
#undef ANDROMEDA_PIPELINE_DECAP_NAME
    }
};

// The counter of `reason` (a reference into `counters.drops`); none has no counter.
[[nodiscard]] std::uint64_t* drop_counter(DropCounters& counters, DropReason reason) noexcept;
[[nodiscard]] std::uint64_t drop_count(const DropCounters& counters, DropReason reason) noexcept;
[[nodiscard]] std::uint64_t* decap_error_counter(DecapErrorCounters& counters, overlay::DecapError error) noexcept;
[[nodiscard]] std::uint64_t total_drops(const DropCounters& counters) noexcept;

}  // namespace andromeda::dataplane
