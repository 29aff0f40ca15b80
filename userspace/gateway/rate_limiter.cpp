#include "gateway/rate_limiter.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace andromeda::gateway {

namespace {

std::uint64_t steady_now_ns() {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

std::uint64_t hash_key(const RateLimitKey& key) noexcept {
    std::uint64_t words[2];
    std::memcpy(words, key.address.data(), sizeof words);
    std::uint64_t h = words[0] * 0x9E3779B97F4A7C15ull ^ words[1] * 0xC2B2AE3D27D4EB4Full ^ key.scope;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

}  // namespace

RateLimitKey RateLimitKey::of(std::uint32_t scope, wire::Ipv4Address address) noexcept {
    RateLimitKey key;
    key.scope = scope;
    key.address[10] = 0xff;
    key.address[11] = 0xff;
    address.copy_to(&key.address[12]);
    return key;
}

RateLimitKey RateLimitKey::of(std::uint32_t scope, const wire::Ipv6Address& address) noexcept {
    return RateLimitKey{scope, address.bytes()};
}

RateLimitKey RateLimitKey::of(std::uint32_t scope, const wire::MacAddress& mac) noexcept {
    RateLimitKey key;
    key.scope = scope;
    mac.copy_to(key.address.data());
    return key;
}

IcmpErrorRateLimiter::IcmpErrorRateLimiter(const RateLimiterConfig& config, Clock clock)
    : config_(config), clock_(clock ? std::move(clock) : Clock(steady_now_ns)) {
    config_.tokens_per_second = std::max<std::uint32_t>(config_.tokens_per_second, 1);
    config_.burst = std::max<std::uint32_t>(config_.burst, 1);
    cost_ns_ = 1'000'000'000ull / config_.tokens_per_second;
    capacity_ns_ = cost_ns_ * config_.burst;
    std::size_t size = kWays;
    while (size < config_.max_sources) size *= 2;
    config_.max_sources = size;
    entries_.resize(size);
    set_mask_ = size / kWays - 1;
}

IcmpErrorRateLimiter::Entry& IcmpErrorRateLimiter::find_or_claim(const RateLimitKey& key,
                                                                 std::uint64_t now_ns) noexcept {
    Entry* set = &entries_[(hash_key(key) & set_mask_) * kWays];
    Entry* victim = nullptr;
    for (std::size_t way = 0; way < kWays; ++way) {
        Entry& e = set[way];
        if (e.used && e.key == key) return e;
        if (!e.used) {
            if (victim == nullptr || victim->used) victim = &e;
        } else if (victim == nullptr || (victim->used && e.last_ns < victim->last_ns)) {
            victim = &e;
        }
    }
    if (victim->used) ++evictions_;
    *victim = Entry{key, capacity_ns_, now_ns, true};
    return *victim;
}

bool IcmpErrorRateLimiter::allow(const RateLimitKey& key, std::uint64_t now_ns) noexcept {
    Entry& e = find_or_claim(key, now_ns);
    // A clock that steps back (it should not, it is monotonic) refills nothing rather than wrapping.
    const std::uint64_t elapsed = now_ns > e.last_ns ? now_ns - e.last_ns : 0;
    e.credit_ns = std::min(capacity_ns_, e.credit_ns + std::min(elapsed, capacity_ns_));
    e.last_ns = std::max(e.last_ns, now_ns);
    if (e.credit_ns < cost_ns_) return false;
    e.credit_ns -= cost_ns_;
    return true;
}

std::size_t IcmpErrorRateLimiter::tracked_sources() const noexcept {
    return static_cast<std::size_t>(std::count_if(entries_.begin(), entries_.end(), [](const Entry& e) { return e.used; }));
}

}  // namespace andromeda::gateway
