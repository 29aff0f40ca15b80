#include "gateway/icmpv6_frame.hpp"

#include "wire/icmp.hpp"
#include "wire/ip_protocol.hpp"
#include "wire/ipv6.hpp"

namespace andromeda::gateway::detail {

namespace {

wire::EthernetHeader ethernet_header(const Icmpv6FrameAddressing& addressing) noexcept {
    wire::EthernetHeader header = addressing.request ? addressing.request->header() : wire::EthernetHeader{};
    header.destination = addressing.destination_mac;
    header.source = addressing.source_mac;
    header.ethertype = wire::ethertype::kIpv6;
    return header;
}

}  // namespace

std::size_t icmpv6_frame_header_length(const Icmpv6FrameAddressing& addressing) noexcept {
    return addressing.request ? addressing.request->header_length() : wire::kEthernetHeaderLength;
}

std::size_t write_icmpv6_frame_headers(wire::MutableByteSpan out, const Icmpv6FrameAddressing& addressing,
                                       std::size_t message_length) noexcept {
    const std::size_t ethernet_length = icmpv6_frame_header_length(addressing);
    if (message_length > 0xffff || out.size() < ethernet_length + wire::kIpv6HeaderLength + message_length) return 0;
    wire::write_ethernet_header(out, ethernet_header(addressing));
    wire::Ipv6Header ip;
    ip.traffic_class = addressing.traffic_class;
    ip.payload_length = static_cast<std::uint16_t>(message_length);
    ip.next_header = wire::ip_protocol::kIcmpv6;
    ip.hop_limit = addressing.hop_limit;
    ip.source = addressing.source;
    ip.destination = addressing.destination;
    wire::write_ipv6_header(out.subspan(ethernet_length), ip);
    return ethernet_length + wire::kIpv6HeaderLength;
}

void finish_icmpv6_checksum(wire::MutableByteSpan message, const Icmpv6FrameAddressing& addressing) noexcept {
    if (const auto icmp = wire::MutableIcmpv6View::parse(message))
        icmp->update_checksum(addressing.source, addressing.destination);
}

}  // namespace andromeda::gateway::detail
