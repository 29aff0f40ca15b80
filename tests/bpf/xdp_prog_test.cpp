// The XDP prefilter run through BPF_PROG_TEST_RUN: tables of {description, port role, input
// packet, expected verdict, expected counter}, checked against the per-CPU stats map (that counter
// and rx_packets up by one, every other one unchanged), in three setups: the Andromeda
// encapsulation with no AF_XDP socket bound, VXLAN, and an AF_XDP socket bound where steered
// traffic goes; each on an IPv4 underlay (the node's address in andromeda_fp_config) and on an
// IPv6 one (underlay_ip 0 there, as andromedad writes it), where IPv6 UDP to the overlay port and
// Packet Too Big about it are the pipeline's and every other IPv6 packet the host's.
//
// The test process moves into a network namespace of its own first, so the ifindex it hands
// the kernel (the namespace's loopback) and the AF_XDP socket it binds belong to no one else.
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xdp/xsk.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "andromeda_kern_user.h"
#include "andromeda_xdp.skel.h"
#include "io/bpf/xdp_stats.hpp"
#include "support/frame_builder.hpp"
#include "support/icmpv6_frame_builder.hpp"
#include "support/root.hpp"
#include "support/xdp_skeleton.hpp"

namespace {

namespace ts = andromeda::test_support;
using ts::Bytes;
using ts::Mac;

constexpr std::uint32_t kLoopbackIfindex = 1;  // in a fresh namespace, lo is always 1
constexpr std::uint32_t kPeerIp = 0xc0a80101;  // 192.168.1.1
constexpr std::uint32_t kLocalIp = 0xc0a80102;
constexpr std::uint32_t kNatIp = 0xcb007101;  // 203.0.113.1
constexpr std::uint32_t kVni = 100;
constexpr std::uint8_t kSlot = 3;
constexpr Mac kTenantMac = {2, 0, 0, 0, 0, 0x0a};
constexpr Mac kOtherMac = {2, 0, 0, 0, 0, 0x0b};
// The IPv6 underlay's peer and this node.
constexpr ts::Ipv6Address kPeerIp6 = {0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};   // fd00:1::1
constexpr ts::Ipv6Address kLocalIp6 = {0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};  // fd00:1::2

using andromeda::testing::enter_private_netns;
using andromeda::testing::Skel;

Skel load(std::uint16_t overlay_port, std::uint32_t encap) {
    Skel skel(andromeda_xdp::open());
    if (!skel) return nullptr;
    skel->rodata->overlay_port = overlay_port;
    skel->rodata->encap_kind = encap;
    if (andromeda_xdp::load(skel.get()) != 0) return nullptr;
    return skel;
}

void set_port(const andromeda_xdp* skel, std::uint32_t role) {
    andromeda_port port{};
    port.role = role;
    port.slot = kSlot;
    port.vni = kVni;
    port.ip = htonl(0x0a00000a);
    std::copy(kTenantMac.begin(), kTenantMac.end(), port.mac);
    ASSERT_EQ(bpf_map_update_elem(bpf_map__fd(skel->maps.andromeda_ports), &kLoopbackIfindex, &port, BPF_ANY), 0);
}

// `underlay_ip` (host order) is the node's address as andromedad writes it into the fast path's
// config: an IPv4 underlay's, or 0 on an IPv6 underlay.
void add_fabric(const andromeda_xdp* skel, std::uint32_t underlay_ip, bool write_config = true) {
    const __be32 peer = htonl(kPeerIp);
    andromeda_peer p{};
    p.node_id = 7;
    ASSERT_EQ(bpf_map_update_elem(bpf_map__fd(skel->maps.andromeda_peers), &peer, &p, BPF_ANY), 0);
    andromeda_vni v{};
    v.vpc_id = 1;
    v.mtu = 1450;
    ASSERT_EQ(bpf_map_update_elem(bpf_map__fd(skel->maps.andromeda_vnis), &kVni, &v, BPF_ANY), 0);
    const __be32 nat = htonl(kNatIp);
    const std::uint32_t nat_vni = kVni;
    ASSERT_EQ(bpf_map_update_elem(bpf_map__fd(skel->maps.andromeda_nat_addrs), &nat, &nat_vni, BPF_ANY), 0);
    // The node's address, as andromedad writes it whether or not the fast path is on.
    if (!write_config) return;
    andromeda_fp_config config{};
    config.underlay_ip = htonl(underlay_ip);
    config.underlay_mtu = 1500;
    const std::uint32_t zero = 0;
    ASSERT_EQ(bpf_map_update_elem(bpf_map__fd(skel->maps.andromeda_fp_config), &zero, &config, BPF_ANY), 0);
}

// An overlay packet (src -> dst, UDP to `dport`) for kVni carrying a 14-byte inner Ethernet
// header and 20 bytes; to any other port it is plain UDP to the host.
Bytes underlay_udp(std::uint16_t dport, std::uint32_t src = kPeerIp, std::uint32_t dst = kLocalIp,
                   ts::OverlayKind kind = ts::OverlayKind::andromeda) {
    ts::OverlayPacket s;
    s.kind = kind;
    s.src_mac = {2, 0, 0, 0, 0xa1, 1};
    s.dst_mac = {2, 0, 0, 0, 0xa1, 2};
    s.src = src;
    s.dst = dst;
    s.src_port = 50000;
    s.dst_port = dport;
    s.vni = kVni;
    s.inner = Bytes(14 + 20, 0);
    return ts::overlay_frame(s);
}

enum class Ipv6Extension { none, hop_by_hop, fragment };

// underlay_udp()'s UDP datagram over an IPv6 underlay, kPeerIp6 -> kLocalIp6, with its checksum
// (RFC 8200 8.1); `extension` (naming UDP as its next header) between the IPv6 and UDP headers.
Bytes underlay6_udp(std::uint16_t dport, ts::OverlayKind kind = ts::OverlayKind::andromeda,
                    Ipv6Extension extension = Ipv6Extension::none) {
    const Bytes v4 = underlay_udp(dport, kPeerIp, kLocalIp, kind);
    Bytes udp(v4.begin() + 14 + 20, v4.end());
    Bytes ext;
    std::uint8_t next_header = ts::protocol::kUdp;
    if (extension == Ipv6Extension::hop_by_hop) {
        ext = {ts::protocol::kUdp, 0, 1, 4, 0, 0, 0, 0};  // 8 bytes: a PadN option of 4
        next_header = 0;
    } else if (extension == Ipv6Extension::fragment) {
        ext = {ts::protocol::kUdp, 0, 0, 0, 0x12, 0x34, 0x56, 0x78};  // an atomic fragment: offset 0, M clear
        next_header = 44;
    }
    Bytes f(v4.begin(), v4.begin() + 14);  // the MACs, and the ethertype rewritten
    ts::put16(&f[12], 0x86dd);
    f.resize(14 + 40, 0);
    std::uint8_t* ip = f.data() + 14;
    ip[0] = 0x60;
    ts::put16(ip + 4, static_cast<std::uint16_t>(ext.size() + udp.size()));
    ip[6] = next_header;
    ip[7] = 64;
    std::copy(kPeerIp6.begin(), kPeerIp6.end(), ip + 8);
    std::copy(kLocalIp6.begin(), kLocalIp6.end(), ip + 24);
    const std::uint32_t pseudo = ts::ones_sum(ip + 8, 32) + ts::protocol::kUdp + static_cast<std::uint32_t>(udp.size());
    ts::put16(&udp[6], 0);
    const std::uint16_t check = ts::checksum_of(ts::ones_sum(udp.data(), udp.size(), pseudo));
    ts::put16(&udp[6], check == 0 ? 0xffff : check);
    f.insert(f.end(), ext.begin(), ext.end());
    f.insert(f.end(), udp.begin(), udp.end());
    return f;
}

// A peer's Neighbor Solicitation for this node's IPv6 address, to its solicited-node group.
Bytes neighbor_solicitation() {
    ts::Icmpv6Frame s;
    s.src_mac = {2, 0, 0, 0, 0xa1, 1};
    s.dst_mac = ts::multicast_mac(ts::solicited_node(kLocalIp6));
    s.src = kPeerIp6;
    s.dst = ts::solicited_node(kLocalIp6);
    s.type = ts::icmpv6::kNeighborSolicitation;
    s.body = ts::ns_body(kLocalIp6, ts::link_layer_option(1, s.src_mac));
    return ts::icmpv6_frame(s);
}

// A router's ICMPv6 (type, code) to this node about `offending` (an Ethernet frame over IPv6),
// quoting its IPv6 packet: Packet Too Big, MTU 1400, by default. Only the quote's IPv6 and UDP
// headers matter to the prefilter; the pipeline checks the rest (the addresses, the checksum).
Bytes icmp6_about(const Bytes& offending, std::uint8_t type = 2, std::uint8_t code = 0) {
    ts::Icmpv6Frame s;
    s.src_mac = {2, 0, 0, 0, 0xa1, 0xfe};
    s.dst_mac = {2, 0, 0, 0, 0xa1, 2};
    s.src = kPeerIp6;
    s.dst = kLocalIp6;
    s.hop_limit = 64;
    s.type = type;
    s.code = code;
    s.body = {0, 0, 0x05, 0x78};  // the MTU, 1400
    s.body.insert(s.body.end(), offending.begin() + 14, offending.end());
    return ts::icmpv6_frame(s);
}

// A tenant's UDP frame to 8.8.8.8 from `src_mac`.
Bytes tenant_frame(const Mac& src_mac) {
    Bytes f = underlay_udp(53, 0x0a00000a, 0x08080808);
    std::copy(src_mac.begin(), src_mac.end(), f.begin() + 6);
    return f;
}

// ICMP (type, code) from a router to this node about `offending` (an Ethernet frame), quoting its
// IPv4 header and 8 bytes, as RFC 792 asks: "fragmentation needed", next-hop MTU 1400, by default.
Bytes icmp_about(const Bytes& offending, std::uint8_t type = 3, std::uint8_t code = 4) {
    Bytes f(offending.begin(), offending.begin() + 14);
    std::swap_ranges(f.begin(), f.begin() + 6, f.begin() + 6);
    const Bytes ip = {0x45, 0, 0, 56, 0, 1, 0, 0, 64, 1, 0, 0, 10, 10, 10, 1, 0, 0, 0, 0};
    f.insert(f.end(), ip.begin(), ip.end());
    const std::uint32_t local = htonl(kLocalIp);
    std::memcpy(f.data() + 14 + 16, &local, 4);
    const Bytes icmp = {type, code, 0, 0, 0, 0, 0x05, 0x78};
    f.insert(f.end(), icmp.begin(), icmp.end());
    f.insert(f.end(), offending.begin() + 14, offending.begin() + 14 + 28);
    return f;
}

struct Fixture {
    std::string description;
    std::uint32_t role;  // 0: port not in the port map
    Bytes input;
    std::uint32_t verdict;
    __u64 andromeda_xdp_stats::*counter;
};

// The Andromeda encapsulation, no AF_XDP socket bound: every verdict and drop reason.
std::vector<Fixture> andromeda_fixtures() {
    const Bytes overlay = underlay_udp(ANDROMEDA_OVERLAY_PORT);
    return {
        {"frame on an interface that is no port passes", 0, underlay_udp(22), XDP_PASS,
         &andromeda_xdp_stats::pass_unknown_port},
        {"underlay: host UDP (not the overlay port) passes", ANDROMEDA_PORT_UNDERLAY, underlay_udp(22), XDP_PASS,
         &andromeda_xdp_stats::pass_host},
        {"underlay: ARP passes to the kernel", ANDROMEDA_PORT_UNDERLAY,
         ts::arp_request(Mac{2, 0, 0, 0, 0xa1, 1}, kPeerIp, kLocalIp), XDP_PASS, &andromeda_xdp_stats::pass_host},
        {"underlay: overlay packet with no socket bound is dropped", ANDROMEDA_PORT_UNDERLAY, overlay, XDP_DROP,
         &andromeda_xdp_stats::drop_no_socket},
        {"underlay: overlay in an 802.1Q tag is recognised", ANDROMEDA_PORT_UNDERLAY, ts::tagged(overlay, 0x8100, 10),
         XDP_DROP, &andromeda_xdp_stats::drop_no_socket},
        {"underlay: IPv4 cut short is dropped", ANDROMEDA_PORT_UNDERLAY, ts::resized(overlay, 14 + 12), XDP_DROP,
         &andromeda_xdp_stats::drop_truncated},
        {"underlay: IHL below 5 is dropped", ANDROMEDA_PORT_UNDERLAY, ts::with_byte(overlay, 14, 0x44), XDP_DROP,
         &andromeda_xdp_stats::drop_bad_ip_header},
        {"underlay: fragmented overlay packet is dropped", ANDROMEDA_PORT_UNDERLAY,
         ts::with_byte(overlay, 14 + 6, 0x20), XDP_DROP, &andromeda_xdp_stats::drop_overlay_fragment},
        {"underlay: overlay from an unknown peer is dropped", ANDROMEDA_PORT_UNDERLAY,
         underlay_udp(ANDROMEDA_OVERLAY_PORT, 0xc0a80163), XDP_DROP, &andromeda_xdp_stats::drop_unknown_peer},
        {"underlay: overlay version 2 is dropped", ANDROMEDA_PORT_UNDERLAY, ts::with_byte(overlay, 42, 0x20), XDP_DROP,
         &andromeda_xdp_stats::drop_bad_overlay_header},
        {"underlay: unknown VNI is dropped", ANDROMEDA_PORT_UNDERLAY, ts::with_byte(overlay, 42 + 6, 101), XDP_DROP,
         &andromeda_xdp_stats::drop_unknown_vni},
        {"underlay: overlay without an inner Ethernet header is dropped", ANDROMEDA_PORT_UNDERLAY,
         ts::resized(overlay, 42 + 8 + 6), XDP_DROP, &andromeda_xdp_stats::drop_truncated},
        {"underlay: fragmentation needed about our outer packet is ours (no socket: dropped)", ANDROMEDA_PORT_UNDERLAY,
         icmp_about(underlay_udp(ANDROMEDA_OVERLAY_PORT, kLocalIp, kPeerIp)), XDP_DROP,
         &andromeda_xdp_stats::drop_no_socket},
        {"underlay: fragmentation needed about someone else's packet passes", ANDROMEDA_PORT_UNDERLAY,
         icmp_about(underlay_udp(ANDROMEDA_OVERLAY_PORT, 0xc0a80177, kPeerIp)), XDP_PASS,
         &andromeda_xdp_stats::pass_host},
        {"underlay: fragmentation needed about the host's own UDP passes", ANDROMEDA_PORT_UNDERLAY,
         icmp_about(underlay_udp(53, kLocalIp, kPeerIp)), XDP_PASS, &andromeda_xdp_stats::pass_host},
        {"underlay: port unreachable about our outer packet passes", ANDROMEDA_PORT_UNDERLAY,
         icmp_about(underlay_udp(ANDROMEDA_OVERLAY_PORT, kLocalIp, kPeerIp), 3, 3), XDP_PASS,
         &andromeda_xdp_stats::pass_host},
        {"underlay: an echo request passes", ANDROMEDA_PORT_UNDERLAY,
         icmp_about(underlay_udp(ANDROMEDA_OVERLAY_PORT, kLocalIp, kPeerIp), 8, 0), XDP_PASS,
         &andromeda_xdp_stats::pass_host},
        {"underlay: fragmentation needed with its quote cut short passes", ANDROMEDA_PORT_UNDERLAY,
         ts::resized(icmp_about(underlay_udp(ANDROMEDA_OVERLAY_PORT, kLocalIp, kPeerIp)), 14 + 20 + 8 + 24), XDP_PASS,
         &andromeda_xdp_stats::pass_host},
        {"underlay: IPv6 UDP to the overlay port is the host's on an IPv4 underlay", ANDROMEDA_PORT_UNDERLAY,
         underlay6_udp(ANDROMEDA_OVERLAY_PORT), XDP_PASS, &andromeda_xdp_stats::pass_host},
        {"underlay: tagged IPv6 UDP to the overlay port is the host's on an IPv4 underlay", ANDROMEDA_PORT_UNDERLAY,
         ts::tagged(underlay6_udp(ANDROMEDA_OVERLAY_PORT), 0x8100, 10), XDP_PASS, &andromeda_xdp_stats::pass_host},
        {"underlay: IPv6 overlay cut short is the host's on an IPv4 underlay", ANDROMEDA_PORT_UNDERLAY,
         ts::resized(underlay6_udp(ANDROMEDA_OVERLAY_PORT), 14 + 40 + 8 + 8 + 13), XDP_PASS,
         &andromeda_xdp_stats::pass_host},
        {"underlay: Packet Too Big about an IPv6 overlay packet is the host's on an IPv4 underlay",
         ANDROMEDA_PORT_UNDERLAY, icmp6_about(underlay6_udp(ANDROMEDA_OVERLAY_PORT)), XDP_PASS,
         &andromeda_xdp_stats::pass_host},
        {"underlay: a Neighbor Solicitation passes", ANDROMEDA_PORT_UNDERLAY, neighbor_solicitation(), XDP_PASS,
         &andromeda_xdp_stats::pass_host},
        {"tenant: spoofed source MAC is dropped", ANDROMEDA_PORT_TENANT, tenant_frame(kOtherMac), XDP_DROP,
         &andromeda_xdp_stats::drop_spoofed_mac},
        {"tenant: own MAC, no socket bound, is dropped", ANDROMEDA_PORT_TENANT, tenant_frame(kTenantMac), XDP_DROP,
         &andromeda_xdp_stats::drop_no_socket},
        {"uplink: traffic to another address passes", ANDROMEDA_PORT_UPLINK, underlay_udp(22), XDP_PASS,
         &andromeda_xdp_stats::pass_host},
        {"uplink: traffic to a NAT address is ours (no socket: dropped)", ANDROMEDA_PORT_UPLINK,
         underlay_udp(22, 0x08080808, kNatIp), XDP_DROP, &andromeda_xdp_stats::drop_no_socket},
    };
}

// VXLAN: the I flag is checked, and the Andromeda port is the host's.
std::vector<Fixture> vxlan_fixtures() {
    const Bytes vxlan = underlay_udp(ANDROMEDA_VXLAN_PORT, kPeerIp, kLocalIp, ts::OverlayKind::vxlan);
    return {
        {"VXLAN with the I flag reaches the socket lookup", ANDROMEDA_PORT_UNDERLAY, vxlan, XDP_DROP,
         &andromeda_xdp_stats::drop_no_socket},
        {"VXLAN without the I flag is dropped", ANDROMEDA_PORT_UNDERLAY, ts::with_byte(vxlan, 42, 0x00), XDP_DROP,
         &andromeda_xdp_stats::drop_bad_overlay_header},
        {"the Andromeda port is host traffic in VXLAN mode", ANDROMEDA_PORT_UNDERLAY,
         underlay_udp(ANDROMEDA_OVERLAY_PORT), XDP_PASS, &andromeda_xdp_stats::pass_host},
        {"fragmentation needed about our VXLAN packet is ours", ANDROMEDA_PORT_UNDERLAY,
         icmp_about(underlay_udp(ANDROMEDA_VXLAN_PORT, kLocalIp, kPeerIp, ts::OverlayKind::vxlan)), XDP_DROP,
         &andromeda_xdp_stats::drop_no_socket},
        {"fragmentation needed about a packet to the Andromeda port is the host's in VXLAN mode",
         ANDROMEDA_PORT_UNDERLAY, icmp_about(underlay_udp(ANDROMEDA_OVERLAY_PORT, kLocalIp, kPeerIp)), XDP_PASS,
         &andromeda_xdp_stats::pass_host},
        {"VXLAN over IPv6 is the host's on an IPv4 underlay", ANDROMEDA_PORT_UNDERLAY,
         underlay6_udp(ANDROMEDA_VXLAN_PORT, ts::OverlayKind::vxlan), XDP_PASS, &andromeda_xdp_stats::pass_host},
    };
}

// An IPv6 underlay (underlay_ip 0), the Andromeda encapsulation, no AF_XDP socket bound: IPv6 UDP
// straight to the overlay port, tagged or not, reaches the socket lookup whatever its header says
// (the pipeline judges that); every other IPv6 packet, and IPv4 host traffic, is the host's.
std::vector<Fixture> ipv6_underlay_fixtures() {
    const Bytes overlay = underlay6_udp(ANDROMEDA_OVERLAY_PORT);
    constexpr std::size_t kHeaders = 14 + 40 + 8 + 8 + 14;  // up to the inner Ethernet header, whole
    return {
        {"underlay: IPv6 overlay packet with no socket bound is dropped", ANDROMEDA_PORT_UNDERLAY, overlay, XDP_DROP,
         &andromeda_xdp_stats::drop_no_socket},
        {"underlay: IPv6 overlay in an 802.1Q tag is recognised", ANDROMEDA_PORT_UNDERLAY,
         ts::tagged(overlay, 0x8100, 10), XDP_DROP, &andromeda_xdp_stats::drop_no_socket},
        {"underlay: IPv6 overlay in an 802.1ad + 802.1Q pair is recognised", ANDROMEDA_PORT_UNDERLAY,
         ts::tagged(ts::tagged(overlay, 0x8100, 10), 0x88a8, 20), XDP_DROP, &andromeda_xdp_stats::drop_no_socket},
        {"underlay: IPv6 overlay with just its inner Ethernet header reaches the socket lookup",
         ANDROMEDA_PORT_UNDERLAY, ts::resized(overlay, kHeaders), XDP_DROP, &andromeda_xdp_stats::drop_no_socket},
        {"underlay: IPv6 overlay one byte short of its inner Ethernet header is dropped", ANDROMEDA_PORT_UNDERLAY,
         ts::resized(overlay, kHeaders - 1), XDP_DROP, &andromeda_xdp_stats::drop_truncated},
        {"underlay: IPv6 overlay without its overlay header is dropped", ANDROMEDA_PORT_UNDERLAY,
         ts::resized(overlay, 14 + 40 + 8 + 4), XDP_DROP, &andromeda_xdp_stats::drop_truncated},
        {"underlay: tagged IPv6 overlay cut short is dropped", ANDROMEDA_PORT_UNDERLAY,
         ts::tagged(ts::resized(overlay, kHeaders - 1), 0x8100, 10), XDP_DROP, &andromeda_xdp_stats::drop_truncated},
        {"underlay: IPv6 cut inside its UDP header passes", ANDROMEDA_PORT_UNDERLAY, ts::resized(overlay, 14 + 40 + 4),
         XDP_PASS, &andromeda_xdp_stats::pass_host},
        {"underlay: IPv6 header cut short passes", ANDROMEDA_PORT_UNDERLAY, ts::resized(overlay, 14 + 20), XDP_PASS,
         &andromeda_xdp_stats::pass_host},
        {"underlay: IPv6 UDP to another port passes", ANDROMEDA_PORT_UNDERLAY, underlay6_udp(22), XDP_PASS,
         &andromeda_xdp_stats::pass_host},
        {"underlay: IPv6 UDP to the VXLAN port is the host's in Andromeda mode", ANDROMEDA_PORT_UNDERLAY,
         underlay6_udp(ANDROMEDA_VXLAN_PORT, ts::OverlayKind::vxlan), XDP_PASS, &andromeda_xdp_stats::pass_host},
        {"underlay: IPv6 UDP from the overlay port to another passes", ANDROMEDA_PORT_UNDERLAY,
         ts::with_be16(ts::with_be16(overlay, 14 + 40, ANDROMEDA_OVERLAY_PORT), 14 + 40 + 2, 50000), XDP_PASS,
         &andromeda_xdp_stats::pass_host},
        {"underlay: a hop-by-hop header before UDP to the overlay port passes", ANDROMEDA_PORT_UNDERLAY,
         underlay6_udp(ANDROMEDA_OVERLAY_PORT, ts::OverlayKind::andromeda, Ipv6Extension::hop_by_hop), XDP_PASS,
         &andromeda_xdp_stats::pass_host},
        {"underlay: a fragment header before UDP to the overlay port passes", ANDROMEDA_PORT_UNDERLAY,
         underlay6_udp(ANDROMEDA_OVERLAY_PORT, ts::OverlayKind::andromeda, Ipv6Extension::fragment), XDP_PASS,
         &andromeda_xdp_stats::pass_host},
        {"underlay: a Neighbor Solicitation passes", ANDROMEDA_PORT_UNDERLAY, neighbor_solicitation(), XDP_PASS,
         &andromeda_xdp_stats::pass_host},
        {"underlay: a tagged Neighbor Solicitation passes", ANDROMEDA_PORT_UNDERLAY,
         ts::tagged(neighbor_solicitation(), 0x8100, 10), XDP_PASS, &andromeda_xdp_stats::pass_host},
        {"underlay: Packet Too Big about an outer packet reaches the socket lookup", ANDROMEDA_PORT_UNDERLAY,
         icmp6_about(overlay), XDP_DROP, &andromeda_xdp_stats::drop_no_socket},
        {"underlay: tagged Packet Too Big about an outer packet reaches the socket lookup", ANDROMEDA_PORT_UNDERLAY,
         ts::tagged(icmp6_about(overlay), 0x8100, 10), XDP_DROP, &andromeda_xdp_stats::drop_no_socket},
        {"underlay: Packet Too Big quoting just the IPv6 and UDP headers reaches the socket lookup",
         ANDROMEDA_PORT_UNDERLAY, ts::resized(icmp6_about(overlay), 14 + 40 + 8 + 40 + 8), XDP_DROP,
         &andromeda_xdp_stats::drop_no_socket},
        {"underlay: Packet Too Big with its quote cut inside the UDP header passes", ANDROMEDA_PORT_UNDERLAY,
         ts::resized(icmp6_about(overlay), 14 + 40 + 8 + 40 + 7), XDP_PASS, &andromeda_xdp_stats::pass_host},
        {"underlay: Packet Too Big about UDP to another port passes", ANDROMEDA_PORT_UNDERLAY,
         icmp6_about(underlay6_udp(22)), XDP_PASS, &andromeda_xdp_stats::pass_host},
        {"underlay: Packet Too Big about a packet with a hop-by-hop header passes", ANDROMEDA_PORT_UNDERLAY,
         icmp6_about(underlay6_udp(ANDROMEDA_OVERLAY_PORT, ts::OverlayKind::andromeda, Ipv6Extension::hop_by_hop)),
         XDP_PASS, &andromeda_xdp_stats::pass_host},
        {"underlay: Destination Unreachable about an outer packet passes", ANDROMEDA_PORT_UNDERLAY,
         icmp6_about(overlay, 1, 4), XDP_PASS, &andromeda_xdp_stats::pass_host},
        {"underlay: Packet Too Big with a nonzero code passes", ANDROMEDA_PORT_UNDERLAY, icmp6_about(overlay, 2, 1),
         XDP_PASS, &andromeda_xdp_stats::pass_host},
        {"underlay: IPv4 host UDP still passes", ANDROMEDA_PORT_UNDERLAY, underlay_udp(22), XDP_PASS,
         &andromeda_xdp_stats::pass_host},
        {"underlay: ARP still passes", ANDROMEDA_PORT_UNDERLAY,
         ts::arp_request(Mac{2, 0, 0, 0, 0xa1, 1}, kPeerIp, kLocalIp), XDP_PASS, &andromeda_xdp_stats::pass_host},
        {"uplink: IPv6 UDP to the overlay port passes (only the underlay steers it)", ANDROMEDA_PORT_UPLINK, overlay,
         XDP_PASS, &andromeda_xdp_stats::pass_host},
    };
}

// VXLAN over an IPv6 underlay: the VXLAN port is the overlay's, the Andromeda port the host's.
// Before andromedad has written the fast path's config (the map's all-zero entry, underlay_mtu 0),
// nothing says the underlay is IPv6: an IPv6 overlay packet is the host's, as on an IPv4 underlay.
std::vector<Fixture> unconfigured_fixtures() {
    return {{"underlay: IPv6 UDP to the overlay port before the config is written passes", ANDROMEDA_PORT_UNDERLAY,
             underlay6_udp(ANDROMEDA_OVERLAY_PORT), XDP_PASS, &andromeda_xdp_stats::pass_host}};
}

std::vector<Fixture> vxlan_ipv6_underlay_fixtures() {
    return {
        {"VXLAN over IPv6 reaches the socket lookup", ANDROMEDA_PORT_UNDERLAY,
         underlay6_udp(ANDROMEDA_VXLAN_PORT, ts::OverlayKind::vxlan), XDP_DROP, &andromeda_xdp_stats::drop_no_socket},
        {"VXLAN over IPv6 cut short is dropped", ANDROMEDA_PORT_UNDERLAY,
         ts::resized(underlay6_udp(ANDROMEDA_VXLAN_PORT, ts::OverlayKind::vxlan), 14 + 40 + 8 + 8 + 13), XDP_DROP,
         &andromeda_xdp_stats::drop_truncated},
        {"the Andromeda port over IPv6 is host traffic in VXLAN mode", ANDROMEDA_PORT_UNDERLAY,
         underlay6_udp(ANDROMEDA_OVERLAY_PORT), XDP_PASS, &andromeda_xdp_stats::pass_host},
    };
}

// With an AF_XDP socket at the port's (slot, queue) key, steered traffic is redirected and
// counted per kind.
std::vector<Fixture> bound_socket_fixtures() {
    return {
        {"underlay: valid overlay packet is redirected", ANDROMEDA_PORT_UNDERLAY, underlay_udp(ANDROMEDA_OVERLAY_PORT),
         XDP_REDIRECT, &andromeda_xdp_stats::redirect_overlay},
        {"tenant: own MAC is redirected", ANDROMEDA_PORT_TENANT, tenant_frame(kTenantMac), XDP_REDIRECT,
         &andromeda_xdp_stats::redirect_tenant},
        {"uplink: NAT address is redirected", ANDROMEDA_PORT_UPLINK, underlay_udp(22, 0x08080808, kNatIp), XDP_REDIRECT,
         &andromeda_xdp_stats::redirect_uplink},
        {"underlay: fragmentation needed about our outer packet is redirected", ANDROMEDA_PORT_UNDERLAY,
         icmp_about(underlay_udp(ANDROMEDA_OVERLAY_PORT, kLocalIp, kPeerIp)), XDP_REDIRECT,
         &andromeda_xdp_stats::redirect_icmp},
        {"underlay: IPv6 UDP to the overlay port passes on an IPv4 underlay, a socket bound or not",
         ANDROMEDA_PORT_UNDERLAY, underlay6_udp(ANDROMEDA_OVERLAY_PORT), XDP_PASS, &andromeda_xdp_stats::pass_host},
    };
}

// An IPv6 underlay with an AF_XDP socket bound: its overlay packets are redirected and counted as
// overlay, the rest stays the host's.
std::vector<Fixture> bound_socket_ipv6_underlay_fixtures() {
    const Bytes overlay = underlay6_udp(ANDROMEDA_OVERLAY_PORT);
    return {
        {"underlay: IPv6 overlay packet is redirected", ANDROMEDA_PORT_UNDERLAY, overlay, XDP_REDIRECT,
         &andromeda_xdp_stats::redirect_overlay},
        {"underlay: tagged IPv6 overlay packet is redirected", ANDROMEDA_PORT_UNDERLAY, ts::tagged(overlay, 0x8100, 10),
         XDP_REDIRECT, &andromeda_xdp_stats::redirect_overlay},
        {"underlay: IPv6 overlay cut short is dropped, a socket bound or not", ANDROMEDA_PORT_UNDERLAY,
         ts::resized(overlay, 14 + 40 + 8 + 8 + 13), XDP_DROP, &andromeda_xdp_stats::drop_truncated},
        {"underlay: a Neighbor Solicitation passes, a socket bound or not", ANDROMEDA_PORT_UNDERLAY,
         neighbor_solicitation(), XDP_PASS, &andromeda_xdp_stats::pass_host},
        {"underlay: Packet Too Big about an outer packet is redirected", ANDROMEDA_PORT_UNDERLAY, icmp6_about(overlay),
         XDP_REDIRECT, &andromeda_xdp_stats::redirect_icmp},
        {"underlay: Packet Too Big about UDP to another port passes, a socket bound or not", ANDROMEDA_PORT_UNDERLAY,
         icmp6_about(underlay6_udp(22)), XDP_PASS, &andromeda_xdp_stats::pass_host},
        {"underlay: IPv6 UDP to another port passes, a socket bound or not", ANDROMEDA_PORT_UNDERLAY, underlay6_udp(22),
         XDP_PASS, &andromeda_xdp_stats::pass_host},
        {"underlay: a hop-by-hop header before UDP to the overlay port passes, a socket bound or not",
         ANDROMEDA_PORT_UNDERLAY,
         underlay6_udp(ANDROMEDA_OVERLAY_PORT, ts::OverlayKind::andromeda, Ipv6Extension::hop_by_hop), XDP_PASS,
         &andromeda_xdp_stats::pass_host},
    };
}

// An AF_XDP socket on the namespace's lo, queue 0, in the XSKMAP at (kSlot, 0).
class BoundSocket {
public:
    explicit BoundSocket(const andromeda_xdp* skel) {
        area_ = mmap(nullptr, kAreaSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (area_ == MAP_FAILED) {
            error_ = "mmap: " + std::string(std::strerror(errno));
            return;
        }
        if (const int rc = xsk_umem__create(&umem_, area_, kAreaSize, &fill_, &comp_, nullptr); rc != 0) {
            error_ = "creating the UMEM: " + std::string(std::strerror(-rc));
            return;
        }
        xsk_socket_config cfg{};
        cfg.rx_size = XSK_RING_CONS__DEFAULT_NUM_DESCS;
        cfg.tx_size = XSK_RING_PROD__DEFAULT_NUM_DESCS;
        cfg.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;
        cfg.xdp_flags = XDP_FLAGS_SKB_MODE;
        cfg.bind_flags = XDP_COPY;
        if (const int rc = xsk_socket__create(&xsk_, "lo", 0, umem_, &rx_, &tx_, &cfg); rc != 0) {
            error_ = "binding an AF_XDP socket to the namespace's lo: " + std::string(std::strerror(-rc));
            return;
        }
        const std::uint32_t key = kSlot * ANDROMEDA_MAX_QUEUES + 0;
        const int fd = xsk_socket__fd(xsk_);
        if (bpf_map_update_elem(bpf_map__fd(skel->maps.andromeda_xsks), &key, &fd, BPF_ANY) != 0)
            error_ = "writing the XSKMAP: " + std::string(std::strerror(errno));
    }
    ~BoundSocket() {
        if (xsk_ != nullptr) xsk_socket__delete(xsk_);
        if (umem_ != nullptr) xsk_umem__delete(umem_);
        if (area_ != MAP_FAILED) munmap(area_, kAreaSize);
    }
    BoundSocket(const BoundSocket&) = delete;
    BoundSocket& operator=(const BoundSocket&) = delete;
    [[nodiscard]] const std::string& error() const { return error_; }

private:
    static constexpr std::size_t kAreaSize = 64 * XSK_UMEM__DEFAULT_FRAME_SIZE;
    void* area_ = MAP_FAILED;
    xsk_ring_prod fill_{}, tx_{};
    xsk_ring_cons comp_{}, rx_{};
    xsk_umem* umem_ = nullptr;
    xsk_socket* xsk_ = nullptr;
    std::string error_;
};

struct PrefilterSetup {
    const char* name;
    std::uint16_t overlay_port;
    std::uint32_t encap;
    bool socket_bound;
    std::uint32_t underlay_ip;  // the node's IPv4 address (host order); 0: an IPv6 underlay
    std::vector<Fixture> (*fixtures)();
    bool config_written = true;  // false: the config map still holds its all-zero entry
};

void PrintTo(const PrefilterSetup& setup, std::ostream* out) { *out << setup.name; }

class XdpPrefilter : public ::testing::TestWithParam<PrefilterSetup> {
protected:
    static void SetUpTestSuite() { in_netns_ = geteuid() == 0 && enter_private_netns(); }
    void SetUp() override {
        ANDROMEDA_REQUIRE_ROOT();
        ASSERT_TRUE(in_netns_) << "could not enter a private network namespace";
    }

    static andromeda_xdp_stats stats(const andromeda_xdp* skel) {
        return andromeda::io::read_xdp_stats(bpf_map__fd(skel->maps.andromeda_stats)).totals();
    }

    // One fixture: the port's role in the map, the verdict, its counter and rx_packets up by one and
    // every other counter unchanged.
    static void check(const andromeda_xdp* skel, const Fixture& f) {
        if (f.role != 0)
            set_port(skel, f.role);
        else
            bpf_map_delete_elem(bpf_map__fd(skel->maps.andromeda_ports), &kLoopbackIfindex);
        Bytes frame = f.input;
        xdp_md ctx{};
        ctx.data_end = static_cast<__u32>(frame.size());
        ctx.ingress_ifindex = kLoopbackIfindex;
        ctx.rx_queue_index = 0;
        LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame.data(), .data_size_in = static_cast<__u32>(frame.size()),
                    .ctx_in = &ctx, .ctx_size_in = sizeof ctx, .repeat = 1);
        const auto before = stats(skel);
        ASSERT_EQ(bpf_prog_test_run_opts(bpf_program__fd(skel->progs.andromeda_xdp), &opts), 0)
            << f.description << ": " << std::strerror(errno);
        const auto after = stats(skel);
        EXPECT_EQ(opts.retval, f.verdict) << f.description;
        for (const auto& field : andromeda::io::kXdpCounterFields) {
            const bool counted = field.member == f.counter || field.member == &andromeda_xdp_stats::rx_packets;
            EXPECT_EQ(after.*(field.member), before.*(field.member) + (counted ? 1 : 0))
                << f.description << ": " << field.name;
        }
    }

    static inline bool in_netns_ = false;
};

TEST_P(XdpPrefilter, EveryFixtureReachesItsVerdictAndCounter) {
    const PrefilterSetup& setup = GetParam();
    auto skel = load(setup.overlay_port, setup.encap);
    ASSERT_TRUE(skel) << "loading andromeda_xdp.bpf.o failed";
    add_fabric(skel.get(), setup.underlay_ip, setup.config_written);
    std::unique_ptr<BoundSocket> socket;
    if (setup.socket_bound) {
        socket = std::make_unique<BoundSocket>(skel.get());
        ASSERT_EQ(socket->error(), "");
    }
    for (const Fixture& f : setup.fixtures()) check(skel.get(), f);
}

INSTANTIATE_TEST_SUITE_P(
    Setups, XdpPrefilter,
    ::testing::Values(PrefilterSetup{"andromeda", ANDROMEDA_OVERLAY_PORT, ANDROMEDA_ENCAP_ANDROMEDA, false, kLocalIp,
                                     andromeda_fixtures},
                      PrefilterSetup{"vxlan", ANDROMEDA_VXLAN_PORT, ANDROMEDA_ENCAP_VXLAN, false, kLocalIp,
                                     vxlan_fixtures},
                      PrefilterSetup{"socket_bound", ANDROMEDA_OVERLAY_PORT, ANDROMEDA_ENCAP_ANDROMEDA, true, kLocalIp,
                                     bound_socket_fixtures},
                      PrefilterSetup{"andromeda_ipv6_underlay", ANDROMEDA_OVERLAY_PORT, ANDROMEDA_ENCAP_ANDROMEDA,
                                     false, 0, ipv6_underlay_fixtures},
                      PrefilterSetup{"vxlan_ipv6_underlay", ANDROMEDA_VXLAN_PORT, ANDROMEDA_ENCAP_VXLAN, false, 0,
                                     vxlan_ipv6_underlay_fixtures},
                      PrefilterSetup{"socket_bound_ipv6_underlay", ANDROMEDA_OVERLAY_PORT, ANDROMEDA_ENCAP_ANDROMEDA,
                                     true, 0, bound_socket_ipv6_underlay_fixtures},
                      PrefilterSetup{"unconfigured", ANDROMEDA_OVERLAY_PORT, ANDROMEDA_ENCAP_ANDROMEDA, true, 0,
                                     unconfigured_fixtures, false}),
    [](const ::testing::TestParamInfo<PrefilterSetup>& param) { return std::string(param.param.name); });

}  // namespace
