#include "gateway/gateway_address.hpp"

#include <array>

namespace andromeda::gateway {

wire::Ipv6Address ipv6_link_local(const wire::MacAddress& mac) noexcept {
    const auto& m = mac.bytes();
    std::array<std::uint8_t, 16> a{0xfe, 0x80};
    a[8] = static_cast<std::uint8_t>(m[0] ^ 0x02);  // flip the universal/local bit
    a[9] = m[1];
    a[10] = m[2];
    a[11] = 0xff;
    a[12] = 0xfe;
    a[13] = m[3];
    a[14] = m[4];
    a[15] = m[5];
    return wire::Ipv6Address(a);
}

std::size_t write_answer_ethernet_header(wire::MutableByteSpan out, const wire::EthernetView& request,
                                         const wire::MacAddress& gateway_mac, std::uint16_t ethertype) noexcept {
    wire::EthernetHeader header = request.header();
    header.destination = request.source();
    header.source = gateway_mac;
    header.ethertype = ethertype;
    return wire::write_ethernet_header(out, header);
}

}  // namespace andromeda::gateway
