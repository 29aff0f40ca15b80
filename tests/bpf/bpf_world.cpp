#include "bpf_world.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <net/if.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <optional>

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

// BPF_PROG_TEST_RUN with `frame` in and up to 512 bytes more out; `ctx` and `ctx_out` are the
// program type's context.
template <class Ctx>
TestRun test_run(int prog, const Bytes& frame, Ctx& ctx, Ctx* ctx_out) {
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
    if (bpf_prog_test_run_opts(prog, &opts) != 0) {
        r.error = errno;
        r.out.clear();
        return r;
    }
    r.retval = opts.retval;
    r.out.resize(opts.data_size_out);
    return r;
}

// A nonzero `gso_size` makes the frame a GSO packet of that segment size; BPF_PROG_TEST_RUN
// sets no gso_type, which the kernel reads as a type that is neither TCP nor UDP_L4 (as a guest's
// UFO is).
TestRun test_run_tc(int prog, std::uint32_t ifindex, const Bytes& frame, std::uint16_t gso_size = 0) {
    __sk_buff ctx{};
    ctx.ifindex = ifindex;  // the device the program runs on: it must exist in this namespace
    ctx.gso_size = gso_size;
    ctx.gso_segs = gso_size != 0 ? static_cast<__u32>((frame.size() + gso_size - 1) / gso_size) : 0;
    return test_run<__sk_buff>(prog, frame, ctx, nullptr);
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
            !shell("ip link set dev eth1 address " + mac_text(kUnderlayMac), d.error))
            return d;
        for (const VpcDef& v : vpcs())
            for (const EndpointDef& e : v.endpoints) {
                if (e.node != "node1" || e.port == kPortWithoutDevice) continue;
                std::uint32_t tenant = 0;
                if (!add_veth(e.port, e.port + "-t", tenant, d.error)) return d;
                d.tenants[e.port] = tenant;
                aio::PuntDevices punt{};
                punt.visible = aio::punt_visible_name(tenant);
                punt.steering = aio::punt_steering_name(tenant);
                if (!add_veth(punt.visible, punt.steering, punt.visible_ifindex, d.error)) return d;
                punt.steering_ifindex = if_nametoindex(punt.steering.c_str());
                d.punts[tenant] = punt;
            }
        return d;
    }();
    return made;
}

World::World(Encap encap, const std::string& toml, std::optional<bool> decap_l4_udp) : encap_(encap), dev_(devices()) {
    if (!dev_.error.empty()) {
        error_ = dev_.error;
        return;
    }
    snapshot_ = load(toml);
    if (!snapshot_) return;
    skel_ = andromeda::testing::Skel(andromeda_xdp::open());
    if (!skel_) {
        error_ = "opening the skeleton failed";
        return;
    }
    skel_->rodata->overlay_port = overlay_port(encap);
    skel_->rodata->encap_kind = encap == Encap::vxlan ? ANDROMEDA_ENCAP_VXLAN : ANDROMEDA_ENCAP_ANDROMEDA;
    skel_->rodata->decap_l4_udp = decap_l4_udp.value_or(aio::probe_kernel_features().decap_l4_udp) ? 1 : 0;
    if (andromeda_xdp::load(skel_.get()) != 0) {
        error_ = "loading andromeda_xdp.bpf.o failed";
        skel_.reset();
        return;
    }
    local_.underlay_address = wire::Ipv4Address(kNode1);
    local_.next_hops[kNode2] = wire::MacAddress(kNode2Mac);  // node3's is not known
    if (!apply(aio::plan_full(*snapshot_, local_)) || !write_ports() || !write_config()) return;
    make_pipeline();
}

bool World::write_config() {
    andromeda_fp_config config{};
    config.enabled = 1;
    config.underlay_ifindex = dev_.underlay;
    config.underlay_ip = htonl(kNode1);
    config.underlay_mtu = snapshot_->local().underlay_mtu;
    std::copy(kUnderlayMac.begin(), kUnderlayMac.end(), config.underlay_mac);
    config.handoff_cookie = kHandoffCookie;
    const __u32 key = 0;
    if (bpf_map_update_elem(fd(skel_->maps.andromeda_fp_config), &key, &config, BPF_ANY) != 0) {
        error_ = "writing andromeda_fp_config: " + std::string(std::strerror(errno));
        return false;
    }
    return true;
}

void World::make_pipeline() {
    dp::PipelineConfig c;
    c.underlay_mac = wire::MacAddress(kUnderlayMac);
    c.next_hops.push_back(dp::NextHop{wire::Ipv4Address(kNode2), wire::MacAddress(kNode2Mac)});
    c.ports.push_back(dp::PortBinding{dev_.underlay, dp::PortRole::underlay, {}});
    for (const auto& [name, ifindex] : dev_.tenants)
        c.ports.push_back(dp::PortBinding{ifindex, dp::PortRole::tenant, {}});
    pipeline_ = std::make_unique<dp::Pipeline>(std::move(c));
    spare_chunks_.assign(64, Bytes(4096));
    for (Bytes& chunk : spare_chunks_)
        spares_.push_back(dp::PacketBuffer{chunk.data(), static_cast<std::uint32_t>(chunk.size()), kHeadroom, 0});
    slots_.resize(spares_.size() + dp::kMaxBatch);
    sink_ = dp::FrameSink(slots_, spares_);
}

bool World::reload(const std::string& toml) {
    auto next = load(toml);
    if (!next) return false;
    const fab::FabricDiff diff = fab::diff_fabrics(snapshot_.get(), *next);
    snapshot_ = std::move(next);
    return apply(aio::plan_diff(*snapshot_, diff, local_)) && write_ports();
}

void World::set_encap_headroom(std::uint16_t bytes) {
    const __u32 key = 0;
    andromeda_fp_config config{};
    ASSERT_EQ(bpf_map_lookup_elem(fd(skel_->maps.andromeda_fp_config), &key, &config), 0);
    config.encap_headroom = bytes;
    ASSERT_EQ(bpf_map_update_elem(fd(skel_->maps.andromeda_fp_config), &key, &config, BPF_ANY), 0);
}

TenantBpf World::run_tenant(std::uint32_t ifindex, const Bytes& frame, std::uint16_t gso_size) {
    TenantBpf b;
    const auto before = fp_stats();
    b.run = test_run_tc(bpf_program__fd(skel_->progs.andromeda_tc_tenant), ifindex, frame, gso_size);
    b.delta = minus(fp_stats(), before);
    andromeda_port port{};
    if (frame.size() >= 34 && bpf_map_lookup_elem(fd(skel_->maps.andromeda_ports), &ifindex, &port) == 0) {
        andromeda_fabric_key key{};
        key.vni = port.vni;
        std::memcpy(&key.ip, &frame[30], 4);
        b.local_target = fabric_ifindex(key);
    }
    return b;
}

UnderlayBpf World::run_underlay(const Bytes& frame) {
    UnderlayBpf b;
    b.underlay = dev_.underlay;
    const auto xdp_before = io::read_xdp_stats(fd(skel_->maps.andromeda_stats)).totals();
    b.xdp = test_run_xdp(bpf_program__fd(skel_->progs.andromeda_xdp), dev_.underlay, frame);
    b.xdp_delta = minus(io::read_xdp_stats(fd(skel_->maps.andromeda_stats)).totals(), xdp_before);
    if (b.xdp.error == 0 && b.xdp.retval == XDP_PASS) {
        b.tc_ran = true;
        const auto before = fp_stats();
        b.tc = test_run_tc(bpf_program__fd(skel_->progs.andromeda_tc_underlay), dev_.underlay, frame);
        b.tc_delta = minus(fp_stats(), before);
    }
    if (frame.size() >= 84) {
        andromeda_fabric_key key{};
        key.vni = static_cast<std::uint32_t>(frame[46]) << 16 | static_cast<std::uint32_t>(frame[47]) << 8 | frame[48];
        std::memcpy(&key.ip, &frame[80], 4);
        b.target = fabric_ifindex(key);
    }
    return b;
}

PuntBpf World::run_punt(std::uint32_t ifindex, const Bytes& frame) {
    PuntBpf b;
    const auto before = fp_stats();
    b.run = test_run_tc(bpf_program__fd(skel_->progs.andromeda_tc_punt), ifindex, frame);
    b.delta = minus(fp_stats(), before);
    return b;
}

PipelineOut World::run_pipeline(dp::PortId port, const Bytes& frame) {
    input_chunk_.assign(std::max<std::size_t>(4096, kHeadroom + frame.size()), 0);
    std::copy(frame.begin(), frame.end(), input_chunk_.begin() + kHeadroom);
    const dp::PacketBuffer in{input_chunk_.data(), static_cast<std::uint32_t>(input_chunk_.size()), kHeadroom,
                              static_cast<std::uint32_t>(frame.size())};
    sink_.reset();
    const dp::FrameResult r = pipeline_->process_in_place(port, in, *snapshot_, sink_);
    PipelineOut out;
    out.verdict = r.verdict;
    out.reason = r.drop_reason;
    for (const dp::Emission& e : sink_.emissions())
        out.emitted.emplace_back(e.port, Bytes(e.frame.data(), e.frame.data() + e.frame.length));
    return out;
}

std::shared_ptr<const fab::FabricSnapshot> World::load(const std::string& toml) {
    fab::LoadOptions options;
    options.ports = [this](std::string_view name) -> std::optional<std::uint32_t> {
        const auto it = dev_.tenants.find(std::string(name));
        if (it == dev_.tenants.end()) return std::nullopt;
        return it->second;
    };
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
           apply_table(skel_->maps.andromeda_nat_addrs, plan.nat_addrs, "nat_addrs") &&
           apply_table(skel_->maps.andromeda_vpc_cidrs, plan.vpc_cidrs, "vpc_cidrs");
}

// The port map as the daemon computes it: tenant ports with their punt pairs, the underlay.
bool World::write_ports() {
    aio::PortTable table = aio::tenant_ports(*snapshot_, port_slots_);
    aio::add_punt_ports(table, dev_.punts);
    table[dev_.underlay] = aio::make_port(ANDROMEDA_PORT_UNDERLAY, port_slots_.slot_for("eth1"));
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

andromeda_fp_stats World::fp_stats() const {
    return io::read_fast_path_stats(fd(skel_->maps.andromeda_fp_stats)).totals();
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
