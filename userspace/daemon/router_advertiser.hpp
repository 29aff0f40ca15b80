// The gateway's unsolicited Router Advertisements (RFC 4861 6.2.4; docs/ipv6.md): on every tenant
// port of a dual-stack VPC, as its schedule says (the first at once, two more within 16 s each,
// then every 200-600 s by default), so a tenant learns its prefix, router and MTU even when its
// Router Solicitations were sent before the port was ready. The daemon's tick calls advertise()
// once a second; the schedules are shared with the workers, which answer solicitations, so that
// both keep a port's advertisements at least 3 s apart.
//
// An advertisement reaches its tenant as the DNS service's replies do: through the port's punt
// pair, sent with an AF_PACKET socket on the pair's steering end.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "dataplane/gateway_services.hpp"
#include "fabric/snapshot.hpp"
#include "gateway/ipv6_gateway.hpp"
#include "io/xsk/packet_socket.hpp"
#include "util/counters.hpp"

namespace andromeda::daemon {

#define ANDROMEDA_ROUTER_ADVERTISER_COUNTERS(X)          \
    X(sent)        /* unsolicited advertisements sent */ \
    X(send_errors) /* ... the kernel did not take */

struct RouterAdvertiserCounters {
    ANDROMEDA_ROUTER_ADVERTISER_COUNTERS(ANDROMEDA_COUNTER_FIELD)
    template <class F>
    void for_each(F&& f) const {
        ANDROMEDA_ROUTER_ADVERTISER_COUNTERS(ANDROMEDA_COUNTER_VISIT)
    }
};

class RouterAdvertiser {
public:
    // Opens the packet socket (io::IoError without CAP_NET_RAW).
    RouterAdvertiser();

    // Shared with every worker's pipeline (PipelineConfig::router_advertisements).
    [[nodiscard]] const std::shared_ptr<dataplane::GatewayRouterAdvertisements>& schedules() const noexcept {
        return schedules_;
    }

    // The fabric or the ports changed: the tenant ports of `snapshot`'s dual-stack VPCs and their
    // punt pairs' steering ends (tenant ifindex -> steering ifindex). A port that left forgets its
    // schedule.
    void set_ports(const fabric::FabricSnapshot& snapshot, const std::map<std::uint32_t, std::uint32_t>& steering);

    // Sends every advertisement due at `now_ns` (steady clock); returns how many went out.
    std::size_t advertise(std::uint64_t now_ns);

    [[nodiscard]] RouterAdvertiserCounters counters() const;
    [[nodiscard]] std::size_t ports() const;

private:
    struct Port {
        std::uint32_t ifindex = 0;
        std::uint32_t steering = 0;  // 0: no punt pair (yet): nothing is sent, the schedule waits
        gateway::Ipv6Gateway gateway;
    };

    mutable std::mutex mutex_;
    std::shared_ptr<dataplane::GatewayRouterAdvertisements> schedules_ =
        std::make_shared<dataplane::GatewayRouterAdvertisements>();
    io::PacketSocket socket_;
    std::vector<Port> ports_;
    RouterAdvertiserCounters counters_;
};

}  // namespace andromeda::daemon
