#include "gateway/udp_reply.hpp"

#include "wire/ip_protocol.hpp"
#include "wire/ipv4.hpp"
#include "wire/udp.hpp"

namespace andromeda::gateway {

std::size_t write_reply_headers(wire::MutableByteSpan out, const wire::EthernetHeader& ethernet,
                                wire::Ipv4Address source, wire::Ipv4Address destination, std::uint8_t protocol,
                                std::size_t transport_length) noexcept {
    const std::size_t ip_length = wire::kIpv4MinHeaderLength + transport_length;
    if (ip_length > 0xffff || out.size() < ethernet.length() + ip_length) return 0;
    wire::EthernetHeader e = ethernet;
    e.ethertype = wire::ethertype::kIpv4;
    const std::size_t eth_length = wire::write_ethernet_header(out, e);
    if (eth_length == 0) return 0;
    wire::Ipv4Header ip;
    ip.total_length = static_cast<std::uint16_t>(ip_length);
    ip.dont_fragment = true;
    ip.ttl = 64;
    ip.protocol = protocol;
    ip.source = source;
    ip.destination = destination;
    wire::write_ipv4_header(out.subspan(eth_length), ip);
    return eth_length + wire::kIpv4MinHeaderLength;
}

std::size_t finish_udp_reply(wire::MutableByteSpan out, const UdpReplyAddressing& a,
                             std::size_t payload_length) noexcept {
    const std::size_t udp_length = wire::kUdpHeaderLength + payload_length;
    const std::size_t at =
        write_reply_headers(out, a.ethernet, a.source, a.destination, wire::ip_protocol::kUdp, udp_length);
    if (at == 0) return 0;
    const auto datagram = out.subspan(at, udp_length);
    wire::write_udp_header(datagram, {a.source_port, a.destination_port, static_cast<std::uint16_t>(udp_length), 0});
    wire::MutableUdpView::parse(datagram)->update_checksum(a.source, a.destination);
    return at + udp_length;
}

}  // namespace andromeda::gateway
