#include "overlay/flow_hash.hpp"

namespace andromeda::overlay {

namespace {

constexpr std::uint16_t kEthertypeIpv4 = 0x0800;
constexpr std::uint16_t kEthertypeIpv6 = 0x86dd;
constexpr std::uint16_t kEthertypeVlan = 0x8100;
constexpr std::uint8_t kProtoIcmp = 1;
constexpr std::uint8_t kProtoTcp = 6;
constexpr std::uint8_t kProtoUdp = 17;

bool carries_ports(std::uint8_t protocol) noexcept { return protocol == kProtoTcp || protocol == kProtoUdp; }

// The L3 payload of an Ethernet frame (past one optional 802.1Q tag) and its ethertype.
struct L3 {
    std::uint16_t ethertype = 0;
    wire::ByteSpan payload;
};

L3 l3_of(wire::ByteSpan frame) noexcept {
    if (frame.size() < 14) return {};
    std::size_t offset = 12;
    std::uint16_t ethertype = wire::load_be16(frame.data() + offset);
    if (ethertype == kEthertypeVlan) {
        if (frame.size() < 18) return {};
        offset += 4;
        ethertype = wire::load_be16(frame.data() + offset);
    }
    return {ethertype, frame.subspan(offset + 2)};
}

std::optional<FlowTuple> ipv4_tuple(wire::ByteSpan ip) noexcept {
    if (ip.size() < 20) return std::nullopt;
    const std::uint8_t* p = ip.data();
    const std::size_t header_length = static_cast<std::size_t>(p[0] & 0x0f) * 4;
    if (p[0] >> 4 != 4 || header_length < 20 || header_length > ip.size()) return std::nullopt;
    FlowTuple t;
    t.protocol = p[9];
    t.src = wire::load_be32(p + 12);
    t.dst = wire::load_be32(p + 16);
    const bool later_fragment = (wire::load_be16(p + 6) & 0x1fff) != 0;
    if (carries_ports(t.protocol) && !later_fragment && ip.size() >= header_length + 4) {
        t.src_port = wire::load_be16(p + header_length);
        t.dst_port = wire::load_be16(p + header_length + 2);
    }
    return t;
}

std::uint32_t fold_ipv6_address(const std::uint8_t* p) noexcept {
    return wire::load_be32(p) ^ wire::load_be32(p + 4) ^ wire::load_be32(p + 8) ^ wire::load_be32(p + 12);
}

std::uint16_t ipv6_hash(wire::ByteSpan ip) noexcept {
    if (ip.size() < 40 || ip[0] >> 4 != 6) return 0;
    const std::uint8_t* p = ip.data();
    FlowTuple t;
    t.protocol = p[6];
    t.src = fold_ipv6_address(p + 8);
    t.dst = fold_ipv6_address(p + 24);
    if (carries_ports(t.protocol) && ip.size() >= 44) {
        t.src_port = wire::load_be16(p + 40);
        t.dst_port = wire::load_be16(p + 42);
    }
    return flow_hash(t);
}

}  // namespace

std::optional<FlowTuple> flow_tuple_of_frame(wire::ByteSpan frame) noexcept {
    const L3 l3 = l3_of(frame);
    if (l3.ethertype != kEthertypeIpv4) return std::nullopt;
    return ipv4_tuple(l3.payload);
}

std::uint16_t flow_hash_of_frame(wire::ByteSpan frame) noexcept {
    const L3 l3 = l3_of(frame);
    if (l3.ethertype == kEthertypeIpv4) {
        const std::optional<FlowTuple> t = ipv4_tuple(l3.payload);
        if (!t || t->protocol == kProtoIcmp) return 0;
        return flow_hash(*t);
    }
    if (l3.ethertype == kEthertypeIpv6) return ipv6_hash(l3.payload);
    return 0;
}

}  // namespace andromeda::overlay
