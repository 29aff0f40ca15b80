// One node's fast path and pipeline over one fabric, for running frames through both sides.
//
// The BPF programs run with BPF_PROG_TEST_RUN, their maps filled as the daemon fills them
// (io::plan_full / plan_diff, the daemon's port table code, andromeda_fp_config, and the NAT's
// flows through io::NatFlowMap), and the pipeline reads the same fabric's snapshot, in place in a
// chunk with headroom as the daemon runs it: a dataplane::NatPipeline over the Pipeline, with a
// NAT engine whose flows are offloaded (node1 is the NAT gateway of two VPCs). The process enters
// a network namespace of its own and makes veth pairs there for the underlay, the uplink, the
// tenant ports and the punt pairs of all three, so every ifindex handed to the kernel is a real
// device, and all of them go away with the process.
//
// BPF_PROG_TEST_RUN reports the return code and the packet, not where a redirect goes: a punt's
// target is the port's `link`, an encapsulation's the underlay and a NAT'd packet's the uplink by
// construction, and a local delivery's or a decapsulation's is the fabric map entry the program
// reads (looked up here the same way, into local_target / target).
#pragma once

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "andromeda_kern_user.h"
#include "andromeda_nat_kern_user.h"
#include "andromeda_xdp.skel.h"
#include "dataplane/nat_pipeline.hpp"
#include "dataplane/pipeline.hpp"
#include "differential_fabric.hpp"
#include "fabric/fabric.hpp"
#include "io/plan/map_plan.hpp"
#include "io/plan/map_sync.hpp"
#include "io/plan/nat_flow_map.hpp"
#include "io/plan/policy_flow_map.hpp"
#include "io/plan/port_table.hpp"
#include "nat/nat_engine.hpp"
#include "support/xdp_skeleton.hpp"

namespace andromeda::fast_path_test {

// after - before, counter by counter (the stats structs are all __u64 counters).
template <class Stats>
Stats minus(const Stats& after, const Stats& before) {
    constexpr std::size_t n = sizeof(Stats) / sizeof(__u64);
    static_assert(sizeof(Stats) == n * sizeof(__u64));
    std::array<__u64, n> a{}, b{};
    std::memcpy(a.data(), &after, sizeof after);
    std::memcpy(b.data(), &before, sizeof before);
    for (std::size_t i = 0; i < n; ++i) a[i] -= b[i];
    Stats out{};
    std::memcpy(&out, a.data(), sizeof out);
    return out;
}

// ---- what each side did ------------------------------------------------------------------------

struct TestRun {
    int error = 0;  // errno of a failed BPF_PROG_TEST_RUN
    std::uint32_t retval = 0;
    Bytes out;
    Bytes meta;  // XDP: the metadata the program left in front of the packet
};

// What BPF_PROG_TEST_RUN makes of the skb a tc program runs on (it cannot make CHECKSUM_PARTIAL
// ones, nor set a GSO type).
struct SkbShape {
    // BPF_F_TEST_SKB_CHECKSUM_COMPLETE: skb->csum is the packet's sum from its network header on,
    // and the kernel fails the run (EBADMSG) when the program leaves it stale. The helpers patch
    // the packet's bytes exactly as for a CHECKSUM_NONE skb; what this adds is the proof that
    // each rewrite kept skb->csum true, which it does only when the pseudo-header changes were
    // declared as such (BPF_F_PSEUDO_HDR), the very flag a CHECKSUM_PARTIAL skb needs.
    bool checksum_complete = false;
    // A GSO packet of segments of gso_size bytes of payload (gso_segs of them); 0: not GSO.
    std::uint16_t gso_size = 0;
    std::uint16_t gso_segs = 0;
};

// The NAT flow entry a packet's tuple finds in andromeda_nat_flows (the key made here from the
// frame's bytes, by the contract of shared/andromeda_nat_kern_user.h), before and after the run:
// what the program recorded of its use.
struct NatUse {
    std::optional<andromeda_nat_key> key;  // none: the frame has no NAT tuple (not plain IPv4, no ports)
    std::optional<andromeda_nat_entry> before, after;
    std::uint64_t ran_at_ns = 0;  // CLOCK_MONOTONIC (bpf_ktime_get_ns) just before the run
    std::uint64_t length = 0;     // the bytes a translation counts: the frame's, less the outer headers
};

struct TenantBpf {
    TestRun run;
    andromeda_fp_stats delta{};
    std::uint32_t local_target = 0;  // a local delivery: the fabric entry's ifindex, bpf_redirect_peer's target
    NatUse nat;
};

struct UnderlayBpf {
    TestRun xdp;
    andromeda_xdp_stats xdp_delta{};
    bool tc_ran = false;  // only what XDP passes reaches tc
    TestRun tc;
    andromeda_fp_stats tc_delta{};
    std::uint32_t target = 0;    // a decapsulation: the fabric entry's ifindex, bpf_redirect_peer's target
    std::uint32_t underlay = 0;  // the device XDP ran on
    NatUse nat;
};

// andromeda_tc_uplink on the uplink.
struct UplinkBpf {
    TestRun run;
    andromeda_fp_stats delta{};
    std::uint32_t local_target = 0;  // a translation to a local tenant: its fabric entry's ifindex
    NatUse nat;
};

struct PuntBpf {
    TestRun run;
    andromeda_fp_stats delta{};
};

struct PipelineOut {
    dataplane::Verdict verdict = dataplane::Verdict::drop;
    dataplane::DropReason reason = dataplane::DropReason::none;
    nat::DropReason nat_drop = nat::DropReason::none;  // the NAT engine refused it
    dataplane::NatStageDrop stage_drop = dataplane::NatStageDrop::none;
    dataplane::NatPath nat_path = dataplane::NatPath::none;
    std::vector<std::pair<dataplane::PortId, Bytes>> emitted;
};

// The andromeda_nat_flows key of the IPv4 packet at `ip` (`length` bytes from there), arriving
// from a tenant of `vni` (outbound) or from the outside (inbound): its addresses, ports (ICMP: an
// echo request's identifier going out, an echo reply's coming in), protocol. nullopt for a
// packet without one (options, too short, another protocol or ICMP type).
std::optional<andromeda_nat_key> nat_key_of(const std::uint8_t* ip, std::size_t length, bool outbound,
                                            std::uint32_t vni);

// ---- the devices and the world -----------------------------------------------------------------

struct Devices {
    std::string error;  // empty: ready
    std::uint32_t underlay = 0;
    std::uint32_t uplink = 0;
    std::map<std::string, std::uint32_t> tenants;    // port name -> ifindex
    std::map<std::uint32_t, io::PuntDevices> punts;  // tenant, underlay or uplink ifindex -> its punt pair
};

// The namespace and its devices, made on the first call (one set per process).
const Devices& devices();

class World {
public:
    // The object loaded as andromedad loads it, its rodata from the kernel probes
    // (io/bpf/kernel_probe.hpp), unless `decap_l4_udp` says otherwise.
    // `decap_l4_udp` and `xdp_metadata`: the object's load-time flags, as probed unless given.
    // A fabric whose nodes have IPv6 addresses (with_ipv6_underlay) makes a world over an IPv6
    // underlay, as andromedad runs it there: node1 at fd00:1::1, the maps naming nodes by peer
    // key, andromeda_fp_config's underlay_ip 0 and underlay_ip6 set, no kernel NAT (its uplink
    // fields left out), the pipeline's next hop by node2's IPv6 address.
    World(Encap encap, const std::string& toml, std::optional<bool> decap_l4_udp = std::nullopt,
          std::optional<bool> xdp_metadata = std::nullopt);

    [[nodiscard]] const std::string& error() const { return error_; }
    [[nodiscard]] Encap encap() const { return encap_; }
    [[nodiscard]] bool ipv6_underlay() const { return ipv6_underlay_; }
    [[nodiscard]] std::uint32_t underlay() const { return dev_.underlay; }
    [[nodiscard]] std::uint32_t uplink() const { return dev_.uplink; }
    [[nodiscard]] std::uint32_t tenant(const std::string& port) const { return dev_.tenants.at(port); }
    [[nodiscard]] const io::PuntDevices& punt_pair(std::uint32_t port) const { return dev_.punts.at(port); }
    [[nodiscard]] const andromeda_xdp& skel() const { return *skel_; }
    static int fd(const bpf_map* map) { return bpf_map__fd(map); }

    // A reload as the daemon does it: plan_diff into the maps, the port table re-synced, the
    // pipeline on the new snapshot, and the NAT's flows the reload ends (endpoints removed, a
    // rule or forward gone: NatPipeline::on_reload, NatEngine::remove_stale) out of the kernel
    // (apply_nat_changes) before it returns.
    bool reload(const std::string& toml);

    // The NAT side, as the daemon runs it. The engine's clock is steady_clock (the clock of
    // bpf_ktime_get_ns) plus what advance() added.
    [[nodiscard]] nat::NatEngine& nat() { return *nat_; }
    [[nodiscard]] io::NatFlowMap& nat_flow_map() { return *nat_flow_map_; }
    [[nodiscard]] nat::TimePoint now() const { return nat::Clock::now() + skew_; }
    void advance(nat::Duration by) { skew_ += by; }
    // The engine's queued installs and removals, drained and written into andromeda_nat_flows by
    // io::NatFlowMap, exactly as the daemon does it; returns them.
    std::vector<nat::OffloadChange> apply_nat_changes();
    // The kernel's entry for `key`, or nullopt.
    [[nodiscard]] std::optional<andromeda_nat_entry> nat_entry(const andromeda_nat_key& key) const;

    // The security groups' side, as the daemon runs it: the pipeline's firewall, its kernel flows
    // on; its queued installs and removals drained and written into andromeda_policy_flows by
    // io::PolicyFlowMap (PolicyOffloadLoop's every 2 ms). Returns how many.
    [[nodiscard]] policy::Firewall& firewall() { return *firewall_; }
    std::size_t apply_policy_changes();

    // How the tc programs' skbs are made from here on (SkbShape).
    void set_skb_shape(const SkbShape& shape) { skb_shape_ = shape; }
    [[nodiscard]] const SkbShape& skb_shape() const { return skb_shape_; }
    // Whether this kernel makes CHECKSUM_COMPLETE skbs for a test run (6.11 and later).
    [[nodiscard]] bool kernel_checks_complete_checksums();

    // andromeda_fp_config.encap_headroom: what the encap makes room for in front of a small frame
    // (andromedad writes ANDROMEDA_ENCAP_HEADROOM on a veth underlay, 0 elsewhere). The frame
    // that leaves must be the same either way.
    void set_encap_headroom(std::uint16_t bytes);
    // andromeda_fp_config.reseg_ifindex: the segmenting pair's entry over an IPv6 underlay
    // (andromedad makes the pair; 0, as written at the start: none, such packets are punted).
    void set_reseg_ifindex(std::uint32_t ifindex);

    // A path MTU towards node `node` (host order) learned as the daemon learns one: in the
    // pipeline's table and in andromeda_peer_mtu, for ANDROMEDA_PEER_MTU_LIFETIME_S from now.
    // With `expired`, only the map gets it, with an expiry already passed (the daemon has not
    // erased it yet): the fast path must ignore it as the pipeline does. False if the map refused.
    bool learn_path_mtu(std::uint32_t node, std::uint32_t mtu, bool expired = false);

    // With `gso_size`, as a GSO packet of a type the kernel will not encapsulate (bpf_world.cpp).
    TenantBpf run_tenant(std::uint32_t ifindex, const Bytes& frame, std::uint16_t gso_size = 0);
    // XDP on the underlay, then, for what XDP passes, tc on the underlay (an overlay packet over
    // either underlay: the offsets of its VNI and inner headers are read by its outer ethertype).
    UnderlayBpf run_underlay(const Bytes& frame);
    PuntBpf run_punt(std::uint32_t ifindex, const Bytes& frame);
    // andromeda_tc_reseg, the IPv6 underlay's segmenting pair's far end, on `frame`.
    PuntBpf run_reseg(const Bytes& frame);
    UplinkBpf run_uplink(const Bytes& frame);
    // The XDP program alone, on any device (a punt pair's steering end, say), with its counters.
    TestRun run_xdp(std::uint32_t ifindex, const Bytes& frame, andromeda_xdp_stats& delta);
    // The NatPipeline, on the port's frame (a tenant port, the underlay or the uplink).
    PipelineOut run_pipeline(dataplane::PortId port, const Bytes& frame);

private:
    std::shared_ptr<const fabric::FabricSnapshot> load(const std::string& toml);
    template <class K, class V>
    bool apply_table(const bpf_map* map, const io::TableChanges<K, V>& changes, const char* name);
    bool apply(const io::FabricMapPlan& plan);
    bool write_ports();
    bool write_config();
    // Reads andromeda_fp_config, lets `edit` change it, writes it back (a test's assertion fails
    // if the map refuses).
    void edit_config(const std::function<void(andromeda_fp_config&)>& edit);
    void write_uplink_config(andromeda_fp_config& config) const;
    void make_pipeline();
    std::uint32_t fabric_ifindex(const andromeda_fabric_key& key) const;
    // The same for (VNI, the 16 bytes of an IPv6 address at `address`), in andromeda_fabric6.
    std::uint32_t fabric6_ifindex(std::uint32_t vni, const std::uint8_t* address) const;
    andromeda_fp_stats fp_stats() const;
    // Runs `run` (a BPF_PROG_TEST_RUN) with the NAT entry of `key` read around it.
    template <class Run>
    NatUse with_nat_use(std::optional<andromeda_nat_key> key, std::uint64_t length, Run run);

    Encap encap_;
    bool ipv6_underlay_ = false;
    const Devices& dev_;
    std::string error_;
    std::shared_ptr<const fabric::FabricSnapshot> snapshot_;
    io::LocalContext local_;
    io::PortSlots port_slots_;
    io::PortTable written_ports_;
    andromeda::testing::Skel skel_;
    std::unique_ptr<dataplane::Pipeline> pipeline_;
    std::unique_ptr<nat::NatEngine> nat_;
    std::unique_ptr<dataplane::NatPipeline> nat_stage_;
    std::unique_ptr<io::MapWriter> map_writer_;
    std::unique_ptr<io::NatFlowMap> nat_flow_map_;
    std::shared_ptr<policy::Firewall> firewall_;
    std::unique_ptr<io::PolicyFlowMap> policy_flow_map_;
    nat::Duration skew_{0};
    SkbShape skb_shape_;
    std::vector<Bytes> spare_chunks_;
    std::vector<dataplane::PacketBuffer> spares_;
    std::vector<dataplane::Emission> slots_;
    dataplane::FrameSink sink_;
    Bytes input_chunk_;
};

// One map entry changed (or erased) for as long as this lives, then put back as it was: what a
// stale or broken entry makes the programs do. error() says why the change could not be made;
// a failed restore is a test failure.
class MapEntryOverride {
public:
    template <class Value, class Key, class Edit>
    static std::unique_ptr<MapEntryOverride> edited(int map_fd, const Key& key, Edit edit) {
        Value value{};
        auto o = std::unique_ptr<MapEntryOverride>(new MapEntryOverride(map_fd, &key, sizeof key, sizeof value));
        if (!o->read()) return o;
        std::memcpy(&value, o->saved_.data(), sizeof value);
        edit(value);
        o->write(&value);
        return o;
    }
    template <class Value, class Key>
    static std::unique_ptr<MapEntryOverride> erased(int map_fd, const Key& key) {
        auto o = std::unique_ptr<MapEntryOverride>(new MapEntryOverride(map_fd, &key, sizeof key, sizeof(Value)));
        if (o->read()) o->erase();
        return o;
    }
    ~MapEntryOverride();
    MapEntryOverride(const MapEntryOverride&) = delete;
    MapEntryOverride& operator=(const MapEntryOverride&) = delete;

    [[nodiscard]] const std::string& error() const { return error_; }

private:
    MapEntryOverride(int map_fd, const void* key, std::size_t key_size, std::size_t value_size);
    bool read();
    void write(const void* value);
    void erase();

    int fd_;
    Bytes key_;
    Bytes saved_;
    bool changed_ = false;
    std::string error_;
};

}  // namespace andromeda::fast_path_test
