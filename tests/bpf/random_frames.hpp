// Random frames for the differential tests, from a seeded std::mt19937: mostly what the fabric's
// endpoints and peers send, often with a field wrong (a spoofed source, a foreign VNI, a bad
// checksum or length, options, fragments, tags, padding, truncation), so every outcome of both
// programs occurs often.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "differential_check.hpp"
#include "differential_fabric.hpp"

namespace andromeda::fast_path_test {

class Gen {
public:
    explicit Gen(std::uint32_t seed) : rng_(seed) {}
    std::uint32_t below(std::uint32_t n) { return n == 0 ? 0 : static_cast<std::uint32_t>(rng_() % n); }
    std::uint32_t range(std::uint32_t lo, std::uint32_t hi) { return lo + below(hi - lo + 1); }
    bool chance(std::uint32_t percent) { return below(100) < percent; }
    std::uint8_t byte() { return static_cast<std::uint8_t>(rng_()); }
    std::uint32_t word() { return static_cast<std::uint32_t>(rng_()); }
    template <class T>
    const T& pick(const std::vector<T>& v) {
        return v[below(static_cast<std::uint32_t>(v.size()))];
    }
    Mac mac() { return {static_cast<std::uint8_t>((byte() & 0xfe) | 0x02), byte(), byte(), byte(), byte(), byte()}; }

private:
    std::mt19937 rng_;
};

// A frame from one of node1's tenant ports (its port set in the case).
Case random_tenant(Gen& g);
// An overlay packet on the underlay, mostly of encapsulation `kind`, always to the underlay's MAC
// (other outer destination MACs are a crafted case of their own).
Case random_overlay(Gen& g, Encap kind);
// The same over an IPv6 underlay (overlay6, node addresses fd00:1::*): its UDP checksum mostly
// right, at times 0 or wrong; at times an overlay packet over IPv4 (the other family).
Case random_overlay6(Gen& g, Encap kind);

}  // namespace andromeda::fast_path_test
