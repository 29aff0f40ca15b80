#include "daemon/daemon.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <ctime>
#include <random>

#include "control/client.hpp"
#include "daemon/daemon_support.hpp"
#include "io/netlink/interfaces.hpp"
#include "io/netlink/neighbour.hpp"
#include "io/netlink/tap.hpp"
#include "daemon/logging.hpp"
#include "daemon/service_manager.hpp"
#include "version/version.hpp"

namespace andromeda::daemon {

namespace {

using namespace std::chrono_literals;

constexpr auto kStartupResolveTimeout = 1000ms;
constexpr auto kTickResolveTimeout = 200ms;
constexpr auto kTickResolveBudget = 500ms;  // per tick: many dead peers must not stall the daemon
constexpr std::uint64_t kResolvedRefreshTicks = 10;  // re-read known next hops every 10 s

// Binds each local endpoint's port to its interface. A port of `port_type = "tap"` that does not
// exist is created (persistent, for a VM to attach to; docs/vm-tenants.md); a tap is recognised
// whoever made it.
fabric::PortResolver interface_resolver() {
    return [](const fabric::Endpoint& e) -> std::optional<fabric::PortBinding> {
        try {
            auto link = io::find_interface(e.port);
            const bool multi_queue = e.queues > 1;
            const std::string queues = multi_queue ? fmt::format(",queues={}", e.queues) : "";
            if (!link && e.port_type == fabric::PortType::tap) {
                io::create_tap(e.port, multi_queue);
                spdlog::info(
                    "tenant port {}: created {}tap {} for endpoint {} (attach a VM with -netdev "
                    "tap,ifname={},script=no,downscript=no{})",
                    e.port, multi_queue ? "multi-queue " : "", e.port, e.ip.to_string(), e.port, queues);
                link = io::find_interface(e.port);
            }
            if (!link) return std::nullopt;
            const bool tap = io::is_tap(*link);
            if (e.port_type == fabric::PortType::tap && !tap) {
                spdlog::warn("tenant port {} is port_type = \"tap\" but the interface is a {}: left unbound",
                             e.port, link->driver.empty() ? "device of unknown driver" : link->driver);
                return std::nullopt;
            }
            // Served either way; QEMU is what a mismatch stops (its queues=N must match the tap's kind).
            if (tap && e.port_type == fabric::PortType::tap && io::is_multi_queue_tap(*link) != multi_queue)
                spdlog::warn(
                    "tenant port {}: the tap is {} but its endpoint says queues = {}: QEMU will not attach "
                    "with {} (ip link del {} and reload, and the daemon makes it as configured)",
                    e.port, multi_queue ? "single-queue" : "multi-queue", e.queues,
                    multi_queue ? fmt::format("queues={}", e.queues) : "a single queue", e.port);
            return fabric::PortBinding{link->ifindex, tap};
        } catch (const std::exception& e2) {
            spdlog::warn("looking up tenant port {}: {}", e.port, e2.what());
        }
        return std::nullopt;
    };
}

}  // namespace

Daemon::Daemon(DaemonOptions options)
    : options_(std::move(options)), started_(std::chrono::steady_clock::now()), store_(interface_resolver()) {
    options_.config_path = absolute_path(options_.config_path);
    if (const auto problem = privilege_problem(); !problem.empty()) throw StartupError(problem);
    auto loaded = store_.load_file(options_.config_path, fits_maps);
    if (!loaded.applied) throw StartupError("invalid configuration, nothing started:\n" + loaded.message());
    if (loaded.snapshot->local().etcd) start_from_etcd_cache(loaded);
    const fabric::FabricSnapshot& snapshot = *loaded.snapshot;
    HostCheck check = check_host(snapshot);
    for (const auto& w : check.warnings) spdlog::warn("{}", w);
    if (!check.facts) throw StartupError(join_lines("this host does not match the configuration:", check.errors));
    host_ = std::move(*check.facts);
    local_ = io::LocalContext{host_.underlay_address, {}};
    spdlog::info("node {}: fabric generation {} from {} ({} nodes, {} VPCs, {} endpoints)", snapshot.local().name,
                 snapshot.generation(), options_.config_path, snapshot.nodes().size(), snapshot.vpcs().size(),
                 snapshot.endpoints().size());
    start_bpf(snapshot);
    start_nat(snapshot);
    start_policy_offload();
    start_uplink_route();
    start_workers(snapshot);
    start_control();
    if (snapshot.local().etcd) start_etcd(snapshot);
    const std::uint16_t vlan = snapshot.local().underlay_vlan;
    spdlog::info("andromedad {} ready: underlay {}{} {} ({} worker{}, AF_XDP {}), control socket {}", snapshot.local().name,
                 host_.underlay.name, vlan != 0 ? " VLAN " + std::to_string(vlan) : std::string(),
                 host_.underlay_address.to_string(), pool_->size(), pool_->size() == 1 ? "" : "s",
                 io::to_string(pool_->bind_mode()), control_.path());
}

Daemon::~Daemon() {
    // No more fabrics applied, this node's etcd entry revoked. Taken out under the lock (the
    // control server reads etcd_ for status and stats), stopped outside it (its applier may be
    // waiting for the lock to apply one last fabric).
    std::unique_ptr<EtcdSync> etcd;
    {
        std::lock_guard lock(mutex_);
        etcd = std::move(etcd_);
    }
    etcd.reset();
    control_.stop();
    pool_.reset();         // threads joined, sockets closed
    nat_offload_.reset();  // its thread joined; the kernel's flows go with the maps below
    policy_offload_.reset();
    tenants_.reset();      // tenant ports set down, their programs detached, punt pairs deleted
    gateway_.reset();      // the uplink's (and underlay's) punt pairs likewise
    if (segmenter_ && bpf_) bpf_->detach_tc(segmenter_->devices().steering);
    segmenter_.reset();    // the segmenting pair
    nat_.reset();
    sync_.reset();
    if (bpf_) {
        const auto pin_dir = bpf_->config().pin_dir;
        bpf_.reset();  // XDP and tc detached from every port, maps unpinned, pin directory removed
        spdlog::info("stopped: tenant ports set down, XDP and tc detached, punt devices deleted, {} removed, control "
                     "socket removed",
                     pin_dir.string());
    }
}

void Daemon::start_bpf(const fabric::FabricSnapshot& snapshot) {
    bpf_ = std::make_unique<io::BpfInstance>(io::instance_config_from(snapshot.local()));
    spdlog::info("BPF maps pinned in {}", bpf_->config().pin_dir.string());
    sync_ = std::make_unique<io::FabricMapSync>(bpf_->map_writer());
    tenants_ = std::make_unique<io::TenantPlumbing>(
        *bpf_, io::RpsSteering(snapshot.local().tenant_rps ? io::RpsSteering::online_cpus() : io::CpuMask{}));
    // Maps adopted from a killed predecessor, whose programs still forward with them: what they
    // hold is taken as written, so the reconcile below changes only what the fabric changed.
    if (!bpf_->recovery().adopted_pins.empty()) {
        std::size_t entries = 0;
        for (const io::MapId id : {io::MapId::peers, io::MapId::vnis, io::MapId::nat_addrs, io::MapId::fabric,
                                   io::MapId::fabric6, io::MapId::ports})
            entries += sync_->adopt(id);
        spdlog::info("adopted the fast path a previous instance left running: {} map entries kept", entries);
        reconcile_adopted(snapshot);
    }
    // Next hops first, so the peer entries are written with their MACs (an adopted peer entry
    // keeps forwarding throughout).
    const std::vector<dataplane::NextHop> hops = next_hops_.update(snapshot, kStartupResolveTimeout);
    for (const auto& hop : hops) local_.learn_next_hop(hop.node_address, hop.mac);
    const io::SyncCounts written = sync_->reconcile(io::plan_full(snapshot, local_));
    spdlog::info("fabric maps: {}", written.summary());
    apply_next_hops(hops);
    configure_fast_path(snapshot);
}

// The programs a killed predecessor left go on forwarding with its maps until the workers start,
// a second or more: what the configuration changed while no daemon ran (an endpoint removed,
// moved, readdressed) is written before anything else, so a removed endpoint's traffic stops
// here (tc: no_port) and not once the ports are plumbed. The peers keep the MACs the predecessor
// resolved (resolution comes next and rewrites them), so traffic to them does not stop.
void Daemon::reconcile_adopted(const fabric::FabricSnapshot& snapshot) {
    io::LocalContext adopted = local_;
    for (const auto& [key, value] : bpf_->map_writer().entries(io::MapId::peers)) {
        andromeda_peer peer{};
        __be32 address = 0;
        if (key.size() != sizeof address || value.size() != sizeof peer) continue;
        std::memcpy(&address, key.data(), sizeof address);
        std::memcpy(&peer, value.data(), sizeof peer);
        std::array<std::uint8_t, 6> mac{};
        std::copy(std::begin(peer.mac), std::end(peer.mac), mac.begin());
        if (peer.mac_known != 0) adopted.next_hops[ntohl(address)] = wire::MacAddress(mac);
    }
    io::SyncCounts written = sync_->reconcile(io::plan_full(snapshot, adopted));
    io::PortTable ports;
    for (const auto& [key, value] : sync_->shadow(io::MapId::ports).entries()) {
        std::uint32_t ifindex = 0;
        andromeda_port port{};
        if (key.size() != sizeof ifindex || value.size() != sizeof port) continue;
        std::memcpy(&ifindex, key.data(), sizeof ifindex);
        std::memcpy(&port, value.data(), sizeof port);
        ports.emplace(ifindex, port);
    }
    io::PortSlots scratch;  // the adopted entries keep their slots until the workers start
    const io::PortTable tenants = io::tenant_ports(snapshot, scratch);
    written += sync_->sync_ports(io::reconcile_adopted_ports(ports, tenants));
    set_down_ports_left_behind(ports, tenants);
    spdlog::info("adopted maps put right for this configuration before anything else: {}",
                 written.total().writes() == 0 ? std::string("nothing to change") : written.summary());
}

// A tenant port of the predecessor that this configuration no longer has fails closed like one a
// reload removes (io::TenantPlumbing::unplumb): down before its tc link is released, never an
// ordinary host interface. Only an entry that was a tenant port's (its link is its punt device),
// and never this configuration's underlay or uplink, whatever the predecessor made of them.
void Daemon::set_down_ports_left_behind(const io::PortTable& adopted, const io::PortTable& tenants) {
    for (const auto& [ifindex, port] : adopted) {
        if (port.role != ANDROMEDA_PORT_TENANT || port.link == 0) continue;
        if (const auto kept = tenants.find(ifindex); kept != tenants.end() && kept->second.role == ANDROMEDA_PORT_TENANT)
            continue;
        if (ifindex == host_.underlay.ifindex || (host_.uplink && ifindex == host_.uplink->ifindex)) continue;
        const auto info = io::find_interface(ifindex);
        if (!info) continue;
        io::TenantPlumbing::set_down(info->name, ifindex);
        spdlog::info("{}: set down (a tenant port of the previous instance this configuration no longer has)",
                     info->name);
    }
}

std::uint32_t Daemon::random_handoff_cookie() {
    std::random_device device;
    std::uint32_t cookie = 0;
    while (cookie == 0) cookie = device();
    return cookie;
}

// The fast path serves an untagged underlay, IPv4 or IPv6 (the tc programs write untagged outer
// headers; over IPv6 the validation has made sure the nodes' peer keys are unique), on a node
// with [node] fastpath on; otherwise every tenant frame is punted to the pipeline. On a NAT
// gateway of an IPv4 underlay with the fast path on, the kernel also translates the NAT's
// established flows.
void Daemon::configure_fast_path(const fabric::FabricSnapshot& snapshot) {
    const auto& local = snapshot.local();
    fast_path_ = local.fastpath && local.underlay_vlan == 0;
    kernel_nat_ = fast_path_ && snapshot.serves_nat() && host_.uplink.has_value() && !host_.underlay_address.is_ipv6();
    write_fast_path_config();
    if (fast_path_)
        spdlog::info("kernel fast path on{}: east-west traffic of VPCs with fastpath on stays in the kernel{}",
                     host_.underlay_address.is_ipv6() ? " over an IPv6 underlay" : "",
                     kernel_nat_ ? ", and so do the NAT's established flows" : "");
    else
        spdlog::info("kernel fast path off ({}): every tenant frame goes through the AF_XDP pipeline",
                     fast_path_off_reason(snapshot));
}

// Why the fast path is off, for the log and andromedactl status.
std::string Daemon::fast_path_off_reason(const fabric::FabricSnapshot& snapshot) const {
    const auto& local = snapshot.local();
    return !local.fastpath ? "[node] fastpath = false" : "a tagged underlay (underlay_vlan)";
}

void Daemon::write_fast_path_config() {
    const auto& local = store_.current()->local();
    andromeda_fp_config config{};
    config.enabled = fast_path_ ? 1 : 0;
    config.underlay_ifindex = host_.underlay.ifindex;
    // Over an IPv6 underlay underlay_ip stays 0, which tells the programs so, and underlay_ip6
    // holds the address.
    config.underlay_ip = htonl(host_.underlay_address.ipv4().value_or(wire::Ipv4Address{}).value());
    if (const auto v6 = host_.underlay_address.ipv6()) v6->copy_to(config.underlay_ip6);
    config.underlay_mtu = local.underlay_mtu;
    host_.underlay.mac.copy_to(config.underlay_mac);
    config.handoff_cookie = handoff_cookie_;
    if (fast_path_ && segmenter_) config.reseg_ifindex = segmenter_->devices().visible_ifindex;
    // A veth underlay's peers are most likely veths too (a test bed, nested containers), whose
    // XDP copies every skb with less than 256 bytes of headroom: the encap leaves that much in
    // front of a small frame. A NIC's receiver runs XDP on its own buffers; there the room
    // would only cost the sender a larger allocation.
    config.encap_headroom = host_.underlay.driver != "veth"            ? 0
                            : host_.underlay_address.is_ipv6() ? ANDROMEDA_ENCAP_HEADROOM6
                                                               : ANDROMEDA_ENCAP_HEADROOM;
    // The kernel NAT sends what it translated out of the uplink, to its router: only once the
    // underlay's punt pair is there for what it does not translate (the XDP program checks).
    if (kernel_nat_ && gateway_ && gateway_->underlay_pair() != nullptr) {
        config.uplink_ifindex = host_.uplink->ifindex;
        host_.uplink->mac.copy_to(config.uplink_mac);
        if (uplink_.next_hop_mac) {
            uplink_.next_hop_mac->copy_to(config.uplink_next_hop_mac);
            config.uplink_next_hop_known = 1;
        }
    } else if (kernel_nat_ && !gateway_) {
        // Starting after a predecessor that left the kernel NAT running (its punt pairs stay
        // until start_gateway_ports takes them over): its uplink fields stay, so the flows the
        // kernel translates are not sent to sockets that are not bound yet in the meantime.
        const andromeda_fp_config running = bpf_->fast_path();
        if (running.uplink_ifindex == host_.uplink->ifindex) {
            config.uplink_ifindex = running.uplink_ifindex;
            std::copy(std::begin(running.uplink_mac), std::end(running.uplink_mac), std::begin(config.uplink_mac));
            std::copy(std::begin(running.uplink_next_hop_mac), std::end(running.uplink_next_hop_mac),
                      std::begin(config.uplink_next_hop_mac));
            config.uplink_next_hop_known = running.uplink_next_hop_known;
        }
    }
    bpf_->set_fast_path(config);
}

void Daemon::start_nat(const fabric::FabricSnapshot& snapshot) {
    if (!snapshot.serves_nat()) return;
    nat::NatSettings settings;
    settings.shards = std::max<std::uint32_t>(1, host_.underlay.rx_queues);
    settings.offload.enabled = kernel_nat_;
    settings.tenant_flows = tenant_flow_limit_of(snapshot.local());
    nat_ = std::make_unique<nat::NatEngine>(settings);
    // The workers' NAT stage installs the rules too; here they are needed before any worker runs,
    // to adopt the flows a killed predecessor left in the kernel.
    nat_->set_rules(dataplane::nat_rules_for(snapshot));
    spdlog::info("NAT gateway: {} shard(s), {} VPC(s) translated, established flows in the {}", settings.shards,
                 dataplane::nat_rules_for(snapshot)->vpcs().size(), kernel_nat_ ? "kernel" : "pipeline");
    // The kernel's flows outlive a killed daemon: they are rebuilt here, their ports kept, so
    // the kernel goes on translating them and no port in use is handed out again. Without the
    // kernel NAT the engine refuses them all, and they are deleted.
    nat_offload_ = std::make_unique<NatOffloadLoop>(*nat_, bpf_->map_writer());
    if (const std::size_t adopted = nat_offload_->adopt(nat::Clock::now()); adopted > 0)
        spdlog::info("NAT: adopted {} flow(s) the kernel was translating", adopted);
    if (!kernel_nat_) nat_offload_.reset();
}

// Security groups in the kernel: with the fast path, the flows the firewall allows are carried
// there (policy_offload.hpp); those a killed predecessor had installed are tracked again first,
// so that the kernel goes on carrying them and their replies are known here.
void Daemon::start_policy_offload() {
    if (!fast_path_) return;
    policy_offload_ = std::make_unique<PolicyOffloadLoop>(firewall_, bpf_->map_writer());
    if (const std::size_t adopted = policy_offload_->adopt(); adopted > 0)
        spdlog::info("security groups: adopted {} flow(s) the kernel was carrying", adopted);
    policy_offload_->start();
}

// Where translated outbound traffic goes: [node.uplink] next_hop, else the kernel's route.
void Daemon::start_uplink_route() {
    if (!host_.uplink) return;
    uplink_.mac = host_.uplink->mac;  // the port is the uplink punt pair's (start_gateway_ports)
    const auto& uplink = *store_.current()->local().uplink;
    try {
        std::optional<wire::Ipv4Address> gateway = uplink.next_hop;
        if (!gateway) {
            const auto route = io::route_to(kUplinkProbeAddress);
            if (route && route->ifindex == host_.uplink->ifindex) gateway = route->gateway;
        }
        if (!gateway)
            throw StartupError("no next hop for the uplink " + host_.uplink->name +
                               ": set [node.uplink] next_hop, or add a default route via it");
        uplink_.next_hop_mac = io::resolve_next_hop(*gateway, kStartupResolveTimeout).mac;
        spdlog::info("uplink {}: next hop {} at {}", host_.uplink->name, gateway->to_string(),
                     uplink_.next_hop_mac->to_string());
    } catch (const StartupError& e) {
        spdlog::warn("{}; translated traffic is dropped (nat_no_uplink) until then", e.what());
    } catch (const std::exception& e) {
        spdlog::warn("uplink {}: {}; retrying every second", host_.uplink->name, e.what());
    }
}

io::PortTable Daemon::desired_ports(const fabric::FabricSnapshot& snapshot,
                                    std::map<std::string, std::uint32_t>* unresolved) {
    io::PortTable table = io::tenant_ports(snapshot, slots_, unresolved);
    table[host_.underlay.ifindex] = io::make_port(ANDROMEDA_PORT_UNDERLAY, slots_.slot_for(host_.underlay.name));
    if (host_.uplink)
        table[host_.uplink->ifindex] = io::make_port(ANDROMEDA_PORT_UPLINK, slots_.slot_for(host_.uplink->name));
    if (gateway_) {
        const io::PuntDevices* underlay = gateway_->underlay_pair();
        gateway_->add_ports(table, slots_.slot_for(gateway_->uplink_pair().steering),
                            underlay != nullptr ? slots_.slot_for(underlay->steering) : 0);
    }
    return table;
}

// The uplink carries tc, not XDP: the kernel translates what it can and hands the rest to the
// pipeline through the uplink's punt pair, whose steering end is the pipeline's uplink port;
// with the kernel NAT on, the underlay's punt pair's steering end is a receive-only underlay port.
void Daemon::start_gateway_ports(std::vector<OwnedPort>& owned, io::PortTable& ports) {
    gateway_ = std::make_unique<io::NatGatewayPlumbing>(*bpf_, *host_.uplink, host_.underlay, kernel_nat_);
    spdlog::info("{}", gateway_->note());
    const io::PuntDevices& uplink = gateway_->uplink_pair();
    const std::uint32_t uplink_slot = slots_.slot_for(uplink.steering);
    const io::PuntDevices* underlay = gateway_->underlay_pair();
    const std::uint32_t underlay_slot = underlay != nullptr ? slots_.slot_for(underlay->steering) : 0;
    gateway_->add_ports(ports, uplink_slot, underlay_slot);
    owned.push_back({uplink.steering, uplink.steering_ifindex, dataplane::PortRole::uplink, uplink_slot, 1, {}});
    if (underlay != nullptr)
        owned.push_back(
            {underlay->steering, underlay->steering_ifindex, dataplane::PortRole::underlay, underlay_slot, 1, {}});
    uplink_.port = uplink.steering_ifindex;
    write_fast_path_config();
}

// Over an IPv6 underlay: a GSO packet whose segments cannot all be made the same size (so that
// one outer checksum would serve them all) leaves through the segmenting pair, where the kernel
// cuts it and andromeda_tc_reseg gives each segment its own checksum (bpf/tc_reseg.bpf.c), in
// order with the rest of its flow; without the pair it goes to the pipeline, whose longer way
// lets later packets overtake it. A pair a killed predecessor left is adopted as it is.
void Daemon::start_segmenter() {
    const std::uint32_t index = host_.underlay.ifindex;
    try {
        segmenter_ = std::make_unique<io::PuntPair>(io::segmenter_entry_name(index), io::segmenter_exit_name(index),
                                                    std::max<std::uint32_t>(host_.underlay.mtu, 1280));
        bpf_->attach_tc(segmenter_->devices().steering, io::BpfInstance::TcProgram::reseg);
        spdlog::info("segmenting pair {}/{}{}: GSO packets whose segments need a checksum each are cut there",
                     segmenter_->devices().visible, segmenter_->devices().steering,
                     segmenter_->adopted() ? " (adopted)" : "");
    } catch (const std::exception& e) {
        segmenter_.reset();
        spdlog::warn("no segmenting pair ({}): GSO packets whose segments cannot be made the same size go to the "
                     "pipeline",
                     e.what());
    }
    write_fast_path_config();
}

OwnedPort Daemon::plumb_tenant(const std::string& name, std::uint32_t ifindex, std::uint32_t slot,
                                std::vector<std::string>& notes) {
    std::string note;
    const io::PuntDevices& devices = tenants_->plumb(name, ifindex, note);
    notes.push_back("+ port " + name + ": " + note);
    return OwnedPort{name, ifindex, dataplane::PortRole::tenant, slot, 1, devices.steering};
}

void Daemon::start_workers(const fabric::FabricSnapshot& snapshot) {
    io::PortTable ports = desired_ports(snapshot, nullptr);
    // Native XDP on a veth turns its peer's TSO off, so GSO packets from the other hosts would be
    // cut into MTU-sized frames before they reach the fast path; generic mode leaves it on. On a
    // real NIC native mode costs nothing of the kind.
    const bool generic_underlay = fast_path_ && host_.underlay.driver == "veth" &&
                                  bpf_->config().xdp_mode == io::XdpModePreference::best;
    bpf_->attach(host_.underlay.name, generic_underlay ? std::optional(io::XdpModePreference::generic_only)
                                                       : std::nullopt);  // each attach logs the mode it achieved
    if (fast_path_) bpf_->attach_tc(host_.underlay.name, io::BpfInstance::TcProgram::underlay);
    if (fast_path_ && host_.underlay_address.is_ipv6()) start_segmenter();
    std::vector<OwnedPort> owned{{host_.underlay.name, host_.underlay.ifindex, dataplane::PortRole::underlay,
                                  ports[host_.underlay.ifindex].slot, host_.underlay.rx_queues, {}}};
    if (host_.uplink) start_gateway_ports(owned, ports);
    std::vector<std::string> notes;
    for (auto it = ports.begin(); it != ports.end();) {
        const fabric::Endpoint* e = it->second.role == ANDROMEDA_PORT_TENANT
                                        ? snapshot.find_local_endpoint_by_ifindex(it->first)
                                        : nullptr;
        if (e == nullptr) {
            ++it;
            continue;
        }
        try {
            owned.push_back(plumb_tenant(e->port, it->first, it->second.slot, notes));
            ++it;
        } catch (const std::exception& ex) {
            spdlog::error("tenant port {} left out: {}", e->port, ex.what());
            it = ports.erase(it);
        }
    }
    dataplane::PipelineConfig pipeline;
    pipeline.underlay_mac = host_.underlay.mac;
    pipeline.underlay_address = host_.underlay_address;
    pipeline.underlay_vlan = snapshot.local().underlay_vlan;  // like every [node] setting: until restart
    underlay_vlan_ = snapshot.local().underlay_vlan;
    for (const auto& peer : next_hops_.peers())
        if (peer.mac) pipeline.next_hops.push_back({peer.address, *peer.mac});
    pipeline.peer_path_mtu = peer_path_mtu_;
    pipeline.firewall = firewall_;
    pipeline.dhcp = dhcp_;
    pipeline.gateway_reply_rate.tokens_per_second = snapshot.local().gateway_rate;
    pipeline.gateway_reply_rate.burst = snapshot.local().gateway_burst;
    pipeline.flood_rate.tokens_per_second = snapshot.local().flood_rate;
    pipeline.flood_rate.burst = snapshot.local().flood_burst;
    start_gateway_dns(snapshot);
    pipeline.dns = dns_;
    router_advertiser_ = std::make_unique<RouterAdvertiser>();
    pipeline.router_advertisements = router_advertiser_->schedules();
    pool_ = std::make_unique<WorkerPool>(*bpf_, store_, nat_.get(), pipeline, uplink_, std::move(owned),
                                         snapshot.local().workers);
    pool_->set_cpus(snapshot.local().worker_cpus);
    pool_->start();
    for (std::size_t w = 0; w < pool_->size(); ++w)
        if (const auto cpu = pool_->cpu_of(w))
            spdlog::info("worker {} (andromeda-w{}) {} CPU {}", w, w, pool_->pinned(w) ? "pinned to" : "could not be pinned to", *cpu);
    // Steering starts only now that every socket is in the XSKMAP, and every port's punts are
    // limited from their first.
    bpf_->set_punt_limits(ports, punt_limit_of(snapshot.local()));
    sync_->sync_ports(tenants_->with_punt_devices(std::move(ports)));
    dns_->set_reply_ports(tenants_->steering_ifindexes());
    router_advertiser_->set_ports(snapshot, tenants_->steering_ifindexes());
    // A killed predecessor's tc links on ports this fabric no longer has (their port entries
    // are gone, so those programs would only drop).
    bpf_->release_unclaimed_tc_links();
    if (nat_offload_) nat_offload_->start();
}

// The gateway's DNS service: its sockets in this namespace, its upstreams [node] dns_upstreams or
// the host's /etc/resolv.conf as it reads now (docs/vm-tenants.md).
void Daemon::start_gateway_dns(const fabric::FabricSnapshot& snapshot) {
    const std::string resolv_conf = fabric::read_text_file("/etc/resolv.conf").value_or("");
    gateway::DnsForwarderConfig config;
    config.upstreams = dns_upstreams(snapshot.local(), resolv_conf);
    dns_ = std::make_shared<GatewayDns>(config);
    dns_->set_fabric(snapshot);
    std::string upstreams;
    for (const auto& u : config.upstreams) upstreams += (upstreams.empty() ? "" : ", ") + u.to_string();
    spdlog::info("gateway DNS: VPC names answered locally, the rest forwarded to {} ({})",
                 upstreams.empty() ? "nobody" : upstreams,
                 snapshot.local().dns_upstreams ? "[node] dns_upstreams" : "/etc/resolv.conf");
}

void Daemon::start_control() {
    const std::string path = options_.control_socket.empty()
                                 ? control::default_control_socket_path(store_.current()->local().name)
                                 : options_.control_socket;
    std::string error;
    if (!control_.start(path, [this](const control::ControlRequest& r) { return handle(r); }, error))
        throw StartupError("control socket: " + error);
}

void Daemon::apply_next_hops(const std::vector<dataplane::NextHop>& hops) {
    if (hops.empty()) return;
    // The fast path's peer entries first: it forwards to a peer only once its MAC is known.
    for (const auto& hop : hops) local_.learn_next_hop(hop.node_address, hop.mac);
    sync_->apply(io::plan_peers(*store_.current(), local_));
    if (!pool_) return;
    const PausedWorkers paused(*pool_);
    for (const auto& hop : hops) pool_->set_next_hop(hop.node_address, hop.mac);
}

void Daemon::run() {
    sigset_t signals;
    sigemptyset(&signals);
    for (const int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&signals, s);
    service::Watchdog watchdog;
    service::notify_ready(
        fmt::format("node {}: ready, control socket {}", store_.current()->local().name, control_.path()));
    for (;;) {
        const timespec one_second{1, 0};
        const int s = sigtimedwait(&signals, nullptr, &one_second);
        if (s == SIGTERM || s == SIGINT) {
            spdlog::info("{}: stopping", s == SIGTERM ? "SIGTERM" : "SIGINT");
            service::notify_stopping();
            return;
        }
        // Whatever a reload or a tick meets, the daemon goes on forwarding with what it has: it
        // stops on SIGTERM and SIGINT alone.
        try {
            if (s == SIGHUP) {
                spdlog::info("SIGHUP: reloading {}", options_.config_path);
                const auto outcome = reload(std::nullopt);
                if (outcome.applied) spdlog::info("{}", outcome.message);  // a refusal is logged by reload()
            }
            tick();
        } catch (const std::exception& e) {
            spdlog::error("{}: {}; forwarding goes on, the tick runs again in a second",
                          s == SIGHUP ? "SIGHUP" : "tick", e.what());
        }
        const std::string problem = liveness_problem();
        watchdog.ping(problem.empty(), problem);
    }
}

void Daemon::tick() {
    std::lock_guard lock(mutex_);
    ++ticks_;
    if (nat_) nat_->expire(nat::Clock::now());
    firewall_->expire();
    if (next_hops_.unresolved() > 0 || ticks_ % kResolvedRefreshTicks == 0)
        apply_next_hops(next_hops_.refresh(kTickResolveTimeout, kTickResolveBudget));
    if (host_.uplink && !uplink_.next_hop_mac && ticks_ % kResolvedRefreshTicks == 0) {
        start_uplink_route();
        if (uplink_.next_hop_mac) {
            const PausedWorkers paused(*pool_);
            pool_->set_uplink_next_hop(*uplink_.next_hop_mac);
            write_fast_path_config();
        }
    }
    const auto failures = pool_->failures();
    for (std::size_t i = failures_logged_; i < failures.size(); ++i) spdlog::error("{}", failures[i]);
    failures_logged_ = failures.size();
    sync_peer_path_mtu();
    router_advertiser_->advertise(static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count()));
    publish_stats();
}

// What the workers learned about narrower underlay paths, into the fast path's map; a path whose
// time is up goes back to underlay_mtu on both paths.
void Daemon::sync_peer_path_mtu() {
    const auto now = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
    const std::size_t expired = peer_path_mtu_->expire(now);
    const std::vector<dataplane::PeerPathMtu::Entry> learned = peer_path_mtu_->entries(now);
    sync_peer_mtu(bpf_->map_writer(), learned);
    // Told once per new or refreshed entry, either family (the map holds IPv4's only).
    for (const auto& e : learned)
        if (std::find(told_path_mtus_.begin(), told_path_mtus_.end(), e) == told_path_mtus_.end())
            spdlog::info("underlay path to {} carries at most {} bytes ({}; underlay_mtu {}): "
                         "tenants sending there get PMTUD answers for the next {} s",
                         e.peer.to_string(), e.mtu,
                         e.peer.is_ipv6() ? "ICMPv6 Packet Too Big" : "ICMP fragmentation needed",
                         store_.current()->local().underlay_mtu, ANDROMEDA_PEER_MTU_LIFETIME_S);
    told_path_mtus_ = learned;
    if (expired > 0)
        spdlog::info("{} learned underlay path MTU{} expired: back to underlay_mtu", expired, expired == 1 ? "" : "s");
}

std::string Daemon::handle(const control::ControlRequest& request) {
    try {
        if (request.command == control::Command::reload) {
            const auto outcome = reload(request.file);
            if (!outcome.applied) return control::render_error(outcome.message);
            return control::render_ok(control::ReloadReply{outcome.generation, outcome.message});
        }
        std::lock_guard lock(mutex_);
        switch (request.command) {
            case control::Command::status: {
                control::StatusReply reply = status();
                reply.health = health();
                reply.version = version_text();
                return control::render_ok(reply);
            }
            case control::Command::stats: return control::render_ok(stats());
            case control::Command::fabric: return control::render_ok(fabric());
            case control::Command::conntrack: {
                auto reply = conntrack(request.conntrack);
                if (const auto* error = std::get_if<std::string>(&reply)) return control::render_error(*error);
                return control::render_ok(std::get<control::ConntrackReply>(reply));
            }
            case control::Command::health: return control::render_ok(health());
            case control::Command::log_level: return control::render_ok(set_log_level(request.level));
            case control::Command::policy: return control::render_ok(policy());
            case control::Command::leases: return control::render_ok(leases());
            case control::Command::reload: break;
        }
        return control::render_error("unknown command");
    } catch (const std::exception& e) {
        return control::render_error(e.what());
    }
}

std::uint64_t Daemon::uptime_s() const {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started_).count());
}

}  // namespace andromeda::daemon
