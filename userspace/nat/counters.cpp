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
