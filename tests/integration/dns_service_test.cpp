// The gateway's DNS service with real sockets, in one namespace (andro-<pid>-dns): two veth
// pairs play two tenant ports' punt pairs (the service sends on steer<i>, the test reads what
// arrives on tenant<i>), and a small resolver of the test's own on the namespace's loopback
// plays the upstream. Queries are handed in as the packet workers will: submit(vni, ifindex of
// the steering end, frame).
#include "daemon/dns_service.hpp"

#include <gtest/gtest.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "netns_topology.hpp"
#include "raw_socket.hpp"
#include "support/dns_messages.hpp"
#include "support/fake_resolver.hpp"
#include "support/frame_builder.hpp"
#include "support/root.hpp"
#include "wire/dns.hpp"
#include "wire/ethernet.hpp"
#include "wire/ipv4.hpp"
#include "wire/tcp.hpp"
#include "wire/udp.hpp"

namespace andromeda::daemon {
namespace {

using testing::Bytes;
using testing::FakeResolver;
using testing::udp_address;
using namespace std::chrono_literals;

constexpr std::uint32_t kVni = 100;
constexpr std::uint16_t kTenantPort = 33333;
const char* const kTenantMac = "02:00:00:00:00:0a";
const char* const kGatewayMac = "02:aa:00:00:00:01";
constexpr std::chrono::milliseconds kTimeout = 300ms;  // the forwarder's, per attempt
constexpr std::uint32_t kAttempts = 2;
constexpr auto kWait = 5s;  // the most any expected event may take

wire::Ipv4Address ip(const char* text) { return *wire::Ipv4Address::parse(text); }

using testing::dns_a_query;
using testing::dns_tcp_framed;

// The tenant's query as the worker takes it off the port: Ethernet/IPv4/UDP 33333 -> 53 to the
// gateway (headers and checksums by support/frame_builder.hpp, not by wire/).
Bytes query_frame(std::uint16_t id, const char* name) {
    const Bytes message = dns_a_query(id, name);
    test_support::Ipv4Frame s;
    s.src_mac = test_support::mac(kTenantMac);
    s.dst_mac = test_support::mac(kGatewayMac);
    s.src = test_support::ipv4("10.0.0.10");
    s.dst = test_support::ipv4("10.0.0.1");
    s.src_port = kTenantPort;
    s.dst_port = 53;
    s.payload = message.size();
    Bytes f = test_support::ipv4_frame(s);
    std::copy(message.begin(), message.end(), f.begin() + 14 + 20 + 8);
    test_support::refresh_transport_checksum(f, 14);
    return f;
}

struct Reply {
    wire::DnsHeader header;
    std::vector<wire::Ipv4Address> addresses;  // the A records
};

// A reply frame to the tenant: from the gateway's MAC and address, port 53, to the tenant's
// port, checksums right; its DNS header and A records.
std::optional<Reply> decode_reply(const Bytes& frame) {
    const auto eth = wire::EthernetView::parse(frame);
    if (!eth || eth->ethertype() != wire::ethertype::kIpv4) return std::nullopt;
    EXPECT_EQ(eth->destination(), *wire::MacAddress::parse(kTenantMac));
    EXPECT_EQ(eth->source(), *wire::MacAddress::parse(kGatewayMac));
    const auto ipv4 = wire::Ipv4View::parse(eth->payload());
    if (!ipv4) return std::nullopt;
    EXPECT_TRUE(ipv4->checksum_valid());
    EXPECT_EQ(ipv4->source(), ip("10.0.0.1"));
    EXPECT_EQ(ipv4->destination(), ip("10.0.0.10"));
    const auto udp = wire::UdpView::parse(ipv4->payload());
    if (!udp) return std::nullopt;
    EXPECT_TRUE(udp->checksum_valid(ipv4->source(), ipv4->destination()));
    EXPECT_EQ(udp->source_port(), 53);
    EXPECT_EQ(udp->destination_port(), kTenantPort);
    const auto view = wire::DnsMessageView::parse(udp->payload());
    if (!view) return std::nullopt;
    Reply r;
    r.header = view->header();
    auto answers = view->cursor(wire::DnsSection::answer);
    while (const auto record = answers.next_record())
        if (record->type == wire::dns_type::kA && record->rdata.size() == 4)
            r.addresses.push_back(wire::Ipv4Address::from_bytes(record->rdata.data()));
    return r;
}

bool is_tcp_from_53(const Bytes& f) {
    return f.size() >= 54 && test_support::get16(&f[12]) == 0x0800 && f[23] == 6 && test_support::get16(&f[34]) == 53;
}

// A segment the service sent the tenant, read back (checksums checked).
struct TcpOut {
    std::uint32_t seq = 0;
    std::uint32_t ack = 0;
    std::uint8_t flags = 0;
    Bytes data;
};
TcpOut decode_segment(const Bytes& frame) {
    TcpOut o;
    const auto eth = wire::EthernetView::parse(frame);
    const auto ipv4 = eth ? wire::Ipv4View::parse(eth->payload()) : wire::Parsed<wire::Ipv4View>(wire::ParseError::Truncated);
    if (!ipv4) return o;
    const auto tcp = wire::TcpView::parse(ipv4->payload());
    if (!tcp) return o;
    EXPECT_TRUE(tcp->checksum_valid(ipv4->source(), ipv4->destination()));
    EXPECT_EQ(tcp->destination_port(), kTenantPort);
    o.seq = tcp->sequence();
    o.ack = tcp->acknowledgment();
    o.flags = tcp->flags();
    o.data.assign(tcp->payload().begin(), tcp->payload().end());
    return o;
}

bool is_udp_from_53(const Bytes& f) {
    return f.size() >= 42 && test_support::get16(&f[12]) == 0x0800 && f[23] == 17 && test_support::get16(&f[34]) == 53;
}

std::shared_ptr<const gateway::DnsZone> blue_zone(const char* web_address) {
    std::string error;
    auto zone = gateway::DnsZone::for_vpc("blue", error);
    if (web_address != nullptr) zone->add("web", {ip(web_address), std::nullopt}, error);
    zone->add("db", {ip("10.0.0.21"), std::nullopt}, error);
    return std::make_shared<const gateway::DnsZone>(std::move(*zone));
}

DnsServiceVpc blue(const char* web_address) {
    return {kVni, {*wire::MacAddress::parse(kGatewayMac), ip("10.0.0.1")}, 1500, blue_zone(web_address)};
}


class DnsServiceTest : public ::testing::Test {
protected:
    void SetUp() override {
        ANDROMEDA_REQUIRE_ROOT();
        topology_.emplace();
        ns_ = &topology_->add_namespace("dns");
        testing::VethOptions options;
        options.mac_b = kTenantMac;
        for (const char* i : {"0", "1"})
            topology_->add_veth(*ns_, std::string("steer") + i, *ns_, std::string("tenant") + i, options);
        testing::NetnsGuard inside(*ns_);
        steer_[0] = if_nametoindex("steer0");
        steer_[1] = if_nametoindex("steer1");
        ASSERT_NE(steer_[0], 0u);
        ASSERT_NE(steer_[1], 0u);
    }

    // The resolver on `address`:53 and the service forwarding to it, both in the namespace.
    void start(const char* address = "127.0.0.1", const char* elsewhere = "127.0.0.2",
               std::uint16_t elsewhere_port = 53) {
        testing::NetnsGuard inside(*ns_);
        resolver_ = std::make_unique<FakeResolver>(udp_address(address, 53), udp_address(elsewhere, elsewhere_port));
        gateway::DnsForwarderConfig config;
        gateway::DnsUpstream upstream;
        if (const auto v4 = wire::Ipv4Address::parse(address))
            upstream.address = *v4;
        else
            upstream.address = *wire::Ipv6Address::parse(address);
        config.upstreams = {upstream, upstream};  // the service asks a listed-twice upstream once
        config.timeout_ns = static_cast<std::uint64_t>(std::chrono::nanoseconds(kTimeout).count());
        config.attempts = kAttempts;
        service_ = std::make_unique<DnsService>(config);
        service_->set_vpcs({blue("10.0.0.20")});
        for (int i = 0; i < 2; ++i)
            tenant_[i] = std::make_unique<testing::RawSocket>(*ns_, "tenant" + std::to_string(i));
    }

    // Submits a query from tenant port `port` and returns the reply that reaches that port.
    std::optional<Reply> ask(std::uint16_t id, const char* name, int port = 0) {
        EXPECT_TRUE(service_->submit(kVni, steer_[port], query_frame(id, name)));
        return next_reply(port);
    }
    std::optional<Reply> next_reply(int port = 0) {
        const auto frames = tenant_[port]->receive(1, kWait, is_udp_from_53);
        if (frames.empty()) return std::nullopt;
        return decode_reply(frames[0]);
    }

    // Waits (bounded) until the stats satisfy `done`; returns the last ones read.
    DnsServiceStats wait_for(const std::function<bool(const DnsServiceStats&)>& done) {
        const auto deadline = std::chrono::steady_clock::now() + kWait;
        DnsServiceStats s = service_->stats();
        while (!done(s) && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(1ms);
            s = service_->stats();
        }
        return s;
    }

    std::optional<testing::Topology> topology_;
    testing::Netns* ns_ = nullptr;
    std::uint32_t steer_[2] = {0, 0};
    // Destroyed before the topology (declared after it): the sockets close before the namespace goes.
    std::unique_ptr<FakeResolver> resolver_;
    std::unique_ptr<DnsService> service_;
    std::unique_ptr<testing::RawSocket> tenant_[2];
};

TEST_F(DnsServiceTest, AVpcNameIsAnsweredOnThePortTheQueryCameFrom) {
    start();
    const auto reply = ask(0x1234, "web.blue.internal");
    ASSERT_TRUE(reply) << "no answer on tenant0";
    EXPECT_EQ(reply->header.id, 0x1234);
    EXPECT_TRUE(reply->header.response);
    EXPECT_TRUE(reply->header.authoritative);
    EXPECT_EQ(reply->header.rcode, wire::dns_rcode::kNoError);
    EXPECT_EQ(reply->addresses, std::vector{ip("10.0.0.20")});

    const auto other_port = ask(0x1235, "db.blue.internal", 1);
    ASSERT_TRUE(other_port) << "no answer on tenant1";
    EXPECT_EQ(other_port->addresses, std::vector{ip("10.0.0.21")});

    const auto s = wait_for([](const DnsServiceStats& now) { return now.service.replies_sent == 2; });
    EXPECT_EQ(s.service.submitted, 2u);
    EXPECT_EQ(s.service.replies_sent, 2u);
    EXPECT_EQ(s.service.send_errors, 0u);
    EXPECT_EQ(s.forwarder.answered_locally, 2u);
    EXPECT_EQ(s.forwarder.forwarded, 0u);

    bool named = false;  // the thread says what it is in top -H and /proc
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream comm(task.path() / "comm");
        std::string name;
        std::getline(comm, name);
        named = named || name == "andromeda-dns";
    }
    EXPECT_TRUE(named);
}

TEST_F(DnsServiceTest, AnOtherNameIsForwardedAndItsAnswerReturnsWithTheTenantsId) {
    start();
    const auto reply = ask(0xbeef, "example.test", 1);
    ASSERT_TRUE(reply) << "no answer on tenant1, the port the query came from";
    EXPECT_EQ(reply->header.id, 0xbeef);
    EXPECT_EQ(reply->header.rcode, wire::dns_rcode::kNoError);
    EXPECT_EQ(reply->addresses, std::vector{ip("192.0.2.7")});
    EXPECT_EQ(resolver_->queries(), 1);

    const auto s = wait_for([](const DnsServiceStats& now) { return now.service.replies_sent == 1; });
    EXPECT_EQ(s.service.forwards_sent, 1u);
    EXPECT_EQ(s.service.upstream_datagrams, 1u);
    EXPECT_EQ(s.service.upstream_from_elsewhere, 0u);
    EXPECT_EQ(s.forwarder.forwarded, 1u);
    EXPECT_EQ(s.forwarder.answers_returned, 1u);
    EXPECT_EQ(s.in_flight, 0u);
}

TEST_F(DnsServiceTest, AnIpv6UpstreamIsAskedOverIpv6) {
    // The topology turns IPv6 off in its namespaces; the loopback is enough here.
    ns_->run({"sysctl", "-q", "-w", "net.ipv6.conf.lo.disable_ipv6=0"});
    start("::1", "::1", 5353);
    auto reply = ask(0x6666, "example.test");
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->header.id, 0x6666);
    EXPECT_EQ(reply->addresses, std::vector{ip("192.0.2.7")});

    // The right address from another port is not the upstream either.
    resolver_->set_mode(FakeResolver::Mode::answer_from_elsewhere);
    reply = ask(0x6667, "example.test");
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->header.rcode, wire::dns_rcode::kServFail);
    const auto s = wait_for([](const DnsServiceStats& now) { return now.service.replies_sent == 2; });
    EXPECT_EQ(s.service.upstream_from_elsewhere, kAttempts);
    EXPECT_EQ(s.forwarder.answers_returned, 1u);
}

TEST_F(DnsServiceTest, AnUpstreamThatNeverAnswersGetsTheTenantServfailAfterTheTimeout) {
    start();
    resolver_->set_mode(FakeResolver::Mode::silent);
    const auto sent = std::chrono::steady_clock::now();
    const auto reply = ask(0x5151, "example.test");
    const auto elapsed = std::chrono::steady_clock::now() - sent;
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->header.id, 0x5151);
    EXPECT_EQ(reply->header.rcode, wire::dns_rcode::kServFail);
    EXPECT_GE(elapsed, kAttempts * kTimeout) << "SERVFAIL before every attempt timed out";
    EXPECT_EQ(resolver_->queries(), static_cast<int>(kAttempts));

    const auto s = wait_for([](const DnsServiceStats& now) { return now.service.replies_sent == 1; });
    EXPECT_EQ(s.forwarder.timeouts, kAttempts);
    EXPECT_EQ(s.forwarder.retries, kAttempts - 1);
    EXPECT_EQ(s.forwarder.failures, 1u);
    EXPECT_EQ(s.service.forwards_sent, kAttempts);
    EXPECT_EQ(s.in_flight, 0u);
}

// DNS over TCP through the service: the tenant's segments handed in as the workers do, the
// gateway's end of the connection answering on the port; a query asked over TCP is asked
// upstream over TCP, and an upstream that takes the query and never answers gets the tenant
// SERVFAIL on the same connection once every attempt has timed out.
TEST_F(DnsServiceTest, AQueryOverTcpIsAskedUpstreamOverTcpAndASilentOneGetsServfail) {
    start();
    const auto segment = [&](std::uint32_t seq, std::uint32_t ack, std::uint8_t flags, Bytes data = {}) {
        test_support::TcpSegmentSpec s;
        s.src_mac = test_support::mac(kTenantMac);
        s.dst_mac = test_support::mac(kGatewayMac);
        s.src = test_support::ipv4("10.0.0.10");
        s.dst = test_support::ipv4("10.0.0.1");
        s.src_port = kTenantPort;
        s.seq = seq;
        s.ack = ack;
        s.flags = flags;
        s.data = std::move(data);
        EXPECT_TRUE(service_->submit(kVni, steer_[0], test_support::tcp_segment_frame(s)));
    };
    // The next segment from the gateway that carries data (ACKs alone are skipped).
    const auto next_data = [&] {
        for (int i = 0; i < 4; ++i) {
            const auto frames = tenant_[0]->receive(1, kWait, is_tcp_from_53);
            if (frames.empty()) break;
            TcpOut o = decode_segment(frames[0]);
            if (!o.data.empty()) return o;
        }
        return TcpOut{};
    };
    // The one length-prefixed answer a segment carries: its header.
    const auto answer_of = [](const TcpOut& o) -> std::optional<wire::DnsHeader> {
        if (o.data.size() < 2 || test_support::get16(o.data.data()) != o.data.size() - 2) return std::nullopt;
        const auto view = wire::DnsMessageView::parse(wire::ByteSpan(o.data).subspan(2));
        if (!view) return std::nullopt;
        return view->header();
    };

    segment(100, 0, wire::tcp_flag::kSyn);
    auto frames = tenant_[0]->receive(1, kWait, is_tcp_from_53);
    ASSERT_EQ(frames.size(), 1u);
    const TcpOut synack = decode_segment(frames[0]);
    ASSERT_EQ(synack.flags, wire::tcp_flag::kSyn | wire::tcp_flag::kAck);
    ASSERT_EQ(synack.ack, 101u);
    std::uint32_t ours = 101;
    std::uint32_t theirs = synack.seq + 1;
    segment(ours, theirs, wire::tcp_flag::kAck);

    const Bytes first = dns_tcp_framed(dns_a_query(0x4321, "example.test"));
    segment(ours, theirs, wire::tcp_flag::kAck | wire::tcp_flag::kPsh, first);
    ours += static_cast<std::uint32_t>(first.size());
    const TcpOut answered = next_data();
    const auto answer = answer_of(answered);
    ASSERT_TRUE(answer);
    EXPECT_EQ(answer->id, 0x4321);
    EXPECT_EQ(answer->rcode, wire::dns_rcode::kNoError);
    EXPECT_EQ(answered.ack, ours);
    EXPECT_EQ(resolver_->tcp_queries(), 1);
    EXPECT_EQ(resolver_->queries(), 0) << "asked over TCP, not UDP";
    theirs += static_cast<std::uint32_t>(answered.data.size());
    segment(ours, theirs, wire::tcp_flag::kAck);

    resolver_->set_mode(FakeResolver::Mode::silent);
    const Bytes second = dns_tcp_framed(dns_a_query(0x4322, "example.test"));
    const auto sent = std::chrono::steady_clock::now();
    segment(ours, theirs, wire::tcp_flag::kAck | wire::tcp_flag::kPsh, second);
    const TcpOut failed = next_data();
    EXPECT_GE(std::chrono::steady_clock::now() - sent, kAttempts * kTimeout) << "SERVFAIL before the attempts timed out";
    const auto servfail = answer_of(failed);
    ASSERT_TRUE(servfail);
    EXPECT_EQ(servfail->id, 0x4322);
    EXPECT_EQ(servfail->rcode, wire::dns_rcode::kServFail);
    EXPECT_EQ(failed.seq, theirs);

    const auto s = wait_for([](const DnsServiceStats& now) { return now.service.upstream_tcp_failed == kAttempts; });
    EXPECT_EQ(s.service.upstream_tcp_opened, 1 + kAttempts);
    EXPECT_EQ(s.service.upstream_tcp_answers, 1u);
    EXPECT_EQ(s.service.upstream_tcp_failed, kAttempts);
    EXPECT_EQ(s.tcp.established, 1u);
    EXPECT_EQ(s.tcp.messages, 2u);
    EXPECT_EQ(s.tcp_connections, 1u);
    EXPECT_EQ(s.in_flight, 0u);
}

TEST_F(DnsServiceTest, AnAnswerFromAnotherAddressIsNotAccepted) {
    start();
    // Every attempt's answer comes from 127.0.0.2:53, right ID and question, wrong source.
    resolver_->set_mode(FakeResolver::Mode::answer_from_elsewhere);
    const auto reply = ask(0x7777, "example.test");
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->header.rcode, wire::dns_rcode::kServFail) << "a spoofed answer reached the tenant";

    const auto s = wait_for([](const DnsServiceStats& now) { return now.service.replies_sent == 1; });
    EXPECT_EQ(s.service.upstream_datagrams, kAttempts);
    EXPECT_EQ(s.service.upstream_from_elsewhere, kAttempts);
    EXPECT_EQ(s.forwarder.answers_returned, 0u);
    EXPECT_EQ(s.forwarder.unmatched, 0u) << "never handed to the forwarder";
}

TEST_F(DnsServiceTest, AFullQueueRefusesQueriesAndTheQueuedOnesAreAnswered) {
    start();
    service_->hold_queue_for_test(true);
    const Bytes frame = query_frame(0x0101, "web.blue.internal");
    for (std::size_t i = 0; i < kDnsQueueSlots; ++i) ASSERT_TRUE(service_->submit(kVni, steer_[0], frame)) << i;
    EXPECT_FALSE(service_->submit(kVni, steer_[0], frame));
    EXPECT_FALSE(service_->submit(kVni, steer_[0], Bytes(kDnsQueryFrameRoom + 1, 0)));
    auto s = service_->stats();
    EXPECT_EQ(s.service.queue_full, 1u);
    EXPECT_EQ(s.service.oversized, 1u);
    EXPECT_EQ(s.service.submitted, kDnsQueueSlots);

    service_->hold_queue_for_test(false);
    s = wait_for([](const DnsServiceStats& now) {
        return now.service.replies_sent + now.service.send_errors == kDnsQueueSlots;
    });
    EXPECT_EQ(s.service.replies_sent, kDnsQueueSlots);
    EXPECT_EQ(s.forwarder.answered_locally, kDnsQueueSlots);
}

// Several workers submit at once while the control thread swaps VPC sets and reads the stats
// (the run that matters is under TSan: scripts/test.sh's build-tsan).
TEST_F(DnsServiceTest, WorkersSubmitWhileTheControlThreadReconfigures) {
    start();
    constexpr int kWorkers = 4, kQueriesEach = 200;
    std::atomic<std::uint64_t> refused{0};
    std::vector<std::thread> workers;
    for (int w = 0; w < kWorkers; ++w)
        workers.emplace_back([&, w] {
            for (int i = 0; i < kQueriesEach; ++i) {
                const Bytes frame = query_frame(static_cast<std::uint16_t>(w << 8 | i), "web.blue.internal");
                if (!service_->submit(kVni, steer_[w % 2], frame)) ++refused;
            }
        });
    for (int i = 0; i < 50; ++i) {
        service_->set_vpcs({blue(i % 2 == 0 ? "10.0.0.30" : "10.0.0.20")});
        (void)service_->stats();
    }
    for (std::thread& t : workers) t.join();

    constexpr std::uint64_t kAll = kWorkers * kQueriesEach;
    const auto s = wait_for([&](const DnsServiceStats& now) {
        return now.service.replies_sent + now.service.send_errors == now.service.submitted;
    });
    EXPECT_EQ(s.service.submitted + s.service.queue_full, kAll);
    EXPECT_EQ(s.service.queue_full, refused.load());
    EXPECT_EQ(s.service.replies_sent, s.service.submitted);
    EXPECT_EQ(s.forwarder.answered_locally, s.service.submitted);
}

TEST_F(DnsServiceTest, SetVpcsChangesTheAnswers) {
    start();
    auto reply = ask(1, "web.blue.internal");
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->addresses, std::vector{ip("10.0.0.20")});

    service_->set_vpcs({blue("10.0.0.30")});  // web moved
    reply = ask(2, "web.blue.internal");
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->addresses, std::vector{ip("10.0.0.30")});

    service_->set_vpcs({blue(nullptr)});  // web is gone
    reply = ask(3, "web.blue.internal");
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->header.id, 3);
    EXPECT_EQ(reply->header.rcode, wire::dns_rcode::kNxDomain);
}

TEST_F(DnsServiceTest, AQueryForAnUnknownVniIsCountedAndDropped) {
    start();
    EXPECT_TRUE(service_->submit(kVni + 1, steer_[0], query_frame(9, "web.blue.internal")));
    const auto s = wait_for([](const DnsServiceStats& now) { return now.service.unknown_vpc == 1; });
    EXPECT_EQ(s.service.unknown_vpc, 1u);
    EXPECT_EQ(s.service.replies_sent, 0u);
    EXPECT_EQ(s.forwarder.queries, 0u);

    service_->set_vpcs({});  // no VPC at all: the known one is dropped too
    EXPECT_TRUE(service_->submit(kVni, steer_[0], query_frame(10, "web.blue.internal")));
    EXPECT_EQ(wait_for([](const DnsServiceStats& now) { return now.service.unknown_vpc == 2; }).service.unknown_vpc,
              2u);
}

}  // namespace
}  // namespace andromeda::daemon
