#include "nat/tenant_budget.hpp"

#include <algorithm>
#include <bit>

#include "nat/flow_table.hpp"

namespace andromeda::nat {

TenantFlowBudget::TenantFlowBudget(TenantFlowLimit limit, std::size_t tenants, std::uint64_t seed)
    : slots_(std::bit_ceil(std::max(tenants, kProbe))), mask_(slots_.size() - 1), seed_(seed) {
    set_limit(limit);
}

void TenantFlowBudget::set_limit(TenantFlowLimit limit) noexcept {
    std::lock_guard guard(lock_);
    limit_ = limit;
    interval_ns_ = limit.rate == 0 ? 0 : 1'000'000'000 / static_cast<std::int64_t>(limit.rate);
    interval_ns_ = limit.rate == 0 ? 0 : std::max<std::int64_t>(interval_ns_, 1);
    tolerance_ns_ = interval_ns_ * std::max<std::int64_t>(limit.burst, 1);
}

TenantFlowLimit TenantFlowBudget::limit() const noexcept {
    std::lock_guard guard(lock_);
    return limit_;
}

std::size_t TenantFlowBudget::index(std::uint64_t key) const noexcept {
    return static_cast<std::size_t>(hash_words(seed_, key, 0x7E4A)) & mask_;
}

bool TenantFlowBudget::take(std::uint32_t vni, std::uint32_t ip, std::int64_t now_ns) noexcept {
    std::lock_guard guard(lock_);
    if (interval_ns_ == 0) return true;
    const std::uint64_t key = (std::uint64_t{vni} << 32 | ip) + 1;
    const std::size_t home = index(key);
    Slot* found = nullptr;
    Slot* reusable = nullptr;  // empty, or a budget full again
    Slot* oldest = nullptr;
    for (std::size_t i = 0; i < kProbe && found == nullptr; ++i) {
        Slot& s = slots_[(home + i) & mask_];
        if (s.key == key) {
            found = &s;
        } else if (s.key == 0 || s.tat <= now_ns) {
            if (reusable == nullptr) reusable = &s;
        } else if (oldest == nullptr || s.tat < oldest->tat) {
            oldest = &s;
        }
    }
    if (found == nullptr) {
        found = reusable != nullptr ? reusable : oldest;
        found->key = key;
        found->tat = now_ns;
    }
    // GCRA: the flow conforms when it arrives no more than the tolerance ahead of its schedule.
    const std::int64_t tat = std::max(found->tat, now_ns);
    if (tat + interval_ns_ - now_ns > tolerance_ns_) return false;
    found->tat = tat + interval_ns_;
    return true;
}

std::size_t TenantFlowBudget::tracked() const noexcept {
    std::lock_guard guard(lock_);
    return static_cast<std::size_t>(std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.key != 0; }));
}

}  // namespace andromeda::nat
