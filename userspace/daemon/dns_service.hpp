// The gateway's DNS service: one thread (`andromeda-dns`) around the I/O-free DnsForwarder, with
// the sockets it needs. Packet workers hand it the tenants' UDP queries to the gateway address,
// port 53 (submit: a copy into a bounded queue, never a system call but an eventfd write when the
// queue was empty); the thread answers them, forwards the rest to the upstream resolvers, relays
// their answers, and sends SERVFAIL for those that time out.
//
// Replies reach a tenant through its port's punt pair: the whole Ethernet frame the forwarder
// built is sent with an AF_PACKET socket on the pair's steering end (anx<ifindex>), whose visible
// end puts it into the tenant. Which steering device a reply goes to is the one its query came
// with: the ifindex rides through the forwarder as handle_udp_query's tag.
//
// Upstream sockets: a pool of unconnected UDP sockets per address family (kUpstreamSockets),
// each bound by the kernel to a random ephemeral port, one drawn at random per forwarded query.
// RFC 5452 asks for a fresh random port per query; a pool is the practical middle ground (as
// dnsmasq's): the forwarder's random 16-bit IDs plus a choice among ports the kernel picked at
// random, without a socket (and a file descriptor) per query in flight. A pool cannot be
// connect()ed, as it serves every upstream: each datagram's source is checked instead, and only
// one from an upstream's exact address and port is handed to the forwarder, with that upstream's
// index; the rest are counted (upstream_from_elsewhere) and dropped.
//
// DNS over TCP (RFC 7766): a tenant's TCP segments to the gateway address, port 53, come through
// the same queue; the gateway's end of those connections is a gateway::DnsTcpServer, whose
// frames go out as the UDP replies do. A query asked over TCP is asked upstream over TCP too (its
// answer may be larger than any UDP one): a non-blocking connection per forwarded query, at most
// kUpstreamTcpConnections at once, closed once the answer is read or the attempt's time is up.
//
// Sockets belong to the network namespace of the thread that constructs the service.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include "gateway/dns_forwarder.hpp"
#include "gateway/dns_tcp.hpp"
#include "gateway/dns_zone.hpp"
#include "gateway/gateway_address.hpp"

namespace andromeda::daemon {

// The largest query frame the queue keeps: Ethernet with two VLAN tags and a 1500-byte datagram
// (a DNS query the forwarder keeps is at most 1232 bytes; anything longer it would refuse).
inline constexpr std::size_t kDnsQueryFrameRoom = 14 + 8 + 1500;
inline constexpr std::size_t kDnsQueueSlots = 512;
inline constexpr std::size_t kUpstreamSockets = 8;  // per address family in use
inline constexpr std::size_t kUpstreamTcpConnections = 64;

// One VPC the service answers for, by VNI.
struct DnsServiceVpc {
    std::uint32_t vni = 0;
    gateway::GatewayAddress gateway;               // the resolver's MAC and IPv4 address
    std::uint16_t mtu = 1500;                      // the largest IP datagram its tenants take
    std::shared_ptr<const gateway::DnsZone> zone;  // its names; null forwards every query
};

#define ANDROMEDA_DNS_SERVICE_COUNTERS(X)                                                              \
    X(submitted)                /* queries taken into the queue */                                     \
    X(queue_full)               /* refused by submit: the queue was full */                            \
    X(oversized)                /* refused by submit: longer than kDnsQueryFrameRoom */                \
    X(unknown_vpc)              /* dropped: a VNI not in the last set_vpcs */                          \
    X(replies_sent)             /* frames sent to a tenant port */                                     \
    X(send_errors)              /* a reply or a forward the kernel did not take */                     \
    X(forwards_sent)            /* datagrams sent to an upstream (retries included) */                 \
    X(upstream_datagrams)       /* received on the upstream sockets */                                 \
    X(upstream_from_elsewhere)  /* of which: not from a configured upstream, dropped */                \
    X(upstream_tcp_opened)      /* connections to an upstream for a query asked over TCP */            \
    X(upstream_tcp_full)        /* such a forward not sent: kUpstreamTcpConnections were open */       \
    X(upstream_tcp_failed)      /* refused, reset, closed early or timed out before the answer */     \
    X(upstream_tcp_answers)     /* answers read from them */

struct DnsServiceCounters {
#define ANDROMEDA_DNS_SERVICE_FIELD(name) std::uint64_t name = 0;
    ANDROMEDA_DNS_SERVICE_COUNTERS(ANDROMEDA_DNS_SERVICE_FIELD)
#undef ANDROMEDA_DNS_SERVICE_FIELD

    template <class F>
    void for_each(F&& f) const {
#define ANDROMEDA_DNS_SERVICE_NAME(name) f(#name, name);
        ANDROMEDA_DNS_SERVICE_COUNTERS(ANDROMEDA_DNS_SERVICE_NAME)
#undef ANDROMEDA_DNS_SERVICE_NAME
    }
};

struct DnsServiceStats {
    DnsServiceCounters service;
    gateway::DnsCounters forwarder;
    gateway::DnsTcpCounters tcp;   // the tenants' TCP connections
    std::size_t in_flight = 0;     // queries forwarded and not yet answered
    std::size_t tcp_connections = 0;  // tenants' TCP connections open
};

class DnsService {
public:
    // Opens the sockets in the calling thread's network namespace and starts the thread. Throws
    // std::system_error when the eventfd or the AF_PACKET socket cannot be had (CAP_NET_RAW);
    // an upstream address family without sockets (IPv6 off, say) counts its sends as errors.
    // Upstreams listed twice are asked once.
    explicit DnsService(gateway::DnsForwarderConfig config);
    ~DnsService();  // stops and joins the thread; queries still queued or in flight are dropped
    DnsService(const DnsService&) = delete;
    DnsService& operator=(const DnsService&) = delete;

    // The VPCs to answer for from now on (control thread, on every fabric change). Queries
    // already forwarded keep their tenant's addressing and port, whatever the new set says.
    void set_vpcs(std::vector<DnsServiceVpc> vpcs);

    // A tenant's UDP query frame to the gateway (packet workers, any thread): copied into the
    // queue, to be answered on the steering device `reply_ifindex`. False when the queue is full
    // or the frame too long (both counted). Never blocks on I/O.
    bool submit(std::uint32_t vni, std::uint32_t reply_ifindex, std::span<const std::uint8_t> frame);

    [[nodiscard]] DnsServiceStats stats() const;

    // Tests: while held, the thread takes nothing from the queue (it still serves upstreams and
    // timeouts), so a test can fill the queue.
    void hold_queue_for_test(bool held);

private:
    struct QueuedQuery {
        std::uint32_t vni = 0;
        std::uint32_t reply_ifindex = 0;
        std::uint16_t length = 0;
        std::array<std::uint8_t, kDnsQueryFrameRoom> frame{};
    };
    struct VpcEntry {
        gateway::DnsVpc context;  // its zone pointer is `zone`'s
        std::shared_ptr<const gateway::DnsZone> zone;
    };
    using VpcTable = std::unordered_map<std::uint32_t, VpcEntry>;
    struct Upstream {
        sockaddr_storage address{};
        socklen_t length = 0;
        const std::vector<int>* sockets = nullptr;  // its family's pool
    };
    // A query asked upstream over TCP: connecting and writing it, then reading its answer.
    struct UpstreamTcp {
        int fd = -1;
        std::size_t upstream = 0;
        std::vector<std::uint8_t> query;  // with its length prefix
        std::size_t written = 0;
        std::vector<std::uint8_t> answer;  // what has been read, prefix included
        std::uint64_t deadline_ns = 0;
    };
    // The TCP server's frames go out as replies; a connection's end forgets its queries.
    class TcpSink final : public gateway::DnsTcpSink {
    public:
        explicit TcpSink(DnsService& service) : service_(service) {}
        void send_frame(std::uint64_t tag, wire::ByteSpan frame) override {
            service_.send_reply(static_cast<std::uint32_t>(tag), frame);
        }
        void closed(std::uint64_t connection) override { service_.forwarder_.cancel_connection(connection); }

    private:
        DnsService& service_;
    };

    void run();
    void serve_queue();
    void serve_tcp_segment(const VpcEntry& vpc);
    void open_upstream_tcp(std::size_t upstream, std::span<const std::uint8_t> message);
    void serve_upstream_tcp(UpstreamTcp& connection, short revents);
    void expire_upstream_tcp();
    void serve_upstream(int fd);
    void serve_timeouts();
    void execute(const gateway::DnsAction& action);
    void send_reply(std::uint32_t ifindex, std::span<const std::uint8_t> frame);
    void send_forward(const Upstream& upstream, std::span<const std::uint8_t> message);
    void publish_stats();
    void wake() const noexcept;
    void close_sockets() noexcept;

    gateway::DnsForwarder forwarder_;  // the thread's alone
    std::vector<Upstream> upstreams_;  // by the forwarder's upstream index
    std::vector<int> ipv4_sockets_;
    std::vector<int> ipv6_sockets_;
    int packet_fd_ = -1;                         // AF_PACKET, protocol 0: sends to tenant ports, receives nothing
    int wake_fd_ = -1;                           // eventfd: a query into an empty queue, a hold released, stop
    std::uint64_t random_state_ = 0;             // the thread's: which pool socket a query leaves from
    std::vector<std::uint8_t> out_;              // the thread's: gateway::kDnsActionRoom
    std::vector<std::uint8_t> in_;               // the thread's: an upstream datagram
    DnsServiceCounters counters_;                // the thread's; copied into stats_ by publish_stats
    gateway::DnsTcpServer tcp_;                  // the thread's: tenants' TCP connections
    TcpSink tcp_sink_{*this};
    std::vector<gateway::DnsTcpQuery> tcp_queries_;  // the thread's: what a segment completed
    std::vector<UpstreamTcp> upstream_tcp_;          // the thread's
    std::uint64_t now_ns_ = 0;                       // the thread's: when this round began
    QueuedQuery current_{};                      // the thread's: the query being answered
    std::shared_ptr<const VpcTable> vpcs_seen_;  // the thread's: vpcs_ when it last looked

    mutable std::mutex queue_mutex_;  // guards ring_, head_, count_, held_, stopping_, submitted_,
                                      // queue_full_, oversized_
    std::vector<QueuedQuery> ring_;
    std::size_t head_ = 0;
    std::size_t count_ = 0;
    bool held_ = false;
    bool stopping_ = false;
    std::uint64_t submitted_ = 0;
    std::uint64_t queue_full_ = 0;
    std::uint64_t oversized_ = 0;

    mutable std::mutex vpcs_mutex_;  // guards vpcs_ (the table itself is immutable once published)
    std::shared_ptr<const VpcTable> vpcs_;

    mutable std::mutex stats_mutex_;  // guards stats_
    DnsServiceStats stats_;

    std::thread thread_;
};

}  // namespace andromeda::daemon
