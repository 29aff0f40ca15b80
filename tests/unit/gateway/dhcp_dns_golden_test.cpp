// Golden DHCP and DNS frames written by scapy (tests/data/gateway/make_golden.py): every message is
// decoded by the wire views and checked against what scapy put on the wire, then built again by
// the builders byte for byte; and every request's reply from the DHCP server or the DNS forwarder
// must be scapy's reply, byte for byte, checksums included.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "unit/gateway/dhcp_dns_world.hpp"
#include "wire/dhcp.hpp"
#include "wire/dns.hpp"
#include "wire/ethernet.hpp"
#include "wire/ipv4.hpp"
#include "wire/tcp.hpp"
#include "wire/udp.hpp"

namespace andromeda::gateway {
namespace {

using nlohmann::json;
using namespace testing;

json manifest() {
    std::ifstream in(kGoldenDir + "manifest.json");
    EXPECT_TRUE(in) << "missing " << kGoldenDir << "manifest.json";
    return json::parse(in);
}

std::vector<json> frames_of(const std::string& kind) {
    std::vector<json> out;
    const json all = manifest();
    for (const json& f : all.at("frames"))
        if (f.value("kind", "") == kind) out.push_back(f);
    return out;
}

wire::Ipv4Address ip4(const json& j) { return ipv4(j.get<std::string>()); }
std::string hex(wire::ByteSpan b) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    for (const std::uint8_t c : b) {
        s += digits[c >> 4];
        s += digits[c & 15];
    }
    return s;
}

// The DHCP message of a frame: UDP payload, found through the views (tested elsewhere).
wire::ByteSpan udp_payload(const Bytes& frame) {
    const auto ip = wire::Ipv4View::parse(wire::EthernetView::parse(frame)->payload());
    return wire::UdpView::parse(ip->payload())->payload();
}

wire::ByteSpan tcp_payload(const Bytes& frame) {
    const auto ip = wire::Ipv4View::parse(wire::EthernetView::parse(frame)->payload());
    return wire::TcpView::parse(ip->payload())->payload();
}

TEST(DhcpGoldenTest, EveryMessageDecodesAsScapyWroteIt) {
    const auto frames = frames_of("dhcp");
    ASSERT_EQ(frames.size(), 14u);
    for (const json& f : frames) {
        SCOPED_TRACE(f.at("name").get<std::string>());
        const Bytes frame = golden(f.at("name"));
        const wire::ByteSpan message = udp_payload(frame);
        const json& d = f.at("dhcp");
        ASSERT_EQ(message.size(), d.at("length"));
        const auto dhcp = wire::DhcpView::parse(message);
        ASSERT_TRUE(dhcp) << to_string(dhcp.error().kind) << " at " << dhcp.error().offset;
        EXPECT_EQ(dhcp->op(), d.at("op"));
        EXPECT_EQ(dhcp->hardware_type(), d.at("htype"));
        EXPECT_EQ(dhcp->hardware_length(), d.at("hlen"));
        EXPECT_EQ(dhcp->hops(), d.at("hops"));
        EXPECT_EQ(dhcp->xid(), d.at("xid"));
        EXPECT_EQ(dhcp->secs(), d.at("secs"));
        EXPECT_EQ(dhcp->flags(), d.at("flags"));
        EXPECT_EQ(dhcp->broadcast(), d.at("flags").get<int>() == 0x8000);
        EXPECT_EQ(dhcp->ciaddr(), ip4(d.at("ciaddr")));
        EXPECT_EQ(dhcp->yiaddr(), ip4(d.at("yiaddr")));
        EXPECT_EQ(dhcp->siaddr(), ip4(d.at("siaddr")));
        EXPECT_EQ(dhcp->giaddr(), ip4(d.at("giaddr")));
        EXPECT_EQ(hex(dhcp->chaddr()), d.at("chaddr"));
        EXPECT_EQ(dhcp->client_mac(), mac("02:00:00:00:00:0a"));
        EXPECT_EQ(hex(dhcp->sname()), d.at("sname"));
        EXPECT_EQ(hex(dhcp->file()), d.at("file"));
        auto cursor = dhcp->options();
        for (const json& o : d.at("options")) {
            const auto option = cursor.next();
            ASSERT_TRUE(option) << "missing option " << o.at("code");
            EXPECT_EQ(option->code, o.at("code"));
            EXPECT_EQ(hex(option->value), o.at("value")) << "option " << int{option->code};
        }
        EXPECT_FALSE(cursor.next()) << "an option scapy did not write";
    }
}

TEST(DhcpGoldenTest, EveryMessageIsBuiltAgainByteForByte) {
    const auto frames = frames_of("dhcp");
    ASSERT_EQ(frames.size(), 14u);
    for (const json& f : frames) {
        SCOPED_TRACE(f.at("name").get<std::string>());
        const Bytes frame = golden(f.at("name"));
        const wire::ByteSpan message = udp_payload(frame);
        const json& d = f.at("dhcp");
        const Bytes sname = from_hex(d.at("sname")), file = from_hex(d.at("file"));
        wire::DhcpFixedFields fields;
        fields.op = d.at("op");
        fields.hardware_type = d.at("htype");
        fields.hardware_length = d.at("hlen");
        fields.hops = d.at("hops");
        fields.xid = d.at("xid");
        fields.secs = d.at("secs");
        fields.flags = d.at("flags");
        fields.ciaddr = ip4(d.at("ciaddr"));
        fields.yiaddr = ip4(d.at("yiaddr"));
        fields.siaddr = ip4(d.at("siaddr"));
        fields.giaddr = ip4(d.at("giaddr"));
        const Bytes chaddr = from_hex(d.at("chaddr"));
        std::copy(chaddr.begin(), chaddr.end(), fields.chaddr.begin());
        fields.sname = sname;  // an overloaded field's options travel as its bytes
        fields.file = file;
        Bytes out(1500, 0xa5);
        wire::DhcpBuilder b(out, fields);
        for (const json& o : d.at("options"))
            if (o.at("area") == "options") {
                EXPECT_TRUE(b.add(o.at("code"), from_hex(o.at("value"))));
            }
        const std::size_t length = b.finish(message.size());
        out.resize(length);
        EXPECT_EQ(hex(out), hex(message));
    }
}

TEST(DhcpGoldenTest, TheServerAnswersEveryRequestWithScapysReply) {
    std::size_t checked = 0;
    for (const json& f : frames_of("dhcp")) {
        if (!f.contains("expect")) continue;
        SCOPED_TRACE(f.at("name").get<std::string>());
        DhcpServer server;  // a fresh one each time: no request is rate-limited by another
        Bytes out(kDhcpReplyFrameRoom, 0xa5);
        const DhcpReply reply = server.handle(golden(f.at("name")), endpoint(), 10 * kSecond, out);
        const json& expect = f.at("expect");
        if (expect.contains("reply")) {
            ASSERT_TRUE(reply.replied()) << to_string(reply.outcome);
            out.resize(reply.length);
            EXPECT_EQ(hex(out), hex(golden(expect.at("reply"))));
        } else {
            EXPECT_FALSE(reply.replied());
            EXPECT_EQ(to_string(reply.outcome), expect.at("outcome").get<std::string>());
        }
        ++checked;
    }
    EXPECT_EQ(checked, 8u);
}

void expect_dns_message(wire::ByteSpan message, const json& d) {
    const auto view = wire::DnsMessageView::parse(message);
    ASSERT_TRUE(view) << to_string(view.error().kind) << " at " << view.error().offset;
    ASSERT_EQ(message.size(), d.at("length"));
    const json& h = d.at("header");
    const wire::DnsHeader header = view->header();
    EXPECT_EQ(header.id, h.at("id"));
    EXPECT_EQ(header.response, h.at("qr") == 1);
    EXPECT_EQ(header.opcode, h.at("opcode"));
    EXPECT_EQ(header.authoritative, h.at("aa") == 1);
    EXPECT_EQ(header.truncated, h.at("tc") == 1);
    EXPECT_EQ(header.recursion_desired, h.at("rd") == 1);
    EXPECT_EQ(header.recursion_available, h.at("ra") == 1);
    EXPECT_EQ(header.zero, h.at("z") == 1);
    EXPECT_EQ(header.authentic_data, h.at("ad") == 1);
    EXPECT_EQ(header.checking_disabled, h.at("cd") == 1);
    EXPECT_EQ(header.rcode, h.at("rcode"));
    EXPECT_EQ(header.question_count, h.at("qdcount"));
    EXPECT_EQ(header.answer_count, h.at("ancount"));
    EXPECT_EQ(header.authority_count, h.at("nscount"));
    EXPECT_EQ(header.additional_count, h.at("arcount"));
    auto questions = view->cursor(wire::DnsSection::question);
    for (const json& q : d.at("questions")) {
        const auto question = questions.next_question();
        ASSERT_TRUE(question);
        EXPECT_EQ(question->name.to_string(), q.at("name"));
        EXPECT_EQ(question->type, q.at("type"));
        EXPECT_EQ(question->klass, q.at("class"));
    }
    const std::pair<const char*, wire::DnsSection> sections[] = {
        {"answer", wire::DnsSection::answer}, {"authority", wire::DnsSection::authority},
        {"additional", wire::DnsSection::additional}};
    for (const auto& [section_name, section] : sections) {
        auto records = view->cursor(section);
        for (const json& r : d.at("records")) {
            if (r.at("section") != section_name) continue;
            const auto record = records.next_record();
            ASSERT_TRUE(record);
            EXPECT_EQ(record->name.to_string(), r.at("name"));
            EXPECT_EQ(record->type, r.at("type"));
            EXPECT_EQ(record->klass, r.at("class"));
            EXPECT_EQ(record->ttl, r.at("ttl"));
            EXPECT_EQ(hex(record->rdata), r.at("rdata"));
            if (r.contains("address") && record->type == wire::dns_type::kA) {
                EXPECT_EQ(wire::Ipv4Address::from_bytes(record->rdata.data()), ip4(r.at("address")));
            }
            if (r.contains("address") && record->type == wire::dns_type::kAaaa) {
                EXPECT_EQ(wire::Ipv6Address::from_bytes(record->rdata.data()), ipv6(r.at("address").get<std::string>()));
            }
            if (r.contains("target")) {  // a CNAME's RDATA, itself compressed
                wire::DnsName target;
                std::size_t next = 0;
                EXPECT_EQ(wire::read_dns_name(message, record->rdata_offset, &target, next).kind, wire::DnsErrorKind::none);
                EXPECT_EQ(target.to_string(), r.at("target"));
                EXPECT_EQ(next, record->rdata_offset + record->rdata.size());
            }
            if (r.contains("udp_size")) {
                const auto edns = view->edns();
                ASSERT_TRUE(edns);
                EXPECT_EQ(edns->udp_payload_size, r.at("udp_size"));
                EXPECT_EQ(edns->version, r.at("version"));
                EXPECT_EQ(edns->extended_rcode, r.at("extended_rcode"));
            }
        }
        EXPECT_FALSE(records.next_record());
    }
}

Bytes rebuild_dns(const json& d) {
    const json& h = d.at("header");
    wire::DnsHeader header;
    header.id = h.at("id");
    header.response = h.at("qr") == 1;
    header.opcode = h.at("opcode");
    header.authoritative = h.at("aa") == 1;
    header.truncated = h.at("tc") == 1;
    header.recursion_desired = h.at("rd") == 1;
    header.recursion_available = h.at("ra") == 1;
    header.zero = h.at("z") == 1;
    header.authentic_data = h.at("ad") == 1;
    header.checking_disabled = h.at("cd") == 1;
    header.rcode = h.at("rcode");
    Bytes out(1500);
    wire::DnsBuilder b(out, header);
    for (const json& q : d.at("questions")) {
        const auto name = wire::DnsName::from_text(q.at("name").get<std::string>());
        EXPECT_TRUE(name);
        b.add_question(*name, q.at("type"), q.at("class"));
    }
    for (const json& r : d.at("records")) {
        const auto name = wire::DnsName::from_text(r.at("name").get<std::string>());
        EXPECT_TRUE(name);
        wire::DnsNameRef ref{&*name, r.at("labels"), std::nullopt};
        if (!r.at("pointer").is_null()) ref.pointer = r.at("pointer").get<std::uint16_t>();
        const std::string section = r.at("section");
        b.add_record(section == "answer" ? wire::DnsSection::answer
                     : section == "authority" ? wire::DnsSection::authority
                                              : wire::DnsSection::additional,
                     ref, r.at("type"), r.at("class"), r.at("ttl"), from_hex(r.at("rdata")));
    }
    out.resize(b.finish());
    return out;
}

TEST(DnsGoldenTest, EveryMessageDecodesAndIsBuiltAgainByteForByte) {
    std::size_t checked = 0;
    for (const std::string kind : {"dns", "dns_tcp"}) {
        for (const json& f : frames_of(kind)) {
            if (!f.contains("dns")) continue;  // the malformed query: see the forwarder's test below
            SCOPED_TRACE(f.at("name").get<std::string>());
            const Bytes frame = golden(f.at("name"));
            wire::ByteSpan message = kind == "dns" ? udp_payload(frame) : tcp_payload(frame);
            if (kind == "dns_tcp") {
                const wire::DnsTcpMessage framed = wire::next_dns_tcp_message(message);
                ASSERT_EQ(framed.status, wire::DnsTcpStatus::complete);
                EXPECT_EQ(framed.consumed, message.size());
                message = framed.message;
            }
            expect_dns_message(message, f.at("dns"));
            const Bytes rebuilt = rebuild_dns(f.at("dns"));
            EXPECT_EQ(hex(rebuilt), hex(message));
            if (kind == "dns_tcp") {
                Bytes framed(rebuilt.size() + 2);
                ASSERT_EQ(wire::write_dns_tcp_message(framed, rebuilt), framed.size());
                EXPECT_EQ(hex(framed), hex(tcp_payload(frame)));
            }
            ++checked;
        }
    }
    EXPECT_EQ(checked, 13u);
}

struct ForwarderWorld {
    DnsZone zone = blue_zone();
    DnsForwarder forwarder{DnsForwarderConfig{{DnsUpstream{ipv4("192.0.2.53"), 53}}, 16, kSecond, 2, 30, 1232, 7}};
    DnsVpc vpc{vpc_gateway(), &zone, 1450};
};

TEST(DnsGoldenTest, TheForwarderAnswersEveryQueryWithScapysReply) {
    std::size_t checked = 0;
    for (const std::string kind : {"dns", "dns_tcp"}) {
        for (const json& f : frames_of(kind)) {
            if (!f.contains("expect") || !f.at("expect").contains("reply")) continue;
            SCOPED_TRACE(f.at("name").get<std::string>());
            ForwarderWorld w;
            Bytes out(2048, 0xa5);
            const Bytes query = golden(f.at("name"));
            const json& expect = f.at("expect");
            DnsAction action;
            if (kind == "dns") {
                action = w.forwarder.handle_udp_query(query, w.vpc, kSecond, out);
                ASSERT_EQ(action.kind, DnsActionKind::reply_udp) << to_string(action.outcome);
                out.resize(action.length);
                EXPECT_EQ(hex(out), hex(golden(expect.at("reply"))));
            } else {
                const auto framed = wire::next_dns_tcp_message(tcp_payload(query));
                action = w.forwarder.handle_tcp_query(framed.message, w.vpc, 42, kSecond, out);
                ASSERT_EQ(action.kind, DnsActionKind::reply_tcp) << to_string(action.outcome);
                EXPECT_EQ(action.connection, 42u);
                out.resize(action.length);
                EXPECT_EQ(hex(out), hex(tcp_payload(golden(expect.at("reply")))));
            }
            EXPECT_EQ(to_string(action.outcome), expect.at("outcome").get<std::string>());
            ++checked;
        }
    }
    EXPECT_EQ(checked, 6u);
}

TEST(DnsGoldenTest, AForwardedQueryComesBackAsScapysAnswerFrame) {
    ForwarderWorld w;
    Bytes out(2048);
    const Bytes query = golden("dns_query_upstream");
    const DnsAction forward = w.forwarder.handle_udp_query(query, w.vpc, kSecond, out);
    ASSERT_EQ(forward.kind, DnsActionKind::forward) << to_string(forward.outcome);
    EXPECT_EQ(forward.upstream, 0u);
    EXPECT_FALSE(forward.over_tcp);
    const Bytes sent(out.begin(), out.begin() + static_cast<long>(forward.length));
    const wire::ByteSpan asked = udp_payload(query);
    ASSERT_EQ(sent.size(), asked.size());
    EXPECT_TRUE(std::equal(sent.begin() + 2, sent.end(), asked.begin() + 2)) << "only the ID may change";

    // The upstream's answer carries the ID the forwarder chose; the tenant gets its own back.
    const Bytes golden_answer = golden("dns_answer_upstream");
    Bytes upstream_answer(udp_payload(golden_answer).begin(), udp_payload(golden_answer).end());
    std::copy(sent.begin(), sent.begin() + 2, upstream_answer.begin());
    Bytes reply(2048);
    const DnsAction back = w.forwarder.handle_upstream_answer(upstream_answer, 0, reply);
    ASSERT_EQ(back.kind, DnsActionKind::reply_udp) << to_string(back.outcome);
    reply.resize(back.length);
    EXPECT_EQ(hex(reply), hex(golden_answer));
}

}  // namespace
}  // namespace andromeda::gateway
