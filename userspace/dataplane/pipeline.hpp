// The I/O-free data-plane pipeline: one per worker. A frame goes in with the port it came from
// and the current fabric snapshot; a verdict comes out, with the frames to send written to a
// FrameSink. No sockets, no threads, no allocation per packet (only when a new snapshot
// generation arrives), so every behaviour is testable in memory and fuzzable.
//
//   tenant port  -> anti-spoofing -> ARP / echo answered by the gateway
//                                 -> local endpoint: delivered to its tenant port
//                                 -> remote endpoint: encapsulated towards its node (PMTUD first)
//                                 -> outside the VPC: NAT (here, or at the VPC's NAT node)
//   underlay     -> decap -> peer, VNI, hop limit, source checks -> local endpoint's tenant port
//   uplink       -> NAT
//
// See docs/pipeline.md for the rules, the drop reasons and what the daemon must provide.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "dataplane/counters.hpp"
#include "dataplane/fabric_state.hpp"
#include "dataplane/packet_buffer.hpp"
#include "dataplane/pipeline_config.hpp"
#include "dataplane/verdict.hpp"
#include "fabric/snapshot.hpp"
#include "gateway/rate_limiter.hpp"
#include "overlay/outer_template.hpp"
#include "wire/bytes.hpp"
#include "wire/ethernet.hpp"
#include "wire/ipv4.hpp"
#include "wire/ipv6.hpp"

namespace andromeda::dataplane {

enum class NatDirection : std::uint8_t {
    outbound,  // a tenant's frame for an address outside its VPC, at the VPC's NAT node
    inbound,   // a frame from the uplink
};

[[nodiscard]] constexpr std::string_view to_string(NatDirection d) noexcept {
    return d == NatDirection::inbound ? "inbound" : "outbound";
}

// The hook for the NAT stage: with Verdict::to_nat the pipeline emitted nothing and the frame to
// translate is input[frame_offset, frame_offset + frame_length) (for an overlay packet, its inner
// frame). Translated traffic for a VPC comes back through Pipeline::route_from_nat.
struct NatRequest {
    NatDirection direction = NatDirection::outbound;
    std::uint32_t vni = 0;                         // outbound: the source VPC; inbound: 0 (NAT knows)
    std::uint32_t vpc_index = fabric::kNoIndex;    // index into FabricSnapshot::vpcs(), outbound only
    std::uint32_t frame_offset = 0;
    std::uint32_t frame_length = 0;
};

struct FrameResult {
    Verdict verdict = Verdict::drop;
    DropReason drop_reason = DropReason::none;  // set exactly when verdict == drop
    std::uint16_t emissions = 0;                // frames this input added to the sink
    NatRequest nat;                             // verdict == to_nat
};

namespace detail {

enum class ActionKind : std::uint8_t {
    drop, encap, deliver, arp_reply, echo_reply, frag_needed, packet_too_big, to_nat, dhcp, dns_query,
    nd_advert, router_advert, echo6_reply, overlay_arp_reply, overlay_nd_advert, flood
};

// What the decision stage (which only reads the input) tells the execution stage to do. Keeping
// the two apart lets the copy and the in-place variants share every rule. Filled in place by
// reference and kept small (addresses by pointer into the snapshot): building a ~100-byte value
// field by field and then copying it between layers stalled on store forwarding.
struct Action {
    ActionKind kind = ActionKind::drop;
    DropReason reason = DropReason::none;
    bool rewrite_destination_mac = false;  // encap: to the endpoint's real MAC; deliver: always
    bool towards_nat_node = false;
    bool local_delivery = false;
    bool flood_to_peers = false;       // flood: also to the VPC's peer nodes (a tenant's frame, and
                                       // this node has an underlay port and address)
    std::uint16_t flood_copies = 0;    // flood: how many copies go out
    PortId port = kNoPort;             // deliver, and every reply: where the frame goes; flood: the
                                       // sender's port, which gets no copy
    std::uint32_t frame_offset = 0;    // the frame to forward/deliver, inside the input
    std::uint32_t frame_length = 0;    // (Ethernet padding trimmed)
    std::uint32_t ethernet_length = 0;
    std::uint32_t mtu = 0;  // encap: fragment to this IP size (0: fits); errors: the MTU to report
    overlay::OverlayFields overlay;
    overlay::OuterTemplate* outer = nullptr;
    const wire::MacAddress* destination_mac = nullptr;
    const wire::MacAddress* source_mac = nullptr;  // deliver: the gateway MAC
    const VpcState* vpc = nullptr;                 // replies: whose gateway answers
    NatRequest nat;

    void drop(DropReason why) noexcept {
        kind = ActionKind::drop;
        reason = why;
    }
};

}  // namespace detail

class Pipeline {
public:
    explicit Pipeline(PipelineConfig config);

    // Copy variant: `frame` is only read; every output goes into the sink's spare chunks.
    FrameResult process(PortId port, wire::ByteSpan frame, const fabric::FabricSnapshot& fabric, FrameSink& sink);

    // In-place variant: the input chunk may be rewritten and emitted again (encapsulated into its
    // headroom, decapsulated by moving its offset, turned into a reply); such an emission has
    // input_index 0. Fragments and ICMP errors still use spares. A dropped frame is untouched.
    FrameResult process_in_place(PortId port, const PacketBuffer& frame, const fabric::FabricSnapshot& fabric,
                                 FrameSink& sink);

    // In place, for an AF_XDP RX burst: results[i] is frames[i]'s, emissions reusing frames[i]'s
    // chunk carry input_index i. Processes min(frames.size(), results.size(), kMaxBatch) frames
    // and returns that count.
    std::size_t process_batch(std::span<const RxFrame> frames, const fabric::FabricSnapshot& fabric, FrameSink& sink,
                              std::span<FrameResult> results);

    // The NAT stage's way back: a translated IPv4 frame for VPC `vni` is routed to its endpoint
    // (delivered locally or encapsulated towards its node), never back out to NAT. Copy variant.
    FrameResult route_from_nat(std::uint32_t vni, wire::ByteSpan frame, const fabric::FabricSnapshot& fabric,
                               FrameSink& sink);
    // PMTUD for translated inbound traffic, which route_from_nat never answers with errors: when
    // `frame` (for VPC `vni`, IPv4 behind an untagged Ethernet header) has DF set and is too big
    // for the overlay towards its endpoint's node, writes Fragmentation Needed about it into `out`
    // (from the VPC's gateway to the frame's sender, next-hop MTU = the inner MTU) and returns its
    // length, counted in frag_needed_sent. 0 otherwise: it fits, its endpoint is on this node, or
    // no error may be sent (RFC 1812 4.3.2.7, the per-source rate limit); route_from_nat then
    // handles it as before. The NAT stage translates the error back through NAT (it quotes a
    // packet of a live flow) and sends it out of the uplink.
    std::size_t frag_needed_for_nat(std::uint32_t vni, wire::ByteSpan frame, const fabric::FabricSnapshot& fabric,
                                    wire::MutableByteSpan out);

    // The path MTUs this pipeline learned and sizes packets by (shared with its config's).
    [[nodiscard]] const std::shared_ptr<PeerPathMtu>& peer_path_mtu() const noexcept { return path_mtu_; }

    // The daemon learned (netlink) or changed a peer's next-hop MAC / the port table.
    void set_next_hop(const wire::IpAddress& node_address, const wire::MacAddress& mac);
    void set_ports(std::vector<PortBinding> ports);

    [[nodiscard]] const PipelineConfig& config() const noexcept { return config_; }
    // The gateway's DHCP server this pipeline answers with (the config's, or its own).
    [[nodiscard]] const GatewayDhcp& dhcp() const noexcept { return *dhcp_; }
    // The counters, the express lanes' single per-packet counts spread into every counter they stand
    // for (an express encapsulation is also an rx_tenant and a forward; an express delivery also an
    // rx_underlay, a decapsulation and a delivery).
    [[nodiscard]] PipelineCounters counters() const noexcept {
        PipelineCounters c = counters_;
        c.rx_tenant += express_encapsulated_;
        c.encapsulated += express_encapsulated_;
        c.forwarded += express_encapsulated_;
        c.rx_underlay += express_delivered_;
        c.decapsulated += express_delivered_;
        c.delivered_from_fabric += express_delivered_;
        c.delivered += express_delivered_;
        return c;
    }
    void reset_counters() noexcept {
        counters_ = PipelineCounters{};
        express_encapsulated_ = express_delivered_ = 0;
    }

private:
    struct Input {
        wire::ByteSpan bytes;
        const PacketBuffer* buffer = nullptr;  // null: copy variant
        std::int32_t index = -1;
        PortId port = kNoPort;
    };

    void prepare(const fabric::FabricSnapshot& fabric);
    // Inlined into the entry points with the express lanes: their calls and register saves were a
    // fifth of an express-lane packet. Returns the result whole, so the entry points construct it in
    // place and a batch's results need no clearing.
    [[gnu::always_inline]] inline FrameResult process_one(const Input& input, FrameSink& sink);

    // Decision stage (pipeline_tenant.cpp, pipeline_underlay.cpp): each fills `a`.
    using Action = detail::Action;
    enum class Origin : std::uint8_t { tenant, nat };
    void decide(const detail::PortState* port, const Input& input, Action& a);
    void decide_tenant(const detail::PortState& port, const Input& input, Action& a);
    void decide_tenant_arp(const fabric::Endpoint& endpoint, const wire::EthernetView& ethernet, const Input& input,
                           Action& a);
    // The gateway answers `endpoint` with `kind` (ARP, echo, ND, RA) within its reply budget.
    void reply_from_gateway(detail::ActionKind kind, const fabric::Endpoint& endpoint, const detail::VpcState& vpc,
                            const Input& input, Action& a);
    // The gateway's DHCP and DNS (pipeline_tenant.cpp): true with `a` set when the frame is theirs.
    [[nodiscard]] bool decide_dhcp_broadcast(const fabric::Endpoint& endpoint, const detail::VpcState& vpc,
                                             const wire::EthernetView& ethernet, const Input& input, Action& a);
    [[nodiscard]] bool decide_gateway_port(const fabric::Endpoint& endpoint, const detail::VpcState& vpc,
                                           const wire::Ipv4View& ip, const Input& input, Action& a);
    void decide_tenant_ipv4(const fabric::Endpoint& endpoint, const detail::VpcState& vpc,
                            const wire::EthernetView& ethernet, const Input& input, Action& a);
    void decide_tenant_ipv6(const fabric::Endpoint& endpoint, const detail::VpcState& vpc,
                            const wire::EthernetView& ethernet, const Input& input, Action& a);
    // The gateway's IPv6 side and IPv6 routing (pipeline_tenant.cpp; docs/ipv6.md).
    void decide_neighbor_solicitation(const fabric::Endpoint& endpoint, const detail::VpcState& vpc,
                                      const Input& input, Action& a);
    void decide_router_solicitation(const fabric::Endpoint& endpoint, const detail::VpcState& vpc, const Input& input,
                                    Action& a);
    void packet_too_big(const detail::VpcState& vpc, const fabric::Endpoint& endpoint, const wire::Ipv6View& ip,
                        std::uint32_t mtu, const Input& input, Action& a);
    void route_ipv6(const fabric::Endpoint& endpoint, const detail::VpcState& vpc, const wire::EthernetView& ethernet,
                    const wire::Ipv6View& ip, const Input& input, Action& a);
    void route_ipv4(const detail::VpcState& vpc, std::uint32_t vpc_index, const wire::EthernetView& ethernet,
                    const wire::Ipv4View& ip, const Input& input, Origin origin, Action& a);
    void encapsulate_to(std::uint32_t node_index, const detail::VpcState& vpc, const wire::EthernetView& ethernet,
                        const wire::Ipv4View& ip, const Input& input, Origin origin, Action& a);
    void too_big(const detail::VpcState& vpc, const wire::Ipv4View& ip, std::uint32_t mtu, const Input& input,
                 Origin origin, Action& a);
    // What routing IPv4 and IPv6 share (pipeline_tenant.cpp).
    void deliver_locally(const detail::EndpointRoute& target, const detail::VpcState& vpc, std::uint32_t frame_length,
                         Action& a);
    [[nodiscard]] overlay::OuterTemplate* overlay_towards(std::uint32_t node_index, const detail::VpcState& vpc,
                                                          std::uint32_t ethernet_length, std::uint32_t& mtu, Action& a);
    void encapsulate(overlay::OuterTemplate* outer, const detail::VpcState& vpc, std::uint32_t frame_length,
                     std::uint32_t ethernet_length, std::uint16_t flow_hash, Action& a);
    void decide_underlay(const Input& input, Action& a);
    // An overlay packet's inner IPv6 frame, its outer headers checked (pipeline_underlay.cpp).
    // ARP from a VXLAN peer's tenant, answered for an endpoint of this node back over the overlay.
    void decide_underlay_arp(const overlay::Decapsulated& packet, std::uint32_t peer_index, std::uint32_t vpc_index,
                             const wire::EthernetView& ethernet, Action& a);
    void decide_underlay_solicitation(const overlay::Decapsulated& packet, std::uint32_t peer_index,
                                      const detail::VpcState& vpc, const wire::EthernetView& ethernet, Action& a);
    void answer_over_overlay(detail::ActionKind kind, const overlay::Decapsulated& packet, std::uint32_t peer_index,
                             const detail::VpcState& vpc, const fabric::Endpoint& asker, const fabric::Endpoint& target,
                             const wire::EthernetView& ethernet, Action& a);
    void decide_underlay_ipv6(const overlay::Decapsulated& packet, std::uint32_t peer_index, std::uint32_t vpc_index,
                              const wire::EthernetView& ethernet, Action& a);
    // Broadcast and multicast in a VXLAN fabric (head-end replication, pipeline_flood.cpp): whether
    // `vpc` floods at all, a tenant's frame (to the VPC's other local endpoints and its peer nodes),
    // and a peer's (to the local endpoints only), within the sender's flood budget.
    [[nodiscard]] bool floods(const detail::VpcState& vpc) const noexcept;
    void flood_from_tenant(const fabric::Endpoint& sender, const detail::VpcState& vpc,
                           const wire::EthernetView& ethernet, std::size_t ip_length, const Input& input, Action& a);
    void flood_from_peer(const overlay::Decapsulated& packet, std::uint32_t peer_index, const detail::VpcState& vpc,
                         const wire::EthernetView& ethernet, Action& a);
    void flood(const fabric::Endpoint& sender, const detail::VpcState& vpc, std::uint32_t frame_offset,
               std::uint32_t frame_length, PortId sender_port, bool to_peers, Action& a);
    // An ICMP error on the underlay port about one of this node's outer packets (underlay_pmtu.hpp).
    void read_underlay_icmp(const Input& input, Action& a);
    // The outer MTU towards node `node_index` of the current snapshot: the learned one, if lower.
    [[nodiscard]] std::uint32_t learned_underlay_mtu(std::uint32_t node_index) const;
    [[nodiscard]] std::uint64_t now_ns() const;
    void decide_uplink(const Input& input, Action& a);
    // The firewall's verdict on `ip_packet` (IPv4 or IPv6, parsed by the caller) at `endpoint` in
    // `direction` (VPCs with security groups); false with `a` set to the drop when it denies.
    [[nodiscard]] bool firewall_allows(const fabric::Endpoint& endpoint, policy::PolicyDirection direction,
                                       wire::ByteSpan ip_packet, Action& a);

    // Execution stage (pipeline_execute.cpp): each fills `result`.
    void execute(const Action& action, const Input& input, FrameSink& sink, FrameResult& result);
    void execute_encap(const Action& action, const Input& input, FrameSink& sink, FrameResult& result);
    void execute_fragmented_encap(const Action& action, const Input& input, FrameSink& sink, FrameResult& result);
    void execute_deliver(const Action& action, const Input& input, FrameSink& sink, FrameResult& result);
    void finish_checksum(const Action& action, PacketBuffer& frame);
    void execute_arp_reply(const Action& action, const Input& input, FrameSink& sink, FrameResult& result);
    // ARP replies and Neighbor Advertisements to a VXLAN peer's tenant, encapsulated towards its node.
    void execute_overlay_answer(const Action& action, const Input& input, FrameSink& sink, FrameResult& result);
    void execute_echo_reply(const Action& action, const Input& input, FrameSink& sink, FrameResult& result);
    void execute_icmp_error(const Action& action, const Input& input, FrameSink& sink, FrameResult& result);
    void execute_dhcp(const Action& action, const Input& input, FrameSink& sink, FrameResult& result);
    void execute_dns_query(const Action& action, const Input& input, FrameResult& result);
    void execute_nd_advert(const Action& action, const Input& input, FrameSink& sink, FrameResult& result);
    void execute_router_advert(const Action& action, const Input& input, FrameSink& sink, FrameResult& result);
    void execute_flood(const Action& action, const Input& input, FrameSink& sink, FrameResult& result);
    void count(const FrameResult& result) noexcept;

    // Express lanes (pipeline.cpp): handle and count the frame and return true (one frame emitted:
    // forward for express_encapsulate, deliver for express_deliver), or return false having changed nothing
    // so the general path decides.
    [[gnu::always_inline]] inline bool express_encapsulate(const detail::PortState& port, const Input& input,
                                                           FrameSink& sink);
    [[gnu::always_inline]] inline bool express_deliver(const Input& input, FrameSink& sink);

    PipelineConfig config_;
    detail::FabricState state_;
    const fabric::FabricSnapshot* fabric_ = nullptr;  // the snapshot of the call in progress
    gateway::IcmpErrorRateLimiter icmp_limiter_;
    gateway::IcmpErrorRateLimiter reply_limiter_;  // the gateway's ARP and echo replies, per source
    gateway::IcmpErrorRateLimiter flood_limiter_;  // broadcast and multicast flooded, per sender MAC
    std::shared_ptr<PeerPathMtu> path_mtu_;
    std::shared_ptr<policy::Firewall> firewall_;
    std::shared_ptr<const policy::CompiledPolicy> policy_;  // firewall_'s for the current snapshot
    std::shared_ptr<GatewayDhcp> dhcp_;
    std::shared_ptr<GatewayRouterAdvertisements> router_advertisements_;
    std::uint16_t icmp_ip_id_ = 1;
    PipelineCounters counters_;
    std::uint64_t express_encapsulated_ = 0;  // see counters()
    std::uint64_t express_delivered_ = 0;
};

}  // namespace andromeda::dataplane
