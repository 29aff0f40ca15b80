// What the NAT did with each packet, counted per shard: one named field per verdict and per
// drop reason, so `andromedactl stats` and the BPF counter map can show them by name.
#pragma once

#include <cstdint>
#include <string_view>

namespace andromeda::nat {

// Why a packet was not translated. A dropped packet is never forwarded: a tenant's private
// address must not leak to the uplink.
enum class DropReason : std::uint8_t {
    none,
    malformed,              // IPv4/TCP/UDP/ICMP header truncated or inconsistent
    fragment,               // IP fragments are not translated (no reassembly)
    unsupported_protocol,   // neither TCP, UDP nor ICMP
    unsupported_icmp,       // an ICMP message that is neither echo nor a known error
    no_nat_config,          // the tenant's VPC has no NAT (or no rules are loaded)
    not_nat_address,        // inbound packet not addressed to any NAT address
    no_flow,                // inbound packet matching no flow, mapping or port forward
    tcp_not_syn,            // a new TCP flow must start with a SYN
    icmp_error_no_flow,     // ICMP error quoting a packet of no known flow
    table_full,             // the flow table is at its configured size
    ports_exhausted,        // no free port (or ICMP id) left in the VPC's range
    nat_address_limit,      // too many NAT addresses in use at once (max_nat_addresses)
    tuple_conflict,         // the translated tuple is already used by another flow
    stale_flow,             // the flow's VPC no longer NATs to the flow's address
};

inline constexpr std::size_t kDropReasonCount = 15;

[[nodiscard]] constexpr std::string_view to_string(DropReason r) noexcept {
    switch (r) {
        case DropReason::none: return "none";
        case DropReason::malformed: return "malformed";
        case DropReason::fragment: return "fragment";
        case DropReason::unsupported_protocol: return "unsupported_protocol";
        case DropReason::unsupported_icmp: return "unsupported_icmp";
        case DropReason::no_nat_config: return "no_nat_config";
        case DropReason::not_nat_address: return "not_nat_address";
        case DropReason::no_flow: return "no_flow";
        case DropReason::tcp_not_syn: return "tcp_not_syn";
        case DropReason::icmp_error_no_flow: return "icmp_error_no_flow";
        case DropReason::table_full: return "table_full";
        case DropReason::ports_exhausted: return "ports_exhausted";
        case DropReason::nat_address_limit: return "nat_address_limit";
        case DropReason::tuple_conflict: return "tuple_conflict";
        case DropReason::stale_flow: return "stale_flow";
    }
    return "unknown";
}

struct NatCounters {
    // Verdicts.
    std::uint64_t translated_outbound = 0;    // tenant -> outside, source rewritten
    std::uint64_t translated_inbound = 0;     // outside -> tenant, destination rewritten
    std::uint64_t hairpinned = 0;             // tenant -> a NAT address -> tenant (also counted both ways)
    std::uint64_t icmp_errors_translated = 0; // either direction, embedded packet included
    // Flow lifecycle.
    std::uint64_t flows_created = 0;
    std::uint64_t flows_expired = 0;          // idle timeout (by the wheel or found expired on lookup)
    std::uint64_t flows_removed_endpoint = 0; // expired because a reload removed their endpoint
    std::uint64_t flows_removed_stale = 0;    // their VPC's NAT address changed or went away
    std::uint64_t mappings_created = 0;
    std::uint64_t mappings_released = 0;
    std::uint64_t ports_preserved = 0;        // new mapping kept the tenant's own port / id
    // Drops, one per DropReason (none excluded).
    std::uint64_t drop_malformed = 0;
    std::uint64_t drop_fragment = 0;
    std::uint64_t drop_unsupported_protocol = 0;
    std::uint64_t drop_unsupported_icmp = 0;
    std::uint64_t drop_no_nat_config = 0;
    std::uint64_t drop_not_nat_address = 0;
    std::uint64_t drop_no_flow = 0;
    std::uint64_t drop_tcp_not_syn = 0;
    std::uint64_t drop_icmp_error_no_flow = 0;
    std::uint64_t drop_table_full = 0;
    std::uint64_t drop_ports_exhausted = 0;
    std::uint64_t drop_nat_address_limit = 0;
    std::uint64_t drop_tuple_conflict = 0;
    std::uint64_t drop_stale_flow = 0;

    void count_drop(DropReason reason, std::uint64_t n = 1) noexcept;
    [[nodiscard]] std::uint64_t drops(DropReason reason) const noexcept;
    [[nodiscard]] std::uint64_t total_drops() const noexcept;
    NatCounters& operator+=(const NatCounters& other) noexcept;

    // Calls f(name, value) for every field in declaration order (renderers, exporters).
    template <class F>
    void for_each(F&& f) const {
        f("translated_outbound", translated_outbound);
        f("translated_inbound", translated_inbound);
        f("hairpinned", hairpinned);
        f("icmp_errors_translated", icmp_errors_translated);
        f("flows_created", flows_created);
        f("flows_expired", flows_expired);
        f("flows_removed_endpoint", flows_removed_endpoint);
        f("flows_removed_stale", flows_removed_stale);
        f("mappings_created", mappings_created);
        f("mappings_released", mappings_released);
        f("ports_preserved", ports_preserved);
        for (std::size_t r = 1; r < kDropReasonCount; ++r) {
            const auto reason = static_cast<DropReason>(r);
            f(drop_field_name(reason), drops(reason));
        }
    }
    [[nodiscard]] static std::string_view drop_field_name(DropReason reason) noexcept;
};

}  // namespace andromeda::nat
