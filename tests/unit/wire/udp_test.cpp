#include "wire/udp.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace andromeda::wire {
namespace {

const Ipv4Address kSrc4(0x0a00000a);
const Ipv4Address kDst4(0x0a000014);
const Ipv6Address kSrc6(std::array<std::uint8_t, 16>{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a});
const Ipv6Address kDst6(std::array<std::uint8_t, 16>{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x14});

// Straightforward RFC 768 reference: pseudo-header words then the datagram with checksum zeroed.
std::uint16_t reference_udp4_checksum(std::vector<std::uint8_t> d, Ipv4Address s, Ipv4Address t) {
    d[6] = d[7] = 0;
    std::uint32_t sum = (s.value() >> 16) + (s.value() & 0xffff) + (t.value() >> 16) + (t.value() & 0xffff) + 17 +
                        static_cast<std::uint32_t>(d.size());
    for (std::size_t i = 0; i < d.size(); i += 2)
        sum += static_cast<std::uint32_t>(d[i]) << 8 | (i + 1 < d.size() ? d[i + 1] : 0);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    const auto c = static_cast<std::uint16_t>(~sum);
    return c == 0 ? 0xffff : c;
}

std::vector<std::uint8_t> make_datagram(std::size_t payload_size, std::uint8_t fill = 0x5a) {
    std::vector<std::uint8_t> d(kUdpHeaderLength + payload_size, fill);
    const UdpHeader h{40000, 4242, static_cast<std::uint16_t>(d.size()), 0};
    if (write_udp_header(d, h) != kUdpHeaderLength) ADD_FAILURE();
    return d;
}

TEST(Udp, RoundTripAllFields) {
    std::vector<std::uint8_t> d(20, 0xab);
    const UdpHeader h{1234, 4789, 17, 0xcafe};
    ASSERT_EQ(write_udp_header(d, h), 8u);
    const auto udp = UdpView::parse(d);  // three trailing bytes lie beyond the UDP length
    ASSERT_TRUE(udp);
    EXPECT_EQ(udp->source_port(), 1234);
    EXPECT_EQ(udp->destination_port(), 4789);
    EXPECT_EQ(udp->length(), 17);
    EXPECT_EQ(udp->checksum(), 0xcafe);
    EXPECT_EQ(udp->datagram().size(), 17u);
    EXPECT_EQ(udp->payload().size(), 9u);
    EXPECT_EQ(udp->payload().data(), d.data() + 8);
    EXPECT_EQ(udp->header(), h);
}

TEST(Udp, BuilderRefusals) {
    std::vector<std::uint8_t> d(7);
    EXPECT_EQ(write_udp_header(d, UdpHeader{1, 2, 8, 0}), 0u);
    d.resize(8);
    EXPECT_EQ(write_udp_header(d, UdpHeader{1, 2, 7, 0}), 0u);
}

TEST(Udp, ParseErrors) {
    auto d = make_datagram(4);
    EXPECT_EQ(UdpView::parse(std::span(d).first(7)).error(), ParseError::Truncated);
    EXPECT_EQ(UdpView::parse(std::span(d).first(11)).error(), ParseError::Truncated);
    EXPECT_TRUE(UdpView::parse(d));
    store_be16(&d[4], 7);
    EXPECT_EQ(UdpView::parse(d).error(), ParseError::BadLength);
}

TEST(Udp, ChecksumV4ComputeVerifyAndZeroMeansNone) {
    auto d = make_datagram(13);  // odd length exercises the pad byte
    const auto udp = MutableUdpView::parse(d);
    ASSERT_TRUE(udp);
    EXPECT_TRUE(udp->checksum_valid(kSrc4, kDst4));  // 0: no checksum over IPv4
    udp->update_checksum(kSrc4, kDst4);
    EXPECT_EQ(udp->checksum(), reference_udp4_checksum(d, kSrc4, kDst4));
    EXPECT_TRUE(udp->checksum_valid(kSrc4, kDst4));
    EXPECT_FALSE(udp->checksum_valid(kSrc4, Ipv4Address(0x0a000015)));
    udp->clear_checksum();
    EXPECT_EQ(udp->checksum(), 0);
    udp->set_source_port(1);  // an absent checksum stays absent
    EXPECT_EQ(udp->checksum(), 0);
}

TEST(Udp, ChecksumV6MandatoryAndVerifies) {
    auto d = make_datagram(10);
    const auto udp = MutableUdpView::parse(d);
    ASSERT_TRUE(udp);
    EXPECT_FALSE(udp->checksum_valid(kSrc6, kDst6));  // 0 is not allowed over IPv6
    udp->update_checksum(kSrc6, kDst6);
    EXPECT_NE(udp->checksum(), 0);
    EXPECT_TRUE(udp->checksum_valid(kSrc6, kDst6));
    EXPECT_FALSE(udp->checksum_valid(kDst6, kDst6));
}

TEST(Udp, ComputedZeroIsSentAsAllOnes) {
    // Search payloads for one whose checksum folds to zero; it must be transmitted as 0xffff.
    std::mt19937 rng(7);
    for (int iter = 0; iter < 200000; ++iter) {
        auto d = make_datagram(2);
        d[8] = static_cast<std::uint8_t>(rng());
        d[9] = static_cast<std::uint8_t>(rng());
        const auto udp = UdpView::parse(d);
        if (reference_udp4_checksum(d, kSrc4, kDst4) != 0xffff) continue;
        EXPECT_EQ(udp->compute_checksum(kSrc4, kDst4), 0xffff);
        return;
    }
    FAIL() << "no zero-sum payload found";
}

TEST(Udp, PropertyRandomAndTruncatedInputsStayInBounds) {
    std::mt19937 rng(99);
    for (int iter = 0; iter < 5000; ++iter) {
        std::vector<std::uint8_t> junk(rng() % 32);
        for (auto& b : junk) b = static_cast<std::uint8_t>(rng());
        if (const auto udp = UdpView::parse(junk)) {
            ASSERT_LE(udp->datagram().size(), junk.size());
            (void)udp->checksum_valid(kSrc4, kDst4);
            (void)udp->checksum_valid(kSrc6, kDst6);
        }
        const auto d = make_datagram(rng() % 40);
        const std::size_t cut = rng() % (d.size() + 1);
        const std::vector<std::uint8_t> truncated(d.begin(), d.begin() + static_cast<long>(cut));
        ASSERT_EQ(static_cast<bool>(UdpView::parse(truncated)), cut == d.size());
    }
}

// NAT rewrites: ports in the header and addresses in the pseudo-header, patched incrementally,
// must give exactly the checksum a full recompute gives.
TEST(Udp, PropertyIncrementalRewriteEqualsRecompute) {
    std::mt19937 rng(1624);
    for (int iter = 0; iter < 5000; ++iter) {
        auto d = make_datagram(rng() % 50);
        for (std::size_t i = 8; i < d.size(); ++i) d[i] = static_cast<std::uint8_t>(rng());
        const auto udp = MutableUdpView::parse(d);
        ASSERT_TRUE(udp);
        if (iter % 2 == 0) {
            Ipv4Address src(static_cast<std::uint32_t>(rng())), dst(static_cast<std::uint32_t>(rng()));
            udp->update_checksum(src, dst);
            const Ipv4Address new_src(iter % 9 == 0 ? 0 : static_cast<std::uint32_t>(rng()));
            udp->patch_checksum_for_address(src, new_src);
            udp->set_source_port(static_cast<std::uint16_t>(rng()));
            udp->set_destination_port(static_cast<std::uint16_t>(rng()));
            ASSERT_EQ(udp->checksum(), udp->compute_checksum(new_src, dst));
            ASSERT_TRUE(udp->checksum_valid(new_src, dst));
        } else {
            std::array<std::uint8_t, 16> a{}, b{}, c{};
            for (std::size_t i = 0; i < 16; ++i) {
                a[i] = static_cast<std::uint8_t>(rng());
                b[i] = static_cast<std::uint8_t>(rng());
                c[i] = static_cast<std::uint8_t>(rng());
            }
            const Ipv6Address src(a), dst(b), new_dst(c);
            udp->update_checksum(src, dst);
            udp->patch_checksum_for_address(dst, new_dst);
            udp->set_destination_port(static_cast<std::uint16_t>(rng()));
            ASSERT_EQ(udp->checksum(), udp->compute_checksum(src, new_dst));
            ASSERT_TRUE(udp->checksum_valid(src, new_dst));
        }
    }
}

}  // namespace
}  // namespace andromeda::wire
