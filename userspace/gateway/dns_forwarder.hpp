// The gateway's DNS on the VPC gateway address, UDP and TCP port 53: the I/O-free core. Names
// of the VPC (`<name>.<vpc>.internal`, a DnsZone) are answered here; every other query is
// forwarded to the node's upstream resolvers and the answer returned to the tenant. The sockets
// are the daemon's: this object says what to send where, and takes back what came.
//
//   tenant query --handle_udp_query / handle_tcp_query--> reply (a local answer, FORMERR, ...)
//                                                      or forward (a query for upstream i)
//   upstream answer --handle_upstream_answer--> reply to the tenant that asked
//   time passes --poll_timeouts--> a retry on the next upstream, or SERVFAIL to the tenant
//
// Local answers: A (and AAAA when the endpoint has an IPv6 address; ANY gets both), NODATA
// (NOERROR and no answer) for other types and for the zone apex, NXDOMAIN for an unknown name
// under the zone, REFUSED for classes other than IN; authoritative, with the question's name
// compressed to a pointer, and EDNS answered when asked (our payload size, BADVERS for
// version > 0). Negative answers carry no SOA, so resolvers do not cache them (RFC 2308 5): a
// name appears as soon as the fabric has it. Other `.internal` names are forwarded (a cloud
// host's own, metadata.google.internal say, are its resolver's to answer).
//
// A forwarded query keeps the tenant's bytes but a fresh random ID (RFC 5452: the daemon should
// also send from a random source port); its answer must come from an upstream it was sent to and
// carry that ID and the same question, or it is counted as unmatched and dropped, and the query
// stays pending. Queries in flight are bounded: when the table is full the tenant gets SERVFAIL
// at once. An attempt that times out is retried on the next upstream (which becomes the first
// choice for new queries), up to `attempts` in all, then the tenant gets SERVFAIL. An answer
// longer than the tenant can take over UDP (its EDNS size or 512, and the VPC MTU) is cut to
// the header and question with TC set, so the tenant asks again over TCP.
//
// Malformed queries get FORMERR when their header can be read, and are dropped (counted)
// otherwise; responses sent to the gateway are dropped, never answered. One forwarder per daemon
// (or per DNS thread): not thread-safe. Nothing allocates after construction.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "gateway/dns_zone.hpp"
#include "gateway/gateway_address.hpp"
#include "gateway/resolv_conf.hpp"
#include "gateway/udp_reply.hpp"
#include "wire/bytes.hpp"
#include "wire/dns.hpp"

namespace andromeda::gateway {

// The longest query the forwarder keeps for a retry (a query is a name, a few bytes and perhaps
// an OPT record: RFC 8467's padding takes one to 128 or 468 bytes). Longer ones are REFUSED.
inline constexpr std::size_t kMaxForwardedQuery = 1232;
// An `out` this long holds any action: a UDP reply frame is at most an Ethernet header with two
// tags and the VPC MTU's datagram, a TCP reply 2 + 65535 bytes, a forward kMaxForwardedQuery.
// A shorter `out` works for what fits in it; the rest is no_room (counted).
inline constexpr std::size_t kDnsActionRoom = 22 + 65535;

struct DnsForwarderConfig {
    std::vector<DnsUpstream> upstreams;  // at most 32 are used
    std::size_t max_in_flight = 256;     // queries forwarded and not yet answered (1 to 16384)
    std::uint64_t timeout_ns = 2'000'000'000;  // per attempt
    std::uint32_t attempts = 3;          // per query, each on the next upstream
    std::uint32_t local_ttl = 30;        // seconds, of the VPC names' records
    std::uint16_t edns_udp_size = 1232;  // what local answers advertise (RFC 9715's safe size)
    std::uint64_t seed = 0;              // of the query IDs; 0 draws one from std::random_device
};

// The VPC of the tenant port a query came from.
struct DnsVpc {
    GatewayAddress gateway;        // the resolver's address and MAC
    const DnsZone* zone = nullptr; // its names; null forwards every query
    std::uint16_t mtu = 1500;      // the largest IP datagram the tenant takes
};

enum class DnsActionKind : std::uint8_t {
    none,       // nothing to send
    reply_udp,  // `out` holds a whole frame for the tenant's port
    reply_tcp,  // `out` holds a DNS message with its 2-byte length, for TCP connection `connection`
    forward,    // `out` holds a DNS message for upstream `upstream` (over TCP when `over_tcp`)
};

enum class DnsOutcome : std::uint8_t {
    answered,          // local: NOERROR with the name's address
    nodata,            // local: the name exists, without a record of that type
    nxdomain,          // local: no such name in the VPC
    formerr,           // the query is malformed
    notimp,            // an opcode other than QUERY
    refused,           // a class other than IN under the VPC zone, or a query too long to keep
    badvers,           // EDNS version above 0
    forwarded,         // sent to an upstream
    retried,           // a timed-out attempt sent again, to the next upstream
    returned,          // an upstream's answer relayed to the tenant
    truncated,         // relayed, cut to fit the tenant (TC set)
    servfail_full,     // SERVFAIL: too many queries in flight
    servfail_timeout,  // SERVFAIL: every attempt timed out
    servfail_no_upstream,  // SERVFAIL: no upstream configured
    not_dns,           // not UDP to port 53 of the gateway address: not the forwarder's
    dropped,           // a bad checksum, a header that cannot be read, or a response sent as a query
    unmatched,         // an upstream answer for no query in flight (late, spoofed, or from elsewhere)
    malformed_answer,  // an upstream answer that does not parse
    no_room,           // `out` is too small
    idle,              // poll_timeouts: nothing has timed out
};

[[nodiscard]] std::string_view to_string(DnsOutcome outcome) noexcept;

struct DnsAction {
    DnsActionKind kind = DnsActionKind::none;
    DnsOutcome outcome = DnsOutcome::idle;
    std::size_t length = 0;        // bytes at the start of `out`
    std::size_t upstream = 0;      // forward: index into the config's upstreams
    bool over_tcp = false;         // forward: the tenant asked over TCP, so ask upstream over TCP
    std::uint64_t connection = 0;  // reply_tcp: the daemon's token for the tenant's connection
    std::uint64_t tag = 0;         // reply_udp: the `tag` handle_udp_query was given with the query
};

#define ANDROMEDA_DNS_COUNTERS(X)                                                        \
    X(queries)           /* every query handed in */                                     \
    X(answered_locally)  /* answered, nodata and nxdomain */                             \
    X(nxdomain)                                                                          \
    X(forwarded)         /* first attempts */                                            \
    X(retries)                                                                           \
    X(answers_returned)  /* upstream answers relayed (truncated ones included) */        \
    X(truncated)                                                                         \
    X(timeouts)          /* attempts that timed out */                                   \
    X(failures)          /* SERVFAIL sent (full, timed out, no upstream) */              \
    X(full)              /* of which: too many in flight */                              \
    X(formerr) X(notimp) X(refused) X(dropped) X(unmatched) X(malformed_answers) X(no_room)

struct DnsCounters {
#define ANDROMEDA_DNS_FIELD(name) std::uint64_t name = 0;
    ANDROMEDA_DNS_COUNTERS(ANDROMEDA_DNS_FIELD)
#undef ANDROMEDA_DNS_FIELD

    template <class F>
    void for_each(F&& f) const {
#define ANDROMEDA_DNS_NAME(name) f(#name, name);
        ANDROMEDA_DNS_COUNTERS(ANDROMEDA_DNS_NAME)
#undef ANDROMEDA_DNS_NAME
    }
};

class DnsForwarder {
public:
    explicit DnsForwarder(DnsForwarderConfig config);

    // A frame from a tenant port (Ethernet/IPv4/UDP to the gateway address, port 53). `tag` is
    // the daemon's, returned with every reply_udp to this query, now or later (which port the
    // query came from: the reply frame's addressing does not say).
    DnsAction handle_udp_query(wire::ByteSpan frame, const DnsVpc& vpc, std::uint64_t now_ns,
                               wire::MutableByteSpan out, std::uint64_t tag = 0) noexcept;
    // One DNS message a tenant sent over TCP (the daemon took off its length prefix; see
    // wire::next_dns_tcp_message), on the daemon's connection `connection`.
    DnsAction handle_tcp_query(wire::ByteSpan message, const DnsVpc& vpc, std::uint64_t connection,
                               std::uint64_t now_ns, wire::MutableByteSpan out) noexcept;
    // A DNS message received from upstream `upstream` (over TCP without its length prefix).
    DnsAction handle_upstream_answer(wire::ByteSpan message, std::size_t upstream, wire::MutableByteSpan out) noexcept;
    // One timed-out attempt at a time: call until the outcome is idle.
    DnsAction poll_timeouts(std::uint64_t now_ns, wire::MutableByteSpan out) noexcept;
    // Forgets the queries of a tenant TCP connection the daemon closed.
    void cancel_connection(std::uint64_t connection) noexcept;

    // When poll_timeouts next has work (monotonic ns); 0 when nothing is in flight.
    [[nodiscard]] std::uint64_t next_deadline() const noexcept;
    [[nodiscard]] std::size_t in_flight() const noexcept { return in_flight_; }
    [[nodiscard]] const DnsCounters& counters() const noexcept { return counters_; }
    [[nodiscard]] const DnsForwarderConfig& config() const noexcept { return config_; }

private:
    static constexpr std::uint16_t kNone = 0xffff;

    // Who asked, and how to answer them.
    struct Client {
        bool tcp = false;
        std::uint64_t connection = 0;    // tcp: the daemon's token
        std::uint64_t tag = 0;           // udp: the daemon's token
        UdpReplyAddressing addressing;   // udp: to the tenant, from the gateway
        std::uint16_t udp_limit = 512;   // udp: the longest answer the tenant takes
    };
    // A forwarded query, until its answer, its last timeout or its connection's end.
    struct Pending {
        Client client;
        wire::DnsName name;
        std::uint16_t type = 0;
        std::uint16_t klass = 0;
        std::uint16_t client_id = 0;
        bool recursion_desired = false;
        bool checking_disabled = false;
        std::uint16_t upstream_id = 0;
        std::uint32_t tried = 0;        // bit i: sent to upstream i
        std::uint8_t upstream = 0;      // of the current attempt
        std::uint8_t attempts = 0;
        std::uint64_t deadline_ns = 0;
        std::uint16_t older = kNone;    // the deadline list
        std::uint16_t newer = kNone;
        bool used = false;
        std::uint16_t query_length = 0;
        std::array<std::uint8_t, kMaxForwardedQuery> query{};  // with upstream_id in it
    };

    DnsAction handle_query(wire::ByteSpan message, const DnsVpc& vpc, const Client& client, std::uint64_t now_ns,
                           wire::MutableByteSpan out) noexcept;
    DnsAction forward(wire::ByteSpan query, const wire::DnsHeader& header, const wire::DnsQuestion& question,
                      const Client& client, std::uint64_t now_ns, wire::MutableByteSpan out) noexcept;
    DnsAction send_attempt(std::uint16_t slot, std::uint64_t now_ns, wire::MutableByteSpan out,
                           DnsOutcome outcome) noexcept;
    DnsAction deliver(const Client& client, wire::MutableByteSpan out, std::size_t message_length,
                      DnsOutcome outcome) noexcept;
    DnsAction servfail(const Pending& pending, wire::MutableByteSpan out, DnsOutcome outcome) noexcept;
    DnsAction count(DnsOutcome outcome) noexcept;
    void note(DnsOutcome outcome) noexcept;

    std::uint16_t draw_id() noexcept;
    void link_tail(std::uint16_t slot) noexcept;
    void unlink(std::uint16_t slot) noexcept;
    void release(std::uint16_t slot) noexcept;

    DnsForwarderConfig config_;
    std::vector<Pending> slots_;
    std::vector<std::uint16_t> free_;
    std::unique_ptr<std::uint16_t[]> slot_of_id_;  // 65536 entries: upstream query ID -> slot + 1, 0 if unused
    std::uint16_t oldest_ = kNone;           // the deadline list, oldest first (all deadlines are now + timeout)
    std::uint16_t newest_ = kNone;
    std::size_t in_flight_ = 0;
    std::size_t preferred_upstream_ = 0;
    std::uint64_t random_state_ = 0;
    DnsCounters counters_;
};

}  // namespace andromeda::gateway
