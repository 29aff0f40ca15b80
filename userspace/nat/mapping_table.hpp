// Endpoint-independent mappings (RFC 4787 REQ-1, RFC 5382 REQ-1, RFC 5508 REQ-2) of one shard:
// a tenant's (vni, protocol, ip, port) -> (nat ip, nat port), shared by all its flows whatever
// their destination. A mapping holds its port while any flow uses it and is released with the
// last one (so its lifetime is its longest flow's: at least 2 minutes for UDP, REQ-5).
//
// Indexes: inside (vni, protocol, tenant ip:port, nat ip) to reuse the mapping for a new
// destination; outside (protocol, nat ip:port) for endpoint-independent filtering. The NAT
// address is part of the inside key so a VPC whose NAT address changed gets fresh mappings while
// the old ones drain.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "nat/chain_index.hpp"
#include "nat/flow_table.hpp"
#include "nat/types.hpp"

namespace andromeda::nat {

struct Mapping {
    std::uint32_t vni = 0;
    std::uint32_t inside_ip = 0;
    std::uint32_t nat_ip = 0;
    std::uint16_t inside_port = 0;
    std::uint16_t nat_port = 0;
    Protocol protocol = Protocol::udp;
    bool in_use = false;
    std::uint32_t pool = 0;   // PortAllocator pool holding nat_port
    std::uint32_t flows = 0;    // live flows referring to it
    std::uint32_t retired = 0;  // ended flows still holding it until the kernel forgets them
};

class MappingTable {
public:
    MappingTable(std::size_t capacity, std::uint64_t seed);

    [[nodiscard]] std::uint32_t find_inside(std::uint32_t vni, Protocol protocol, std::uint32_t inside_ip,
                                            std::uint16_t inside_port, std::uint32_t nat_ip) const noexcept {
        return inside_.find(inside_hash(vni, protocol, inside_ip, inside_port, nat_ip), [&](std::uint32_t id) {
            const Mapping& m = mappings_[id];
            return m.inside_ip == inside_ip && m.inside_port == inside_port && m.vni == vni &&
                   m.nat_ip == nat_ip && m.protocol == protocol;
        });
    }
    [[nodiscard]] std::uint32_t find_outside(Protocol protocol, std::uint32_t nat_ip,
                                             std::uint16_t nat_port) const noexcept {
        return outside_.find(outside_hash(protocol, nat_ip, nat_port), [&](std::uint32_t id) {
            const Mapping& m = mappings_[id];
            return m.nat_port == nat_port && m.nat_ip == nat_ip && m.protocol == protocol;
        });
    }

    // Adds a mapping with no flows yet; kNilId when full.
    [[nodiscard]] std::uint32_t add(const Mapping& mapping) noexcept;
    void remove(std::uint32_t id) noexcept;

    [[nodiscard]] Mapping& operator[](std::uint32_t id) noexcept { return mappings_[id]; }
    [[nodiscard]] const Mapping& operator[](std::uint32_t id) const noexcept { return mappings_[id]; }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }

private:
    [[nodiscard]] std::uint64_t inside_hash(std::uint32_t vni, Protocol p, std::uint32_t ip, std::uint16_t port,
                                            std::uint32_t nat_ip) const noexcept {
        return hash_words(seed_, std::uint64_t{ip} << 32 | nat_ip,
                          std::uint64_t{vni} << 24 | std::uint64_t{static_cast<std::uint8_t>(p)} << 16 | port);
    }
    [[nodiscard]] std::uint64_t outside_hash(Protocol p, std::uint32_t nat_ip, std::uint16_t port) const noexcept {
        return hash_words(seed_ ^ 0x68e31da4, nat_ip, std::uint64_t{static_cast<std::uint8_t>(p)} << 16 | port);
    }

    std::uint64_t seed_;
    std::vector<Mapping> mappings_;
    std::vector<std::uint32_t> free_;
    std::uint32_t high_water_ = 0;
    std::size_t size_ = 0;
    ChainIndex inside_;
    ChainIndex outside_;
};

}  // namespace andromeda::nat
