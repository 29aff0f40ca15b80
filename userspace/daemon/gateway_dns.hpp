// The gateway's DNS as the daemon runs it (docs/vm-tenants.md): the DnsService (its thread and
// sockets) behind the pipeline's DnsQuerySink, fed the VPCs' names on every fabric change and the
// tenant ports' punt pairs (a reply goes into its tenant through the pair's steering end).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "daemon/dns_service.hpp"
#include "dataplane/gateway_services.hpp"
#include "fabric/snapshot.hpp"

namespace andromeda::daemon {

// Each VPC's gateway and MTU, and its zone `<vpc>.internal` with every named endpoint. A VPC whose
// name is not a DNS label (the fabric refuses names in such a VPC) gets no zone: its tenants'
// queries are all forwarded.
[[nodiscard]] std::vector<DnsServiceVpc> dns_vpcs(const fabric::FabricSnapshot& snapshot);

// The resolvers of [node] dns_upstreams, or else those of `resolv_conf` (the text of
// /etc/resolv.conf; empty: 127.0.0.1 as glibc would).
[[nodiscard]] std::vector<gateway::DnsUpstream> dns_upstreams(const fabric::LocalNodeSettings& local,
                                                              std::string_view resolv_conf);

class GatewayDns final : public dataplane::DnsQuerySink {
public:
    explicit GatewayDns(gateway::DnsForwarderConfig config) : service_(std::move(config)) {}

    bool submit(std::uint32_t vni, dataplane::PortId port, wire::ByteSpan frame) override;

    void set_fabric(const fabric::FabricSnapshot& snapshot) { service_.set_vpcs(dns_vpcs(snapshot)); }
    // Tenant port ifindex -> its punt pair's steering ifindex, the ports the answers may go to.
    void set_reply_ports(std::map<std::uint32_t, std::uint32_t> steering);

    [[nodiscard]] DnsServiceStats stats() const { return service_.stats(); }

private:
    DnsService service_;
    mutable std::mutex mutex_;
    std::map<std::uint32_t, std::uint32_t> steering_;
};

}  // namespace andromeda::daemon
