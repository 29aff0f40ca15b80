#include "nat/flow_table.hpp"

#include <algorithm>

namespace andromeda::nat {

FlowTable::FlowTable(std::size_t capacity, std::uint64_t seed)
    : seed_(seed), flows_(capacity), created_ns_(capacity), inside_(capacity), outside_(capacity),
      endpoint_(capacity, std::max<std::size_t>(capacity / 4, 64)) {
    free_.reserve(capacity);
}

std::uint32_t FlowTable::allocate() noexcept {
    std::uint32_t id;
    if (!free_.empty()) {
        id = free_.back();
        free_.pop_back();
    } else if (high_water_ < flows_.size()) {
        id = high_water_++;
    } else {
        return kNilId;
    }
    flows_[id] = Flow{};
    flows_[id].in_use = true;
    ++size_;
    return id;
}

void FlowTable::link(std::uint32_t id) noexcept {
    Flow& f = flows_[id];
    f.linked = true;
    inside_.insert(id, hash(InsideKey::of(f)));
    outside_.insert(id, hash(OutsideKey::of(f)));
    endpoint_.insert(id, endpoint_hash(f.vni, f.inside_ip));
}

void FlowTable::unlink(std::uint32_t id) noexcept {
    Flow& f = flows_[id];
    if (!f.linked) return;
    inside_.remove(id, hash(InsideKey::of(f)));
    outside_.remove(id, hash(OutsideKey::of(f)));
    endpoint_.remove(id, endpoint_hash(f.vni, f.inside_ip));
    f.linked = false;
}

void FlowTable::remove(std::uint32_t id) noexcept {
    Flow& f = flows_[id];
    if (!f.in_use) return;
    unlink(id);
    f.in_use = false;
    free_.push_back(id);
    --size_;
}

}  // namespace andromeda::nat
