// The per-packet lookups and read sections never allocate: counted by replacing operator new
// in this test program.
#include <gtest/gtest.h>

#include <cstdlib>
#include <new>

#include "fabric_test_support.hpp"

namespace {
thread_local std::size_t g_allocations = 0;
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

void* operator new(std::size_t size) {
    ++g_allocations;
    if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace andromeda::fabric {
namespace {

TEST(FabricLookups, AllocateNothing) {
    LoadOptions options;
    options.ports = fabric::resolve_port_names([](std::string_view port) -> std::optional<std::uint32_t> {
        return port == "tap1" ? std::optional<std::uint32_t>(7) : std::nullopt;
    });
    FabricStore store(options.ports);
    ASSERT_TRUE(store.load_string(testing::kBaseFabric, "t.toml").applied);
    FabricReader reader = store.make_reader();
    const Ipv4Address endpoint = *Ipv4Address::parse("10.0.0.10");
    const Ipv4Address missing = *Ipv4Address::parse("10.0.0.99");
    const Ipv4Address peer = *Ipv4Address::parse("192.168.1.2");

    const std::size_t before = g_allocations;
    std::size_t found = 0;
    for (int i = 0; i < 1000; ++i) {
        auto fabric = reader.read();
        found += fabric->find_endpoint(100, endpoint) != nullptr;
        found += fabric->find_endpoint(100, missing) != nullptr;
        found += fabric->find_local_endpoint("tap1") != nullptr;
        found += fabric->find_local_endpoint_by_ifindex(7) != nullptr;
        found += fabric->find_vpc(100) != nullptr;
        found += fabric->find_node_by_address(peer) != nullptr;
        found += fabric->find_node("node2") != nullptr;
    }
    EXPECT_EQ(g_allocations, before);
    EXPECT_EQ(found, 6000u);
}

}  // namespace
}  // namespace andromeda::fabric
