#include "nat/counters.hpp"

#include <array>

namespace andromeda::nat {
namespace {

using Field = std::uint64_t NatCounters::*;

// By util::drop_slot(DropReason).
constexpr std::array<Field, kDropReasonCount> kDropFields{
#define ANDROMEDA_NAT_DROP_MEMBER(name, id, description) &NatCounters::drop_##name,
    ANDROMEDA_DROPS_NAT(ANDROMEDA_NAT_DROP_MEMBER)
#undef ANDROMEDA_NAT_DROP_MEMBER
};

}  // namespace

void NatCounters::count_drop(DropReason reason, std::uint64_t n) noexcept {
    const std::size_t slot = util::drop_slot(reason);
    if (slot < kDropReasonCount) this->*kDropFields[slot] += n;
}

std::uint64_t NatCounters::drops(DropReason reason) const noexcept {
    const std::size_t slot = util::drop_slot(reason);
    return slot < kDropReasonCount ? this->*kDropFields[slot] : 0;
}

std::uint64_t NatCounters::total_drops() const noexcept {
    std::uint64_t total = 0;
    for (const Field field : kDropFields) total += this->*field;
    return total;
}

}  // namespace andromeda::nat
