// The gateway's DHCP and DNS as the pipeline reaches them (docs/vm-tenants.md): both shared by
// every worker's pipeline and owned by the daemon.
#pragma once

#include <cstdint>
#include <mutex>
#include <utility>

#include "dataplane/packet_buffer.hpp"
#include "gateway/dhcp_server.hpp"
#include "wire/bytes.hpp"

namespace andromeda::dataplane {

// Where each tenant's UDP query to its gateway address, port 53, goes (the daemon's DnsService).
// Thread-safe, and never blocking on I/O.
class DnsQuerySink {
public:
    virtual ~DnsQuerySink() = default;
    // Takes a copy of `frame`, from tenant port `port` of the VPC with VNI `vni`; false when it
    // cannot (full): the pipeline drops the frame (dns_not_served).
    virtual bool submit(std::uint32_t vni, PortId port, wire::ByteSpan frame) = 0;
};

// One DHCP server for the node behind a lock: a client sends a few messages a day, and one
// server keeps one lease table and one set of counters for `andromedactl dhcp`.
class GatewayDhcp {
public:
    explicit GatewayDhcp(const gateway::DhcpServerConfig& config = {}) : server_(config) {}

    gateway::DhcpReply handle(wire::ByteSpan frame, const gateway::DhcpEndpoint& endpoint, std::uint64_t now_ns,
                              wire::MutableByteSpan out) {
        std::lock_guard lock(mutex_);
        return server_.handle(frame, endpoint, now_ns, out);
    }
    // Calls f(const gateway::DhcpServer&) under the lock (counters, leases).
    template <class F>
    auto read(F&& f) const {
        std::lock_guard lock(mutex_);
        return std::forward<F>(f)(server_);
    }

private:
    mutable std::mutex mutex_;
    gateway::DhcpServer server_;
};

}  // namespace andromeda::dataplane
