#include "daemon/gateway_dns.hpp"

#include <spdlog/spdlog.h>

#include "andromeda_overlay.h"
#include "gateway/resolv_conf.hpp"

namespace andromeda::daemon {

std::vector<DnsServiceVpc> dns_vpcs(const fabric::FabricSnapshot& snapshot) {
    std::vector<DnsServiceVpc> out;
    out.reserve(snapshot.vpcs().size());
    std::vector<std::shared_ptr<gateway::DnsZone>> zones(snapshot.vpcs().size());
    for (std::size_t i = 0; i < snapshot.vpcs().size(); ++i) {
        std::string error;
        if (auto zone = gateway::DnsZone::for_vpc(snapshot.vpcs()[i].name, error))
            zones[i] = std::make_shared<gateway::DnsZone>(std::move(*zone));
    }
    for (const fabric::Endpoint& e : snapshot.endpoints()) {
        if (e.name.empty() || e.vpc_index >= zones.size() || !zones[e.vpc_index]) continue;
        std::string error;
        if (!zones[e.vpc_index]->add(e.name, {e.ip, e.ipv6}, error))
            spdlog::warn("dns: {}.{}.internal left out: {}", e.name, snapshot.vpcs()[e.vpc_index].name, error);
    }
    const std::uint32_t underlay_mtu = snapshot.local().underlay_mtu;
    for (std::size_t i = 0; i < snapshot.vpcs().size(); ++i) {
        const fabric::Vpc& vpc = snapshot.vpcs()[i];
        DnsServiceVpc v;
        v.vni = vpc.vni;
        v.gateway = {vpc.gateway_mac, vpc.gateway};
        const std::uint32_t mtu = andromeda_vpc_inner_mtu(vpc.mtu, underlay_mtu);
        v.mtu = static_cast<std::uint16_t>(std::min<std::uint32_t>(mtu, 0xffff));
        v.zone = zones[i];
        out.push_back(std::move(v));
    }
    return out;
}

std::vector<gateway::DnsUpstream> dns_upstreams(const fabric::LocalNodeSettings& local, std::string_view resolv_conf) {
    if (!local.dns_upstreams) return gateway::parse_resolv_conf(resolv_conf).nameservers;
    std::vector<gateway::DnsUpstream> out;
    for (const fabric::DnsUpstreamAddress& u : *local.dns_upstreams) {
        gateway::DnsUpstream d;
        if (const auto* v4 = std::get_if<wire::Ipv4Address>(&u.address)) d.address = *v4;
        else d.address = std::get<wire::Ipv6Address>(u.address);
        d.port = u.port;
        out.push_back(d);
    }
    return out;
}

bool GatewayDns::submit(std::uint32_t vni, dataplane::PortId port, wire::ByteSpan frame) {
    std::uint32_t reply_ifindex = 0;
    {
        std::lock_guard lock(mutex_);
        const auto it = steering_.find(port);
        if (it == steering_.end()) return false;
        reply_ifindex = it->second;
    }
    return service_.submit(vni, reply_ifindex, frame);
}

void GatewayDns::set_reply_ports(std::map<std::uint32_t, std::uint32_t> steering) {
    std::lock_guard lock(mutex_);
    steering_ = std::move(steering);
}

}  // namespace andromeda::daemon
