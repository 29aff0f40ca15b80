// DNS names, the message view and builder, and TCP framing: every refusal with its offset, the
// compression limits, EDNS; and random bytes, truncations and round trips.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "wire/dns.hpp"

namespace andromeda::wire {
namespace {

using Bytes = std::vector<std::uint8_t>;

DnsName name(std::string_view text) { return DnsName::from_text(text).value(); }

Bytes header(std::uint16_t qd, std::uint16_t an = 0, std::uint16_t ns = 0, std::uint16_t ar = 0) {
    return Bytes{0x12, 0x34, 0x01, 0x00, static_cast<std::uint8_t>(qd >> 8), static_cast<std::uint8_t>(qd),
                 static_cast<std::uint8_t>(an >> 8), static_cast<std::uint8_t>(an), static_cast<std::uint8_t>(ns >> 8),
                 static_cast<std::uint8_t>(ns), static_cast<std::uint8_t>(ar >> 8), static_cast<std::uint8_t>(ar)};
}

Bytes concat(Bytes a, const Bytes& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

TEST(DnsNameTest, FromTextFollowsTheLabelRules) {
    EXPECT_EQ(name("web.blue.internal").wire_length(), 19u);
    EXPECT_EQ(name("web.blue.internal.").wire_length(), 19u);
    EXPECT_EQ(name(".").wire_length(), 1u);
    EXPECT_EQ(name("").label_count(), 0u);
    EXPECT_FALSE(DnsName::from_text("a..b"));
    EXPECT_FALSE(DnsName::from_text(".a"));
    EXPECT_TRUE(DnsName::from_text(std::string(63, 'a')));
    EXPECT_FALSE(DnsName::from_text(std::string(64, 'a')));
    std::string longest;  // 4 labels of 63 and one of 61: 253 characters, 255 bytes on the wire
    for (int i = 0; i < 3; ++i) longest += std::string(63, 'a') + ".";
    longest += std::string(61, 'b');
    EXPECT_EQ(DnsName::from_text(longest)->wire_length(), 255u);
    EXPECT_FALSE(DnsName::from_text(longest + "b"));
}

TEST(DnsNameTest, LabelsCaseAndZones) {
    const DnsName n = name("WeB.Blue.internal");
    EXPECT_EQ(n.label_count(), 3u);
    EXPECT_EQ(std::string(n.label(1).begin(), n.label(1).end()), "Blue");
    EXPECT_TRUE(n.label(3).empty());
    EXPECT_TRUE(n.equals_ignoring_case(name("web.blue.INTERNAL")));
    EXPECT_FALSE(n.equals_ignoring_case(name("web.blue.internal.x")));
    EXPECT_TRUE(n.is_at_or_below(name("blue.internal")));
    EXPECT_TRUE(n.is_at_or_below(name("BLUE.INTERNAL")));
    EXPECT_TRUE(n.is_at_or_below(name("web.blue.internal")));
    EXPECT_TRUE(n.is_at_or_below(name(".")));
    EXPECT_FALSE(name("web.xblue.internal").is_at_or_below(name("blue.internal"))) << "label boundaries only";
    EXPECT_FALSE(name("internal").is_at_or_below(name("blue.internal")));
    EXPECT_EQ(n.to_string(), "WeB.Blue.internal");
    const Bytes odd = {3, 'a', '.', 0xff, 0};
    DnsName parsed;
    std::size_t next = 0;
    const Bytes message = concat(header(0), odd);
    ASSERT_EQ(read_dns_name(message, 12, &parsed, next).kind, DnsErrorKind::none);
    EXPECT_EQ(parsed.to_string(), "a\\046\\255");
}

TEST(DnsNameTest, PointersAreFollowedOnlyBackwardsAndBoundedly) {
    // 12: "blue.internal", 27: "web" + pointer to 12.
    const Bytes base = concat(header(0), {4, 'b', 'l', 'u', 'e', 8, 'i', 'n', 't', 'e', 'r', 'n', 'a', 'l', 0,
                                          3, 'w', 'e', 'b', 0xc0, 12});
    DnsName n;
    std::size_t next = 0;
    ASSERT_EQ(read_dns_name(base, 27, &n, next).kind, DnsErrorKind::none);
    EXPECT_EQ(n.to_string(), "web.blue.internal");
    EXPECT_EQ(next, 33u) << "just past the pointer, where the name sits";

    struct Case {
        Bytes tail;  // at 12
        std::size_t offset;
        DnsError error;
    };
    const Case cases[] = {
        {{0xc0, 14, 0}, 12, {DnsErrorKind::bad_pointer, 12}},          // forward
        {{0xc0, 12}, 12, {DnsErrorKind::bad_pointer, 12}},             // to itself
        {{3, 'w', 'e', 'b', 0xc0, 12}, 12, {DnsErrorKind::bad_pointer, 16}},  // back into its own labels: a loop
        {{0, 0xc0, 4}, 13, {DnsErrorKind::bad_pointer, 13}},           // into the header
        {{3, 'w', 'e'}, 12, {DnsErrorKind::truncated_name, 12}},
        {{0xc0}, 12, {DnsErrorKind::truncated_name, 12}},
        {{2, 'a', 'b'}, 12, {DnsErrorKind::truncated_name, 15}},
        {{0x40, 0}, 12, {DnsErrorKind::bad_label_type, 12}},
        {{0x80, 0}, 12, {DnsErrorKind::bad_label_type, 12}},
    };
    for (const Case& c : cases) {
        const Bytes m = concat(header(0), c.tail);
        EXPECT_EQ(read_dns_name(m, c.offset, nullptr, next), c.error)
            << to_string(read_dns_name(m, c.offset, nullptr, next).kind);
    }

    // A chain of pointers, each to the one before: at most kDnsMaxPointerHops jumps.
    Bytes chain = concat(header(0), {0});
    for (std::size_t i = 0; i < 20; ++i) chain.insert(chain.end(), {0xc0, static_cast<std::uint8_t>(i == 0 ? 12 : 13 + 2 * (i - 1))});
    EXPECT_EQ(read_dns_name(chain, 13 + 2 * (kDnsMaxPointerHops - 1), nullptr, next).kind, DnsErrorKind::none);
    EXPECT_EQ(read_dns_name(chain, 13 + 2 * kDnsMaxPointerHops, nullptr, next).kind, DnsErrorKind::too_many_pointers);

    // Labels reached through pointers still add up to at most 255 bytes.
    Bytes long_name = header(0);
    long_name.push_back(63);
    long_name.insert(long_name.end(), 63, 'a');
    long_name.push_back(0);  // 12: a 63-byte label
    std::size_t previous = 12;
    for (int i = 0; i < 4; ++i) {
        const std::size_t here = long_name.size();
        long_name.push_back(63);
        long_name.insert(long_name.end(), 63, 'b');
        long_name.insert(long_name.end(),
                         {static_cast<std::uint8_t>(0xc0 | previous >> 8), static_cast<std::uint8_t>(previous)});
        previous = here;
    }
    EXPECT_EQ(read_dns_name(long_name, previous, nullptr, next).kind, DnsErrorKind::name_too_long);
}

TEST(DnsMessageTest, TruncatedSectionsAreRefusedWhereTheyEnd) {
    const Bytes question = {3, 'w', 'e', 'b', 0, 0, 1, 0, 1};
    const Bytes record = {0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 30, 0, 4, 10, 0, 0, 10};
    struct Case {
        Bytes bytes;
        DnsError error;
    };
    const Case cases[] = {
        {Bytes(11, 0), {DnsErrorKind::truncated_header, 11}},
        {concat(header(1), Bytes(question.begin(), question.end() - 1)), {DnsErrorKind::truncated_question, 17}},
        {concat(header(2), question), {DnsErrorKind::truncated_name, 21}},
        {concat(concat(header(1, 1), question), Bytes(record.begin(), record.end() - 1)),
         {DnsErrorKind::truncated_record, 23}},
        {concat(concat(header(1, 1), question), Bytes(record.begin(), record.begin() + 8)),
         {DnsErrorKind::truncated_record, 23}},
        {concat(concat(header(1, 0, 0, 1), question), record), {DnsErrorKind::none, 0}},
    };
    for (const Case& c : cases) {
        const auto v = DnsMessageView::parse(c.bytes);
        if (c.error.kind == DnsErrorKind::none) {
            EXPECT_TRUE(v);
        } else {
            ASSERT_FALSE(v);
            EXPECT_EQ(v.error(), c.error) << to_string(v.error().kind) << " at " << v.error().offset;
        }
    }
    const Bytes trailing = concat(concat(header(1), question), {1, 2, 3});
    const auto v = DnsMessageView::parse(trailing);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->end_offset(), trailing.size() - 3) << "trailing bytes are not a record";
    EXPECT_FALSE(read_dns_header(Bytes(11, 0)));
    EXPECT_EQ(read_dns_header(trailing)->id, 0x1234);
}

TEST(DnsMessageTest, EdnsIsReadFromTheOptRecord) {
    const Bytes question = {3, 'w', 'e', 'b', 0, 0, 1, 0, 1};
    const Bytes opt = {0, 0, 41, 0x10, 0x00, 0x01, 0x02, 0x80, 0x00, 0, 4, 0, 10, 0, 0};
    auto m = concat(concat(header(1, 0, 0, 1), question), opt);
    auto v = DnsMessageView::parse(m);
    ASSERT_TRUE(v);
    const auto e = v->edns();
    ASSERT_TRUE(e);
    EXPECT_EQ(e->udp_payload_size, 4096);
    EXPECT_EQ(e->extended_rcode, 1);
    EXPECT_EQ(e->version, 2);
    EXPECT_TRUE(e->dnssec_ok);
    EXPECT_EQ(e->options.size(), 4u);
    EXPECT_EQ(v->opt_count(), 1u);
    EXPECT_TRUE(v->opt_name_is_root());

    m = concat(concat(concat(header(1, 0, 0, 2), question), opt), opt);
    EXPECT_EQ(DnsMessageView::parse(m)->opt_count(), 2u);
    Bytes named_opt = opt;
    named_opt[0] = 0xc0;
    named_opt.insert(named_opt.begin() + 1, 12);
    m = concat(concat(header(1, 0, 0, 1), question), named_opt);
    EXPECT_FALSE(DnsMessageView::parse(m)->opt_name_is_root());
    EXPECT_FALSE(DnsMessageView::parse(concat(header(1), question))->edns());
}

TEST(DnsBuilderTest, SectionsInOrderAndEverythingWithinTheBuffer) {
    Bytes out(512);
    DnsHeader h;
    h.id = 7;
    h.response = true;
    const DnsName n = name("web.blue.internal");
    DnsBuilder b(out, h);
    EXPECT_TRUE(b.add_question(n, 1, 1));
    EXPECT_TRUE(b.add_record(DnsSection::additional, DnsNameRef::to(12), 1, 1, 30, Bytes{1, 2, 3, 4}));
    EXPECT_FALSE(b.add_record(DnsSection::answer, DnsNameRef::to(12), 1, 1, 30, Bytes{1, 2, 3, 4}))
        << "answers after the additional section";
    EXPECT_FALSE(b.ok());
    EXPECT_EQ(b.finish(), 0u);

    DnsBuilder refs(out, h);
    refs.add_question(n, 1, 1);
    EXPECT_FALSE(refs.add_record(DnsSection::answer, DnsNameRef{&n, 4, std::nullopt}, 1, 1, 0, {})) << "n has 3 labels";
    DnsBuilder partial(out, h);
    EXPECT_FALSE(partial.add_record(DnsSection::answer, DnsNameRef{&n, 1, std::nullopt}, 1, 1, 0, {}))
        << "some labels and no pointer";
    DnsBuilder far(out, h);
    EXPECT_FALSE(far.add_record(DnsSection::answer, DnsNameRef::to(0x4000), 1, 1, 0, {}));
    DnsBuilder question_section(out, h);
    EXPECT_FALSE(question_section.add_record(DnsSection::question, DnsNameRef::full(n), 1, 1, 0, {}));

    Bytes small(40);
    DnsBuilder tight(small, h);
    EXPECT_TRUE(tight.add_question(n, 1, 1));  // 12 + 19 + 4 = 35
    EXPECT_FALSE(tight.add_record(DnsSection::answer, DnsNameRef::to(12), 1, 1, 30, Bytes{1, 2, 3, 4}));
    EXPECT_EQ(tight.finish(), 0u);
    DnsBuilder none(MutableByteSpan(small).first(11), h);
    EXPECT_FALSE(none.ok());

    DnsBuilder good(out, h);
    good.add_question(n, 28, 1);
    good.add_record(DnsSection::answer, DnsNameRef{&n, 1, std::uint16_t{16}}, 5, 1, 60, Bytes{0xc0, 12});
    good.add_opt({1232, 0, 0, true, {}});
    const std::size_t length = good.finish();
    const auto v = DnsMessageView::parse(ByteSpan(out).first(length));
    ASSERT_TRUE(v);
    EXPECT_EQ(v->header().id, 7);
    EXPECT_EQ(v->header().answer_count, 1);
    EXPECT_EQ(v->header().additional_count, 1);
    const auto r = v->cursor(DnsSection::answer).next_record();
    EXPECT_EQ(r->name.to_string(), "web.blue.internal") << "'web' then a pointer to 'blue.internal' at 16";
    EXPECT_TRUE(v->edns()->dnssec_ok);
}

TEST(DnsTcpTest, TheLengthPrefixFramesMessages) {
    const Bytes stream = {0, 3, 'a', 'b', 'c', 0, 2, 'd', 'e', 0};
    auto m = next_dns_tcp_message(stream);
    ASSERT_EQ(m.status, DnsTcpStatus::complete);
    EXPECT_EQ(Bytes(m.message.begin(), m.message.end()), (Bytes{'a', 'b', 'c'}));
    EXPECT_EQ(m.consumed, 5u);
    m = next_dns_tcp_message(ByteSpan(stream).subspan(5));
    ASSERT_EQ(m.status, DnsTcpStatus::complete);
    EXPECT_EQ(m.consumed, 4u);
    EXPECT_EQ(next_dns_tcp_message(ByteSpan(stream).subspan(9)).status, DnsTcpStatus::incomplete);
    EXPECT_EQ(next_dns_tcp_message(ByteSpan(stream).first(4)).status, DnsTcpStatus::incomplete);
    EXPECT_EQ(next_dns_tcp_message({}).status, DnsTcpStatus::incomplete);
    EXPECT_EQ(next_dns_tcp_message(Bytes{0, 0, 1}).status, DnsTcpStatus::empty);
    Bytes out(5);
    EXPECT_EQ(write_dns_tcp_message(out, Bytes{'a', 'b', 'c'}), 5u);
    EXPECT_EQ(out, (Bytes{0, 3, 'a', 'b', 'c'}));
    EXPECT_EQ(write_dns_tcp_message(out, Bytes{'a', 'b', 'c', 'd'}), 0u);
    Bytes huge(70000);
    EXPECT_EQ(write_dns_tcp_message(huge, Bytes(65536)), 0u);
}

// Property: random messages built, parsed back to the same; random bytes and truncations never
// crash, and whatever parses reads inside the message.
std::string random_label(std::mt19937& rng) {
    std::string s(1 + rng() % 12, 'a');
    for (char& c : s) c = static_cast<char>("abcdefghijklmnopqrstuvwxyzABC019-"[rng() % 33]);
    return s;
}

TEST(DnsPropertyTest, BuiltMessagesParseBack) {
    std::mt19937 rng(53);
    Bytes out(4096);
    for (int round = 0; round < 2000; ++round) {
        DnsHeader h;
        h.id = static_cast<std::uint16_t>(rng());
        h.response = rng() % 2;
        h.opcode = static_cast<std::uint8_t>(rng() % 16);
        h.authoritative = rng() % 2;
        h.recursion_desired = rng() % 2;
        h.checking_disabled = rng() % 2;
        h.rcode = static_cast<std::uint8_t>(rng() % 16);
        std::string text;
        for (std::size_t i = 1 + rng() % 4; i > 0; --i) text += random_label(rng) + (i > 1 ? "." : "");
        const DnsName n = name(text);
        DnsBuilder b(out, h);
        b.add_question(n, static_cast<std::uint16_t>(rng()), 1);
        struct Added {
            DnsSection section;
            std::uint16_t type;
            std::uint32_t ttl;
            Bytes rdata;
        };
        std::vector<Added> added;
        std::size_t section = 1;  // answer; the builder wants the sections in order
        for (std::size_t i = rng() % 6; i > 0; --i) {
            section = std::min<std::size_t>(3, section + (rng() % 3 == 0 ? 1 : 0));
            Added a{static_cast<DnsSection>(section), static_cast<std::uint16_t>(1 + rng() % 40), static_cast<std::uint32_t>(rng()), Bytes(rng() % 20)};
            for (auto& x : a.rdata) x = static_cast<std::uint8_t>(rng());
            const DnsNameRef ref = rng() % 2 ? DnsNameRef::to(12) : DnsNameRef::full(n);
            ASSERT_TRUE(b.add_record(a.section, ref, a.type, 1, a.ttl, a.rdata));
            added.push_back(a);
        }
        const std::size_t length = b.finish();
        ASSERT_GT(length, 0u);
        const auto v = DnsMessageView::parse(ByteSpan(out).first(length));
        ASSERT_TRUE(v) << to_string(v.error().kind);
        DnsHeader expected = h;
        expected.question_count = 1;
        const DnsHeader got = v->header();
        EXPECT_EQ(got.id, expected.id);
        EXPECT_EQ(got.flags(), expected.flags());
        EXPECT_TRUE(v->first_question()->name.equals_ignoring_case(n));
        std::size_t i = 0;
        for (const DnsSection s : {DnsSection::answer, DnsSection::authority, DnsSection::additional}) {
            auto c = v->cursor(s);
            while (const auto r = c.next_record()) {
                ASSERT_LT(i, added.size());
                EXPECT_EQ(added[i].section, s);
                EXPECT_EQ(r->type, added[i].type);
                EXPECT_EQ(r->ttl, added[i].ttl);
                EXPECT_EQ(Bytes(r->rdata.begin(), r->rdata.end()), added[i].rdata);
                EXPECT_TRUE(r->name.equals_ignoring_case(n));
                ++i;
            }
        }
        EXPECT_EQ(i, added.size());
    }
}

void walk(ByteSpan bytes) {
    const auto v = DnsMessageView::parse(bytes);
    if (!v) {
        EXPECT_NE(v.error().kind, DnsErrorKind::none);
        EXPECT_LE(v.error().offset, bytes.size());
        return;
    }
    EXPECT_LE(v->end_offset(), bytes.size());
    auto q = v->cursor(DnsSection::question);
    while (const auto question = q.next_question()) EXPECT_LE(question->name.wire_length(), kDnsMaxNameLength);
    for (const DnsSection s : {DnsSection::answer, DnsSection::authority, DnsSection::additional}) {
        auto c = v->cursor(s);
        while (const auto r = c.next_record()) {
            ASSERT_GE(r->rdata.data(), bytes.data());
            ASSERT_LE(r->rdata.data() + r->rdata.size(), bytes.data() + bytes.size());
            DnsName in_rdata;  // as a CNAME target would be read
            std::size_t next = 0;
            (void)read_dns_name(bytes, r->rdata_offset, &in_rdata, next);
        }
    }
    (void)v->edns();
}

TEST(DnsPropertyTest, RandomBytesAndTruncationsNeverCrash) {
    std::mt19937 rng(54);
    for (int round = 0; round < 20000; ++round) {
        Bytes m = header(static_cast<std::uint16_t>(rng() % 3), static_cast<std::uint16_t>(rng() % 4),
                         static_cast<std::uint16_t>(rng() % 2), static_cast<std::uint16_t>(rng() % 3));
        for (std::size_t i = rng() % 200; i > 0; --i) {
            const unsigned kind = rng() % 8;  // lean on what names and records are made of
            m.push_back(static_cast<std::uint8_t>(kind == 0 ? 0xc0 | rng() % 2 : kind < 3 ? rng() % 64 : kind == 3 ? 0 : rng()));
        }
        walk(m);
        walk(ByteSpan(m).first(rng() % (m.size() + 1)));
    }
}

}  // namespace
}  // namespace andromeda::wire
