// andromeda_tc_tenant (a tenant port's ingress) against the pipeline, frame by frame, with both
// encapsulations (differential_check.hpp says what agreeing means): a table of crafted frames,
// each with the outcome the fast path must reach, run with and without encap headroom; random
// frames; stale map entries; and proof that the comparison is not vacuous, with mutated outputs
// and deliberately broken map entries.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/pkt_cls.h>

#include <string>
#include <tuple>
#include <vector>

#include "differential_check.hpp"
#include "random_frames.hpp"

namespace andromeda::fast_path_test {
namespace {

constexpr std::uint32_t kB10 = ip4(10, 0, 0, 10), kB11 = ip4(10, 0, 0, 11), kB20 = ip4(10, 0, 0, 20);
constexpr std::uint32_t kBlueGateway = ip4(10, 0, 0, 1);
constexpr std::uint32_t kGreen20 = ip4(10, 0, 0, 20);
const std::string kB10Port = "tap-b10";

Ipv4Frame blue(std::uint32_t to, std::size_t total = 100, std::uint8_t protocol = kUdp) {
    return tenant_spec("blue", 10, to, total, protocol);
}

// Every length around the path MTU, with and without DF: blue's own MTU (1400) and green's,
// which is the underlay's less the overlay (1450).
std::vector<Case> path_mtu_cases() {
    std::vector<Case> cases;
    for (const auto& [vpc, port, to] :
         {std::tuple{"blue", "tap-b10", kB20}, std::tuple{"green", "tap-g10", kGreen20}}) {
        const std::uint32_t mtu = vpc_named(vpc).inner_mtu();
        for (std::uint32_t total = mtu - 2; total <= mtu + 2; ++total)
            for (const bool df : {true, false})
                for (const std::uint8_t protocol : {kUdp, kTcp})
                    cases.push_back({std::string(vpc) + ": " + std::to_string(total) + " bytes (MTU " +
                                         std::to_string(mtu) + ")" + (df ? ", DF" : "") +
                                         (protocol == kTcp ? ", TCP" : ", UDP"),
                                     port, ipv4(fragment(tenant_spec(vpc, 10, to, total, protocol), df ? kDf : 0)),
                                     total <= mtu ? "encap" : "punt_too_big"});
    }
    return cases;
}

std::vector<Case> crafted_tenant_frames() {
    const EndpointDef& e10 = endpoint("blue", 10);
    const Bytes to_b20 = ipv4(blue(kB20));
    const Ipv4Frame spoofed_ip = with(blue(kB20), [](auto& s) { s.src = kB11; });
    const Bytes spoofed_arp = arp(e10.mac, kBroadcastMac, 1, e10.mac, kB11, kBlueGateway);
    const auto dst_mac = [](const Mac& m) { return [m](auto& s) { s.dst_mac = m; }; };
    std::vector<Case> cases = {
        // Encapsulated: to an endpoint on node2, whatever is inside.
        {"UDP to a remote endpoint", kB10Port, to_b20, "encap"},
        {"TCP to a remote endpoint", kB10Port, ipv4(blue(kB20, 600, kTcp)), "encap"},
        {"ICMP echo to a remote endpoint", kB10Port, ipv4(blue(kB20, 84, kIcmp)), "encap"},
        {"GRE (no ports in the hash) to a remote endpoint", kB10Port, ipv4(blue(kB20, 200, kGre)), "encap"},
        {"UDP to the second remote endpoint", "tap-b11", ipv4(tenant_spec("blue", 11, ip4(10, 0, 0, 21))), "encap"},
        {"a bare 20-byte IPv4 header (protocol UDP, no ports)", kB10Port, ipv4(blue(kB20, 20)), "encap"},
        {"24 bytes: the UDP ports and nothing more", kB10Port, ipv4(blue(kB20, 24)), "encap"},
        {"TTL 0 (neither side routes by it)", kB10Port, ipv4(with(blue(kB20), [](auto& s) { s.ttl = 0; })), "encap"},
        {"TTL 1 (neither side routes by it)", kB10Port, ipv4(with(blue(kB20), [](auto& s) { s.ttl = 1; })), "encap"},
        {"TTL 255 (neither side routes by it)", kB10Port, ipv4(with(blue(kB20), [](auto& s) { s.ttl = 255; })),
         "encap"},
        {"a first fragment (MF)", kB10Port, ipv4(fragment(blue(kB20, 300), kMf)), "encap"},
        {"a later fragment (offset 185)", kB10Port, ipv4(fragment(blue(kB20, 300), 185)), "encap"},
        {"TOS 0xb8 (not copied to the outer header)", kB10Port,
         ipv4(with(blue(kB20, 300), [](auto& s) { s.tos = 0xb8; })), "encap"},

        // Delivered to a local endpoint, or punted: no route the fast path can take.
        {"to a local endpoint", kB10Port, ipv4(blue(kB11)), "local"},
        {"to itself", kB10Port, ipv4(blue(kB10)), "local"},
        {"to a local endpoint, far over the MTU (no overlay in between)", kB10Port, ipv4(blue(kB11, 1600)), "local"},
        {"green to its local endpoint", "tap-g10", ipv4(tenant_spec("green", 10, ip4(10, 0, 0, 40))), "local"},
        {"to the local endpoint without a device", kB10Port, ipv4(blue(ip4(10, 0, 0, 12))), "punt_no_route"},
        {"to node3's endpoint (no next hop known)", kB10Port, ipv4(blue(ip4(10, 0, 0, 30))), "punt_no_next_hop"},
        {"to an unknown address of the VPC", kB10Port, ipv4(blue(ip4(10, 0, 0, 99))), "punt_no_route"},
        {"outside the VPC, which has no NAT", kB10Port, ipv4(blue(ip4(8, 8, 8, 8))), "punt_no_route"},
        {"to the subnet broadcast address", kB10Port, ipv4(blue(ip4(10, 0, 0, 255))), "punt_no_route"},
        {"to the gateway (ICMP echo)", kB10Port, ipv4(blue(kBlueGateway, 84, kIcmp)), "punt_to_gateway"},
        {"to the gateway (UDP)", kB10Port, ipv4(blue(kBlueGateway)), "punt_to_gateway"},
        {"to 224.0.0.251 (multicast)", kB10Port, ipv4(blue(ip4(224, 0, 0, 251))), "punt_to_gateway"},
        {"to 239.255.255.250 (multicast)", kB10Port, ipv4(blue(ip4(239, 255, 255, 250))), "punt_to_gateway"},
        {"to 255.255.255.255", kB10Port, ipv4(blue(0xffffffff)), "punt_to_gateway"},
        {"to the broadcast MAC", kB10Port, ipv4(with(blue(kB20), dst_mac(kBroadcastMac))), "punt_not_to_gateway"},
        {"to a multicast MAC", kB10Port, ipv4(with(blue(kB20), dst_mac({0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb}))),
         "punt_not_to_gateway"},
        {"to the endpoint's own MAC, not the gateway's", kB10Port,
         ipv4(with(blue(kB20), dst_mac(endpoint("blue", 20).mac))), "punt_not_to_gateway"},
        {"to another VPC's gateway MAC", kB10Port, ipv4(with(blue(kB20), dst_mac(vpc_named("green").gateway_mac))),
         "punt_not_to_gateway"},

        // Port security.
        {"spoofed source MAC (another endpoint's)", kB10Port,
         ipv4(with(blue(kB20), [](auto& s) { s.src_mac = endpoint("blue", 11).mac; })), "drop_spoofed_mac"},
        {"spoofed source MAC (nobody's)", kB10Port,
         ipv4(with(blue(kB20), [](auto& s) { s.src_mac = {0x02, 0x99, 0x99, 0x99, 0x99, 0x99}; })), "drop_spoofed_mac"},
        {"spoofed source IPv4 (another endpoint's)", kB10Port, ipv4(spoofed_ip), "drop_spoofed_ip"},
        {"spoofed source IPv4 (nobody's)", kB10Port,
         ipv4(with(blue(kB20), [](auto& s) { s.src = ip4(10, 0, 0, 200); })), "drop_spoofed_ip"},
        {"a DHCP client without an address (0.0.0.0 to UDP port 67)", kB10Port,
         ipv4(with(blue(0xffffffff, 300), [](auto& s) { s.src = 0, s.src_port = 68, s.dst_port = 67, s.dst_mac = kBroadcastMac; })),
         "punt_to_gateway"},
        {"0.0.0.0 to another UDP port", kB10Port,
         ipv4(with(blue(0xffffffff, 300), [](auto& s) { s.src = 0, s.src_port = 68, s.dst_port = 68; })), "drop_spoofed_ip"},
        {"0.0.0.0 over TCP to port 67", kB10Port,
         ipv4(with(blue(kBlueGateway, 300, kTcp), [](auto& s) { s.src = 0, s.dst_port = 67; })), "drop_spoofed_ip"},
        {"spoofed source IPv4 to the gateway", kB10Port,
         ipv4(with(blue(kBlueGateway), [](auto& s) { s.src = ip4(10, 0, 0, 200); })), "drop_spoofed_ip"},
        {"spoofed source IPv4 where the fast path is off", "tap-y10",
         ipv4(with(tenant_spec("grey", 10, ip4(10, 2, 0, 20)), [](auto& s) { s.src = ip4(10, 2, 0, 20); })),
         "drop_spoofed_ip"},
        {"spoofed source IPv4 behind IPv4 options", kB10Port,
         ipv4(with(spoofed_ip, [](auto& s) { s.options = nop_options(4); })), "punt_ip_header"},
        {"ARP request from the endpoint", kB10Port, arp(e10.mac, kBroadcastMac, 1, e10.mac, kB10, kBlueGateway),
         "punt_not_ipv4"},
        {"ARP probe (sender 0.0.0.0)", kB10Port, arp(e10.mac, kBroadcastMac, 1, e10.mac, 0, kB10), "punt_not_ipv4"},
        {"ARP reply from the endpoint", kB10Port, arp(e10.mac, kDefaultGatewayMac, 2, e10.mac, kB10, kBlueGateway),
         "punt_not_ipv4"},
        {"ARP with a spoofed sender IPv4", kB10Port, spoofed_arp, "drop_spoofed_arp"},
        {"ARP with a spoofed sender MAC", kB10Port,
         arp(e10.mac, kBroadcastMac, 1, endpoint("blue", 11).mac, kB10, kBlueGateway), "drop_spoofed_arp"},
        {"ARP (a reply) with a spoofed sender IPv4", kB10Port,
         arp(e10.mac, kBroadcastMac, 2, e10.mac, kBlueGateway, kB11), "drop_spoofed_arp"},
        // (Hardware address length 8: not Ethernet/IPv4, the pipeline's to refuse.)
        {"ARP of another hardware type (spoofed sender)", kB10Port, with_byte(spoofed_arp, 14 + 4, 8), "punt_not_ipv4"},
        {"ARP cut a byte short (spoofed sender)", kB10Port, resized(spoofed_arp, 14 + 27), "punt_not_ipv4"},
        {"VLAN-tagged ARP (spoofed sender)", kB10Port, tagged(spoofed_arp, 0x8100, 10), "punt_not_ipv4"},

        // Headers the fast path does not take.
        {"IPv4 options (4 bytes)", kB10Port, ipv4(with(blue(kB20), [](auto& s) { s.options = nop_options(4); })),
         "punt_ip_header"},
        {"IPv4 options (40 bytes)", kB10Port, ipv4(with(blue(kB20), [](auto& s) { s.options = nop_options(40); })),
         "punt_ip_header"},
        {"bad IPv4 header checksum", kB10Port, flipped(to_b20, 24, 0x01), "punt_ip_header"},
        {"total length one past the frame", kB10Port, with_ipv4_total_length(to_b20, 101), "punt_ip_header"},
        {"total length one short of the frame (a byte of padding)", kB10Port, with_ipv4_total_length(to_b20, 99),
         "punt_ip_header"},
        {"a 28-byte ICMP packet padded to 60 bytes", kB10Port, resized(ipv4(blue(kB20, 28, kIcmp)), 60),
         "punt_ip_header"},
        {"a frame padded by 4 bytes", kB10Port, resized(ipv4(blue(kB20, 1386)), 14 + 1386 + 4), "punt_ip_header"},
        {"total length 19", kB10Port, with_ipv4_total_length(to_b20, 19), "punt_ip_header"},
        {"total length 0", kB10Port, with_ipv4_total_length(to_b20, 0), "punt_ip_header"},
        {"version 6 in an IPv4 frame", kB10Port, with_byte(to_b20, 14, 0x65, Ipv4Checksum::refreshed),
         "punt_ip_header"},
        {"IHL 4", kB10Port, with_byte(to_b20, 14, 0x44, Ipv4Checksum::refreshed), "punt_ip_header"},
        {"an Ethernet header alone (IPv4 ethertype)", kB10Port, resized(to_b20, 14), "untestable"},
        {"an IPv4 header cut at 19 bytes", kB10Port, resized(to_b20, 33), "untestable"},
        {"an IPv4 header with nothing after it (total length 100)", kB10Port, resized(to_b20, 34), "punt_ip_header"},
        {"802.1Q-tagged IPv4", kB10Port, tagged(to_b20, 0x8100, 100), "punt_not_ipv4"},
        {"QinQ-tagged IPv4", kB10Port, tagged(tagged(to_b20, 0x8100, 100), 0x88a8, 200), "punt_not_ipv4"},
        {"IPv6 from nobody's address (the header's bytes counting up)", kB10Port,
         ethertype_frame(e10.mac, kDefaultGatewayMac, 0x86dd, 80, 0), "drop_spoofed_ip"},
        {"an unknown ethertype", kB10Port, ethertype_frame(e10.mac, kDefaultGatewayMac, 0x88b5, 60, 7),
         "punt_not_ipv4"},
        {"an Ethernet header alone (unknown ethertype)", kB10Port,
         ethertype_frame(e10.mac, kDefaultGatewayMac, 0x88b5, 0, 0), "punt_not_ipv4"},

        // Other VPCs.
        {"green to its remote endpoint", "tap-g10", ipv4(tenant_spec("green", 10, kGreen20)), "encap"},
        {"green to blue's address (another tenant's)", "tap-g10", ipv4(tenant_spec("green", 10, kB11)),
         "punt_no_route"},
        {"green to blue's gateway MAC", "tap-g10",
         ipv4(with(tenant_spec("green", 10, kGreen20), dst_mac(kDefaultGatewayMac))), "punt_not_to_gateway"},
        {"grey (fast path off) to its remote endpoint", "tap-y10", ipv4(tenant_spec("grey", 10, ip4(10, 2, 0, 20))),
         "punt_fastpath_off"},
        {"grey (fast path off) to the gateway", "tap-y10", ipv4(tenant_spec("grey", 10, ip4(10, 2, 0, 1))),
         "punt_fastpath_off"},
        {"red to its remote endpoint", "tap-r10", ipv4(tenant_spec("red", 10, ip4(10, 3, 0, 20))), "encap"},
        // The outside: encapsulated towards the VPC's NAT node, the inner frame as the tenant sent it.
        {"red to the Internet (NAT at node2)", "tap-r10", ipv4(tenant_spec("red", 10, ip4(8, 8, 8, 8))), "encap"},
        {"red to its NAT address", "tap-r10", ipv4(tenant_spec("red", 10, ip4(203, 0, 113, 20))), "encap"},
    };
    for (Case& c : path_mtu_cases()) cases.push_back(std::move(c));
    return cases;
}

// IPv6 between the endpoints of blue and green (dual-stack, the same prefix), and what the
// gateway keeps: lib/ipv6.h.
std::vector<Case> crafted_ipv6_tenant_frames() {
    const auto blue6 = [](std::uint32_t to, std::size_t payload = 60, std::uint8_t next = kUdp) {
        return tenant6_spec("blue", 10, to, payload, next);
    };
    const EndpointDef& e10 = endpoint("blue", 10);
    const auto mtu_case = [&](std::uint32_t total, std::uint8_t next) {
        return Case{"IPv6: " + std::to_string(total) + " bytes (blue's MTU 1400)" + (next == kTcp ? ", TCP" : ", UDP"),
                    kB10Port, ipv6(blue6(20, total - 40, next)), total <= 1400 ? "encap" : "punt_too_big"};
    };
    std::vector<Case> cases = {
        {"IPv6: UDP to a remote endpoint", kB10Port, ipv6(blue6(20)), "encap"},
        {"IPv6: TCP to a remote endpoint", kB10Port, ipv6(blue6(20, 600, kTcp)), "encap"},
        {"IPv6: echo request to a remote endpoint", kB10Port, ipv6(blue6(21, 64, kIcmpv6)), "encap"},
        {"IPv6: echo reply to a remote endpoint", kB10Port,
         ipv6(with(blue6(21, 64, kIcmpv6), [](auto& s) { s.icmp_type = 129; })), "encap"},
        {"IPv6: GRE (no ports) to a remote endpoint", kB10Port, ipv6(blue6(20, 100, kGre)), "encap"},
        {"IPv6: no flow label", kB10Port, ipv6(with(blue6(20), [](auto& s) { s.flow_label = 0; })), "encap"},
        {"IPv6: another flow label", kB10Port, ipv6(with(blue6(20), [](auto& s) { s.flow_label = 0xfffff; })),
         "encap"},
        {"IPv6: hop limit 1 (neither side routes by it)", kB10Port,
         ipv6(with(blue6(20), [](auto& s) { s.hop_limit = 1; })), "encap"},
        {"IPv6: a bare header (UDP, no ports)", kB10Port, ipv6(blue6(20, 0)), "encap"},
        {"IPv6: to a local endpoint", kB10Port, ipv6(blue6(11)), "local"},
        {"IPv6: to a local endpoint, far over the MTU", kB10Port, ipv6(blue6(11, 1600)), "local"},
        {"IPv6: green to its local endpoint", "tap-g10", ipv6(tenant6_spec("green", 10, 40)), "local"},
        {"IPv6: green to its remote endpoint", "tap-g10", ipv6(tenant6_spec("green", 10, 20)), "encap"},
        {"IPv6: to the local endpoint without a device", kB10Port, ipv6(blue6(12)), "punt_no_route"},
        {"IPv6: to node3's endpoint (no next hop known)", kB10Port, ipv6(blue6(30)), "punt_no_next_hop"},
        {"IPv6: to an address of the prefix no endpoint has", kB10Port, ipv6(blue6(0x99)), "punt_no_route"},
        {"IPv6: off the prefix", kB10Port,
         ipv6(with(blue6(20), [](auto& s) { s.dst[7] = 9; })), "punt_no_route"},
        {"IPv6: to the gateway's link-local address", kB10Port,
         ipv6(with(blue6(20, 64, kIcmpv6), [](auto& s) { s.dst = link_local_of(kDefaultGatewayMac); })),
         "punt_ipv6_control"},
        {"IPv6: to a multicast group", kB10Port,
         ipv6(with(blue6(20), [](auto& s) { s.dst = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xfb}; })),
         "punt_ipv6_control"},
        {"IPv6: from its link-local address", kB10Port,
         ipv6(with(blue6(20), [&](auto& s) { s.src = link_local_of(e10.mac); })), "punt_ipv6_control"},
        {"IPv6: from :: (duplicate address detection's)", kB10Port,
         ipv6(with(blue6(20, 24, kIcmpv6), [](auto& s) { s.src = Ip6{}, s.icmp_type = 135; })), "punt_ipv6_control"},
        {"IPv6: a Neighbor Solicitation", kB10Port,
         ipv6(with(blue6(20, 32, kIcmpv6), [](auto& s) { s.icmp_type = 135; })), "punt_ipv6_control"},
        {"IPv6: a Router Solicitation", kB10Port,
         ipv6(with(blue6(20, 16, kIcmpv6), [](auto& s) { s.icmp_type = 133; })), "punt_ipv6_control"},
        {"IPv6: a Router Advertisement (the RA guard's)", kB10Port,
         ipv6(with(blue6(20, 16, kIcmpv6), [](auto& s) { s.icmp_type = 134; })), "punt_ipv6_control"},
        {"IPv6: an ICMPv6 error", kB10Port, ipv6(with(blue6(20, 64, kIcmpv6), [](auto& s) { s.icmp_type = 1; })),
         "punt_ipv6_control"},
        {"IPv6: behind a hop-by-hop header", kB10Port, ipv6(blue6(20, 60, 0)), "punt_ip_header"},
        {"IPv6: behind a fragment header", kB10Port, ipv6(blue6(20, 60, 44)), "punt_ip_header"},
        {"IPv6: a payload length past the frame", kB10Port,
         [&] { Bytes f = ipv6(blue6(20)); test_support::put16(&f[18], 61); return f; }(), "punt_ip_header"},
        {"IPv6: 2 bytes of padding", kB10Port, [&] { Bytes f = ipv6(blue6(20)); f.resize(f.size() + 2, 0); return f; }(),
         "punt_ip_header"},
        {"IPv6: version 4 in an IPv6 frame", kB10Port, with_byte(ipv6(blue6(20)), 14, 0x40), "punt_ip_header"},
        {"IPv6: a header cut short", kB10Port, resized(ipv6(blue6(20)), 14 + 39), "untestable"},
        {"IPv6: to the broadcast MAC", kB10Port,
         ipv6(with(blue6(20), [](auto& s) { s.dst_mac = kBroadcastMac; })), "punt_not_to_gateway"},
        {"IPv6: to another VPC's gateway MAC", kB10Port,
         ipv6(with(blue6(20), [](auto& s) { s.dst_mac = vpc_named("green").gateway_mac; })), "punt_not_to_gateway"},
        {"IPv6: spoofed source (another endpoint's)", kB10Port,
         ipv6(with(blue6(20), [](auto& s) { s.src = ip6_of(11); })), "drop_spoofed_ip"},
        {"IPv6: spoofed source (off the prefix)", kB10Port,
         ipv6(with(blue6(20), [](auto& s) { s.src[3] = 7; })), "drop_spoofed_ip"},
        {"IPv6: spoofed source MAC", kB10Port,
         ipv6(with(blue6(20), [](auto& s) { s.src_mac = endpoint("blue", 11).mac; })), "drop_spoofed_mac"},
        {"IPv6 from a port of an IPv4-only VPC", "tap-r10",
         ipv6(with(blue6(20), [](auto& s) { s.src_mac = endpoint("red", 10).mac; })), "punt_ipv6_control"},
        {"IPv6 where the fast path is off (an IPv4-only VPC too)", "tap-y10",
         ipv6(with(blue6(20), [](auto& s) { s.src_mac = endpoint("grey", 10).mac; })), "punt_ipv6_control"},
        mtu_case(1399, kUdp), mtu_case(1400, kUdp), mtu_case(1401, kUdp), mtu_case(1400, kTcp), mtu_case(1401, kTcp),
    };
    return cases;
}

class TcTenant : public DifferentialTest {};

TEST_P(TcTenant, CraftedIpv6Frames) {
    const std::vector<Case> cases = crafted_ipv6_tenant_frames();
    const Tally tally = run_table(cases, "crafted IPv6 tenant frame");
    world_->set_encap_headroom(ANDROMEDA_ENCAP_HEADROOM);
    const Tally with_room = run_table(cases, "crafted IPv6 tenant frame, encap_headroom");
    EXPECT_EQ(with_room.count("encap"), tally.count("encap"));
    EXPECT_GE(tally.count("encap"), 10);
    RecordProperty("frames", tally.cases + with_room.cases);
}

TEST_P(TcTenant, CraftedFrames) {
    const std::vector<Case> cases = crafted_tenant_frames();
    const Tally tally = run_table(cases, "crafted tenant frame");
    // Again with the room a veth underlay's encap makes for the receiver's XDP.
    world_->set_encap_headroom(ANDROMEDA_ENCAP_HEADROOM);
    const Tally with_room =
        run_table(cases, "crafted tenant frame, encap_headroom " + std::to_string(ANDROMEDA_ENCAP_HEADROOM));
    EXPECT_EQ(with_room.count("encap"), tally.count("encap"));
    RecordProperty("frames", tally.cases + with_room.cases);
}

constexpr int kRandomFrames = 20000;  // per encapsulation

TEST_P(TcTenant, RandomFrames) {
    const std::uint32_t seed = seed_for(GetParam() == Encap::vxlan ? 0x7e1a0002 : 0x7e1a0001);
    Gen g(seed);
    const Tally tally = run_random("random tenant frames", seed, kRandomFrames, [&](int i) {
        // Every other frame with the room a veth underlay's encap makes for the receiver's XDP.
        world_->set_encap_headroom(i % 2 != 0 ? ANDROMEDA_ENCAP_HEADROOM : 0);
        Case c = random_tenant(g);
        if (i % 2 != 0) c.name += " (encap_headroom)";
        return c;
    });
    // Not vacuous: every kind of outcome occurs often.
    EXPECT_GE(tally.count("encap"), kRandomFrames / 10);
    EXPECT_GE(tally.count("local"), kRandomFrames / 50);
    EXPECT_GE(tally.count_prefix("punt_"), kRandomFrames / 5);
    EXPECT_GE(tally.count_prefix("drop_spoofed_"), kRandomFrames / 50);
}

// A narrower underlay towards node2 (the daemon learned 1400 from ICMP fragmentation needed):
// both sides size blue's and green's packets to node2 by it (1400 less the overlay and the inner
// Ethernet header: 1350), the fast path leaving what is bigger to the pipeline, which answers or
// fragments by the same MTU. An entry whose time is up is ignored by the fast path as by the pipeline.
TEST_P(TcTenant, LearnedPathMtuTowardsAPeer) {
    ASSERT_TRUE(world_->learn_path_mtu(kNode2, 1200, true));
    const Tally before = run_table({{"green, 1450 bytes: an expired path MTU is ignored", "tap-g10",
                                     ipv4(fragment(tenant_spec("green", 10, kGreen20, 1450), kDf)), "encap"}},
                                   "expired path MTU");
    EXPECT_EQ(before.count("encap"), 1);
    ASSERT_TRUE(world_->learn_path_mtu(kNode2, 1400));
    std::vector<Case> cases;
    for (const auto& [vpc, port, to] : {std::tuple{"blue", "tap-b10", kB20}, std::tuple{"green", "tap-g10", kGreen20}})
        for (std::uint32_t total = 1348; total <= 1352; ++total)
            for (const bool df : {true, false})
                for (const std::uint8_t protocol : {kUdp, kTcp})
                    cases.push_back({std::string(vpc) + ": " + std::to_string(total) + " bytes to node2" +
                                         (df ? ", DF" : "") + (protocol == kTcp ? ", TCP" : ", UDP"),
                                     port, ipv4(fragment(tenant_spec(vpc, 10, to, total, protocol), df ? kDf : 0)),
                                     total <= 1350 ? "encap" : "punt_too_big"});
    const Tally tally = run_table(cases, "learned path MTU 1400 towards node2");
    EXPECT_EQ(tally.count("encap"), 2 * 3 * 4);
    // Local delivery has no overlay in between: unaffected.
    run_table({{"to a local endpoint, 1450 bytes", kB10Port, ipv4(blue(kB11, 1450)), "local"}}, "local");
}

// First the window of a reload that removes an endpoint: its fabric entry is erased before the
// pipeline sees the new snapshot, so the fast path punts while the pipeline still forwards. Then
// the reload itself: the endpoints removed are gone from both sides.
TEST_P(TcTenant, StaleEntries) {
    Gen g(seed_for(0x57a1e));
    run_stale_entries(*world_,
                      {.erased = {.vni = 100, .ip = htonl(kB20)},
                       .while_erased = {{"to an endpoint whose entry is already erased", kB10Port, ipv4(blue(kB20)),
                                         "punt_no_route"}},
                       .removed_by_reload = {{100, ip4(10, 0, 0, 21)}, {200, ip4(10, 0, 0, 40)}},
                       .after_reload = {{"to a remote endpoint removed by the reload", kB10Port,
                                         ipv4(blue(ip4(10, 0, 0, 21))), "punt_no_route"},
                                        {"to a local endpoint removed by the reload", "tap-g10",
                                         ipv4(tenant_spec("green", 10, ip4(10, 0, 0, 40))), "punt_no_route"},
                                        {"to a remote endpoint the reload kept", kB10Port, ipv4(blue(kB20)), "encap"}},
                       .random_after_reload = [&] { return random_tenant(g); },
                       .random_frames = 500});
}

// A GSO packet of a type bpf_skb_adjust_room will not encapsulate (-ENOTSUPP, having changed
// nothing: here a GSO packet without a type, read like a guest's UFO) is handed to the pipeline as
// it came, counted as punt_gso, and never dropped as adjust_failed; the punt device's kernel
// segments it. The same frame without GSO is encapsulated. (A tenant's own tunnel, the other
// refusal, -EALREADY, needs skb->encapsulation, which BPF_PROG_TEST_RUN cannot set:
// tests/integration/daemon_tenant_tunnel_test runs it with real tenants.)
TEST_P(TcTenant, GsoTheKernelWillNotEncapsulateIsPuntedAsItCame) {
    World& w = *world_;
    const std::uint32_t b10 = w.tenant(kB10Port);
    for (const std::uint8_t protocol : {kTcp, kUdp}) {
        const Bytes frame = ipv4(blue(kB20, 1200, protocol));
        for (const std::uint16_t headroom : {std::uint16_t{0}, std::uint16_t{ANDROMEDA_ENCAP_HEADROOM}}) {
            w.set_encap_headroom(headroom);
            const std::string context =
                std::string(protocol == kTcp ? "TCP" : "UDP") + ", encap_headroom " + std::to_string(headroom);
            EXPECT_EQ(tenant_outcome(w.run_tenant(b10, frame), frame).name, "encap") << context;
            const TenantBpf gso = w.run_tenant(b10, frame, 400);
            EXPECT_EQ(tenant_outcome(gso, frame).name, "punt_gso")
                << context << ": " << tenant_outcome(gso, frame).problem;
            EXPECT_EQ(gso.delta.drop_adjust_failed, 0u) << context;
            EXPECT_EQ(check_tenant(frame, gso, w.run_pipeline(b10, frame), w.underlay()), std::vector<std::string>{})
                << context;
        }
    }
}

// The comparison is not vacuous: real outputs of both sides, then the fast path's output or
// verdict (or the pipeline's) broken one way at a time, must each be reported.
TEST_P(TcTenant, ComparatorRejectsMutatedOutputs) {
    World& w = *world_;
    const std::uint32_t b10 = w.tenant(kB10Port);
    const auto check = [&](const Bytes& frame) {
        return
            [&w, frame](const TenantBpf& b, const PipelineOut& p) { return check_tenant(frame, b, p, w.underlay()); };
    };
    const Bytes frame = ipv4(blue(kB20, 200));
    const TenantBpf encap = w.run_tenant(b10, frame);
    const PipelineOut forwarded = w.run_pipeline(b10, frame);
    ASSERT_EQ(tenant_outcome(encap, frame).name, "encap");
    ASSERT_EQ(check_tenant(frame, encap, forwarded, w.underlay()), std::vector<std::string>{});
    ASSERT_EQ(encap.run.out.size(), frame.size() + 50);

    std::vector<Mutation<TenantBpf>> mutations;
    const std::pair<const char*, std::size_t> flipped_fields[] = {
        {"outer IPv4 header checksum", 24},
        {"outer IPv4 total length", 17},
        {"outer IPv4 flags/fragment", 20},
        {"outer IPv4 TTL", 22},
        {"outer IPv4 destination", 33},
        {"outer UDP source port", 35},
        {"outer UDP length", 39},
        {"outer UDP checksum", 41},
        {"overlay header byte 6", 48},
        {"outer destination MAC", 5},
        {"inner destination MAC", 55},
        {"inner IPv4 header checksum", 75},
        {"inner IPv4 TTL", 72},
        {"inner IPv4 payload byte 6", 90},
        {"inner IPv4 payload byte 150", 234},
    };
    for (const auto& field : flipped_fields) {
        const std::size_t at = field.second;
        mutations.push_back({field.first, [at](TenantBpf& b, PipelineOut&) { b.run.out[at] ^= 0x01; }, field.first});
    }
    const auto as_punt = [frame](TenantBpf& b) {
        b = TenantBpf{};
        b.run.retval = TC_ACT_REDIRECT;
        b.run.out = frame;
        b.delta.punt_packets = 1;
        b.delta.punt_bytes = frame.size();
        b.delta.punt_no_route = 1;
    };
    const std::uint16_t other_id = static_cast<std::uint16_t>(test_support::get16(&encap.run.out[18]) + 4321);
    const std::vector<Mutation<TenantBpf>> more = {
        {"a byte short", [](TenantBpf& b, PipelineOut&) { b.run.out.pop_back(); }, "differ at lengths"},
        {"a byte long", [](TenantBpf& b, PipelineOut&) { b.run.out.push_back(0); }, "differ at lengths"},
        // The outer ID is normalised, and only it: another ID with its checksum updated agrees,
        // another ID with the old checksum does not.
        {"another outer ID, its checksum updated",
         [&](TenantBpf& b, PipelineOut&) { set_ipv4_id(b.run.out, 14, other_id); }, ""},
        {"another outer ID, its checksum not",
         [&](TenantBpf& b, PipelineOut&) {
             test_support::put16(&b.run.out[18], static_cast<std::uint16_t>(other_id + 1));
         },
         "outer IPv4 header checksum"},
        // The verdict: a forward to the wrong place, or where the pipeline does not forward.
        {"forwarded to another port", [&](TenantBpf&, PipelineOut& p) { p.emitted[0].first = b10; },
         "the fast path encapsulated it, the pipeline"},
        {"the pipeline drops",
         [](TenantBpf&, PipelineOut& p) { p = pipeline_drop(dataplane::DropReason::spoofed_source_ip); },
         "the fast path encapsulated it, the pipeline: drop"},
        // A port-security drop the pipeline would not make, and punts.
        {"a spoof drop where the pipeline forwards",
         [](TenantBpf& b, PipelineOut&) {
             b.run.retval = TC_ACT_SHOT;
             b.delta = andromeda_fp_stats{};
             b.delta.drop_spoofed_ip = 1;
         },
         "the fast path dropped it (drop_spoofed_ip)"},
        {"a punt", [&](TenantBpf& b, PipelineOut&) { as_punt(b); }, ""},
        {"a punt that changed the frame",
         [&](TenantBpf& b, PipelineOut&) {
             as_punt(b);
             b.run.out[40] ^= 0x80;
         },
         "the punted frame was changed"},
        {"a punt of a spoofed source MAC",
         [&](TenantBpf& b, PipelineOut& p) {
             as_punt(b);
             p = pipeline_drop(dataplane::DropReason::spoofed_source_mac);
         },
         "the pipeline drops a spoofed source MAC"},
    };
    mutations.insert(mutations.end(), more.begin(), more.end());
    expect_mutations_reported(encap, forwarded, mutations, check(frame));

    // A local delivery with its checksum broken, or to another port.
    const Bytes to_local = ipv4(blue(kB11));
    const TenantBpf local = w.run_tenant(b10, to_local);
    const PipelineOut delivered = w.run_pipeline(b10, to_local);
    ASSERT_EQ(check_tenant(to_local, local, delivered, w.underlay()), std::vector<std::string>{});
    expect_mutations_reported(local, delivered,
                              {{"the IPv4 header checksum", [](TenantBpf& b, PipelineOut&) { b.run.out[25] ^= 0x01; },
                                "IPv4 header checksum"},
                               {"delivered to another port", [&](TenantBpf& b, PipelineOut&) { b.local_target = b10; },
                                "the fast path delivered it to ifindex"}},
                              check(to_local));

    // One byte over the MTU, with the fast path pretending the bound was one higher: the
    // pipeline answers (DF) or fragments, and a fast-path encapsulation of it is a disagreement.
    for (const bool df : {true, false}) {
        const Bytes big = ipv4(fragment(blue(kB20, vpc_named("blue").inner_mtu() + 1), df ? kDf : 0));
        const PipelineOut p = w.run_pipeline(b10, big);
        EXPECT_EQ(p.verdict, df ? dataplane::Verdict::reply : dataplane::Verdict::forward);
        TenantBpf fake = encap;
        fake.delta.encap_bytes = big.size();
        fake.run.out = big;
        fake.run.out.insert(fake.run.out.begin(), encap.run.out.begin(), encap.run.out.begin() + 50);
        const auto problems = check_tenant(big, fake, p, w.underlay());
        ASSERT_EQ(problems.size(), 1u) << "over the MTU, DF " << df;
        EXPECT_NE(problems[0].find("the fast path encapsulated it"), std::string::npos) << problems[0];
    }
}

// Deliberately broken bounds and entries in the maps the program reads, run through the real
// program: the differential check must catch each (and with the maps as planned, or put back,
// find nothing).
TEST_P(TcTenant, BrokenMapEntriesAreCaught) {
    World& w = *world_;
    const std::uint32_t b10 = w.tenant(kB10Port);
    const int vnis = World::fd(w.skel().maps.andromeda_vnis);
    const int peers = World::fd(w.skel().maps.andromeda_peers);
    const int ports = World::fd(w.skel().maps.andromeda_ports);
    const int fabric = World::fd(w.skel().maps.andromeda_fabric);
    const __u32 blue_vni = 100;
    const __be32 node2 = htonl(kNode2);
    const andromeda_fabric_key b11_key{.vni = 100, .ip = htonl(kB11)};
    andromeda_vni planned{};
    ASSERT_EQ(bpf_map_lookup_elem(vnis, &blue_vni, &planned), 0);
    const std::uint32_t mtu = vpc_named("blue").inner_mtu();
    ASSERT_EQ(planned.mtu, mtu);

    const Bytes over_df = ipv4(blue(kB20, mtu + 1));
    const Bytes over = ipv4(fragment(blue(kB20, mtu + 1), 0));
    const Bytes at_mtu = ipv4(fragment(blue(kB20, mtu), 0));
    const Bytes to_local = ipv4(blue(kB11));
    const Bytes to_wrong_gateway = flipped(to_local, 5, 0x01);
    const Bytes spoofed = ipv4(with(blue(kB20), [](auto& s) { s.src = kB11; }));

    const auto problems_with = [&](const Bytes& frame) {
        const TenantBpf b = w.run_tenant(b10, frame);
        return check_tenant(frame, b, w.run_pipeline(b10, frame), w.underlay());
    };
    const auto expect_agreement = [&](const char* maps) {
        for (const Bytes* frame : {&over_df, &over, &at_mtu, &to_local, &to_wrong_gateway, &spoofed})
            EXPECT_EQ(problems_with(*frame), std::vector<std::string>{}) << maps << ", " << frame->size() << " bytes";
    };
    expect_agreement("the maps as planned");

    using Break = std::function<std::unique_ptr<MapEntryOverride>()>;
    const Break mtu_one_higher = [&] {  // an off-by-one bound
        return MapEntryOverride::edited<andromeda_vni>(vnis, blue_vni, [](andromeda_vni& v) { ++v.mtu; });
    };
    const Break other_gateway_mac = [&] {  // the fast path's gateway MAC is not the pipeline's
        return MapEntryOverride::edited<andromeda_vni>(vnis, blue_vni,
                                                       [](andromeda_vni& v) { v.gateway_mac[5] ^= 0x01; });
    };
    const Break stale_next_hop = [&] {  // a next hop the pipeline does not use
        return MapEntryOverride::edited<andromeda_peer>(peers, node2, [](andromeda_peer& p) { p.mac[5] ^= 0x10; });
    };
    const Break port_with_another_ip = [&] {  // port security against another endpoint's address
        return MapEntryOverride::edited<andromeda_port>(ports, b10, [](andromeda_port& p) { p.ip = htonl(kB11); });
    };
    const Break endpoint_moved = [&] {  // an endpoint the pipeline has here, the map on node2
        return MapEntryOverride::edited<andromeda_fabric_entry>(fabric, b11_key, [](andromeda_fabric_entry& e) {
            e.local = 0;
            e.ifindex = 0;
            e.node_ip = htonl(kNode2);
        });
    };
    struct BrokenEntry {
        const char* what;
        const Break& entry;
        const char* frame_name;
        const Bytes& frame;
        std::string problem;  // empty: both sides agree
    };
    const BrokenEntry table[] = {
        {"MTU one too high", mtu_one_higher, "one byte over the MTU, DF (the pipeline answers)", over_df,
         "the fast path encapsulated it"},
        {"MTU one too high", mtu_one_higher, "one byte over the MTU (the pipeline fragments)", over,
         "the fast path encapsulated it"},
        {"MTU one too high", mtu_one_higher, "at the MTU", at_mtu, ""},
        {"another gateway MAC", other_gateway_mac, "to a MAC the pipeline does not answer", to_wrong_gateway,
         "the fast path delivered it"},
        {"a stale next hop", stale_next_hop, "at the MTU", at_mtu, "outer destination MAC"},
        {"port security with another address", port_with_another_ip, "its own traffic", at_mtu,
         "the fast path dropped it (drop_spoofed_ip)"},
        {"port security with another address", port_with_another_ip, "from a spoofed source", spoofed,
         "the fast path encapsulated it"},
        {"a local endpoint moved to node2", endpoint_moved, "to it", to_local, "the fast path encapsulated it"},
    };
    for (const BrokenEntry& row : table) {
        const auto broken = row.entry();
        ASSERT_EQ(broken->error(), "") << row.what;
        const auto problems = problems_with(row.frame);
        const std::string context = std::string(row.what) + ", " + row.frame_name + ": " + joined(problems);
        if (row.problem.empty()) {
            EXPECT_EQ(problems, std::vector<std::string>{}) << context;
        } else {
            ASSERT_EQ(problems.size(), 1u) << context;
            EXPECT_NE(problems[0].find(row.problem), std::string::npos) << context;
        }
    }
    expect_agreement("the maps put back");
}

ANDROMEDA_FOR_BOTH_ENCAPSULATIONS(TcTenant);

}  // namespace
}  // namespace andromeda::fast_path_test
