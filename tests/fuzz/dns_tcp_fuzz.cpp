// libFuzzer target: the gateway's DNS-over-TCP endpoint (gateway::DnsTcpServer) under arbitrary
// segment sequences from several tenant ports.
//
// Input: records [op][length, big-endian u16][bytes] against one server (4 connections at most,
// a 64 KiB send room). op % 4 = 0: a TCP segment to the gateway's port 53 whose first 11 bytes
// give its sequence number (4), acknowledgment (4, or the gateway's next sequence number when
// op bit 2 is set), flags (1) and window (2), from tenant port 40000 + (op >> 4) % 4, the rest
// its options (op bit 3: the first (bytes[11] % 11) * 4 bytes) and data; 1: `length` bytes of
// answer on the oldest query not yet answered; 2: no answer for it; 3: the clock moves by
// bytes[0] * 10 ms and the timers are polled.
// Oracles (abort on violation): never more connections than allowed, next_deadline is 0
// exactly when none is open, every frame sent is Ethernet/IPv4/TCP from the gateway's port 53
// with both checksums right, fits the VPC MTU, and is to a port that has spoken; each closed
// connection is reported once, and its token is dead afterwards.
// Seeds: tests/fuzz/corpus/dns_tcp.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <set>

#include "fuzz/gateway_fuzz_support.hpp"
#include "gateway/dns_tcp.hpp"
#include "wire/tcp.hpp"

namespace {

using namespace andromeda;
using fuzzing::violation;

constexpr const char* kName = "dns_tcp_fuzz";
constexpr std::uint16_t kMtu = 1450;
constexpr std::size_t kMaxConnections = 4;

class CheckingSink : public gateway::DnsTcpSink {
public:
    void send_frame(std::uint64_t, wire::ByteSpan frame) override {
        const auto eth = wire::EthernetView::parse(frame);
        if (!eth || eth->ethertype() != wire::ethertype::kIpv4) violation(kName, "a frame that is not IPv4");
        const auto ip = wire::Ipv4View::parse(eth->payload());
        if (!ip || !ip->checksum_valid() || ip->source() != fuzzing::kGateway.ipv4 ||
            ip->destination() != fuzzing::kTenantIp || ip->total_length() > kMtu)
            violation(kName, "a bad IPv4 header");
        const auto tcp = wire::TcpView::parse(ip->payload());
        if (!tcp || !tcp->checksum_valid(ip->source(), ip->destination()) || tcp->source_port() != 53)
            violation(kName, "a bad TCP header");
        if (tcp->destination_port() < 40000 || tcp->destination_port() > 40003)
            violation(kName, "a segment to a port that never spoke");
        last_ack = tcp->sequence() + static_cast<std::uint32_t>(tcp->payload().size());
    }
    void closed(std::uint64_t connection) override {
        if (!closed_connections.insert(connection).second) violation(kName, "a connection closed twice");
    }
    std::uint32_t last_ack = 0;
    std::set<std::uint64_t> closed_connections;
};

fuzzing::Bytes segment_frame(std::uint16_t port, std::uint32_t seq, std::uint32_t ack, std::uint8_t flags,
                             std::uint16_t window, wire::ByteSpan options, wire::ByteSpan data) {
    wire::EthernetHeader eth;
    eth.destination = fuzzing::kGateway.mac;
    eth.source = fuzzing::kTenantMac;
    eth.ethertype = wire::ethertype::kIpv4;
    const std::size_t tcp_length = 20 + options.size() + data.size();
    fuzzing::Bytes f(14 + 20 + tcp_length);
    wire::write_ethernet_header(f, eth);
    wire::Ipv4Header ip;
    ip.total_length = static_cast<std::uint16_t>(20 + tcp_length);
    ip.protocol = 6;
    ip.source = fuzzing::kTenantIp;
    ip.destination = fuzzing::kGateway.ipv4;
    wire::write_ipv4_header(wire::MutableByteSpan(f).subspan(14), ip);
    const auto tcp = wire::MutableByteSpan(f).subspan(34);
    wire::TcpHeader h;
    h.source_port = port;
    h.destination_port = 53;
    h.sequence = seq;
    h.acknowledgment = ack;
    h.flags = flags;
    h.window = window;
    h.options = options;
    const std::size_t header = wire::write_tcp_header(tcp, h);
    std::copy(data.begin(), data.end(), tcp.begin() + static_cast<std::ptrdiff_t>(header));
    wire::MutableTcpView::parse(tcp)->update_checksum(ip.source, ip.destination);
    return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    gateway::DnsTcpConfig config;
    config.max_connections = kMaxConnections;
    config.send_room = 2 * (2 + 0xffff);
    config.seed = 1;
    gateway::DnsTcpServer server(config);
    CheckingSink sink;
    std::vector<gateway::DnsTcpQuery> queries;
    std::deque<std::uint64_t> owed;
    std::uint64_t now = 1'000'000'000;
    std::size_t at = 0;
    while (at + 3 <= size) {
        const std::uint8_t op = data[at];
        const std::size_t length = std::min<std::size_t>(wire::load_be16(data + at + 1), size - at - 3);
        const wire::ByteSpan bytes(data + at + 3, length);
        at += 3 + length;
        switch (op % 4) {
            case 0: {
                if (bytes.size() < 11) break;
                const std::size_t room = bytes.size() > 12 ? (bytes.size() - 12) / 4 * 4 : 0;
                const std::size_t options =
                    (op & 8) != 0 && room > 0 ? std::min<std::size_t>((bytes[11] % 11) * 4, room) : 0;
                const std::uint32_t ack = (op & 4) != 0 ? sink.last_ack : wire::load_be32(&bytes[4]);
                const fuzzing::Bytes frame = segment_frame(
                    static_cast<std::uint16_t>(40000 + (op >> 4) % 4), wire::load_be32(&bytes[0]), ack, bytes[8],
                    wire::load_be16(&bytes[9]), bytes.size() > 12 ? bytes.subspan(12, options) : wire::ByteSpan{},
                    bytes.subspan(std::min(bytes.size(), 12 + options)));
                queries.clear();
                server.handle_frame(frame, 100, fuzzing::kGateway, kMtu, 1, now, sink, queries);
                for (const auto& q : queries) {
                    if (q.message.empty() || q.message.size() > 0xffff) violation(kName, "a message of a bad length");
                    owed.push_back(q.connection);
                }
                break;
            }
            case 1:
            case 2:
                if (owed.empty()) break;
                if (op % 4 == 1) {
                    fuzzing::Bytes answer(2 + length);
                    wire::store_be16(answer.data(), static_cast<std::uint16_t>(length));
                    server.send(owed.front(), answer, now, sink);
                } else {
                    server.no_answer(owed.front(), now, sink);
                }
                owed.pop_front();
                break;
            case 3:
                now += (bytes.empty() ? 1 : bytes[0]) * 10'000'000ull;
                server.poll(now, sink);
                break;
        }
        if (server.connections() > kMaxConnections) violation(kName, "more connections than allowed");
        if ((server.next_deadline() == 0) != (server.connections() == 0))
            violation(kName, "a deadline without a connection, or a connection without one");
    }
    for (const std::uint64_t c : sink.closed_connections)
        if (server.send(c, fuzzing::Bytes{0, 1, 0}, now, sink)) violation(kName, "a closed connection took an answer");
    return 0;
}
