#include "wire/ipv4.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "wire/ip_protocol.hpp"

namespace andromeda::wire {
namespace {

// Record-route option (type 7, length 7, pointer 4, one empty slot) padded with an EOL.
const std::vector<std::uint8_t> kRecordRoute = {7, 7, 4, 0, 0, 0, 0, 0};

Ipv4Header sample_header(ByteSpan options = {}) {
    Ipv4Header h;
    h.dscp = 46;
    h.ecn = 2;
    h.identification = 0xbeef;
    h.dont_fragment = true;
    h.more_fragments = false;
    h.fragment_offset = 0;
    h.ttl = 17;
    h.protocol = ip_protocol::kUdp;
    h.source = Ipv4Address(0x0a00000a);
    h.destination = Ipv4Address(0xc0a80102);
    h.options = options;
    h.total_length = static_cast<std::uint16_t>(h.header_length() + 12);
    return h;
}

void expect_same_fields(const Ipv4Header& a, const Ipv4Header& b) {
    EXPECT_EQ(a.dscp, b.dscp);
    EXPECT_EQ(a.ecn, b.ecn);
    EXPECT_EQ(a.total_length, b.total_length);
    EXPECT_EQ(a.identification, b.identification);
    EXPECT_EQ(a.dont_fragment, b.dont_fragment);
    EXPECT_EQ(a.more_fragments, b.more_fragments);
    EXPECT_EQ(a.fragment_offset, b.fragment_offset);
    EXPECT_EQ(a.ttl, b.ttl);
    EXPECT_EQ(a.protocol, b.protocol);
    EXPECT_EQ(a.source, b.source);
    EXPECT_EQ(a.destination, b.destination);
    EXPECT_TRUE(std::equal(a.options.begin(), a.options.end(), b.options.begin(), b.options.end()));
}

TEST(Ipv4, RoundTripWithoutOptions) {
    std::vector<std::uint8_t> buf(64, 0);  // includes Ethernet-style padding past total length
    const auto h = sample_header();
    ASSERT_EQ(write_ipv4_header(buf, h), 20u);
    const auto ip = Ipv4View::parse(buf);
    ASSERT_TRUE(ip);
    EXPECT_EQ(ip->version(), 4);
    EXPECT_EQ(ip->ihl(), 5);
    EXPECT_EQ(ip->header_length(), 20u);
    EXPECT_EQ(ip->dscp(), 46);
    EXPECT_EQ(ip->ecn(), 2);
    EXPECT_EQ(ip->total_length(), 32);
    EXPECT_EQ(ip->identification(), 0xbeef);
    EXPECT_TRUE(ip->dont_fragment());
    EXPECT_FALSE(ip->more_fragments());
    EXPECT_FALSE(ip->is_fragment());
    EXPECT_EQ(ip->ttl(), 17);
    EXPECT_EQ(ip->protocol(), ip_protocol::kUdp);
    EXPECT_EQ(ip->source(), Ipv4Address(0x0a00000a));
    EXPECT_EQ(ip->destination(), Ipv4Address(0xc0a80102));
    EXPECT_TRUE(ip->options().empty());
    EXPECT_EQ(ip->payload().size(), 12u);  // padding excluded
    EXPECT_EQ(ip->packet().size(), 32u);
    EXPECT_TRUE(ip->checksum_valid());
    EXPECT_EQ(ip->checksum(), ip->compute_checksum());
    expect_same_fields(ip->header(), h);
}

TEST(Ipv4, RoundTripWithOptionsAndFragmentFields) {
    std::vector<std::uint8_t> buf(64, 0);
    auto h = sample_header(kRecordRoute);
    h.dont_fragment = false;
    h.more_fragments = true;
    h.fragment_offset = 0x1abc;
    ASSERT_EQ(write_ipv4_header(buf, h), 28u);
    const auto ip = Ipv4View::parse(buf);
    ASSERT_TRUE(ip);
    EXPECT_EQ(ip->ihl(), 7);
    EXPECT_EQ(ip->options().size(), 8u);
    EXPECT_EQ(ip->payload().data(), buf.data() + 28);
    EXPECT_TRUE(ip->more_fragments());
    EXPECT_FALSE(ip->dont_fragment());
    EXPECT_EQ(ip->fragment_offset(), 0x1abc);
    EXPECT_TRUE(ip->is_fragment());
    EXPECT_TRUE(ip->checksum_valid());
    expect_same_fields(ip->header(), h);
}

TEST(Ipv4, KnownChecksum) {
    // The header of the checksum unit test: 192.168.1.1 -> 192.168.1.2, UDP, len 90, DF, TTL 64.
    std::vector<std::uint8_t> buf(90);
    Ipv4Header h;
    h.total_length = 90;
    h.dont_fragment = true;
    h.protocol = ip_protocol::kUdp;
    h.source = Ipv4Address(0xc0a80101);
    h.destination = Ipv4Address(0xc0a80102);
    ASSERT_EQ(write_ipv4_header(buf, h), 20u);
    EXPECT_EQ(load_be16(&buf[10]), 0xb73f);
}

TEST(Ipv4, BuilderRefusals) {
    std::vector<std::uint8_t> buf(80);
    const std::vector<std::uint8_t> odd_options(3);
    const std::vector<std::uint8_t> long_options(44);
    auto h = sample_header(odd_options);
    EXPECT_EQ(write_ipv4_header(buf, h), 0u);
    h = sample_header(long_options);
    EXPECT_EQ(write_ipv4_header(buf, h), 0u);
    h = sample_header();
    h.total_length = 19;
    EXPECT_EQ(write_ipv4_header(buf, h), 0u);
    h = sample_header();
    EXPECT_EQ(write_ipv4_header(std::span(buf).first(19), h), 0u);
}

TEST(Ipv4, ParseErrors) {
    std::vector<std::uint8_t> buf(40);
    ASSERT_NE(write_ipv4_header(buf, sample_header()), 0u);
    EXPECT_EQ(Ipv4View::parse(std::span(buf).first(19)).error(), ParseError::Truncated);
    EXPECT_EQ(Ipv4View::parse(std::span(buf).first(31)).error(), ParseError::Truncated);  // total 32
    EXPECT_TRUE(Ipv4View::parse(std::span(buf).first(32)));
    auto bad = buf;
    bad[0] = 0x65;
    EXPECT_EQ(Ipv4View::parse(bad).error(), ParseError::BadVersion);
    bad = buf;
    bad[0] = 0x44;
    EXPECT_EQ(Ipv4View::parse(bad).error(), ParseError::BadHeaderLength);
    bad = buf;
    bad[0] = 0x4f;  // 60-byte header inside a 32-byte packet
    EXPECT_EQ(Ipv4View::parse(bad).error(), ParseError::BadTotalLength);
    bad = buf;
    store_be16(&bad[2], 19);
    EXPECT_EQ(Ipv4View::parse(bad).error(), ParseError::BadTotalLength);
    // A bad checksum parses (the caller decides) but does not verify.
    bad = buf;
    bad[11] ^= 0x01;
    const auto ip = Ipv4View::parse(bad);
    ASSERT_TRUE(ip);
    EXPECT_FALSE(ip->checksum_valid());
}

TEST(Ipv4, ParseQuotedAcceptsShortDatagram) {
    std::vector<std::uint8_t> buf(28 + 8);
    auto h = sample_header(kRecordRoute);
    h.total_length = 1500;
    ASSERT_EQ(write_ipv4_header(buf, h), 28u);
    EXPECT_EQ(Ipv4View::parse(buf).error(), ParseError::Truncated);
    const auto quoted = Ipv4View::parse_quoted(buf);
    ASSERT_TRUE(quoted);
    EXPECT_EQ(quoted->total_length(), 1500);
    EXPECT_EQ(quoted->packet().size(), 36u);
    EXPECT_EQ(quoted->payload().size(), 8u);
    EXPECT_EQ(quoted->options().size(), 8u);
    EXPECT_TRUE(quoted->checksum_valid());
    EXPECT_EQ(Ipv4View::parse_quoted(std::span(buf).first(27)).error(), ParseError::Truncated);
    EXPECT_EQ(Ipv4View::parse_quoted(std::span(buf).first(19)).error(), ParseError::Truncated);
    buf[0] = 0x44;
    EXPECT_EQ(Ipv4View::parse_quoted(buf).error(), ParseError::BadHeaderLength);
}

TEST(Ipv4, SettersPatchChecksum) {
    std::vector<std::uint8_t> buf(40);
    ASSERT_NE(write_ipv4_header(buf, sample_header(kRecordRoute)), 0u);
    const auto ip = MutableIpv4View::parse(buf);
    ASSERT_TRUE(ip);
    ip->set_ttl(1);
    EXPECT_EQ(ip->ttl(), 1);
    EXPECT_EQ(ip->decrement_ttl(), 0);
    EXPECT_EQ(ip->decrement_ttl(), 0);
    ip->set_protocol(ip_protocol::kTcp);
    ip->set_dscp(10);
    ip->set_ecn(3);
    ip->set_identification(7);
    ip->set_dont_fragment(false);
    ip->set_source(Ipv4Address(0x01020304));
    ip->set_destination(Ipv4Address(0xfffffffe));
    EXPECT_EQ(ip->protocol(), ip_protocol::kTcp);
    EXPECT_EQ(ip->dscp(), 10);
    EXPECT_EQ(ip->ecn(), 3);
    EXPECT_EQ(ip->identification(), 7);
    EXPECT_FALSE(ip->dont_fragment());
    EXPECT_EQ(ip->source(), Ipv4Address(0x01020304));
    EXPECT_EQ(ip->destination(), Ipv4Address(0xfffffffe));
    EXPECT_TRUE(ip->checksum_valid());
    EXPECT_EQ(ip->checksum(), ip->compute_checksum());
    ip->options()[2] = 8;
    EXPECT_FALSE(ip->checksum_valid());
    ip->update_checksum();
    EXPECT_TRUE(ip->checksum_valid());
}

std::vector<std::uint8_t> random_ipv4_packet(std::mt19937& rng) {
    std::vector<std::uint8_t> options((rng() % 11) * 4);
    for (auto& b : options) b = static_cast<std::uint8_t>(rng());
    Ipv4Header h;
    h.dscp = static_cast<std::uint8_t>(rng() & 0x3f);
    h.ecn = static_cast<std::uint8_t>(rng() & 3);
    h.identification = static_cast<std::uint16_t>(rng());
    h.dont_fragment = rng() % 2;
    h.more_fragments = rng() % 2;
    h.fragment_offset = static_cast<std::uint16_t>(rng() & 0x1fff);
    h.ttl = static_cast<std::uint8_t>(rng());
    h.protocol = static_cast<std::uint8_t>(rng());
    h.source = Ipv4Address(static_cast<std::uint32_t>(rng()));
    h.destination = Ipv4Address(static_cast<std::uint32_t>(rng()));
    h.options = options;
    const std::size_t payload = rng() % 64;
    h.total_length = static_cast<std::uint16_t>(h.header_length() + payload);
    std::vector<std::uint8_t> packet(h.total_length + rng() % 8);
    for (auto& b : packet) b = static_cast<std::uint8_t>(rng());
    if (write_ipv4_header(packet, h) == 0) ADD_FAILURE() << "builder refused a valid header";
    return packet;
}

// Parsing random bytes and every truncation of valid packets: ASan catches any read past the
// (exactly sized) heap buffer; a successful parse must stay inside it.
TEST(Ipv4, PropertyRandomAndTruncatedInputsStayInBounds) {
    std::mt19937 rng(0x1d4);
    for (int iter = 0; iter < 5000; ++iter) {
        std::vector<std::uint8_t> junk(rng() % 80);
        for (auto& b : junk) b = static_cast<std::uint8_t>(rng());
        if (!junk.empty() && rng() % 2) junk[0] = static_cast<std::uint8_t>(0x40 | (junk[0] & 0x0f));
        if (const auto quoted = Ipv4View::parse_quoted(junk)) {
            ASSERT_LE(quoted->packet().size(), junk.size());
            ASSERT_LE(quoted->header_length(), quoted->packet().size());
            (void)quoted->header();
        }
        if (const auto ip = Ipv4View::parse(junk)) {
            ASSERT_LE(ip->packet().size(), junk.size());
            ASSERT_LE(ip->header_length(), ip->packet().size());
            (void)ip->checksum_valid();
            (void)ip->header();
        }
        const auto packet = random_ipv4_packet(rng);
        const std::size_t cut = rng() % (packet.size() + 1);
        const std::vector<std::uint8_t> truncated(packet.begin(), packet.begin() + static_cast<long>(cut));
        const auto ip = Ipv4View::parse(truncated);
        const std::size_t total = load_be16(&packet[2]);
        ASSERT_EQ(static_cast<bool>(ip), cut >= total) << "cut " << cut << " total " << total;
        if (ip) {
            ASSERT_TRUE(ip->checksum_valid());
        }
    }
}

TEST(Ipv4, PropertyIncrementalChecksumEqualsRecompute) {
    std::mt19937 rng(4242);
    for (int iter = 0; iter < 5000; ++iter) {
        auto packet = random_ipv4_packet(rng);
        const auto ip = MutableIpv4View::parse(packet);
        ASSERT_TRUE(ip);
        switch (rng() % 6) {
            case 0: ip->set_source(Ipv4Address(static_cast<std::uint32_t>(rng()))); break;
            case 1: ip->set_destination(Ipv4Address(iter % 7 == 0 ? 0 : static_cast<std::uint32_t>(rng()))); break;
            case 2: ip->set_ttl(static_cast<std::uint8_t>(rng())); break;
            case 3: ip->decrement_ttl(); break;
            case 4: ip->set_dscp(static_cast<std::uint8_t>(rng())); break;
            default: ip->set_identification(static_cast<std::uint16_t>(rng())); break;
        }
        ASSERT_EQ(ip->checksum(), ip->compute_checksum());
        ASSERT_TRUE(ip->checksum_valid());
    }
}

}  // namespace
}  // namespace andromeda::wire
