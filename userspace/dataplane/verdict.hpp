// What the pipeline decided for one frame, and every reason it may drop one. Each drop reason is
// also a named counter field (counters.hpp), so `bpftool map dump` and `andromedactl stats` can
// say exactly why traffic vanished. The X-macro keeps the enum, its names and the counter fields
// in one list that cannot drift apart.
#pragma once

#include <cstdint>
#include <string_view>

namespace andromeda::dataplane {

enum class Verdict : std::uint8_t {
    forward,  // encapsulated towards another node (one outer packet, or one per fragment)
    deliver,  // to a local tenant port (from the fabric, or from another tenant port of this host)
    reply,    // the gateway answered on the ingress port (ARP, echo, Fragmentation Needed, Packet Too Big)
    to_nat,   // handed to the NAT stage (see NatRequest); nothing was emitted
    drop,     // see DropReason
};

[[nodiscard]] constexpr std::string_view to_string(Verdict v) noexcept {
    switch (v) {
        case Verdict::forward: return "forward";
        case Verdict::deliver: return "deliver";
        case Verdict::reply: return "reply";
        case Verdict::to_nat: return "to_nat";
        case Verdict::drop: return "drop";
    }
    return "unknown";
}

// X(name, description)
#define ANDROMEDA_DROP_REASONS(X)                                                                          \
    /* any port */                                                                                         \
    X(unknown_port, "the frame came from a port missing from the port table")                             \
    X(malformed_ethernet, "shorter than an Ethernet header, or more than two VLAN tags")                  \
    X(no_tx_buffer, "no spare buffer or emission slot left for an output frame")                          \
    X(tx_buffer_too_small, "a spare buffer cannot hold the output frame")                                 \
    /* tenant ports */                                                                                     \
    X(tenant_port_unbound, "the tenant port carries no local endpoint in the current fabric")            \
    X(spoofed_source_mac, "Ethernet source is not the port's endpoint MAC")                               \
    X(spoofed_source_ip, "IPv4 source is not the port's endpoint address")                                \
    X(spoofed_arp_sender, "ARP sender MAC/IP is not the port's endpoint")                                 \
    X(malformed_arp, "not an Ethernet/IPv4 ARP packet, or truncated")                                     \
    X(arp_not_request, "ARP reply or unknown opcode from a tenant: the gateway answers all requests")     \
    X(arp_probe, "ARP probe (sender 0.0.0.0): answering would report a conflict")                        \
    X(arp_for_own_address, "ARP for the asker's own address (gratuitous/announcement): never answered")   \
    X(multicast_or_broadcast, "multicast/broadcast destination: the fabric carries unicast only")         \
    X(not_to_gateway_mac, "unicast IP frame not sent to the VPC's gateway MAC")                            \
    X(unsupported_ethertype, "neither IPv4, IPv6 nor ARP")                                                 \
    X(malformed_ipv4, "IPv4 header or lengths do not parse")                                              \
    X(bad_ipv4_checksum, "IPv4 header checksum does not verify")                                          \
    X(malformed_ipv6, "IPv6 header, lengths or extension headers do not parse")                           \
    X(ipv6_not_routed, "IPv6 fits the overlay but the fabric has no IPv6 endpoints to route it to")       \
    X(gateway_unsupported, "to the gateway address but not an echo request it can answer")                \
    X(no_such_endpoint, "destination inside the VPC but no endpoint has that address")                    \
    X(no_route, "destination outside the VPC and the VPC has no NAT")                                     \
    X(endpoint_port_unbound, "local destination endpoint whose tenant port is not in the port table")     \
    X(no_next_hop, "the destination node's underlay MAC (or address) is unknown")                         \
    X(no_underlay_port, "no port with the underlay role is configured")                                   \
    X(no_underlay_address, "this node's underlay IPv4 address is unknown")                                \
    X(too_big_no_icmp, "too big for the overlay, and an ICMP error about it is not allowed")              \
    X(icmp_error_rate_limited, "too big for the overlay; the sender's ICMP error budget is spent")       \
    /* underlay port */                                                                                    \
    X(underlay_not_overlay, "not IPv4/UDP to the overlay port (host traffic that should have been passed)") \
    X(malformed_overlay, "an overlay packet that fails decapsulation (see decap_errors)")                 \
    X(wrong_underlay_vlan, "outer 802.1Q tag is not [node] underlay_vlan (another VLAN of the trunk)")   \
    X(not_for_this_node, "outer destination is not this node's underlay address")                        \
    X(unknown_peer, "outer source is not a known peer node")                                              \
    X(overlay_control_unsupported, "Andromeda control/OAM flags set: no control messages are handled")    \
    X(overlay_hop_limit_exceeded, "overlay hop limit is 0")                                               \
    X(unknown_vni, "VNI of no VPC")                                                                        \
    X(malformed_inner_frame, "inner Ethernet/IPv4 malformed or its header checksum fails")                \
    X(inner_not_ipv4, "inner frame is not IPv4 (ARP and IPv6 are answered locally, never tunnelled)")    \
    X(fabric_spoofed_source, "inner source is not an endpoint of the VPC on the sending node")            \
    X(not_local_endpoint, "inner destination is not an endpoint of the VPC on this node")                 \
    /* uplink port */                                                                                      \
    X(uplink_without_nat, "uplink frame but this node is no VPC's NAT gateway")

enum class DropReason : std::uint8_t {
    none,
#define ANDROMEDA_DROP_ENUM(name, description) name,
    ANDROMEDA_DROP_REASONS(ANDROMEDA_DROP_ENUM)
#undef ANDROMEDA_DROP_ENUM
};

inline constexpr std::size_t kDropReasonCount = 0
#define ANDROMEDA_DROP_COUNT(name, description) +1
    ANDROMEDA_DROP_REASONS(ANDROMEDA_DROP_COUNT)
#undef ANDROMEDA_DROP_COUNT
    ;

[[nodiscard]] constexpr std::string_view to_string(DropReason r) noexcept {
    switch (r) {
        case DropReason::none: return "none";
#define ANDROMEDA_DROP_NAME(name, description) \
    case DropReason::name: return #name;
        ANDROMEDA_DROP_REASONS(ANDROMEDA_DROP_NAME)
#undef ANDROMEDA_DROP_NAME
    }
    return "unknown";
}

[[nodiscard]] constexpr std::string_view describe(DropReason r) noexcept {
    switch (r) {
        case DropReason::none: return "not dropped";
#define ANDROMEDA_DROP_DESCRIPTION(name, description) \
    case DropReason::name: return description;
        ANDROMEDA_DROP_REASONS(ANDROMEDA_DROP_DESCRIPTION)
#undef ANDROMEDA_DROP_DESCRIPTION
    }
    return "unknown";
}

}  // namespace andromeda::dataplane
