// NAT flows of the differential fabric's VPCs whose NAT gateway is this node (orange, purple), and
// the packets of both their sides, for tests/bpf/nat_test.cpp: a tenant's packets (from its port
// when it is on node1, encapsulated by its node otherwise), the outside's on the uplink. Opening a
// flow is what the daemon does: its first packets through both sides (the kernel has no entry and
// punts, the pipeline decides the flow), the engine's changes written into the kernel's map by
// io::NatFlowMap after each.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "differential_check.hpp"
#include "differential_fabric.hpp"

namespace andromeda::fast_path_test {

// Hosts outside.
inline constexpr std::uint32_t kGoogle = ip4(8, 8, 8, 8), kQuad9 = ip4(9, 9, 9, 9), kWeb = ip4(93, 184, 216, 34);

// TCP flags.
inline constexpr std::uint8_t kFin = 0x01, kSyn = 0x02, kRst = 0x04, kPsh = 0x08, kAck = 0x10;

struct NatFlow {
    std::string vpc;           // "orange" or "purple"
    std::uint32_t tenant = 0;  // the endpoint's last octet
    std::uint8_t protocol = kUdp;
    std::uint16_t tenant_port = 0;  // ICMP echo: the tenant's identifier
    std::uint32_t remote = 0;       // the host outside
    std::uint16_t remote_port = 0;  // ICMP echo: 0
    std::uint16_t forward = 0;      // a port forward's nat_port: the outside opens the flow
    std::uint16_t nat_port = 0;     // the NAT's port (ICMP: identifier), known once opened

    [[nodiscard]] const VpcDef& vpc_def() const { return vpc_named(vpc); }
    [[nodiscard]] const EndpointDef& endpoint_def() const { return endpoint(vpc, tenant); }
    [[nodiscard]] bool local() const { return endpoint_def().node == "node1"; }
    [[nodiscard]] std::string name() const;  // "udp orange .10:40000 -> 8.8.8.8:53"

    // The kernel's keys, one per direction, as the packets arrive (shared/andromeda_nat_kern_user.h).
    [[nodiscard]] andromeda_nat_key outbound_key() const;
    [[nodiscard]] andromeda_nat_key inbound_key() const;
};

// The flow's packets as specs a case edits before building, `total` bytes of IPv4: outbound from
// the tenant to its VPC's gateway MAC, inbound from the uplink's router to the uplink's MAC, to
// the NAT address and port. TCP: PSH ACK; ICMP: echo request out, echo reply in.
Ipv4Frame outbound_spec(const NatFlow& f, std::size_t total = 100);
Ipv4Frame inbound_spec(const NatFlow& f, std::size_t total = 100);

// A case with the tenant's frame (Ethernet + IPv4, as the tenant sent it): on its tenant port when
// it is on node1, else in an overlay packet from its node. And one with a frame from the outside.
Case from_tenant(Encap kind, const NatFlow& f, Bytes frame, std::string name, std::string expect);
Case from_outside(Bytes frame, std::string name, std::string expect);

// What a packet of an installed flow becomes in the kernel, going out ("nat_out") and coming in:
// "nat_local" (its tenant is on node1), "nat_encap" (on node2) or "punt_no_next_hop" (on node3,
// whose next hop is unknown).
inline const std::string kTranslatedOut = "nat_out";
std::string translated_in(const NatFlow& f);

// An ICMP error (`type`, `code`) from `src` to `dst` quoting the first bytes of `quoted` (an
// IPv4 packet, from its header): what a router sends about a packet of a flow.
Bytes icmp_error(const Mac& src_mac, const Mac& dst_mac, std::uint32_t src, std::uint32_t dst, std::uint8_t type,
                 std::uint8_t code, const Bytes& quoted_frame);

// The frame with its transport's checksum set so that, once NAT has rewritten its addresses and
// ports to those of `translated` (the same packet as translated), the checksum comes out as
// `target` (0: computed as zero, which UDP sends as 0xffff): the last two bytes of the payload
// are chosen for it. The frame's own checksum stays correct.
Bytes with_translated_checksum(Bytes frame, const Bytes& translated, std::uint16_t target);

// Opens `f` as the daemon would see it (the first packets through both sides, the engine's
// changes applied to the kernel after each: TCP needs SYN, SYN+ACK, ACK; a forward opens from the
// outside) and learns its nat_port. False, with the test failed, when a step disagrees or the
// kernel does not then hold both directions of exactly this flow.
bool open_flow(World& w, NatFlow& f, Tally& tally);

// The NAT's differential tests (nat_test.cpp, nat_state_test.cpp, nat_mutation_test.cpp): a
// world per test whose tc programs run on CHECKSUM_COMPLETE skbs where the kernel makes them
// (SkbShape: every rewrite must then keep skb->csum true as well as the bytes right).
class NatDifferential : public DifferentialTest {
protected:
    void SetUp() override;
    // Opens every flow, failing the test when one does not open.
    void open(std::vector<NatFlow>& flows, Tally& tally);
    // run_case, in the context of the test's name unless given one.
    PipelineOut run(const Case& c, Tally& tally, const std::string& context = "");
};

}  // namespace andromeda::fast_path_test
