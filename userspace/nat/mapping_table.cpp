#include "nat/mapping_table.hpp"

namespace andromeda::nat {

MappingTable::MappingTable(std::size_t capacity, std::uint64_t seed)
    : seed_(seed), mappings_(capacity), inside_(capacity), outside_(capacity) {
    free_.reserve(capacity);
}

std::uint32_t MappingTable::add(const Mapping& mapping) noexcept {
    std::uint32_t id;
    if (!free_.empty()) {
        id = free_.back();
        free_.pop_back();
    } else if (high_water_ < mappings_.size()) {
        id = high_water_++;
    } else {
        return kNilId;
    }
    Mapping& m = mappings_[id];
    m = mapping;
    m.in_use = true;
    m.flows = 0;
    m.retired = 0;
    inside_.insert(id, inside_hash(m.vni, m.protocol, m.inside_ip, m.inside_port, m.nat_ip));
    outside_.insert(id, outside_hash(m.protocol, m.nat_ip, m.nat_port));
    ++size_;
    return id;
}

void MappingTable::remove(std::uint32_t id) noexcept {
    Mapping& m = mappings_[id];
    if (!m.in_use) return;
    inside_.remove(id, inside_hash(m.vni, m.protocol, m.inside_ip, m.inside_port, m.nat_ip));
    outside_.remove(id, outside_hash(m.protocol, m.nat_ip, m.nat_port));
    m.in_use = false;
    free_.push_back(id);
    --size_;
}

}  // namespace andromeda::nat
