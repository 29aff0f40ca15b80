#include "nat/port_allocator.hpp"

#include <algorithm>

namespace andromeda::nat {
namespace {
constexpr std::size_t kBlocks = 65536 >> PortAllocator::kBlockShift;
}

PortAllocator::PortAllocator(std::size_t shard, std::size_t shard_count, std::size_t max_addresses)
    : shard_(shard), shard_count_(std::max<std::size_t>(shard_count, 1)) {
    const std::size_t own_blocks = (kBlocks - shard_ + shard_count_ - 1) / shard_count_;
    words_ = (own_blocks * 8 + 63) / 64;
    pools_.resize(max_addresses);
    bitmaps_.assign(max_addresses * kProtocols * words_, 0);
}

std::uint32_t PortAllocator::pool_for(wire::Ipv4Address address) noexcept {
    std::uint32_t unclaimed = kNoPool;
    std::uint32_t drained = kNoPool;  // claimed by an address that holds no port any more
    for (std::uint32_t i = 0; i < pools_.size(); ++i) {
        const Pool& p = pools_[i];
        if (p.claimed && p.address == address.value()) return i;
        if (!p.claimed && unclaimed == kNoPool) unclaimed = i;
        if (p.claimed && p.used == 0 && drained == kNoPool) drained = i;
    }
    const std::uint32_t pool = unclaimed != kNoPool ? unclaimed : drained;
    if (pool != kNoPool) pools_[pool] = Pool{address.value(), 0, true};  // its bitmaps are all clear
    return pool;
}

void PortAllocator::take(std::uint32_t pool, Protocol protocol, std::uint32_t local) noexcept {
    bits(pool, protocol)[local >> 6] |= std::uint64_t{1} << (local & 63);
    ++pools_[pool].used;
}

void PortAllocator::release(std::uint32_t pool, Protocol protocol, std::uint16_t port) noexcept {
    if (!owns(port)) return;
    const std::uint32_t local = local_index(port);
    std::uint64_t& word = bits(pool, protocol)[local >> 6];
    const std::uint64_t bit = std::uint64_t{1} << (local & 63);
    if ((word & bit) == 0) return;
    word &= ~bit;
    --pools_[pool].used;
}

bool PortAllocator::reserve(std::uint32_t pool, Protocol protocol, std::uint16_t port) noexcept {
    if (!owns(port) || in_use(pool, protocol, port)) return false;
    take(pool, protocol, local_index(port));
    return true;
}

bool PortAllocator::in_use(std::uint32_t pool, Protocol protocol, std::uint16_t port) const noexcept {
    if (!owns(port)) return false;
    const std::uint32_t local = local_index(port);
    return (bits(pool, protocol)[local >> 6] >> (local & 63) & 1) != 0;
}

std::uint32_t PortAllocator::local_ceil(std::uint16_t port) const noexcept {
    const std::size_t block = static_cast<std::size_t>(port) >> kBlockShift;
    if (block % shard_count_ == shard_) return local_index(port);
    const std::size_t next = block + (shard_ + shard_count_ - block % shard_count_) % shard_count_;
    if (next >= kBlocks) return kNone;
    return static_cast<std::uint32_t>((next / shard_count_) << kBlockShift);
}

std::uint32_t PortAllocator::local_floor(std::uint16_t port) const noexcept {
    const std::size_t block = static_cast<std::size_t>(port) >> kBlockShift;
    if (block % shard_count_ == shard_) return local_index(port);
    const std::size_t back = (block % shard_count_ + shard_count_ - shard_) % shard_count_;
    if (back > block) return kNone;
    return static_cast<std::uint32_t>(((block - back) / shard_count_) << kBlockShift | 7);
}

std::size_t PortAllocator::owned_in_range(std::uint16_t port_min, std::uint16_t port_max) const noexcept {
    const std::uint32_t low = local_ceil(port_min);
    const std::uint32_t high = local_floor(port_max);
    return low == kNone || high == kNone || low > high ? 0 : high - low + 1;
}

std::uint32_t PortAllocator::find_clear(const std::uint64_t* map, std::uint32_t from, std::uint32_t to) noexcept {
    std::uint32_t w = from >> 6;
    const std::uint32_t last = to >> 6;
    std::uint64_t clear = ~map[w] & (~std::uint64_t{0} << (from & 63));
    for (;;) {
        if (w == last && (to & 63) != 63) clear &= (std::uint64_t{1} << ((to & 63) + 1)) - 1;
        if (clear != 0) return w * 64 + static_cast<std::uint32_t>(std::countr_zero(clear));
        if (w == last) return kNone;
        clear = ~map[++w];
    }
}

}  // namespace andromeda::nat
