// DHCPv4 on the distributed gateway (RFC 2131, options RFC 2132): every host answers the
// endpoints on its own tenant ports with the static lease the fabric gives them (the endpoint's
// MAC -> its IP), from the VPC gateway's MAC and address.
//
//   DISCOVER -> OFFER of the endpoint's address
//   REQUEST  -> ACK, or NAK when the address asked for is not the endpoint's (RFC 2131 4.3.2:
//               SELECTING with our server identifier, INIT-REBOOT by option 50, RENEWING and
//               REBINDING by ciaddr); no reply when the client selected another server
//   DECLINE, RELEASE -> recorded, no reply
//   INFORM   -> ACK with the parameters and no lease (no yiaddr, no lease times)
//
// Options: subnet mask (1), router (3), DNS server (6), host name (12), domain name (15),
// interface MTU (26: the VPC MTU, so a guest never needs PMTUD inside its VPC), broadcast address
// (28), lease time (51), T1/T2 (58/59), server identifier (54), the client identifier echoed
// (61, RFC 6842). With a parameter request list (55) a client gets the parameters it asked for,
// in its order; without one, 1, 3, 6, 15 and 26. Replies respect the client's maximum message
// size (57) and the endpoint's MTU, and are padded to BOOTP's 300 bytes. Addressing follows RFC
// 2131 4.1: NAK broadcast; to ciaddr when the client has one; broadcast when it set the broadcast
// flag; otherwise unicast to yiaddr at chaddr.
//
// A client whose MAC (chaddr or the frame's source) is not the endpoint's gets nothing and is
// counted; so does one over its rate. Relayed messages (giaddr set) are not this link's and are
// ignored. One server per worker (or one behind a lock): not thread-safe. Nothing allocates per
// message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "gateway/dhcp_leases.hpp"
#include "gateway/gateway_address.hpp"
#include "gateway/rate_limiter.hpp"
#include "wire/addresses.hpp"
#include "wire/bytes.hpp"

namespace andromeda::gateway {

// What the fabric says about the endpoint behind one tenant port: everything its answers hold.
// Built when the fabric changes, not per message.
struct DhcpEndpoint {
    std::uint32_t scope = 0;          // the VPC's VNI (lease table and rate-limit keys)
    wire::MacAddress mac;             // the only client answered on this port
    wire::Ipv4Address address;        // its static lease (yiaddr)
    std::uint8_t prefix_length = 24;  // subnet mask (1) and broadcast address (28)
    GatewayAddress gateway;           // router (3), server identifier (54), the replies' source
    wire::Ipv4Address dns_server;     // option 6, normally the gateway; 0.0.0.0 leaves it out
    std::uint16_t mtu = 0;            // option 26, the VPC MTU; 0 leaves it out
    std::uint32_t lease_seconds = 86400;  // option 51; T1 is half of it, T2 seven eighths (RFC 2131 4.4.5)
    std::string domain_name;          // option 15, e.g. "blue.internal"; empty leaves it out
    std::string host_name;            // option 12 when asked for (the endpoint's name); empty leaves it out
};

struct DhcpServerConfig {
    RateLimiterConfig rate{4, 8, 1024};  // messages per second per client, burst, clients tracked
    std::size_t max_leases = 4096;       // lease-table entries
    std::uint64_t offer_hold_ns = 60'000'000'000;  // how long an offer shows as "offered"
};

enum class DhcpOutcome : std::uint8_t {
    offered,         // a reply frame is in `out`: OFFER
    acked,           // ACK to a REQUEST
    nacked,          // NAK to a REQUEST
    informed,        // ACK to an INFORM
    released,        // RELEASE recorded, no reply
    declined,        // DECLINE recorded, no reply
    not_dhcp,        // not IPv4/UDP to port 67 of the gateway or broadcast: not the server's
    malformed,       // a bad checksum, a message that does not parse, no message type (BOOTP)
    unknown_client,  // chaddr or the frame's source MAC is not the endpoint's: nothing sent
    rate_limited,    // over the client's rate: nothing sent
    other_server,    // a REQUEST for another server's offer: nothing sent
    ignored,         // not for a server to answer (replies, relayed, a REQUEST asking for no address, ...)
    no_room,         // `out` is too small for the reply
};

[[nodiscard]] std::string_view to_string(DhcpOutcome outcome) noexcept;

struct DhcpReply {
    DhcpOutcome outcome = DhcpOutcome::not_dhcp;
    std::size_t length = 0;  // reply frame length at the start of `out` (0: nothing to send)

    [[nodiscard]] bool replied() const noexcept { return length != 0; }
};

// `andromedactl stats` group `dhcp`.
#define ANDROMEDA_DHCP_COUNTERS(X)                                  \
    /* received from endpoints, by message type */                  \
    X(discovers) X(requests) X(declines) X(releases) X(informs)     \
    /* sent */                                                      \
    X(offers) X(acks) X(naks)                                       \
    /* not answered */                                              \
    X(unknown_client) X(rate_limited) X(malformed) X(other_server) X(ignored) X(no_room)

struct DhcpCounters {
#define ANDROMEDA_DHCP_FIELD(name) std::uint64_t name = 0;
    ANDROMEDA_DHCP_COUNTERS(ANDROMEDA_DHCP_FIELD)
#undef ANDROMEDA_DHCP_FIELD

    template <class F>
    void for_each(F&& f) const {
#define ANDROMEDA_DHCP_NAME(name) f(#name, name);
        ANDROMEDA_DHCP_COUNTERS(ANDROMEDA_DHCP_NAME)
#undef ANDROMEDA_DHCP_NAME
    }
};

// The largest reply frame: Ethernet with two tags, IPv4, UDP and a 576-byte datagram's DHCP
// message (more only when a client's maximum message size and `out` allow it).
inline constexpr std::size_t kDhcpReplyFrameRoom = 22 + 576;

struct DhcpRequestFrame;  // a parsed request (dhcp_server.cpp)

class DhcpServer {
public:
    explicit DhcpServer(const DhcpServerConfig& config = {});

    // Handles one frame from the tenant port of `endpoint` at monotonic time `now_ns`; a reply
    // frame is written at the start of `out` (size it kDhcpReplyFrameRoom or more).
    DhcpReply handle(wire::ByteSpan frame, const DhcpEndpoint& endpoint, std::uint64_t now_ns,
                     wire::MutableByteSpan out) noexcept;

    [[nodiscard]] const DhcpCounters& counters() const noexcept { return counters_; }
    [[nodiscard]] const DhcpLeaseTable& leases() const noexcept { return leases_; }

private:
    DhcpReply answer(const DhcpRequestFrame& request, const DhcpEndpoint& endpoint, std::uint64_t now_ns,
                     wire::MutableByteSpan out) noexcept;
    DhcpReply answer_request(const DhcpRequestFrame& request, const DhcpEndpoint& endpoint, DhcpLease& lease,
                             std::uint64_t now_ns, wire::MutableByteSpan out) noexcept;
    DhcpReply reply(const DhcpRequestFrame& request, const DhcpEndpoint& endpoint, std::uint8_t type,
                    wire::MutableByteSpan out) noexcept;
    DhcpReply count(DhcpOutcome outcome) noexcept;

    DhcpServerConfig config_;
    IcmpErrorRateLimiter limiter_;
    DhcpLeaseTable leases_;
    DhcpCounters counters_;
};

}  // namespace andromeda::gateway
