// A per-source token bucket for the ICMP errors the gateway sends (RFC 1812 4.3.2.8, RFC 4443
// 2.4 f): a tenant blasting oversize DF packets gets a few Fragmentation Needed a second, not one
// per packet, and cannot make the host spend its cycles building errors. The DHCP server uses
// the same limiter per client MAC.
//
// Memory is fixed at construction: a 4-way set-associative table of sources. A new source takes
// a free way of its set or evicts the one seen least recently, and starts with a full bucket.
// Nothing allocates afterwards; one limiter per worker, not thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "wire/addresses.hpp"

namespace andromeda::gateway {

// Who is limited: an address within a scope. The dataplane uses the VNI as the scope, because
// two VPCs may both contain 10.0.0.10 and each deserves its own bucket.
struct RateLimitKey {
    std::uint32_t scope = 0;
    std::array<std::uint8_t, 16> address{};  // IPv4 as ::ffff:a.b.c.d

    static RateLimitKey of(std::uint32_t scope, wire::Ipv4Address address) noexcept;
    static RateLimitKey of(std::uint32_t scope, const wire::Ipv6Address& address) noexcept;
    // A MAC in the first six bytes. One limiter should hold one kind of key: an IPv6 address
    // key can equal a MAC key.
    static RateLimitKey of(std::uint32_t scope, const wire::MacAddress& mac) noexcept;
    friend bool operator==(const RateLimitKey&, const RateLimitKey&) = default;
};

struct RateLimiterConfig {
    std::uint32_t tokens_per_second = 10;  // sustained errors per source
    std::uint32_t burst = 10;              // errors a quiet source may send at once
    std::size_t max_sources = 1024;        // table size, rounded up to a power of two (at least 4)
};

class IcmpErrorRateLimiter {
public:
    // Monotonic nanoseconds. Tests inject a fake; the default reads std::chrono::steady_clock.
    using Clock = std::function<std::uint64_t()>;

    explicit IcmpErrorRateLimiter(const RateLimiterConfig& config = {}, Clock clock = {});

    // Takes a token from `key`'s bucket; false when it is empty (the error must not be sent).
    bool allow(const RateLimitKey& key) { return allow(key, clock_()); }
    bool allow(const RateLimitKey& key, std::uint64_t now_ns) noexcept;

    [[nodiscard]] const RateLimiterConfig& config() const noexcept { return config_; }
    [[nodiscard]] std::size_t capacity() const noexcept { return entries_.size(); }
    // Sources currently tracked (at most capacity()).
    [[nodiscard]] std::size_t tracked_sources() const noexcept;
    [[nodiscard]] std::uint64_t evictions() const noexcept { return evictions_; }

private:
    static constexpr std::size_t kWays = 4;

    // GCRA-style bucket in time units: `credit_ns` is the time saved up, a token costs
    // `cost_ns_`, and the bucket holds at most burst tokens. Integer-only and exact.
    struct Entry {
        RateLimitKey key;
        std::uint64_t credit_ns = 0;
        std::uint64_t last_ns = 0;
        bool used = false;
    };

    Entry& find_or_claim(const RateLimitKey& key, std::uint64_t now_ns) noexcept;

    RateLimiterConfig config_;
    Clock clock_;
    std::uint64_t cost_ns_ = 0;
    std::uint64_t capacity_ns_ = 0;
    std::size_t set_mask_ = 0;
    std::uint64_t evictions_ = 0;
    std::vector<Entry> entries_;
};

}  // namespace andromeda::gateway
