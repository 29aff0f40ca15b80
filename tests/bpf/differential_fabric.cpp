#include "differential_fabric.hpp"

#include <cstdlib>

#include "support/fabric_builder.hpp"

namespace andromeda::test_support {
void PrintTo(OverlayKind kind, std::ostream* out) { *out << fast_path_test::to_string(kind); }
}  // namespace andromeda::test_support

namespace andromeda::fast_path_test {

using test_support::put16;

const char* to_string(Encap e) { return e == Encap::vxlan ? "vxlan" : "andromeda"; }
std::uint16_t overlay_port(Encap e) { return e == Encap::vxlan ? ANDROMEDA_VXLAN_PORT : ANDROMEDA_OVERLAY_PORT; }
Encap other_encap(Encap e) { return e == Encap::vxlan ? Encap::andromeda : Encap::vxlan; }

std::string hex(const Bytes& b) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string s;
    s.reserve(b.size() * 2);
    for (const std::uint8_t x : b) {
        s += kDigits[x >> 4];
        s += kDigits[x & 15];
    }
    return s;
}

std::string ip_text(std::uint32_t a) {
    return std::to_string(a >> 24) + "." + std::to_string(a >> 16 & 255) + "." + std::to_string(a >> 8 & 255) + "." +
           std::to_string(a & 255);
}

std::string mac_text(const Mac& m) {
    std::string s;
    for (std::size_t i = 0; i < 6; ++i) s += (i ? ":" : "") + hex(Bytes{m[i]});
    return s;
}

// One VPC to a line, its endpoints after it.
// clang-format off
const std::vector<VpcDef>& vpcs() {
    static const std::vector<VpcDef> v = {
        {"blue", 100, ip4(10, 0, 0, 0), ip4(10, 0, 0, 1), kDefaultGatewayMac, 1400, true, "", 0,
         {{ip4(10, 0, 0, 10), mac_of(0, 0x10), "node1", "tap-b10"},
          {ip4(10, 0, 0, 11), mac_of(0, 0x11), "node1", "tap-b11"},
          {ip4(10, 0, 0, 12), mac_of(0, 0x12), "node1", kPortWithoutDevice},
          {ip4(10, 0, 0, 20), mac_of(0, 0x20), "node2", ""},
          {ip4(10, 0, 0, 21), mac_of(0, 0x21), "node2", ""},
          {ip4(10, 0, 0, 30), mac_of(0, 0x30), "node3", ""}},
         {}},
        {"green", 200, ip4(10, 0, 0, 0), ip4(10, 0, 0, 1), mac_of(1, 0xfe), 0, true, "", 0,
         {{ip4(10, 0, 0, 10), mac_of(1, 0x10), "node1", "tap-g10"},
          {ip4(10, 0, 0, 20), mac_of(1, 0x20), "node2", ""},
          {ip4(10, 0, 0, 40), mac_of(1, 0x40), "node1", "tap-g40"}},
         {}},
        {"grey", 300, ip4(10, 2, 0, 0), ip4(10, 2, 0, 1), kDefaultGatewayMac, 0, false, "", 0,
         {{ip4(10, 2, 0, 10), mac_of(2, 0x10), "node1", "tap-y10"}, {ip4(10, 2, 0, 20), mac_of(2, 0x20), "node2", ""}},
         {}},
        {"red", 400, ip4(10, 3, 0, 0), ip4(10, 3, 0, 1), kDefaultGatewayMac, 0, true, "node2", ip4(203, 0, 113, 20),
         {{ip4(10, 3, 0, 10), mac_of(3, 0x10), "node1", "tap-r10"}, {ip4(10, 3, 0, 20), mac_of(3, 0x20), "node2", ""}},
         {}},
        {"orange", 500, ip4(10, 5, 0, 0), ip4(10, 5, 0, 1), mac_of(5, 0xfe), 1400, true, "node1", ip4(198, 51, 100, 1),
         {{ip4(10, 5, 0, 10), mac_of(5, 0x10), "node1", "tap-o10"},
          {ip4(10, 5, 0, 11), mac_of(5, 0x11), "node1", "tap-o11"},
          {ip4(10, 5, 0, 20), mac_of(5, 0x20), "node2", ""},
          {ip4(10, 5, 0, 21), mac_of(5, 0x21), "node2", ""},
          {ip4(10, 5, 0, 30), mac_of(5, 0x30), "node3", ""}},
         {{kTcp, 8080, ip4(10, 5, 0, 10), 80},
          {kUdp, 5353, ip4(10, 5, 0, 20), 53},
          {kTcp, 2222, ip4(10, 5, 0, 21), 22},
          {kUdp, 6000, ip4(10, 5, 0, 30), 6000}}},
        {"purple", 600, ip4(10, 5, 0, 0), ip4(10, 5, 0, 1), kDefaultGatewayMac, 0, true, "node1", ip4(198, 51, 100, 2),
         {{ip4(10, 5, 0, 10), mac_of(6, 0x10), "node1", "tap-p10"}, {ip4(10, 5, 0, 20), mac_of(6, 0x20), "node2", ""}},
         {}},
    };
    return v;
}
// clang-format on

const VpcDef& vpc_named(const std::string& name) {
    for (const VpcDef& v : vpcs())
        if (v.name == name) return v;
    std::abort();
}

const EndpointDef& endpoint(const std::string& vpc, std::uint32_t last_octet) {
    for (const EndpointDef& e : vpc_named(vpc).endpoints)
        if ((e.ip & 255) == last_octet) return e;
    std::abort();
}

std::uint32_t node_address(const std::string& node) {
    return node == "node1" ? kNode1 : node == "node2" ? kNode2 : kNode3;
}
Mac node_mac(const std::string& node) {
    return node == "node1" ? kUnderlayMac : node == "node2" ? kNode2Mac : kNode3Mac;
}

namespace {

// Blue's endpoints' groups when it has security groups (fabric_toml's `blue_groups`).
std::string blue_groups_of(std::uint32_t ip) {
    switch (ip & 255) {
        case 10:
        case 12: return "groups = [\"web\"]\n";
        case 11:
        case 20:
        case 30: return "groups = [\"app\"]\n";
        default: return "";
    }
}

}  // namespace

std::string fabric_toml(Encap encap, const std::set<EndpointKey>& removed, bool forwards, const std::string& blue_groups) {
    test_support::FabricBuilder b("node1", ip_text(kNode1));
    if (encap == Encap::vxlan) b.node_key("encap = \"vxlan\"");
    b.uplink(kUplinkName);
    for (const char* node : {"node1", "node2", "node3"}) b.peer(node, ip_text(node_address(node)));
    for (const VpcDef& v : vpcs()) {
        b.vpc(v.name, v.vni, ip_text(v.network) + "/24", ip_text(v.gateway));
        if (v.gateway_mac != kDefaultGatewayMac) b.vpc_key("gateway_mac = \"" + mac_text(v.gateway_mac) + "\"");
        if (v.mtu != 0) b.vpc_key("mtu = " + std::to_string(v.mtu));
        if (!v.fastpath) b.vpc_key("fastpath = false");
        if (dual_stack(v)) b.vpc_key("ipv6_prefix = \"fd00:0:0:1::/64\"");  // before any table
        const bool groups = v.name == "blue" && !blue_groups.empty();
        if (groups) b.vpc_key(blue_groups);
        std::string forward_tables;
        for (const ForwardDef& f : forwards ? v.forwards : std::vector<ForwardDef>{})
            forward_tables += "\n[[vpc.nat.forward]]\nprotocol = \"" + std::string(f.protocol == kTcp ? "tcp" : "udp") +
                              "\"\nnat_port = " + std::to_string(f.nat_port) + "\nto = \"" + ip_text(f.endpoint_ip) +
                              ":" + std::to_string(f.endpoint_port) + "\"\n";
        if (!v.nat_node.empty()) b.nat(v.nat_node, ip_text(v.nat_address), forward_tables);
        for (const EndpointDef& e : v.endpoints)
            if (removed.count({v.vni, e.ip}) == 0)
                b.endpoint(ip_text(e.ip), mac_text(e.mac), e.node, e.port,
                           (groups ? blue_groups_of(e.ip) : "") +
                               (dual_stack(v) ? "ipv6 = \"" + ip6_text(ip6_of(e.ip & 255)) + "\"\n" : ""));
    }
    return b.toml();
}

// ---- frames ------------------------------------------------------------------------------------

Ipv4Frame frame_spec(const Mac& src_mac, std::uint32_t src, const Mac& dst_mac, std::uint32_t dst, std::size_t total,
                     std::uint8_t protocol) {
    return {.src_mac = src_mac,
            .dst_mac = dst_mac,
            .src = src,
            .dst = dst,
            .protocol = protocol,
            .dont_fragment = true,
            .total_length = total};
}

Ipv4Frame tenant_spec(const std::string& vpc, std::uint32_t from, std::uint32_t to_ip, std::size_t total,
                      std::uint8_t protocol) {
    const EndpointDef& e = endpoint(vpc, from);
    return frame_spec(e.mac, e.ip, vpc_named(vpc).gateway_mac, to_ip, total, protocol);
}

OverlayPacket overlay_from(Encap kind, const std::string& node, std::uint32_t vni, Bytes inner) {
    OverlayPacket s;
    s.kind = kind;
    s.src_mac = node_mac(node);
    s.dst_mac = kUnderlayMac;
    s.src = node_address(node);
    s.dst = kNode1;
    s.dst_port = overlay_port(kind);
    s.vni = vni;
    s.inner = std::move(inner);
    return s;
}

OverlayPacket overlay_spec(Encap kind, const std::string& vpc, std::uint32_t sender, std::uint32_t receiver,
                           std::size_t total, std::uint8_t protocol) {
    const EndpointDef& from = endpoint(vpc, sender);
    const EndpointDef& to = endpoint(vpc, receiver);
    return overlay_from(kind, from.node, vpc_named(vpc).vni,
                        ipv4(frame_spec(from.mac, from.ip, to.mac, to.ip, total, protocol)));
}

bool dual_stack(const VpcDef& v) { return v.name == "blue" || v.name == "green"; }

Ip6 ip6_of(std::uint32_t last_octet) {
    Ip6 a{0xfd, 0, 0, 0, 0, 0, 0, 1};
    a[14] = static_cast<std::uint8_t>(last_octet >> 8);
    a[15] = static_cast<std::uint8_t>(last_octet);
    return a;
}

Ip6 link_local_of(const Mac& mac) {
    return {0xfe, 0x80, 0, 0, 0, 0, 0, 0, static_cast<std::uint8_t>(mac[0] ^ 2), mac[1], mac[2], 0xff, 0xfe,
            mac[3], mac[4], mac[5]};
}

std::string ip6_text(const Ip6& a) {
    std::string s;
    for (std::size_t i = 0; i < 16; i += 2) s += (i ? ":" : "") + hex(Bytes{a[i], a[i + 1]});
    return s;
}

Bytes ipv6(const Ipv6Spec& s) {
    Bytes f = test_support::ethernet_frame(s.src_mac, s.dst_mac, 0x86dd, 40 + s.payload);
    std::uint8_t* ip = f.data() + 14;
    test_support::put32(ip, 6u << 28 | (s.flow_label & 0xfffff));
    put16(ip + 4, static_cast<std::uint16_t>(s.payload));
    ip[6] = s.next_header;
    ip[7] = s.hop_limit;
    std::copy(s.src.begin(), s.src.end(), ip + 8);
    std::copy(s.dst.begin(), s.dst.end(), ip + 24);
    std::uint8_t* l4 = ip + 40;
    for (std::size_t i = 0; i < s.payload; ++i) l4[i] = static_cast<std::uint8_t>(0x30 + i);
    std::size_t checksum_at = 0;
    if (s.next_header == kUdp && s.payload >= 8) {
        put16(l4, s.src_port.value_or(5000));
        put16(l4 + 2, s.dst_port.value_or(6000));
        put16(l4 + 4, static_cast<std::uint16_t>(s.payload));
        checksum_at = 6;
    } else if (s.next_header == kTcp && s.payload >= 20) {
        put16(l4, s.src_port.value_or(40000));
        put16(l4 + 2, s.dst_port.value_or(80));
        test_support::put32(l4 + 4, 1000);
        test_support::put32(l4 + 8, 2000);
        l4[12] = 5 << 4;
        l4[13] = s.tcp_flags;
        put16(l4 + 14, 64000);
        put16(l4 + 18, 0);
        checksum_at = 16;
    } else if (s.next_header == kIcmpv6 && s.payload >= 8) {
        l4[0] = s.icmp_type;
        l4[1] = 0;
        checksum_at = 2;
    } else {
        return f;
    }
    put16(l4 + checksum_at, 0);
    const std::uint32_t pseudo = test_support::ones_sum(ip + 8, 32) + s.next_header + static_cast<std::uint32_t>(s.payload);
    const std::uint16_t check = test_support::checksum_of(test_support::ones_sum(l4, s.payload, pseudo));
    put16(l4 + checksum_at, check == 0 && s.next_header == kUdp ? 0xffff : check);
    return f;
}

Ipv6Spec tenant6_spec(const std::string& vpc, std::uint32_t from, std::uint32_t to, std::size_t payload,
                      std::uint8_t next_header) {
    Ipv6Spec s;
    s.src_mac = endpoint(vpc, from).mac;
    s.dst_mac = vpc_named(vpc).gateway_mac;
    s.src = ip6_of(from);
    s.dst = ip6_of(to);
    s.payload = payload;
    s.next_header = next_header;
    s.flow_label = 0x12345;
    return s;
}

OverlayPacket overlay6_spec(Encap kind, const std::string& vpc, std::uint32_t sender, std::uint32_t receiver,
                            std::size_t payload, std::uint8_t next_header) {
    Ipv6Spec s = tenant6_spec(vpc, sender, receiver, payload, next_header);
    s.dst_mac = endpoint(vpc, receiver).mac;
    return overlay_from(kind, endpoint(vpc, sender).node, vpc_named(vpc).vni, ipv6(s));
}

Ip6 node_address6(const std::string& node) {
    return node == "node1" ? kNode1Ip6 : node == "node2" ? kNode2Ip6 : kNode3Ip6;
}

std::string with_ipv6_underlay(std::string toml) {
    for (const char* node : {"node1", "node2", "node3"}) {
        const std::string from = "\"" + ip_text(node_address(node)) + "\"";
        const std::string to = "\"fd00:1::" + std::string(1, node[4]) + "\"";
        for (std::size_t at = toml.find(from); at != std::string::npos; at = toml.find(from, at + to.size()))
            toml.replace(at, from.size(), to);
    }
    return toml;
}

std::uint16_t udp6_checksum(const std::uint8_t* ip6, const std::uint8_t* udp) {
    const std::uint16_t length = test_support::get16(udp + 4);
    Bytes datagram(udp, udp + length);
    datagram[6] = datagram[7] = 0;
    const std::uint32_t pseudo = test_support::ones_sum(ip6 + 8, 32) + length + kUdp;
    const std::uint16_t sum = test_support::checksum_of(test_support::ones_sum(datagram.data(), length, pseudo));
    return sum == 0 ? 0xffff : sum;
}

Bytes overlay6(const OverlayPacket& s, const Ip6& src, const Ip6& dst, std::uint32_t flow_label, bool checksum) {
    OverlayPacket plain = s;
    plain.options.clear();
    plain.udp_checksum = false;
    const Bytes v4 = test_support::overlay_frame(plain);
    const std::size_t udp_length = v4.size() - 34;
    Bytes f = test_support::ethernet_frame(s.src_mac, s.dst_mac, 0x86dd, 40 + udp_length);
    std::uint8_t* ip = f.data() + 14;
    test_support::put32(ip, 6u << 28 | (flow_label & 0xfffff));
    put16(ip + 4, static_cast<std::uint16_t>(udp_length));
    ip[6] = kUdp;
    ip[7] = 64;
    std::copy(src.begin(), src.end(), ip + 8);
    std::copy(dst.begin(), dst.end(), ip + 24);
    std::copy(v4.begin() + 34, v4.end(), ip + 40);
    if (checksum) put16(ip + 46, udp6_checksum(ip, ip + 40));
    return f;
}

Bytes ethertype_frame(const Mac& src, const Mac& dst, std::uint16_t ethertype, std::size_t length, std::uint8_t fill) {
    Bytes f = test_support::ethernet_frame(src, dst, ethertype, length);
    for (std::size_t i = 0; i < length; ++i) f[14 + i] = static_cast<std::uint8_t>(fill + i);
    if (ethertype == 0x86dd && length >= 40) {
        f[14] = 0x60;
        put16(&f[18], static_cast<std::uint16_t>(length - 40));
        f[20] = 59;  // no next header
        f[21] = 64;
    }
    return f;
}

Bytes arp(const Mac& eth_src, const Mac& eth_dst, std::uint16_t operation, const Mac& sender_mac,
          std::uint32_t sender_ip, std::uint32_t target_ip) {
    return test_support::arp_frame(eth_src, eth_dst, {operation, sender_mac, sender_ip, Mac{}, target_ip});
}

}  // namespace andromeda::fast_path_test
