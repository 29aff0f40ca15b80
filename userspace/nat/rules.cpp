#include "nat/rules.hpp"

#include <stdexcept>
#include <utility>

namespace andromeda::nat {
namespace {

std::string vpc_name(const VpcNatConfig& vpc) { return "VPC with VNI " + std::to_string(vpc.vni); }

std::string describe(const ForwardMatch& f) {
    return std::string(to_string(f.forward.protocol)) + " " + f.nat_address.to_string() + ":" +
           std::to_string(f.forward.nat_port);
}

void check_vpc(const VpcNatConfig& vpc) {
    if (vpc.port_min == 0 || vpc.port_min > vpc.port_max)
        throw std::invalid_argument(vpc_name(vpc) + ": NAT port range " + std::to_string(vpc.port_min) + "-" +
                                    std::to_string(vpc.port_max) + " is empty or starts at 0 (valid: 1-65535, min <= max)");
    for (const PortForward& f : vpc.forwards) {
        if (f.protocol != Protocol::tcp && f.protocol != Protocol::udp)
            throw std::invalid_argument(vpc_name(vpc) + ": a port forward must be tcp or udp, not " +
                                        std::string(to_string(f.protocol)));
        if (f.nat_port == 0 || f.endpoint_port == 0)
            throw std::invalid_argument(vpc_name(vpc) + ": port forward " + std::to_string(f.nat_port) + " -> " +
                                        f.endpoint_ip.to_string() + ":" + std::to_string(f.endpoint_port) +
                                        " uses port 0 (valid: 1-65535)");
    }
}

}  // namespace

NatRules::NatRules(std::vector<VpcNatConfig> vpcs) : vpcs_(std::move(vpcs)) {
    std::size_t forward_count = 0;
    for (const VpcNatConfig& vpc : vpcs_) forward_count += vpc.forwards.size();
    vpc_by_vni_ = Lookup<std::uint64_t, U64Hash>(vpcs_.size());
    address_users_ = Lookup<std::uint64_t, U64Hash>(vpcs_.size());
    forward_by_nat_port_ = Lookup<std::uint64_t, U64Hash>(forward_count);
    forward_by_endpoint_ = Lookup<EndpointKey, EndpointHash>(forward_count);
    forwards_.reserve(forward_count);
    check_and_index();
}

void NatRules::check_and_index() {
    for (std::uint32_t v = 0; v < vpcs_.size(); ++v) {
        const VpcNatConfig& vpc = vpcs_[v];
        check_vpc(vpc);
        if (!vpc_by_vni_.insert(vpc.vni, v)) throw std::invalid_argument(vpc_name(vpc) + " is listed twice");
        address_users_.insert(vpc.nat_address.value(), v);  // shared addresses are fine
        for (const PortForward& f : vpc.forwards) {
            const auto index = static_cast<std::uint32_t>(forwards_.size());
            forwards_.push_back(ForwardMatch{vpc.vni, vpc.nat_address, f});
            if (!forward_by_nat_port_.insert(nat_port_key(vpc.nat_address, f.protocol, f.nat_port), index))
                throw std::invalid_argument(vpc_name(vpc) + ": " + describe(forwards_.back()) +
                                            " is forwarded twice (each NAT address and port forwards to one endpoint)");
            // An endpoint port reachable through several forwards sends from the first one.
            const EndpointKey endpoint = EndpointKey::of(vpc.vni, f.protocol, f.endpoint_ip, f.endpoint_port);
            if (!forward_by_endpoint_.insert(endpoint, index)) {
                forwards_[forward_by_endpoint_.find(endpoint)].endpoint_shared = true;
                forwards_.back().endpoint_shared = true;
            }
        }
    }
    has_forwards_ = !forwards_.empty();
}

}  // namespace andromeda::nat
