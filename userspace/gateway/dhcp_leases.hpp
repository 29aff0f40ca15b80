// What the DHCP server has seen of each client, for `andromedactl` to show: the leases
// themselves are static (the fabric maps an endpoint's MAC to its address), so this table is a
// record, never the source of an answer, and losing an entry loses only history.
//
// Memory is fixed at construction: a 4-way set-associative table keyed by (scope, MAC); a new
// client takes a free way of its set or evicts the one seen least recently. One per server, not
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "wire/addresses.hpp"

namespace andromeda::gateway {

enum class DhcpLeaseState : std::uint8_t {
    offered,       // answered a DISCOVER; expires when the offer is no longer held
    bound,         // acknowledged a REQUEST; expires with the lease
    released,      // the client gave the address back (RELEASE)
    declined,      // the client found the address in use (DECLINE): an address conflict on the link
    informed,      // the client configured its address itself and asked only for parameters (INFORM)
    other_server,  // the client took another DHCP server's offer: a second server on this link
    expired,       // offered or bound, and its time has passed (only ever reported, never stored)
};

[[nodiscard]] std::string_view to_string(DhcpLeaseState state) noexcept;

struct DhcpLease {
    std::uint32_t scope = 0;  // the VPC's VNI
    wire::MacAddress mac;
    wire::Ipv4Address address;
    DhcpLeaseState state = DhcpLeaseState::offered;
    std::uint64_t expires_ns = 0;    // monotonic; 0 when the state has no expiry
    std::uint64_t last_seen_ns = 0;  // the client's last message (monotonic)
    std::uint8_t last_message_type = 0;  // of that message (wire::dhcp_message_type)
    std::uint32_t naks = 0;              // NAKs sent to this client

    // The state as of `now_ns`: offered or bound past their expiry read as expired.
    [[nodiscard]] DhcpLeaseState state_at(std::uint64_t now_ns) const noexcept;
};

class DhcpLeaseTable {
public:
    explicit DhcpLeaseTable(std::size_t max_clients = 4096);  // rounded up to a power of two (at least 4)

    // The entry of (scope, mac), made (evicting the least recently seen of its set) if absent.
    DhcpLease& record(std::uint32_t scope, const wire::MacAddress& mac, std::uint64_t now_ns) noexcept;
    [[nodiscard]] std::optional<DhcpLease> find(std::uint32_t scope, const wire::MacAddress& mac) const noexcept;
    // Every entry (control path: allocates), in table order.
    [[nodiscard]] std::vector<DhcpLease> list() const;

    [[nodiscard]] std::size_t capacity() const noexcept { return entries_.size(); }
    [[nodiscard]] std::size_t size() const noexcept;
    [[nodiscard]] std::uint64_t evictions() const noexcept { return evictions_; }

private:
    static constexpr std::size_t kWays = 4;
    struct Slot {
        DhcpLease lease;
        bool used = false;
    };
    [[nodiscard]] std::size_t set_of(std::uint32_t scope, const wire::MacAddress& mac) const noexcept;

    std::vector<Slot> entries_;
    std::size_t set_mask_ = 0;
    std::uint64_t evictions_ = 0;
};

}  // namespace andromeda::gateway
