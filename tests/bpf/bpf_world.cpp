#include "bpf_world.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <net/if.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <optional>

#include "io/bpf/bpf_instance.hpp"
#include "io/bpf/kernel_probe.hpp"
#include "io/bpf/xdp_stats.hpp"

namespace andromeda::fast_path_test {

namespace dp = dataplane;
namespace fab = fabric;
namespace aio = io;

namespace {

constexpr std::uint32_t kHeadroom = 256;  // in front of a frame in its chunk, as in a UMEM

bool shell(const std::string& command, std::string& error) {
    const int rc = std::system(command.c_str());
    if (rc != 0) error = "`" + command + "` failed (" + std::to_string(rc) + ")";
    return rc == 0;
}

bool add_veth(const std::string& name, const std::string& peer, std::uint32_t& ifindex, std::string& error) {
    if (!shell("ip link add " + name + " type veth peer name " + peer, error)) return false;
    ifindex = if_nametoindex(name.c_str());
    if (ifindex == 0) error = "no ifindex for " + name;
    return ifindex != 0;
}

// A port's punt pair (io::PuntDevices' names), added to d.punts.
bool add_punt_pair(std::uint32_t port, Devices& d) {
    aio::PuntDevices punt{};
    punt.visible = aio::punt_visible_name(port);
    punt.steering = aio::punt_steering_name(port);
    if (!add_veth(punt.visible, punt.steering, punt.visible_ifindex, d.error)) return false;
    punt.steering_ifindex = if_nametoindex(punt.steering.c_str());
    d.punts[port] = punt;
    return true;
}

// The underlay's or the uplink's punt pair in the port map, as the daemon writes it
// (shared/andromeda_kern_user.h): the port's link is the pair's visible end, a PUNT port whose
// link is the port (F_EGRESS for the uplink's: the pipeline's frames leave out of it); the far
// end steers to the pipeline like the port itself (F_PUNTED: tc has judged its frames already).
void add_port_punt_pair(aio::PortTable& table, std::uint32_t port, const aio::PuntDevices& punt) {
    andromeda_port& p = table.at(port);
    p.link = punt.visible_ifindex;
    andromeda_port visible{};
    visible.role = ANDROMEDA_PORT_PUNT;
    visible.link = port;
    if (p.role == ANDROMEDA_PORT_UPLINK) visible.flags = ANDROMEDA_PORT_F_EGRESS;
    andromeda_port steering = p;
    steering.link = 0;
    steering.flags |= ANDROMEDA_PORT_F_PUNTED;
    table[punt.visible_ifindex] = visible;
    table[punt.steering_ifindex] = steering;
}

std::uint64_t monotonic_ns() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(t.tv_nsec);
}

// The NAT engine as a gateway node runs it, offload on; small tables (a test makes few flows).
nat::NatSettings nat_settings() {
    nat::NatSettings s;
    s.max_flows = 65536;
    s.shards = 2;
    s.hash_seed = 0x5eed;
    s.offload.enabled = true;
    return s;
}

// Debian 12's UAPI headers (6.1) predate it; kernels from 6.11 have it.
#ifdef BPF_F_TEST_SKB_CHECKSUM_COMPLETE
constexpr std::uint32_t kChecksumComplete = BPF_F_TEST_SKB_CHECKSUM_COMPLETE;
#else
constexpr std::uint32_t kChecksumComplete = 1u << 2;
#endif

// BPF_PROG_TEST_RUN with `frame` in and up to 512 bytes more out; `ctx` and `ctx_out` are the
// program type's context.
template <class Ctx>
TestRun test_run(int prog, const Bytes& frame, Ctx& ctx, Ctx* ctx_out, std::uint32_t flags = 0) {
    TestRun r;
    r.out.assign(frame.size() + 512, 0);
    bpf_test_run_opts opts{};
    opts.sz = sizeof opts;
    opts.data_in = frame.data();
    opts.data_size_in = static_cast<__u32>(frame.size());
    opts.data_out = r.out.data();
    opts.data_size_out = static_cast<__u32>(r.out.size());
    opts.ctx_in = &ctx;
    opts.ctx_size_in = sizeof ctx;
    opts.ctx_out = ctx_out;
    opts.ctx_size_out = ctx_out != nullptr ? sizeof *ctx_out : 0;
    opts.repeat = 1;
    opts.flags = flags;
    if (bpf_prog_test_run_opts(prog, &opts) != 0) {
        r.error = errno;
        r.out.clear();
        return r;
    }
    r.retval = opts.retval;
    r.out.resize(opts.data_size_out);
    return r;
}

TestRun test_run_tc(int prog, std::uint32_t ifindex, const Bytes& frame, const SkbShape& shape) {
    __sk_buff ctx{};
    ctx.ifindex = ifindex;  // the device the program runs on: it must exist in this namespace
    ctx.gso_size = shape.gso_size;
    ctx.gso_segs = shape.gso_segs;
    return test_run<__sk_buff>(prog, frame, ctx, nullptr, shape.checksum_complete ? kChecksumComplete : 0);
}

TestRun test_run_xdp(int prog, std::uint32_t ifindex, const Bytes& frame) {
    xdp_md ctx{};
    ctx.data_end = static_cast<__u32>(frame.size());
    ctx.ingress_ifindex = ifindex;
    ctx.rx_queue_index = 0;
    xdp_md ctx_out{};
    TestRun r = test_run(prog, frame, ctx, &ctx_out);
    if (r.error != 0) return r;
    // The output starts at the metadata; ctx_out.data is where the packet starts in it.
    const std::size_t meta = std::min<std::size_t>(ctx_out.data, r.out.size());
    r.meta.assign(r.out.begin(), r.out.begin() + static_cast<std::ptrdiff_t>(meta));
    r.out.erase(r.out.begin(), r.out.begin() + static_cast<std::ptrdiff_t>(meta));
    return r;
}

}  // namespace

const Devices& devices() {
    static const Devices made = [] {
        Devices d;
        if (!andromeda::testing::enter_private_netns()) {
            d.error = "could not enter a private network namespace";
            return d;
        }
        if (!add_veth("eth1", "eth1-peer", d.underlay, d.error) ||
            !shell("ip link set dev eth1 address " + mac_text(kUnderlayMac), d.error) ||
            !add_punt_pair(d.underlay, d) || !add_veth(kUplinkName, kUplinkName + "-peer", d.uplink, d.error) ||
            !shell("ip link set dev " + kUplinkName + " address " + mac_text(kUplinkMac), d.error) ||
            !add_punt_pair(d.uplink, d))
            return d;
        for (const VpcDef& v : vpcs())
            for (const EndpointDef& e : v.endpoints) {
                if (e.node != "node1" || e.port == kPortWithoutDevice) continue;
                std::uint32_t tenant = 0;
                if (!add_veth(e.port, e.port + "-t", tenant, d.error) || !add_punt_pair(tenant, d)) return d;
                d.tenants[e.port] = tenant;
            }
        return d;
    }();
    return made;
}

World::World(Encap encap, const std::string& toml, std::optional<bool> decap_l4_udp, std::optional<bool> xdp_metadata)
    : encap_(encap), dev_(devices()) {
    if (!dev_.error.empty()) {
        error_ = dev_.error;
        return;
    }
    snapshot_ = load(toml);
    if (!snapshot_) return;
    ipv6_underlay_ = fab::ipv6_underlay(snapshot_->nodes());
    skel_ = andromeda::testing::Skel(andromeda_xdp::open());
    if (!skel_) {
        error_ = "opening the skeleton failed";
        return;
    }
    skel_->rodata->overlay_port = overlay_port(encap);
    skel_->rodata->encap_kind = encap == Encap::vxlan ? ANDROMEDA_ENCAP_VXLAN : ANDROMEDA_ENCAP_ANDROMEDA;
    const aio::KernelFeatures kernel = aio::probe_kernel_features();
    skel_->rodata->decap_l4_udp = decap_l4_udp.value_or(kernel.decap_l4_udp) ? 1 : 0;
    skel_->rodata->xdp_metadata = xdp_metadata.value_or(kernel.xdp_metadata) ? 1 : 0;
    if (andromeda_xdp::load(skel_.get()) != 0) {
        error_ = "loading andromeda_xdp.bpf.o failed";
        skel_.reset();
        return;
    }
    if (ipv6_underlay_) {
        local_.underlay_address = wire::Ipv6Address::from_bytes(kNode1Ip6.data());
        local_.learn_next_hop(wire::Ipv6Address::from_bytes(kNode2Ip6.data()), wire::MacAddress(kNode2Mac));
    } else {
        local_.underlay_address = wire::Ipv4Address(kNode1);
        local_.next_hops[kNode2] = wire::MacAddress(kNode2Mac);  // node3's is not known
    }
    if (!apply(aio::plan_full(*snapshot_, local_)) || !write_ports() || !write_config()) return;
    make_pipeline();
}

bool World::write_config() {
    andromeda_fp_config config{};
    config.enabled = 1;
    config.underlay_ifindex = dev_.underlay;
    // Over IPv6, underlay_ip 0 says so and underlay_ip6 holds the address.
    config.underlay_ip = ipv6_underlay_ ? 0 : htonl(kNode1);
    if (ipv6_underlay_) std::copy(kNode1Ip6.begin(), kNode1Ip6.end(), config.underlay_ip6);
    config.underlay_mtu = snapshot_->local().underlay_mtu;
    std::copy(kUnderlayMac.begin(), kUnderlayMac.end(), config.underlay_mac);
    config.handoff_cookie = kHandoffCookie;
    // The kernel NAT is an IPv4 underlay's only (andromedad leaves the uplink out over IPv6).
    if (!ipv6_underlay_) write_uplink_config(config);
    const __u32 key = 0;
    if (bpf_map_update_elem(fd(skel_->maps.andromeda_fp_config), &key, &config, BPF_ANY) != 0) {
        error_ = "writing andromeda_fp_config: " + std::string(std::strerror(errno));
        return false;
    }
    return true;
}

void World::write_uplink_config(andromeda_fp_config& config) const {
    config.uplink_ifindex = dev_.uplink;
    std::copy(kUplinkMac.begin(), kUplinkMac.end(), config.uplink_mac);
    std::copy(kUplinkRouterMac.begin(), kUplinkRouterMac.end(), config.uplink_next_hop_mac);
    config.uplink_next_hop_known = 1;
}

void World::make_pipeline() {
    dp::PipelineConfig c;
    c.underlay_mac = wire::MacAddress(kUnderlayMac);
    const wire::IpAddress node2 = ipv6_underlay_ ? wire::IpAddress(wire::Ipv6Address::from_bytes(kNode2Ip6.data()))
                                                 : wire::IpAddress(wire::Ipv4Address(kNode2));
    c.next_hops.push_back(dp::NextHop{node2, wire::MacAddress(kNode2Mac)});
    c.ports.push_back(dp::PortBinding{dev_.underlay, dp::PortRole::underlay, {}});
    c.ports.push_back(dp::PortBinding{dev_.uplink, dp::PortRole::uplink, {}});
    for (const auto& [name, ifindex] : dev_.tenants)
        c.ports.push_back(dp::PortBinding{ifindex, dp::PortRole::tenant, {}});
    firewall_ = std::make_shared<policy::Firewall>();
    firewall_->enable_kernel_flows(true);
    c.firewall = firewall_;
    pipeline_ = std::make_unique<dp::Pipeline>(std::move(c));
    nat_ = std::make_unique<nat::NatEngine>(nat_settings());
    nat_stage_ = std::make_unique<dp::NatPipeline>(
        *pipeline_, nat_.get(),
        dp::UplinkConfig{dev_.uplink, wire::MacAddress(kUplinkMac), wire::MacAddress(kUplinkRouterMac)});
    map_writer_ = aio::make_map_writer(*skel_);
    nat_flow_map_ = std::make_unique<aio::NatFlowMap>(*map_writer_);
    policy_flow_map_ = std::make_unique<aio::PolicyFlowMap>(*map_writer_);
    spare_chunks_.assign(64, Bytes(4096));
    for (Bytes& chunk : spare_chunks_)
        spares_.push_back(dp::PacketBuffer{chunk.data(), static_cast<std::uint32_t>(chunk.size()), kHeadroom, 0});
    slots_.resize(spares_.size() + dp::kMaxBatch);
    sink_ = dp::FrameSink(slots_, spares_);
}

bool World::learn_path_mtu(std::uint32_t node, std::uint32_t mtu, bool expired) {
    const auto now = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
    andromeda_peer_mtu value{};
    value.mtu = mtu;
    value.expires_ns = expired ? now - 1 : now + dp::kPeerMtuLifetimeNs;
    if (!expired && !pipeline_->peer_path_mtu()->learn(wire::Ipv4Address(node), mtu, now)) return false;
    const __be32 key = htonl(node);
    return bpf_map_update_elem(fd(skel_->maps.andromeda_peer_mtu), &key, &value, BPF_ANY) == 0;
}

bool World::reload(const std::string& toml) {
    auto next = load(toml);
    if (!next) return false;
    const fab::FabricDiff diff = fab::diff_fabrics(snapshot_.get(), *next);
    snapshot_ = std::move(next);
    if (!apply(aio::plan_diff(*snapshot_, diff, local_)) || !write_ports()) return false;
    nat_stage_->on_reload(diff);
    nat_->set_rules(dp::nat_rules_for(*snapshot_));
    nat_->remove_stale(now());
    apply_nat_changes();
    return true;
}

std::vector<nat::OffloadChange> World::apply_nat_changes() {
    std::vector<nat::OffloadChange> all;
    std::vector<nat::OffloadChange> batch(64);
    for (;;) {
        const std::size_t n = nat_->drain_offload_changes(batch);
        all.insert(all.end(), batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(n));
        if (n < batch.size()) break;
    }
    nat_flow_map_->apply(all, *nat_, now());
    return all;
}

std::size_t World::apply_policy_changes() {
    const std::vector<policy::KernelChange> changes = firewall_->drain_kernel_changes();
    policy_flow_map_->apply(changes);
    return changes.size();
}

std::optional<andromeda_nat_entry> World::nat_entry(const andromeda_nat_key& key) const {
    andromeda_nat_entry e{};
    if (bpf_map_lookup_elem(fd(skel_->maps.andromeda_nat_flows), &key, &e) != 0) return std::nullopt;
    return e;
}

template <class Run>
NatUse World::with_nat_use(std::optional<andromeda_nat_key> key, std::uint64_t length, Run run) {
    NatUse use;
    use.key = key;
    use.length = length;
    if (key) use.before = nat_entry(*key);
    use.ran_at_ns = monotonic_ns();
    run();
    if (key) use.after = nat_entry(*key);
    return use;
}

void World::edit_config(const std::function<void(andromeda_fp_config&)>& edit) {
    const __u32 key = 0;
    andromeda_fp_config config{};
    ASSERT_EQ(bpf_map_lookup_elem(fd(skel_->maps.andromeda_fp_config), &key, &config), 0);
    edit(config);
    ASSERT_EQ(bpf_map_update_elem(fd(skel_->maps.andromeda_fp_config), &key, &config, BPF_ANY), 0);
}

void World::set_encap_headroom(std::uint16_t bytes) {
    edit_config([bytes](andromeda_fp_config& c) { c.encap_headroom = bytes; });
}

void World::set_reseg_ifindex(std::uint32_t ifindex) {
    edit_config([ifindex](andromeda_fp_config& c) { c.reseg_ifindex = ifindex; });
}

TenantBpf World::run_tenant(std::uint32_t ifindex, const Bytes& frame, std::uint16_t gso_size) {
    TenantBpf b;
    // With `gso_size`, a GSO packet whose gso_type BPF_PROG_TEST_RUN leaves unset, which the kernel
    // reads as neither TCP nor UDP_L4 (as a guest's UFO is).
    SkbShape shape = skb_shape_;
    if (gso_size != 0) {
        shape.gso_size = gso_size;
        shape.gso_segs = static_cast<std::uint16_t>((frame.size() + gso_size - 1) / gso_size);
    }
    andromeda_port port{};
    const bool known = bpf_map_lookup_elem(fd(skel_->maps.andromeda_ports), &ifindex, &port) == 0;
    const bool ipv4 = frame.size() >= 34 && test_support::get16(&frame[12]) == 0x0800;
    const auto nat_key = known && ipv4 ? nat_key_of(&frame[14], frame.size() - 14, true, port.vni) : std::nullopt;
    const auto before = fp_stats();
    b.nat = with_nat_use(nat_key, frame.size(), [&] {
        b.run = test_run_tc(bpf_program__fd(skel_->progs.andromeda_tc_tenant), ifindex, frame, shape);
    });
    b.delta = minus(fp_stats(), before);
    if (known && frame.size() >= 54 && test_support::get16(&frame[12]) == 0x86dd) {
        b.local_target = fabric6_ifindex(port.vni, &frame[38]);
    } else if (known && frame.size() >= 34) {
        andromeda_fabric_key fabric_key{};
        fabric_key.vni = port.vni;
        std::memcpy(&fabric_key.ip, &frame[30], 4);
        b.local_target = fabric_ifindex(fabric_key);
    }
    return b;
}

UnderlayBpf World::run_underlay(const Bytes& frame) {
    UnderlayBpf b;
    b.underlay = dev_.underlay;
    const auto xdp_before = io::read_xdp_stats(fd(skel_->maps.andromeda_stats)).totals();
    b.xdp = test_run_xdp(bpf_program__fd(skel_->progs.andromeda_xdp), dev_.underlay, frame);
    b.xdp_delta = minus(io::read_xdp_stats(fd(skel_->maps.andromeda_stats)).totals(), xdp_before);
    // The inner packet's NAT key, for an overlay packet with plain outer and inner IPv4 headers.
    const std::size_t inner_ip = ANDROMEDA_ENCAP_OVERHEAD + 14;
    std::optional<andromeda_nat_key> nat_key;
    if (frame.size() >= inner_ip + 20 && frame[14] == 0x45 && test_support::get16(&frame[12]) == 0x0800 &&
        test_support::get16(&frame[62]) == 0x0800) {
        const std::uint32_t vni =
            static_cast<std::uint32_t>(frame[46]) << 16 | static_cast<std::uint32_t>(frame[47]) << 8 | frame[48];
        nat_key = nat_key_of(&frame[inner_ip], frame.size() - inner_ip, true, vni);
    }
    if (b.xdp.error == 0 && b.xdp.retval == XDP_PASS) {
        b.tc_ran = true;
        const auto before = fp_stats();
        const std::size_t inner_length = frame.size() - std::min<std::size_t>(frame.size(), ANDROMEDA_ENCAP_OVERHEAD);
        b.nat = with_nat_use(nat_key, inner_length, [&] {
            b.tc = test_run_tc(bpf_program__fd(skel_->progs.andromeda_tc_underlay), dev_.underlay, frame, skb_shape_);
        });
        b.tc_delta = minus(fp_stats(), before);
    } else {
        b.nat.key = nat_key;
        if (nat_key) b.nat.before = b.nat.after = nat_entry(*nat_key);
    }
    // Where the inner frame starts: behind the outer IPv4 (50 bytes) or IPv6 (70) headers.
    const std::size_t inner = frame.size() >= 14 && test_support::get16(&frame[12]) == 0x86dd
                                  ? std::size_t{ANDROMEDA_ENCAP_OVERHEAD6}
                                  : std::size_t{ANDROMEDA_ENCAP_OVERHEAD};
    const std::size_t vni_at = inner - 4;
    const std::uint32_t vni = frame.size() >= inner + 34 ? static_cast<std::uint32_t>(frame[vni_at]) << 16 |
                                                               static_cast<std::uint32_t>(frame[vni_at + 1]) << 8 |
                                                               frame[vni_at + 2]
                                                         : 0;
    if (frame.size() >= inner + 54 && test_support::get16(&frame[inner + 12]) == 0x86dd) {
        b.target = fabric6_ifindex(vni, &frame[inner + 38]);  // the inner IPv6 destination
    } else if (frame.size() >= inner + 34) {
        andromeda_fabric_key key{};
        key.vni = vni;
        std::memcpy(&key.ip, &frame[inner + 30], 4);
        b.target = fabric_ifindex(key);
    }
    return b;
}

PuntBpf World::run_punt(std::uint32_t ifindex, const Bytes& frame) {
    PuntBpf b;
    const auto before = fp_stats();
    b.run = test_run_tc(bpf_program__fd(skel_->progs.andromeda_tc_punt), ifindex, frame, skb_shape_);
    b.delta = minus(fp_stats(), before);
    return b;
}

PuntBpf World::run_reseg(const Bytes& frame) {
    PuntBpf b;
    const auto before = fp_stats();
    b.run = test_run_tc(bpf_program__fd(skel_->progs.andromeda_tc_reseg), dev_.underlay, frame, skb_shape_);
    b.delta = minus(fp_stats(), before);
    return b;
}

bool World::kernel_checks_complete_checksums() {
    // The punt program on a frame it passes untouched (no port of its own here).
    SkbShape complete;
    complete.checksum_complete = true;
    const Bytes frame = ipv4(frame_spec(kUplinkRouterMac, ip4(192, 0, 2, 1), kUplinkMac, ip4(192, 0, 2, 2), 60, kUdp));
    return test_run_tc(bpf_program__fd(skel_->progs.andromeda_tc_punt), dev_.underlay, frame, complete).error == 0;
}

TestRun World::run_xdp(std::uint32_t ifindex, const Bytes& frame, andromeda_xdp_stats& delta) {
    const auto before = io::read_xdp_stats(fd(skel_->maps.andromeda_stats)).totals();
    TestRun r = test_run_xdp(bpf_program__fd(skel_->progs.andromeda_xdp), ifindex, frame);
    delta = minus(io::read_xdp_stats(fd(skel_->maps.andromeda_stats)).totals(), before);
    return r;
}

UplinkBpf World::run_uplink(const Bytes& frame) {
    UplinkBpf b;
    const bool ipv4 = frame.size() >= 34 && test_support::get16(&frame[12]) == 0x0800;
    const auto key = ipv4 ? nat_key_of(&frame[14], frame.size() - 14, false, 0) : std::nullopt;
    if (key) {
        // Where a translation goes: the flow's tenant, in its VPC.
        if (const auto e = nat_entry(*key)) b.local_target = fabric_ifindex({.vni = e->vni, .ip = e->tenant_ip});
    }
    const auto before = fp_stats();
    b.nat = with_nat_use(key, frame.size(), [&] {
        b.run = test_run_tc(bpf_program__fd(skel_->progs.andromeda_tc_uplink), dev_.uplink, frame, skb_shape_);
    });
    b.delta = minus(fp_stats(), before);
    return b;
}

PipelineOut World::run_pipeline(dp::PortId port, const Bytes& frame) {
    input_chunk_.assign(std::max<std::size_t>(4096, kHeadroom + frame.size()), 0);
    std::copy(frame.begin(), frame.end(), input_chunk_.begin() + kHeadroom);
    const dp::PacketBuffer in{input_chunk_.data(), static_cast<std::uint32_t>(input_chunk_.size()), kHeadroom,
                              static_cast<std::uint32_t>(frame.size())};
    sink_.reset();
    const dp::NatFrameResult r = nat_stage_->process_in_place(port, in, *snapshot_, sink_, now());
    PipelineOut out;
    out.verdict = r.verdict;
    out.reason = r.drop_reason;
    out.nat_drop = r.nat_drop;
    out.stage_drop = r.stage_drop;
    out.nat_path = r.path;
    for (const dp::Emission& e : sink_.emissions())
        out.emitted.emplace_back(e.port, Bytes(e.frame.data(), e.frame.data() + e.frame.length));
    return out;
}

std::shared_ptr<const fab::FabricSnapshot> World::load(const std::string& toml) {
    fab::LoadOptions options;
    options.ports = fabric::resolve_port_names([this](std::string_view name) -> std::optional<std::uint32_t> {
        const auto it = dev_.tenants.find(std::string(name));
        if (it == dev_.tenants.end()) return std::nullopt;
        return it->second;
    });
    auto loaded = fab::load_fabric_string(toml, "fast_path_test.toml", options);
    if (!loaded.ok()) error_ = "the fabric did not load: " + fab::to_string(loaded.errors);
    return loaded.snapshot;
}

template <class K, class V>
bool World::apply_table(const bpf_map* map, const aio::TableChanges<K, V>& changes, const char* name) {
    for (const K& k : changes.erases) bpf_map_delete_elem(fd(map), &k);
    for (const auto& [k, v] : changes.upserts)
        if (bpf_map_update_elem(fd(map), &k, &v, BPF_ANY) != 0) {
            error_ = std::string("writing ") + name + ": " + std::strerror(errno);
            return false;
        }
    return true;
}

bool World::apply(const aio::FabricMapPlan& plan) {
    return apply_table(skel_->maps.andromeda_peers, plan.peers, "peers") &&
           apply_table(skel_->maps.andromeda_vnis, plan.vnis, "vnis") &&
           apply_table(skel_->maps.andromeda_fabric, plan.fabric, "fabric") &&
           apply_table(skel_->maps.andromeda_fabric6, plan.fabric6, "fabric6") &&
           apply_table(skel_->maps.andromeda_nat_addrs, plan.nat_addrs, "nat_addrs") &&
           apply_table(skel_->maps.andromeda_vpc_cidrs, plan.vpc_cidrs, "vpc_cidrs");
}

// The port map as the daemon computes it: tenant ports with their punt pairs, the underlay and the
// uplink with theirs.
bool World::write_ports() {
    aio::PortTable table = aio::tenant_ports(*snapshot_, port_slots_);
    aio::add_punt_ports(table, dev_.punts);
    table[dev_.underlay] = aio::make_port(ANDROMEDA_PORT_UNDERLAY, port_slots_.slot_for("eth1"));
    table[dev_.uplink] = aio::make_port(ANDROMEDA_PORT_UPLINK, port_slots_.slot_for(kUplinkName));
    add_port_punt_pair(table, dev_.underlay, dev_.punts.at(dev_.underlay));
    add_port_punt_pair(table, dev_.uplink, dev_.punts.at(dev_.uplink));
    const int ports = fd(skel_->maps.andromeda_ports);
    for (const auto& [ifindex, port] : written_ports_)
        if (table.count(ifindex) == 0) bpf_map_delete_elem(ports, &ifindex);
    for (const auto& [ifindex, port] : table)
        if (bpf_map_update_elem(ports, &ifindex, &port, BPF_ANY) != 0) {
            error_ = "writing ports: " + std::string(std::strerror(errno));
            return false;
        }
    written_ports_ = table;
    return true;
}

std::uint32_t World::fabric_ifindex(const andromeda_fabric_key& key) const {
    andromeda_fabric_entry entry{};
    if (bpf_map_lookup_elem(fd(skel_->maps.andromeda_fabric), &key, &entry) != 0) return 0;
    return entry.ifindex;
}

std::uint32_t World::fabric6_ifindex(std::uint32_t vni, const std::uint8_t* address) const {
    andromeda_fabric6_key key{};
    key.vni = vni;
    std::memcpy(key.ip, address, sizeof key.ip);
    andromeda_fabric_entry entry{};
    if (bpf_map_lookup_elem(fd(skel_->maps.andromeda_fabric6), &key, &entry) != 0) return 0;
    return entry.ifindex;
}

andromeda_fp_stats World::fp_stats() const {
    return io::read_fast_path_stats(fd(skel_->maps.andromeda_fp_stats)).totals();
}

std::optional<andromeda_nat_key> nat_key_of(const std::uint8_t* ip, std::size_t length, bool outbound,
                                            std::uint32_t vni) {
    if (length < 28 || ip[0] != 0x45) return std::nullopt;
    andromeda_nat_key key{};
    std::memcpy(&key.src, ip + 12, 4);
    std::memcpy(&key.dst, ip + 16, 4);
    key.protocol = ip[9];
    key.vni = outbound ? vni : 0;
    key.direction = outbound ? ANDROMEDA_NAT_OUTBOUND : ANDROMEDA_NAT_INBOUND;
    const std::uint8_t* l4 = ip + 20;
    if (key.protocol == kTcp || key.protocol == kUdp) {
        std::memcpy(&key.sport, l4, 2);
        std::memcpy(&key.dport, l4 + 2, 2);
        return key;
    }
    if (key.protocol != kIcmp || l4[0] != (outbound ? 8 : 0)) return std::nullopt;
    std::memcpy(outbound ? &key.sport : &key.dport, l4 + 4, 2);
    return key;
}

// ---- MapEntryOverride --------------------------------------------------------------------------

MapEntryOverride::MapEntryOverride(int map_fd, const void* key, std::size_t key_size, std::size_t value_size)
    : fd_(map_fd),
      key_(static_cast<const std::uint8_t*>(key), static_cast<const std::uint8_t*>(key) + key_size),
      saved_(value_size) {}

bool MapEntryOverride::read() {
    if (bpf_map_lookup_elem(fd_, key_.data(), saved_.data()) == 0) return true;
    error_ = "reading the entry: " + std::string(std::strerror(errno));
    return false;
}

void MapEntryOverride::write(const void* value) {
    changed_ = bpf_map_update_elem(fd_, key_.data(), value, BPF_ANY) == 0;
    if (!changed_) error_ = "writing the entry: " + std::string(std::strerror(errno));
}

void MapEntryOverride::erase() {
    changed_ = bpf_map_delete_elem(fd_, key_.data()) == 0;
    if (!changed_) error_ = "erasing the entry: " + std::string(std::strerror(errno));
}

MapEntryOverride::~MapEntryOverride() {
    if (changed_ && bpf_map_update_elem(fd_, key_.data(), saved_.data(), BPF_ANY) != 0)
        ADD_FAILURE() << "putting a map entry back: " << std::strerror(errno);
}

}  // namespace andromeda::fast_path_test
