// Port (and ICMP echo identifier) allocation for one shard.
//
// Ports are partitioned between shards in blocks of 8: port p belongs to shard
// (p >> 3) % shard_count. A shard only ever hands out its own ports, so an inbound packet's
// destination port alone names the shard that owns its flow (and a steering program can compute
// it). Blocks rather than single ports because tenants' ephemeral ports are often all even or
// all odd (Linux connect()), which `p % shards` would pile onto one shard.
//
// Each NAT address in use gets a pool: one bitmap per protocol over the shard's ports. Pools
// are preallocated (max_nat_addresses of them) and claimed on first use, so allocation never
// touches the heap; a pool whose ports are all free again may be claimed by another address.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "nat/types.hpp"
#include "wire/addresses.hpp"

namespace andromeda::nat {

// x % divisor without a division instruction (Lemire, Kaser, Kurz: "Faster remainder by direct
// computation", 2019); exact for every 32-bit x. A div costs ~25 cycles on the per-packet path.
class FastModulo {
public:
    explicit FastModulo(std::uint32_t divisor) noexcept : magic_(~std::uint64_t{0} / divisor + 1), divisor_(divisor) {}
    [[nodiscard]] std::uint32_t operator()(std::uint32_t x) const noexcept {
        const std::uint64_t low = magic_ * x;
        return static_cast<std::uint32_t>((static_cast<unsigned __int128>(low) * divisor_) >> 64);
    }

private:
    std::uint64_t magic_;  // 0 for divisor 1, which makes every remainder 0, as it should
    std::uint32_t divisor_;
};

class PortAllocator {
public:
    static constexpr std::uint32_t kNoPool = 0xFFFFFFFF;
    static constexpr unsigned kBlockShift = 3;

    PortAllocator(std::size_t shard, std::size_t shard_count, std::size_t max_addresses);

    [[nodiscard]] static std::size_t owner_shard(std::uint16_t port, std::size_t shard_count) noexcept {
        return (static_cast<std::size_t>(port) >> kBlockShift) % shard_count;
    }
    [[nodiscard]] bool owns(std::uint16_t port) const noexcept { return owner_shard(port, shard_count_) == shard_; }

    // The pool for `address`, claiming a free one if needed; kNoPool when all are in use.
    [[nodiscard]] std::uint32_t pool_for(wire::Ipv4Address address) noexcept;

    // Allocates a port of this shard in [port_min, port_max] on `pool`: `preferred` when it is
    // free, else the first free one from a position derived from `start_hint`. Ports for which
    // reserved(port) is true are skipped. nullopt when none is free.
    template <class Reserved>
    [[nodiscard]] std::optional<std::uint16_t> allocate(std::uint32_t pool, Protocol protocol, std::uint16_t port_min,
                                                        std::uint16_t port_max, std::uint16_t preferred,
                                                        std::uint64_t start_hint, Reserved&& reserved) noexcept;
    void release(std::uint32_t pool, Protocol protocol, std::uint16_t port) noexcept;
    // Marks a given port of this shard in use (a mapping rebuilt from the kernel after a
    // restart); false when the port is another shard's or already in use.
    [[nodiscard]] bool reserve(std::uint32_t pool, Protocol protocol, std::uint16_t port) noexcept;

    [[nodiscard]] bool in_use(std::uint32_t pool, Protocol protocol, std::uint16_t port) const noexcept;
    [[nodiscard]] std::size_t used_ports(std::uint32_t pool) const noexcept { return pools_[pool].used; }
    // How many of this shard's ports lie in [port_min, port_max].
    [[nodiscard]] std::size_t owned_in_range(std::uint16_t port_min, std::uint16_t port_max) const noexcept;

private:
    static constexpr std::uint32_t kNone = 0xFFFFFFFF;
    static constexpr std::size_t kProtocols = 3;

    struct Pool {
        std::uint32_t address = 0;
        std::uint32_t used = 0;  // ports allocated, all protocols
        bool claimed = false;
    };

    [[nodiscard]] static std::size_t protocol_index(Protocol p) noexcept {
        return p == Protocol::tcp ? 0 : p == Protocol::udp ? 1 : 2;
    }
    [[nodiscard]] std::uint64_t* bits(std::uint32_t pool, Protocol p) noexcept {
        return &bitmaps_[(pool * kProtocols + protocol_index(p)) * words_];
    }
    [[nodiscard]] const std::uint64_t* bits(std::uint32_t pool, Protocol p) const noexcept {
        return &bitmaps_[(pool * kProtocols + protocol_index(p)) * words_];
    }
    [[nodiscard]] std::uint32_t local_index(std::uint16_t port) const noexcept {
        const std::size_t block = static_cast<std::size_t>(port) >> kBlockShift;
        return static_cast<std::uint32_t>((block / shard_count_) << kBlockShift | (port & 7));
    }
    [[nodiscard]] std::uint16_t port_of(std::uint32_t local) const noexcept {
        const std::size_t block = (local >> kBlockShift) * shard_count_ + shard_;
        return static_cast<std::uint16_t>(block << kBlockShift | (local & 7));
    }
    // Local index of the first own port >= port / the last own port <= port; kNone if none.
    [[nodiscard]] std::uint32_t local_ceil(std::uint16_t port) const noexcept;
    [[nodiscard]] std::uint32_t local_floor(std::uint16_t port) const noexcept;
    // First clear bit in [from, to] (inclusive), or kNone.
    [[nodiscard]] static std::uint32_t find_clear(const std::uint64_t* bits, std::uint32_t from, std::uint32_t to) noexcept;
    template <class Reserved>
    [[nodiscard]] std::uint32_t scan(const std::uint64_t* bits, std::uint32_t from, std::uint32_t to,
                                     Reserved& reserved) const noexcept;
    void take(std::uint32_t pool, Protocol protocol, std::uint32_t local) noexcept;

    std::size_t shard_;
    std::size_t shard_count_;
    std::size_t words_;  // per bitmap
    std::vector<Pool> pools_;
    std::vector<std::uint64_t> bitmaps_;
};

template <class Reserved>
std::optional<std::uint16_t> PortAllocator::allocate(std::uint32_t pool, Protocol protocol, std::uint16_t port_min,
                                                     std::uint16_t port_max, std::uint16_t preferred,
                                                     std::uint64_t start_hint, Reserved&& reserved) noexcept {
    const std::uint64_t* map = bits(pool, protocol);
    if (preferred >= port_min && preferred <= port_max && owns(preferred)) {
        const std::uint32_t local = local_index(preferred);
        if ((map[local >> 6] >> (local & 63) & 1) == 0 && !reserved(preferred)) {
            take(pool, protocol, local);
            return preferred;
        }
    }
    const std::uint32_t low = local_ceil(port_min);
    const std::uint32_t high = local_floor(port_max);
    if (low == kNone || high == kNone || low > high) return std::nullopt;
    const std::uint32_t start = low + static_cast<std::uint32_t>(start_hint % (high - low + 1));
    std::uint32_t found = scan(map, start, high, reserved);
    if (found == kNone && start > low) found = scan(map, low, start - 1, reserved);
    if (found == kNone) return std::nullopt;
    take(pool, protocol, found);
    return port_of(found);
}

template <class Reserved>
std::uint32_t PortAllocator::scan(const std::uint64_t* map, std::uint32_t from, std::uint32_t to,
                                  Reserved& reserved) const noexcept {
    while (from <= to) {
        const std::uint32_t c = find_clear(map, from, to);
        if (c == kNone || !reserved(port_of(c))) return c;
        from = c + 1;
    }
    return kNone;
}

}  // namespace andromeda::nat
