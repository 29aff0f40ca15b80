#include "nat/counters.hpp"

#include <array>

namespace andromeda::nat {
namespace {

using Field = std::uint64_t NatCounters::*;

// Indexed by DropReason; the `none` slot is never counted.
constexpr std::array<Field, kDropReasonCount> kDropFields{
    nullptr,
#define ANDROMEDA_NAT_DROP_MEMBER(name, id, description) &NatCounters::drop_##name,
    ANDROMEDA_DROPS_NAT(ANDROMEDA_NAT_DROP_MEMBER)
#undef ANDROMEDA_NAT_DROP_MEMBER
};

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
#define ANDROMEDA_NAT_DROP_FIELD_NAME(name, id, description) \
    case DropReason::name: return "drop_" #name;
        ANDROMEDA_DROPS_NAT(ANDROMEDA_NAT_DROP_FIELD_NAME)
#undef ANDROMEDA_NAT_DROP_FIELD_NAME
    }
    return "drop_unknown";
}

}  // namespace andromeda::nat
