// The DNS forwarder's rules: VPC names answered locally, FORMERR & co., forwarding with fresh IDs,
// matching answers, truncation, the bound on queries in flight, timeouts and retries, TCP.
#include <gtest/gtest.h>

#include <set>

#include "unit/gateway/dhcp_dns_world.hpp"
#include "wire/ethernet.hpp"
#include "wire/ipv4.hpp"
#include "wire/udp.hpp"

namespace andromeda::gateway {
namespace {

using namespace testing;
namespace rcode = wire::dns_rcode;

const wire::Ipv4Address kVm = ipv4("10.0.0.10");
const wire::Ipv4Address kGw = ipv4("10.0.0.1");

UdpFrameSpec dns_to_gateway() {
    UdpFrameSpec s;
    s.src = kVm;
    s.dst = kGw;
    s.dst_mac = vpc_gateway().mac;
    s.src_port = 33333;
    s.dst_port = 53;
    return s;
}

struct Reply {
    Bytes message;
    wire::DnsHeader header;
    std::optional<wire::DnsMessageView> view;
};

Reply decode_message(Bytes message) {
    Reply r;
    r.message = std::move(message);
    const auto view = wire::DnsMessageView::parse(r.message);
    EXPECT_TRUE(view) << to_string(view.error().kind);
    if (!view) return r;
    r.header = view->header();
    r.view = *view;
    return r;
}

// A reply frame to the VM, from the gateway's 53 to the query's port, checksums right.
Reply decode_frame(const Bytes& frame, std::uint16_t port = 33333) {
    const auto eth = wire::EthernetView::parse(frame);
    EXPECT_TRUE(eth);
    EXPECT_EQ(eth->destination(), mac("02:00:00:00:00:0a"));
    EXPECT_EQ(eth->source(), vpc_gateway().mac);
    const auto ip = wire::Ipv4View::parse(eth->payload());
    EXPECT_TRUE(ip && ip->checksum_valid());
    EXPECT_EQ(ip->source(), kGw);
    EXPECT_EQ(ip->destination(), kVm);
    const auto udp = wire::UdpView::parse(ip->payload());
    EXPECT_TRUE(udp && udp->checksum_valid(ip->source(), ip->destination()));
    EXPECT_EQ(udp->source_port(), 53);
    EXPECT_EQ(udp->destination_port(), port);
    return decode_message(Bytes(udp->payload().begin(), udp->payload().end()));
}

// An upstream's answer to `query` (as the forwarder sent it): the question, then `answers` A
// records of `address`, padded with `filler` TXT bytes when asked to be long.
Bytes upstream_answer(const Bytes& query, std::size_t answers = 1, std::size_t filler = 0) {
    Bytes m(query);
    m.resize(12 + (wire::DnsMessageView::parse(query)->section_offset(wire::DnsSection::answer) - 12));
    test_support::put16(&m[2], 0x8180);  // QR RD RA
    test_support::put16(&m[6], static_cast<std::uint16_t>(answers + (filler ? 1 : 0)));
    test_support::put16(&m[10], 0);
    for (std::size_t i = 0; i < answers; ++i) {
        const Bytes rr{0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, static_cast<std::uint8_t>(i + 1)};
        m.insert(m.end(), rr.begin(), rr.end());
    }
    if (filler) {
        const Bytes rr{0xc0, 0x0c, 0, 16, 0, 1, 0, 0, 0, 60, static_cast<std::uint8_t>((filler + 1) >> 8),
                       static_cast<std::uint8_t>(filler + 1), static_cast<std::uint8_t>(std::min<std::size_t>(filler, 255))};
        m.insert(m.end(), rr.begin(), rr.end());
        m.insert(m.end(), filler, 'x');
    }
    return m;
}

class DnsForwarderTest : public ::testing::Test {
protected:
    DnsForwarderConfig config(std::size_t upstreams = 2) {
        DnsForwarderConfig c;
        for (std::size_t i = 0; i < upstreams; ++i)
            c.upstreams.push_back({ipv4("192.0.2.53") , static_cast<std::uint16_t>(53 + i)});
        c.max_in_flight = 4;
        c.timeout_ns = kSecond;
        c.attempts = 3;
        c.seed = 1234;
        return c;
    }
    DnsAction query(DnsForwarder& f, const DnsQuery& q, const UdpFrameSpec& spec = dns_to_gateway()) {
        out_.assign(4096, 0xa5);
        const DnsAction a = f.handle_udp_query(udp_frame(spec, q.bytes()), vpc_, now_, out_);
        out_.resize(a.length);
        return a;
    }
    Reply local(const DnsQuery& q, DnsOutcome expected) {
        const DnsAction a = query(forwarder_, q);
        EXPECT_EQ(a.kind, DnsActionKind::reply_udp) << to_string(a.outcome);
        EXPECT_EQ(a.outcome, expected) << to_string(a.outcome);
        return decode_frame(out_);
    }
    DnsAction answer(DnsForwarder& f, const Bytes& message, std::size_t upstream) {
        out_.assign(4096, 0xa5);
        const DnsAction a = f.handle_upstream_answer(message, upstream, out_);
        out_.resize(a.length);
        return a;
    }

    DnsZone zone_ = blue_zone();
    DnsVpc vpc_{vpc_gateway(), &zone_, 1450};
    DnsForwarder forwarder_{config()};
    std::uint64_t now_ = 10 * kSecond;
    Bytes out_;
};

TEST_F(DnsForwarderTest, AVpcNameIsAnsweredWithItsAddress) {
    const Reply r = local(DnsQuery{}, DnsOutcome::answered);
    EXPECT_EQ(r.header.id, 0x4242);
    EXPECT_TRUE(r.header.response);
    EXPECT_TRUE(r.header.authoritative);
    EXPECT_TRUE(r.header.recursion_desired);
    EXPECT_TRUE(r.header.recursion_available);
    EXPECT_EQ(r.header.rcode, rcode::kNoError);
    EXPECT_EQ(r.header.question_count, 1);
    ASSERT_EQ(r.header.answer_count, 1);
    const auto record = r.view->cursor(wire::DnsSection::answer).next_record();
    EXPECT_EQ(record->name.to_string(), "web.blue.internal");
    EXPECT_EQ(record->type, wire::dns_type::kA);
    EXPECT_EQ(record->ttl, 30u);
    EXPECT_EQ(wire::Ipv4Address::from_bytes(record->rdata.data()), kVm);
    EXPECT_EQ(r.message[r.view->section_offset(wire::DnsSection::answer)], 0xc0) << "the owner name is a pointer";
    EXPECT_EQ(forwarder_.counters().answered_locally, 1u);
    EXPECT_EQ(forwarder_.counters().forwarded, 0u);
}

TEST_F(DnsForwarderTest, AaaaAndAnyAnswerWhatTheEndpointHas) {
    DnsQuery aaaa;
    aaaa.type = wire::dns_type::kAaaa;
    Reply r = local(aaaa, DnsOutcome::answered);
    ASSERT_EQ(r.header.answer_count, 1);
    EXPECT_EQ(wire::Ipv6Address::from_bytes(r.view->cursor(wire::DnsSection::answer).next_record()->rdata.data()),
              ipv6("fd00::a"));
    DnsQuery any;
    any.type = wire::dns_type::kAny;
    EXPECT_EQ(local(any, DnsOutcome::answered).header.answer_count, 2);
    DnsQuery db_aaaa = aaaa;  // db has no IPv6 address: the name exists, the record does not
    db_aaaa.name = "db.blue.internal";
    r = local(db_aaaa, DnsOutcome::nodata);
    EXPECT_EQ(r.header.rcode, rcode::kNoError);
    EXPECT_EQ(r.header.answer_count, 0);
}

TEST_F(DnsForwarderTest, NamesAreMatchedWithoutRegardToCaseAndTheQuestionIsEchoedAsAsked) {
    DnsQuery q;
    q.name = "WeB.BLUE.internal";
    const Reply r = local(q, DnsOutcome::answered);
    EXPECT_EQ(r.view->first_question()->name.to_string(), "WeB.BLUE.internal");
    EXPECT_EQ(r.view->cursor(wire::DnsSection::answer).next_record()->name.to_string(), "WeB.BLUE.internal");
}

TEST_F(DnsForwarderTest, UnknownNamesUnderTheZoneAreNxdomainAndTheApexIsNodata) {
    for (const char* name : {"nope.blue.internal", "x.web.blue.internal", "we\\b.blue.internal"}) {
        SCOPED_TRACE(name);
        DnsQuery q;
        q.name = name;
        const Reply r = local(q, DnsOutcome::nxdomain);
        EXPECT_EQ(r.header.rcode, rcode::kNxDomain);
        EXPECT_TRUE(r.header.authoritative);
        EXPECT_EQ(r.header.answer_count + r.header.authority_count, 0) << "no SOA: not cached";
    }
    DnsQuery apex;
    apex.name = "blue.internal";
    EXPECT_EQ(local(apex, DnsOutcome::nodata).header.rcode, rcode::kNoError);
    DnsQuery mx;
    mx.type = wire::dns_type::kMx;
    EXPECT_EQ(local(mx, DnsOutcome::nodata).header.answer_count, 0);
    EXPECT_EQ(forwarder_.counters().nxdomain, 3u);
    EXPECT_EQ(forwarder_.counters().answered_locally, 5u);
}

TEST_F(DnsForwarderTest, OtherClassesUnderTheZoneAreRefused) {
    DnsQuery chaos;
    chaos.klass = wire::dns_class::kChaos;
    const Reply r = local(chaos, DnsOutcome::refused);
    EXPECT_EQ(r.header.rcode, rcode::kRefused);
    EXPECT_FALSE(r.header.authoritative);
}

TEST_F(DnsForwarderTest, EdnsIsAnsweredWithOurSizeAndAnUnknownVersionWithBadvers) {
    DnsQuery q;
    q.edns_size = 4096;
    Reply r = local(q, DnsOutcome::answered);
    auto edns = r.view->edns();
    ASSERT_TRUE(edns);
    EXPECT_EQ(edns->udp_payload_size, 1232);
    EXPECT_EQ(edns->version, 0);
    q.edns_version = 1;
    r = local(q, DnsOutcome::badvers);
    edns = r.view->edns();
    ASSERT_TRUE(edns);
    EXPECT_EQ((edns->extended_rcode << 4) | r.header.rcode, 16) << "BADVERS";
    EXPECT_EQ(r.header.answer_count, 0);
}

TEST_F(DnsForwarderTest, MalformedQueriesGetFormerrAndUnreadableOnesNothing) {
    DnsQuery none;
    none.no_question = true;
    Reply r = local(none, DnsOutcome::formerr);
    EXPECT_EQ(r.header.rcode, rcode::kFormErr);
    EXPECT_EQ(r.header.id, 0x4242);
    EXPECT_EQ(r.header.question_count, 0);

    Bytes two_questions = DnsQuery{}.bytes();
    two_questions[5] = 2;  // QDCOUNT 2, one question present: the second does not parse
    out_.assign(4096, 0);
    EXPECT_EQ(forwarder_.handle_udp_query(udp_frame(dns_to_gateway(), two_questions), vpc_, now_, out_).outcome,
              DnsOutcome::formerr);
    Bytes two_opts = DnsQuery{.edns_size = 512}.bytes();
    two_opts.insert(two_opts.end(), two_opts.end() - 11, two_opts.end());
    two_opts[11] = 2;
    EXPECT_EQ(forwarder_.handle_udp_query(udp_frame(dns_to_gateway(), two_opts), vpc_, now_, out_).outcome,
              DnsOutcome::formerr);
    DnsQuery opt_question;
    opt_question.type = wire::dns_type::kOpt;
    EXPECT_EQ(query(forwarder_, opt_question).outcome, DnsOutcome::formerr);

    DnsQuery update;
    update.flags = 5 << 11;  // opcode UPDATE
    r = decode_frame(query(forwarder_, update).kind == DnsActionKind::reply_udp ? out_ : Bytes{});
    EXPECT_EQ(r.header.rcode, rcode::kNotImp);
    EXPECT_EQ(r.header.opcode, 5);

    out_.assign(4096, 0);
    EXPECT_EQ(forwarder_.handle_udp_query(udp_frame(dns_to_gateway(), Bytes(11, 0)), vpc_, now_, out_).outcome,
              DnsOutcome::dropped);
    DnsQuery response;
    response.flags = 0x8180;
    EXPECT_EQ(query(forwarder_, response).kind, DnsActionKind::none) << "an answer is never answered";
    EXPECT_EQ(forwarder_.counters().formerr, 4u);
    EXPECT_EQ(forwarder_.counters().notimp, 1u);
    EXPECT_EQ(forwarder_.counters().dropped, 2u);
}

TEST_F(DnsForwarderTest, WhatIsNotAQueryToTheGatewayIsNotDns) {
    UdpFrameSpec other_port = dns_to_gateway();
    other_port.dst_port = 5353;
    EXPECT_EQ(query(forwarder_, DnsQuery{}, other_port).outcome, DnsOutcome::not_dns);
    UdpFrameSpec other_address = dns_to_gateway();
    other_address.dst = ipv4("10.0.0.2");
    EXPECT_EQ(query(forwarder_, DnsQuery{}, other_address).outcome, DnsOutcome::not_dns);
    Bytes corrupt = udp_frame(dns_to_gateway(), DnsQuery{}.bytes());
    corrupt.back() ^= 1;
    out_.assign(4096, 0);
    EXPECT_EQ(forwarder_.handle_udp_query(corrupt, vpc_, now_, out_).outcome, DnsOutcome::dropped);
    EXPECT_EQ(forwarder_.counters().queries, 1u);
}

TEST_F(DnsForwarderTest, OtherNamesAreForwardedWithAFreshIdAndComeBackWithTheirOwn) {
    DnsQuery q;
    q.name = "www.example.com";
    const Bytes asked = q.bytes();
    const DnsAction f = query(forwarder_, q);
    ASSERT_EQ(f.kind, DnsActionKind::forward) << to_string(f.outcome);
    EXPECT_EQ(f.upstream, 0u);
    EXPECT_FALSE(f.over_tcp);
    const Bytes sent = out_;
    ASSERT_EQ(sent.size(), asked.size());
    EXPECT_TRUE(std::equal(sent.begin() + 2, sent.end(), asked.begin() + 2));
    EXPECT_NE(wire::load_be16(sent.data()), 0x4242);
    EXPECT_EQ(forwarder_.in_flight(), 1u);
    EXPECT_EQ(forwarder_.next_deadline(), now_ + kSecond);

    const DnsAction back = answer(forwarder_, upstream_answer(sent), 0);
    ASSERT_EQ(back.kind, DnsActionKind::reply_udp) << to_string(back.outcome);
    EXPECT_EQ(back.outcome, DnsOutcome::returned);
    const Reply r = decode_frame(out_);
    EXPECT_EQ(r.header.id, 0x4242);
    EXPECT_EQ(r.header.answer_count, 1);
    EXPECT_EQ(forwarder_.in_flight(), 0u);
    EXPECT_EQ(forwarder_.next_deadline(), 0u);
    EXPECT_EQ(forwarder_.counters().forwarded, 1u);
    EXPECT_EQ(forwarder_.counters().answers_returned, 1u);
    // The same answer again matches nothing: the query is done.
    EXPECT_EQ(answer(forwarder_, upstream_answer(sent), 0).outcome, DnsOutcome::unmatched);
}

TEST_F(DnsForwarderTest, InternalNamesOfOtherVpcsAndNoZoneAreForwarded) {
    DnsQuery q;
    q.name = "metadata.google.internal";
    EXPECT_EQ(query(forwarder_, q).outcome, DnsOutcome::forwarded);
    DnsVpc no_names{vpc_gateway(), nullptr, 1450};
    out_.assign(4096, 0);
    EXPECT_EQ(forwarder_.handle_udp_query(udp_frame(dns_to_gateway(), DnsQuery{}.bytes()), no_names, now_, out_).outcome,
              DnsOutcome::forwarded);
}

TEST_F(DnsForwarderTest, IdsInFlightAreDistinctAndUnpredictableFromTheClients) {
    DnsForwarderConfig c = config();
    c.max_in_flight = 1000;
    DnsForwarder f(c);
    std::set<std::uint16_t> ids;
    DnsQuery q;
    q.name = "www.example.com";
    for (int i = 0; i < 1000; ++i) {
        q.id = static_cast<std::uint16_t>(i);  // the clients' IDs are sequential; the upstream's are not
        ASSERT_EQ(query(f, q).kind, DnsActionKind::forward);
        ids.insert(wire::load_be16(out_.data()));
    }
    EXPECT_EQ(ids.size(), 1000u);
    EXPECT_GT(*ids.rbegin() - *ids.begin(), 30000) << "spread over the ID space";
}

TEST_F(DnsForwarderTest, SpoofedAndUnmatchedAnswersAreRejectedAndTheQueryStaysPending) {
    DnsQuery q;
    q.name = "www.example.com";
    query(forwarder_, q);
    const Bytes sent = out_;
    Bytes wrong_id = upstream_answer(sent);
    wrong_id[1] ^= 0x01;
    EXPECT_EQ(answer(forwarder_, wrong_id, 0).outcome, DnsOutcome::unmatched);
    EXPECT_EQ(answer(forwarder_, upstream_answer(sent), 1).outcome, DnsOutcome::unmatched) << "not asked of upstream 1";
    EXPECT_EQ(answer(forwarder_, upstream_answer(sent), 77).outcome, DnsOutcome::unmatched);
    DnsQuery other = q;
    other.name = "www.example.org";
    Bytes wrong_question = other.bytes();
    std::copy(sent.begin(), sent.begin() + 2, wrong_question.begin());
    EXPECT_EQ(answer(forwarder_, upstream_answer(wrong_question), 0).outcome, DnsOutcome::unmatched);
    Bytes not_a_response = sent;
    EXPECT_EQ(answer(forwarder_, not_a_response, 0).outcome, DnsOutcome::malformed_answer);
    Bytes broken = upstream_answer(sent);
    broken.resize(broken.size() - 3);
    EXPECT_EQ(answer(forwarder_, broken, 0).outcome, DnsOutcome::malformed_answer);
    EXPECT_EQ(forwarder_.in_flight(), 1u);
    Bytes upper = upstream_answer(sent);  // the question in another case still matches (RFC 4343)
    upper[13] = 'W';
    EXPECT_EQ(answer(forwarder_, upper, 0).outcome, DnsOutcome::returned);
    EXPECT_EQ(forwarder_.counters().unmatched, 4u);
    EXPECT_EQ(forwarder_.counters().malformed_answers, 2u);
}

TEST_F(DnsForwarderTest, AnAnswerTooLongForTheTenantIsTruncatedToTheQuestion) {
    DnsQuery q;
    q.name = "big.example.com";
    query(forwarder_, q);
    const DnsAction a = answer(forwarder_, upstream_answer(out_, 1, 600), 0);  // over 512, no EDNS
    EXPECT_EQ(a.outcome, DnsOutcome::truncated);
    const Reply r = decode_frame(out_);
    EXPECT_TRUE(r.header.truncated);
    EXPECT_EQ(r.header.id, 0x4242);
    EXPECT_EQ(r.header.question_count, 1);
    EXPECT_EQ(r.header.answer_count, 0);
    EXPECT_EQ(r.view->first_question()->name.to_string(), "big.example.com");

    q.edns_size = 4096;  // the tenant takes 4096, its MTU (1450) does not
    query(forwarder_, q);
    EXPECT_EQ(answer(forwarder_, upstream_answer(out_, 1, 1300), 0).outcome, DnsOutcome::returned);
    query(forwarder_, q);
    EXPECT_EQ(answer(forwarder_, upstream_answer(out_, 1, 1500), 0).outcome, DnsOutcome::truncated);
    EXPECT_EQ(forwarder_.counters().truncated, 2u);
}

TEST_F(DnsForwarderTest, AFullTableAnswersServfailAtOnce) {
    DnsQuery q;
    q.name = "www.example.com";
    std::vector<Bytes> sent;
    for (int i = 0; i < 4; ++i) {
        ASSERT_EQ(query(forwarder_, q).outcome, DnsOutcome::forwarded);
        sent.push_back(out_);
    }
    const DnsAction full = query(forwarder_, q);
    EXPECT_EQ(full.outcome, DnsOutcome::servfail_full);
    const Reply r = decode_frame(out_);
    EXPECT_EQ(r.header.rcode, rcode::kServFail);
    EXPECT_EQ(r.header.id, 0x4242);
    EXPECT_EQ(forwarder_.counters().full, 1u);
    EXPECT_EQ(forwarder_.counters().failures, 1u);
    ASSERT_EQ(answer(forwarder_, upstream_answer(sent[2]), 0).outcome, DnsOutcome::returned);
    EXPECT_EQ(query(forwarder_, q).outcome, DnsOutcome::forwarded) << "an answered query frees its place";
}

TEST_F(DnsForwarderTest, ATimeoutIsRetriedOnTheNextUpstreamThenServfail) {
    DnsQuery q;
    q.name = "slow.example.com";
    query(forwarder_, q);
    const std::uint16_t id = wire::load_be16(out_.data());
    EXPECT_EQ(forwarder_.poll_timeouts(now_ + kSecond - 1, out_).outcome, DnsOutcome::idle);
    out_.assign(4096, 0);
    DnsAction a = forwarder_.poll_timeouts(now_ + kSecond, out_);
    ASSERT_EQ(a.kind, DnsActionKind::forward);
    EXPECT_EQ(a.outcome, DnsOutcome::retried);
    EXPECT_EQ(a.upstream, 1u);
    EXPECT_EQ(wire::load_be16(out_.data()), id);
    EXPECT_EQ(forwarder_.next_deadline(), now_ + 2 * kSecond);
    // New queries now go to upstream 1 first: upstream 0 just failed one.
    DnsQuery other;
    other.name = "other.example.com";
    now_ += kSecond;
    EXPECT_EQ(query(forwarder_, other).upstream, 1u);
    EXPECT_EQ(answer(forwarder_, upstream_answer(out_), 1).outcome, DnsOutcome::returned);
    now_ -= kSecond;

    out_.assign(4096, 0);
    a = forwarder_.poll_timeouts(now_ + 2 * kSecond, out_);
    EXPECT_EQ(a.outcome, DnsOutcome::retried);
    EXPECT_EQ(a.upstream, 0u) << "round the upstreams";
    out_.assign(4096, 0);
    a = forwarder_.poll_timeouts(now_ + 3 * kSecond, out_);
    ASSERT_EQ(a.kind, DnsActionKind::reply_udp);
    EXPECT_EQ(a.outcome, DnsOutcome::servfail_timeout) << "three attempts";
    out_.resize(a.length);
    const Reply r = decode_frame(out_);
    EXPECT_EQ(r.header.rcode, rcode::kServFail);
    EXPECT_EQ(r.header.id, 0x4242);
    EXPECT_TRUE(r.header.recursion_desired);
    EXPECT_EQ(r.view->first_question()->name.to_string(), "slow.example.com");
    EXPECT_EQ(forwarder_.counters().timeouts, 3u);
    EXPECT_EQ(forwarder_.counters().retries, 2u);
    EXPECT_EQ(forwarder_.counters().failures, 1u);
    EXPECT_EQ(forwarder_.in_flight(), 0u);
}

TEST_F(DnsForwarderTest, ALateAnswerFromAnEarlierUpstreamIsStillTaken) {
    DnsQuery q;
    q.name = "late.example.com";
    query(forwarder_, q);
    const Bytes sent = out_;
    out_.assign(4096, 0);
    ASSERT_EQ(forwarder_.poll_timeouts(now_ + kSecond, out_).outcome, DnsOutcome::retried);
    EXPECT_EQ(answer(forwarder_, upstream_answer(sent), 0).outcome, DnsOutcome::returned);
    EXPECT_EQ(forwarder_.next_deadline(), 0u);
}

TEST_F(DnsForwarderTest, WithoutUpstreamsEveryOtherNameIsServfail) {
    DnsForwarder lonely(config(0));
    DnsQuery q;
    q.name = "www.example.com";
    EXPECT_EQ(query(lonely, q).outcome, DnsOutcome::servfail_no_upstream);
    EXPECT_EQ(decode_frame(out_).header.rcode, rcode::kServFail);
    EXPECT_EQ(query(lonely, DnsQuery{}).outcome, DnsOutcome::answered) << "VPC names need no upstream";
}

TEST_F(DnsForwarderTest, TcpQueriesAreAnsweredFramedAndForwardedOverTcp) {
    Bytes out(70000);
    DnsAction a = forwarder_.handle_tcp_query(DnsQuery{}.bytes(), vpc_, 9, now_, out);
    ASSERT_EQ(a.kind, DnsActionKind::reply_tcp);
    EXPECT_EQ(a.connection, 9u);
    const auto framed = wire::next_dns_tcp_message(wire::ByteSpan(out).first(a.length));
    ASSERT_EQ(framed.status, wire::DnsTcpStatus::complete);
    EXPECT_EQ(framed.consumed, a.length);
    EXPECT_EQ(decode_message(Bytes(framed.message.begin(), framed.message.end())).header.answer_count, 1);

    DnsQuery q;
    q.name = "big.example.com";
    a = forwarder_.handle_tcp_query(q.bytes(), vpc_, 9, now_, out);
    ASSERT_EQ(a.kind, DnsActionKind::forward);
    EXPECT_TRUE(a.over_tcp);
    const Bytes long_answer = upstream_answer(Bytes(out.begin(), out.begin() + static_cast<long>(a.length)), 1, 3000);
    a = forwarder_.handle_upstream_answer(long_answer, 0, out);
    ASSERT_EQ(a.kind, DnsActionKind::reply_tcp);
    EXPECT_EQ(a.outcome, DnsOutcome::returned) << "TCP takes it whole";
    EXPECT_EQ(a.length, long_answer.size() + 2);
    EXPECT_EQ(wire::load_be16(&out[2]), 0x4242);
}

TEST_F(DnsForwarderTest, ClosingATcpConnectionForgetsItsQueries) {
    Bytes out(4096);
    DnsQuery q;
    q.name = "www.example.com";
    forwarder_.handle_tcp_query(q.bytes(), vpc_, 5, now_, out);
    forwarder_.handle_tcp_query(q.bytes(), vpc_, 6, now_, out);
    const Bytes sent_on_6(out.begin(), out.begin() + static_cast<long>(q.bytes().size()));
    query(forwarder_, q);
    EXPECT_EQ(forwarder_.in_flight(), 3u);
    forwarder_.cancel_connection(5);
    EXPECT_EQ(forwarder_.in_flight(), 2u);
    EXPECT_EQ(answer(forwarder_, upstream_answer(sent_on_6), 0).outcome, DnsOutcome::returned);
    EXPECT_EQ(forwarder_.in_flight(), 1u);
}

TEST_F(DnsForwarderTest, AQueryTooLongToKeepIsRefused) {
    DnsQuery q;
    q.name = "www.example.com";
    Bytes long_query = q.bytes();
    long_query.resize(kMaxForwardedQuery + 1, 0);  // trailing bytes after the question
    Bytes out(4096);
    const DnsAction a = forwarder_.handle_tcp_query(long_query, vpc_, 1, now_, out);
    EXPECT_EQ(a.outcome, DnsOutcome::refused);
    EXPECT_EQ(forwarder_.in_flight(), 0u);
}

TEST_F(DnsForwarderTest, ASmallBufferIsNoRoomNotAnOverflow) {
    for (const std::size_t size : {std::size_t{0}, std::size_t{42}, std::size_t{60}}) {
        Bytes small(size);
        EXPECT_EQ(forwarder_.handle_udp_query(udp_frame(dns_to_gateway(), DnsQuery{}.bytes()), vpc_, now_, small).outcome,
                  DnsOutcome::no_room)
            << size;
    }
}

TEST(DnsZoneTest, NamesMustBeHostnameLabelsAndUnique) {
    std::string error;
    EXPECT_FALSE(DnsZone::for_vpc("blue_vpc", error));
    EXPECT_NE(error.find("blue_vpc"), std::string::npos);
    EXPECT_FALSE(DnsZone::for_vpc("", error));
    DnsZone zone = *DnsZone::for_vpc("Blue", error);
    EXPECT_EQ(zone.apex_text(), "blue.internal");
    EXPECT_TRUE(zone.add("web-1", {ipv4("10.0.0.10"), std::nullopt}, error));
    EXPECT_FALSE(zone.add("WEB-1", {ipv4("10.0.0.11"), std::nullopt}, error));
    EXPECT_NE(error.find("twice"), std::string::npos);
    for (const char* bad : {"-web", "web-", "we.b", "we b", ""}) EXPECT_FALSE(zone.add(bad, {ipv4("10.0.0.12"), std::nullopt}, error)) << bad;
    EXPECT_FALSE(zone.add(std::string(64, 'a'), {ipv4("10.0.0.12"), std::nullopt}, error));
    EXPECT_FALSE(zone.add("nothing", {}, error));
    EXPECT_EQ(zone.size(), 1u);
    const std::string upper = "WeB-1";
    EXPECT_NE(zone.find(wire::ByteSpan(reinterpret_cast<const std::uint8_t*>(upper.data()), upper.size())), nullptr);
    EXPECT_EQ(zone.find({}), nullptr);
}

}  // namespace
}  // namespace andromeda::gateway
