// DNS over TCP on the gateway address: the gateway's side of a tenant's TCP connection, driven
// segment by segment with frames written byte by byte here (not by wire/), the gateway's frames
// read back with their checksums checked.
#include "gateway/dns_tcp.hpp"
#include "support/dns_messages.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <random>

#include "unit/gateway/dhcp_dns_world.hpp"
#include "wire/dns.hpp"
#include "wire/ethernet.hpp"
#include "wire/ipv4.hpp"
#include "wire/tcp.hpp"

namespace andromeda::gateway {
namespace {

using namespace testing;
using namespace wire::tcp_flag;

constexpr std::uint64_t kTag = 7;
constexpr std::uint16_t kMtu = 1450;
constexpr std::uint16_t kTenantPort = 40000;
constexpr std::uint64_t kMs = 1'000'000;

struct Segment {
    std::uint32_t seq = 0;
    std::uint32_t ack = 0;
    std::uint8_t flags = 0;
    std::uint16_t window = 64240;
    Bytes options;
    Bytes data;
    std::uint16_t src_port = kTenantPort;
    std::uint16_t dst_port = 53;
    wire::Ipv4Address src = ipv4("10.0.0.10");
    wire::Ipv4Address dst = ipv4("10.0.0.1");
};

// Ethernet/IPv4/TCP from the tenant, by support/frame_builder.hpp (not by wire/).
Bytes tenant_frame(const Segment& s) {
    test_support::TcpSegmentSpec t;
    t.src_mac = test_support::mac("02:00:00:00:00:0a");
    t.dst_mac = test_support::mac("02:aa:00:00:00:01");  // vpc_gateway()
    t.src = s.src.value();
    t.dst = s.dst.value();
    t.src_port = s.src_port;
    t.dst_port = s.dst_port;
    t.seq = s.seq;
    t.ack = s.ack;
    t.flags = s.flags;
    t.window = s.window;
    t.options = s.options;
    t.data = s.data;
    return test_support::tcp_segment_frame(t);
}

using andromeda::testing::dns_tcp_framed;

// A gateway frame, read back.
struct Out {
    std::uint32_t seq = 0;
    std::uint32_t ack = 0;
    std::uint8_t flags = 0;
    std::uint16_t window = 0;
    std::uint16_t mss = 0;  // the option, when present
    Bytes data;
};

class Sink : public DnsTcpSink {
public:
    void send_frame(std::uint64_t tag, wire::ByteSpan frame) override {
        EXPECT_EQ(tag, kTag);
        const auto ethernet = wire::EthernetView::parse(frame);
        EXPECT_TRUE(ethernet.has_value());
        if (!ethernet) return;
        EXPECT_EQ(ethernet->destination(), mac("02:00:00:00:00:0a"));
        EXPECT_EQ(ethernet->source(), vpc_gateway().mac);
        const auto ip = wire::Ipv4View::parse(ethernet->payload());
        EXPECT_TRUE(ip && ip->checksum_valid() && ip->dont_fragment());
        if (!ip) return;
        EXPECT_EQ(ip->source(), vpc_gateway().ipv4);
        EXPECT_TRUE(ip->destination() == ipv4("10.0.0.10") || ip->destination() == ipv4("10.0.0.11"));
        EXPECT_LE(ip->total_length(), kMtu);
        const auto tcp = wire::TcpView::parse(ip->payload());
        EXPECT_TRUE(tcp && tcp->checksum_valid(ip->source(), ip->destination()));
        if (!tcp) return;
        EXPECT_EQ(tcp->source_port(), 53);
        Out o;
        o.seq = tcp->sequence();
        o.ack = tcp->acknowledgment();
        o.flags = tcp->flags();
        o.window = tcp->window();
        const auto options = tcp->options();
        if (options.size() >= 4 && options[0] == 2 && options[1] == 4) o.mss = wire::load_be16(&options[2]);
        o.data.assign(tcp->payload().begin(), tcp->payload().end());
        frames.push_back(o);
    }
    void closed(std::uint64_t connection) override { closed_connections.push_back(connection); }

    std::vector<Out> take() { return std::exchange(frames, {}); }

    std::vector<Out> frames;
    std::vector<std::uint64_t> closed_connections;
};

class DnsTcp : public ::testing::Test {
protected:
    DnsTcpConfig config() const {
        DnsTcpConfig c;
        c.seed = 42;
        return c;
    }
    void SetUp() override { server_.emplace(config()); }

    void in(const Segment& s) {
        server_->handle_frame(tenant_frame(s), kVni, vpc_gateway(), kMtu, kTag, now_, sink_, queries_);
    }

    // SYN (MSS 1460) and the handshake's ACK; returns the gateway's first data sequence number.
    std::uint32_t connect(std::uint16_t window = 64240) {
        Segment syn;
        syn.seq = isn_;
        syn.flags = kSyn;
        syn.options = {2, 4, 0x05, 0xb4, 1, 1, 1, 0};  // MSS 1460, NOP NOP NOP, EOL
        syn.window = window;
        in(syn);
        const auto synack = sink_.take();
        EXPECT_EQ(synack.size(), 1u);
        if (synack.empty()) return 0;
        EXPECT_EQ(synack[0].flags, kSyn | kAck);
        EXPECT_EQ(synack[0].ack, isn_ + 1);
        EXPECT_EQ(synack[0].mss, kMtu - 40);
        const std::uint32_t first = synack[0].seq + 1;
        next_ = isn_ + 1;
        window_ = window;
        in(ack_segment(first));
        EXPECT_TRUE(sink_.take().empty()) << "the handshake's ACK is not answered";
        EXPECT_EQ(server_->counters().established, 1u);
        return first;
    }
    Segment ack_segment(std::uint32_t ack, std::optional<std::uint16_t> window = std::nullopt) const {
        Segment s;
        s.seq = next_;
        s.ack = ack;
        s.flags = kAck;
        s.window = window.value_or(window_);
        return s;
    }
    // Polls at each next deadline until the gateway sends something.
    std::vector<Out> until_frames() {
        for (int i = 0; i < 16; ++i) {
            now_ = server_->next_deadline();
            server_->poll(now_, sink_);
            if (!sink_.frames.empty()) return sink_.take();
        }
        return {};
    }
    // Data from the tenant at its next sequence number.
    void send_data(const Bytes& data, std::uint32_t ack, std::uint8_t extra_flags = 0) {
        Segment s = ack_segment(ack);
        s.flags = static_cast<std::uint8_t>(kAck | kPsh | extra_flags);
        s.data = data;
        in(s);
        next_ += static_cast<std::uint32_t>(data.size()) + ((extra_flags & kFin) != 0 ? 1 : 0);
    }

    std::optional<DnsTcpServer> server_;
    Sink sink_;
    std::vector<DnsTcpQuery> queries_;
    std::uint64_t now_ = 100 * kSecond;
    std::uint32_t isn_ = 0xfffffff0;  // the tenant's sequence numbers wrap during the tests
    std::uint32_t next_ = 0;          // the tenant's next sequence number
    std::uint16_t window_ = 64240;    // and the window it advertises
};

TEST_F(DnsTcp, AQuerySplitAcrossSegmentsIsOneMessageAndItsAnswerFollowsTheMss) {
    const std::uint32_t first = connect();
    const Bytes query = dns_tcp_framed(DnsQuery{}.bytes());
    send_data(Bytes(query.begin(), query.begin() + 1), first);  // half the length prefix
    auto acks = sink_.take();
    ASSERT_EQ(acks.size(), 1u);
    EXPECT_EQ(acks[0].flags, kAck);
    EXPECT_EQ(acks[0].ack, isn_ + 2);
    EXPECT_TRUE(queries_.empty());
    send_data(Bytes(query.begin() + 1, query.end()), first);
    ASSERT_EQ(queries_.size(), 1u);
    EXPECT_EQ(queries_[0].message, DnsQuery{}.bytes());
    EXPECT_EQ(queries_[0].vni, kVni);
    acks = sink_.take();
    ASSERT_EQ(acks.size(), 1u);
    EXPECT_EQ(acks[0].ack, next_);
    EXPECT_EQ(acks[0].window, 0xffff) << "the whole message was taken out of the buffer";

    // A 3000-byte answer: MSS-sized segments (min(1460, 1450 - 40)), in order, with PSH.
    Bytes answer(3000);
    for (std::size_t i = 0; i < answer.size(); ++i) answer[i] = static_cast<std::uint8_t>(i * 7);
    ASSERT_TRUE(server_->send(queries_[0].connection, answer, now_, sink_));
    const auto data = sink_.take();
    ASSERT_EQ(data.size(), 3u);
    Bytes stream;
    std::uint32_t seq = first;
    for (const Out& o : data) {
        EXPECT_EQ(o.seq, seq);
        EXPECT_EQ(o.flags, kAck | kPsh);
        EXPECT_LE(o.data.size(), 1410u);
        seq += static_cast<std::uint32_t>(o.data.size());
        stream.insert(stream.end(), o.data.begin(), o.data.end());
    }
    EXPECT_EQ(stream, answer);
    in(ack_segment(seq));
    EXPECT_TRUE(sink_.take().empty());
    EXPECT_EQ(server_->next_deadline(), now_ + server_->config().idle_timeout_ns) << "nothing left to retransmit";

    // The tenant closes; nothing is owed, so the gateway's FIN follows at once; its ACK ends it.
    send_data({}, seq, kFin);
    const auto fin = sink_.take();
    ASSERT_EQ(fin.size(), 1u);
    EXPECT_EQ(fin[0].flags, kFin | kAck);
    EXPECT_EQ(fin[0].seq, seq);
    EXPECT_EQ(fin[0].ack, next_);
    in(ack_segment(seq + 1));
    EXPECT_EQ(server_->connections(), 0u);
    EXPECT_EQ(sink_.closed_connections, std::vector<std::uint64_t>{queries_[0].connection});
    EXPECT_EQ(server_->counters().closed, 1u);
    EXPECT_FALSE(server_->send(queries_[0].connection, answer, now_, sink_)) << "a closed connection's token is dead";
}

TEST_F(DnsTcp, PipelinedQueriesAreAnsweredBeforeTheGatewaysFin) {
    const std::uint32_t first = connect();
    DnsQuery a;
    DnsQuery b;
    b.id = 0x1111;
    b.name = "example.test";
    Bytes both = dns_tcp_framed(a.bytes());
    const Bytes second = dns_tcp_framed(b.bytes());
    both.insert(both.end(), second.begin(), second.end());
    send_data(both, first, kFin);  // two queries and the tenant's FIN in one segment
    ASSERT_EQ(queries_.size(), 2u);
    EXPECT_EQ(queries_[1].message, b.bytes());
    EXPECT_EQ(queries_[0].connection, queries_[1].connection);
    auto out = sink_.take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].flags, kAck) << "no FIN while answers are owed";
    EXPECT_EQ(out[0].ack, next_);

    const Bytes answer_b = dns_tcp_framed(Bytes(40, 0xbb));
    ASSERT_TRUE(server_->send(queries_[1].connection, answer_b, now_, sink_));
    out = sink_.take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].data, answer_b);
    const Bytes answer_a = dns_tcp_framed(Bytes(30, 0xaa));
    ASSERT_TRUE(server_->send(queries_[0].connection, answer_a, now_, sink_));
    out = sink_.take();
    ASSERT_EQ(out.size(), 2u) << "the last answer, then the FIN";
    EXPECT_EQ(out[0].data, answer_a);
    EXPECT_EQ(out[1].flags, kFin | kAck);
    EXPECT_EQ(out[1].seq, first + answer_a.size() + answer_b.size());
    in(ack_segment(out[1].seq + 1));
    EXPECT_EQ(server_->connections(), 0u);
    EXPECT_EQ(server_->counters().messages, 2u);
}

TEST_F(DnsTcp, AQueryThatGetsNoAnswerNoLongerHoldsTheCloseBack) {
    const std::uint32_t first = connect();
    send_data(dns_tcp_framed(DnsQuery{}.bytes()), first, kFin);
    ASSERT_EQ(queries_.size(), 1u);
    EXPECT_EQ(sink_.take().size(), 1u) << "its ACK, no FIN";
    server_->no_answer(queries_[0].connection, now_, sink_);
    const auto out = sink_.take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].flags, kFin | kAck);
    EXPECT_EQ(out[0].seq, first);
}

TEST_F(DnsTcp, UnacknowledgedDataIsSentAgainFromTheOldestByteWithBackoffThenReset) {
    const std::uint32_t first = connect();
    send_data(dns_tcp_framed(DnsQuery{}.bytes()), first);
    sink_.take();
    const Bytes answer(5000, 0x5a);
    ASSERT_TRUE(server_->send(queries_[0].connection, answer, now_, sink_));
    const auto burst = sink_.take();
    ASSERT_EQ(burst.size(), 4u) << "all of it within the initial window";
    in(ack_segment(first + 1410));  // the first segment arrived; the rest was lost
    EXPECT_TRUE(sink_.take().empty());

    const std::uint64_t rto = server_->config().initial_rto_ns;
    now_ += rto - 1;
    server_->poll(now_, sink_);
    EXPECT_TRUE(sink_.take().empty()) << "not before the timer";
    now_ += 1;
    server_->poll(now_, sink_);
    auto again = sink_.take();
    ASSERT_EQ(again.size(), 1u) << "one segment after a timeout (cwnd = 1 MSS)";
    EXPECT_EQ(again[0].seq, first + 1410);
    EXPECT_EQ(again[0].data, Bytes(answer.begin() + 1410, answer.begin() + 2820));
    // Acknowledged: the window grows again and the rest follows.
    in(ack_segment(first + 2820));
    again = sink_.take();
    ASSERT_EQ(again.size(), 2u);
    EXPECT_EQ(again[0].seq, first + 2820);
    EXPECT_EQ(again[1].seq + again[1].data.size(), first + 5000);

    // Never acknowledged again: the timer doubles each time, then the connection is reset.
    std::uint64_t last = now_;
    std::uint64_t gap = 0;
    for (std::uint32_t i = 0; i < server_->config().max_retransmits; ++i) {
        const auto r = until_frames();
        ASSERT_EQ(r.size(), 1u) << "retransmission " << i;
        EXPECT_EQ(r[0].seq, first + 2820);
        if (i > 0) {
            EXPECT_EQ(now_ - last, gap * 2) << i;
        }
        gap = now_ - last;
        last = now_;
    }
    const auto reset = until_frames();
    ASSERT_EQ(reset.size(), 1u);
    EXPECT_EQ(reset[0].flags, kRst | kAck);
    EXPECT_EQ(server_->connections(), 0u);
    EXPECT_EQ(server_->counters().timed_out, 1u);
    EXPECT_EQ(sink_.closed_connections.size(), 1u);
}

TEST_F(DnsTcp, TheTenantsWindowHoldsDataBackAndAShutWindowIsProbed) {
    const std::uint32_t first = connect(1000);
    send_data(dns_tcp_framed(DnsQuery{}.bytes()), first);
    sink_.take();
    ASSERT_TRUE(server_->send(queries_[0].connection, Bytes(3000, 1), now_, sink_));
    auto out = sink_.take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].data.size(), 1000u) << "no more than the tenant's window";
    in(ack_segment(first + 1000, 0));  // taken, but the window shuts
    EXPECT_TRUE(sink_.take().empty());
    out = until_frames();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].data.size(), 1u) << "a one-byte window probe";
    EXPECT_EQ(out[0].seq, first + 1000);
    in(ack_segment(first + 1001, 60000));  // the window opens
    out = sink_.take();
    std::size_t sent = 0;
    for (const Out& o : out) sent += o.data.size();
    EXPECT_EQ(sent, 1999u);
}

TEST_F(DnsTcp, SegmentsOfNoConnectionAreResetAndResetsNeverAnswered) {
    Segment ack;
    ack.seq = 5;
    ack.ack = 0x12345678;
    ack.flags = kAck;
    in(ack);
    auto out = sink_.take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].flags, kRst);
    EXPECT_EQ(out[0].seq, 0x12345678u);

    Segment fin;
    fin.seq = 100;
    fin.flags = kFin;
    fin.data = {1, 2, 3};
    in(fin);
    out = sink_.take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].flags, kRst | kAck);
    EXPECT_EQ(out[0].ack, 104u) << "the data and the FIN";

    Segment rst;
    rst.flags = kRst;
    in(rst);
    EXPECT_TRUE(sink_.take().empty());
    EXPECT_EQ(server_->connections(), 0u);
    EXPECT_EQ(server_->counters().resets_sent, 2u);
}

TEST_F(DnsTcp, BadChecksumsOtherPortsAndOtherAddressesAreMalformed) {
    Segment syn;
    syn.flags = kSyn;
    Bytes bad = tenant_frame(syn);
    bad.back() ^= 0x01;  // the TCP checksum
    server_->handle_frame(bad, kVni, vpc_gateway(), kMtu, kTag, now_, sink_, queries_);
    Segment other_port = syn;
    other_port.dst_port = 54;
    in(other_port);
    Segment other_address = syn;
    other_address.dst = ipv4("10.0.0.2");
    in(other_address);
    Bytes truncated = tenant_frame(syn);
    truncated.resize(40);
    server_->handle_frame(truncated, kVni, vpc_gateway(), kMtu, kTag, now_, sink_, queries_);
    EXPECT_TRUE(sink_.take().empty());
    EXPECT_EQ(server_->counters().malformed, 4u);
    EXPECT_EQ(server_->connections(), 0u);
}

TEST_F(DnsTcp, ResetsAndSynsOnAnOpenConnectionFollowRfc5961) {
    const std::uint32_t first = connect();
    Segment rst = ack_segment(first);
    rst.flags = kRst;
    rst.seq = next_ + 100;  // in the window, not at its edge
    in(rst);
    auto out = sink_.take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].flags, kAck) << "a challenge ACK";
    EXPECT_EQ(server_->connections(), 1u);

    Segment syn;
    syn.seq = 77;
    syn.flags = kSyn;
    in(syn);
    out = sink_.take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].flags, kAck);
    EXPECT_EQ(out[0].ack, next_);
    EXPECT_EQ(server_->counters().challenge_acks, 2u);

    rst.seq = next_;
    in(rst);
    EXPECT_TRUE(sink_.take().empty());
    EXPECT_EQ(server_->connections(), 0u);
    EXPECT_EQ(server_->counters().resets_received, 1u);
}

TEST_F(DnsTcp, ARepeatedSynGetsTheSameSynAckAndAFullTableAReset) {
    DnsTcpConfig c = config();
    c.max_connections = 2;
    server_.emplace(c);
    Segment syn;
    syn.seq = 1;
    syn.flags = kSyn;
    in(syn);
    const auto first = sink_.take();
    in(syn);
    const auto again = sink_.take();
    ASSERT_EQ(first.size(), 1u);
    ASSERT_EQ(again.size(), 1u);
    EXPECT_EQ(again[0].seq, first[0].seq);
    EXPECT_EQ(again[0].mss, kMtu - 40);
    syn.src_port = 40001;
    in(syn);
    syn.src_port = 40002;
    in(syn);
    const auto out = sink_.take();
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[1].flags, kRst | kAck);
    EXPECT_EQ(out[1].ack, 2u);
    EXPECT_EQ(server_->counters().refused_full, 1u);
    EXPECT_EQ(server_->connections(), 2u);
    // A handshake never finished is reset once the idle time has passed.
    now_ += server_->config().idle_timeout_ns;
    server_->poll(now_, sink_);
    EXPECT_EQ(server_->connections(), 0u);
}

TEST_F(DnsTcp, OneTenantCannotTakeEveryConnection) {
    DnsTcpConfig c = config();
    c.max_connections = 8;
    c.max_per_tenant = 2;
    server_.emplace(c);
    Segment syn;
    syn.flags = kSyn;
    for (std::uint16_t port = 40000; port < 40003; ++port) {
        syn.src_port = port;
        in(syn);
    }
    auto out = sink_.take();
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out[2].flags, kRst | kAck) << "the tenant's third";
    EXPECT_EQ(server_->counters().refused_tenant, 1u);
    // Another tenant of the VPC, and the same address in another VPC, still get theirs.
    syn.src = ipv4("10.0.0.11");
    server_->handle_frame(tenant_frame(syn), kVni, vpc_gateway(), kMtu, kTag, now_, sink_, queries_);
    syn.src = ipv4("10.0.0.10");
    server_->handle_frame(tenant_frame(syn), kVni + 1, vpc_gateway(), kMtu, kTag, now_, sink_, queries_);
    EXPECT_EQ(server_->connections(), 4u);
    EXPECT_EQ(server_->counters().refused_tenant, 1u);
    // One of the first tenant's ends: it may open another.
    Segment rst;
    rst.flags = kRst;
    rst.seq = 1;  // the SYN's sequence number (0) + 1: the next byte expected
    in(rst);
    syn.src_port = 40003;
    in(syn);
    EXPECT_EQ(server_->connections(), 4u);
    EXPECT_EQ(server_->counters().refused_tenant, 1u);
}

TEST_F(DnsTcp, DataPastAGapIsDroppedAndTheGapAskedForAgain) {
    const std::uint32_t first = connect();
    const Bytes query = dns_tcp_framed(DnsQuery{}.bytes());
    Segment later = ack_segment(first);
    later.flags = kAck | kPsh;
    later.seq = next_ + 10;
    later.data = Bytes(query.begin() + 10, query.end());
    in(later);
    auto out = sink_.take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].ack, next_) << "a duplicate ACK for the gap";
    EXPECT_TRUE(queries_.empty());
    EXPECT_EQ(server_->counters().out_of_order, 1u);
    // The query from the gap's start: one message.
    send_data(query, first);
    ASSERT_EQ(queries_.size(), 1u);
    // A retransmission of bytes already taken is acknowledged and not taken twice.
    next_ -= static_cast<std::uint32_t>(query.size());
    send_data(query, first);
    EXPECT_EQ(queries_.size(), 1u);
}

TEST_F(DnsTcp, AnIdleConnectionIsClosedByTheGateway) {
    const std::uint32_t first = connect();
    send_data(dns_tcp_framed(DnsQuery{}.bytes()), first);
    sink_.take();
    ASSERT_TRUE(server_->send(queries_[0].connection, dns_tcp_framed(Bytes(20, 3)), now_, sink_));
    sink_.take();
    const std::uint32_t after = first + 22;
    in(ack_segment(after));
    now_ += server_->config().idle_timeout_ns;
    server_->poll(now_, sink_);
    auto out = sink_.take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].flags, kFin | kAck);
    // The tenant acknowledges and closes too.
    Segment fin = ack_segment(after + 1);
    fin.flags = kFin | kAck;
    in(fin);
    out = sink_.take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].ack, next_ + 1) << "its FIN acknowledged";
    EXPECT_EQ(server_->connections(), 0u);
    EXPECT_EQ(server_->counters().idle_closed, 1u);
}

TEST_F(DnsTcp, AnAnswerBeyondTheSendRoomResetsTheConnection) {
    const std::uint32_t first = connect(0);  // the tenant's window is shut throughout
    send_data(dns_tcp_framed(DnsQuery{}.bytes()), first);
    send_data(dns_tcp_framed(DnsQuery{}.bytes()), first);
    sink_.take();
    const Bytes big = dns_tcp_framed(Bytes(0xffff, 9));
    std::size_t accepted = 0;
    while (server_->send(queries_[0].connection, big, now_, sink_)) ++accepted;
    EXPECT_EQ(accepted, server_->config().send_room / big.size());
    EXPECT_EQ(server_->counters().send_room_full, 1u);
    EXPECT_EQ(server_->connections(), 0u);
    const auto out = sink_.take();
    ASSERT_FALSE(out.empty());
    EXPECT_EQ(out.back().flags, kRst | kAck);
}

// Random segments from several tenants' ports, with random flags, sequence numbers near the
// right ones and random data, the clock moving on: never more connections than allowed, every
// frame a well-formed one (the sink checks), and every connection ends by a timeout at last.
TEST_F(DnsTcp, RandomSegmentsKeepTheBoundsAndEveryConnectionEnds) {
    DnsTcpConfig c = config();
    c.max_connections = 4;
    server_.emplace(c);
    std::mt19937 random(7);
    std::uint32_t seq[6] = {};
    for (int i = 0; i < 20000; ++i) {
        const std::size_t who = random() % 6;
        Segment s;
        s.src_port = static_cast<std::uint16_t>(41000 + who);
        s.flags = static_cast<std::uint8_t>(random() % 4 == 0 ? kSyn : random() & 0x3f);
        s.seq = random() % 3 == 0 ? static_cast<std::uint32_t>(random()) : seq[who];
        s.ack = static_cast<std::uint32_t>(random());
        s.window = static_cast<std::uint16_t>(random());
        const std::size_t length = random() % 4 == 0 ? random() % 1400 : random() % 8;
        for (std::size_t k = 0; k < length; ++k) s.data.push_back(static_cast<std::uint8_t>(random() % 3));
        in(s);
        seq[who] = s.seq + static_cast<std::uint32_t>(length);
        for (const DnsTcpQuery& q : queries_)
            server_->send(q.connection, dns_tcp_framed(Bytes(random() % 3000, 1)), now_, sink_);
        queries_.clear();
        if (random() % 10 == 0) {
            now_ += (random() % 2000) * kMs;
            server_->poll(now_, sink_);
        }
        ASSERT_LE(server_->connections(), 4u);
        sink_.take();
    }
    for (int i = 0; i < 200 && server_->connections() > 0; ++i) {
        now_ += 10 * kSecond;
        server_->poll(now_, sink_);
    }
    EXPECT_EQ(server_->connections(), 0u);
    EXPECT_EQ(server_->next_deadline(), 0u);
    EXPECT_GT(server_->counters().opened, 10u);
}

}  // namespace
}  // namespace andromeda::gateway
