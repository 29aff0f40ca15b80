#include "gateway/udp_reply.hpp"

#include "wire/ip_protocol.hpp"
#include "wire/ipv4.hpp"
#include "wire/udp.hpp"

namespace andromeda::gateway {

std::size_t finish_udp_reply(wire::MutableByteSpan out, const UdpReplyAddressing& a,
                             std::size_t payload_length) noexcept {
    const std::size_t offset = udp_reply_payload_offset(a.ethernet);
    const std::size_t udp_length = wire::kUdpHeaderLength + payload_length;
    const std::size_t ip_length = wire::kIpv4MinHeaderLength + udp_length;
    if (ip_length > 0xffff || out.size() < offset + payload_length) return 0;
    wire::EthernetHeader ethernet = a.ethernet;
    ethernet.ethertype = wire::ethertype::kIpv4;
    const std::size_t eth_length = wire::write_ethernet_header(out, ethernet);
    if (eth_length == 0) return 0;
    wire::Ipv4Header ip;
    ip.total_length = static_cast<std::uint16_t>(ip_length);
    ip.dont_fragment = true;
    ip.ttl = 64;
    ip.protocol = wire::ip_protocol::kUdp;
    ip.source = a.source;
    ip.destination = a.destination;
    wire::write_ipv4_header(out.subspan(eth_length), ip);
    const auto datagram = out.subspan(eth_length + wire::kIpv4MinHeaderLength, udp_length);
    wire::write_udp_header(datagram, {a.source_port, a.destination_port, static_cast<std::uint16_t>(udp_length), 0});
    wire::MutableUdpView::parse(datagram)->update_checksum(a.source, a.destination);
    return eth_length + ip_length;
}

}  // namespace andromeda::gateway
