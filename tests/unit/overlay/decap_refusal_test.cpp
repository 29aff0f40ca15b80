// Every decap refusal reason from a crafted packet, and decap over random bytes and random
// truncations (run under ASan/UBSan in the sanitizer build) never reads out of bounds.
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

namespace andromeda::overlay {
namespace {

using testing::Bytes;
using testing::make_ipv4_frame;
using testing::test_template_config;

Bytes encapsulated(EncapKind kind, bool udp_checksum = false, std::size_t inner_length = 60) {
    OuterTemplate t(test_template_config(kind, udp_checksum));
    Bytes inner = make_ipv4_frame(testing::kTenantA, testing::kTenantB, 17, 40000, 4242);
    inner.resize(inner_length, 0x42);
    Bytes out(inner.size() + 50);
    t.encapsulate(inner, out, {100, 0x60d1, 64, 0});
    return out;
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
        {"ipv6_ethertype", K::andromeda, [&] { Bytes p = a(); wire::store_be16(&p[12], 0x86dd); return p; },
         E::not_ipv4},
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

TEST(DecapRefusal, EachReasonFromACraftedPacket) {
    std::set<DecapError> seen;
    for (const RefusalCase& c : refusal_cases()) {
        const Bytes packet = c.make();
        const DecapResult r = decapsulate(packet, {c.kind, 0});
        EXPECT_EQ(r.error, c.expected) << c.name << ": got " << to_string(r.error);
        seen.insert(r.error);
    }
    // Every reason the enum names is produced by some case above.
    for (int e = 1; e <= static_cast<int>(DecapError::inner_frame_too_short); ++e) {
        EXPECT_TRUE(seen.count(static_cast<DecapError>(e))) << to_string(static_cast<DecapError>(e));
    }
}

TEST(DecapRefusal, EveryReasonHasADistinctName) {
    std::set<std::string_view> names;
    const int last = static_cast<int>(DecapError::inner_frame_too_short);
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
        if (buffer.size() >= 14 && rng() % 2) wire::store_be16(&buffer[12], 0x0800);  // get past Ethernet
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
        for (int i = 0; i < 3000; ++i) {
            const Bytes full = encapsulated(kind, rng() % 2, 14 + rng() % 200);
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

}  // namespace
}  // namespace andromeda::overlay
