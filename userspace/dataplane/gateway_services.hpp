// The gateway's DHCP, DNS and Router Advertisements as the pipeline reaches them
// (docs/vm-tenants.md, docs/ipv6.md): shared by every worker's pipeline and owned by the daemon.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "dataplane/packet_buffer.hpp"
#include "gateway/dhcp_server.hpp"
#include "gateway/router_advertisement.hpp"
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

// Each tenant port's Router Advertisement schedule (gateway/ra_schedule.hpp) behind one lock: the
// workers answer solicitations with it, the daemon's tick sends the unsolicited advertisements, and
// both must see the same last advertisement (at most one per 3 s on a port). A port's schedule
// starts with its first use, seeded by its port id so that ports drift apart, and starts again
// when its VPC's RA settings change (a reload), so the new ones are advertised at once.
class GatewayRouterAdvertisements {
public:
    // A Router Solicitation from tenant port `port` (answer_router_solicitation).
    gateway::RouterAdvertisementReply answer(PortId port, wire::ByteSpan frame, const gateway::Ipv6Gateway& gateway,
                                             std::uint64_t now_ns, wire::MutableByteSpan out) {
        std::lock_guard lock(mutex_);
        return gateway::answer_router_solicitation(frame, gateway, schedule(port, gateway), now_ns, out);
    }
    // The unsolicited advertisement due on `port` at `now_ns`, written to `out` (its length), or 0.
    std::size_t advertise_if_due(PortId port, const gateway::Ipv6Gateway& gateway, std::uint64_t now_ns,
                                 wire::MutableByteSpan out) {
        std::lock_guard lock(mutex_);
        return gateway::advertise_if_due(gateway, schedule(port, gateway), now_ns, out);
    }
    // Forgets the ports `keep` says no (gone, or no longer in a dual-stack VPC): an endpoint that
    // comes back starts with the quick initial advertisements again.
    template <class Keep>
    void retain(Keep&& keep) {
        std::lock_guard lock(mutex_);
        std::erase_if(schedules_, [&](const auto& entry) { return !keep(entry.first); });
    }
    [[nodiscard]] std::size_t ports() const {
        std::lock_guard lock(mutex_);
        return schedules_.size();
    }

private:
    struct PortSchedule {
        gateway::RouterAdvertisementConfig config;  // what `schedule` was drawn for
        gateway::RouterAdvertisementSchedule schedule;
    };

    // A reload that changes the VPC's RA settings starts the port's schedule again with them.
    gateway::RouterAdvertisementSchedule& schedule(PortId port, const gateway::Ipv6Gateway& gateway) {
        const gateway::RouterAdvertisementConfig& config = gateway.config().router_advertisements;
        auto it = schedules_.find(port);
        if (it == schedules_.end() || it->second.config != config)
            it = schedules_.insert_or_assign(port, PortSchedule{config, gateway::RouterAdvertisementSchedule(config, port)})
                     .first;
        return it->second.schedule;
    }

    mutable std::mutex mutex_;
    std::unordered_map<PortId, PortSchedule> schedules_;
};

}  // namespace andromeda::dataplane
