// A narrower underlay than [node] underlay_mtu. The outer packets carry DF, so a router on a
// narrower link between two nodes drops them and answers ICMP "fragmentation needed" (RFC 1191);
// the XDP prefilter steers those about this node's own outer packets to the pipeline, which reads
// them here: parse_outer_frag_needed judges one (bounds-checked: the bytes come from anyone on the
// underlay), PeerPathMtu remembers what was learned per peer node, shared by every worker's
// pipeline and mirrored by the daemon into the fast path's andromeda_peer_mtu map. Both paths then
// size tenant packets towards that peer by it and answer the tenant with PMTUD errors.
//
// Over an IPv6 underlay the same comes as ICMPv6 Packet Too Big (RFC 8201; routers never
// fragment IPv6): parse_outer_packet_too_big judges it, and PeerPathMtu keys either family. The
// fast path's map is IPv4's only: over IPv6 the pipeline carries everything (docs/ipv6.md).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "andromeda_kern_user.h"
#include "fabric/model.hpp"
#include "wire/addresses.hpp"
#include "wire/bytes.hpp"

namespace andromeda::dataplane {

// What an ICMP message on the underlay port says about this node's outer packets.
enum class OuterFragNeeded : std::uint8_t {
    ours,             // fragmentation needed about our outer packet: `peer` and `mtu` are set
    not_frag_needed,  // not IPv4 ICMP type 3 code 4 to this node (the host's business)
    truncated,        // the ICMP message or its quote is too short, or lengths disagree
    bad_checksum,     // the ICMP checksum does not verify
    not_our_packet,   // the quote is not an IPv4/UDP packet from this node to the overlay port
};

[[nodiscard]] constexpr std::string_view to_string(OuterFragNeeded v) noexcept {
    switch (v) {
        case OuterFragNeeded::ours:
            return "ours";
        case OuterFragNeeded::not_frag_needed:
            return "not_frag_needed";
        case OuterFragNeeded::truncated:
            return "truncated";
        case OuterFragNeeded::bad_checksum:
            return "bad_checksum";
        case OuterFragNeeded::not_our_packet:
            return "not_our_packet";
    }
    return "unknown";
}

struct OuterFragNeededReport {
    OuterFragNeeded kind = OuterFragNeeded::not_frag_needed;
    wire::IpAddress peer;    // the quoted packet's destination
    std::uint32_t mtu = 0;   // the next-hop MTU the router reported (0 from a pre-RFC 1191 router)
};

// Reads `frame` (Ethernet, up to two VLAN tags, IPv4) as an ICMP error about one of this node's
// outer packets (quoted source `local`, UDP to `overlay_port`). Never reads outside `frame`.
[[nodiscard]] OuterFragNeededReport parse_outer_frag_needed(wire::ByteSpan frame, wire::Ipv4Address local,
                                                            std::uint16_t overlay_port) noexcept;

// Reads `frame` (Ethernet, up to two VLAN tags, IPv6) as an ICMPv6 Packet Too Big about one of
// this node's outer packets over an IPv6 underlay: sent to `local`, no extension headers before
// the ICMPv6 header, a checksum that verifies over the pseudo-header, and a quote of at least the
// IPv6 header and the UDP header of a packet from `local` to `overlay_port`. The kinds mean what
// they mean for IPv4 (not_frag_needed: not a Packet Too Big to this node). Never reads outside
// `frame`.
[[nodiscard]] OuterFragNeededReport parse_outer_packet_too_big(wire::ByteSpan frame, const wire::Ipv6Address& local,
                                                               std::uint16_t overlay_port) noexcept;

// Whether a reported MTU is believable for a path whose configured MTU is `underlay_mtu`:
// ANDROMEDA_PEER_MTU_MIN at least (it carries the overlay and a 526-byte inner packet) and below
// the configured one (a report at or above it changes nothing).
[[nodiscard]] constexpr bool plausible_path_mtu(std::uint32_t mtu, std::uint32_t underlay_mtu) noexcept {
    return mtu >= ANDROMEDA_PEER_MTU_MIN && mtu < underlay_mtu;
}
// Over an IPv6 underlay a link is 1280 bytes at least (RFC 8200 section 5): a report below it is
// not believed either (RFC 8201 section 4 has a node keep 1280 then).
[[nodiscard]] constexpr bool plausible_path_mtu(std::uint32_t mtu, std::uint32_t underlay_mtu, bool ipv6) noexcept {
    return plausible_path_mtu(mtu, underlay_mtu) && (!ipv6 || mtu >= fabric::kMinIpv6UnderlayMtu);
}

inline constexpr std::uint64_t kPeerMtuLifetimeNs = std::uint64_t{ANDROMEDA_PEER_MTU_LIFETIME_S} * 1'000'000'000;

// The path MTUs learned per peer node (by underlay address, either family), with their expiry in
// the monotonic clock's ns. Shared by the workers: lookups are lock-free (a scan of the few slots
// ever used, and none at all while nothing is learned; each slot read under its sequence number,
// so that a slot reused meanwhile is skipped, never half-read); learning and expiry take a mutex,
// being rare.
// Like the kernel's PMTU exceptions: a report lowers the MTU or refreshes it, never raises it
// while it lasts; after kPeerMtuLifetimeNs the path is assumed to be underlay_mtu again.
class PeerPathMtu {
public:
    static constexpr std::size_t kCapacity = 256;  // peers with a learned MTU at once

    struct Entry {
        wire::IpAddress peer;
        std::uint32_t mtu = 0;
        std::uint64_t expires_ns = 0;
        friend bool operator==(const Entry&, const Entry&) = default;
    };

    // Records `mtu` towards `peer`. False when it changed nothing (a higher MTU than a live entry,
    // or the table full of live entries).
    bool learn(const wire::IpAddress& peer, std::uint32_t mtu, std::uint64_t now_ns);
    // The live learned MTU towards `peer`, 0 when there is none.
    [[nodiscard]] std::uint32_t mtu(const wire::IpAddress& peer, std::uint64_t now_ns) const noexcept;
    [[nodiscard]] bool empty() const noexcept { return live_.load(std::memory_order_relaxed) == 0; }
    // Forgets the entries whose time is up; returns how many.
    std::size_t expire(std::uint64_t now_ns);
    // The live entries (for the daemon: the fast path's map, `andromedactl fabric`).
    [[nodiscard]] std::vector<Entry> entries(std::uint64_t now_ns) const;

private:
    // An address as four words and its family (4 or 6; 0: the slot is free). An IPv4 address is
    // {0, 0, 0, address in host order}: the family tells it from the IPv6 address ::a.b.c.d.
    struct Key {
        std::array<std::uint32_t, 4> words{};
        std::uint32_t family = 0;
        friend bool operator==(const Key&, const Key&) = default;
    };
    static Key key_of(const wire::IpAddress& a) noexcept;
    static wire::IpAddress address_of(const Key& k) noexcept;

    struct Slot {
        std::atomic<std::uint32_t> sequence{0};  // odd while the writer changes the slot
        std::array<std::atomic<std::uint32_t>, 4> words{};
        std::atomic<std::uint32_t> family{0};
        std::atomic<std::uint32_t> mtu{0};
        std::atomic<std::uint64_t> expires_ns{0};
    };
    struct SlotValue {
        Key key;
        std::uint32_t mtu = 0;
        std::uint64_t expires_ns = 0;
    };
    // A consistent copy of `s`, or nullopt when a writer changed it meanwhile.
    static std::optional<SlotValue> read(const Slot& s) noexcept;
    // Under write_: the slot's fields, between two sequence increments.
    static void write(Slot& s, const Key& key, std::uint32_t mtu, std::uint64_t expires_ns) noexcept;

    std::array<Slot, kCapacity> slots_;
    std::atomic<std::uint32_t> used_{0};  // slots_[0, used_) have held an entry
    std::atomic<std::uint32_t> live_{0};  // entries not yet expired by expire()
    std::mutex write_;
};

}  // namespace andromeda::dataplane
