// The kernel fast path against the user-space pipeline, frame by frame (a differential test).
//
// Every input goes through the BPF programs with BPF_PROG_TEST_RUN and through
// dataplane::Pipeline, both over one fabric (the same TOML text: the maps are filled with
// io::plan_full and the daemon's port table code, the pipeline reads the snapshot):
//
//   tenant frames    andromeda_tc_tenant on the tenant port's ifindex
//   overlay packets  andromeda_xdp on the underlay (pass_fastpath, or steered to AF_XDP, or
//                    dropped), then andromeda_tc_underlay for what XDP passes
//
// and the two must agree:
//   - a frame the fast path forwards (encapsulated, delivered locally, decapsulated) is forwarded
//     by the pipeline to the same place, byte for byte; the only field normalised is the outer
//     IPv4 ID (the kernel counts per CPU, the pipeline per template; docs/fastpath.md), whose
//     change the outer header checksum follows (RFC 1624): a wrong checksum stays wrong;
//   - a port-security drop (drop_spoofed_mac/ip/arp) is a pipeline drop, and a spoofed source
//     MAC the pipeline drops is one the fast path drops;
//   - everything else the fast path punts (redirected, unchanged, to the punt device, with one
//     punt_* reason counted) or steers to AF_XDP: always acceptable;
//   - what the underlay's XDP drops the pipeline drops, and what it passes to the host the
//     pipeline does not deliver.
//
// The inputs are crafted cases (each with the fast path's expected outcome) and random frames
// from a seeded std::mt19937 (ANDROMEDA_FAST_PATH_SEED=<n> replaces the fixed seeds; a failure
// prints the seed and the frame). Both encapsulations run (the Andromeda header and VXLAN, with
// encap_kind and overlay_port set in rodata as the daemon sets them). The last tests show the
// comparison is not vacuous: mutated outputs and deliberately broken map entries are caught.
//
// BPF_PROG_TEST_RUN reports the return code and the packet, not where a redirect goes: a punt's
// target is the port's `link` and an encapsulation's the underlay by construction, and a local
// delivery's or a decapsulation's is the fabric map entry the program reads (looked up here the
// same way). The test runs in a network namespace of its own, with veth pairs for the underlay,
// the tenant ports and their punt pairs, so every ifindex handed to the kernel is a real device.
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <net/if.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "andromeda_kern_user.h"
#include "andromeda_xdp.skel.h"
#include "dataplane/pipeline.hpp"
#include "fabric/fabric.hpp"
#include "io/bpf/xdp_stats.hpp"
#include "io/plan/map_plan.hpp"
#include "io/plan/port_table.hpp"
#include "support/fabric_builder.hpp"
#include "support/root.hpp"
#include "support/xdp_skeleton.hpp"

namespace {

namespace dp = andromeda::dataplane;
namespace fab = andromeda::fabric;
namespace aio = andromeda::io;
namespace wire = andromeda::wire;
using andromeda::testing::Skel;

using Bytes = std::vector<std::uint8_t>;
using Mac = std::array<std::uint8_t, 6>;

enum class Encap { andromeda, vxlan };

const char* to_string(Encap e) { return e == Encap::vxlan ? "vxlan" : "andromeda"; }
std::uint16_t overlay_port(Encap e) { return e == Encap::vxlan ? ANDROMEDA_VXLAN_PORT : ANDROMEDA_OVERLAY_PORT; }

// ---- bytes and checksums: the test's own, nothing shared with the code under test ------------

std::uint16_t get16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] << 8 | p[1]); }
void put16(std::uint8_t* p, std::uint32_t v) {
    p[0] = static_cast<std::uint8_t>(v >> 8);
    p[1] = static_cast<std::uint8_t>(v);
}
void put32(std::uint8_t* p, std::uint32_t v) {
    put16(p, v >> 16);
    put16(p + 2, v & 0xffff);
}

// RFC 1071: the sum of 16-bit big-endian words (a trailing odd byte padded), unfolded.
std::uint32_t add_words(const std::uint8_t* p, std::size_t n, std::uint32_t sum = 0) {
    for (std::size_t i = 0; i + 1 < n; i += 2) sum += get16(p + i);
    if (n % 2 != 0) sum += static_cast<std::uint32_t>(p[n - 1]) << 8;
    return sum;
}
std::uint16_t fold(std::uint32_t sum) {
    while (sum >> 16 != 0) sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<std::uint16_t>(sum);
}
std::uint16_t checksum(const std::uint8_t* p, std::size_t n, std::uint32_t initial = 0) {
    return static_cast<std::uint16_t>(~fold(add_words(p, n, initial)));
}

// Recomputes the IPv4 header checksum at `ip` (its IHL, at least 20 bytes, as far as `f` holds it).
void refresh_ipv4_checksum(Bytes& f, std::size_t ip) {
    if (f.size() < ip + 20) return;
    const std::size_t ihl = std::min<std::size_t>(std::max<std::size_t>((f[ip] & 0x0f) * 4u, 20), f.size() - ip);
    put16(&f[ip + 10], 0);
    put16(&f[ip + 10], checksum(&f[ip], ihl));
}

// Gives the IPv4 header at `ip` the ID `id`, updating its checksum for that change only
// (RFC 1624, HC' = ~(~HC + ~m + m')): a checksum that was wrong stays exactly as wrong.
void set_ipv4_id(Bytes& f, std::size_t ip, std::uint16_t id) {
    const std::uint16_t old_id = get16(&f[ip + 4]);
    const std::uint16_t old_sum = get16(&f[ip + 10]);
    const std::uint32_t sum = static_cast<std::uint16_t>(~old_sum) + static_cast<std::uint32_t>(static_cast<std::uint16_t>(~old_id)) + id;
    put16(&f[ip + 4], id);
    put16(&f[ip + 10], static_cast<std::uint16_t>(~fold(sum)));
}

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
// The first 256 bytes in hex, for outputs (inputs are printed whole, to be replayed).
std::string hex_start(const Bytes& b) {
    if (b.size() <= 256) return hex(b);
    return hex(Bytes(b.begin(), b.begin() + 256)) + "...";
}
std::string hex8(std::uint8_t x) { return "0x" + hex(Bytes{x}); }

// ---- addresses and the fabric ----------------------------------------------------------------

constexpr std::uint32_t ip4(std::uint32_t a, std::uint32_t b, std::uint32_t c, std::uint32_t d) {
    return a << 24 | b << 16 | c << 8 | d;
}
constexpr Mac mac_of(std::uint8_t a, std::uint8_t b) { return {2, 0, 0, 0, a, b}; }

std::string ip_text(std::uint32_t a) {
    return std::to_string(a >> 24) + "." + std::to_string(a >> 16 & 255) + "." + std::to_string(a >> 8 & 255) + "." +
           std::to_string(a & 255);
}
std::string mac_text(const Mac& m) {
    std::string s;
    for (std::size_t i = 0; i < 6; ++i) s += (i ? ":" : "") + hex(Bytes{m[i]});
    return s;
}

constexpr std::uint32_t kNode1 = ip4(192, 168, 1, 1);  // this node
constexpr std::uint32_t kNode2 = ip4(192, 168, 1, 2);  // a peer whose next hop is known
constexpr std::uint32_t kNode3 = ip4(192, 168, 1, 3);  // a peer whose next hop is not (yet)
constexpr std::uint32_t kStranger = ip4(192, 168, 1, 99);
constexpr Mac kUnderlayMac = mac_of(0xa1, 1);
constexpr std::uint32_t kHandoffCookie = 0x5eed1234;  // andromeda_fp_config.handoff_cookie
constexpr Mac kNode2Mac = mac_of(0xa1, 2);
constexpr Mac kNode3Mac = mac_of(0xa1, 3);
constexpr Mac kDefaultGatewayMac = {2, 0, 0, 0, 0, 0xff};
constexpr Mac kBroadcastMac = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
constexpr std::uint32_t kUnderlayMtu = 1500;
const std::string kPortWithoutDevice = "tap-b12";  // a local endpoint whose port does not exist

struct EndpointDef {
    std::uint32_t ip;
    Mac mac;
    std::string node;
    std::string port;  // local endpoints
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

    [[nodiscard]] std::uint32_t inner_mtu() const { return mtu != 0 ? mtu : kUnderlayMtu - 50; }
};

//   blue   VNI 100 10.0.0.0/24, MTU 1400: .10 .11 on node1, .12 on node1 without a device,
//          .20 .21 on node2, .30 on node3 (no next hop known)
//   green  VNI 200 10.0.0.0/24 (blue's addresses, another tenant), its own gateway MAC, MTU
//          1450 from the underlay: .10 .40 on node1, .20 on node2
//   grey   VNI 300 with the fast path off: .10 on node1, .20 on node2
//   red    VNI 400 with its NAT at node2: .10 on node1, .20 on node2
const std::vector<VpcDef>& vpcs() {
    static const std::vector<VpcDef> v = {
        {"blue", 100, ip4(10, 0, 0, 0), ip4(10, 0, 0, 1), kDefaultGatewayMac, 1400, true, "", 0,
         {{ip4(10, 0, 0, 10), mac_of(0, 0x10), "node1", "tap-b10"},
          {ip4(10, 0, 0, 11), mac_of(0, 0x11), "node1", "tap-b11"},
          {ip4(10, 0, 0, 12), mac_of(0, 0x12), "node1", kPortWithoutDevice},
          {ip4(10, 0, 0, 20), mac_of(0, 0x20), "node2", ""},
          {ip4(10, 0, 0, 21), mac_of(0, 0x21), "node2", ""},
          {ip4(10, 0, 0, 30), mac_of(0, 0x30), "node3", ""}}},
        {"green", 200, ip4(10, 0, 0, 0), ip4(10, 0, 0, 1), mac_of(1, 0xfe), 0, true, "", 0,
         {{ip4(10, 0, 0, 10), mac_of(1, 0x10), "node1", "tap-g10"},
          {ip4(10, 0, 0, 20), mac_of(1, 0x20), "node2", ""},
          {ip4(10, 0, 0, 40), mac_of(1, 0x40), "node1", "tap-g40"}}},
        {"grey", 300, ip4(10, 2, 0, 0), ip4(10, 2, 0, 1), kDefaultGatewayMac, 0, false, "", 0,
         {{ip4(10, 2, 0, 10), mac_of(2, 0x10), "node1", "tap-y10"}, {ip4(10, 2, 0, 20), mac_of(2, 0x20), "node2", ""}}},
        {"red", 400, ip4(10, 3, 0, 0), ip4(10, 3, 0, 1), kDefaultGatewayMac, 0, true, "node2", ip4(203, 0, 113, 20),
         {{ip4(10, 3, 0, 10), mac_of(3, 0x10), "node1", "tap-r10"}, {ip4(10, 3, 0, 20), mac_of(3, 0x20), "node2", ""}}},
    };
    return v;
}

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
Mac node_mac(const std::string& node) { return node == "node1" ? kUnderlayMac : node == "node2" ? kNode2Mac : kNode3Mac; }

using EndpointKey = std::pair<std::uint32_t, std::uint32_t>;  // (VNI, address)

std::string fabric_toml(Encap encap, const std::set<EndpointKey>& removed = {}) {
    andromeda::test_support::FabricBuilder b("node1", ip_text(kNode1));
    if (encap == Encap::vxlan) b.node_key("encap = \"vxlan\"");
    for (const char* node : {"node1", "node2", "node3"}) b.peer(node, ip_text(node_address(node)));
    for (const VpcDef& v : vpcs()) {
        b.vpc(v.name, v.vni, ip_text(v.network) + "/24", ip_text(v.gateway));
        if (v.gateway_mac != kDefaultGatewayMac) b.vpc_key("gateway_mac = \"" + mac_text(v.gateway_mac) + "\"");
        if (v.mtu != 0) b.vpc_key("mtu = " + std::to_string(v.mtu));
        if (!v.fastpath) b.vpc_key("fastpath = false");
        if (!v.nat_node.empty()) b.nat(v.nat_node, ip_text(v.nat_address));
        for (const EndpointDef& e : v.endpoints)
            if (removed.count({v.vni, e.ip}) == 0) b.endpoint(ip_text(e.ip), mac_text(e.mac), e.node, e.port);
    }
    return b.toml();
}

// ---- frames ------------------------------------------------------------------------------------

constexpr std::uint8_t kIcmp = 1, kTcp = 6, kUdp = 17;
constexpr std::uint16_t kDf = 0x4000, kMf = 0x2000;

struct Ipv4Spec {
    Mac dst_mac{};
    Mac src_mac{};
    std::uint32_t src = 0;
    std::uint32_t dst = 0;
    std::uint8_t protocol = kUdp;
    std::size_t total = 60;    // IPv4 total length
    std::size_t options = 0;   // bytes of IPv4 options (a multiple of 4, at most 40)
    std::uint16_t fragment = kDf;  // flags and fragment offset
    std::uint8_t ttl = 64;
    std::uint8_t tos = 0;
    std::uint16_t id = 0x1234;
    std::uint16_t sport = 40000;
    std::uint16_t dport = 4242;
    std::uint8_t fill = 0;
};

std::size_t transport_header(std::uint8_t protocol) {
    return protocol == kTcp ? 20 : protocol == kUdp || protocol == kIcmp ? 8 : 0;
}

// Ethernet + IPv4 (with `options` bytes of NOPs) + a TCP, UDP or ICMP echo header when the packet
// has room for it (and is a first fragment), all checksums valid; payload byte i is fill + i.
Bytes ipv4_frame(const Ipv4Spec& s) {
    const std::size_t ihl = 20 + s.options;
    const std::size_t total = std::max(s.total, ihl);
    Bytes f(14 + total, 0);
    std::copy(s.dst_mac.begin(), s.dst_mac.end(), f.begin());
    std::copy(s.src_mac.begin(), s.src_mac.end(), f.begin() + 6);
    put16(&f[12], 0x0800);
    std::uint8_t* ip = &f[14];
    ip[0] = static_cast<std::uint8_t>(0x40 | ihl / 4);
    ip[1] = s.tos;
    put16(ip + 2, static_cast<std::uint32_t>(total));
    put16(ip + 4, s.id);
    put16(ip + 6, s.fragment);
    ip[8] = s.ttl;
    ip[9] = s.protocol;
    put32(ip + 12, s.src);
    put32(ip + 16, s.dst);
    for (std::size_t i = 20; i < ihl; ++i) ip[i] = 1;  // NOP
    std::uint8_t* l4 = ip + ihl;
    const std::size_t l4_length = total - ihl;
    for (std::size_t i = 0; i < l4_length; ++i) l4[i] = static_cast<std::uint8_t>(s.fill + i);
    const bool first_fragment = (s.fragment & 0x1fff) == 0;
    if (first_fragment && l4_length >= transport_header(s.protocol) && transport_header(s.protocol) != 0) {
        std::uint8_t pseudo[12] = {};
        put32(pseudo, s.src);
        put32(pseudo + 4, s.dst);
        pseudo[9] = s.protocol;
        put16(pseudo + 10, static_cast<std::uint32_t>(l4_length));
        if (s.protocol == kUdp) {
            put16(l4, s.sport);
            put16(l4 + 2, s.dport);
            put16(l4 + 4, static_cast<std::uint32_t>(l4_length));
            put16(l4 + 6, 0);
            std::uint16_t sum = checksum(l4, l4_length, add_words(pseudo, sizeof pseudo));
            put16(l4 + 6, sum == 0 ? 0xffff : sum);
        } else if (s.protocol == kTcp) {
            put16(l4, s.sport);
            put16(l4 + 2, s.dport);
            put32(l4 + 4, 1000);
            put32(l4 + 8, 2000);
            l4[12] = 5 << 4;
            l4[13] = 0x18;  // PSH ACK
            put16(l4 + 14, 64240);
            put16(l4 + 16, 0);
            put16(l4 + 18, 0);
            put16(l4 + 16, checksum(l4, l4_length, add_words(pseudo, sizeof pseudo)));
        } else {
            l4[0] = 8;  // echo request
            l4[1] = 0;
            put16(l4 + 2, 0);
            put16(l4 + 4, 0x0b0c);
            put16(l4 + 6, 1);
            put16(l4 + 2, checksum(l4, l4_length));
        }
    }
    refresh_ipv4_checksum(f, 14);
    return f;
}

// An Ethernet/IPv4 ARP packet (42 bytes).
Bytes arp_frame(const Mac& eth_src, const Mac& eth_dst, std::uint16_t op, const Mac& sender_mac,
                std::uint32_t sender_ip, std::uint32_t target_ip) {
    Bytes f(42, 0);
    std::copy(eth_dst.begin(), eth_dst.end(), f.begin());
    std::copy(eth_src.begin(), eth_src.end(), f.begin() + 6);
    put16(&f[12], 0x0806);
    std::uint8_t* a = &f[14];
    put16(a, 1);
    put16(a + 2, 0x0800);
    a[4] = 6;
    a[5] = 4;
    put16(a + 6, op);
    std::copy(sender_mac.begin(), sender_mac.end(), a + 8);
    put32(a + 14, sender_ip);
    put32(a + 24, target_ip);
    return f;
}

// Ethernet with `ethertype` and `length` bytes of payload (IPv6, or anything).
Bytes raw_frame(const Mac& src, const Mac& dst, std::uint16_t ethertype, std::size_t length, std::uint8_t fill) {
    Bytes f(14 + length, 0);
    std::copy(dst.begin(), dst.end(), f.begin());
    std::copy(src.begin(), src.end(), f.begin() + 6);
    put16(&f[12], ethertype);
    for (std::size_t i = 0; i < length; ++i) f[14 + i] = static_cast<std::uint8_t>(fill + i);
    if (ethertype == 0x86dd && length >= 40) {
        f[14] = 0x60;
        put16(&f[18], static_cast<std::uint32_t>(length - 40));
        f[20] = 59;  // no next header
        f[21] = 64;
    }
    return f;
}

// An 802.1Q tag (or, with `tag_type` 0x88a8, the outer tag of a QinQ pair) after the MACs.
void insert_tag(Bytes& f, std::uint16_t tag_type, std::uint16_t tci) {
    const std::uint8_t tag[4] = {static_cast<std::uint8_t>(tag_type >> 8), static_cast<std::uint8_t>(tag_type),
                                 static_cast<std::uint8_t>(tci >> 8), static_cast<std::uint8_t>(tci)};
    f.insert(f.begin() + 12, std::begin(tag), std::end(tag));
}

struct OverlaySpec {
    Encap kind = Encap::andromeda;
    Mac dst_mac = kUnderlayMac;
    Mac src_mac = kNode2Mac;
    std::uint32_t src = kNode2;
    std::uint32_t dst = kNode1;
    std::uint16_t sport = 0xc123;
    std::uint16_t dport = ANDROMEDA_OVERLAY_PORT;
    std::uint32_t vni = 100;
    std::optional<std::uint8_t> first;  // the header's first byte; default 0x10 (Andromeda v1) / 0x08 (VXLAN I)
    std::uint8_t protocol = 0;          // Andromeda inner protocol (0: Ethernet); VXLAN reserved byte
    std::uint8_t hop_limit = 64;        // Andromeda; VXLAN's last (reserved) byte is 0
    std::uint16_t fragment = kDf;
    std::size_t options = 0;
    bool udp_checksum = false;  // a valid, non-zero outer UDP checksum
    std::uint8_t ttl = 64;
    Bytes inner;
};

// An overlay packet as a peer sends it: outer Ethernet, IPv4 (DF), UDP without a checksum, the
// 8-byte header, the inner frame.
Bytes overlay_frame(const OverlaySpec& s) {
    const std::size_t ihl = 20 + s.options;
    const std::size_t udp_length = 8 + 8 + s.inner.size();
    Bytes f(14 + ihl + udp_length, 0);
    std::copy(s.dst_mac.begin(), s.dst_mac.end(), f.begin());
    std::copy(s.src_mac.begin(), s.src_mac.end(), f.begin() + 6);
    put16(&f[12], 0x0800);
    std::uint8_t* ip = &f[14];
    ip[0] = static_cast<std::uint8_t>(0x40 | ihl / 4);
    put16(ip + 2, static_cast<std::uint32_t>(ihl + udp_length));
    put16(ip + 4, 0x4242);
    put16(ip + 6, s.fragment);
    ip[8] = s.ttl;
    ip[9] = kUdp;
    put32(ip + 12, s.src);
    put32(ip + 16, s.dst);
    for (std::size_t i = 20; i < ihl; ++i) ip[i] = 1;
    std::uint8_t* udp = ip + ihl;
    put16(udp, s.sport);
    put16(udp + 2, s.dport);
    put16(udp + 4, static_cast<std::uint32_t>(udp_length));
    std::uint8_t* h = udp + 8;
    if (s.kind == Encap::andromeda) {
        h[0] = s.first.value_or(0x10);
        h[1] = s.protocol;
        put16(h + 2, s.sport & 0x3fff);
        h[7] = s.hop_limit;
    } else {
        h[0] = s.first.value_or(0x08);
        h[3] = s.protocol;
    }
    h[4] = static_cast<std::uint8_t>(s.vni >> 16);
    h[5] = static_cast<std::uint8_t>(s.vni >> 8);
    h[6] = static_cast<std::uint8_t>(s.vni);
    std::copy(s.inner.begin(), s.inner.end(), h + 8);
    if (s.udp_checksum) {
        std::uint8_t pseudo[12] = {};
        put32(pseudo, s.src);
        put32(pseudo + 4, s.dst);
        pseudo[9] = kUdp;
        put16(pseudo + 10, static_cast<std::uint32_t>(udp_length));
        const std::uint16_t sum = checksum(udp, udp_length, add_words(pseudo, sizeof pseudo));
        put16(udp + 6, sum == 0 ? 0xffff : sum);
    }
    refresh_ipv4_checksum(f, 14);
    return f;
}

// The inner frame a peer's pipeline sends for `from` -> `to` (IPv4, `total` bytes).
Bytes inner_frame(const EndpointDef& from, std::uint32_t to_ip, const Mac& to_mac, std::size_t total,
                  std::uint8_t protocol = kUdp) {
    Ipv4Spec s;
    s.src_mac = from.mac;
    s.dst_mac = to_mac;
    s.src = from.ip;
    s.dst = to_ip;
    s.protocol = protocol;
    s.total = total;
    return ipv4_frame(s);
}

// ---- names of the bytes, for reporting a difference ------------------------------------------

std::string frame_field(std::size_t i) {  // Ethernet + IPv4 without options
    if (i < 6) return "destination MAC";
    if (i < 12) return "source MAC";
    if (i < 14) return "ethertype";
    static const char* const kIpv4[20] = {"IPv4 version/IHL", "IPv4 TOS", "IPv4 total length", "IPv4 total length",
                                          "IPv4 ID", "IPv4 ID", "IPv4 flags/fragment offset", "IPv4 flags/fragment offset",
                                          "IPv4 TTL", "IPv4 protocol", "IPv4 header checksum", "IPv4 header checksum",
                                          "IPv4 source", "IPv4 source", "IPv4 source", "IPv4 source",
                                          "IPv4 destination", "IPv4 destination", "IPv4 destination", "IPv4 destination"};
    if (i < 34) return kIpv4[i - 14];
    return "IPv4 payload byte " + std::to_string(i - 34);
}

std::string encap_field(std::size_t i) {  // outer headers + inner frame
    if (i < 34) return "outer " + frame_field(i);
    static const char* const kUdpFields[8] = {"outer UDP source port", "outer UDP source port",
                                              "outer UDP destination port", "outer UDP destination port",
                                              "outer UDP length", "outer UDP length", "outer UDP checksum",
                                              "outer UDP checksum"};
    if (i < 42) return kUdpFields[i - 34];
    if (i < 50) return "overlay header byte " + std::to_string(i - 42) + (i >= 46 && i <= 48 ? " (VNI)" : "");
    return "inner " + frame_field(i - 50);
}

// "" when `a` and `b` are identical; otherwise where they first differ.
std::string first_difference(const Bytes& a, const Bytes& b, std::string (*field)(std::size_t)) {
    const std::string lengths =
        a.size() == b.size() ? "" : "; lengths " + std::to_string(a.size()) + " vs " + std::to_string(b.size());
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
        if (a[i] != b[i]) return "byte " + std::to_string(i) + " (" + field(i) + "): " + hex8(a[i]) + " vs " + hex8(b[i]) + lengths;
    return lengths.empty() ? "" : lengths.substr(2);
}

// An encapsulated packet from the fast path against the pipeline's: byte for byte once the fast
// path's outer IPv4 ID is the pipeline's (and its checksum updated for that change alone).
std::string diff_encapsulated(Bytes bpf, const Bytes& reference) {
    if (bpf.size() >= 34 && reference.size() >= 34) set_ipv4_id(bpf, 14, get16(&reference[18]));
    return first_difference(bpf, reference, encap_field);
}

// ---- counters ----------------------------------------------------------------------------------

// The counter structs and their named field lists are io's (io/xdp_stats.hpp): the same X-macros
// as the BPF side, summed over the CPUs the same way the daemon sums them.
using andromeda::io::kFastPathCounterFields;
using andromeda::io::kXdpCounterFields;

template <class Stats>
Stats minus(const Stats& after, const Stats& before) {
    constexpr std::size_t n = sizeof(Stats) / sizeof(__u64);
    std::array<__u64, n> a{}, b{};
    std::memcpy(a.data(), &after, sizeof after);
    std::memcpy(b.data(), &before, sizeof before);
    for (std::size_t i = 0; i < n; ++i) a[i] -= b[i];
    Stats out{};
    std::memcpy(&out, a.data(), sizeof out);
    return out;
}

// The packet counters that moved (not the *_bytes ones), in struct order, "name" or "name xN".
template <class Stats, class Fields>
std::vector<std::string> moved(const Stats& delta, const Fields& fields, const char* skip = "") {
    std::vector<std::string> names;
    for (const auto& f : fields) {
        const std::string name(f.name);
        const __u64 d = delta.*(f.member);
        if (d == 0 || name == skip || name.ends_with("_bytes")) continue;
        names.push_back(d == 1 ? name : name + " x" + std::to_string(d));
    }
    return names;
}

std::string joined(const std::vector<std::string>& names) {
    std::string s;
    for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
    return s.empty() ? "none" : s;
}

// ---- what each side did ------------------------------------------------------------------------

struct TestRun {
    int error = 0;  // errno of a failed BPF_PROG_TEST_RUN
    std::uint32_t retval = 0;
    Bytes out;
    Bytes meta;  // XDP: the metadata the program left in front of the packet
};

struct TenantBpf {
    TestRun run;
    andromeda_fp_stats delta{};
    std::uint32_t local_target = 0;  // a local delivery: the fabric entry's ifindex, bpf_redirect_peer's target
};

struct UnderlayBpf {
    TestRun xdp;
    andromeda_xdp_stats xdp_delta{};
    bool tc_ran = false;  // only what XDP passes reaches tc
    TestRun tc;
    andromeda_fp_stats tc_delta{};
    std::uint32_t target = 0;  // a decapsulation: the fabric entry's ifindex, bpf_redirect_peer's target
    std::uint32_t underlay = 0;  // the device XDP ran on
};

struct PipelineOut {
    dp::Verdict verdict = dp::Verdict::drop;
    dp::DropReason reason = dp::DropReason::none;
    std::vector<std::pair<dp::PortId, Bytes>> emitted;
};

std::string describe(const PipelineOut& p) {
    std::string s(dp::to_string(p.verdict));
    if (p.verdict == dp::Verdict::drop) s += " (" + std::string(dp::to_string(p.reason)) + ")";
    for (const auto& [port, bytes] : p.emitted)
        s += ", " + std::to_string(bytes.size()) + " bytes to port " + std::to_string(port);
    return s;
}

// The fast path's outcome named by its counters: "encap", "local", the punt reason
// ("punt_no_route", ...) or the drop ("drop_spoofed_mac", ...); `problem` when the counters and
// the return code do not tell one consistent story.
struct Outcome {
    std::string name;
    std::string problem;
};

// BPF_PROG_TEST_RUN refuses (EINVAL) an skb whose ethertype is IPv4 or IPv6 but which is too short
// for that header (the kernel reads the addresses of the network header). Such frames are run
// through the pipeline only, and counted as "untestable".
bool kernel_refuses(const Bytes& frame, const TestRun& run) {
    if (run.error != EINVAL || frame.size() < 14) return false;
    const std::uint16_t ethertype = get16(&frame[12]);
    return (ethertype == 0x0800 && frame.size() < 14 + 20) || (ethertype == 0x86dd && frame.size() < 14 + 40);
}

Outcome tenant_outcome(const TenantBpf& b, const Bytes& input) {
    const std::size_t length = input.size();
    if (kernel_refuses(input, b.run)) return {"untestable", ""};
    if (b.run.error != 0) return {"", "BPF_PROG_TEST_RUN failed: " + std::string(std::strerror(b.run.error))};
    const auto m = moved(b.delta, kFastPathCounterFields);
    const auto& d = b.delta;
    const bool redirect = b.run.retval == TC_ACT_REDIRECT;
    if (m == std::vector<std::string>{"encap_packets"} && redirect && d.encap_bytes == length) return {"encap", ""};
    // The outside, encapsulated towards the VPC's NAT node: compared byte for byte as any encap.
    if (m == std::vector<std::string>{"encap_packets", "to_nat_node_packets"} && redirect && d.encap_bytes == length)
        return {"encap", ""};
    if (m == std::vector<std::string>{"local_packets"} && redirect && d.local_bytes == length) return {"local", ""};
    if (m.size() == 2 && m[0] == "punt_packets" && m[1].starts_with("punt_") && redirect && d.punt_bytes == length)
        return {m[1], ""};
    if (m.size() == 1 && m[0].starts_with("drop_") && b.run.retval == TC_ACT_SHOT) return {m[0], ""};
    return {"", "tc tenant: return code " + std::to_string(b.run.retval) + ", counters " + joined(m)};
}

Outcome xdp_outcome(const UnderlayBpf& b) {
    if (b.xdp.error != 0) return {"", "BPF_PROG_TEST_RUN (XDP) failed: " + std::string(std::strerror(b.xdp.error))};
    const auto m = moved(b.xdp_delta, kXdpCounterFields, "rx_packets");
    const std::uint32_t r = b.xdp.retval;
    if (b.xdp_delta.rx_packets == 1 && m.size() == 1) {
        if (m[0] == "pass_fastpath" && r == XDP_PASS) return {"fastpath", ""};
        if (m[0] == "pass_host" && r == XDP_PASS) return {"host", ""};
        // No AF_XDP socket is bound here: steering ends in drop_no_socket (redirect_overlay with one).
        if ((m[0] == "drop_no_socket" && r == XDP_DROP) || (m[0] == "redirect_overlay" && r == XDP_REDIRECT))
            return {"socket", ""};
        if (m[0].starts_with("drop_") && r == XDP_DROP) return {m[0], ""};
    }
    return {"", "XDP: return code " + std::to_string(r) + ", counters " + joined(m)};
}

Outcome tc_underlay_outcome(const UnderlayBpf& b, const Bytes& input) {
    const std::size_t length = input.size();
    if (kernel_refuses(input, b.tc)) return {"untestable", ""};
    if (b.tc.error != 0) return {"", "BPF_PROG_TEST_RUN (tc underlay) failed: " + std::string(std::strerror(b.tc.error))};
    const auto m = moved(b.tc_delta, kFastPathCounterFields);
    if (m.empty() && b.tc.retval == static_cast<std::uint32_t>(TC_ACT_UNSPEC)) return {"pass", ""};
    if (m == std::vector<std::string>{"decap_packets"} && b.tc.retval == TC_ACT_REDIRECT &&
        b.tc_delta.decap_bytes == length - ANDROMEDA_ENCAP_OVERHEAD)
        return {"decap", ""};
    if (m.size() == 1 && m[0].starts_with("drop_") && b.tc.retval == TC_ACT_SHOT) return {m[0], ""};
    return {"", "tc underlay: return code " + std::to_string(b.tc.retval) + ", counters " + joined(m)};
}

// ---- the comparison ----------------------------------------------------------------------------

bool port_security_drop(const std::string& outcome) {
    return outcome == "drop_spoofed_mac" || outcome == "drop_spoofed_ip" || outcome == "drop_spoofed_arp";
}

// Every way a tenant frame's two outcomes disagree; empty when they agree.
std::vector<std::string> check_tenant(const Bytes& input, const TenantBpf& b, const PipelineOut& p,
                                      dp::PortId underlay) {
    std::vector<std::string> problems;
    const Outcome o = tenant_outcome(b, input);
    if (!o.problem.empty()) return {o.problem};
    const bool one = p.emitted.size() == 1;
    if (o.name == "encap") {
        if (p.verdict != dp::Verdict::forward || !one || p.emitted[0].first != underlay)
            problems.push_back("the fast path encapsulated it, the pipeline: " + describe(p));
        else if (const std::string d = diff_encapsulated(b.run.out, p.emitted[0].second); !d.empty())
            problems.push_back("the encapsulated packets differ at " + d);
    } else if (o.name == "local") {
        if (p.verdict != dp::Verdict::deliver || !one || p.emitted[0].first != b.local_target)
            problems.push_back("the fast path delivered it to ifindex " + std::to_string(b.local_target) +
                               ", the pipeline: " + describe(p));
        else if (const std::string d = first_difference(b.run.out, p.emitted[0].second, frame_field); !d.empty())
            problems.push_back("the delivered frames differ at " + d);
    } else if (o.name.starts_with("punt_")) {
        if (b.run.out != input)
            problems.push_back("the punted frame was changed: " + first_difference(b.run.out, input, frame_field));
    } else if (o.name == "untestable") {
        // the pipeline alone decides
    } else if (port_security_drop(o.name) || o.name == "drop_no_port") {
        // (drop_no_port: a port the reload removed, whose tc program the daemon detaches.)
        if (p.verdict != dp::Verdict::drop)
            problems.push_back("the fast path dropped it (" + o.name + "), the pipeline: " + describe(p));
        else if (o.name == "drop_spoofed_mac" && p.reason != dp::DropReason::spoofed_source_mac &&
                 p.reason != dp::DropReason::malformed_ethernet)  // (a VLAN tag cut short: refused first)
            problems.push_back("the fast path dropped a spoofed MAC, the pipeline: " + describe(p));
    } else {
        problems.push_back("the fast path did something it never should here: " + o.name);
    }
    if (p.verdict == dp::Verdict::drop && p.reason == dp::DropReason::spoofed_source_mac && o.name != "drop_spoofed_mac" &&
        o.name != "untestable")
        problems.push_back("the pipeline drops a spoofed source MAC, the fast path: " + o.name);
    return problems;
}

// What XDP hands tc with a packet for the fast path (struct andromeda_fp_handoff, in the packet's metadata)
// is what tc's own check finds for it: the target's port, its MAC, the gateway MAC (tc, run here
// without the metadata, decapsulated by itself into b.tc.out). Empty when they agree.
std::string check_handoff(const UnderlayBpf& b) {
    const Bytes& m = b.xdp.meta;
    andromeda_fp_handoff h{};
    if (m.size() != sizeof h)
        return "XDP handed the packet over with " + std::to_string(m.size()) + " bytes of metadata, not " + std::to_string(sizeof h);
    std::memcpy(&h, m.data(), sizeof h);
    if (h.cookie != kHandoffCookie) return "the handed-over metadata has another cookie than this node's";
    if (h.ifindex != b.target) return "XDP handed over ifindex " + std::to_string(h.ifindex) + ", the target is " + std::to_string(b.target);
    if (b.tc.out.size() < 12 || !std::equal(h.mac, h.mac + 6, b.tc.out.begin()) || !std::equal(h.gateway_mac, h.gateway_mac + 6, b.tc.out.begin() + 6))
        return "XDP handed over other MACs than tc writes into the decapsulated frame";
    if (h.dev != b.underlay) return "XDP handed over device " + std::to_string(h.dev) + ", it ran on " + std::to_string(b.underlay);
    return "";
}

std::vector<std::string> check_underlay(const Bytes& input, const UnderlayBpf& b, const PipelineOut& p) {
    std::vector<std::string> problems;
    const Outcome x = xdp_outcome(b);
    if (!x.problem.empty()) return {x.problem};
    if (x.name == "fastpath" || x.name == "host") {
        if (!b.tc_ran) return {"XDP passed it, but tc did not run"};
        const Outcome t = tc_underlay_outcome(b, input);
        if (!t.problem.empty()) return {t.problem};
        if (x.name == "fastpath") {
            if (t.name != "decap")
                problems.push_back("XDP handed it to the fast path (pass_fastpath), tc then: " + t.name +
                                   "; the pipeline: " + describe(p));
            else if (p.verdict != dp::Verdict::deliver || p.emitted.size() != 1 || p.emitted[0].first != b.target)
                problems.push_back("the fast path decapsulated it for ifindex " + std::to_string(b.target) +
                                   ", the pipeline: " + describe(p));
            else if (const std::string d = first_difference(b.tc.out, p.emitted[0].second, frame_field); !d.empty())
                problems.push_back("the decapsulated frames differ at " + d);
            else if (const std::string h = check_handoff(b); !h.empty())
                problems.push_back(h);
        } else {
            if (!b.xdp.meta.empty()) problems.push_back("XDP left metadata on host traffic");
            if (t.name != "pass" && t.name != "untestable") problems.push_back("XDP passed host traffic (pass_host), tc then: " + t.name);
            if (p.verdict == dp::Verdict::deliver || p.verdict == dp::Verdict::forward)
                problems.push_back("XDP passed it to the host stack, the pipeline: " + describe(p));
        }
    } else if (x.name != "socket" && p.verdict != dp::Verdict::drop) {
        problems.push_back("XDP dropped it (" + x.name + "), the pipeline: " + describe(p));
    }
    return problems;
}

// ---- the namespace, its devices, and one node's fast path and pipeline ------------------------

struct Devices {
    std::string error;  // empty: ready
    std::uint32_t underlay = 0;
    std::map<std::string, std::uint32_t> tenants;     // port name -> ifindex
    std::map<std::uint32_t, aio::PuntDevices> punts;  // tenant ifindex -> its punt pair
};

bool shell(const std::string& command, std::string& error) {
    const int rc = std::system(command.c_str());
    if (rc != 0) error = "`" + command + "` failed (" + std::to_string(rc) + ")";
    return rc == 0;
}

bool add_veth(const std::string& name, const std::string& peer, std::uint32_t& ifindex, std::string& error) {
    if (!shell("ip link add " + name + " type veth peer name " + peer, error)) return false;
    ifindex = if_nametoindex(name.c_str());
    if (ifindex == 0) error = "no ifindex for " + name;
    return ifindex != 0;
}

// Enters a network namespace of the process's own and makes the devices, once.
const Devices& devices() {
    static const Devices made = [] {
        Devices d;
        if (!andromeda::testing::enter_private_netns()) {
            d.error = "could not enter a private network namespace";
            return d;
        }
        if (!add_veth("eth1", "eth1-peer", d.underlay, d.error) ||
            !shell("ip link set dev eth1 address " + mac_text(kUnderlayMac), d.error))
            return d;
        for (const VpcDef& v : vpcs())
            for (const EndpointDef& e : v.endpoints) {
                if (e.node != "node1" || e.port == kPortWithoutDevice) continue;
                std::uint32_t tenant = 0;
                if (!add_veth(e.port, e.port + "-t", tenant, d.error)) return d;
                d.tenants[e.port] = tenant;
                aio::PuntDevices punt{};
                punt.visible = aio::punt_visible_name(tenant);
                punt.steering = aio::punt_steering_name(tenant);
                if (!add_veth(punt.visible, punt.steering, punt.visible_ifindex, d.error)) return d;
                punt.steering_ifindex = if_nametoindex(punt.steering.c_str());
                d.punts[tenant] = punt;
            }
        return d;
    }();
    return made;
}

constexpr std::uint32_t kHeadroom = 256;  // in front of a frame in its chunk, as in a UMEM

class World {
public:
    World(Encap encap, const std::string& toml) : encap_(encap), dev_(devices()) {
        if (!dev_.error.empty()) {
            error_ = dev_.error;
            return;
        }
        snapshot_ = load(toml);
        if (!snapshot_) return;
        skel_ = Skel(andromeda_xdp::open());
        if (!skel_) {
            error_ = "opening the skeleton failed";
            return;
        }
        skel_->rodata->overlay_port = overlay_port(encap);
        skel_->rodata->encap_kind = encap == Encap::vxlan ? ANDROMEDA_ENCAP_VXLAN : ANDROMEDA_ENCAP_ANDROMEDA;
        if (andromeda_xdp::load(skel_.get()) != 0) {
            error_ = "loading andromeda_xdp.bpf.o failed";
            skel_.reset();
            return;
        }
        local_.underlay_address = wire::Ipv4Address(kNode1);
        local_.next_hops[kNode2] = wire::MacAddress(kNode2Mac);  // node3's is not known
        if (!apply(aio::plan_full(*snapshot_, local_)) || !write_ports()) return;
        andromeda_fp_config config{};
        config.enabled = 1;
        config.underlay_ifindex = dev_.underlay;
        config.underlay_ip = htonl(kNode1);
        config.underlay_mtu = snapshot_->local().underlay_mtu;
        std::copy(kUnderlayMac.begin(), kUnderlayMac.end(), config.underlay_mac);
        config.handoff_cookie = kHandoffCookie;
        const __u32 key = 0;
        if (bpf_map_update_elem(fd(skel_->maps.andromeda_fp_config), &key, &config, BPF_ANY) != 0) {
            error_ = "writing andromeda_fp_config: " + std::string(std::strerror(errno));
            return;
        }

        dp::PipelineConfig c;
        c.underlay_mac = wire::MacAddress(kUnderlayMac);
        c.next_hops.push_back(dp::NextHop{wire::Ipv4Address(kNode2), wire::MacAddress(kNode2Mac)});
        c.ports.push_back(dp::PortBinding{dev_.underlay, dp::PortRole::underlay, {}});
        for (const auto& [name, ifindex] : dev_.tenants) c.ports.push_back(dp::PortBinding{ifindex, dp::PortRole::tenant, {}});
        pipeline_ = std::make_unique<dp::Pipeline>(std::move(c));
        spare_chunks_.assign(64, Bytes(4096));
        for (Bytes& chunk : spare_chunks_)
            spares_.push_back(dp::PacketBuffer{chunk.data(), static_cast<std::uint32_t>(chunk.size()), kHeadroom, 0});
        slots_.resize(spares_.size() + dp::kMaxBatch);
        sink_ = dp::FrameSink(slots_, spares_);
    }

    [[nodiscard]] const std::string& error() const { return error_; }
    [[nodiscard]] Encap encap() const { return encap_; }
    [[nodiscard]] std::uint32_t underlay() const { return dev_.underlay; }
    [[nodiscard]] std::uint32_t tenant(const std::string& port) const { return dev_.tenants.at(port); }
    [[nodiscard]] const andromeda_xdp& skel() const { return *skel_; }
    static int fd(const bpf_map* map) { return bpf_map__fd(map); }

    // A reload as the daemon does it: plan_diff into the maps, the port table re-synced, and
    // the pipeline on the new snapshot.
    bool reload(const std::string& toml) {
        auto next = load(toml);
        if (!next) return false;
        const fab::FabricDiff diff = fab::diff_fabrics(snapshot_.get(), *next);
        snapshot_ = std::move(next);
        return apply(aio::plan_diff(*snapshot_, diff, local_)) && write_ports();
    }

    // andromeda_fp_config.encap_headroom: what the encap makes room for in front of a small frame
    // (andromedad writes ANDROMEDA_ENCAP_HEADROOM on a veth underlay, 0 elsewhere). The frame
    // that leaves must be the same either way.
    void set_encap_headroom(std::uint16_t bytes) {
        const __u32 key = 0;
        andromeda_fp_config config{};
        ASSERT_EQ(bpf_map_lookup_elem(fd(skel_->maps.andromeda_fp_config), &key, &config), 0);
        config.encap_headroom = bytes;
        ASSERT_EQ(bpf_map_update_elem(fd(skel_->maps.andromeda_fp_config), &key, &config, BPF_ANY), 0);
    }

    TenantBpf run_tenant(std::uint32_t ifindex, const Bytes& frame) {
        TenantBpf b;
        const auto before = fp_stats();
        b.run = test_run_tc(bpf_program__fd(skel_->progs.andromeda_tc_tenant), ifindex, frame);
        b.delta = minus(fp_stats(), before);
        andromeda_port port{};
        if (frame.size() >= 34 && bpf_map_lookup_elem(fd(skel_->maps.andromeda_ports), &ifindex, &port) == 0) {
            andromeda_fabric_key key{};
            key.vni = port.vni;
            std::memcpy(&key.ip, &frame[30], 4);
            b.local_target = fabric_ifindex(key);
        }
        return b;
    }

    UnderlayBpf run_underlay(const Bytes& frame) {
        UnderlayBpf b;
        b.underlay = dev_.underlay;
        const auto xdp_before = andromeda::io::read_xdp_stats(fd(skel_->maps.andromeda_stats)).totals();
        b.xdp = test_run_xdp(bpf_program__fd(skel_->progs.andromeda_xdp), dev_.underlay, frame);
        b.xdp_delta = minus(andromeda::io::read_xdp_stats(fd(skel_->maps.andromeda_stats)).totals(), xdp_before);
        if (b.xdp.error == 0 && b.xdp.retval == XDP_PASS) {
            b.tc_ran = true;
            const auto before = fp_stats();
            b.tc = test_run_tc(bpf_program__fd(skel_->progs.andromeda_tc_underlay), dev_.underlay, frame);
            b.tc_delta = minus(fp_stats(), before);
        }
        if (frame.size() >= 84) {
            andromeda_fabric_key key{};
            key.vni = static_cast<std::uint32_t>(frame[46]) << 16 | static_cast<std::uint32_t>(frame[47]) << 8 | frame[48];
            std::memcpy(&key.ip, &frame[80], 4);
            b.target = fabric_ifindex(key);
        }
        return b;
    }

    // The pipeline as the daemon runs it: in place, in a chunk with headroom.
    PipelineOut run_pipeline(dp::PortId port, const Bytes& frame) {
        input_chunk_.assign(std::max<std::size_t>(4096, kHeadroom + frame.size()), 0);
        std::copy(frame.begin(), frame.end(), input_chunk_.begin() + kHeadroom);
        const dp::PacketBuffer in{input_chunk_.data(), static_cast<std::uint32_t>(input_chunk_.size()), kHeadroom,
                                  static_cast<std::uint32_t>(frame.size())};
        sink_.reset();
        const dp::FrameResult r = pipeline_->process_in_place(port, in, *snapshot_, sink_);
        PipelineOut out;
        out.verdict = r.verdict;
        out.reason = r.drop_reason;
        for (const dp::Emission& e : sink_.emissions())
            out.emitted.emplace_back(e.port, Bytes(e.frame.data(), e.frame.data() + e.frame.length));
        return out;
    }

private:
    std::shared_ptr<const fab::FabricSnapshot> load(const std::string& toml) {
        fab::LoadOptions options;
        options.ports = [this](std::string_view name) -> std::optional<std::uint32_t> {
            const auto it = dev_.tenants.find(std::string(name));
            if (it == dev_.tenants.end()) return std::nullopt;
            return it->second;
        };
        auto loaded = fab::load_fabric_string(toml, "fast_path_test.toml", options);
        if (!loaded.ok()) error_ = "the fabric did not load: " + fab::to_string(loaded.errors);
        return loaded.snapshot;
    }

    template <class K, class V>
    bool apply_table(const bpf_map* map, const aio::TableChanges<K, V>& changes, const char* name) {
        for (const K& k : changes.erases) bpf_map_delete_elem(fd(map), &k);
        for (const auto& [k, v] : changes.upserts)
            if (bpf_map_update_elem(fd(map), &k, &v, BPF_ANY) != 0) {
                error_ = std::string("writing ") + name + ": " + std::strerror(errno);
                return false;
            }
        return true;
    }

    bool apply(const aio::FabricMapPlan& plan) {
        return apply_table(skel_->maps.andromeda_peers, plan.peers, "peers") &&
               apply_table(skel_->maps.andromeda_vnis, plan.vnis, "vnis") &&
               apply_table(skel_->maps.andromeda_fabric, plan.fabric, "fabric") &&
               apply_table(skel_->maps.andromeda_nat_addrs, plan.nat_addrs, "nat_addrs") &&
               apply_table(skel_->maps.andromeda_vpc_cidrs, plan.vpc_cidrs, "vpc_cidrs");
    }

    // The port map as the daemon computes it: tenant ports with their punt pairs, the underlay.
    bool write_ports() {
        aio::PortTable table = aio::tenant_ports(*snapshot_, port_slots_);
        aio::add_punt_ports(table, dev_.punts);
        table[dev_.underlay] = aio::make_port(ANDROMEDA_PORT_UNDERLAY, port_slots_.slot_for("eth1"));
        const int ports = fd(skel_->maps.andromeda_ports);
        for (const auto& [ifindex, port] : written_ports_)
            if (table.count(ifindex) == 0) bpf_map_delete_elem(ports, &ifindex);
        for (const auto& [ifindex, port] : table)
            if (bpf_map_update_elem(ports, &ifindex, &port, BPF_ANY) != 0) {
                error_ = "writing ports: " + std::string(std::strerror(errno));
                return false;
            }
        written_ports_ = table;
        return true;
    }

    std::uint32_t fabric_ifindex(const andromeda_fabric_key& key) const {
        andromeda_fabric_entry entry{};
        if (bpf_map_lookup_elem(fd(skel_->maps.andromeda_fabric), &key, &entry) != 0) return 0;
        return entry.ifindex;
    }

    andromeda_fp_stats fp_stats() const { return andromeda::io::read_fast_path_stats(fd(skel_->maps.andromeda_fp_stats)).totals(); }

    static TestRun test_run_tc(int prog, std::uint32_t ifindex, const Bytes& frame) {
        TestRun r;
        r.out.assign(frame.size() + 512, 0);
        __sk_buff ctx{};
        ctx.ifindex = ifindex;  // the device the program runs on: it must exist in this namespace
        bpf_test_run_opts opts{};
        opts.sz = sizeof opts;
        opts.data_in = frame.data();
        opts.data_size_in = static_cast<__u32>(frame.size());
        opts.data_out = r.out.data();
        opts.data_size_out = static_cast<__u32>(r.out.size());
        opts.ctx_in = &ctx;
        opts.ctx_size_in = sizeof ctx;
        opts.repeat = 1;
        if (bpf_prog_test_run_opts(prog, &opts) != 0) {
            r.error = errno;
            r.out.clear();
            return r;
        }
        r.retval = opts.retval;
        r.out.resize(opts.data_size_out);
        return r;
    }

    static TestRun test_run_xdp(int prog, std::uint32_t ifindex, const Bytes& frame) {
        TestRun r;
        xdp_md ctx{};
        ctx.data_end = static_cast<__u32>(frame.size());
        ctx.ingress_ifindex = ifindex;
        ctx.rx_queue_index = 0;
        xdp_md ctx_out{};
        r.out.assign(frame.size() + 512, 0);
        bpf_test_run_opts opts{};
        opts.sz = sizeof opts;
        opts.data_in = frame.data();
        opts.data_size_in = static_cast<__u32>(frame.size());
        opts.data_out = r.out.data();
        opts.data_size_out = static_cast<__u32>(r.out.size());
        opts.ctx_in = &ctx;
        opts.ctx_size_in = sizeof ctx;
        opts.ctx_out = &ctx_out;
        opts.ctx_size_out = sizeof ctx_out;
        opts.repeat = 1;
        if (bpf_prog_test_run_opts(prog, &opts) != 0) {
            r.error = errno;
            r.out.clear();
            return r;
        }
        r.retval = opts.retval;
        // The output starts at the metadata; ctx_out.data is where the packet starts in it.
        r.out.resize(opts.data_size_out);
        const std::size_t meta = std::min<std::size_t>(ctx_out.data, r.out.size());
        r.meta.assign(r.out.begin(), r.out.begin() + static_cast<std::ptrdiff_t>(meta));
        r.out.erase(r.out.begin(), r.out.begin() + static_cast<std::ptrdiff_t>(meta));
        return r;
    }

    Encap encap_;
    const Devices& dev_;
    std::string error_;
    std::shared_ptr<const fab::FabricSnapshot> snapshot_;
    aio::LocalContext local_;
    aio::PortSlots port_slots_;
    aio::PortTable written_ports_;
    Skel skel_;
    std::unique_ptr<dp::Pipeline> pipeline_;
    std::vector<Bytes> spare_chunks_;
    std::vector<dp::PacketBuffer> spares_;
    std::vector<dp::Emission> slots_;
    dp::FrameSink sink_;
    Bytes input_chunk_;
};

// ---- cases and their runs ----------------------------------------------------------------------

struct Case {
    std::string name;
    std::string port;  // the tenant port it arrives on; empty: the underlay
    Bytes frame;
    std::string expect;  // the fast path's expected outcome; empty: whatever it is, as long as both agree
};

// Outcomes of a run of cases, "fast path -> pipeline", for the coverage report and its checks.
struct Tally {
    std::map<std::string, int> pairs;
    std::map<std::string, int> fast_path;
    int cases = 0;
    int failures = 0;

    void add(const std::string& bpf, const PipelineOut& p) {
        ++cases;
        ++fast_path[bpf];
        std::string verdict(dp::to_string(p.verdict));
        if (p.verdict == dp::Verdict::drop) verdict += "(" + std::string(dp::to_string(p.reason)) + ")";
        ++pairs[bpf + " -> " + verdict];
    }
    [[nodiscard]] int count(const std::string& outcome) const {
        const auto it = fast_path.find(outcome);
        return it == fast_path.end() ? 0 : it->second;
    }
    [[nodiscard]] int count_prefix(const std::string& prefix) const {
        int n = 0;
        for (const auto& [name, c] : fast_path) n += name.starts_with(prefix) ? c : 0;
        return n;
    }
    [[nodiscard]] std::string report() const {
        std::string s = std::to_string(cases) + " frames, " + std::to_string(failures) + " disagreements\n";
        for (const auto& [pair, n] : pairs) s += "  " + std::to_string(n) + "\t" + pair + "\n";
        return s;
    }
};

constexpr int kMaxReported = 8;  // frames reported in full; the rest are counted

// Runs one case through both sides and reports any disagreement (and an unexpected outcome).
void run_case(World& w, const Case& c, Tally& tally, const std::string& context) {
    std::vector<std::string> problems;
    std::string outcome;
    std::string bpf_text;
    PipelineOut p;
    if (!c.port.empty()) {
        const std::uint32_t ifindex = w.tenant(c.port);
        const TenantBpf b = w.run_tenant(ifindex, c.frame);
        p = w.run_pipeline(ifindex, c.frame);
        problems = check_tenant(c.frame, b, p, w.underlay());
        const Outcome o = tenant_outcome(b, c.frame);
        outcome = o.name.empty() ? "?" : o.name;
        bpf_text = "tc tenant -> " + outcome + ", return " + std::to_string(b.run.retval) + ", " +
                   std::to_string(b.run.out.size()) + " bytes: " + hex_start(b.run.out);
    } else {
        const UnderlayBpf b = w.run_underlay(c.frame);
        p = w.run_pipeline(w.underlay(), c.frame);
        problems = check_underlay(c.frame, b, p);
        const Outcome x = xdp_outcome(b);
        outcome = x.name.empty() ? "?" : x.name;
        bpf_text = "XDP -> " + outcome;
        if (b.tc_ran)
            bpf_text += "; tc underlay -> " + tc_underlay_outcome(b, c.frame).name + ", return " +
                        std::to_string(b.tc.retval) + ", " + std::to_string(b.tc.out.size()) + " bytes: " + hex_start(b.tc.out);
    }
    if (!c.expect.empty() && outcome != c.expect)
        problems.push_back("expected the fast path's outcome " + c.expect + ", got " + outcome);
    tally.add(outcome, p);
    if (problems.empty()) return;
    if (++tally.failures > kMaxReported) return;
    std::string pipeline_text = describe(p);
    for (const auto& [port, bytes] : p.emitted) pipeline_text += "\n    to " + std::to_string(port) + ": " + hex_start(bytes);
    ADD_FAILURE() << context << ": " << c.name << " (" << to_string(w.encap()) << ", "
                  << (c.port.empty() ? "underlay" : c.port) << ")\n  " << joined(problems) << "\n  input "
                  << c.frame.size() << " bytes: " << hex(c.frame) << "\n  fast path: " << bpf_text
                  << "\n  pipeline: " << pipeline_text;
}

// ---- crafted cases -----------------------------------------------------------------------------

// A tenant frame from `from` (vpc, last octet) to `to_ip`, to its VPC's gateway MAC.
Ipv4Spec tenant_spec(const std::string& vpc, std::uint32_t from, std::uint32_t to_ip, std::size_t total = 100,
                     std::uint8_t protocol = kUdp) {
    const EndpointDef& e = endpoint(vpc, from);
    Ipv4Spec s;
    s.src_mac = e.mac;
    s.dst_mac = vpc_named(vpc).gateway_mac;
    s.src = e.ip;
    s.dst = to_ip;
    s.protocol = protocol;
    s.total = total;
    return s;
}

std::vector<Case> crafted_tenant_cases() {
    std::vector<Case> cases;
    const auto add = [&](std::string name, std::string port, Bytes frame, std::string expect) {
        cases.push_back(Case{std::move(name), std::move(port), std::move(frame), std::move(expect)});
    };
    const std::uint32_t b10 = ip4(10, 0, 0, 10), b11 = ip4(10, 0, 0, 11), b20 = ip4(10, 0, 0, 20);
    const auto blue = [&](std::uint32_t to, std::size_t total = 100, std::uint8_t protocol = kUdp) {
        return tenant_spec("blue", 10, to, total, protocol);
    };

    add("UDP to a remote endpoint", "tap-b10", ipv4_frame(blue(b20)), "encap");
    add("TCP to a remote endpoint", "tap-b10", ipv4_frame(blue(b20, 600, kTcp)), "encap");
    add("ICMP echo to a remote endpoint", "tap-b10", ipv4_frame(blue(b20, 84, kIcmp)), "encap");
    add("GRE (no ports in the hash) to a remote endpoint", "tap-b10", ipv4_frame(blue(b20, 200, 47)), "encap");
    add("UDP to the second remote endpoint", "tap-b11", ipv4_frame(tenant_spec("blue", 11, ip4(10, 0, 0, 21))), "encap");
    add("a bare 20-byte IPv4 header (protocol UDP, no ports)", "tap-b10", ipv4_frame(blue(b20, 20)), "encap");
    add("24 bytes: the UDP ports and nothing more", "tap-b10", ipv4_frame(blue(b20, 24)), "encap");
    for (const std::uint8_t ttl : {0, 1, 255}) {
        Ipv4Spec s = blue(b20);
        s.ttl = ttl;
        add("TTL " + std::to_string(ttl) + " (neither side routes by it)", "tap-b10", ipv4_frame(s), "encap");
    }
    {
        Ipv4Spec s = blue(b20, 300);
        s.fragment = kMf;
        add("a first fragment (MF)", "tap-b10", ipv4_frame(s), "encap");
        s.fragment = 185;
        add("a later fragment (offset 185)", "tap-b10", ipv4_frame(s), "encap");
        s.tos = 0xb8;
        s.fragment = kDf;
        add("TOS 0xb8 (not copied to the outer header)", "tap-b10", ipv4_frame(s), "encap");
    }

    // Every length around the path MTU, with and without DF: blue's own MTU (1400) and green's,
    // which is the underlay's less the overlay (1450).
    for (const auto& [vpc, port, to] : {std::tuple{"blue", "tap-b10", b20},
                                        std::tuple{"green", "tap-g10", ip4(10, 0, 0, 20)}}) {
        const std::uint32_t mtu = vpc_named(vpc).inner_mtu();
        for (std::uint32_t total = mtu - 2; total <= mtu + 2; ++total)
            for (const bool df : {true, false})
                for (const std::uint8_t protocol : {kUdp, kTcp}) {
                    Ipv4Spec s = tenant_spec(vpc, 10, to, total, protocol);
                    s.fragment = df ? kDf : 0;
                    add(std::string(vpc) + ": " + std::to_string(total) + " bytes (MTU " + std::to_string(mtu) + ")" +
                            (df ? ", DF" : "") + (protocol == kTcp ? ", TCP" : ", UDP"),
                        port, ipv4_frame(s), total <= mtu ? "encap" : "punt_too_big");
                }
    }

    add("to a local endpoint", "tap-b10", ipv4_frame(blue(b11)), "local");
    add("to itself", "tap-b10", ipv4_frame(blue(b10)), "local");
    add("to a local endpoint, far over the MTU (no overlay in between)", "tap-b10", ipv4_frame(blue(b11, 1600)), "local");
    add("green to its local endpoint", "tap-g10", ipv4_frame(tenant_spec("green", 10, ip4(10, 0, 0, 40))), "local");
    add("to the local endpoint without a device", "tap-b10", ipv4_frame(blue(ip4(10, 0, 0, 12))), "punt_no_route");
    add("to node3's endpoint (no next hop known)", "tap-b10", ipv4_frame(blue(ip4(10, 0, 0, 30))), "punt_no_next_hop");
    add("to an unknown address of the VPC", "tap-b10", ipv4_frame(blue(ip4(10, 0, 0, 99))), "punt_no_route");
    add("outside the VPC, which has no NAT", "tap-b10", ipv4_frame(blue(ip4(8, 8, 8, 8))), "punt_no_route");
    add("to the subnet broadcast address", "tap-b10", ipv4_frame(blue(ip4(10, 0, 0, 255))), "punt_no_route");
    add("to the gateway (ICMP echo)", "tap-b10", ipv4_frame(blue(ip4(10, 0, 0, 1), 84, kIcmp)), "punt_to_gateway");
    add("to the gateway (UDP)", "tap-b10", ipv4_frame(blue(ip4(10, 0, 0, 1))), "punt_to_gateway");
    add("to 224.0.0.251 (multicast)", "tap-b10", ipv4_frame(blue(ip4(224, 0, 0, 251))), "punt_to_gateway");
    add("to 239.255.255.250 (multicast)", "tap-b10", ipv4_frame(blue(ip4(239, 255, 255, 250))), "punt_to_gateway");
    add("to 255.255.255.255", "tap-b10", ipv4_frame(blue(0xffffffff)), "punt_to_gateway");
    {
        Ipv4Spec s = blue(b20);
        s.dst_mac = kBroadcastMac;
        add("to the broadcast MAC", "tap-b10", ipv4_frame(s), "punt_not_to_gateway");
        s.dst_mac = {0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb};
        add("to a multicast MAC", "tap-b10", ipv4_frame(s), "punt_not_to_gateway");
        s.dst_mac = endpoint("blue", 20).mac;
        add("to the endpoint's own MAC, not the gateway's", "tap-b10", ipv4_frame(s), "punt_not_to_gateway");
        s.dst_mac = vpc_named("green").gateway_mac;
        add("to another VPC's gateway MAC", "tap-b10", ipv4_frame(s), "punt_not_to_gateway");
    }

    // Port security.
    {
        Ipv4Spec s = blue(b20);
        s.src_mac = endpoint("blue", 11).mac;
        add("spoofed source MAC (another endpoint's)", "tap-b10", ipv4_frame(s), "drop_spoofed_mac");
        s.src_mac = {0x02, 0x99, 0x99, 0x99, 0x99, 0x99};
        add("spoofed source MAC (nobody's)", "tap-b10", ipv4_frame(s), "drop_spoofed_mac");
        s = blue(b20);
        s.src = b11;
        add("spoofed source IPv4 (another endpoint's)", "tap-b10", ipv4_frame(s), "drop_spoofed_ip");
        s.src = ip4(10, 0, 0, 200);
        add("spoofed source IPv4 (nobody's)", "tap-b10", ipv4_frame(s), "drop_spoofed_ip");
        s.dst = ip4(10, 0, 0, 1);
        add("spoofed source IPv4 to the gateway", "tap-b10", ipv4_frame(s), "drop_spoofed_ip");
        Ipv4Spec g = tenant_spec("grey", 10, ip4(10, 2, 0, 20));
        g.src = ip4(10, 2, 0, 20);
        add("spoofed source IPv4 where the fast path is off", "tap-y10", ipv4_frame(g), "drop_spoofed_ip");
        s = blue(b20);
        s.src = b11;
        s.options = 4;
        add("spoofed source IPv4 behind IPv4 options", "tap-b10", ipv4_frame(s), "punt_ip_header");
    }
    const EndpointDef& e10 = endpoint("blue", 10);
    add("ARP request from the endpoint", "tap-b10", arp_frame(e10.mac, kBroadcastMac, 1, e10.mac, b10, ip4(10, 0, 0, 1)),
        "punt_not_ipv4");
    add("ARP probe (sender 0.0.0.0)", "tap-b10", arp_frame(e10.mac, kBroadcastMac, 1, e10.mac, 0, b10), "punt_not_ipv4");
    add("ARP reply from the endpoint", "tap-b10", arp_frame(e10.mac, kDefaultGatewayMac, 2, e10.mac, b10, ip4(10, 0, 0, 1)),
        "punt_not_ipv4");
    add("ARP with a spoofed sender IPv4", "tap-b10", arp_frame(e10.mac, kBroadcastMac, 1, e10.mac, b11, ip4(10, 0, 0, 1)),
        "drop_spoofed_arp");
    add("ARP with a spoofed sender MAC", "tap-b10",
        arp_frame(e10.mac, kBroadcastMac, 1, endpoint("blue", 11).mac, b10, ip4(10, 0, 0, 1)), "drop_spoofed_arp");
    add("ARP (a reply) with a spoofed sender IPv4", "tap-b10",
        arp_frame(e10.mac, kBroadcastMac, 2, e10.mac, ip4(10, 0, 0, 1), b11), "drop_spoofed_arp");
    {
        Bytes arp = arp_frame(e10.mac, kBroadcastMac, 1, e10.mac, b11, ip4(10, 0, 0, 1));
        arp[14 + 4] = 8;  // hardware address length: not Ethernet/IPv4, the pipeline's to refuse
        add("ARP of another hardware type (spoofed sender)", "tap-b10", arp, "punt_not_ipv4");
        arp = arp_frame(e10.mac, kBroadcastMac, 1, e10.mac, b11, ip4(10, 0, 0, 1));
        arp.resize(14 + 27);
        add("ARP cut a byte short (spoofed sender)", "tap-b10", arp, "punt_not_ipv4");
        arp = arp_frame(e10.mac, kBroadcastMac, 1, e10.mac, b11, ip4(10, 0, 0, 1));
        insert_tag(arp, 0x8100, 10);
        add("VLAN-tagged ARP (spoofed sender)", "tap-b10", arp, "punt_not_ipv4");
    }

    // Headers the fast path does not take.
    {
        Ipv4Spec s = blue(b20);
        s.options = 4;
        add("IPv4 options (4 bytes)", "tap-b10", ipv4_frame(s), "punt_ip_header");
        s.options = 40;
        add("IPv4 options (40 bytes)", "tap-b10", ipv4_frame(s), "punt_ip_header");
        Bytes f = ipv4_frame(blue(b20));
        f[24] ^= 0x01;
        add("bad IPv4 header checksum", "tap-b10", f, "punt_ip_header");
        f = ipv4_frame(blue(b20));
        put16(&f[16], 101);
        refresh_ipv4_checksum(f, 14);
        add("total length one past the frame", "tap-b10", f, "punt_ip_header");
        f = ipv4_frame(blue(b20));
        put16(&f[16], 99);
        refresh_ipv4_checksum(f, 14);
        add("total length one short of the frame (a byte of padding)", "tap-b10", f, "punt_ip_header");
        f = ipv4_frame(blue(b20, 28, kIcmp));
        f.resize(60, 0);
        add("a 28-byte ICMP packet padded to 60 bytes", "tap-b10", f, "punt_ip_header");
        f = ipv4_frame(blue(b20, 1386));
        f.resize(f.size() + 4, 0);
        add("a frame padded by 4 bytes", "tap-b10", f, "punt_ip_header");
        f = ipv4_frame(blue(b20));
        put16(&f[16], 19);
        refresh_ipv4_checksum(f, 14);
        add("total length 19", "tap-b10", f, "punt_ip_header");
        f = ipv4_frame(blue(b20));
        put16(&f[16], 0);
        refresh_ipv4_checksum(f, 14);
        add("total length 0", "tap-b10", f, "punt_ip_header");
        f = ipv4_frame(blue(b20));
        f[14] = 0x65;
        refresh_ipv4_checksum(f, 14);
        add("version 6 in an IPv4 frame", "tap-b10", f, "punt_ip_header");
        f = ipv4_frame(blue(b20));
        f[14] = 0x44;
        refresh_ipv4_checksum(f, 14);
        add("IHL 4", "tap-b10", f, "punt_ip_header");
        f = ipv4_frame(blue(b20));
        f.resize(14);
        add("an Ethernet header alone (IPv4 ethertype)", "tap-b10", f, "untestable");
        f = ipv4_frame(blue(b20));
        f.resize(33);
        add("an IPv4 header cut at 19 bytes", "tap-b10", f, "untestable");
        f = ipv4_frame(blue(b20));
        f.resize(34);
        add("an IPv4 header with nothing after it (total length 100)", "tap-b10", f, "punt_ip_header");
        f = ipv4_frame(blue(b20));
        insert_tag(f, 0x8100, 100);
        add("802.1Q-tagged IPv4", "tap-b10", f, "punt_not_ipv4");
        f = ipv4_frame(blue(b20));
        insert_tag(f, 0x8100, 100);
        insert_tag(f, 0x88a8, 200);
        add("QinQ-tagged IPv4", "tap-b10", f, "punt_not_ipv4");
        add("IPv6", "tap-b10", raw_frame(e10.mac, kDefaultGatewayMac, 0x86dd, 80, 0), "punt_not_ipv4");
        add("an unknown ethertype", "tap-b10", raw_frame(e10.mac, kDefaultGatewayMac, 0x88b5, 60, 7), "punt_not_ipv4");
        add("an Ethernet header alone (unknown ethertype)", "tap-b10", raw_frame(e10.mac, kDefaultGatewayMac, 0x88b5, 0, 0),
            "punt_not_ipv4");
    }

    // Other VPCs.
    add("green to its remote endpoint", "tap-g10", ipv4_frame(tenant_spec("green", 10, ip4(10, 0, 0, 20))), "encap");
    add("green to blue's address (another tenant's)", "tap-g10", ipv4_frame(tenant_spec("green", 10, b11)),
        "punt_no_route");
    add("green to blue's gateway MAC", "tap-g10",
        [&] {
            Ipv4Spec s = tenant_spec("green", 10, ip4(10, 0, 0, 20));
            s.dst_mac = kDefaultGatewayMac;
            return ipv4_frame(s);
        }(),
        "punt_not_to_gateway");
    add("grey (fast path off) to its remote endpoint", "tap-y10", ipv4_frame(tenant_spec("grey", 10, ip4(10, 2, 0, 20))),
        "punt_fastpath_off");
    add("grey (fast path off) to the gateway", "tap-y10", ipv4_frame(tenant_spec("grey", 10, ip4(10, 2, 0, 1))),
        "punt_fastpath_off");
    add("red to its remote endpoint", "tap-r10", ipv4_frame(tenant_spec("red", 10, ip4(10, 3, 0, 20))), "encap");
    // The outside: encapsulated towards the VPC's NAT node, the inner frame as the tenant sent it.
    add("red to the Internet (NAT at node2)", "tap-r10", ipv4_frame(tenant_spec("red", 10, ip4(8, 8, 8, 8))), "encap");
    add("red to its NAT address", "tap-r10", ipv4_frame(tenant_spec("red", 10, ip4(203, 0, 113, 20))), "encap");
    return cases;
}

// An overlay packet from `sender` (vpc, last octet; its node) to `receiver`'s address and MAC.
OverlaySpec overlay_spec(Encap kind, const std::string& vpc, std::uint32_t sender, std::uint32_t receiver,
                         std::size_t total = 100, std::uint8_t protocol = kUdp) {
    const EndpointDef& from = endpoint(vpc, sender);
    const EndpointDef& to = endpoint(vpc, receiver);
    OverlaySpec s;
    s.kind = kind;
    s.dport = overlay_port(kind);
    s.src = node_address(from.node);
    s.src_mac = node_mac(from.node);
    s.vni = vpc_named(vpc).vni;
    s.inner = inner_frame(from, to.ip, to.mac, total, protocol);
    return s;
}

std::vector<Case> crafted_overlay_cases(Encap kind) {
    std::vector<Case> cases;
    const auto add = [&](std::string name, Bytes frame, std::string expect) {
        cases.push_back(Case{std::move(name), "", std::move(frame), std::move(expect)});
    };
    const bool vxlan = kind == Encap::vxlan;
    const auto blue = [&](std::uint32_t from = 20, std::uint32_t to = 10, std::size_t total = 100,
                          std::uint8_t protocol = kUdp) { return overlay_spec(kind, "blue", from, to, total, protocol); };

    add("from node2's endpoint to a local one", overlay_frame(blue()), "fastpath");
    add("TCP", overlay_frame(blue(20, 11, 800, kTcp)), "fastpath");
    add("ICMP", overlay_frame(blue(21, 10, 84, kIcmp)), "fastpath");
    add("a 20-byte inner packet", overlay_frame(blue(20, 10, 20)), "fastpath");
    add("from node3's endpoint (its next hop unknown: not needed to receive)", overlay_frame(blue(30, 10)), "fastpath");
    add("green (blue's addresses, another VNI)", overlay_frame(overlay_spec(kind, "green", 20, 40)), "fastpath");
    add("red", overlay_frame(overlay_spec(kind, "red", 20, 10)), "fastpath");
    for (std::size_t total = 1446; total <= 1452; ++total)
        add("an inner packet of " + std::to_string(total) + " bytes (outer " + std::to_string(total + 14 + 50) + ")",
            overlay_frame(blue(20, 10, total)), "fastpath");
    {
        OverlaySpec s = blue();
        s.ttl = 1;
        add("outer TTL 1", overlay_frame(s), "fastpath");
        s = blue();
        s.inner[22] = 0;
        refresh_ipv4_checksum(s.inner, 14);
        add("inner TTL 0", overlay_frame(s), "fastpath");
        s = blue();
        s.sport = 1234;
        add("any UDP source port", overlay_frame(s), "fastpath");
    }

    add("wrong VNI (no VPC)", [&] {
        OverlaySpec s = blue();
        s.vni = 999;
        return overlay_frame(s);
    }(), "drop_unknown_vni");
    add("green's VNI around blue's endpoints", [&] {
        OverlaySpec s = blue(21, 11);
        s.vni = 200;
        return overlay_frame(s);
    }(), "socket");
    add("grey's VNI (fast path off)", overlay_frame(overlay_spec(kind, "grey", 20, 10)), "socket");
    add("from an unknown peer", [&] {
        OverlaySpec s = blue();
        s.src = kStranger;
        return overlay_frame(s);
    }(), "drop_unknown_peer");
    add("from this node's own address", [&] {
        OverlaySpec s = blue();
        s.src = kNode1;
        return overlay_frame(s);
    }(), "drop_unknown_peer");
    add("node2's endpoint sent by node3", [&] {
        OverlaySpec s = blue();
        s.src = kNode3;
        return overlay_frame(s);
    }(), "socket");
    add("inner source a local endpoint", [&] {
        OverlaySpec s = blue(11, 10);
        s.src = kNode2;
        s.src_mac = kNode2Mac;
        return overlay_frame(s);
    }(), "socket");
    add("inner source unknown", [&] {
        OverlaySpec s = blue();
        s.inner = inner_frame(EndpointDef{ip4(10, 0, 0, 99), mac_of(0, 0x99), "node2", ""}, ip4(10, 0, 0, 10),
                              endpoint("blue", 10).mac, 100);
        return overlay_frame(s);
    }(), "socket");
    add("to the local endpoint without a device", overlay_frame(blue(20, 12)), "socket");
    add("to a remote endpoint", overlay_frame(blue(20, 21)), "socket");
    add("to the gateway", [&] {
        OverlaySpec s = blue();
        s.inner = inner_frame(endpoint("blue", 20), ip4(10, 0, 0, 1), kDefaultGatewayMac, 84, kIcmp);
        return overlay_frame(s);
    }(), "socket");
    add("to an unknown address", [&] {
        OverlaySpec s = blue();
        s.inner = inner_frame(endpoint("blue", 20), ip4(10, 0, 0, 77), endpoint("blue", 10).mac, 100);
        return overlay_frame(s);
    }(), "socket");
    // The outside's reply, from the VPC's NAT node: decapsulated into its tenant like east-west.
    add("red's Internet traffic (NAT at node2 answering)", [&] {
        OverlaySpec s = overlay_spec(kind, "red", 20, 10);
        s.inner = inner_frame(EndpointDef{ip4(8, 8, 8, 8), endpoint("red", 20).mac, "node2", ""}, ip4(10, 3, 0, 10),
                              endpoint("red", 10).mac, 100);
        return overlay_frame(s);
    }(), "fastpath");
    // The same from a peer that is not the VPC's NAT node: the pipeline's (fabric_spoofed_source).
    add("the outside's traffic from a node that is not red's NAT node", [&] {
        OverlaySpec s = overlay_spec(kind, "red", 20, 10);
        s.src = kNode3;
        s.inner = inner_frame(EndpointDef{ip4(8, 8, 8, 8), endpoint("red", 20).mac, "node3", ""}, ip4(10, 3, 0, 10),
                              endpoint("red", 10).mac, 100);
        return overlay_frame(s);
    }(), "socket");

    add("a valid non-zero outer UDP checksum", [&] {
        OverlaySpec s = blue();
        s.udp_checksum = true;
        return overlay_frame(s);
    }(), "socket");
    add("a wrong non-zero outer UDP checksum", [&] {
        OverlaySpec s = blue();
        s.udp_checksum = true;
        Bytes f = overlay_frame(s);
        f[40] ^= 0x10;
        return f;
    }(), "socket");
    add("outer MF fragment", [&] {
        OverlaySpec s = blue();
        s.fragment = kMf;
        return overlay_frame(s);
    }(), "drop_overlay_fragment");
    add("outer fragment offset", [&] {
        OverlaySpec s = blue();
        s.fragment = 100;
        return overlay_frame(s);
    }(), "drop_overlay_fragment");
    add("outer without DF", [&] {
        OverlaySpec s = blue();
        s.fragment = 0;
        return overlay_frame(s);
    }(), "fastpath");
    if (!vxlan) {
        add("version 2", [&] {
            OverlaySpec s = blue();
            s.first = 0x20;
            return overlay_frame(s);
        }(), "drop_bad_overlay_header");
        add("version 0", [&] {
            OverlaySpec s = blue();
            s.first = 0x00;
            return overlay_frame(s);
        }(), "drop_bad_overlay_header");
        add("control flag set", [&] {
            OverlaySpec s = blue();
            s.first = 0x11;
            return overlay_frame(s);
        }(), "socket");
        add("inner protocol 1", [&] {
            OverlaySpec s = blue();
            s.protocol = 1;
            return overlay_frame(s);
        }(), "drop_bad_overlay_header");
        add("hop limit 0", [&] {
            OverlaySpec s = blue();
            s.hop_limit = 0;
            return overlay_frame(s);
        }(), "socket");
        add("hop limit 1", [&] {
            OverlaySpec s = blue();
            s.hop_limit = 1;
            return overlay_frame(s);
        }(), "fastpath");
    } else {
        add("VXLAN I flag clear", [&] {
            OverlaySpec s = blue();
            s.first = 0x00;
            return overlay_frame(s);
        }(), "drop_bad_overlay_header");
        add("VXLAN I flag and another flag", [&] {
            OverlaySpec s = blue();
            s.first = 0x0c;
            return overlay_frame(s);
        }(), "socket");
        add("VXLAN reserved bytes set", [&] {
            OverlaySpec s = blue();
            s.protocol = 0x55;
            Bytes f = overlay_frame(s);
            f[49] = 0x66;
            return f;
        }(), "fastpath");
    }
    {
        Bytes f = overlay_frame(blue());
        f[33] ^= 0x01;  // the outer destination's last byte: another node
        refresh_ipv4_checksum(f, 14);
        add("outer destination another node's", f, "socket");
        OverlaySpec s = blue();
        s.options = 8;
        add("outer IPv4 options", overlay_frame(s), "socket");
        f = overlay_frame(blue());
        f[24] ^= 0x40;
        add("outer IPv4 header checksum wrong", f, "socket");
        f = overlay_frame(blue());
        f.resize(f.size() + 6, 0);
        add("outer padding (6 bytes)", f, "socket");
        f = overlay_frame(blue());
        put16(&f[16], get16(&f[16]) + 1);
        refresh_ipv4_checksum(f, 14);
        add("outer total length one past the frame", f, "socket");
        f = overlay_frame(blue());
        put16(&f[38], get16(&f[38]) - 1);
        add("outer UDP length one short", f, "socket");
        f = overlay_frame(blue());
        put16(&f[38], get16(&f[38]) + 1);
        add("outer UDP length one long", f, "socket");
        f = overlay_frame(blue());
        insert_tag(f, 0x8100, 7);
        add("outer 802.1Q tag", f, "socket");
        f = overlay_frame(blue());
        f.resize(14 + 20 + 8 + 8 + 10);
        put16(&f[16], 20 + 8 + 8 + 10);
        put16(&f[38], 8 + 8 + 10);
        refresh_ipv4_checksum(f, 14);
        add("no room for an inner Ethernet header", f, "drop_truncated");
        f = overlay_frame(blue());
        f.resize(14 + 20 + 4);
        add("a runt UDP header", f, "host");
        f = overlay_frame(blue());
        f.resize(14 + 10);
        add("an IPv4 header cut short", f, "drop_truncated");
    }
    {
        OverlaySpec s = blue();
        Ipv4Spec inner = tenant_spec("blue", 20, ip4(10, 0, 0, 10));
        inner.dst_mac = endpoint("blue", 10).mac;
        inner.options = 4;
        s.inner = ipv4_frame(inner);
        add("inner IPv4 options", overlay_frame(s), "socket");
        s = blue();
        s.inner[24] ^= 0x01;
        add("inner IPv4 header checksum wrong", overlay_frame(s), "socket");
        s = blue();
        s.inner.resize(s.inner.size() + 2, 0);
        add("inner padding (2 bytes)", overlay_frame(s), "socket");
        s = blue();
        put16(&s.inner[16], get16(&s.inner[16]) + 2);
        refresh_ipv4_checksum(s.inner, 14);
        add("inner total length past the inner frame", overlay_frame(s), "socket");
        s = blue();
        insert_tag(s.inner, 0x8100, 3);
        add("inner 802.1Q tag", overlay_frame(s), "socket");
        s = blue();
        s.inner = arp_frame(endpoint("blue", 20).mac, kBroadcastMac, 1, endpoint("blue", 20).mac, ip4(10, 0, 0, 20),
                            ip4(10, 0, 0, 10));
        add("inner ARP", overlay_frame(s), "socket");
        s = blue();
        s.inner = raw_frame(endpoint("blue", 20).mac, endpoint("blue", 10).mac, 0x86dd, 60, 0);
        add("inner IPv6", overlay_frame(s), "socket");
        s = blue();
        s.inner.resize(14 + 19);
        add("inner IPv4 cut at 19 bytes", overlay_frame(s), "socket");
    }
    add("inner destination MAC someone else's (both rewrite it)", [&] {
        OverlaySpec s = blue();
        s.inner[0] = 0x0e;
        return overlay_frame(s);
    }(), "fastpath");
    add("the other encapsulation's port (host traffic here)", [&] {
        OverlaySpec s = blue();
        s.dport = overlay_port(vxlan ? Encap::andromeda : Encap::vxlan);
        return overlay_frame(s);
    }(), "host");
    add("UDP to port 22", [&] {
        OverlaySpec s = blue();
        s.dport = 22;
        return overlay_frame(s);
    }(), "host");
    add("host TCP", [&] {
        Ipv4Spec s;
        s.src_mac = kNode2Mac;
        s.dst_mac = kUnderlayMac;
        s.src = kNode2;
        s.dst = kNode1;
        s.protocol = kTcp;
        s.dport = 22;
        return ipv4_frame(s);
    }(), "host");
    add("host ARP", arp_frame(kNode2Mac, kBroadcastMac, 1, kNode2Mac, kNode2, kNode1), "host");
    return cases;
}

// Outer destination MACs other than the underlay's: what XDP hands over, tc must take.
std::vector<Case> foreign_mac_cases(Encap kind) {
    std::vector<Case> cases;
    for (const Mac& m : {kBroadcastMac, Mac{0x01, 0x00, 0x5e, 0x00, 0x00, 0x01}, mac_of(0xa1, 0x77)}) {
        OverlaySpec s = overlay_spec(kind, "blue", 20, 10);
        s.dst_mac = m;
        cases.push_back(Case{"outer destination MAC " + mac_text(m), "", overlay_frame(s), ""});
    }
    return cases;
}

// ---- random cases ------------------------------------------------------------------------------

class Gen {
public:
    explicit Gen(std::uint32_t seed) : rng_(seed) {}
    std::uint32_t below(std::uint32_t n) { return n == 0 ? 0 : static_cast<std::uint32_t>(rng_() % n); }
    std::uint32_t range(std::uint32_t lo, std::uint32_t hi) { return lo + below(hi - lo + 1); }
    bool chance(std::uint32_t percent) { return below(100) < percent; }
    std::uint8_t byte() { return static_cast<std::uint8_t>(rng_()); }
    std::uint32_t word() { return static_cast<std::uint32_t>(rng_()); }
    template <class T>
    const T& pick(const std::vector<T>& v) {
        return v[below(static_cast<std::uint32_t>(v.size()))];
    }
    Mac mac() { return {static_cast<std::uint8_t>((byte() & 0xfe) | 0x02), byte(), byte(), byte(), byte(), byte()}; }

private:
    std::mt19937 rng_;
};

struct Placed {
    const VpcDef* vpc;
    const EndpointDef* e;
};

std::vector<Placed> endpoints_where(bool (*pred)(const VpcDef&, const EndpointDef&)) {
    std::vector<Placed> out;
    for (const VpcDef& v : vpcs())
        for (const EndpointDef& e : v.endpoints)
            if (pred(v, e)) out.push_back({&v, &e});
    return out;
}

std::uint8_t random_protocol(Gen& g) {
    const std::uint32_t r = g.below(100);
    return r < 40 ? kUdp : r < 70 ? kTcp : r < 88 ? kIcmp : g.chance(50) ? std::uint8_t{47} : g.byte();
}

// An IPv4 total length: small, around `mtu`, or anywhere up to just past the underlay's MTU.
std::size_t random_total(Gen& g, std::uint32_t mtu, std::size_t minimum) {
    const std::uint32_t r = g.below(100);
    std::size_t total;
    if (r < 45)
        total = minimum + g.below(120);
    else if (r < 75)
        total = mtu - 4 + g.below(9);
    else
        total = minimum + g.below(1520 - static_cast<std::uint32_t>(minimum));
    return std::max(total, minimum);
}

std::uint32_t random_address(Gen& g, const VpcDef& vpc) {
    const std::uint32_t r = g.below(100);
    if (r < 30) {  // an endpoint on another node: what the fast path encapsulates
        std::vector<std::uint32_t> remote;
        for (const EndpointDef& e : vpc.endpoints)
            if (e.node != "node1") remote.push_back(e.ip);
        return g.pick(remote);
    }
    if (r < 58) return g.pick(vpc.endpoints).ip;
    if (r < 65) return vpc.gateway;
    if (r < 70) return vpc.network | g.range(2, 254);
    if (r < 75) return g.chance(50) ? ip4(8, 8, 8, 8) : ip4(203, 0, 113, g.range(1, 254));
    if (r < 79) return ip4(g.range(224, 239), g.byte(), g.byte(), g.byte());
    if (r < 82) return 0xffffffff;
    if (r < 84) return vpc.network | 255;
    if (r < 92) return g.pick(g.pick(vpcs()).endpoints).ip;
    return g.word();
}

Mac random_destination_mac(Gen& g, const VpcDef& vpc) {
    switch (g.below(6)) {
        case 0: return kBroadcastMac;
        case 1: return {0x01, 0x00, 0x5e, static_cast<std::uint8_t>(g.byte() & 0x7f), g.byte(), g.byte()};
        case 2: return g.pick(vpc.endpoints).mac;
        case 3: return g.pick(vpcs()).gateway_mac;
        default: return g.mac();
    }
}

void random_ipv4_header_damage(Gen& g, Bytes& f, std::size_t ip) {
    if (f.size() < ip + 20) return;
    if (g.chance(4)) f[ip + 10 + g.below(2)] ^= static_cast<std::uint8_t>(1u << g.below(8));  // bad checksum
    if (g.chance(4)) {  // total length off by a little (or a lot), checksum valid
        const int delta = g.chance(80) ? static_cast<int>(g.range(1, 6)) * (g.chance(50) ? 1 : -1) : static_cast<int>(g.word() % 3000) - 1500;
        put16(&f[ip + 2], static_cast<std::uint32_t>(static_cast<int>(get16(&f[ip + 2])) + delta) & 0xffff);
        refresh_ipv4_checksum(f, ip);
    }
    if (g.chance(2)) {
        f[ip] = static_cast<std::uint8_t>(g.chance(50) ? (g.range(0, 15) << 4 | (f[ip] & 0x0f)) : (f[ip] & 0xf0) | g.range(0, 4));
        refresh_ipv4_checksum(f, ip);
    }
}

void random_frame_damage(Gen& g, Bytes& f) {
    if (g.chance(4)) {  // Ethernet padding
        const std::size_t n = g.range(1, 46);
        for (std::size_t i = 0; i < n; ++i) f.push_back(g.chance(70) ? 0 : g.byte());
    }
    if (g.chance(3)) insert_tag(f, 0x8100, g.below(4096));
    if (g.chance(1)) insert_tag(f, 0x88a8, g.below(4096));
    if (g.chance(3) && f.size() > 14) f.resize(g.range(14, static_cast<std::uint32_t>(f.size()) - 1));
    if (g.chance(2) && f.size() > 12) f[g.range(12, static_cast<std::uint32_t>(f.size()) - 1)] ^= static_cast<std::uint8_t>(1u << g.below(8));
}

Case random_tenant(Gen& g) {
    static const auto sources = endpoints_where([](const VpcDef&, const EndpointDef& e) {
        return e.node == "node1" && e.port != kPortWithoutDevice;
    });
    const Placed src = g.pick(sources);
    const VpcDef& vpc = *src.vpc;
    Mac smac = src.e->mac;
    std::uint32_t sip = src.e->ip;
    if (g.chance(5)) smac = g.chance(50) ? g.pick(g.pick(vpcs()).endpoints).mac : g.mac();
    if (g.chance(6)) sip = g.chance(70) ? g.pick(vpc.endpoints).ip : g.word();
    Case c{"random frame", src.e->port, {}, ""};
    const std::uint32_t kind = g.below(100);
    if (kind < 8) {
        const Mac sender_mac = g.chance(85) ? smac : g.mac();
        const std::uint32_t sender_ip = g.chance(80) ? sip : g.chance(50) ? 0 : random_address(g, vpc);
        c.frame = arp_frame(smac, g.chance(70) ? kBroadcastMac : vpc.gateway_mac, g.chance(85) ? 1 : g.range(0, 3),
                            sender_mac, sender_ip, g.chance(60) ? vpc.gateway : random_address(g, vpc));
        if (g.chance(4)) c.frame[14 + g.below(6)] ^= 0x01;
        if (g.chance(4)) c.frame.resize(g.range(14, 41));
    } else if (kind < 11) {
        c.frame = raw_frame(smac, g.chance(85) ? vpc.gateway_mac : random_destination_mac(g, vpc), 0x86dd,
                            g.range(0, 200), g.byte());
    } else if (kind < 13) {
        c.frame = raw_frame(smac, vpc.gateway_mac, static_cast<std::uint16_t>(g.word()), g.range(0, 100), g.byte());
    } else {
        Ipv4Spec s;
        s.src_mac = smac;
        s.dst_mac = g.chance(88) ? vpc.gateway_mac : random_destination_mac(g, vpc);
        s.src = sip;
        s.dst = random_address(g, vpc);
        s.protocol = random_protocol(g);
        s.options = g.chance(5) ? 4 * g.range(1, 10) : 0;
        s.fragment = g.chance(70) ? kDf : 0;
        if (g.chance(6)) s.fragment = static_cast<std::uint16_t>(s.fragment | (g.chance(50) ? kMf : g.range(1, 0x1fff)));
        s.ttl = g.chance(90) ? 64 : g.byte();
        s.tos = g.chance(90) ? 0 : g.byte();
        s.id = static_cast<std::uint16_t>(g.word());
        s.sport = static_cast<std::uint16_t>(g.word());
        s.dport = static_cast<std::uint16_t>(g.word());
        s.fill = g.byte();
        const std::size_t minimum = 20 + s.options + (g.chance(95) ? transport_header(s.protocol) : 0);
        s.total = random_total(g, vpc.inner_mtu(), minimum);
        c.frame = ipv4_frame(s);
        random_ipv4_header_damage(g, c.frame, 14);
    }
    random_frame_damage(g, c.frame);
    return c;
}

Case random_overlay(Gen& g, Encap kind) {
    const VpcDef& vpc = g.pick(vpcs());
    // The sender: mostly an endpoint of the VPC on another node.
    std::vector<const EndpointDef*> remote, local;
    for (const EndpointDef& e : vpc.endpoints) (e.node == "node1" ? local : remote).push_back(&e);
    EndpointDef sender = *g.pick(remote);
    const std::uint32_t r = g.below(100);
    if (r < 6 && !local.empty()) sender = *g.pick(local);
    else if (r < 12) sender.ip = vpc.network | g.range(2, 254);
    else if (r < 16) sender.ip = g.word();
    // The receiver: mostly a local endpoint.
    std::uint32_t to_ip;
    Mac to_mac;
    const std::uint32_t t = g.below(100);
    if (t < 75 && !local.empty()) {
        const EndpointDef* e = g.pick(local);
        to_ip = e->ip;
        to_mac = e->mac;
    } else {
        to_ip = random_address(g, vpc);
        to_mac = g.chance(50) ? vpc.gateway_mac : g.pick(vpc.endpoints).mac;
    }
    if (g.chance(4)) to_mac = g.mac();
    if (g.chance(3)) sender.mac = g.mac();

    OverlaySpec s;
    s.kind = g.chance(96) ? kind : (kind == Encap::vxlan ? Encap::andromeda : Encap::vxlan);
    s.dport = g.chance(94) ? overlay_port(kind) : g.chance(50) ? overlay_port(s.kind == kind ? (kind == Encap::vxlan ? Encap::andromeda : Encap::vxlan) : s.kind) : static_cast<std::uint16_t>(g.word());
    s.src = sender.node == "node1" ? kNode2 : node_address(sender.node);
    s.src_mac = sender.node == "node1" ? kNode2Mac : node_mac(sender.node);
    if (g.chance(5)) s.src = g.chance(40) ? kNode3 : g.chance(50) ? kNode2 : g.chance(50) ? kStranger : kNode1;
    if (g.chance(3)) s.dst = g.chance(50) ? kNode2 : g.word();
    // (Always to the underlay's MAC: other outer destination MACs are ForeignOuterMac's.)
    s.sport = static_cast<std::uint16_t>(0xc000 | g.below(0x4000));
    if (g.chance(2)) s.sport = static_cast<std::uint16_t>(g.word());
    s.vni = g.chance(93) ? vpc.vni : g.chance(60) ? g.pick(vpcs()).vni : g.below(0x1000000);
    if (s.kind == Encap::andromeda) {
        if (g.chance(3)) s.first = static_cast<std::uint8_t>(g.range(0, 3) << 4 | (g.chance(70) ? 0 : g.range(1, 15)));
        if (g.chance(2)) s.protocol = g.byte();
        s.hop_limit = g.chance(90) ? 64 : g.chance(30) ? 0 : g.byte();
    } else {
        if (g.chance(3)) s.first = 0;
        if (g.chance(3)) s.first = g.byte();
        if (g.chance(2)) s.protocol = g.byte();
    }
    s.fragment = kDf;
    if (g.chance(3)) s.fragment = g.chance(50) ? kMf : static_cast<std::uint16_t>(g.range(1, 0x1fff));
    if (g.chance(3)) s.fragment = 0;
    s.options = g.chance(2) ? 4 * g.range(1, 10) : 0;
    s.ttl = g.chance(90) ? 64 : g.byte();

    const std::uint32_t what = g.below(100);
    if (what < 3) {
        s.inner = arp_frame(sender.mac, kBroadcastMac, 1, sender.mac, sender.ip, to_ip);
    } else if (what < 5) {
        s.inner = raw_frame(sender.mac, to_mac, 0x86dd, g.range(40, 200), g.byte());
    } else {
        Ipv4Spec in;
        in.src_mac = sender.mac;
        in.dst_mac = to_mac;
        in.src = sender.ip;
        in.dst = to_ip;
        in.protocol = random_protocol(g);
        in.options = g.chance(3) ? 4 * g.range(1, 10) : 0;
        in.fragment = g.chance(70) ? kDf : 0;
        if (g.chance(4)) in.fragment = static_cast<std::uint16_t>(in.fragment | (g.chance(50) ? kMf : g.range(1, 0x1fff)));
        in.ttl = g.chance(90) ? 63 : g.byte();
        in.tos = g.chance(90) ? 0 : g.byte();
        in.id = static_cast<std::uint16_t>(g.word());
        in.sport = static_cast<std::uint16_t>(g.word());
        in.dport = static_cast<std::uint16_t>(g.word());
        in.fill = g.byte();
        in.total = random_total(g, vpc.inner_mtu(), 20 + in.options + transport_header(in.protocol));
        s.inner = ipv4_frame(in);
        if (g.chance(40)) random_ipv4_header_damage(g, s.inner, 14);
    }
    if (g.chance(2)) s.inner.resize(s.inner.size() + g.range(1, 20), 0);
    if (g.chance(2)) insert_tag(s.inner, 0x8100, g.below(4096));
    if (g.chance(2)) s.inner.resize(g.range(0, static_cast<std::uint32_t>(s.inner.size())));
    s.udp_checksum = g.chance(5);
    Case c{"random overlay packet", "", overlay_frame(s), ""};
    if (s.udp_checksum && g.chance(30)) c.frame[14 + 20 + s.options + 6] ^= 0x04;
    if (g.chance(3) && c.frame.size() >= 14 + 20 + s.options + 8) {  // UDP length off
        std::uint8_t* udp_len = &c.frame[14 + 20 + s.options + 4];
        put16(udp_len, (get16(udp_len) + (g.chance(50) ? 1u : 0xffffu) * g.range(1, 20)) & 0xffff);
    }
    if (g.chance(40)) random_ipv4_header_damage(g, c.frame, 14);
    random_frame_damage(g, c.frame);
    return c;
}

std::uint32_t seed_for(std::uint32_t fixed) {
    if (const char* s = std::getenv("ANDROMEDA_FAST_PATH_SEED"); s != nullptr && *s != '\0')
        return static_cast<std::uint32_t>(std::strtoul(s, nullptr, 0));
    return fixed;
}

constexpr int kRandomFrames = 20000;  // per side and encapsulation

// ---- the tests ---------------------------------------------------------------------------------

class FastPathDifferential : public ::testing::TestWithParam<Encap> {
protected:
    void SetUp() override {
        ANDROMEDA_REQUIRE_ROOT();
        world_ = std::make_unique<World>(GetParam(), fabric_toml(GetParam()));
        ASSERT_TRUE(world_->error().empty()) << world_->error();
    }

    void run_all(const std::vector<Case>& cases, const std::string& context, Tally& tally) {
        for (const Case& c : cases) run_case(*world_, c, tally, context);
        EXPECT_EQ(tally.failures, 0) << context << ":\n" << tally.report();
    }

    std::unique_ptr<World> world_;
};

TEST_P(FastPathDifferential, CraftedTenantFrames) {
    Tally tally;
    run_all(crafted_tenant_cases(), "crafted tenant frame", tally);
    // Again with the room a veth underlay's encap makes for the receiver's XDP.
    world_->set_encap_headroom(ANDROMEDA_ENCAP_HEADROOM);
    Tally with_room;
    run_all(crafted_tenant_cases(), "crafted tenant frame, encap_headroom " + std::to_string(ANDROMEDA_ENCAP_HEADROOM), with_room);
    EXPECT_EQ(with_room.count("encap"), tally.count("encap"));
    RecordProperty("frames", tally.cases + with_room.cases);
}

TEST_P(FastPathDifferential, CraftedOverlayPackets) {
    Tally tally;
    run_all(crafted_overlay_cases(GetParam()), "crafted overlay packet", tally);
    RecordProperty("frames", tally.cases);
}

// An overlay packet to this node's address but another MAC (a flooded frame, a stale neighbour
// entry at the peer, broadcast): XDP's fp_decap_check does not look at the outer destination
// MAC and hands such a packet to tc (pass_fastpath), whose fp_restore_mac only takes packets to
// the underlay's own MAC and returns TC_ACT_UNSPEC: the host stack gets it (and drops it, or for a
// broadcast frame may answer port unreachable) instead of either path delivering it. The
// pipeline, which these packets reached before the fast path existed, delivers them. Not a
// documented difference: this test fails until XDP and tc agree on such packets (XDP steering
// them to AF_XDP, or tc decapsulating them, both make it pass). The random overlay packets are
// all to the underlay's MAC, so that this disagreement is reported here alone.
TEST_P(FastPathDifferential, ForeignOuterMac) {
    Tally tally;
    run_all(foreign_mac_cases(GetParam()), "overlay packet to another MAC", tally);
}

TEST_P(FastPathDifferential, RandomTenantFrames) {
    const std::uint32_t seed = seed_for(GetParam() == Encap::vxlan ? 0x7e1a0002 : 0x7e1a0001);
    Gen g(seed);
    Tally tally;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kRandomFrames; ++i) {
        Case c = random_tenant(g);
        c.name += " #" + std::to_string(i);
        // Every other frame with the room a veth underlay's encap makes for the receiver's XDP.
        world_->set_encap_headroom(i % 2 != 0 ? ANDROMEDA_ENCAP_HEADROOM : 0);
        if (i % 2 != 0) c.name += " (encap_headroom)";
        run_case(*world_, c, tally, "seed " + std::to_string(seed));
    }
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    EXPECT_EQ(tally.failures, 0) << "seed " << seed << " (ANDROMEDA_FAST_PATH_SEED=" << seed << " repeats it)\n"
                                 << tally.report();
    // Not vacuous: every kind of outcome occurs often.
    EXPECT_GE(tally.count("encap"), kRandomFrames / 10);
    EXPECT_GE(tally.count("local"), kRandomFrames / 50);
    EXPECT_GE(tally.count_prefix("punt_"), kRandomFrames / 5);
    EXPECT_GE(tally.count_prefix("drop_spoofed_"), kRandomFrames / 50);
    std::printf("random tenant frames (%s, seed %u): %lld ms\n%s", to_string(GetParam()), seed,
                static_cast<long long>(ms.count()), tally.report().c_str());
    RecordProperty("frames", tally.cases);
}

TEST_P(FastPathDifferential, RandomOverlayPackets) {
    const std::uint32_t seed = seed_for(GetParam() == Encap::vxlan ? 0x0a1a0002 : 0x0a1a0001);
    Gen g(seed);
    Tally tally;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kRandomFrames; ++i) {
        Case c = random_overlay(g, GetParam());
        c.name += " #" + std::to_string(i);
        run_case(*world_, c, tally, "seed " + std::to_string(seed));
    }
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    EXPECT_EQ(tally.failures, 0) << "seed " << seed << " (ANDROMEDA_FAST_PATH_SEED=" << seed << " repeats it)\n"
                                 << tally.report();
    EXPECT_GE(tally.count("fastpath"), kRandomFrames / 10);
    EXPECT_GE(tally.count("socket"), kRandomFrames / 10);
    EXPECT_GE(tally.count_prefix("drop_"), kRandomFrames / 50);
    std::printf("random overlay packets (%s, seed %u): %lld ms\n%s", to_string(GetParam()), seed,
                static_cast<long long>(ms.count()), tally.report().c_str());
    RecordProperty("frames", tally.cases);
}

// Stale entries. First the window of a reload that removes an endpoint: its fabric entry is
// erased before the pipeline sees the new snapshot, so the fast path punts while the pipeline
// still forwards. Then the reload itself (plan_diff into the maps, the port table re-synced, the
// pipeline on the new snapshot): the endpoints removed are gone from both sides.
TEST_P(FastPathDifferential, StaleEntries) {
    const Encap kind = GetParam();
    Tally tally;
    const int fabric = World::fd(world_->skel().maps.andromeda_fabric);
    andromeda_fabric_key key{};
    key.vni = 100;
    key.ip = htonl(ip4(10, 0, 0, 20));
    andromeda_fabric_entry saved{};
    ASSERT_EQ(bpf_map_lookup_elem(fabric, &key, &saved), 0);
    ASSERT_EQ(bpf_map_delete_elem(fabric, &key), 0);
    run_case(*world_, {"to an endpoint whose entry is already erased", "tap-b10",
                       ipv4_frame(tenant_spec("blue", 10, ip4(10, 0, 0, 20))), "punt_no_route"},
             tally, "stale");
    run_case(*world_, {"from an endpoint whose entry is already erased", "", overlay_frame(overlay_spec(kind, "blue", 20, 10)),
                       "socket"},
             tally, "stale");
    ASSERT_EQ(bpf_map_update_elem(fabric, &key, &saved, BPF_ANY), 0);

    const std::set<EndpointKey> removed = {{100, ip4(10, 0, 0, 21)}, {200, ip4(10, 0, 0, 40)}};
    ASSERT_TRUE(world_->reload(fabric_toml(kind, removed))) << world_->error();
    const std::vector<Case> after = {
        {"to a remote endpoint removed by the reload", "tap-b10", ipv4_frame(tenant_spec("blue", 10, ip4(10, 0, 0, 21))),
         "punt_no_route"},
        {"to a local endpoint removed by the reload", "tap-g10", ipv4_frame(tenant_spec("green", 10, ip4(10, 0, 0, 40))),
         "punt_no_route"},
        {"from a remote endpoint removed by the reload", "", overlay_frame(overlay_spec(kind, "blue", 21, 10)), "socket"},
        {"to a local endpoint removed by the reload", "", overlay_frame(overlay_spec(kind, "green", 20, 40)), "socket"},
        {"to a remote endpoint the reload kept", "tap-b10", ipv4_frame(tenant_spec("blue", 10, ip4(10, 0, 0, 20))),
         "encap"},
        {"from a remote endpoint the reload kept", "", overlay_frame(overlay_spec(kind, "blue", 20, 10)), "fastpath"},
    };
    run_all(after, "after the reload", tally);
    Gen g(seed_for(0x57a1e));
    for (int i = 0; i < 500; ++i) {
        run_case(*world_, random_tenant(g), tally, "after the reload, random");
        run_case(*world_, random_overlay(g, kind), tally, "after the reload, random");
    }
    EXPECT_EQ(tally.failures, 0) << tally.report();
}

// The comparison is not vacuous: real outputs of both sides, then the fast path's output or
// verdict broken one way at a time, must each be reported.
TEST_P(FastPathDifferential, ComparatorRejectsMutatedOutputs) {
    World& w = *world_;
    const std::uint32_t b10 = w.tenant("tap-b10");
    const Bytes frame = ipv4_frame(tenant_spec("blue", 10, ip4(10, 0, 0, 20), 200));
    const TenantBpf encap = w.run_tenant(b10, frame);
    const PipelineOut forwarded = w.run_pipeline(b10, frame);
    ASSERT_EQ(tenant_outcome(encap, frame).name, "encap");
    ASSERT_EQ(check_tenant(frame, encap, forwarded, w.underlay()), std::vector<std::string>{});
    ASSERT_EQ(encap.run.out.size(), frame.size() + 50);

    struct Mutant {
        const char* what;
        std::size_t offset;
    };
    const Mutant mutants[] = {
        {"outer IPv4 header checksum", 24}, {"outer IPv4 total length", 17},  {"outer IPv4 flags/fragment", 20},
        {"outer IPv4 TTL", 22},                  {"outer IPv4 destination", 33},   {"outer UDP source port", 35},
        {"outer UDP length", 39},           {"outer UDP checksum", 41},       {"overlay header byte 6", 48},
        {"outer destination MAC", 5},       {"inner destination MAC", 55},    {"inner IPv4 header checksum", 75},
        {"inner IPv4 TTL", 72},             {"inner IPv4 payload byte 6", 90}, {"inner IPv4 payload byte 150", 234},
    };
    for (const Mutant& m : mutants) {
        TenantBpf broken = encap;
        broken.run.out[m.offset] ^= 0x01;
        const auto problems = check_tenant(frame, broken, forwarded, w.underlay());
        ASSERT_EQ(problems.size(), 1u) << m.what;
        EXPECT_NE(problems[0].find(m.what), std::string::npos) << m.what << ": " << problems[0];
    }
    {
        TenantBpf broken = encap;
        broken.run.out.pop_back();
        EXPECT_EQ(check_tenant(frame, broken, forwarded, w.underlay()).size(), 1u) << "a byte short";
        broken = encap;
        broken.run.out.push_back(0);
        EXPECT_EQ(check_tenant(frame, broken, forwarded, w.underlay()).size(), 1u) << "a byte long";
        // The outer ID is normalised, and only it: another ID with its checksum updated agrees,
        // another ID with the old checksum does not.
        broken = encap;
        set_ipv4_id(broken.run.out, 14, static_cast<std::uint16_t>(get16(&encap.run.out[18]) + 4321));
        EXPECT_EQ(check_tenant(frame, broken, forwarded, w.underlay()), std::vector<std::string>{});
        put16(&broken.run.out[18], get16(&broken.run.out[18]) + 1);
        EXPECT_EQ(check_tenant(frame, broken, forwarded, w.underlay()).size(), 1u) << "ID changed, checksum not";
        // The verdict: a forward to the wrong place, or where the pipeline does not forward.
        PipelineOut elsewhere = forwarded;
        elsewhere.emitted[0].first = b10;
        EXPECT_EQ(check_tenant(frame, encap, elsewhere, w.underlay()).size(), 1u) << "forwarded to another port";
        PipelineOut dropped;
        dropped.reason = dp::DropReason::spoofed_source_ip;
        EXPECT_EQ(check_tenant(frame, encap, dropped, w.underlay()).size(), 1u) << "pipeline drops";
        // A port-security drop the pipeline would not make, and a punt that changed the frame.
        TenantBpf spoof_drop = encap;
        spoof_drop.run.retval = TC_ACT_SHOT;
        spoof_drop.delta = andromeda_fp_stats{};
        spoof_drop.delta.drop_spoofed_ip = 1;
        EXPECT_EQ(check_tenant(frame, spoof_drop, forwarded, w.underlay()).size(), 1u) << "spoof drop vs forward";
        TenantBpf punt{};
        punt.run.retval = TC_ACT_REDIRECT;
        punt.run.out = frame;
        punt.delta.punt_packets = 1;
        punt.delta.punt_bytes = frame.size();
        punt.delta.punt_no_route = 1;
        EXPECT_EQ(check_tenant(frame, punt, forwarded, w.underlay()), std::vector<std::string>{}) << "a punt is fine";
        punt.run.out[40] ^= 0x80;
        EXPECT_EQ(check_tenant(frame, punt, forwarded, w.underlay()).size(), 1u) << "a punt that changed the frame";
        PipelineOut spoofed_mac;
        spoofed_mac.reason = dp::DropReason::spoofed_source_mac;
        punt.run.out = frame;
        EXPECT_EQ(check_tenant(frame, punt, spoofed_mac, w.underlay()).size(), 1u) << "spoofed MAC not dropped";
    }

    // One byte over the MTU, with the fast path pretending the bound was one higher: the
    // pipeline answers (DF) or fragments, and a fast-path encapsulation of it is a disagreement.
    {
        const std::uint32_t mtu = vpc_named("blue").inner_mtu();
        Ipv4Spec s = tenant_spec("blue", 10, ip4(10, 0, 0, 20), mtu + 1);
        for (const std::uint16_t fragment : {kDf, std::uint16_t{0}}) {
            s.fragment = fragment;
            const Bytes big = ipv4_frame(s);
            const PipelineOut p = w.run_pipeline(b10, big);
            EXPECT_EQ(p.verdict, fragment == kDf ? dp::Verdict::reply : dp::Verdict::forward);
            TenantBpf fake = encap;
            fake.delta.encap_bytes = big.size();
            fake.run.out = big;
            fake.run.out.insert(fake.run.out.begin(), encap.run.out.begin(), encap.run.out.begin() + 50);
            EXPECT_EQ(check_tenant(big, fake, p, w.underlay()).size(), 1u) << "over the MTU, DF " << (fragment == kDf);
        }
    }

    // A local delivery and a decapsulation, each with its inner checksum broken.
    const Bytes to_local = ipv4_frame(tenant_spec("blue", 10, ip4(10, 0, 0, 11)));
    TenantBpf local = w.run_tenant(b10, to_local);
    const PipelineOut delivered = w.run_pipeline(b10, to_local);
    ASSERT_EQ(check_tenant(to_local, local, delivered, w.underlay()), std::vector<std::string>{});
    local.run.out[25] ^= 0x01;
    auto problems = check_tenant(to_local, local, delivered, w.underlay());
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_NE(problems[0].find("IPv4 header checksum"), std::string::npos) << problems[0];
    local.run.out[25] ^= 0x01;
    local.local_target = w.tenant("tap-b10");
    EXPECT_EQ(check_tenant(to_local, local, delivered, w.underlay()).size(), 1u) << "delivered to another port";

    const Bytes overlay = overlay_frame(overlay_spec(GetParam(), "blue", 20, 10));
    UnderlayBpf decap = w.run_underlay(overlay);
    const PipelineOut decapsulated = w.run_pipeline(w.underlay(), overlay);
    ASSERT_EQ(check_underlay(overlay, decap, decapsulated), std::vector<std::string>{});
    decap.tc.out[24] ^= 0x01;
    problems = check_underlay(overlay, decap, decapsulated);
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_NE(problems[0].find("IPv4 header checksum"), std::string::npos) << problems[0];
    decap.tc.out[24] ^= 0x01;
    decap.tc.out.push_back(0);
    EXPECT_EQ(check_underlay(overlay, decap, decapsulated).size(), 1u) << "a trailing byte";
    PipelineOut none;
    none.reason = dp::DropReason::not_local_endpoint;
    decap.tc.out.pop_back();
    EXPECT_EQ(check_underlay(overlay, decap, none).size(), 1u) << "decapsulated where the pipeline drops";
    // What XDP hands tc in the metadata: each field broken, or none handed over.
    ASSERT_EQ(decap.xdp.meta.size(), sizeof(andromeda_fp_handoff));
    for (const std::size_t at : {std::size_t{0}, std::size_t{4}, std::size_t{8}, std::size_t{13}, std::size_t{14}, std::size_t{19},
                                 std::size_t{20}}) {
        UnderlayBpf broken = decap;
        broken.xdp.meta[at] ^= 0x01;
        EXPECT_EQ(check_underlay(overlay, broken, decapsulated).size(), 1u) << "handed-over byte " << at;
    }
    UnderlayBpf bare = decap;
    bare.xdp.meta.clear();
    EXPECT_EQ(check_underlay(overlay, bare, decapsulated).size(), 1u) << "nothing handed over";
}

// Deliberately broken bounds and entries in the maps the programs read, run through the real
// programs: the differential check must catch each.
TEST_P(FastPathDifferential, BrokenMapEntriesAreCaught) {
    World& w = *world_;
    const std::uint32_t b10 = w.tenant("tap-b10");
    const auto disagreements = [&](const Bytes& frame) {
        const TenantBpf b = w.run_tenant(b10, frame);
        return check_tenant(frame, b, w.run_pipeline(b10, frame), w.underlay());
    };
    const int vnis = World::fd(w.skel().maps.andromeda_vnis);
    const __u32 blue_vni = 100;
    andromeda_vni vni{};
    ASSERT_EQ(bpf_map_lookup_elem(vnis, &blue_vni, &vni), 0);
    const std::uint32_t mtu = vni.mtu;
    Ipv4Spec s = tenant_spec("blue", 10, ip4(10, 0, 0, 20), mtu + 1);
    const Bytes over_df = ipv4_frame(s);
    s.fragment = 0;
    const Bytes over = ipv4_frame(s);
    s.total = mtu;
    const Bytes at_mtu = ipv4_frame(s);
    EXPECT_EQ(disagreements(over_df), std::vector<std::string>{});
    EXPECT_EQ(disagreements(over), std::vector<std::string>{});

    andromeda_vni broken = vni;
    broken.mtu = mtu + 1;  // an off-by-one bound
    ASSERT_EQ(bpf_map_update_elem(vnis, &blue_vni, &broken, BPF_ANY), 0);
    EXPECT_EQ(disagreements(over_df).size(), 1u) << "one byte over the MTU, DF: the pipeline answers";
    EXPECT_EQ(disagreements(over).size(), 1u) << "one byte over the MTU: the pipeline fragments";
    EXPECT_EQ(disagreements(at_mtu), std::vector<std::string>{});
    broken = vni;
    broken.gateway_mac[5] ^= 0x01;  // the fast path's gateway MAC is not the pipeline's
    ASSERT_EQ(bpf_map_update_elem(vnis, &blue_vni, &broken, BPF_ANY), 0);
    const Bytes to_local = ipv4_frame(tenant_spec("blue", 10, ip4(10, 0, 0, 11)));
    Bytes to_wrong_gateway = to_local;
    to_wrong_gateway[5] ^= 0x01;
    EXPECT_EQ(disagreements(to_wrong_gateway).size(), 1u) << "sent to a MAC the pipeline does not answer";
    ASSERT_EQ(bpf_map_update_elem(vnis, &blue_vni, &vni, BPF_ANY), 0);

    const int peers = World::fd(w.skel().maps.andromeda_peers);
    const __be32 node2 = htonl(kNode2);
    andromeda_peer peer{};
    ASSERT_EQ(bpf_map_lookup_elem(peers, &node2, &peer), 0);
    andromeda_peer stale_peer = peer;
    stale_peer.mac[5] ^= 0x10;  // a next hop the pipeline does not use
    ASSERT_EQ(bpf_map_update_elem(peers, &node2, &stale_peer, BPF_ANY), 0);
    auto problems = disagreements(at_mtu);
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_NE(problems[0].find("outer destination MAC"), std::string::npos) << problems[0];
    ASSERT_EQ(bpf_map_update_elem(peers, &node2, &peer, BPF_ANY), 0);

    const int ports = World::fd(w.skel().maps.andromeda_ports);
    andromeda_port port{};
    ASSERT_EQ(bpf_map_lookup_elem(ports, &b10, &port), 0);
    andromeda_port wrong_ip = port;
    wrong_ip.ip = htonl(ip4(10, 0, 0, 11));  // port security against another endpoint's address
    ASSERT_EQ(bpf_map_update_elem(ports, &b10, &wrong_ip, BPF_ANY), 0);
    EXPECT_EQ(disagreements(at_mtu).size(), 1u) << "its own traffic dropped as spoofed";
    Ipv4Spec spoofed = tenant_spec("blue", 10, ip4(10, 0, 0, 20));
    spoofed.src = ip4(10, 0, 0, 11);
    EXPECT_EQ(disagreements(ipv4_frame(spoofed)).size(), 1u) << "a spoofed source encapsulated";
    ASSERT_EQ(bpf_map_update_elem(ports, &b10, &port, BPF_ANY), 0);

    const int fabric = World::fd(w.skel().maps.andromeda_fabric);
    andromeda_fabric_key key{};
    key.vni = 100;
    key.ip = htonl(ip4(10, 0, 0, 11));
    andromeda_fabric_entry entry{};
    ASSERT_EQ(bpf_map_lookup_elem(fabric, &key, &entry), 0);
    andromeda_fabric_entry moved_entry = entry;
    moved_entry.local = 0;
    moved_entry.ifindex = 0;
    moved_entry.node_ip = htonl(kNode2);  // an endpoint the pipeline has here, the map on node2
    ASSERT_EQ(bpf_map_update_elem(fabric, &key, &moved_entry, BPF_ANY), 0);
    EXPECT_EQ(disagreements(to_local).size(), 1u) << "encapsulated where the pipeline delivers locally";
    ASSERT_EQ(bpf_map_update_elem(fabric, &key, &entry, BPF_ANY), 0);
    EXPECT_EQ(disagreements(to_local), std::vector<std::string>{});
}

INSTANTIATE_TEST_SUITE_P(Encapsulations, FastPathDifferential, ::testing::Values(Encap::andromeda, Encap::vxlan),
                         [](const ::testing::TestParamInfo<Encap>& param) { return std::string(to_string(param.param)); });

}  // namespace
