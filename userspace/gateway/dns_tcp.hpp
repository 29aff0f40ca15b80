// DNS over TCP on the gateway address (RFC 7766): the passive end of a tenant's TCP connection
// to port 53, I/O-free. The gateway address is virtual (one per VPC, overlapping across VPCs),
// so no kernel socket can own it; this is the small TCP endpoint that stands in for one, just
// enough of RFC 9293 for a resolver's connection: the three-way handshake (MSS option, no
// window scaling, no SACK, no timestamps), in-order data with duplicate ACKs for anything
// else, the answers sent in segments of the agreed MSS within the tenant's window and a
// congestion window (RFC 5681 slow start from RFC 6928's ten segments), retransmission from
// the oldest unacknowledged byte with an exponential backoff (RFC 6298), a window probe when
// the tenant's window is shut, FIN both ways, RST for segments of no connection (RFC 9293
// 3.10.7.1), and RFC 5961's challenge ACK for a SYN on an open connection.
//
//   tenant segment --handle_frame--> frames to the tenant (SYN-ACK, ACKs, RST) through the sink,
//                                    and the DNS messages it completed, length prefix removed
//   an answer (2-byte length + message) --send--> data segments through the sink
//   time passes --poll--> retransmissions, idle connections closed, dead ones reset
//
// A connection is closed by the gateway when it has been idle (nothing received, no answer
// owed) for idle_timeout_ns, as RFC 7766 6.2.3 lets servers do; when the tenant closes first
// its FIN is answered once every answer it is owed has been sent. No TIME_WAIT: the gateway
// never reuses a tenant's port pair itself, and a late segment is answered with RST.
//
// Bounded: at most max_connections at once, and max_per_tenant of one tenant address in one VPC
// (a SYN beyond either gets RST), per connection at
// most 2 + 65535 received bytes that are not yet a whole message (the window advertised is the
// room left) and send_room bytes of answers not yet acknowledged (an answer beyond it resets
// the connection, so the tenant retries rather than waits). Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "gateway/gateway_address.hpp"
#include "wire/addresses.hpp"
#include "wire/bytes.hpp"
#include "wire/ethernet.hpp"

namespace andromeda::gateway {

struct DnsTcpConfig {
    std::size_t max_connections = 256;                // 1 to 65535
    std::size_t max_per_tenant = 16;                  // per VNI and tenant address: one cannot take them all
    std::uint64_t idle_timeout_ns = 10'000'000'000;   // RFC 7766 6.2.3's "a few seconds" and more
    std::uint64_t initial_rto_ns = 250'000'000;       // the tenant is a link away: no 1 s RFC 6298 floor
    std::uint32_t max_retransmits = 7;                // then RST: about a minute after the first send
    std::size_t send_room = 2 * (2 + 65535);          // answers queued per connection, bytes
    std::uint64_t seed = 0;                           // initial sequence numbers; 0 draws one
};

#define ANDROMEDA_DNS_TCP_COUNTERS(X)                                                               \
    X(segments)          /* frames handed in */                                                     \
    X(malformed)         /* not Ethernet/IPv4/TCP to port 53 of the gateway, or a bad checksum */    \
    X(opened)            /* handshakes started (SYN answered) */                                    \
    X(established)       /* handshakes completed */                                                 \
    X(refused_full)      /* SYN answered with RST: max_connections are open */                      \
    X(refused_tenant)    /* SYN answered with RST: the tenant has max_per_tenant open */            \
    X(resets_sent)       /* RST for a segment of no connection, a timeout or a full send room */     \
    X(resets_received)   /* connections the tenant reset */                                         \
    X(closed)            /* connections ended by FIN both ways */                                   \
    X(idle_closed)       /* of which: the gateway closed first, as the connection was idle */       \
    X(timed_out)         /* reset after max_retransmits without an acknowledgment */                \
    X(messages)          /* whole DNS messages received */                                          \
    X(answers)           /* answers queued by send */                                               \
    X(send_room_full)    /* an answer that did not fit: the connection was reset */                 \
    X(retransmits)       /* segments sent again after a timeout */                                  \
    X(out_of_order)      /* data not at the next expected byte: dropped, ACKed again */             \
    X(challenge_acks)    /* a SYN on an open connection (RFC 5961 4.2) */

struct DnsTcpCounters {
#define ANDROMEDA_DNS_TCP_FIELD(name) std::uint64_t name = 0;
    ANDROMEDA_DNS_TCP_COUNTERS(ANDROMEDA_DNS_TCP_FIELD)
#undef ANDROMEDA_DNS_TCP_FIELD

    template <class F>
    void for_each(F&& f) const {
#define ANDROMEDA_DNS_TCP_NAME(name) f(#name, name);
        ANDROMEDA_DNS_TCP_COUNTERS(ANDROMEDA_DNS_TCP_NAME)
#undef ANDROMEDA_DNS_TCP_NAME
    }
};

// Where the server's frames and connection endings go (the daemon's DNS thread).
class DnsTcpSink {
public:
    virtual ~DnsTcpSink() = default;
    // A whole Ethernet frame for the tenant port `tag` (handle_frame's tag for the connection).
    virtual void send_frame(std::uint64_t tag, wire::ByteSpan frame) = 0;
    // The connection is gone (closed, reset or timed out); its token is never used again.
    virtual void closed(std::uint64_t connection) = 0;
};

// A DNS message a tenant completed, copied out of the connection's stream.
struct DnsTcpQuery {
    std::uint64_t connection = 0;  // the token send() takes
    std::uint32_t vni = 0;         // of the VPC the connection was opened in
    std::vector<std::uint8_t> message;  // without the length prefix
};

class DnsTcpServer {
public:
    explicit DnsTcpServer(DnsTcpConfig config);

    // A frame from a tenant port of VPC `vni`: Ethernet (VLAN tags kept in the replies)/IPv4/TCP
    // to port 53 of `gateway`. `mtu` is the VPC's (the MSS offered is mtu - 40), `tag` says which
    // port answers go to. Whole messages are appended to `queries`.
    void handle_frame(wire::ByteSpan frame, std::uint32_t vni, const GatewayAddress& gateway, std::uint16_t mtu,
                      std::uint64_t tag, std::uint64_t now_ns, DnsTcpSink& sink,
                      std::vector<DnsTcpQuery>& queries);

    // Queues `data` (an answer with its 2-byte length prefix) on `connection` and sends what the
    // windows allow. False when the connection is gone, or when it had no room for the answer
    // (it is then reset).
    bool send(std::uint64_t connection, wire::ByteSpan data, std::uint64_t now_ns, DnsTcpSink& sink);

    // The query handed out on `connection` gets no answer (the forwarder dropped it): the
    // connection owes one answer less, so it can close.
    void no_answer(std::uint64_t connection, std::uint64_t now_ns, DnsTcpSink& sink);

    // Retransmissions, idle closes and resets whose time has come.
    void poll(std::uint64_t now_ns, DnsTcpSink& sink);
    // The earliest time poll has work (monotonic ns); 0 when no connection is open.
    [[nodiscard]] std::uint64_t next_deadline() const noexcept;

    [[nodiscard]] std::size_t connections() const noexcept { return by_key_.size(); }
    [[nodiscard]] const DnsTcpCounters& counters() const noexcept { return counters_; }
    [[nodiscard]] const DnsTcpConfig& config() const noexcept { return config_; }

private:
    struct Key {
        std::uint32_t vni = 0;
        std::uint32_t tenant = 0;
        std::uint16_t port = 0;
        bool operator==(const Key&) const = default;
    };
    struct KeyHash {
        std::size_t operator()(const Key& k) const noexcept {
            return std::hash<std::uint64_t>{}((std::uint64_t{k.vni} << 48) ^ (std::uint64_t{k.tenant} << 16) ^ k.port);
        }
    };
    struct Connection {
        bool used = false;
        bool established = false;
        bool fin_received = false;  // the tenant's FIN is in rcv_nxt
        bool fin_wanted = false;    // send FIN once tx is all sent
        bool fin_sent = false;
        bool idle_close = false;    // the gateway closed first
        std::uint32_t generation = 0;
        Key key;
        std::uint64_t tag = 0;
        wire::EthernetHeader ethernet;  // to the tenant, from the gateway
        wire::Ipv4Address gateway;
        std::uint32_t iss = 0;
        std::uint32_t snd_una = 0;  // tx[0]'s sequence number once established
        std::uint32_t snd_nxt = 0;
        std::uint32_t rcv_nxt = 0;
        std::uint32_t snd_wnd = 0;  // the tenant's window
        std::uint32_t cwnd = 0;
        std::uint16_t mss = 536;        // the largest segment sent
        std::uint16_t mss_offer = 536;  // the largest taken: the VPC MTU - 40
        std::uint32_t owed = 0;     // messages received and not yet answered
        std::uint32_t retries = 0;
        std::uint64_t rto_ns = 0;
        std::uint64_t rto_deadline = 0;   // 0: nothing in flight
        std::uint64_t idle_deadline = 0;
        std::vector<std::uint8_t> rx;  // received bytes that are not yet a whole message
        std::vector<std::uint8_t> tx;  // from snd_una: sent and unacknowledged, then unsent
    };

    [[nodiscard]] std::uint64_t token(std::size_t slot) const noexcept;
    Connection* find(std::uint64_t connection) noexcept;
    void open(const Key& key, std::uint32_t sequence, std::uint16_t window, wire::ByteSpan options,
              const wire::EthernetHeader& to_tenant, wire::Ipv4Address gateway, std::uint16_t mtu, std::uint64_t tag,
              std::uint64_t now_ns, DnsTcpSink& sink);
    void segment(Connection& c, std::uint32_t sequence, std::uint8_t flags, wire::ByteSpan data, DnsTcpSink& sink,
                 bool with_mss = false);
    std::size_t transmit(Connection& c, std::uint64_t now_ns, DnsTcpSink& sink);  // segments sent
    void retransmit(Connection& c, std::uint64_t now_ns, DnsTcpSink& sink);
    void reset(Connection& c, DnsTcpSink& sink);
    void release(Connection& c, DnsTcpSink& sink);
    void reply_reset(const wire::EthernetHeader& to_tenant, wire::Ipv4Address gateway, wire::Ipv4Address tenant,
                     std::uint16_t port, std::uint32_t sequence, std::uint32_t acknowledgment, bool with_ack,
                     std::uint64_t tag, DnsTcpSink& sink);
    void write_frame(const wire::EthernetHeader& ethernet, wire::Ipv4Address source, wire::Ipv4Address destination,
                     std::uint16_t destination_port, std::uint32_t sequence, std::uint32_t acknowledgment,
                     std::uint8_t flags, std::uint16_t window, std::uint16_t mss_option, wire::ByteSpan data,
                     std::uint64_t tag, DnsTcpSink& sink);
    [[nodiscard]] std::uint16_t receive_window(const Connection& c) const noexcept;
    std::uint32_t draw_iss() noexcept;

    DnsTcpConfig config_;
    std::vector<Connection> slots_;
    std::vector<std::uint16_t> free_;
    std::unordered_map<Key, std::uint16_t, KeyHash> by_key_;
    std::unordered_map<std::uint64_t, std::uint16_t> per_tenant_;  // (vni << 32 | address) -> connections
    std::vector<std::uint8_t> frame_;  // the frame being built
    std::uint64_t random_state_ = 0;
    DnsTcpCounters counters_;
};

}  // namespace andromeda::gateway
