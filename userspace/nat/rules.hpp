// The per-VPC NAT rules, compiled for lookup: which address each VPC translates to, its port
// range, and its port forwards. Immutable once built; a reload builds a new NatRules and hands
// it to NatEngine::set_rules.
//
// nat/ does not depend on fabric/: the pipeline (or daemon) fills VpcNatConfig from each
// fabric::Vpc's [vpc.nat] table. That keeps the NAT testable and fuzzable with no fabric at all,
// and the conversion is a few assignments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nat/types.hpp"
#include "util/flat_table.hpp"
#include "wire/addresses.hpp"

namespace andromeda::nat {

using wire::Ipv4Address;

inline constexpr std::uint16_t kDefaultPortMin = 1024;
inline constexpr std::uint16_t kDefaultPortMax = 65535;

// `nat address : nat_port (protocol) -> endpoint_ip : endpoint_port` in the VPC.
struct PortForward {
    Protocol protocol = Protocol::tcp;  // tcp or udp
    std::uint16_t nat_port = 0;
    Ipv4Address endpoint_ip;
    std::uint16_t endpoint_port = 0;

    friend bool operator==(const PortForward&, const PortForward&) = default;
};

struct VpcNatConfig {
    std::uint32_t vni = 0;
    Ipv4Address nat_address;
    // Ports (and ICMP echo identifiers) the NAT may allocate on nat_address for this VPC.
    std::uint16_t port_min = kDefaultPortMin;
    std::uint16_t port_max = kDefaultPortMax;
    std::vector<PortForward> forwards;

    friend bool operator==(const VpcNatConfig&, const VpcNatConfig&) = default;
};

// A port forward as found by a lookup, with its VPC.
struct ForwardMatch {
    std::uint32_t vni = 0;
    Ipv4Address nat_address;
    PortForward forward;
    bool endpoint_shared = false;  // another forward leads to the same endpoint ip:port
};

class NatRules {
public:
    // Throws std::invalid_argument naming the VPC and field when the rules are inconsistent:
    // duplicate VNI, empty or inverted port range, port 0, a forward on a protocol other than
    // TCP/UDP, or two forwards of the same NAT address, protocol and port (VPCs may share an
    // address; their forwards then share its port space).
    explicit NatRules(std::vector<VpcNatConfig> vpcs = {});

    [[nodiscard]] const VpcNatConfig* find_vpc(std::uint32_t vni) const noexcept {
        const std::uint32_t i = vpc_by_vni_.find(vni);
        return i == kMissing ? nullptr : &vpcs_[i];
    }
    [[nodiscard]] bool is_nat_address(Ipv4Address address) const noexcept {
        return address_users_.find(address.value()) != kMissing;
    }
    // The forward for traffic arriving at nat_address:nat_port.
    [[nodiscard]] const ForwardMatch* find_forward(Ipv4Address nat_address, Protocol protocol,
                                                   std::uint16_t nat_port) const noexcept {
        const std::uint32_t i = forward_by_nat_port_.find(nat_port_key(nat_address, protocol, nat_port));
        return i == kMissing ? nullptr : &forwards_[i];
    }
    // The forward whose endpoint is (vni, ip:port): its traffic leaves from the forwarded port.
    [[nodiscard]] const ForwardMatch* find_forward_from_endpoint(std::uint32_t vni, Protocol protocol, Ipv4Address ip,
                                                                 std::uint16_t port) const noexcept {
        const std::uint32_t i = forward_by_endpoint_.find(EndpointKey::of(vni, protocol, ip, port));
        return i == kMissing ? nullptr : &forwards_[i];
    }
    // True when nat_address:port is forwarded for `protocol` (never allocated dynamically).
    [[nodiscard]] bool is_forwarded(Ipv4Address nat_address, Protocol protocol, std::uint16_t port) const noexcept {
        return has_forwards_ && find_forward(nat_address, protocol, port) != nullptr;
    }
    [[nodiscard]] const std::vector<VpcNatConfig>& vpcs() const noexcept { return vpcs_; }

private:
    using U64Hash = util::Mix64;
    template <class Key, class Hash>
    using Lookup = util::FlatTable<Key, std::uint32_t, Hash>;
    static constexpr std::uint32_t kMissing = Lookup<std::uint64_t, U64Hash>::kMissing;
    struct EndpointKey {
        std::uint64_t high = 0;  // vni << 8 | protocol
        std::uint64_t low = 0;   // ip << 16 | port
        static EndpointKey of(std::uint32_t vni, Protocol p, Ipv4Address ip, std::uint16_t port) noexcept {
            return {std::uint64_t{vni} << 8 | static_cast<std::uint8_t>(p), std::uint64_t{ip.value()} << 16 | port};
        }
        friend bool operator==(const EndpointKey&, const EndpointKey&) = default;
    };
    struct EndpointHash {
        std::uint64_t operator()(const EndpointKey& k) const noexcept { return util::Mix64{}(k.high * 0x9E3779B97F4A7C15ULL ^ k.low); }
    };
    static std::uint64_t nat_port_key(Ipv4Address a, Protocol p, std::uint16_t port) noexcept {
        return std::uint64_t{a.value()} << 24 | std::uint64_t{static_cast<std::uint8_t>(p)} << 16 | port;
    }
    void check_and_index();

    std::vector<VpcNatConfig> vpcs_;
    std::vector<ForwardMatch> forwards_;
    Lookup<std::uint64_t, U64Hash> vpc_by_vni_;
    Lookup<std::uint64_t, U64Hash> address_users_;
    Lookup<std::uint64_t, U64Hash> forward_by_nat_port_;
    Lookup<EndpointKey, EndpointHash> forward_by_endpoint_;
    bool has_forwards_ = false;
};

}  // namespace andromeda::nat
