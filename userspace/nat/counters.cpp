#include "nat/counters.hpp"

#include <array>

namespace andromeda::nat {
namespace {

using Field = std::uint64_t NatCounters::*;

// Indexed by DropReason; the `none` slot is never counted.
constexpr std::array<Field, kDropReasonCount> kDropFields{
    nullptr,
    &NatCounters::drop_malformed,
    &NatCounters::drop_fragment,
    &NatCounters::drop_unsupported_protocol,
    &NatCounters::drop_unsupported_icmp,
    &NatCounters::drop_no_nat_config,
    &NatCounters::drop_not_nat_address,
    &NatCounters::drop_no_flow,
    &NatCounters::drop_tcp_not_syn,
    &NatCounters::drop_icmp_error_no_flow,
    &NatCounters::drop_table_full,
    &NatCounters::drop_ports_exhausted,
    &NatCounters::drop_nat_address_limit,
    &NatCounters::drop_tuple_conflict,
    &NatCounters::drop_stale_flow,
};
static_assert(static_cast<std::size_t>(DropReason::stale_flow) + 1 == kDropReasonCount);

constexpr std::array<Field, 11> kOtherFields{
    &NatCounters::translated_outbound, &NatCounters::translated_inbound, &NatCounters::hairpinned,
    &NatCounters::icmp_errors_translated, &NatCounters::flows_created, &NatCounters::flows_expired,
    &NatCounters::flows_removed_endpoint, &NatCounters::flows_removed_stale, &NatCounters::mappings_created,
    &NatCounters::mappings_released, &NatCounters::ports_preserved,
};
// Every field is in one of the two tables, so operator+= cannot forget one.
static_assert(sizeof(NatCounters) == (kDropReasonCount - 1 + kOtherFields.size()) * sizeof(std::uint64_t));

}  // namespace

void NatCounters::count_drop(DropReason reason, std::uint64_t n) noexcept {
    const auto index = static_cast<std::size_t>(reason);
    if (index > 0 && index < kDropReasonCount) this->*kDropFields[index] += n;
}

std::uint64_t NatCounters::drops(DropReason reason) const noexcept {
    const auto index = static_cast<std::size_t>(reason);
    return index > 0 && index < kDropReasonCount ? this->*kDropFields[index] : 0;
}

std::uint64_t NatCounters::total_drops() const noexcept {
    std::uint64_t total = 0;
    for (std::size_t r = 1; r < kDropReasonCount; ++r) total += this->*kDropFields[r];
    return total;
}

NatCounters& NatCounters::operator+=(const NatCounters& other) noexcept {
    for (std::size_t r = 1; r < kDropReasonCount; ++r) this->*kDropFields[r] += other.*kDropFields[r];
    for (const Field f : kOtherFields) this->*f += other.*f;
    return *this;
}

std::string_view NatCounters::drop_field_name(DropReason reason) noexcept {
    switch (reason) {
        case DropReason::none: return "drop_none";
        case DropReason::malformed: return "drop_malformed";
        case DropReason::fragment: return "drop_fragment";
        case DropReason::unsupported_protocol: return "drop_unsupported_protocol";
        case DropReason::unsupported_icmp: return "drop_unsupported_icmp";
        case DropReason::no_nat_config: return "drop_no_nat_config";
        case DropReason::not_nat_address: return "drop_not_nat_address";
        case DropReason::no_flow: return "drop_no_flow";
        case DropReason::tcp_not_syn: return "drop_tcp_not_syn";
        case DropReason::icmp_error_no_flow: return "drop_icmp_error_no_flow";
        case DropReason::table_full: return "drop_table_full";
        case DropReason::ports_exhausted: return "drop_ports_exhausted";
        case DropReason::nat_address_limit: return "drop_nat_address_limit";
        case DropReason::tuple_conflict: return "drop_tuple_conflict";
        case DropReason::stale_flow: return "drop_stale_flow";
    }
    return "drop_unknown";
}

}  // namespace andromeda::nat
