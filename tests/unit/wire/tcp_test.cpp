#include "wire/tcp.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace andromeda::wire {
namespace {

// MSS 1460, NOP, window scale 7 (plus NOP to pad), SACK permitted + 2 NOPs.
const std::vector<std::uint8_t> kOptions = {2, 4, 0x05, 0xb4, 1, 3, 3, 7, 4, 2, 1, 1};

TcpHeader sample_header(ByteSpan options = {}) {
    return TcpHeader{40000, 443, 0x01020304, 0xa0b0c0d0, tcp_flag::kSyn | tcp_flag::kAck | tcp_flag::kEce,
                     29200, 0x1234, 7, options};
}

TEST(Tcp, RoundTripAllFields) {
    std::vector<std::uint8_t> seg(32 + 5, 0x77);
    const auto h = sample_header(kOptions);
    ASSERT_EQ(write_tcp_header(seg, h), 32u);
    const auto tcp = TcpView::parse(seg);
    ASSERT_TRUE(tcp);
    EXPECT_EQ(tcp->source_port(), 40000);
    EXPECT_EQ(tcp->destination_port(), 443);
    EXPECT_EQ(tcp->sequence(), 0x01020304u);
    EXPECT_EQ(tcp->acknowledgment(), 0xa0b0c0d0u);
    EXPECT_EQ(tcp->data_offset(), 8);
    EXPECT_EQ(tcp->header_length(), 32u);
    EXPECT_EQ(tcp->flags(), tcp_flag::kSyn | tcp_flag::kAck | tcp_flag::kEce);
    EXPECT_TRUE(tcp->has_flags(tcp_flag::kSyn | tcp_flag::kAck));
    EXPECT_FALSE(tcp->has_flags(tcp_flag::kFin));
    EXPECT_EQ(tcp->window(), 29200);
    EXPECT_EQ(tcp->checksum(), 0x1234);
    EXPECT_EQ(tcp->urgent_pointer(), 7);
    EXPECT_TRUE(std::equal(tcp->options().begin(), tcp->options().end(), kOptions.begin(), kOptions.end()));
    EXPECT_EQ(tcp->payload().size(), 5u);
    EXPECT_EQ(tcp->segment().size(), seg.size());
    const auto back = tcp->header();
    EXPECT_EQ(back.sequence, h.sequence);
    EXPECT_EQ(back.flags, h.flags);
    EXPECT_EQ(back.options.size(), kOptions.size());
}

TEST(Tcp, BuilderRefusals) {
    std::vector<std::uint8_t> seg(80);
    const std::vector<std::uint8_t> odd(5), too_long(44);
    EXPECT_EQ(write_tcp_header(seg, sample_header(odd)), 0u);
    EXPECT_EQ(write_tcp_header(seg, sample_header(too_long)), 0u);
    EXPECT_EQ(write_tcp_header(std::span(seg).first(31), sample_header(kOptions)), 0u);
}

TEST(Tcp, ParseErrors) {
    std::vector<std::uint8_t> seg(32);
    ASSERT_NE(write_tcp_header(seg, sample_header(kOptions)), 0u);
    EXPECT_EQ(TcpView::parse(std::span(seg).first(19)).error(), ParseError::Truncated);
    EXPECT_EQ(TcpView::parse(std::span(seg).first(31)).error(), ParseError::Truncated);  // options cut
    seg[12] = 0x40;
    EXPECT_EQ(TcpView::parse(seg).error(), ParseError::BadHeaderLength);
}

TEST(Tcp, ChecksumV4AndV6) {
    std::vector<std::uint8_t> seg(20 + 11, 0x42);
    ASSERT_NE(write_tcp_header(seg, sample_header()), 0u);
    const auto tcp = MutableTcpView::parse(seg);
    ASSERT_TRUE(tcp);
    const Ipv4Address s4(0x0a000001), d4(0x0a000002);
    EXPECT_FALSE(tcp->checksum_valid(s4, d4));
    tcp->update_checksum(s4, d4);
    EXPECT_TRUE(tcp->checksum_valid(s4, d4));
    EXPECT_FALSE(tcp->checksum_valid(d4, Ipv4Address(0x0a000003)));
    const auto s6 = *Ipv6Address::parse("fd00::1"), d6 = *Ipv6Address::parse("fd00::2");
    tcp->update_checksum(s6, d6);
    EXPECT_TRUE(tcp->checksum_valid(s6, d6));
    EXPECT_FALSE(tcp->checksum_valid(s4, d4));
}

TEST(Tcp, PropertyRandomAndTruncatedInputsStayInBounds) {
    std::mt19937 rng(6);
    for (int iter = 0; iter < 5000; ++iter) {
        std::vector<std::uint8_t> junk(rng() % 70);
        for (auto& b : junk) b = static_cast<std::uint8_t>(rng());
        if (const auto tcp = TcpView::parse(junk)) {
            ASSERT_LE(tcp->header_length(), junk.size());
            (void)tcp->options();
            (void)tcp->checksum_valid(Ipv4Address(1), Ipv4Address(2));
        }
        std::vector<std::uint8_t> options((rng() % 11) * 4);
        std::vector<std::uint8_t> seg(20 + options.size() + rng() % 30);
        ASSERT_NE(write_tcp_header(seg, sample_header(options)), 0u);
        const std::size_t cut = rng() % (seg.size() + 1);
        const std::vector<std::uint8_t> truncated(seg.begin(), seg.begin() + static_cast<long>(cut));
        ASSERT_EQ(static_cast<bool>(TcpView::parse(truncated)), cut >= 20 + options.size());
    }
}

TEST(Tcp, PropertyIncrementalRewriteEqualsRecompute) {
    std::mt19937 rng(793);
    for (int iter = 0; iter < 5000; ++iter) {
        std::vector<std::uint8_t> seg(20 + (rng() % 11) * 4 + rng() % 40);
        for (auto& b : seg) b = static_cast<std::uint8_t>(rng());
        seg[12] = static_cast<std::uint8_t>((5 + rng() % 11) << 4 | (seg[12] & 0x0f));
        const auto tcp = MutableTcpView::parse(seg);
        if (!tcp) continue;  // data offset past a short segment
        const Ipv4Address src(static_cast<std::uint32_t>(rng())), dst(static_cast<std::uint32_t>(rng()));
        tcp->update_checksum(src, dst);
        const Ipv4Address new_dst(iter % 11 == 0 ? 0 : static_cast<std::uint32_t>(rng()));
        tcp->patch_checksum_for_address(dst, new_dst);
        tcp->set_source_port(static_cast<std::uint16_t>(rng()));
        tcp->set_destination_port(static_cast<std::uint16_t>(rng()));
        if (iter % 3 == 0) tcp->set_sequence(static_cast<std::uint32_t>(rng()));
        if (iter % 3 == 1) tcp->set_acknowledgment(static_cast<std::uint32_t>(rng()));
        if (iter % 4 == 0) tcp->set_flags(static_cast<std::uint8_t>(rng()));
        if (iter % 5 == 0) tcp->set_window(static_cast<std::uint16_t>(rng()));
        ASSERT_EQ(tcp->checksum(), tcp->compute_checksum(src, new_dst));
        ASSERT_TRUE(tcp->checksum_valid(src, new_dst));
        // And over IPv6.
        std::array<std::uint8_t, 16> a{}, b{};
        for (std::size_t i = 0; i < 16; ++i) {
            a[i] = static_cast<std::uint8_t>(rng());
            b[i] = static_cast<std::uint8_t>(rng());
        }
        tcp->update_checksum(Ipv6Address(a), Ipv6Address(b));
        const Ipv6Address new_src(b);
        tcp->patch_checksum_for_address(Ipv6Address(a), new_src);
        ASSERT_EQ(tcp->checksum(), tcp->compute_checksum(new_src, Ipv6Address(b)));
    }
}

}  // namespace
}  // namespace andromeda::wire
