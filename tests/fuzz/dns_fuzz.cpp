// libFuzzer target: the DNS codec and the DNS forwarder under arbitrary queries and answers.
//
// Input: byte 0 bit 0 clear: the rest is one DNS message for DnsMessageView (every question and
// record walked, each RDATA also read as a name, EDNS). Bit 0 set: a sequence of records
// [op][length, big-endian u16][bytes] against one fresh DnsForwarder (VPC "blue" with "web", two
// upstreams, four queries in flight): op % 4 = 0 a UDP query frame carrying the bytes (op bit 4:
// VLAN-tagged), 1 a TCP query, 2 an answer from upstream (op >> 2) & 1 whose first two bytes are
// replaced by the latest forwarded query's ID when op bit 3 is set, 3 the clock moves by
// bytes[0] * 100 ms and every timeout is polled.
// Oracles (abort on violation): a refusal names a kind and an offset within the message; a UDP
// reply is a well-formed frame to the tenant (checksums) and a TCP reply a framed message, either
// holding a DNS response that parses; a forward is a query no longer than kMaxForwardedQuery to
// a configured upstream; never more queries in flight than the table holds.
// Seeds: tests/fuzz/corpus/dns, the golden queries and answers of tests/data/gateway.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/gateway_fuzz_support.hpp"
#include "gateway/dns_forwarder.hpp"
#include "wire/dns.hpp"

namespace {

using namespace andromeda;
using fuzzing::violation;

constexpr const char* kName = "dns_fuzz";

void walk(wire::ByteSpan message) {
    const auto v = wire::DnsMessageView::parse(message);
    if (!v) {
        if (v.error().kind == wire::DnsErrorKind::none || v.error().offset > message.size())
            violation(kName, "a refusal without a kind, or past the message");
        return;
    }
    auto questions = v->cursor(wire::DnsSection::question);
    while (const auto q = questions.next_question())
        if (q->name.wire_length() > wire::kDnsMaxNameLength) violation(kName, "a name over 255 bytes");
    for (const auto s : {wire::DnsSection::answer, wire::DnsSection::authority, wire::DnsSection::additional}) {
        auto records = v->cursor(s);
        while (const auto r = records.next_record()) {
            if (r->rdata.data() < message.data() || r->rdata.data() + r->rdata.size() > message.data() + message.size())
                violation(kName, "RDATA outside the message");
            wire::DnsName name;
            std::size_t next = 0;
            if (wire::read_dns_name(message, r->rdata_offset, &name, next).kind == wire::DnsErrorKind::none &&
                (next > message.size() || name.wire_length() > wire::kDnsMaxNameLength))
                violation(kName, "a name read past the message");
        }
    }
    (void)v->edns();
}

void check_dns_response(wire::ByteSpan message) {
    const auto v = wire::DnsMessageView::parse(message);
    if (!v) violation(kName, "a reply whose DNS message does not parse");
    if (!v->header().response) violation(kName, "a reply without QR");
}

struct World {
    gateway::DnsZone zone = make_zone();
    gateway::DnsVpc vpc{fuzzing::kGateway, &zone, 1450};
    gateway::DnsForwarder forwarder{config()};
    std::uint64_t now = 1'000'000'000;
    std::uint16_t last_id = 0;
    fuzzing::Bytes& out = buffer();  // one buffer for every run: its contents never carry over (each action writes first)

    static fuzzing::Bytes& buffer() {
        static fuzzing::Bytes bytes(70000);
        return bytes;
    }

    static gateway::DnsZone make_zone() {
        std::string error;
        auto zone = *gateway::DnsZone::for_vpc("blue", error);
        zone.add("web", {fuzzing::kTenantIp, std::nullopt}, error);
        return zone;
    }
    static gateway::DnsForwarderConfig config() {
        gateway::DnsForwarderConfig c;
        c.upstreams = {gateway::DnsUpstream{wire::Ipv4Address(0xc0000235), 53},
                       gateway::DnsUpstream{wire::Ipv4Address(0xc0000236), 53}};
        c.max_in_flight = 4;
        c.timeout_ns = 1'000'000'000;
        c.seed = 1;
        return c;
    }

    void check(const gateway::DnsAction& a) {
        if (a.length > out.size()) violation(kName, "an action longer than its buffer");
        const wire::ByteSpan bytes = wire::ByteSpan(out).first(a.length);
        switch (a.kind) {
            case gateway::DnsActionKind::none: break;
            case gateway::DnsActionKind::reply_udp:
                check_dns_response(fuzzing::checked_reply(kName, bytes, wire::kDnsPort));
                break;
            case gateway::DnsActionKind::reply_tcp: {
                const auto framed = wire::next_dns_tcp_message(bytes);
                if (framed.status != wire::DnsTcpStatus::complete || framed.consumed != bytes.size())
                    violation(kName, "a TCP reply that is not one framed message");
                check_dns_response(framed.message);
                break;
            }
            case gateway::DnsActionKind::forward:
                if (a.length > gateway::kMaxForwardedQuery || a.length < wire::kDnsHeaderLength ||
                    a.upstream >= forwarder.config().upstreams.size())
                    violation(kName, "a forward too long, too short or to no upstream");
                last_id = wire::load_be16(out.data());
                break;
        }
        if (forwarder.in_flight() > forwarder.config().max_in_flight) violation(kName, "more in flight than the table holds");
    }

    void step(std::uint8_t op, wire::ByteSpan bytes) {
        switch (op % 4) {
            case 0: {
                fuzzing::TenantDatagram d{fuzzing::kTenantIp, fuzzing::kGateway.ipv4, 40000, wire::kDnsPort,
                                          (op & 16) != 0};
                check(forwarder.handle_udp_query(fuzzing::tenant_frame(d, bytes), vpc, now, out));
                break;
            }
            case 1: check(forwarder.handle_tcp_query(bytes, vpc, op, now, out)); break;
            case 2: {
                fuzzing::Bytes answer(bytes.begin(), bytes.end());
                if ((op & 8) != 0 && answer.size() >= 2) wire::store_be16(answer.data(), last_id);
                check(forwarder.handle_upstream_answer(answer, (op >> 2) & 1, out));
                break;
            }
            default: {
                now += (bytes.empty() ? 1 : bytes[0]) * 100'000'000ull;
                for (int i = 0; i < 64; ++i) {
                    const gateway::DnsAction a = forwarder.poll_timeouts(now, out);
                    if (a.outcome == gateway::DnsOutcome::idle) break;
                    check(a);
                }
            }
        }
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    if ((data[0] & 1) == 0) {
        walk(wire::ByteSpan(data + 1, size - 1));
        return 0;
    }
    World world;
    std::size_t at = 1;
    while (at + 3 <= size) {
        const std::uint8_t op = data[at];
        const std::size_t length = std::min<std::size_t>(wire::load_be16(data + at + 1), size - at - 3);
        world.step(op, wire::ByteSpan(data + at + 3, length));
        at += 3 + length;
    }
    return 0;
}
