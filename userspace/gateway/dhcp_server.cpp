#include "gateway/dhcp_server.hpp"

#include <algorithm>
#include <array>
#include <bitset>
#include <optional>

#include "gateway/udp_reply.hpp"
#include "wire/dhcp.hpp"
#include "wire/ethernet.hpp"
#include "wire/ip_protocol.hpp"
#include "wire/ipv4.hpp"
#include "wire/udp.hpp"

namespace andromeda::gateway {

namespace {

namespace opt = wire::dhcp_option;
namespace msg = wire::dhcp_message_type;

constexpr wire::Ipv4Address kLimitedBroadcast(0xffffffff);
const wire::MacAddress kBroadcastMac({0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
constexpr std::size_t kIpUdpHeaders = 28;
constexpr std::string_view kNakMessage = "requested address is not this client's";
// Without a parameter request list, the parameters a client needs to use its link.
constexpr std::uint8_t kDefaultParameters[] = {opt::kSubnetMask, opt::kRouter, opt::kDomainNameServer,
                                               opt::kDomainName, opt::kInterfaceMtu};

std::uint32_t mask_of(std::uint8_t prefix_length) noexcept {
    return prefix_length == 0 ? 0 : ~std::uint32_t{0} << (32 - std::min<std::uint8_t>(prefix_length, 32));
}

wire::ByteSpan text_bytes(std::string_view text) noexcept {
    return wire::ByteSpan(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
}

// Adds parameter `code` when the server has it and it fits; parameters it has no value for are
// left out (RFC 2131 4.3.1: "MUST omit any parameters it cannot provide").
void add_parameter(wire::DhcpBuilder& b, std::uint8_t code, const DhcpEndpoint& e) noexcept {
    switch (code) {
        case opt::kSubnetMask: b.add_u32(code, mask_of(e.prefix_length)); break;
        case opt::kRouter: b.add_ipv4(code, e.gateway.ipv4); break;
        case opt::kDomainNameServer:
            if (e.dns_server.value() != 0) b.add_ipv4(code, e.dns_server);
            break;
        case opt::kHostName:
            if (!e.host_name.empty() && e.host_name.size() <= 255) b.add(code, text_bytes(e.host_name));
            break;
        case opt::kDomainName:
            if (!e.domain_name.empty() && e.domain_name.size() <= 255) b.add(code, text_bytes(e.domain_name));
            break;
        case opt::kInterfaceMtu:
            if (e.mtu >= 68) b.add_u16(code, e.mtu);  // RFC 2132 5.1: 68 is the least
            break;
        case opt::kBroadcastAddress:
            b.add_u32(code, e.address.value() | ~mask_of(e.prefix_length));
            break;
        default: break;
    }
}

// The longest DHCP message the reply may be: the client's maximum message size (an IP datagram
// size, RFC 2132 9.10; below 576 it is not legal and ignored) and the endpoint's MTU.
std::size_t message_limit(const wire::DhcpView& request, const DhcpEndpoint& e) noexcept {
    std::size_t datagram = wire::kDhcpMinMaxDatagram;
    if (const auto mms = request.u16_option(opt::kMaxMessageSize); mms && *mms >= wire::kDhcpMinMaxDatagram)
        datagram = *mms;
    if (e.mtu >= kIpUdpHeaders + wire::kBootpMinMessageLength) datagram = std::min<std::size_t>(datagram, e.mtu);
    return datagram - kIpUdpHeaders;
}

}  // namespace

struct DhcpRequestFrame {
    std::optional<wire::EthernetView> ethernet;
    std::optional<wire::DhcpView> dhcp;
    std::uint8_t type = 0;
    DhcpOutcome refusal = DhcpOutcome::not_dhcp;  // why, when dhcp is empty
};

namespace {

// Everything before the message's meaning: is this a well-formed DHCP request to this server?
DhcpRequestFrame parse_request(wire::ByteSpan frame, const DhcpEndpoint& e) noexcept {
    DhcpRequestFrame r;
    const auto ethernet = wire::EthernetView::parse(frame);
    if (!ethernet || ethernet->ethertype() != wire::ethertype::kIpv4) return r;
    const auto ip = wire::Ipv4View::parse(ethernet->payload());
    if (!ip || ip->protocol() != wire::ip_protocol::kUdp || ip->is_fragment()) return r;
    if (ip->destination() != kLimitedBroadcast && ip->destination() != e.gateway.ipv4) return r;
    const auto udp = wire::UdpView::parse(ip->payload());
    if (!udp || udp->destination_port() != wire::kDhcpServerPort) return r;
    r.refusal = DhcpOutcome::malformed;
    if (!ip->checksum_valid() || !udp->checksum_valid(ip->source(), ip->destination())) return r;
    const auto dhcp = wire::DhcpView::parse(udp->payload());
    if (!dhcp) return r;
    if (dhcp->op() != wire::dhcp_op::kBootRequest) {
        r.refusal = DhcpOutcome::ignored;
        return r;
    }
    const auto type = dhcp->message_type();
    if (!type) return r;  // BOOTP: this server speaks DHCP only
    r.ethernet = *ethernet;
    r.dhcp = *dhcp;
    r.type = *type;
    return r;
}

}  // namespace

DhcpServer::DhcpServer(const DhcpServerConfig& config)
    : config_(config), limiter_(config.rate), leases_(config.max_leases) {}

DhcpReply DhcpServer::count(DhcpOutcome outcome) noexcept {
    switch (outcome) {
        case DhcpOutcome::offered: ++counters_.offers; break;
        case DhcpOutcome::acked:
        case DhcpOutcome::informed: ++counters_.acks; break;
        case DhcpOutcome::nacked: ++counters_.naks; break;
        case DhcpOutcome::unknown_client: ++counters_.unknown_client; break;
        case DhcpOutcome::rate_limited: ++counters_.rate_limited; break;
        case DhcpOutcome::malformed: ++counters_.malformed; break;
        case DhcpOutcome::other_server: ++counters_.other_server; break;
        case DhcpOutcome::ignored: ++counters_.ignored; break;
        case DhcpOutcome::no_room: ++counters_.no_room; break;
        case DhcpOutcome::released:
        case DhcpOutcome::declined:
        case DhcpOutcome::not_dhcp: break;
    }
    return {outcome, 0};
}

DhcpReply DhcpServer::handle(wire::ByteSpan frame, const DhcpEndpoint& endpoint, std::uint64_t now_ns,
                             wire::MutableByteSpan out) noexcept {
    const DhcpRequestFrame request = parse_request(frame, endpoint);
    if (!request.dhcp) return count(request.refusal);
    const wire::DhcpView& dhcp = *request.dhcp;
    const bool ethernet_client = dhcp.hardware_type() == 1 && dhcp.hardware_length() == 6;
    if (!ethernet_client || dhcp.client_mac() != endpoint.mac || request.ethernet->source() != endpoint.mac)
        return count(DhcpOutcome::unknown_client);
    switch (request.type) {
        case msg::kDiscover: ++counters_.discovers; break;
        case msg::kRequest: ++counters_.requests; break;
        case msg::kDecline: ++counters_.declines; break;
        case msg::kRelease: ++counters_.releases; break;
        case msg::kInform: ++counters_.informs; break;
        default: return count(DhcpOutcome::ignored);  // OFFER, ACK, NAK and unknown types
    }
    if (dhcp.giaddr().value() != 0) return count(DhcpOutcome::ignored);  // relayed: not from this link
    if (!limiter_.allow(RateLimitKey::of(endpoint.scope, endpoint.mac), now_ns))
        return count(DhcpOutcome::rate_limited);
    return answer(request, endpoint, now_ns, out);
}

DhcpReply DhcpServer::answer(const DhcpRequestFrame& request, const DhcpEndpoint& e, std::uint64_t now_ns,
                             wire::MutableByteSpan out) noexcept {
    DhcpLease& lease = leases_.record(e.scope, e.mac, now_ns);
    lease.address = e.address;
    lease.last_message_type = request.type;
    switch (request.type) {
        case msg::kDiscover: {
            const DhcpReply r = reply(request, e, msg::kOffer, out);
            if (r.replied()) {
                lease.state = DhcpLeaseState::offered;
                lease.expires_ns = now_ns + config_.offer_hold_ns;
            }
            return r;
        }
        case msg::kRequest: return answer_request(request, e, lease, now_ns, out);
        case msg::kDecline:
            lease.state = DhcpLeaseState::declined;
            lease.expires_ns = 0;
            return count(DhcpOutcome::declined);
        case msg::kRelease:
            lease.state = DhcpLeaseState::released;
            lease.expires_ns = 0;
            return count(DhcpOutcome::released);
        default: {  // INFORM: only from the address the client should have
            if (request.dhcp->ciaddr() != e.address) return count(DhcpOutcome::ignored);
            const DhcpReply r = reply(request, e, msg::kAck, out);
            if (r.replied() && lease.state_at(now_ns) != DhcpLeaseState::bound) {
                lease.state = DhcpLeaseState::informed;
                lease.expires_ns = 0;
            }
            return r;
        }
    }
}

// RFC 2131 4.3.2: SELECTING names a server (54) and the offered address (50); INIT-REBOOT names
// only the address (50); RENEWING and REBINDING name neither and fill in ciaddr.
DhcpReply DhcpServer::answer_request(const DhcpRequestFrame& request, const DhcpEndpoint& e, DhcpLease& lease,
                                     std::uint64_t now_ns, wire::MutableByteSpan out) noexcept {
    const wire::DhcpView& dhcp = *request.dhcp;
    const auto server = dhcp.ipv4_option(opt::kServerIdentifier);
    if (server && *server != e.gateway.ipv4) {
        lease.state = DhcpLeaseState::other_server;
        lease.expires_ns = 0;
        return count(DhcpOutcome::other_server);
    }
    const auto requested = dhcp.ipv4_option(opt::kRequestedAddress);
    const wire::Ipv4Address asked = requested ? *requested : dhcp.ciaddr();
    if (asked.value() == 0) return count(DhcpOutcome::ignored);  // asks for no address at all
    if (asked != e.address) {
        const DhcpReply r = reply(request, e, msg::kNak, out);
        if (r.replied()) ++lease.naks;
        return r;
    }
    const DhcpReply r = reply(request, e, msg::kAck, out);
    if (r.replied()) {
        lease.state = DhcpLeaseState::bound;
        lease.expires_ns = now_ns + std::uint64_t{e.lease_seconds} * 1'000'000'000;
    }
    return r;
}

DhcpReply DhcpServer::reply(const DhcpRequestFrame& request, const DhcpEndpoint& e, std::uint8_t type,
                            wire::MutableByteSpan out) noexcept {
    const wire::DhcpView& dhcp = *request.dhcp;
    const bool nak = type == msg::kNak;
    const bool inform = request.type == msg::kInform;
    const wire::Ipv4Address ciaddr = dhcp.ciaddr();

    // RFC 2131 4.1, for a client on this link (giaddr 0).
    UdpReplyAddressing a;
    a.ethernet = request.ethernet->header();
    a.ethernet.source = e.gateway.mac;
    a.source = e.gateway.ipv4;
    a.source_port = wire::kDhcpServerPort;
    a.destination_port = wire::kDhcpClientPort;
    const bool broadcast = nak || (ciaddr.value() == 0 && dhcp.broadcast());
    a.destination = broadcast ? kLimitedBroadcast : ciaddr.value() != 0 ? ciaddr : e.address;
    a.ethernet.destination = broadcast ? kBroadcastMac : e.mac;

    wire::DhcpFixedFields f;
    f.xid = dhcp.xid();
    f.flags = dhcp.flags();
    f.ciaddr = type == msg::kAck ? ciaddr : wire::Ipv4Address();
    f.yiaddr = nak || inform ? wire::Ipv4Address() : e.address;
    f.giaddr = dhcp.giaddr();
    std::copy(dhcp.chaddr().begin(), dhcp.chaddr().end(), f.chaddr.begin());

    const std::size_t offset = udp_reply_payload_offset(a.ethernet);
    if (out.size() < offset + wire::kBootpMinMessageLength) return count(DhcpOutcome::no_room);
    wire::DhcpBuilder b(out.subspan(offset), f, message_limit(dhcp, e));
    b.add_u8(opt::kMessageType, type);
    b.add_ipv4(opt::kServerIdentifier, e.gateway.ipv4);
    std::array<std::uint8_t, 255> scratch;
    if (const auto client_id = dhcp.concatenated(opt::kClientIdentifier, scratch))
        b.add(opt::kClientIdentifier, *client_id);  // RFC 6842
    if (nak) {
        b.add(opt::kMessage, text_bytes(kNakMessage));
    } else {
        if (!inform) {
            b.add_u32(opt::kLeaseTime, e.lease_seconds);
            b.add_u32(opt::kRenewalTime, e.lease_seconds / 2);
            b.add_u32(opt::kRebindingTime, static_cast<std::uint32_t>(std::uint64_t{e.lease_seconds} * 7 / 8));
        }
        std::bitset<256> added;
        const auto asked = dhcp.concatenated(opt::kParameterRequestList, scratch);
        for (const std::uint8_t code : asked ? *asked : wire::ByteSpan(kDefaultParameters)) {
            if (added[code]) continue;  // RFC 2131 4.3.1: each parameter once
            added[code] = true;
            add_parameter(b, code, e);
        }
    }
    const std::size_t message_length = b.finish(wire::kBootpMinMessageLength);
    const std::size_t length = message_length == 0 ? 0 : finish_udp_reply(out, a, message_length);
    if (length == 0) return count(DhcpOutcome::no_room);
    const DhcpOutcome outcome = nak                  ? DhcpOutcome::nacked
                                : inform             ? DhcpOutcome::informed
                                : type == msg::kOffer ? DhcpOutcome::offered
                                                     : DhcpOutcome::acked;
    count(outcome);
    return {outcome, length};
}

std::string_view to_string(DhcpOutcome outcome) noexcept {
    switch (outcome) {
        case DhcpOutcome::offered: return "offered";
        case DhcpOutcome::acked: return "acked";
        case DhcpOutcome::nacked: return "nacked";
        case DhcpOutcome::informed: return "informed";
        case DhcpOutcome::released: return "released";
        case DhcpOutcome::declined: return "declined";
        case DhcpOutcome::not_dhcp: return "not_dhcp";
        case DhcpOutcome::malformed: return "malformed";
        case DhcpOutcome::unknown_client: return "unknown_client";
        case DhcpOutcome::rate_limited: return "rate_limited";
        case DhcpOutcome::other_server: return "other_server";
        case DhcpOutcome::ignored: return "ignored";
        case DhcpOutcome::no_room: return "no_room";
    }
    return "unknown";
}

}  // namespace andromeda::gateway
