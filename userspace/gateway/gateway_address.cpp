#include "gateway/gateway_address.hpp"

#include "wire/ipv6_addressing.hpp"

namespace andromeda::gateway {

wire::Ipv6Address ipv6_link_local(const wire::MacAddress& mac) noexcept { return wire::link_local_address(mac); }

std::size_t write_answer_ethernet_header(wire::MutableByteSpan out, const wire::EthernetView& request,
                                         const wire::MacAddress& gateway_mac, std::uint16_t ethertype) noexcept {
    wire::EthernetHeader header = request.header();
    header.destination = request.source();
    header.source = gateway_mac;
    header.ethertype = ethertype;
    return wire::write_ethernet_header(out, header);
}

}  // namespace andromeda::gateway
