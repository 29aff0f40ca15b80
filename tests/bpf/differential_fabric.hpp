// The fabric the fast path's differential tests run on, seen from node1 (this node), and the
// frames its endpoints and peers send: tenant frames and overlay packets, built (and edited for
// the case tables) by tests/support/frame_builder.hpp, never by the code under test.
//
//   blue   VNI 100 10.0.0.0/24, MTU 1400: .10 .11 on node1, .12 on node1 without a device,
//          .20 .21 on node2, .30 on node3 (no next hop known)
//   green  VNI 200 10.0.0.0/24 (blue's addresses, another tenant), its own gateway MAC, MTU
//          1450 from the underlay: .10 .40 on node1, .20 on node2
//   grey   VNI 300 with the fast path off: .10 on node1, .20 on node2
//   red    VNI 400 with its NAT at node2: .10 on node1, .20 on node2
//   orange VNI 500 10.5.0.0/24, MTU 1400, with its NAT here (node1, address 198.51.100.1, port
//          forwards to .10 .20 .21 .30): .10 .11 on node1, .20 .21 on node2, .30 on node3
//   purple VNI 600 10.5.0.0/24 (orange's addresses), its NAT here too (198.51.100.2): .10 on
//          node1, .20 on node2
// Blue and green are dual-stack, with the same prefix fd00:0:0:1::/64 (as they share their IPv4
// CIDR): each of their endpoints has fd00:0:0:1::<its IPv4 last octet> too.
// node1 is the NAT gateway of orange and purple: its uplink is `up1`, towards a router whose MAC
// is known.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "andromeda_kern_user.h"
#include "support/frame_builder.hpp"

namespace andromeda::test_support {
// How gtest prints a test's encapsulation parameter.
void PrintTo(OverlayKind kind, std::ostream* out);
}  // namespace andromeda::test_support

namespace andromeda::fast_path_test {

using test_support::Bytes;
using test_support::Ipv4Frame;
using test_support::Mac;
using test_support::OverlayPacket;
using Encap = test_support::OverlayKind;

const char* to_string(Encap e);
std::uint16_t overlay_port(Encap e);
Encap other_encap(Encap e);

constexpr std::uint32_t ip4(std::uint32_t a, std::uint32_t b, std::uint32_t c, std::uint32_t d) {
    return a << 24 | b << 16 | c << 8 | d;
}
constexpr Mac mac_of(std::uint8_t a, std::uint8_t b) { return {2, 0, 0, 0, a, b}; }
std::string ip_text(std::uint32_t address);
std::string mac_text(const Mac& m);
std::string hex(const Bytes& b);

inline constexpr std::uint32_t kNode1 = ip4(192, 168, 1, 1);  // this node
inline constexpr std::uint32_t kNode2 = ip4(192, 168, 1, 2);  // a peer whose next hop is known
inline constexpr std::uint32_t kNode3 = ip4(192, 168, 1, 3);  // a peer whose next hop is not (yet)
inline constexpr std::uint32_t kStranger = ip4(192, 168, 1, 99);
inline constexpr Mac kUnderlayMac = mac_of(0xa1, 1);
inline constexpr Mac kNode2Mac = mac_of(0xa1, 2);
inline constexpr Mac kNode3Mac = mac_of(0xa1, 3);
inline constexpr Mac kDefaultGatewayMac = {2, 0, 0, 0, 0, 0xff};
inline constexpr Mac kBroadcastMac = test_support::kBroadcastMac;
inline constexpr std::uint32_t kUnderlayMtu = 1500;
inline constexpr std::uint32_t kHandoffCookie = 0x5eed1234;  // andromeda_fp_config.handoff_cookie
inline const std::string kPortWithoutDevice = "tap-b12";     // a local endpoint whose port does not exist
inline const std::string kUplinkName = "up1";                // node1's [node.uplink]
inline constexpr Mac kUplinkMac = mac_of(0xb1, 1);
inline constexpr Mac kUplinkRouterMac = mac_of(0xb1, 0xfe);  // the uplink's next hop

inline constexpr std::uint8_t kIcmp = test_support::protocol::kIcmp;
inline constexpr std::uint8_t kTcp = test_support::protocol::kTcp;
inline constexpr std::uint8_t kUdp = test_support::protocol::kUdp;
inline constexpr std::uint8_t kGre = 47;

struct EndpointDef {
    std::uint32_t ip;
    Mac mac;
    std::string node;
    std::string port;  // local endpoints
};

// A [[vpc.nat.forward]]: (NAT address, protocol, nat_port) -> endpoint:port.
struct ForwardDef {
    std::uint8_t protocol;  // kTcp or kUdp
    std::uint16_t nat_port;
    std::uint32_t endpoint_ip;
    std::uint16_t endpoint_port;
};

struct VpcDef {
    std::string name;
    std::uint32_t vni;
    std::uint32_t network;  // a /24
    std::uint32_t gateway;
    Mac gateway_mac;
    std::uint32_t mtu;  // 0: the default, the underlay MTU less the overlay's 50 bytes
    bool fastpath;
    std::string nat_node;  // empty: no NAT
    std::uint32_t nat_address;
    std::vector<EndpointDef> endpoints;
    std::vector<ForwardDef> forwards;

    [[nodiscard]] std::uint32_t inner_mtu() const { return mtu != 0 ? mtu : kUnderlayMtu - 50; }
};

const std::vector<VpcDef>& vpcs();
const VpcDef& vpc_named(const std::string& name);
const EndpointDef& endpoint(const std::string& vpc, std::uint32_t last_octet);
std::uint32_t node_address(const std::string& node);
Mac node_mac(const std::string& node);

using EndpointKey = std::pair<std::uint32_t, std::uint32_t>;  // (VNI, address)

// node1's node.toml for the fabric above, less the endpoints `removed` (and the port forwards,
// when `forwards` is false). With `blue_groups` (TOML: [[vpc.security_group]] tables), blue gets
// those security groups, and its endpoints join them: .10 and .12 "web", .11, .20 and .30 "app",
// .21 none (tests/bpf/policy_test.cpp).
std::string fabric_toml(Encap encap, const std::set<EndpointKey>& removed = {}, bool forwards = true,
                        const std::string& blue_groups = "");

// ---- IPv6 (blue and green) ------------------------------------------------------------------

using Ip6 = std::array<std::uint8_t, 16>;
bool dual_stack(const VpcDef& v);
// fd00:0:0:1::<last_octet>: a dual-stack VPC's endpoint with that IPv4 last octet, or (given
// another number) an address of the prefix no endpoint has.
Ip6 ip6_of(std::uint32_t last_octet);
// The EUI-64 link-local address of `mac` (what a Linux tenant takes by default).
Ip6 link_local_of(const Mac& mac);
std::string ip6_text(const Ip6& a);

// An IPv6 packet in an Ethernet frame: no extension headers, `payload` bytes after the fixed
// header (UDP 5000 -> 6000 with its length, TCP 40000 -> 80 with `tcp_flags` and data offset 5,
// unless the ports are given; ICMPv6 of `icmp_type` code 0, or opaque bytes for another next
// header), checksums filled in.
struct Ipv6Spec {
    Mac src_mac{};
    Mac dst_mac{};
    Ip6 src{};
    Ip6 dst{};
    std::uint8_t next_header = kUdp;
    std::size_t payload = 60;
    std::uint32_t flow_label = 0;
    std::uint8_t hop_limit = 64;
    std::uint8_t icmp_type = 128;  // echo request
    std::optional<std::uint16_t> src_port, dst_port;
    std::uint8_t tcp_flags = 0x10;  // ACK
};
inline constexpr std::uint8_t kIcmpv6 = 58;
Bytes ipv6(const Ipv6Spec& s);

// From `vpc`'s endpoint `from` (last octet) to fd00:0:0:1::<to>, to the VPC's gateway MAC.
Ipv6Spec tenant6_spec(const std::string& vpc, std::uint32_t from, std::uint32_t to, std::size_t payload = 60,
                      std::uint8_t next_header = kUdp);
// From `sender`'s node to node1, `sender` -> `receiver` (last octets) of `vpc` over IPv6, the
// inner frame as the sending node encapsulates it (from the sender's MAC to the receiver's).
OverlayPacket overlay6_spec(Encap kind, const std::string& vpc, std::uint32_t sender, std::uint32_t receiver,
                            std::size_t payload = 60, std::uint8_t next_header = kUdp);

// ---- an IPv6 underlay ----------------------------------------------------------------------
// The same fabric with its nodes at fd00:1::1 (this node), ::2 and ::3 (the underlay of
// tests/unit/dataplane's with_ipv6_underlay); the World made from such a fabric runs over IPv6.

inline constexpr Ip6 kNode1Ip6 = {0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
inline constexpr Ip6 kNode2Ip6 = {0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
inline constexpr Ip6 kNode3Ip6 = {0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3};
inline constexpr Ip6 kStrangerIp6 = {0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x99};
Ip6 node_address6(const std::string& node);

// `toml` (fabric_toml's) with every node's address replaced by its IPv6 one.
std::string with_ipv6_underlay(std::string toml);

// The UDP checksum of the datagram at `udp` (its length field's bytes) under the IPv6
// pseudo-header of the IPv6 header at `ip6` (RFC 8200 section 8.1), its checksum field counted as
// 0, a computed 0 given as 0xffff.
std::uint16_t udp6_checksum(const std::uint8_t* ip6, const std::uint8_t* udp);

// `s` (its MACs, UDP ports, overlay header and inner frame; its IPv4 fields ignored) as an overlay
// packet over IPv6 from `src` to `dst`: a fixed IPv6 header with `flow_label`, hop limit 64, the
// UDP checksum right (udp6_checksum) unless `checksum` is false (then 0).
Bytes overlay6(const OverlayPacket& s, const Ip6& src, const Ip6& dst, std::uint32_t flow_label = 0,
               bool checksum = true);

// ---- frames ------------------------------------------------------------------------------------

// An IPv4 packet with DF, `total` bytes of IPv4, in an Ethernet frame.
Ipv4Frame frame_spec(const Mac& src_mac, std::uint32_t src, const Mac& dst_mac, std::uint32_t dst, std::size_t total,
                     std::uint8_t protocol = kUdp);

// A tenant frame from `from` (the VPC's endpoint with that last octet) to `to_ip`, to the VPC's
// gateway MAC.
Ipv4Frame tenant_spec(const std::string& vpc, std::uint32_t from, std::uint32_t to_ip, std::size_t total = 100,
                      std::uint8_t protocol = kUdp);

// An overlay packet of VNI `vni` from `node` to node1 (the encapsulation's port), carrying `inner`.
OverlayPacket overlay_from(Encap kind, const std::string& node, std::uint32_t vni, Bytes inner);

// An overlay packet from `sender`'s node to node1, carrying `sender` -> `receiver` (the VPC's
// endpoints with those last octets), `total` bytes of inner IPv4.
OverlayPacket overlay_spec(Encap kind, const std::string& vpc, std::uint32_t sender, std::uint32_t receiver,
                           std::size_t total = 100, std::uint8_t protocol = kUdp);

// Ethernet with `ethertype` and `length` bytes of payload (byte i is fill + i); for IPv6 with
// room for it, a header with no next header in front.
Bytes ethertype_frame(const Mac& src, const Mac& dst, std::uint16_t ethertype, std::size_t length, std::uint8_t fill);

// An Ethernet/IPv4 ARP packet, target MAC zero.
Bytes arp(const Mac& eth_src, const Mac& eth_dst, std::uint16_t operation, const Mac& sender_mac,
          std::uint32_t sender_ip, std::uint32_t target_ip);

// A copy with the IPv4 flags and fragment offset of `field` (DF 0x4000, MF 0x2000, the offset in
// 8-byte units); a later fragment of an IPv4 packet carries no transport header.
inline constexpr std::uint16_t kDf = 0x4000, kMf = 0x2000;
template <class Packet>
Packet fragment(Packet p, std::uint16_t field) {
    p.dont_fragment = (field & kDf) != 0;
    p.more_fragments = (field & kMf) != 0;
    p.fragment_offset = field & 0x1fff;
    if constexpr (requires { p.transport; }) p.transport = p.fragment_offset == 0;
    return p;
}

// `n` bytes of IPv4 options, all NOPs.
inline Bytes nop_options(std::size_t n) { return Bytes(n, 1); }

inline Bytes ipv4(const Ipv4Frame& s) { return test_support::ipv4_frame(s); }
inline Bytes overlay(const OverlayPacket& s) { return test_support::overlay_frame(s); }

using test_support::flipped;
using test_support::Ipv4Checksum;
using test_support::resized;
using test_support::tagged;
using test_support::with;
using test_support::with_byte;
using test_support::with_ipv4_total_length;
using test_support::with_udp_length;

}  // namespace andromeda::fast_path_test
