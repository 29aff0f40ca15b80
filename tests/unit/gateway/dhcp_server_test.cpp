// The DHCP server's rules (RFC 2131): which message gets which reply, how it is addressed, which
// options it carries, and who gets nothing.
#include <gtest/gtest.h>

#include "unit/gateway/dhcp_dns_world.hpp"
#include "wire/dhcp.hpp"
#include "wire/ethernet.hpp"
#include "wire/ipv4.hpp"
#include "wire/udp.hpp"

namespace andromeda::gateway {
namespace {

using namespace testing;
namespace msg = wire::dhcp_message_type;
namespace opt = wire::dhcp_option;

const wire::Ipv4Address kVm = ipv4("10.0.0.10");
const wire::Ipv4Address kGw = ipv4("10.0.0.1");
const wire::Ipv4Address kZero;
const wire::Ipv4Address kAllOnes = ipv4("255.255.255.255");
const wire::MacAddress kVmMac = mac("02:00:00:00:00:0a");

// A reply frame taken apart, every layer checked well-formed on the way.
struct Decoded {
    Bytes frame;
    wire::EthernetHeader ethernet;
    wire::Ipv4Header ip;
    wire::UdpHeader udp;
    std::optional<wire::DhcpView> dhcp;

    std::optional<std::uint32_t> u32(std::uint8_t code) const { return dhcp->u32_option(code); }
    std::vector<std::uint8_t> codes() const {
        std::vector<std::uint8_t> out;
        auto c = dhcp->options();
        while (const auto o = c.next()) out.push_back(o->code);
        return out;
    }
};

Decoded decode(Bytes frame) {
    Decoded d;
    d.frame = std::move(frame);
    const auto eth = wire::EthernetView::parse(d.frame);
    EXPECT_TRUE(eth);
    d.ethernet = eth->header();
    const auto ip = wire::Ipv4View::parse(eth->payload());
    EXPECT_TRUE(ip && ip->checksum_valid());
    d.ip = ip->header();
    const auto udp = wire::UdpView::parse(ip->payload());
    EXPECT_TRUE(udp && udp->checksum() != 0 && udp->checksum_valid(ip->source(), ip->destination()));
    d.udp = udp->header();
    const auto dhcp = wire::DhcpView::parse(udp->payload());
    EXPECT_TRUE(dhcp);
    EXPECT_GE(udp->payload().size(), wire::kBootpMinMessageLength);
    d.dhcp = *dhcp;
    return d;
}

class DhcpServerTest : public ::testing::Test {
protected:
    DhcpReply send(const DhcpClientMessage& m, const UdpFrameSpec& spec = {}) {
        out_.assign(1600, 0xa5);  // more than kDhcpReplyFrameRoom: room for a client's larger maximum
        const DhcpReply r = server_.handle(udp_frame(spec, m.bytes()), endpoint_, now_, out_);
        out_.resize(r.length);
        return r;
    }
    Decoded reply() const { return decode(out_); }

    DhcpEndpoint endpoint_ = endpoint();
    DhcpServer server_;
    std::uint64_t now_ = 100 * kSecond;
    Bytes out_;
};

UdpFrameSpec unicast_to_gateway() {
    UdpFrameSpec s;
    s.src = kVm;
    s.dst = kGw;
    s.dst_mac = mac("02:aa:00:00:00:01");
    return s;
}

TEST_F(DhcpServerTest, DiscoverIsOfferedTheEndpointsAddressWithEveryParameter) {
    const DhcpReply r = send(DhcpClientMessage{}.type(msg::kDiscover));
    ASSERT_EQ(r.outcome, DhcpOutcome::offered) << to_string(r.outcome);
    const Decoded d = reply();
    EXPECT_EQ(d.dhcp->op(), wire::dhcp_op::kBootReply);
    EXPECT_EQ(d.dhcp->xid(), 0x11223344u);
    EXPECT_EQ(d.dhcp->yiaddr(), kVm);
    EXPECT_EQ(d.dhcp->ciaddr(), kZero);
    EXPECT_EQ(d.dhcp->client_mac(), kVmMac);
    EXPECT_EQ(d.dhcp->message_type(), msg::kOffer);
    EXPECT_EQ(d.dhcp->ipv4_option(opt::kServerIdentifier), kGw);
    EXPECT_EQ(d.u32(opt::kLeaseTime), 3600u);
    EXPECT_EQ(d.u32(opt::kRenewalTime), 1800u);
    EXPECT_EQ(d.u32(opt::kRebindingTime), 3150u);
    EXPECT_EQ(d.u32(opt::kSubnetMask), 0xffffff00u);
    EXPECT_EQ(d.dhcp->ipv4_option(opt::kRouter), kGw);
    EXPECT_EQ(d.dhcp->ipv4_option(opt::kDomainNameServer), kGw);
    EXPECT_EQ(d.dhcp->u16_option(opt::kInterfaceMtu), 1450);
    const auto domain = d.dhcp->find(opt::kDomainName);
    ASSERT_TRUE(domain);
    EXPECT_EQ(std::string(domain->value.begin(), domain->value.end()), "blue.internal");
    // Without a parameter request list: the link's parameters, not the host name or broadcast address.
    EXPECT_EQ(d.codes(), (std::vector<std::uint8_t>{53, 54, 51, 58, 59, 1, 3, 6, 15, 26}));
    // No broadcast flag: unicast to yiaddr at chaddr, from the gateway, 67 -> 68.
    EXPECT_EQ(d.ethernet.destination, kVmMac);
    EXPECT_EQ(d.ethernet.source, vpc_gateway().mac);
    EXPECT_EQ(d.ip.source, kGw);
    EXPECT_EQ(d.ip.destination, kVm);
    EXPECT_EQ(d.udp.source_port, 67);
    EXPECT_EQ(d.udp.destination_port, 68);

    const auto lease = server_.leases().find(kVni, kVmMac);
    ASSERT_TRUE(lease);
    EXPECT_EQ(lease->state, DhcpLeaseState::offered);
    EXPECT_EQ(lease->address, kVm);
    EXPECT_EQ(lease->expires_ns, now_ + DhcpServerConfig{}.offer_hold_ns);
    EXPECT_EQ(lease->last_seen_ns, now_);
    EXPECT_EQ(lease->state_at(lease->expires_ns), DhcpLeaseState::expired);
    EXPECT_EQ(server_.counters().discovers, 1u);
    EXPECT_EQ(server_.counters().offers, 1u);
}

TEST_F(DhcpServerTest, TheBroadcastFlagGetsABroadcastReply) {
    DhcpClientMessage m;
    m.broadcast = true;
    ASSERT_EQ(send(m.type(msg::kDiscover)).outcome, DhcpOutcome::offered);
    const Decoded d = reply();
    EXPECT_EQ(d.ethernet.destination, mac("ff:ff:ff:ff:ff:ff"));
    EXPECT_EQ(d.ip.destination, kAllOnes);
    EXPECT_TRUE(d.dhcp->broadcast()) << "the flags are the client's";
}

TEST_F(DhcpServerTest, SelectingOurOfferIsAcknowledgedAndBound) {
    ASSERT_EQ(send(DhcpClientMessage{}
                       .type(msg::kRequest)
                       .address_option(opt::kServerIdentifier, kGw)
                       .address_option(opt::kRequestedAddress, kVm))
                  .outcome,
              DhcpOutcome::acked);
    const Decoded d = reply();
    EXPECT_EQ(d.dhcp->message_type(), msg::kAck);
    EXPECT_EQ(d.dhcp->yiaddr(), kVm);
    EXPECT_EQ(d.ip.destination, kVm);
    const auto lease = server_.leases().find(kVni, kVmMac);
    ASSERT_TRUE(lease);
    EXPECT_EQ(lease->state, DhcpLeaseState::bound);
    EXPECT_EQ(lease->expires_ns, now_ + 3600 * kSecond);
    EXPECT_EQ(lease->state_at(now_ + 3599 * kSecond), DhcpLeaseState::bound);
    EXPECT_EQ(lease->state_at(now_ + 3600 * kSecond), DhcpLeaseState::expired);
}

TEST_F(DhcpServerTest, SelectingAnotherAddressIsRefusedWithABroadcastNak) {
    ASSERT_EQ(send(DhcpClientMessage{}
                       .type(msg::kRequest)
                       .address_option(opt::kServerIdentifier, kGw)
                       .address_option(opt::kRequestedAddress, ipv4("10.0.0.77"))
                       .option(opt::kClientIdentifier, Bytes{1, 2, 0, 0, 0, 0, 10}))
                  .outcome,
              DhcpOutcome::nacked);
    const Decoded d = reply();
    EXPECT_EQ(d.dhcp->message_type(), msg::kNak);
    EXPECT_EQ(d.dhcp->yiaddr(), kZero);
    EXPECT_EQ(d.dhcp->ciaddr(), kZero);
    EXPECT_EQ(d.ip.destination, kAllOnes);
    EXPECT_EQ(d.ethernet.destination, mac("ff:ff:ff:ff:ff:ff"));
    // Only what RFC 2131 table 3 allows in a NAK: type, server id, client id, message.
    EXPECT_EQ(d.codes(), (std::vector<std::uint8_t>{53, 54, 61, 56}));
    EXPECT_EQ(server_.counters().naks, 1u);
    EXPECT_EQ(server_.leases().find(kVni, kVmMac)->naks, 1u);
}

TEST_F(DhcpServerTest, ARequestForAnotherServerGetsNothingAndIsRecorded) {
    const DhcpReply r = send(DhcpClientMessage{}
                                 .type(msg::kRequest)
                                 .address_option(opt::kServerIdentifier, ipv4("10.0.0.2"))
                                 .address_option(opt::kRequestedAddress, kVm));
    EXPECT_EQ(r.outcome, DhcpOutcome::other_server);
    EXPECT_FALSE(r.replied());
    EXPECT_EQ(server_.leases().find(kVni, kVmMac)->state, DhcpLeaseState::other_server);
    EXPECT_EQ(server_.counters().other_server, 1u);
}

TEST_F(DhcpServerTest, InitRebootIsJudgedByTheRequestedAddress) {
    EXPECT_EQ(send(DhcpClientMessage{}.type(msg::kRequest).address_option(opt::kRequestedAddress, kVm)).outcome,
              DhcpOutcome::acked);
    EXPECT_EQ(send(DhcpClientMessage{}.type(msg::kRequest).address_option(opt::kRequestedAddress, ipv4("192.168.1.5")))
                  .outcome,
              DhcpOutcome::nacked);
}

TEST_F(DhcpServerTest, RenewingAndRebindingAreJudgedByCiaddrAndAnsweredToIt) {
    DhcpClientMessage renew;
    renew.ciaddr = kVm;
    renew.broadcast = true;  // ignored: a client with ciaddr gets a unicast answer
    ASSERT_EQ(send(renew.type(msg::kRequest), unicast_to_gateway()).outcome, DhcpOutcome::acked);
    Decoded d = reply();
    EXPECT_EQ(d.ip.destination, kVm);
    EXPECT_EQ(d.ethernet.destination, kVmMac);
    EXPECT_EQ(d.dhcp->ciaddr(), kVm);
    EXPECT_EQ(d.dhcp->yiaddr(), kVm);

    DhcpClientMessage rebind;
    rebind.ciaddr = kVm;
    UdpFrameSpec broadcast;
    broadcast.src = kVm;
    ASSERT_EQ(send(rebind.type(msg::kRequest), broadcast).outcome, DhcpOutcome::acked);
    EXPECT_EQ(reply().ip.destination, kVm);

    DhcpClientMessage wrong;
    wrong.ciaddr = ipv4("10.0.0.11");
    EXPECT_EQ(send(wrong.type(msg::kRequest), broadcast).outcome, DhcpOutcome::nacked);
}

TEST_F(DhcpServerTest, ARequestForNoAddressIsIgnored) {
    EXPECT_EQ(send(DhcpClientMessage{}.type(msg::kRequest)).outcome, DhcpOutcome::ignored);
    EXPECT_TRUE(out_.empty());
}

TEST_F(DhcpServerTest, ReleaseAndDeclineAreRecordedWithoutAReply) {
    send(DhcpClientMessage{}.type(msg::kRequest).address_option(opt::kRequestedAddress, kVm));
    DhcpClientMessage release;
    release.ciaddr = kVm;
    now_ += kSecond;
    const DhcpReply r = send(release.type(msg::kRelease).address_option(opt::kServerIdentifier, kGw), unicast_to_gateway());
    EXPECT_EQ(r.outcome, DhcpOutcome::released);
    EXPECT_FALSE(r.replied());
    auto lease = server_.leases().find(kVni, kVmMac);
    EXPECT_EQ(lease->state, DhcpLeaseState::released);
    EXPECT_EQ(lease->expires_ns, 0u);
    EXPECT_EQ(lease->last_seen_ns, now_);
    EXPECT_EQ(lease->last_message_type, msg::kRelease);

    EXPECT_EQ(send(DhcpClientMessage{}.type(msg::kDecline).address_option(opt::kRequestedAddress, kVm)).outcome,
              DhcpOutcome::declined);
    EXPECT_EQ(server_.leases().find(kVni, kVmMac)->state, DhcpLeaseState::declined);
    EXPECT_EQ(server_.counters().releases, 1u);
    EXPECT_EQ(server_.counters().declines, 1u);
}

TEST_F(DhcpServerTest, InformGetsParametersButNoLease) {
    DhcpClientMessage inform;
    inform.ciaddr = kVm;
    ASSERT_EQ(send(inform.type(msg::kInform), unicast_to_gateway()).outcome, DhcpOutcome::informed);
    const Decoded d = reply();
    EXPECT_EQ(d.dhcp->message_type(), msg::kAck);
    EXPECT_EQ(d.dhcp->yiaddr(), kZero);
    EXPECT_EQ(d.dhcp->ciaddr(), kVm);
    EXPECT_EQ(d.ip.destination, kVm);
    EXPECT_FALSE(d.dhcp->find(opt::kLeaseTime));
    EXPECT_FALSE(d.dhcp->find(opt::kRenewalTime));
    EXPECT_FALSE(d.dhcp->find(opt::kRebindingTime));
    EXPECT_EQ(d.dhcp->ipv4_option(opt::kRouter), kGw);
    EXPECT_EQ(server_.leases().find(kVni, kVmMac)->state, DhcpLeaseState::informed);

    DhcpClientMessage stranger;
    stranger.ciaddr = ipv4("10.0.0.50");
    EXPECT_EQ(send(stranger.type(msg::kInform)).outcome, DhcpOutcome::ignored);
}

TEST_F(DhcpServerTest, TheParameterRequestListChoosesAndOrdersTheParameters) {
    // 2 (time offset) and 42 (NTP) are not served; 3 is asked twice; 12 and 28 only on request.
    ASSERT_EQ(send(DhcpClientMessage{}.type(msg::kDiscover).option(opt::kParameterRequestList, Bytes{26, 2, 3, 12, 3, 28, 42}))
                  .outcome,
              DhcpOutcome::offered);
    const Decoded d = reply();
    EXPECT_EQ(d.codes(), (std::vector<std::uint8_t>{53, 54, 51, 58, 59, 26, 3, 12, 28}));
    const auto host = d.dhcp->find(opt::kHostName);
    EXPECT_EQ(std::string(host->value.begin(), host->value.end()), "web");
    EXPECT_EQ(d.dhcp->ipv4_option(opt::kBroadcastAddress), ipv4("10.0.0.255"));
}

TEST_F(DhcpServerTest, ParametersWithoutAValueAreLeftOut) {
    endpoint_.dns_server = kZero;
    endpoint_.mtu = 0;
    endpoint_.domain_name.clear();
    ASSERT_EQ(send(DhcpClientMessage{}.type(msg::kDiscover)).outcome, DhcpOutcome::offered);
    EXPECT_EQ(reply().codes(), (std::vector<std::uint8_t>{53, 54, 51, 58, 59, 1, 3}));
}

TEST_F(DhcpServerTest, TheClientsMaximumMessageSizeBoundsTheReply) {
    endpoint_.domain_name = std::string(200, 'd');
    endpoint_.host_name = std::string(200, 'h');
    const Bytes prl{1, 3, 6, 15, 12, 26};
    // Without option 57, 576 bytes of IP datagram: the host name does not fit after the domain.
    ASSERT_EQ(send(DhcpClientMessage{}.type(msg::kDiscover).option(opt::kParameterRequestList, prl)).outcome,
              DhcpOutcome::offered);
    Decoded d = reply();
    EXPECT_LE(d.ip.total_length, 576);
    EXPECT_TRUE(d.dhcp->find(opt::kDomainName));
    EXPECT_FALSE(d.dhcp->find(opt::kHostName));
    EXPECT_TRUE(d.dhcp->find(opt::kInterfaceMtu)) << "a smaller parameter after it still fits";
    // With 1500 both fit; below 576 the option is not legal and 576 holds.
    ASSERT_EQ(send(DhcpClientMessage{}.type(msg::kDiscover).option(opt::kParameterRequestList, prl).option(
                       opt::kMaxMessageSize, Bytes{0x05, 0xdc}))
                  .outcome,
              DhcpOutcome::offered);
    d = reply();
    EXPECT_GT(d.ip.total_length, 576);
    EXPECT_TRUE(d.dhcp->find(opt::kHostName));
    ASSERT_EQ(send(DhcpClientMessage{}.type(msg::kDiscover).option(opt::kParameterRequestList, prl).option(
                       opt::kMaxMessageSize, Bytes{0x01, 0x00}))
                  .outcome,
              DhcpOutcome::offered);
    EXPECT_LE(reply().ip.total_length, 576);
}

TEST_F(DhcpServerTest, OnlyTheEndpointIsAnswered) {
    DhcpClientMessage other;
    other.chaddr = mac("02:00:00:00:00:99");
    EXPECT_EQ(send(other.type(msg::kDiscover)).outcome, DhcpOutcome::unknown_client);
    UdpFrameSpec spoofed;  // chaddr is the endpoint's, the frame is someone else's
    spoofed.src_mac = mac("02:00:00:00:00:99");
    EXPECT_EQ(send(DhcpClientMessage{}.type(msg::kDiscover), spoofed).outcome, DhcpOutcome::unknown_client);
    DhcpClientMessage token_ring;
    token_ring.htype = 6;
    EXPECT_EQ(send(token_ring.type(msg::kDiscover)).outcome, DhcpOutcome::unknown_client);
    EXPECT_TRUE(out_.empty());
    EXPECT_EQ(server_.counters().unknown_client, 3u);
    EXPECT_EQ(server_.counters().discovers, 0u);
    EXPECT_EQ(server_.leases().size(), 0u);
}

TEST_F(DhcpServerTest, EachClientIsRateLimited) {
    DhcpServerConfig config;
    config.rate = {2, 3, 16};
    DhcpServer server(config);
    const Bytes frame = udp_frame({}, DhcpClientMessage{}.type(msg::kDiscover).bytes());
    Bytes out(kDhcpReplyFrameRoom);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(server.handle(frame, endpoint_, now_, out).outcome, DhcpOutcome::offered) << i;
    EXPECT_EQ(server.handle(frame, endpoint_, now_, out).outcome, DhcpOutcome::rate_limited);
    EXPECT_EQ(server.handle(frame, endpoint_, now_ + kSecond / 2, out).outcome, DhcpOutcome::offered);
    EXPECT_EQ(server.counters().rate_limited, 1u);
    // Another client (another port's endpoint) has its own bucket.
    DhcpEndpoint other = endpoint_;
    other.mac = mac("02:00:00:00:00:0b");
    DhcpClientMessage m;
    m.chaddr = other.mac;
    UdpFrameSpec spec;
    spec.src_mac = other.mac;
    EXPECT_EQ(server.handle(udp_frame(spec, m.type(msg::kDiscover).bytes()), other, now_ + kSecond / 2, out).outcome,
              DhcpOutcome::offered);
}

TEST_F(DhcpServerTest, WhatIsNotADhcpRequestToThisServerIsNamed) {
    const Bytes discover = DhcpClientMessage{}.type(msg::kDiscover).bytes();
    UdpFrameSpec to_client_port;
    to_client_port.dst_port = 68;
    EXPECT_EQ(send(DhcpClientMessage{}.type(msg::kDiscover), to_client_port).outcome, DhcpOutcome::not_dhcp);
    UdpFrameSpec elsewhere = unicast_to_gateway();
    elsewhere.dst = ipv4("10.0.0.2");
    EXPECT_EQ(send(DhcpClientMessage{}.type(msg::kDiscover), elsewhere).outcome, DhcpOutcome::not_dhcp);
    UdpFrameSpec fragment;
    fragment.more_fragments = true;
    EXPECT_EQ(send(DhcpClientMessage{}.type(msg::kDiscover), fragment).outcome, DhcpOutcome::not_dhcp);

    Bytes corrupt = udp_frame({}, discover);
    corrupt.back() ^= 0x01;
    out_.assign(kDhcpReplyFrameRoom, 0);
    EXPECT_EQ(server_.handle(corrupt, endpoint_, now_, out_).outcome, DhcpOutcome::malformed);
    EXPECT_EQ(send(DhcpClientMessage{}).outcome, DhcpOutcome::malformed) << "BOOTP: no message type";
    DhcpClientMessage truncated_option = DhcpClientMessage{}.type(msg::kDiscover);
    truncated_option.end = false;
    truncated_option.options.emplace_back(55, Bytes{});
    Bytes broken = truncated_option.bytes();
    broken.back() = 9;  // option 55's length byte now claims 9 bytes that are not there
    out_.assign(kDhcpReplyFrameRoom, 0);
    EXPECT_EQ(server_.handle(udp_frame({}, broken), endpoint_, now_, out_).outcome, DhcpOutcome::malformed);

    DhcpClientMessage reply_op;
    reply_op.op = 2;
    EXPECT_EQ(send(reply_op.type(msg::kDiscover)).outcome, DhcpOutcome::ignored);
    DhcpClientMessage relayed;
    relayed.giaddr = ipv4("10.9.9.9");
    EXPECT_EQ(send(relayed.type(msg::kDiscover)).outcome, DhcpOutcome::ignored);
    EXPECT_EQ(send(DhcpClientMessage{}.type(msg::kOffer)).outcome, DhcpOutcome::ignored);
    EXPECT_EQ(server_.counters().malformed, 3u);
    EXPECT_EQ(server_.counters().ignored, 3u);
}

TEST_F(DhcpServerTest, ATaggedRequestGetsATaggedReply) {
    UdpFrameSpec tagged;
    tagged.tags = {{wire::ethertype::kVlan, 3, false, 42}};
    ASSERT_EQ(send(DhcpClientMessage{}.type(msg::kDiscover), tagged).outcome, DhcpOutcome::offered);
    const Decoded d = reply();
    ASSERT_EQ(d.ethernet.tag_count, 1);
    EXPECT_EQ(d.ethernet.tags[0].vlan_id, 42);
    EXPECT_EQ(d.ethernet.tags[0].priority, 3);
}

TEST_F(DhcpServerTest, ASmallBufferIsNoRoomNotAnOverflow) {
    for (const std::size_t size : {std::size_t{0}, std::size_t{64}, std::size_t{341}}) {
        Bytes small(size);
        const DhcpReply r =
            server_.handle(udp_frame({}, DhcpClientMessage{}.type(msg::kDiscover).bytes()), endpoint_, now_, small);
        EXPECT_EQ(r.outcome, DhcpOutcome::no_room) << size;
        EXPECT_FALSE(r.replied());
    }
    Bytes exact(342);  // 14 + 20 + 8 + 300
    EXPECT_TRUE(server_.handle(udp_frame({}, DhcpClientMessage{}.type(msg::kDiscover).bytes()), endpoint_, now_, exact)
                    .replied());
}

TEST(DhcpLeaseTableTest, EntriesAreKeptPerScopeAndMacAndTheLeastRecentIsEvicted) {
    DhcpLeaseTable table(4);  // one set of four ways
    for (std::uint8_t i = 0; i < 4; ++i) table.record(kVni, mac("02:00:00:00:00:0" + std::to_string(i)), 10 + i);
    EXPECT_EQ(table.size(), 4u);
    table.record(kVni, mac("02:00:00:00:00:00"), 50);  // seen again: now the most recent
    table.record(kVni + 1, mac("02:00:00:00:00:00"), 60);  // another VPC: another client
    EXPECT_EQ(table.size(), 4u);
    EXPECT_EQ(table.evictions(), 1u);
    EXPECT_FALSE(table.find(kVni, mac("02:00:00:00:00:01"))) << "the least recently seen went";
    EXPECT_TRUE(table.find(kVni, mac("02:00:00:00:00:00")));
    EXPECT_TRUE(table.find(kVni + 1, mac("02:00:00:00:00:00")));
    EXPECT_EQ(table.list().size(), 4u);
}

}  // namespace
}  // namespace andromeda::gateway
