// Random inputs for the property tests and the fuzz seeds: mostly plausible frames (a tenant
// speaking as itself or as someone else, overlay packets from peers and strangers) built with
// valid checksums, then sometimes mutated, truncated, padded or replaced by noise.
#pragma once

#include <array>
#include <random>

#include "overlay/outer_template.hpp"
#include "unit/dataplane/pipeline_world.hpp"

namespace andromeda::testing {

struct RandomInput {
    PortId port = 0;
    Bytes frame;
};

class RandomFrames {
public:
    // `ipv6_underlay`: overlay packets mostly come over IPv6 (pipeline_world.hpp's with_ipv6_underlay
    // nodes), a few over IPv4, the other family. Off, the sequence is what it always was.
    explicit RandomFrames(std::uint32_t seed, bool ipv6_underlay = false) : rng_(seed), ipv6_underlay_(ipv6_underlay) {}

    RandomInput next() {
        static constexpr std::array<PortId, 11> kPorts = {kBlue10Port,  kBlue11Port,   kGreen10Port, kRed10Port,
                                                          kOrange10Port, kUnboundPort, kBlue20Port,  kUnderlayPort,
                                                          kUnderlayPort, kUplinkPort,  kUnknownPort};
        RandomInput in;
        in.port = kPorts[pick(kPorts.size())];
        in.frame = in.port == kUnderlayPort ? overlay_packet() : tenant_frame(in.port);
        mutate(in.frame);
        return in;
    }

    std::uint32_t pick(std::size_t n) { return static_cast<std::uint32_t>(rng_() % n); }
    bool chance(int percent) { return static_cast<int>(pick(100)) < percent; }

private:
    struct Identity {
        wire::MacAddress mac;
        wire::Ipv4Address ip;
    };

    Identity identity_of(PortId port) {
        switch (port) {
            case kBlue10Port: return {kBlue10Mac, ipv4("10.0.0.10")};
            case kBlue11Port: return {kBlue11Mac, ipv4("10.0.0.11")};
            case kGreen10Port: return {kGreen10Mac, ipv4("10.0.0.10")};
            case kRed10Port: return {kRed10Mac, ipv4("172.16.0.10")};
            case kOrange10Port: return {kOrange10Mac, ipv4("192.168.50.10")};
            default: return {kBlue20Mac, ipv4("10.0.0.20")};
        }
    }

    wire::Ipv4Address address() {
        static const char* const kAddresses[] = {"10.0.0.1",      "10.0.0.10",    "10.0.0.11",     "10.0.0.12",
                                                 "10.0.0.20",     "10.0.0.30",    "10.0.0.99",     "172.16.0.1",
                                                 "172.16.0.10",   "172.16.0.20",  "192.168.50.1",  "192.168.50.10",
                                                 "192.168.50.20", "8.8.8.8",      "224.0.0.1",     "255.255.255.255"};
        return ipv4(kAddresses[pick(std::size(kAddresses))]);
    }

    std::size_t payload_size() {
        switch (pick(4)) {
            case 0: return pick(64);
            case 1: return pick(1500);
            case 2: return 1380 + pick(100);  // around the overlay MTU
            default: return pick(3800);
        }
    }

    Bytes ipv4_packet(const Identity& from, wire::MacAddress dst_mac) {
        Ipv4Spec s;
        s.src_mac = from.mac;
        s.dst_mac = dst_mac;
        s.src = chance(90) ? from.ip : address();
        s.dst = address();
        static constexpr std::uint8_t kProtocols[] = {wire::ip_protocol::kUdp, wire::ip_protocol::kTcp,
                                                      wire::ip_protocol::kIcmp, wire::ip_protocol::kIcmp, 47};
        s.protocol = kProtocols[pick(std::size(kProtocols))];
        if (chance(20)) s.icmp_type = static_cast<std::uint8_t>(pick(20));
        s.payload = payload_size();
        s.dont_fragment = chance(50);
        if (chance(10)) s.more_fragments = true;
        if (chance(10)) s.fragment_offset = static_cast<std::uint16_t>(pick(400));
        if (chance(15)) s.options = {0x94, 0x04, 0x00, 0x00, 0x01, 0x01, 0x01, 0x00};
        if (chance(10)) s.tags = {wire::VlanTag{wire::ethertype::kVlan, 0, false, static_cast<std::uint16_t>(pick(4095))}};
        s.ttl = static_cast<std::uint8_t>(chance(5) ? pick(2) : 64);
        s.fill = static_cast<std::uint8_t>(rng_());
        return ipv4_frame(s);
    }

    Bytes tenant_frame(PortId port) {
        Identity me = identity_of(port);
        if (chance(10)) me.mac = mac("02:00:00:00:00:66");
        switch (pick(10)) {
            case 0:
            case 1: {
                wire::ArpPacket arp = wire::make_arp_request(me.mac, chance(90) ? me.ip : address(), address());
                if (chance(10)) arp.operation = wire::arp_op::kReply;
                if (chance(10)) arp.sender_ip = wire::Ipv4Address(0);
                return arp_frame(me.mac, chance(80) ? kBroadcast : kGatewayMac, arp);
            }
            case 2:
                return ipv6_udp_frame(me.mac, chance(80) ? kGatewayMac : mac("33:33:00:00:00:01"), ipv6("fd00::10"),
                                      ipv6("fd00::20"), payload_size());
            default: return ipv4_packet(me, chance(90) ? kGatewayMac : kBlue20Mac);
        }
    }

    Bytes overlay_packet() {
        static const wire::Ipv4Address kSources[] = {kNode2Ip, kNode2Ip, kNode3Ip, ipv4("192.168.1.77")};
        static constexpr std::uint32_t kVnis[] = {100, 200, 300, 400, 999};
        static const wire::Ipv6Address kSources6[] = {kNode2Ip6, kNode2Ip6, kNode3Ip6, ipv6("fd00:1::77")};
        overlay::OuterTemplateConfig c;
        c.kind = chance(90) ? overlay::EncapKind::andromeda : overlay::EncapKind::vxlan;
        c.src_mac = kNode2Mac;
        c.dst_mac = kNode1Mac;
        if (ipv6_underlay_ && chance(90)) {
            c.ipv6 = true;
            c.src_ip6 = kSources6[pick(std::size(kSources6))];
            c.dst_ip6 = chance(95) ? kNode1Ip6 : kNode2Ip6;
        } else {
            c.src_ip = kSources[pick(std::size(kSources))];
            c.dst_ip = chance(95) ? kNode1Ip : kNode2Ip;
        }
        c.udp_checksum = chance(20);
        overlay::OuterTemplate outer(c);
        const Bytes inner = chance(85) ? ipv4_packet(identity_of(kBlue20Port), chance(50) ? kBlue10Mac : kGatewayMac)
                                       : tenant_frame(kBlue20Port);
        overlay::OverlayFields fields;
        fields.vni = kVnis[pick(std::size(kVnis))];
        fields.hop_limit = static_cast<std::uint8_t>(chance(10) ? pick(2) : 64);
        fields.flags = static_cast<std::uint8_t>(chance(5) ? 8 : 0);
        Bytes packet(inner.size() + outer.header_size());
        packet.resize(outer.encapsulate(inner, packet, fields));
        return packet;
    }

    void mutate(Bytes& frame) {
        const std::uint32_t roll = pick(100);
        if (roll < 15) {
            for (std::uint32_t i = 0, n = 1 + pick(4); i < n && !frame.empty(); ++i)
                frame[pick(frame.size())] ^= static_cast<std::uint8_t>(1 + pick(255));
        } else if (roll < 20 && !frame.empty()) {
            frame.resize(pick(frame.size()));
        } else if (roll < 25) {
            frame.resize(frame.size() + 1 + pick(40), static_cast<std::uint8_t>(rng_()));
        } else if (roll < 28) {
            frame.resize(pick(200));
            for (auto& b : frame) b = static_cast<std::uint8_t>(rng_());
        }
    }

    std::mt19937 rng_;
    bool ipv6_underlay_ = false;
};

}  // namespace andromeda::testing
