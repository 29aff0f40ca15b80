#include "overlay/flow_hash.hpp"

#include "wire/ethernet.hpp"
#include "wire/ip_protocol.hpp"
#include "wire/ipv4.hpp"
#include "wire/ipv6.hpp"

namespace andromeda::overlay {

namespace {

bool carries_ports(std::uint8_t protocol) noexcept {
    return protocol == wire::ip_protocol::kTcp || protocol == wire::ip_protocol::kUdp;
}

// Fills `t` from an IPv4 packet; false when Ipv4View refuses it. Addresses are read straight
// off the header: Ipv4Address::from_bytes is out of line and was a tenth of encap. An out
// parameter rather than an optional return keeps the tuple in registers once inlined.
inline bool read_ipv4_tuple(wire::ByteSpan bytes, FlowTuple& t) noexcept {
    const auto ip = wire::Ipv4View::parse(bytes);
    if (!ip) return false;
    const std::uint8_t* header = bytes.data();
    t.protocol = ip->protocol();
    t.src = wire::load_be32(header + 12);
    t.dst = wire::load_be32(header + 16);
    const auto l4 = ip->payload();
    if (carries_ports(t.protocol) && ip->fragment_offset() == 0 && l4.size() >= 4) {
        t.src_port = wire::load_be16(l4.data());
        t.dst_port = wire::load_be16(l4.data() + 2);
    }
    return true;
}

std::uint32_t fold_ipv6_address(const std::uint8_t* p) noexcept {
    return andromeda_ipv6_address_fold(wire::load_be32(p), wire::load_be32(p + 4), wire::load_be32(p + 8),
                                       wire::load_be32(p + 12));
}

// IPv6 (see flow_hash.hpp): shared/andromeda_overlay.h's rule over each address folded to 32
// bits, the upper-layer protocol found past any extension headers, the flow label, and the ports
// unless this is a non-first fragment.
std::uint16_t ipv6_hash(wire::ByteSpan bytes) noexcept {
    const auto ip = wire::Ipv6View::parse(bytes);
    if (!ip) return 0;
    const auto l4 = ip->upper_layer_payload();
    const bool ports_present = l4.size() >= 4;
    return andromeda_ipv6_flow_hash(fold_ipv6_address(bytes.data() + 8), fold_ipv6_address(bytes.data() + 24),
                                    ip->upper_layer_protocol(), wire::load_be32(bytes.data()) & 0xfffffu,
                                    ip->fragment_offset() != 0, ports_present ? wire::load_be32(l4.data()) : 0,
                                    ports_present);
}

}  // namespace

std::optional<FlowTuple> flow_tuple_of_frame(wire::ByteSpan frame) noexcept {
    const auto ethernet = wire::EthernetView::parse(frame);
    if (!ethernet || ethernet->ethertype() != wire::ethertype::kIpv4) return std::nullopt;
    FlowTuple t;
    if (!read_ipv4_tuple(ethernet->payload(), t)) return std::nullopt;
    return t;
}

std::uint16_t flow_hash_of_frame(wire::ByteSpan frame) noexcept {
    const auto ethernet = wire::EthernetView::parse(frame);
    if (!ethernet) return 0;
    switch (ethernet->ethertype()) {
        case wire::ethertype::kIpv4: {
            FlowTuple t;
            // ICMP: 0, as the reference sends it (see flow_hash.hpp).
            if (!read_ipv4_tuple(ethernet->payload(), t) || t.protocol == wire::ip_protocol::kIcmp) return 0;
            return flow_hash(t);
        }
        case wire::ethertype::kIpv6: return ipv6_hash(ethernet->payload());
        default: return 0;
    }
}

}  // namespace andromeda::overlay
