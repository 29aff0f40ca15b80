// The DHCPv4 view and builder: every refusal with its offset, Option Overload, RFC 3396
// concatenation, the builder's limits; and random bytes, truncations and round trips.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "wire/dhcp.hpp"

namespace andromeda::wire {
namespace {

using Bytes = std::vector<std::uint8_t>;

// A message of the fixed part, the cookie and `options` as raw bytes (no End added).
Bytes message(const Bytes& options, std::uint8_t hlen = 6) {
    Bytes m(240, 0);
    m[0] = 1;
    m[1] = 1;
    m[2] = hlen;
    m[236] = 99;
    m[237] = 130;
    m[238] = 83;
    m[239] = 99;
    for (const std::uint8_t b : options) m.push_back(b);  // not insert: GCC 12 warns of a bound it invents
    return m;
}

std::vector<std::uint8_t> codes(const DhcpView& v) {
    std::vector<std::uint8_t> out;
    auto c = v.options();
    while (const auto o = c.next()) out.push_back(o->code);
    return out;
}

TEST(DhcpViewTest, RefusalsNameTheirKindAndOffset) {
    struct Case {
        Bytes bytes;
        DhcpError error;
    };
    Bytes bad_cookie = message({255});
    bad_cookie[239] = 0;
    Bytes overload_in_file = message({52, 1, 1, 255});
    overload_in_file[108] = 52;
    overload_in_file[109] = 1;
    overload_in_file[110] = 2;
    const Case cases[] = {
        {Bytes(239, 0), {DhcpErrorKind::truncated, 239}},
        {bad_cookie, {DhcpErrorKind::bad_magic_cookie, 236}},
        {message({255}, 17), {DhcpErrorKind::bad_hardware_length, 2}},
        {message({53, 1, 1, 55, 4, 1, 3}), {DhcpErrorKind::truncated_option, 243}},
        {message({53, 1, 1, 12}), {DhcpErrorKind::truncated_option, 243}},  // no length byte
        {message({52, 2, 0, 1, 255}), {DhcpErrorKind::bad_overload, 240}},
        {message({0, 52, 1, 4, 255}), {DhcpErrorKind::bad_overload, 241}},
        {message({52, 1, 0, 255}), {DhcpErrorKind::bad_overload, 240}},
        {overload_in_file, {DhcpErrorKind::bad_overload, 108}},
    };
    for (const Case& c : cases) {
        const auto v = DhcpView::parse(c.bytes);
        ASSERT_FALSE(v);
        EXPECT_EQ(v.error(), c.error) << to_string(v.error().kind) << " at " << v.error().offset << ", expected "
                                      << to_string(c.error.kind) << " at " << c.error.offset;
    }
}

TEST(DhcpViewTest, PadIsSkippedEndIsOptionalAndWhatFollowsEndIsIgnored) {
    const Bytes padded = message({0, 0, 53, 1, 3, 0, 61, 2, 1, 2});  // the view borrows: keep the bytes
    auto v = DhcpView::parse(padded);
    ASSERT_TRUE(v);
    EXPECT_EQ(codes(*v), (std::vector<std::uint8_t>{53, 61}));
    const Bytes after_end = message({53, 1, 3, 255, 12, 200, 1});  // garbage after End
    v = DhcpView::parse(after_end);
    ASSERT_TRUE(v);
    EXPECT_EQ(codes(*v), (std::vector<std::uint8_t>{53}));
    EXPECT_EQ(v->message_type(), 3);
}

TEST(DhcpViewTest, OverloadedFieldsAreReadAfterTheOptionsFileBeforeSname) {
    Bytes m = message({53, 1, 1, 52, 1, 3, 255});
    const Bytes in_file{0, 55, 2, 1, 3, 255, 99, 99};
    const Bytes in_sname{12, 3, 'v', 'm', '1'};  // no End: the field's end closes it
    std::copy(in_file.begin(), in_file.end(), m.begin() + 108);
    std::copy(in_sname.begin(), in_sname.end(), m.begin() + 44 + 59);
    const auto v = DhcpView::parse(m);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->overload(), dhcp_overload::kBoth);
    EXPECT_EQ(codes(*v), (std::vector<std::uint8_t>{53, 52, 55, 12}));
    EXPECT_EQ(v->find(dhcp_option::kHostName)->offset, 44u + 59);

    m[245] = dhcp_overload::kFile;  // sname no longer holds options
    EXPECT_EQ(codes(*DhcpView::parse(m)), (std::vector<std::uint8_t>{53, 52, 55}));
    m[44 + 60] = 9;  // sname's option now runs past the field, but sname is not in use
    EXPECT_TRUE(DhcpView::parse(m));
    m[245] = dhcp_overload::kSname;
    EXPECT_EQ(DhcpView::parse(m).error(), (DhcpError{DhcpErrorKind::truncated_option, 44 + 59}));
}

TEST(DhcpViewTest, RepeatedOptionsAreConcatenated) {
    const Bytes m = message({55, 2, 1, 3, 53, 1, 1, 55, 3, 6, 15, 26, 255});
    const auto v = DhcpView::parse(m);
    ASSERT_TRUE(v);
    std::uint8_t scratch[8];
    const auto prl = v->concatenated(dhcp_option::kParameterRequestList, scratch);
    ASSERT_TRUE(prl);
    EXPECT_EQ(Bytes(prl->begin(), prl->end()), (Bytes{1, 3, 6, 15, 26}));
    std::uint8_t small[4];
    EXPECT_FALSE(v->concatenated(dhcp_option::kParameterRequestList, small));
    EXPECT_FALSE(v->concatenated(dhcp_option::kHostName, scratch));
    EXPECT_EQ(v->find(dhcp_option::kParameterRequestList)->value.size(), 2u) << "find: the first instance";
}

TEST(DhcpViewTest, TypedAccessorsWantTheirExactLength) {
    const Bytes m = message({53, 2, 1, 1, 50, 3, 10, 0, 0, 57, 2, 5, 220, 51, 4, 0, 0, 14, 16, 255});
    const auto v = DhcpView::parse(m);
    ASSERT_TRUE(v);
    EXPECT_FALSE(v->message_type());
    EXPECT_FALSE(v->ipv4_option(dhcp_option::kRequestedAddress));
    EXPECT_EQ(v->u16_option(dhcp_option::kMaxMessageSize), 1500);
    EXPECT_EQ(v->u32_option(dhcp_option::kLeaseTime), 3600u);
    EXPECT_FALSE(v->u32_option(dhcp_option::kMaxMessageSize));
}

TEST(DhcpBuilderTest, OptionsThatDoNotFitAreRefusedAndTheRestGoesOn) {
    Bytes out(400, 0xee);
    DhcpFixedFields f;
    f.xid = 7;
    DhcpBuilder b(out, f, 249);  // room for 9 bytes of options, End included
    EXPECT_TRUE(b.fits(4));
    EXPECT_TRUE(b.add_u8(dhcp_option::kMessageType, 2));  // 3 bytes
    EXPECT_FALSE(b.add_ipv4(dhcp_option::kRouter, Ipv4Address(1)));  // 6 would leave no room for End
    EXPECT_TRUE(b.add_u16(dhcp_option::kInterfaceMtu, 1450));  // 4
    EXPECT_FALSE(b.add(dhcp_option::kPad, {}));
    EXPECT_FALSE(b.add(dhcp_option::kEnd, {}));
    EXPECT_TRUE(b.add_pad());
    EXPECT_FALSE(b.add_pad());
    EXPECT_EQ(b.finish(300), 249u) << "padding stops at the limit";
    EXPECT_EQ(out[249], 0xee);
    const auto v = DhcpView::parse(ByteSpan(out).first(249));
    ASSERT_TRUE(v);
    EXPECT_EQ(codes(*v), (std::vector<std::uint8_t>{53, 26}));
    EXPECT_EQ(v->xid(), 7u);
    EXPECT_EQ(b.finish(), 0u) << "a finished builder takes nothing more";

    Bytes value(256, 1);
    Bytes roomy(600);
    DhcpBuilder big(roomy, f);
    EXPECT_FALSE(big.add(dhcp_option::kHostName, value));
    EXPECT_TRUE(big.add(dhcp_option::kHostName, ByteSpan(value).first(255)));

    DhcpBuilder tiny(MutableByteSpan(out).first(240), f);
    EXPECT_FALSE(tiny.ok()) << "not even End fits";
    EXPECT_EQ(tiny.finish(), 0u);
}

// Property: random option lists built, parsed back the same; random bytes and every truncation of
// a message never crash, and every option the cursor yields lies inside the message.
TEST(DhcpPropertyTest, BuiltMessagesParseBackToTheSameOptions) {
    std::mt19937 rng(31);
    Bytes out(1500);
    for (int round = 0; round < 2000; ++round) {
        DhcpFixedFields f;
        f.op = static_cast<std::uint8_t>(rng());
        f.xid = static_cast<std::uint32_t>(rng());
        f.flags = static_cast<std::uint16_t>(rng());
        f.ciaddr = Ipv4Address(static_cast<std::uint32_t>(rng()));
        std::vector<std::pair<std::uint8_t, Bytes>> added;
        DhcpBuilder b(out, f, 241 + rng() % 600);  // 241: the fixed part and End
        for (int i = 0; i < 30; ++i) {
            const auto code = static_cast<std::uint8_t>(1 + rng() % 254);
            if (code == dhcp_option::kOverload) continue;
            Bytes value(rng() % 40);
            for (auto& x : value) x = static_cast<std::uint8_t>(rng());
            if (b.add(code, value)) added.emplace_back(code, value);
        }
        const std::size_t length = b.finish(rng() % 2 ? 300 : 0);
        const auto v = DhcpView::parse(ByteSpan(out).first(length));
        ASSERT_TRUE(v) << to_string(v.error().kind);
        EXPECT_EQ(v->xid(), f.xid);
        EXPECT_EQ(v->flags(), f.flags);
        EXPECT_EQ(v->ciaddr(), f.ciaddr);
        auto cursor = v->options();
        for (const auto& [code, value] : added) {
            const auto o = cursor.next();
            ASSERT_TRUE(o);
            EXPECT_EQ(o->code, code);
            EXPECT_EQ(Bytes(o->value.begin(), o->value.end()), value);
        }
        EXPECT_FALSE(cursor.next());
    }
}

void walk(ByteSpan bytes) {
    const auto v = DhcpView::parse(bytes);
    if (!v) {
        EXPECT_NE(v.error().kind, DhcpErrorKind::none);
        EXPECT_LE(v.error().offset, bytes.size());
        return;
    }
    auto cursor = v->options();
    std::size_t n = 0;
    while (const auto o = cursor.next()) {
        ASSERT_GE(o->value.data(), bytes.data());
        ASSERT_LE(o->value.data() + o->value.size(), bytes.data() + bytes.size());
        ASSERT_LT(++n, bytes.size()) << "the cursor ends";
    }
    std::uint8_t scratch[64];
    (void)v->concatenated(dhcp_option::kParameterRequestList, scratch);
    (void)v->message_type();
    (void)v->ipv4_option(dhcp_option::kServerIdentifier);
}

TEST(DhcpPropertyTest, RandomBytesAndTruncationsNeverCrash) {
    std::mt19937 rng(32);
    for (int round = 0; round < 20000; ++round) {
        Bytes m = message({});
        m.resize(240 + rng() % 120);
        for (std::size_t i = 240; i < m.size(); ++i) m[i] = static_cast<std::uint8_t>(rng() % 4 == 0 ? rng() % 64 : rng());
        if (rng() % 3 == 0) {  // overload, with random file and sname
            const Bytes overload{52, 1, static_cast<std::uint8_t>(1 + rng() % 3)};
            m.insert(m.begin() + 240, overload.begin(), overload.end());
            for (std::size_t i = 44; i < 236; ++i) m[i] = static_cast<std::uint8_t>(rng() % 3 == 0 ? rng() % 16 : rng());
        }
        if (rng() % 4 == 0) m[rng() % m.size()] ^= static_cast<std::uint8_t>(1 << rng() % 8);
        walk(m);
        walk(ByteSpan(m).first(rng() % (m.size() + 1)));
    }
}

}  // namespace
}  // namespace andromeda::wire
