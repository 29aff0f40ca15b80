// The gateway's DHCP and DNS in the pipeline (docs/vm-tenants.md): which tenant frames are the
// DHCP server's and the DNS service's, what the server answers through the pipeline, and what
// port security still refuses.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "andromeda_overlay.h"
#include "unit/dataplane/pipeline_fixture.hpp"
#include "unit/gateway/dhcp_dns_world.hpp"
#include "wire/dhcp.hpp"
#include "wire/ethernet.hpp"
#include "wire/ipv4.hpp"
#include "wire/udp.hpp"

namespace andromeda::testing {
namespace {

using dataplane::DropReason;
using dataplane::Verdict;
using gateway::testing::DhcpClientMessage;
using gateway::testing::DnsQuery;
using gateway::testing::UdpFrameSpec;
namespace msg = wire::dhcp_message_type;

// What the pipeline handed the DNS service.
class RecordingDns final : public dataplane::DnsQuerySink {
public:
    struct Call {
        std::uint32_t vni;
        PortId port;
        Bytes frame;
    };
    bool submit(std::uint32_t vni, PortId port, wire::ByteSpan frame) override {
        calls.push_back({vni, port, Bytes(frame.begin(), frame.end())});
        return accept;
    }
    std::vector<Call> calls;
    bool accept = true;
};

class GatewayServicesTest : public PipelineTest {
protected:
    GatewayServicesTest() : dns_(std::make_shared<RecordingDns>()), with_dns_(config_with(dns_)) {}

    static dataplane::PipelineConfig config_with(std::shared_ptr<RecordingDns> dns) {
        dataplane::PipelineConfig c = node_config("node1");
        c.dns = std::move(dns);
        return c;
    }

    dataplane::FrameResult run_with_dns(PortId port, const Bytes& frame) {
        return with_dns_.process(port, frame, *fabric_, out_.fresh());
    }

    // A DHCP client message from blue .10's port, as a client without an address sends it.
    static Bytes dhcp_frame(const DhcpClientMessage& m, UdpFrameSpec spec = {}) {
        spec.src_mac = kBlue10Mac;
        return gateway::testing::udp_frame(spec, m.bytes());
    }
    // A DNS query from blue .10 to its gateway.
    static UdpFrameSpec dns_to_gateway() {
        UdpFrameSpec spec;
        spec.src_mac = kBlue10Mac;
        spec.dst_mac = kGatewayMac;
        spec.src = ipv4("10.0.0.10");
        spec.dst = ipv4("10.0.0.1");
        spec.src_port = 40000;
        spec.dst_port = 53;
        return spec;
    }
    static DhcpClientMessage client(std::uint8_t type) {
        DhcpClientMessage m;
        m.chaddr = kBlue10Mac;
        m.type(type).option(55, Bytes{1, 3, 6, 15, 26});
        return m;
    }
    // The DHCP message of emission 0.
    std::optional<wire::DhcpView> reply_message(Bytes& storage) const {
        storage = out_.frame(0);
        const auto eth = wire::EthernetView::parse(storage);
        if (!eth) return std::nullopt;
        const auto ip = wire::Ipv4View::parse(eth->payload());
        if (!ip || ip->source() != ipv4("10.0.0.1")) return std::nullopt;
        const auto udp = wire::UdpView::parse(ip->payload());
        if (!udp || udp->source_port() != 67) return std::nullopt;
        const auto dhcp = wire::DhcpView::parse(udp->payload());
        if (!dhcp) return std::nullopt;
        return *dhcp;
    }

    std::shared_ptr<RecordingDns> dns_;
    dataplane::Pipeline with_dns_;
};

TEST_F(GatewayServicesTest, ADiscoverFromTheEndpointGetsAnOfferOfItsAddressWithTheVpcMtu) {
    const auto r = run(kBlue10Port, dhcp_frame(client(msg::kDiscover)));
    ASSERT_EQ(r.verdict, Verdict::reply) << to_string(r.drop_reason);
    ASSERT_EQ(out_.emissions().size(), 1u);
    EXPECT_EQ(out_.emissions()[0].port, kBlue10Port);
    Bytes storage;
    const auto offer = reply_message(storage);
    ASSERT_TRUE(offer);
    EXPECT_EQ(offer->message_type(), msg::kOffer);
    EXPECT_EQ(offer->yiaddr().to_string(), "10.0.0.10");
    EXPECT_EQ(offer->ipv4_option(3)->to_string(), "10.0.0.1");  // router
    EXPECT_EQ(offer->ipv4_option(6)->to_string(), "10.0.0.1");  // resolver
    const auto mtu = offer->find(26);
    ASSERT_TRUE(mtu);
    ASSERT_EQ(mtu->value.size(), 2u);
    const std::uint32_t vpc_mtu = andromeda_vpc_inner_mtu(fabric_->vpcs()[0].mtu, fabric_->local().underlay_mtu);
    EXPECT_EQ((mtu->value[0] << 8) | mtu->value[1], static_cast<int>(vpc_mtu));
    const auto domain = offer->find(15);
    ASSERT_TRUE(domain);
    EXPECT_EQ(std::string(domain->value.begin(), domain->value.end()), "blue.internal");
    EXPECT_EQ(pipeline_.counters().dhcp_replies, 1u);
    EXPECT_EQ(pipeline_.dhcp().read([](const gateway::DhcpServer& s) { return s.counters().offers; }), 1u);
}

TEST_F(GatewayServicesTest, ARequestFromTheLeasedAddressIsAckedAndAnotherAddressIsNaked) {
    DhcpClientMessage renew = client(msg::kRequest);
    renew.ciaddr = ipv4("10.0.0.10");
    UdpFrameSpec unicast;
    unicast.src = ipv4("10.0.0.10");
    unicast.dst = ipv4("10.0.0.1");
    unicast.dst_mac = kGatewayMac;
    ASSERT_EQ(run(kBlue10Port, dhcp_frame(renew, unicast)).verdict, Verdict::reply);
    Bytes storage;
    EXPECT_EQ(reply_message(storage)->message_type(), msg::kAck);
    DhcpClientMessage other = client(msg::kRequest);
    other.address_option(50, ipv4("10.0.0.99"));
    ASSERT_EQ(run(kBlue10Port, dhcp_frame(other)).verdict, Verdict::reply);
    EXPECT_EQ(reply_message(storage)->message_type(), msg::kNak);
}

TEST_F(GatewayServicesTest, AnotherEndpointsMacOrASpoofedSourceGetsNoLease) {
    DhcpClientMessage stranger = client(msg::kDiscover);
    stranger.chaddr = mac("02:00:00:00:00:11");  // blue .11's MAC, asked from .10's port
    EXPECT_EQ(run(kBlue10Port, dhcp_frame(stranger)).drop_reason, DropReason::dhcp_no_reply);
    EXPECT_TRUE(out_.emissions().empty());
    EXPECT_EQ(pipeline_.dhcp().read([](const gateway::DhcpServer& s) { return s.counters().unknown_client; }), 1u);
    // From an address that is neither 0.0.0.0 nor the endpoint's it is no DHCP client's: the
    // broadcast is dropped as any tenant broadcast is, the unicast as a spoof.
    UdpFrameSpec spoofed;
    spoofed.src = ipv4("10.0.0.11");
    EXPECT_EQ(run(kBlue10Port, dhcp_frame(client(msg::kDiscover), spoofed)).drop_reason,
              DropReason::multicast_or_broadcast);
    spoofed.dst = ipv4("10.0.0.1");
    spoofed.dst_mac = kGatewayMac;
    EXPECT_EQ(run(kBlue10Port, dhcp_frame(client(msg::kDiscover), spoofed)).drop_reason,
              DropReason::spoofed_source_ip);
    EXPECT_EQ(pipeline_.counters().dhcp_replies, 0u);
    // A frame from another MAC than the port's never reaches the server.
    UdpFrameSpec wrong_mac;
    Bytes frame = gateway::testing::udp_frame(wrong_mac, client(msg::kDiscover).bytes());
    EXPECT_EQ(run(kBlue10Port, frame).drop_reason, DropReason::spoofed_source_mac);
}

TEST_F(GatewayServicesTest, DnsToTheGatewayGoesToTheDnsServiceWithTheVpcAndPort) {
    UdpFrameSpec spec = dns_to_gateway();
    const Bytes query = gateway::testing::udp_frame(spec, DnsQuery{}.bytes());
    const auto r = run_with_dns(kBlue10Port, query);
    EXPECT_EQ(r.verdict, Verdict::reply);
    EXPECT_EQ(r.emissions, 0u);  // the service answers later, into the port
    ASSERT_EQ(dns_->calls.size(), 1u);
    EXPECT_EQ(dns_->calls[0].vni, 100u);
    EXPECT_EQ(dns_->calls[0].port, kBlue10Port);
    EXPECT_EQ(dns_->calls[0].frame, query);
    EXPECT_EQ(with_dns_.counters().dns_queries, 1u);

    // Full: dropped and counted. Without a service at all: the same.
    dns_->accept = false;
    EXPECT_EQ(run_with_dns(kBlue10Port, query).drop_reason, DropReason::dns_not_served);
    EXPECT_EQ(run(kBlue10Port, query).drop_reason, DropReason::dns_not_served);

    // From a spoofed source, or to another address's port 53: not the gateway's DNS.
    spec.src = ipv4("10.0.0.11");
    EXPECT_EQ(run_with_dns(kBlue10Port, gateway::testing::udp_frame(spec, DnsQuery{}.bytes())).drop_reason,
              DropReason::spoofed_source_ip);
    spec.src = ipv4("10.0.0.10");
    spec.dst = ipv4("10.0.0.20");
    const auto routed = run_with_dns(kBlue10Port, gateway::testing::udp_frame(spec, DnsQuery{}.bytes()));
    EXPECT_EQ(routed.verdict, Verdict::forward);
    EXPECT_EQ(dns_->calls.size(), 2u);  // the refused one was still offered, nothing more
}

// DNS over TCP: every segment to the gateway's port 53 goes to the service (which holds the
// connection); TCP to another of the gateway's ports is not served, and port 53 of another
// address is routed.
TEST_F(GatewayServicesTest, TcpToTheGatewaysPort53GoesToTheDnsServiceAndOtherPortsAreNot) {
    test_support::Ipv4Frame spec;  // support/frame_builder.hpp: TCP with flags
    spec.src_mac = test_support::mac("02:00:00:00:00:10");  // kBlue10Mac
    spec.dst_mac = test_support::mac("02:00:00:00:00:ff");  // kGatewayMac
    spec.src = test_support::ipv4("10.0.0.10");
    spec.dst = test_support::ipv4("10.0.0.1");
    spec.protocol = test_support::protocol::kTcp;
    spec.tcp_flags = 0x02;  // SYN
    spec.payload = 0;
    spec.src_port = 40000;
    spec.dst_port = 53;
    const Bytes syn = test_support::ipv4_frame(spec);
    ASSERT_EQ(syn[14 + 9], 6) << "TCP";
    const auto r = run_with_dns(kBlue10Port, syn);
    EXPECT_EQ(r.verdict, Verdict::reply);
    ASSERT_EQ(dns_->calls.size(), 1u);
    EXPECT_EQ(dns_->calls[0].frame, syn);
    EXPECT_EQ(dns_->calls[0].port, kBlue10Port);

    spec.dst_port = 80;
    EXPECT_EQ(run_with_dns(kBlue10Port, test_support::ipv4_frame(spec)).drop_reason,
              DropReason::gateway_unsupported);
    spec.dst_port = 53;
    spec.dst = test_support::ipv4("10.0.0.20");
    EXPECT_EQ(run_with_dns(kBlue10Port, test_support::ipv4_frame(spec)).verdict, Verdict::forward);
    EXPECT_EQ(dns_->calls.size(), 1u);
}

TEST_F(GatewayServicesTest, ATenantFloodingTheGatewaysDnsGetsItsReplyBudgetAndNoMore) {
    const Bytes query = gateway::testing::udp_frame(dns_to_gateway(), DnsQuery{}.bytes());
    int limited = 0;
    for (int i = 0; i < 3000; ++i)
        if (run_with_dns(kBlue10Port, query).drop_reason == DropReason::gateway_reply_rate_limited) ++limited;
    // The budget (gateway_reply_rate: 1000 at once, 1000/s) passed, the rest refused before the queue.
    EXPECT_GE(dns_->calls.size(), 1000u);
    EXPECT_LT(dns_->calls.size(), 1500u);
    EXPECT_EQ(static_cast<std::size_t>(limited) + dns_->calls.size(), 3000u);
}

}  // namespace
}  // namespace andromeda::testing
