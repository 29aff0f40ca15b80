// Port allocation: partition between shards, tenant port preservation, exact exhaustion,
// reserved (forwarded) ports, release and pool reuse.
#include <gtest/gtest.h>

#include <set>

#include "nat/port_allocator.hpp"

namespace andromeda::nat {
namespace {

const wire::Ipv4Address kNat(0xC6336401);  // 198.51.100.1
const auto kNothingReserved = [](std::uint16_t) { return false; };

TEST(PortAllocator, EveryPortHasExactlyOneOwnerAndBlocksSpreadParity) {
    for (std::size_t shards : {1u, 2u, 3u, 4u, 7u}) {
        std::vector<std::size_t> per_shard(shards);
        for (std::uint32_t p = 0; p < 65536; ++p) ++per_shard[PortAllocator::owner_shard(static_cast<std::uint16_t>(p), shards)];
        for (std::size_t s = 0; s < shards; ++s) EXPECT_NEAR(per_shard[s], 65536.0 / shards, 8.0) << shards;
    }
    // Even ports alone (Linux connect()) still reach both of two shards.
    std::set<std::size_t> owners;
    for (std::uint16_t p = 32768; p < 32800; p += 2) owners.insert(PortAllocator::owner_shard(p, 2));
    EXPECT_EQ(owners.size(), 2u);
}

TEST(PortAllocator, KeepsThePreferredPortWhenFree) {
    PortAllocator a(0, 1, 4);
    const auto pool = a.pool_for(kNat);
    EXPECT_EQ(a.allocate(pool, Protocol::udp, 1024, 65535, 40000, 0, kNothingReserved), 40000);
    // Taken: another one in range, never the same.
    const auto other = a.allocate(pool, Protocol::udp, 1024, 65535, 40000, 77, kNothingReserved);
    ASSERT_TRUE(other);
    EXPECT_NE(*other, 40000);
    EXPECT_GE(*other, 1024);
    // Each protocol has its own ports.
    EXPECT_EQ(a.allocate(pool, Protocol::tcp, 1024, 65535, 40000, 0, kNothingReserved), 40000);
    EXPECT_EQ(a.allocate(pool, Protocol::icmp, 1024, 65535, 40000, 0, kNothingReserved), 40000);
}

TEST(PortAllocator, PreferredPortOutsideTheRangeIsNotKept) {
    PortAllocator a(0, 1, 1);
    const auto pool = a.pool_for(kNat);
    const auto port = a.allocate(pool, Protocol::tcp, 2000, 2010, 123, 5, kNothingReserved);
    ASSERT_TRUE(port);
    EXPECT_GE(*port, 2000);
    EXPECT_LE(*port, 2010);
}

TEST(PortAllocator, ExhaustsAfterExactlyTheShardsPortsInRange) {
    for (std::size_t shards : {1u, 3u}) {
        for (std::size_t s = 0; s < shards; ++s) {
            PortAllocator a(s, shards, 1);
            const auto pool = a.pool_for(kNat);
            const std::uint16_t lo = 1000, hi = 1200;
            std::set<std::uint16_t> got;
            while (auto port = a.allocate(pool, Protocol::udp, lo, hi, 0, got.size() * 31, kNothingReserved)) {
                EXPECT_TRUE(a.owns(*port));
                EXPECT_GE(*port, lo);
                EXPECT_LE(*port, hi);
                EXPECT_TRUE(got.insert(*port).second) << "port handed out twice: " << *port;
            }
            std::size_t expected = 0;
            for (std::uint32_t p = lo; p <= hi; ++p) expected += a.owns(static_cast<std::uint16_t>(p));
            EXPECT_EQ(got.size(), expected);
            EXPECT_EQ(a.owned_in_range(lo, hi), expected);
            EXPECT_EQ(a.used_ports(pool), expected);
            // Freeing one makes exactly that one available again.
            a.release(pool, Protocol::udp, *got.begin());
            EXPECT_EQ(a.allocate(pool, Protocol::udp, lo, hi, 0, 0, kNothingReserved), *got.begin());
        }
    }
}

TEST(PortAllocator, SkipsReservedPorts) {
    PortAllocator a(0, 1, 1);
    const auto pool = a.pool_for(kNat);
    const auto reserved = [](std::uint16_t p) { return p == 5000 || p == 5001; };
    EXPECT_NE(a.allocate(pool, Protocol::tcp, 5000, 5002, 5000, 0, reserved), 5000);
    EXPECT_FALSE(a.allocate(pool, Protocol::tcp, 5000, 5002, 5001, 0, reserved).has_value());
}

TEST(PortAllocator, PoolsAreBoundedAndReusedOnceEmpty) {
    PortAllocator a(0, 1, 2);
    const auto p1 = a.pool_for(wire::Ipv4Address(1));
    const auto p2 = a.pool_for(wire::Ipv4Address(2));
    ASSERT_NE(p1, PortAllocator::kNoPool);
    ASSERT_NE(p2, PortAllocator::kNoPool);
    EXPECT_EQ(a.pool_for(wire::Ipv4Address(1)), p1);
    ASSERT_TRUE(a.allocate(p1, Protocol::udp, 1024, 65535, 3000, 0, kNothingReserved));
    ASSERT_TRUE(a.allocate(p2, Protocol::udp, 1024, 65535, 3000, 0, kNothingReserved));
    EXPECT_EQ(a.pool_for(wire::Ipv4Address(3)), PortAllocator::kNoPool);
    a.release(p2, Protocol::udp, 3000);
    EXPECT_EQ(a.pool_for(wire::Ipv4Address(3)), p2);  // empty again: another address may claim it
    EXPECT_FALSE(a.in_use(p2, Protocol::udp, 3000));
}

}  // namespace
}  // namespace andromeda::nat
