#include "wire/arp.hpp"

namespace andromeda::wire {

ArpPacket make_arp_request(const MacAddress& sender_mac, Ipv4Address sender_ip, Ipv4Address target_ip) noexcept {
    return ArpPacket{arp_op::kRequest, sender_mac, sender_ip, MacAddress{}, target_ip};
}

ArpPacket make_arp_reply(const ArpPacket& request, const MacAddress& answer_mac) noexcept {
    return ArpPacket{arp_op::kReply, answer_mac, request.target_ip, request.sender_mac, request.sender_ip};
}

std::size_t write_arp(MutableByteSpan out, const ArpPacket& packet) noexcept {
    if (out.size() < kArpLength) return 0;
    store_be16(&out[0], kArpHardwareEthernet);
    store_be16(&out[2], kArpProtocolIpv4);
    out[4] = 6;
    out[5] = 4;
    store_be16(&out[6], packet.operation);
    packet.sender_mac.copy_to(&out[8]);
    packet.sender_ip.copy_to(&out[14]);
    packet.target_mac.copy_to(&out[18]);
    packet.target_ip.copy_to(&out[24]);
    return kArpLength;
}

}  // namespace andromeda::wire
