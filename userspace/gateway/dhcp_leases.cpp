#include "gateway/dhcp_leases.hpp"

#include <algorithm>

namespace andromeda::gateway {

std::string_view to_string(DhcpLeaseState state) noexcept {
    switch (state) {
        case DhcpLeaseState::offered: return "offered";
        case DhcpLeaseState::bound: return "bound";
        case DhcpLeaseState::released: return "released";
        case DhcpLeaseState::declined: return "declined";
        case DhcpLeaseState::informed: return "informed";
        case DhcpLeaseState::other_server: return "other_server";
        case DhcpLeaseState::expired: return "expired";
    }
    return "unknown";
}

DhcpLeaseState DhcpLease::state_at(std::uint64_t now_ns) const noexcept {
    const bool timed = state == DhcpLeaseState::offered || state == DhcpLeaseState::bound;
    return timed && expires_ns != 0 && now_ns >= expires_ns ? DhcpLeaseState::expired : state;
}

DhcpLeaseTable::DhcpLeaseTable(std::size_t max_clients) {
    std::size_t size = kWays;
    while (size < max_clients) size *= 2;
    entries_.resize(size);
    set_mask_ = size / kWays - 1;
}

std::size_t DhcpLeaseTable::set_of(std::uint32_t scope, const wire::MacAddress& mac) const noexcept {
    std::uint64_t h = (mac.as_u64() ^ std::uint64_t{scope} << 48) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    return static_cast<std::size_t>(h & set_mask_);
}

DhcpLease& DhcpLeaseTable::record(std::uint32_t scope, const wire::MacAddress& mac, std::uint64_t now_ns) noexcept {
    Slot* set = &entries_[set_of(scope, mac) * kWays];
    Slot* victim = nullptr;
    for (std::size_t way = 0; way < kWays; ++way) {
        Slot& s = set[way];
        if (s.used && s.lease.scope == scope && s.lease.mac == mac) {
            s.lease.last_seen_ns = std::max(s.lease.last_seen_ns, now_ns);
            return s.lease;
        }
        if (!s.used) {
            if (victim == nullptr || victim->used) victim = &s;
        } else if (victim == nullptr || (victim->used && s.lease.last_seen_ns < victim->lease.last_seen_ns)) {
            victim = &s;
        }
    }
    if (victim->used) ++evictions_;
    victim->used = true;
    victim->lease = DhcpLease{};
    victim->lease.scope = scope;
    victim->lease.mac = mac;
    victim->lease.last_seen_ns = now_ns;
    return victim->lease;
}

std::optional<DhcpLease> DhcpLeaseTable::find(std::uint32_t scope, const wire::MacAddress& mac) const noexcept {
    const Slot* set = &entries_[set_of(scope, mac) * kWays];
    for (std::size_t way = 0; way < kWays; ++way)
        if (set[way].used && set[way].lease.scope == scope && set[way].lease.mac == mac) return set[way].lease;
    return std::nullopt;
}

std::vector<DhcpLease> DhcpLeaseTable::list() const {
    std::vector<DhcpLease> leases;
    for (const Slot& s : entries_)
        if (s.used) leases.push_back(s.lease);
    return leases;
}

std::size_t DhcpLeaseTable::size() const noexcept {
    return static_cast<std::size_t>(std::count_if(entries_.begin(), entries_.end(), [](const Slot& s) { return s.used; }));
}

}  // namespace andromeda::gateway
