// libFuzzer target: the DHCP codec and the DHCP server under arbitrary messages.
//
// Input: byte 0 picks the use of the rest. Bit 0 clear: a DHCP message for DhcpView (options
// walked, concatenated, typed). Bit 0 set: the UDP payload of a frame from the endpoint's tenant
// port, 68 -> 67, checksums right (bit 1: to the gateway address instead of broadcast; bit 2:
// from ciaddr's address; bit 3: VLAN-tagged), handed to a fresh DhcpServer twice, the second
// time a minute later.
// Oracles (abort on violation): every option lies inside the message; a reply is a well-formed
// frame (checksums), its DHCP message parses, is a BOOTREPLY to the endpoint's MAC of type OFFER,
// ACK or NAK, at least 300 bytes and within the endpoint's MTU.
// Seeds: tests/fuzz/corpus/dhcp, the golden requests of tests/data/gateway (byte 0 = 0x01).
#include <cstddef>
#include <cstdint>

#include "fuzz/gateway_fuzz_support.hpp"
#include "gateway/dhcp_server.hpp"
#include "wire/dhcp.hpp"

namespace {

using namespace andromeda;
using fuzzing::violation;

constexpr const char* kName = "dhcp_fuzz";

void walk(wire::ByteSpan message) {
    const auto v = wire::DhcpView::parse(message);
    if (!v) {
        if (v.error().kind == wire::DhcpErrorKind::none || v.error().offset > message.size())
            violation(kName, "a refusal without a kind, or past the message");
        return;
    }
    auto cursor = v->options();
    std::size_t options = 0;
    while (const auto o = cursor.next()) {
        if (o->value.data() < message.data() || o->value.data() + o->value.size() > message.data() + message.size())
            violation(kName, "an option outside the message");
        if (++options > message.size()) violation(kName, "the option cursor does not end");
    }
    std::uint8_t scratch[255];
    (void)v->concatenated(wire::dhcp_option::kParameterRequestList, scratch);
    (void)v->message_type();
    (void)v->ipv4_option(wire::dhcp_option::kRequestedAddress);
    (void)v->u16_option(wire::dhcp_option::kMaxMessageSize);
}

gateway::DhcpEndpoint endpoint() {
    gateway::DhcpEndpoint e;
    e.scope = 100;
    e.mac = fuzzing::kTenantMac;
    e.address = fuzzing::kTenantIp;
    e.gateway = fuzzing::kGateway;
    e.dns_server = fuzzing::kGateway.ipv4;
    e.mtu = 1450;
    e.lease_seconds = 3600;
    e.domain_name = "blue.internal";
    e.host_name = "web";
    return e;
}

void check_reply(wire::ByteSpan frame, const gateway::DhcpEndpoint& e) {
    const wire::ByteSpan message = fuzzing::checked_reply(kName, frame, wire::kDhcpServerPort);
    const auto dhcp = wire::DhcpView::parse(message);
    if (!dhcp) violation(kName, "a reply that does not parse");
    if (dhcp->op() != wire::dhcp_op::kBootReply || dhcp->client_mac() != e.mac) violation(kName, "a reply to someone else");
    const auto type = dhcp->message_type();
    if (!type || (*type != wire::dhcp_message_type::kOffer && *type != wire::dhcp_message_type::kAck &&
                  *type != wire::dhcp_message_type::kNak))
        violation(kName, "a reply of a type a server never sends");
    if (message.size() < wire::kBootpMinMessageLength || message.size() + 28 > e.mtu)
        violation(kName, "a reply shorter than BOOTP's 300 bytes or longer than the MTU");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::uint8_t mode = data[0];
    const wire::ByteSpan rest(data + 1, size - 1);
    if ((mode & 1) == 0) {
        walk(rest);
        return 0;
    }
    fuzzing::TenantDatagram d;
    d.source = (mode & 4) != 0 ? fuzzing::kTenantIp : wire::Ipv4Address(0);
    d.destination = (mode & 2) != 0 ? fuzzing::kGateway.ipv4 : wire::Ipv4Address(0xffffffff);
    d.source_port = wire::kDhcpClientPort;
    d.destination_port = wire::kDhcpServerPort;
    d.tagged = (mode & 8) != 0;
    const fuzzing::Bytes frame = fuzzing::tenant_frame(d, rest);
    const gateway::DhcpEndpoint e = endpoint();
    gateway::DhcpServerConfig config;  // small tables: a fresh server per input stays cheap
    config.max_leases = 8;
    config.rate.max_sources = 8;
    gateway::DhcpServer server(config);
    fuzzing::Bytes out(gateway::kDhcpReplyFrameRoom);
    for (const std::uint64_t now : {std::uint64_t{1'000'000'000}, std::uint64_t{61'000'000'000}}) {
        const gateway::DhcpReply r = server.handle(frame, e, now, out);
        if (r.length > out.size()) violation(kName, "a reply longer than its buffer");
        if (r.replied()) check_reply(wire::ByteSpan(out).first(r.length), e);
    }
    return 0;
}
