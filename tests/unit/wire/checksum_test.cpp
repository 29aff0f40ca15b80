#include "wire/checksum.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace andromeda::wire {
namespace {

// Straightforward RFC 1071 reference: 16-bit big-endian words, end-around carry.
std::uint16_t reference_checksum(const std::vector<std::uint8_t>& d) {
    std::uint32_t sum = 0;
    for (std::size_t i = 0; i < d.size(); i += 2) {
        std::uint32_t w = static_cast<std::uint32_t>(d[i]) << 8;
        if (i + 1 < d.size()) w |= d[i + 1];
        sum += w;
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return static_cast<std::uint16_t>(~sum);
}

TEST(Checksum, Rfc1071Example) {
    // The worked example of RFC 1071 section 3: sum of these bytes is 0xddf2.
    const std::vector<std::uint8_t> d = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
    EXPECT_EQ(checksum_fold(checksum_add(d)), 0xddf2);
    EXPECT_EQ(internet_checksum(d), static_cast<std::uint16_t>(~0xddf2));
}

TEST(Checksum, KnownIpv4Header) {
    // 192.168.1.1 -> 192.168.1.2, UDP, total length 90, ID 0, DF, TTL 64.
    std::vector<std::uint8_t> h = {0x45, 0x00, 0x00, 0x5a, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                                   0x00, 0x00, 0xc0, 0xa8, 0x01, 0x01, 0xc0, 0xa8, 0x01, 0x02};
    const std::uint16_t c = internet_checksum(h);
    EXPECT_EQ(c, reference_checksum(h));
    store_be16(&h[10], c);
    EXPECT_TRUE(checksum_verifies(h));
    h[15] ^= 1;
    EXPECT_FALSE(checksum_verifies(h));
}

TEST(Checksum, MatchesReferenceOnRandomData) {
    std::mt19937 rng(1071);
    for (int iter = 0; iter < 5000; ++iter) {
        std::vector<std::uint8_t> d(rng() % 2100);
        for (auto& b : d) b = static_cast<std::uint8_t>(rng());
        ASSERT_EQ(internet_checksum(d), reference_checksum(d)) << "size " << d.size();
    }
}

TEST(Checksum, ChainedPiecesEqualWhole) {
    std::mt19937 rng(7);
    for (int iter = 0; iter < 2000; ++iter) {
        std::vector<std::uint8_t> d(rng() % 1500 + 2);
        for (auto& b : d) b = static_cast<std::uint8_t>(rng());
        const std::size_t split = (rng() % d.size()) & ~std::size_t{1};
        const ByteSpan all(d);
        const auto chained = checksum_add(all.subspan(split), checksum_add(all.first(split)));
        ASSERT_EQ(checksum_finish(chained), internet_checksum(d));
    }
}

TEST(Checksum, IncrementalEqualsFullRecompute) {
    std::mt19937 rng(1624);
    for (int iter = 0; iter < 20000; ++iter) {
        std::vector<std::uint8_t> d((rng() % 64 + 4) * 2);
        for (auto& b : d) b = static_cast<std::uint8_t>(rng());
        // Occasionally start from nearly-zero data so sums near 0x0000/0xffff show up. Entirely
        // zero data is left out: no header is all zeros, and there the two methods differ only by
        // +0/-0, which one's-complement arithmetic treats as equal.
        if (iter % 97 == 0) {
            std::fill(d.begin(), d.end(), 0);
            d[0] = 0x45;
        }
        const std::uint16_t before = internet_checksum(d);
        const std::size_t off = (rng() % (d.size() / 2 - 1)) * 2;
        if (iter % 2 == 0) {
            const std::uint16_t old_word = load_be16(&d[off]);
            const auto new_word = static_cast<std::uint16_t>(rng());
            store_be16(&d[off], new_word);
            ASSERT_EQ(checksum_update16(before, old_word, new_word), internet_checksum(d));
        } else {
            const std::uint32_t old_value = load_be32(&d[off]);
            const std::uint32_t new_value = iter % 5 == 0 ? 0 : static_cast<std::uint32_t>(rng());
            store_be32(&d[off], new_value);
            ASSERT_EQ(checksum_update32(before, old_value, new_value), internet_checksum(d));
        }
    }
}

TEST(Checksum, UdpZeroMeansNoChecksumAndIsKept) {
    EXPECT_EQ(udp_checksum_update16(0, 0x1234, 0x4321), 0);
    EXPECT_EQ(udp_checksum_update32(0, 0x0a000001, 0xc0a80001), 0);
    // An update whose result is 0 must be sent as 0xffff in UDP (RFC 768), since 0 there means
    // "no checksum"; other protocols keep the 0.
    EXPECT_EQ(checksum_update16(0x1234, 0x0000, 0x1234), 0);
    EXPECT_EQ(udp_checksum_update16(0x1234, 0x0000, 0x1234), 0xffff);
}

// copy_frame (bytes.hpp) copies exactly n bytes for every length, and touches nothing around them.
TEST(Bytes, CopyFrameCopiesExactlyTheFrame) {
    std::mt19937 rng(4242);
    for (std::size_t n = 0; n <= 300; ++n) {
        std::vector<std::uint8_t> src(n + 32), dst(n + 32, 0xa5);
        for (auto& b : src) b = static_cast<std::uint8_t>(rng());
        copy_frame(dst.data() + 16, src.data() + 16, n);
        for (std::size_t i = 0; i < dst.size(); ++i) {
            const bool inside = i >= 16 && i < 16 + n;
            ASSERT_EQ(dst[i], inside ? src[i] : 0xa5) << "n " << n << " byte " << i;
        }
    }
}

TEST(Checksum, InlineIpv4HeaderCheckAgreesWithTheFullSum) {
    std::mt19937 rng(791);
    int valid = 0;
    for (int iter = 0; iter < 100000; ++iter) {
        std::vector<std::uint8_t> h(4 * (5 + rng() % 11));  // IHL 5..15
        for (auto& b : h) b = static_cast<std::uint8_t>(rng());
        if (iter % 2 == 0) {
            store_be16(&h[10], 0);
            store_be16(&h[10], internet_checksum(h));
            if (iter % 6 == 0) h[rng() % h.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
        }
        if (iter % 1000 == 0) std::fill(h.begin(), h.end(), 0);  // sums to zero: never valid
        const bool expected = checksum_verifies(h);
        ASSERT_EQ(ipv4_header_checksum_ok(h.data(), h.size()), expected) << iter;
        valid += expected;
    }
    EXPECT_GT(valid, 30000);
}

TEST(Checksum, PseudoHeaderV4) {
    // Sum of 10.0.0.10, 10.0.0.20, proto 17, length 20.
    const auto s = pseudo_header_sum(Ipv4Address(0x0a00000a), Ipv4Address(0x0a000014), 17, 20);
    EXPECT_EQ(s, 0x0a00u + 0x000au + 0x0a00u + 0x0014u + 17u + 20u);
}

// An IPv4 packet with a TCP (protocol 6) or UDP (17) header and `payload` random bytes, its
// checksums right; `check_at` gives the transport checksum's offset in the packet.
std::vector<std::uint8_t> transport_packet(std::mt19937& rng, std::uint8_t protocol, std::size_t payload,
                                           std::size_t* check_at) {
    const std::size_t l4_header = protocol == 6 ? 20 : 8;
    std::vector<std::uint8_t> p(20 + l4_header + payload);
    for (auto& b : p) b = static_cast<std::uint8_t>(rng());
    p[0] = 0x45;
    store_be16(&p[2], static_cast<std::uint16_t>(p.size()));
    store_be16(&p[6], 0x4000);  // DF, unfragmented
    p[9] = protocol;
    if (protocol == 6) p[20 + 12] = 0x50;
    if (protocol == 17) store_be16(&p[20 + 4], static_cast<std::uint16_t>(l4_header + payload));
    *check_at = 20 + (protocol == 6 ? 16 : 6);
    store_be16(&p[*check_at], 0);
    const std::uint64_t pseudo = pseudo_header_sum(Ipv4Address(load_be32(&p[12])), Ipv4Address(load_be32(&p[16])), protocol,
                                                   static_cast<std::uint32_t>(p.size() - 20));
    std::uint16_t c = checksum_finish(checksum_add(ByteSpan(p).subspan(20), pseudo));
    if (protocol == 17 && c == 0) c = 0xffff;
    store_be16(&p[*check_at], c);
    return p;
}

TEST(OffloadedChecksum, AnUnfinishedChecksumIsFinishedAndEveryOtherPacketLeftAlone) {
    std::mt19937 rng(29);
    int finished = 0;
    for (int i = 0; i < 2000; ++i) {
        const std::uint8_t protocol = i % 2 ? 6 : 17;
        std::size_t at = 0;
        const auto good = transport_packet(rng, protocol, rng() % 1400, &at);
        const std::uint64_t pseudo = pseudo_header_sum(Ipv4Address(load_be32(&good[12])), Ipv4Address(load_be32(&good[16])),
                                                       protocol, static_cast<std::uint32_t>(good.size() - 20));
        // What checksum offload leaves: the pseudo-header's folded sum in the field.
        auto partial = good;
        store_be16(&partial[at], checksum_fold(pseudo));
        if (partial == good) continue;  // the one packet in 65,536 whose checksum is that sum
        ASSERT_TRUE(finish_offloaded_checksum(partial)) << i;
        EXPECT_EQ(partial, good) << i;
        ++finished;
        // A finished checksum, right or wrong, is not touched.
        auto same = good;
        EXPECT_FALSE(finish_offloaded_checksum(same));
        EXPECT_EQ(same, good);
        auto corrupt = good;
        corrupt[good.size() - 1] ^= 0x40;
        if (load_be16(&corrupt[at]) != checksum_fold(pseudo)) {
            const auto before = corrupt;
            EXPECT_FALSE(finish_offloaded_checksum(corrupt));
            EXPECT_EQ(corrupt, before);
        }
    }
    EXPECT_GT(finished, 1990);
}

// The same over IPv6: an IPv6 packet with TCP or UDP right after its fixed header, checksums
// right, built here from random bytes; `check_at` as above.
std::vector<std::uint8_t> ipv6_transport_packet(std::mt19937& rng, std::uint8_t protocol, std::size_t payload,
                                                std::size_t* check_at) {
    const std::size_t l4_header = protocol == 6 ? 20 : 8;
    std::vector<std::uint8_t> p(40 + l4_header + payload);
    for (auto& b : p) b = static_cast<std::uint8_t>(rng());
    p[0] = 0x60;
    store_be16(&p[4], static_cast<std::uint16_t>(l4_header + payload));
    p[6] = protocol;
    if (protocol == 6) p[40 + 12] = 0x50;
    if (protocol == 17) store_be16(&p[40 + 4], static_cast<std::uint16_t>(l4_header + payload));
    *check_at = 40 + (protocol == 6 ? 16 : 6);
    store_be16(&p[*check_at], 0);
    const std::uint64_t pseudo = pseudo_header_sum(Ipv6Address::from_bytes(&p[8]), Ipv6Address::from_bytes(&p[24]),
                                                   protocol, static_cast<std::uint32_t>(l4_header + payload));
    std::uint16_t c = checksum_finish(checksum_add(ByteSpan(p).subspan(40), pseudo));
    if (protocol == 17 && c == 0) c = 0xffff;
    store_be16(&p[*check_at], c);
    return p;
}

TEST(OffloadedChecksum, AnIpv6PacketsUnfinishedChecksumIsFinishedAndOthersLeftAlone) {
    std::mt19937 rng(31);
    int finished = 0;
    for (int i = 0; i < 1000; ++i) {
        const std::uint8_t protocol = i % 2 ? 6 : 17;
        std::size_t at = 0;
        const auto good = ipv6_transport_packet(rng, protocol, rng() % 1400, &at);
        const std::uint64_t pseudo = pseudo_header_sum(Ipv6Address::from_bytes(&good[8]),
                                                       Ipv6Address::from_bytes(&good[24]), protocol,
                                                       static_cast<std::uint32_t>(good.size() - 40));
        auto partial = good;
        store_be16(&partial[at], checksum_fold(pseudo));
        if (partial == good) continue;
        ASSERT_TRUE(finish_offloaded_checksum(partial)) << i;
        EXPECT_EQ(partial, good) << i;
        ++finished;
        auto same = good;
        EXPECT_FALSE(finish_offloaded_checksum(same));
        // Behind an extension header (here: hop-by-hop named instead of the protocol) or cut short
        // of its payload length, it is not touched.
        auto extension = partial;
        store_be16(&extension[at], checksum_fold(pseudo));
        extension[6] = 0;
        const auto before = extension;
        EXPECT_FALSE(finish_offloaded_checksum(extension));
        EXPECT_EQ(extension, before);
        auto cut = std::vector<std::uint8_t>(before.begin(), before.end() - 1);
        cut[6] = protocol;
        EXPECT_FALSE(finish_offloaded_checksum(cut));
    }
    EXPECT_GT(finished, 990);
}

TEST(OffloadedChecksum, FragmentsOtherProtocolsNoUdpChecksumAndShortPacketsAreLeftAlone) {
    std::mt19937 rng(30);
    std::size_t at = 0;
    auto p = transport_packet(rng, 6, 100, &at);
    const std::uint64_t pseudo = pseudo_header_sum(Ipv4Address(load_be32(&p[12])), Ipv4Address(load_be32(&p[16])), 6,
                                                   static_cast<std::uint32_t>(p.size() - 20));
    store_be16(&p[at], checksum_fold(pseudo));
    auto fragment = p;
    store_be16(&fragment[6], 0x2000);  // MF
    EXPECT_FALSE(finish_offloaded_checksum(fragment));
    auto gre = p;
    gre[9] = 47;
    EXPECT_FALSE(finish_offloaded_checksum(gre));
    auto no_checksum = transport_packet(rng, 17, 40, &at);
    store_be16(&no_checksum[at], 0);
    EXPECT_FALSE(finish_offloaded_checksum(no_checksum));
    for (std::size_t n = 0; n < 40; ++n) {
        auto cut = std::vector<std::uint8_t>(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(n));
        EXPECT_FALSE(finish_offloaded_checksum(cut)) << n;  // shorter than its total length
    }
    EXPECT_TRUE(finish_offloaded_checksum(p));
}

}  // namespace
}  // namespace andromeda::wire
