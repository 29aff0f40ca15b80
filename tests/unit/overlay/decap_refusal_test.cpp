// Every decap refusal reason from a crafted packet, over an IPv4 and an IPv6 underlay, and decap
// over random bytes and random truncations (run under ASan/UBSan in the sanitizer build) never
// reads out of bounds.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <set>
#include <string>

#include "overlay/decap.hpp"
#include "overlay/outer_template.hpp"
#include "unit/overlay/overlay_test_frames.hpp"
#include "wire/checksum.hpp"
#include "wire/ipv4.hpp"
#include "wire/udp.hpp"

namespace andromeda::overlay {
namespace {

using testing::Bytes;
using testing::make_ipv4_frame;
using testing::test_template_config;
using testing::test_template_config6;

Bytes encapsulated(EncapKind kind, bool udp_checksum = false, std::size_t inner_length = 60) {
    OuterTemplate t(test_template_config(kind, udp_checksum));
    Bytes inner = make_ipv4_frame(testing::kTenantA, testing::kTenantB, 17, 40000, 4242);
    inner.resize(inner_length, 0x42);
    Bytes out(inner.size() + 50);
    t.encapsulate(inner, out, {100, 0x60d1, 64, 0});
    return out;
}

// The same over an IPv6 underlay: 70 outer bytes, the outer UDP checksum always present.
Bytes encapsulated6(EncapKind kind, std::size_t inner_length = 60) {
    OuterTemplate t(test_template_config6(kind));
    Bytes inner = make_ipv4_frame(testing::kTenantA, testing::kTenantB, 17, 40000, 4242);
    inner.resize(inner_length, 0x42);
    Bytes out(inner.size() + 70);
    t.encapsulate(inner, out, {100, 0x60d1, 64, 0});
    return out;
}

// Offsets in an untagged IPv6 outer packet.
constexpr std::size_t kIp6 = 14, kUdp6 = kIp6 + 40;

// Re-signs the outer UDP datagram of an untagged IPv6 packet after an edit (its UDP length and
// the IPv6 addresses as they stand), so only the edit is judged.
void fix_udp6_checksum(Bytes& packet) {
    const std::size_t udp_length = wire::load_be16(&packet[kUdp6 + 4]);
    const auto udp = wire::MutableUdpView::parse(wire::MutableByteSpan(packet).subspan(kUdp6, udp_length));
    udp->update_checksum(wire::Ipv6Address::from_bytes(&packet[kIp6 + 8]),
                         wire::Ipv6Address::from_bytes(&packet[kIp6 + 24]));
}

void set_payload_length6(Bytes& packet, std::uint16_t length) { wire::store_be16(&packet[kIp6 + 4], length); }

// Puts an extension header of `type` (8 bytes, next header UDP) between the IPv6 header and UDP.
Bytes with_extension_header(Bytes packet, std::uint8_t type) {
    std::uint8_t header[8] = {17, 0, 0, 0, 0, 0, 0, 0};  // next header UDP, length 0 (8 bytes)
    packet.insert(packet.begin() + kUdp6, std::begin(header), std::end(header));
    packet[kIp6 + 6] = type;
    set_payload_length6(packet, static_cast<std::uint16_t>(wire::load_be16(&packet[kIp6 + 4]) + 8));
    return packet;
}

// Re-signs the outer IPv4 header at `ip` after an edit, so only the edit is judged.
void fix_ip_checksum(Bytes& packet, std::size_t ip = 14) {
    packet[ip + 10] = packet[ip + 11] = 0;
    const std::size_t header_length = static_cast<std::size_t>(packet[ip] & 0x0f) * 4;
    wire::store_be16(&packet[ip + 10], wire::internet_checksum(wire::ByteSpan(&packet[ip], header_length)));
}

void set_ip_total_length(Bytes& packet, std::uint16_t length) {
    wire::store_be16(&packet[16], length);
    fix_ip_checksum(packet);
}

struct RefusalCase {
    std::string name;
    EncapKind kind;
    std::function<Bytes()> make;
    DecapError expected;
};

std::vector<RefusalCase> refusal_cases() {
    using K = EncapKind;
    using E = DecapError;
    const auto a = [] { return encapsulated(K::andromeda); };
    return {
        {"runt", K::andromeda, [] { return Bytes(13, 0); }, E::truncated_ethernet},
        {"three_tags", K::andromeda,
         [&] {
             Bytes p = a();
             const std::uint8_t tag[4] = {0x81, 0x00, 0, 1};
             for (int i = 0; i < 3; ++i) p.insert(p.begin() + 12, std::begin(tag), std::end(tag));
             return p;
         },
         E::too_many_vlan_tags},
        {"arp_ethertype", K::andromeda, [&] { Bytes p = a(); wire::store_be16(&p[12], 0x0806); return p; },
         E::not_ipv4},
        // An IPv6 ethertype is decapsulated as IPv6 now: an IPv4 header under it has version 4.
        {"ipv4_under_ipv6_ethertype", K::andromeda, [&] { Bytes p = a(); wire::store_be16(&p[12], 0x86dd); return p; },
         E::bad_ip_version},
        {"short_ip", K::andromeda, [&] { Bytes p = a(); p.resize(14 + 19); return p; }, E::truncated_ipv4},
        {"ip_version_6", K::andromeda, [&] { Bytes p = a(); p[14] = 0x65; fix_ip_checksum(p); return p; },
         E::bad_ip_version},
        {"ihl_4", K::andromeda, [&] { Bytes p = a(); p[14] = 0x44; return p; }, E::bad_ip_header_length},
        {"total_below_header", K::andromeda, [&] { Bytes p = a(); set_ip_total_length(p, 19); return p; },
         E::bad_ip_total_length},
        {"total_past_frame", K::andromeda, [&] { Bytes p = a(); p.pop_back(); return p; },
         E::bad_ip_total_length},
        {"ip_checksum", K::andromeda, [&] { Bytes p = a(); p[24] ^= 1; return p; }, E::bad_ip_checksum},
        {"more_fragments", K::andromeda, [&] { Bytes p = a(); p[20] = 0x20; fix_ip_checksum(p); return p; },
         E::ip_fragment},
        {"fragment_offset", K::andromeda, [&] { Bytes p = a(); p[21] = 0x01; fix_ip_checksum(p); return p; },
         E::ip_fragment},
        {"tcp", K::andromeda, [&] { Bytes p = a(); p[23] = 6; fix_ip_checksum(p); return p; }, E::not_udp},
        {"short_udp", K::andromeda, [&] { Bytes p = a(); set_ip_total_length(p, 27); return p; },
         E::truncated_udp},
        {"udp_length_7", K::andromeda, [&] { Bytes p = a(); wire::store_be16(&p[38], 7); return p; },
         E::bad_udp_length},
        {"udp_length_past_ip", K::andromeda, [&] { Bytes p = a(); set_ip_total_length(p, 90); return p; },
         E::bad_udp_length},
        {"vxlan_port_for_andromeda", K::andromeda, [&] { Bytes p = a(); wire::store_be16(&p[36], 4789); return p; },
         E::wrong_udp_port},
        {"udp_checksum", K::andromeda, [] { Bytes p = encapsulated(K::andromeda, true); p.back() ^= 0x80; return p; },
         E::bad_udp_checksum},
        {"no_overlay_header", K::andromeda,
         [&] {
             Bytes p = a();
             wire::store_be16(&p[38], 8 + 7);
             set_ip_total_length(p, 20 + 8 + 7);
             return p;
         },
         E::truncated_overlay_header},
        {"andromeda_version_2", K::andromeda, [&] { Bytes p = a(); p[42] = 0x20; return p; }, E::bad_overlay_version},
        {"inner_protocol_1", K::andromeda, [&] { Bytes p = a(); p[43] = 1; return p; },
         E::unsupported_inner_protocol},
        {"vxlan_i_clear", K::vxlan, [] { Bytes p = encapsulated(K::vxlan); p[42] = 0; return p; },
         E::vxlan_vni_flag_clear},
        {"inner_13_bytes", K::andromeda, [] { return encapsulated(K::andromeda, false, 13); },
         E::inner_frame_too_short},
    };
}

// The same over an IPv6 underlay: the IPv6 reasons, and the shared ones reached through IPv6.
std::vector<RefusalCase> refusal_cases6() {
    using K = EncapKind;
    using E = DecapError;
    const auto a = [] { return encapsulated6(K::andromeda); };  // copied into each case: they outlive this
    return {
        {"6_arp_ethertype", K::andromeda, [a] { Bytes p = a(); wire::store_be16(&p[12], 0x0806); return p; },
         E::not_ipv4},
        {"6_short_ip", K::andromeda, [a] { Bytes p = a(); p.resize(kIp6 + 39); return p; }, E::truncated_ipv6},
        {"6_version_4", K::andromeda, [a] { Bytes p = a(); p[kIp6] = 0x40; return p; }, E::bad_ip_version},
        {"6_version_7", K::andromeda, [a] { Bytes p = a(); p[kIp6] = 0x70; return p; }, E::bad_ip_version},
        {"6_payload_past_frame", K::andromeda, [a] { Bytes p = a(); p.pop_back(); return p; },
         E::bad_ipv6_payload_length},
        {"6_payload_length_max", K::andromeda, [a] { Bytes p = a(); set_payload_length6(p, 0xffff); return p; },
         E::bad_ipv6_payload_length},
        {"6_fragment_header", K::andromeda, [a] { return with_extension_header(a(), 44); }, E::ip_fragment},
        {"6_hop_by_hop", K::andromeda, [a] { return with_extension_header(a(), 0); }, E::ipv6_extension_header},
        {"6_routing", K::andromeda, [a] { return with_extension_header(a(), 43); }, E::ipv6_extension_header},
        {"6_destination_options", K::andromeda, [a] { return with_extension_header(a(), 60); },
         E::ipv6_extension_header},
        {"6_esp", K::andromeda, [a] { return with_extension_header(a(), 50); }, E::ipv6_extension_header},
        {"6_tcp", K::andromeda, [a] { Bytes p = a(); p[kIp6 + 6] = 6; return p; }, E::not_udp},
        {"6_icmpv6", K::andromeda, [a] { Bytes p = a(); p[kIp6 + 6] = 58; return p; }, E::not_udp},
        {"6_no_next_header", K::andromeda, [a] { Bytes p = a(); p[kIp6 + 6] = 59; return p; }, E::not_udp},
        {"6_short_udp", K::andromeda, [a] { Bytes p = a(); set_payload_length6(p, 7); return p; }, E::truncated_udp},
        {"6_empty_payload", K::andromeda, [a] { Bytes p = a(); set_payload_length6(p, 0); return p; },
         E::truncated_udp},
        {"6_udp_length_7", K::andromeda, [a] { Bytes p = a(); wire::store_be16(&p[kUdp6 + 4], 7); return p; },
         E::bad_udp_length},
        {"6_udp_length_past_payload", K::andromeda,
         [a] {
             Bytes p = a();
             set_payload_length6(p, static_cast<std::uint16_t>(wire::load_be16(&p[kUdp6 + 4]) - 1));
             return p;
         },
         E::bad_udp_length},
        {"6_vxlan_port_for_andromeda", K::andromeda,
         [a] { Bytes p = a(); wire::store_be16(&p[kUdp6 + 2], 4789); fix_udp6_checksum(p); return p; },
         E::wrong_udp_port},
        {"6_andromeda_port_for_vxlan", K::vxlan, [a] { return a(); }, E::wrong_udp_port},
        {"6_zero_checksum", K::andromeda, [a] { Bytes p = a(); wire::store_be16(&p[kUdp6 + 6], 0); return p; },
         E::udp_zero_checksum_ipv6},
        {"6_checksum_of_inner_byte", K::andromeda, [a] { Bytes p = a(); p.back() ^= 0x80; return p; },
         E::bad_udp_checksum},
        {"6_checksum_of_source_address", K::andromeda, [a] { Bytes p = a(); p[kIp6 + 23] ^= 1; return p; },
         E::bad_udp_checksum},
        {"6_checksum_of_destination_address", K::andromeda, [a] { Bytes p = a(); p[kIp6 + 39] ^= 1; return p; },
         E::bad_udp_checksum},
        {"6_checksum_field", K::andromeda, [a] { Bytes p = a(); p[kUdp6 + 7] ^= 1; return p; }, E::bad_udp_checksum},
        {"6_no_overlay_header", K::andromeda,
         [a] {
             Bytes p = a();
             wire::store_be16(&p[kUdp6 + 4], 8 + 7);
             set_payload_length6(p, 8 + 7);
             fix_udp6_checksum(p);
             return p;
         },
         E::truncated_overlay_header},
        {"6_andromeda_version_2", K::andromeda,
         [a] { Bytes p = a(); p[kUdp6 + 8] = 0x20; fix_udp6_checksum(p); return p; }, E::bad_overlay_version},
        {"6_inner_protocol_1", K::andromeda,
         [a] { Bytes p = a(); p[kUdp6 + 9] = 1; fix_udp6_checksum(p); return p; }, E::unsupported_inner_protocol},
        {"6_vxlan_i_clear", K::vxlan,
         [] { Bytes p = encapsulated6(K::vxlan); p[kUdp6 + 8] = 0; fix_udp6_checksum(p); return p; },
         E::vxlan_vni_flag_clear},
        {"6_inner_13_bytes", K::andromeda, [] { return encapsulated6(K::andromeda, 13); }, E::inner_frame_too_short},
    };
}

TEST(DecapRefusal, EachReasonFromACraftedPacket) {
    std::set<DecapError> seen;
    std::vector<RefusalCase> cases = refusal_cases();
    for (RefusalCase& c : refusal_cases6()) cases.push_back(std::move(c));
    for (const RefusalCase& c : cases) {
        const Bytes packet = c.make();
        const DecapResult r = decapsulate(packet, {c.kind, 0});
        EXPECT_EQ(r.error, c.expected) << c.name << ": got " << to_string(r.error);
        seen.insert(r.error);
    }
    // Every reason the enum names is produced by some case above.
    for (std::size_t e = 1; e <= kDecapErrorCount; ++e) {
        EXPECT_TRUE(seen.count(static_cast<DecapError>(e))) << to_string(static_cast<DecapError>(e));
    }
}

// The IPv6 reasons are the decap list's last (appended: the ids before them did not move).
TEST(DecapRefusal, Ipv6ReasonsKeepTheirStableIds) {
    EXPECT_EQ(stable_id(DecapError::inner_frame_too_short), 319);
    EXPECT_EQ(stable_id(DecapError::truncated_ipv6), 320);
    EXPECT_EQ(stable_id(DecapError::bad_ipv6_payload_length), 321);
    EXPECT_EQ(stable_id(DecapError::ipv6_extension_header), 322);
    EXPECT_EQ(stable_id(DecapError::udp_zero_checksum_ipv6), 323);
    EXPECT_EQ(static_cast<std::size_t>(DecapError::udp_zero_checksum_ipv6), kDecapErrorCount);
}

TEST(DecapRefusal, EveryReasonHasADistinctName) {
    std::set<std::string_view> names;
    const int last = static_cast<int>(kDecapErrorCount);
    for (int e = 0; e <= last; ++e) names.insert(to_string(static_cast<DecapError>(e)));
    EXPECT_EQ(names.size(), static_cast<std::size_t>(last + 1));
    EXPECT_FALSE(names.count("unknown"));
    EXPECT_EQ(to_string(static_cast<DecapError>(last + 1)), "unknown");
}

TEST(DecapAccepts, VlanTaggedUnderlayOptionsAndPadding) {
    Bytes p = encapsulated(EncapKind::andromeda);
    const std::uint8_t tag[4] = {0x81, 0x00, 0x00, 0x2a};
    p.insert(p.begin() + 12, std::begin(tag), std::end(tag));
    p.resize(p.size() + 6, 0);  // Ethernet padding past the IP total length
    DecapResult r = decapsulate(p, {});
    ASSERT_TRUE(r.ok()) << to_string(r.error);
    EXPECT_EQ(r.packet.outer_vlan_id, 42);
    EXPECT_EQ(r.packet.inner.size(), 60u);
    EXPECT_EQ(r.packet.inner_offset, 54u);

    // IPv4 options (IHL 6, one NOP word).
    Bytes o = encapsulated(EncapKind::andromeda);
    const std::uint8_t nops[4] = {1, 1, 1, 0};
    o.insert(o.begin() + 34, std::begin(nops), std::end(nops));
    o[14] = 0x46;
    wire::store_be16(&o[16], static_cast<std::uint16_t>(wire::load_be16(&o[16]) + 4));
    fix_ip_checksum(o);
    r = decapsulate(o, {});
    ASSERT_TRUE(r.ok()) << to_string(r.error);
    EXPECT_EQ(r.packet.inner_offset, 54u);
    EXPECT_EQ(r.packet.vni, 100u);
}

TEST(DecapAccepts, Ipv6PaddingAndAShorterUdpLength) {
    const Bytes original = encapsulated6(EncapKind::andromeda);
    Bytes p = original;
    p.resize(p.size() + 6, 0);  // Ethernet padding past the payload length
    DecapResult r = decapsulate(p, {});
    ASSERT_TRUE(r.ok()) << to_string(r.error);
    EXPECT_EQ(r.packet.inner.size(), 60u);
    EXPECT_EQ(r.packet.inner_offset, 70u);

    // A payload longer than the UDP length: UDP's length wins (as over IPv4) and its checksum
    // covers only the datagram.
    Bytes q = original;
    q.insert(q.end(), {1, 2, 3, 4});
    set_payload_length6(q, static_cast<std::uint16_t>(wire::load_be16(&q[kIp6 + 4]) + 4));
    r = decapsulate(q, {});
    ASSERT_TRUE(r.ok()) << to_string(r.error);
    EXPECT_EQ(Bytes(r.packet.inner.begin(), r.packet.inner.end()), Bytes(original.begin() + 70, original.end()));

    // An 802.1Q tag in front of the IPv6 ethertype.
    Bytes tagged = original;
    const std::uint8_t tag[4] = {0x81, 0x00, 0x00, 0x2a};
    tagged.insert(tagged.begin() + 12, std::begin(tag), std::end(tag));
    r = decapsulate(tagged, {});
    ASSERT_TRUE(r.ok()) << to_string(r.error);
    EXPECT_EQ(r.packet.outer_vlan_id, 42);
    EXPECT_EQ(r.packet.inner_offset, 74u);
}

// decapsulate() clears its result by hand (decap.cpp says why): every field a refusal leaves
// unwritten, and every field an IPv4 or VXLAN decap does not write, must hold its default.
TEST(DecapAccepts, RefusalLeavesEveryFieldAtItsDefault) {
    const Decapsulated d{};
    const auto expect_default = [&d](const Decapsulated& p) {
        EXPECT_TRUE(p.inner.empty());
        EXPECT_EQ(p.inner_offset, d.inner_offset);
        EXPECT_EQ(p.vni, d.vni);
        EXPECT_EQ(p.flow_hash, d.flow_hash);
        EXPECT_EQ(p.hop_limit, kDefaultHopLimit);
        EXPECT_EQ(p.hop_limit, d.hop_limit);
        EXPECT_EQ(p.flags, d.flags);
        EXPECT_EQ(p.outer_src_mac, d.outer_src_mac);
        EXPECT_EQ(p.outer_dst_mac, d.outer_dst_mac);
        EXPECT_EQ(p.outer_vlan_id, d.outer_vlan_id);
        EXPECT_EQ(p.outer_src_ip, d.outer_src_ip);
        EXPECT_EQ(p.outer_dst_ip, d.outer_dst_ip);
        EXPECT_EQ(p.outer_ttl, d.outer_ttl);
        EXPECT_EQ(p.outer_src_port, d.outer_src_port);
        EXPECT_EQ(p.outer_ipv6, d.outer_ipv6);
        EXPECT_EQ(p.outer_src_ip6, d.outer_src_ip6);
        EXPECT_EQ(p.outer_dst_ip6, d.outer_dst_ip6);
    };
    for (const Bytes& p : {Bytes(13, 0xff), Bytes(60, 0xff), encapsulated6(EncapKind::andromeda, 0)}) {
        const DecapResult r = decapsulate(wire::ByteSpan(p).first(std::min<std::size_t>(p.size(), 53)), {});
        ASSERT_FALSE(r.ok());
        expect_default(r.packet);
    }
    // What a VXLAN decap over IPv4 leaves alone: the hop limit, the flags and the IPv6 fields.
    const DecapResult v = decapsulate(encapsulated(EncapKind::vxlan), {EncapKind::vxlan, 0});
    ASSERT_TRUE(v.ok()) << to_string(v.error);
    EXPECT_EQ(v.packet.hop_limit, kDefaultHopLimit);
    EXPECT_EQ(v.packet.flags, 0);
    EXPECT_FALSE(v.packet.outer_ipv6);
    EXPECT_EQ(v.packet.outer_src_ip6, wire::Ipv6Address());
    EXPECT_EQ(v.packet.outer_dst_ip6, wire::Ipv6Address());
}

// decap verifies the outer IPv4 checksum with its own inline sum; it must agree with wire's.
TEST(DecapAccepts, IpChecksumVerdictAgreesWithWireOverRandomOptions) {
    std::mt19937 rng(23);
    for (int i = 0; i < 20000; ++i) {
        Bytes p = encapsulated(EncapKind::andromeda);
        const std::size_t option_bytes = 4 * (rng() % 11);
        Bytes options(option_bytes);
        for (auto& b : options) b = static_cast<std::uint8_t>(rng());
        p.insert(p.begin() + 34, options.begin(), options.end());
        p[14] = static_cast<std::uint8_t>(0x40 | (5 + option_bytes / 4));
        wire::store_be16(&p[16], static_cast<std::uint16_t>(wire::load_be16(&p[16]) + option_bytes));
        fix_ip_checksum(p);
        if (rng() % 2) p[14 + 2 + rng() % (18 + option_bytes)] ^= static_cast<std::uint8_t>(1 + rng() % 255);
        const auto ip = wire::Ipv4View::parse(wire::ByteSpan(p).subspan(14));
        const DecapError e = decapsulate(p, {}).error;
        if (!ip || e < DecapError::bad_ip_checksum) continue;  // refused before the checksum
        ASSERT_EQ(e == DecapError::bad_ip_checksum, !ip->checksum_valid()) << i;
    }
}

TEST(DecapRobustness, RandomBytesNeverCrash) {
    std::mt19937 rng(21);
    Bytes buffer;
    for (int i = 0; i < 200000; ++i) {
        buffer.resize(rng() % 200);
        for (auto& b : buffer) b = static_cast<std::uint8_t>(rng());
        // Get past Ethernet.
        if (buffer.size() >= 14 && rng() % 2) wire::store_be16(&buffer[12], rng() % 2 ? 0x0800 : 0x86dd);
        if (buffer.size() >= 21 && wire::load_be16(&buffer[12]) == 0x86dd && rng() % 2) {
            buffer[14] = 0x60;  // and past the IPv6 version, to UDP
            buffer[20] = 17;
        }
        const DecapResult r = decapsulate(buffer, {rng() % 2 ? EncapKind::andromeda : EncapKind::vxlan, 0});
        if (r.ok()) {
            ASSERT_GE(r.packet.inner.size(), 14u);
            ASSERT_LE(r.packet.inner_offset + r.packet.inner.size(), buffer.size());
        }
    }
}

TEST(DecapRobustness, TruncationsAndBitFlipsOfValidPacketsNeverCrash) {
    std::mt19937 rng(22);
    for (const EncapKind kind : {EncapKind::andromeda, EncapKind::vxlan}) {
        for (int i = 0; i < 6000; ++i) {
            const std::size_t inner_length = 14 + rng() % 200;
            const Bytes full = i % 2 ? encapsulated6(kind, inner_length) : encapsulated(kind, rng() % 2, inner_length);
            for (std::size_t n = 0; n < full.size(); n += 1 + rng() % 8) {
                // Exactly `n` bytes in a heap block of their own, so ASan sees any over-read.
                const Bytes truncated(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
                const DecapResult r = decapsulate(truncated, {kind, 0});
                ASSERT_FALSE(r.ok()) << n << "/" << full.size();
            }
            Bytes flipped = full;
            flipped[rng() % flipped.size()] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
            (void)decapsulate(flipped, {kind, 0});
        }
    }
}

// Every prefix of an IPv6 overlay packet is refused, each for the first layer it cuts.
TEST(DecapRobustness, EveryTruncationOfAnIpv6PacketNamesTheLayerItCuts) {
    const Bytes full = encapsulated6(EncapKind::andromeda);
    for (std::size_t n = 0; n < full.size(); ++n) {
        const Bytes truncated(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
        const DecapError e = decapsulate(truncated, {}).error;
        const DecapError expected = n < 14   ? DecapError::truncated_ethernet
                                    : n < 54 ? DecapError::truncated_ipv6
                                             : DecapError::bad_ipv6_payload_length;
        ASSERT_EQ(e, expected) << n;
    }
    EXPECT_TRUE(decapsulate(full, {}).ok());
}

}  // namespace
}  // namespace andromeda::overlay
