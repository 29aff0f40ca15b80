#include "nat/settings.hpp"

namespace andromeda::nat {

std::string validate(const NatSettings& s) {
    if (s.shards == 0 || s.shards > 1024) return "nat shards must be between 1 and 1024";
    if (s.max_flows < s.shards) return "nat max_flows must be at least the number of shards";
    if (s.max_flows > (std::size_t{1} << 31)) return "nat max_flows must be at most 2^31";
    if (s.max_nat_addresses == 0 || s.max_nat_addresses > 4096)
        return "nat max_nat_addresses must be between 1 and 4096";
    if (s.wheel_tick.count() <= 0) return "nat wheel_tick must be positive";
    const auto& t = s.timeouts;
    for (const auto timeout : {t.tcp_handshake, t.tcp_established, t.tcp_closing, t.udp, t.icmp})
        if (timeout.count() <= 0) return "nat timeouts must be positive";
    if (s.offload.grace.count() < 0) return "nat offload grace must not be negative";
    if (s.tenant_flows.rate != 0 && s.tenant_flows.burst == 0)
        return "nat tenant_flows burst must be at least 1 when a rate is set";
    if (s.tenants_tracked == 0 || s.tenants_tracked > (std::size_t{1} << 24))
        return "nat tenants_tracked must be between 1 and 2^24";
    if (s.offload.queue_limit == 0) return "nat offload queue_limit must be at least 1";
    return {};
}

}  // namespace andromeda::nat
