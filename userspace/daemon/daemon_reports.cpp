// What the control socket returns (control/messages.hpp's replies, which andromedactl renders)
// and the daemon's counters published into the andromeda_daemon_stats map.
#include <chrono>

#include <fmt/format.h>
#include <unistd.h>

#include "daemon/daemon.hpp"
#include "dataplane/counters.hpp"
#include "wire/dhcp.hpp"
#include "wire/ipv6_addressing.hpp"

namespace andromeda::daemon {

namespace {

using Counters = std::map<std::string, std::uint64_t>;

Counters io_group(const PoolCounters& c) {
    Counters g;
    c.io.for_each([&](const std::string& name, std::uint64_t v) { g[name] = v; });
    c.sockets.for_each([&](const char* name, std::uint64_t v) { g[std::string("xsk_") + name] = v; });
    c.glue.for_each([&](const char* name, std::uint64_t v) { g[std::string("handler_") + name] = v; });
    return g;
}

std::string cidr_text(const fabric::Vpc& vpc) {
    std::string out;
    for (const auto& c : vpc.cidrs) out += (out.empty() ? "" : ",") + c.to_string();
    return out;
}

control::FabricVpc vpc_reply(const fabric::FabricSnapshot& snapshot, const fabric::Vpc& vpc) {
    control::FabricVpc v{vpc.name, vpc.vni, cidr_text(vpc), vpc.gateway.to_string(), vpc.gateway_mac.to_string(), vpc.mtu,
                         std::nullopt, {}, std::nullopt, std::nullopt, std::nullopt};
    if (vpc.nat) {
        control::VpcNat nat{vpc.nat->gateway_node, vpc.nat->address.to_string(), {vpc.nat->port_min, vpc.nat->port_max}, {}};
        for (const auto& f : vpc.nat->forwards)
            nat.forwards.push_back({std::string(fabric::to_string(f.protocol)), f.nat_port,
                                    fmt::format("{}:{}", f.endpoint_ip.to_string(), f.endpoint_port)});
        v.nat = std::move(nat);
    }
    for (const fabric::Endpoint& e : snapshot.endpoints()) {
        if (e.vni != vpc.vni) continue;
        v.endpoints.push_back({e.ip.to_string(), e.mac.to_string(), e.node,
                               e.is_local && !e.port.empty() ? std::optional<std::string>(e.port) : std::nullopt,
                               e.ipv6 ? std::optional<std::string>(e.ipv6->to_string()) : std::nullopt});
    }
    if (vpc.ipv6_prefix) {
        v.ipv6_prefix = vpc.ipv6_prefix->to_string();
        v.ipv6_router = wire::link_local_address(vpc.gateway_mac).to_string();
        if (vpc.ipv6_gateway) v.ipv6_gateway = vpc.ipv6_gateway->to_string();
    }
    return v;
}

}  // namespace

// Which paths a port's packets take: "fast path + pipeline" where the kernel fast path runs
// in front of the AF_XDP pipeline, and why not where it does not.
std::string Daemon::port_paths(const OwnedPort& port, const fabric::FabricSnapshot& snapshot) const {
    const std::string node_off = "fast path off: " + fast_path_off_reason(snapshot);
    switch (port.role) {
        case dataplane::PortRole::underlay:
            return fast_path_ ? "fast path (tc decap) + pipeline" : fmt::format("pipeline ({})", node_off);
        case dataplane::PortRole::uplink: return "pipeline";
        case dataplane::PortRole::tenant: break;
    }
    const std::string punt = "pipeline via " + port.socket_device();
    if (!fast_path_) return fmt::format("{} ({})", punt, node_off);
    const fabric::Endpoint* e = snapshot.find_local_endpoint_by_ifindex(port.ifindex);
    const fabric::Vpc* vpc = e != nullptr ? snapshot.find_vpc(e->vni) : nullptr;
    if (vpc != nullptr && !vpc->fastpath)
        return fmt::format("{} (fast path off: VPC {} fastpath = false)", punt, vpc->name);
    if (vpc != nullptr && vpc->firewall())
        return fmt::format("fast path (tc, flows the security groups allowed) + {}", punt);
    return "fast path (tc) + " + punt;
}

control::PortStatus Daemon::port_status(const OwnedPort& port, const fabric::FabricSnapshot& snapshot) const {
    control::PortStatus p;
    p.name = port.name;
    p.ifindex = port.ifindex;
    p.role = std::string(dataplane::to_string(port.role));
    for (const io::AttachReport& a : bpf_->attachments()) {
        if (a.ifname != port.socket_device()) continue;  // a tenant port's XDP is on its punt pair
        p.xdp_mode = std::string(io::to_string(a.mode));
        p.xdp = a.message();
    }
    const std::string tc = bpf_->tc_program_on(port.name);
    if (!tc.empty()) p.tc = tc;
    p.socket_device = port.socket_device();
    p.paths = port_paths(port, snapshot);
    p.queue_ids = pool_->queues_of(port.ifindex);
    p.workers = pool_->workers_of(port.ifindex);
    if (!p.queue_ids.empty()) p.bind = std::string(io::to_string(pool_->bind_mode()));
    switch (port.role) {
        case dataplane::PortRole::underlay: p.endpoint = host_.underlay_address.to_string(); break;
        case dataplane::PortRole::uplink:
            if (host_.uplink_address) p.endpoint = host_.uplink_address->to_string();
            break;
        case dataplane::PortRole::tenant:
            if (const fabric::Endpoint* e = snapshot.find_local_endpoint_by_ifindex(port.ifindex))
                p.endpoint = fmt::format("{} vni {}", e->ip.to_string(), e->vni);
            break;
    }
    return p;
}

control::StatusReply Daemon::status() const {
    const auto snapshot = store_.current();
    control::StatusReply r;
    r.node = snapshot->local().name;
    r.pid = getpid();
    r.uptime_s = uptime_s();
    r.fabric_generation = snapshot->generation();
    r.workers = pool_->size();
    r.worker_rx_frames = pool_->rx_frames_per_worker();
    for (std::size_t w = 0; w < pool_->size(); ++w) {
        const auto cpu = pool_->cpu_of(w);
        r.worker_cpus.push_back(cpu ? std::optional<control::WorkerCpu>({*cpu, pool_->pinned(w)}) : std::nullopt);
    }
    r.config = options_.config_path;
    r.pin_dir = bpf_->config().pin_dir.string();
    r.control_socket = control_.path();
    r.underlay = host_.underlay.name;
    r.underlay_address = host_.underlay_address.to_string();
    r.underlay_vlan = underlay_vlan_;
    r.encap = std::string(fabric::to_string(snapshot->local().encap));
    r.nat_gateway = nat_ != nullptr;
    for (const OwnedPort& port : pool_->ports()) r.ports.push_back(port_status(port, *snapshot));
    for (const PeerNextHop& peer : next_hops_.peers())
        r.peers.push_back({peer.node, peer.address.to_string(),
                           peer.mac ? std::optional<std::string>(peer.mac->to_string()) : std::nullopt,
                           std::string(to_string(peer.source)), peer.problem});
    r.worker_failures = pool_->failures();
    if (etcd_) {
        const EtcdStatus e = etcd_->status();
        control::EtcdStatusReply reply{e.endpoints, e.prefix, e.connected, e.revision, e.keys, {}, e.lease_alive, e.last_error};
        for (const auto& k : e.rejected) reply.rejected.push_back({k.key, k.reason});
        r.etcd = std::move(reply);
    }
    return r;
}

control::StatsReply Daemon::stats() const {
    control::StatsReply out;
    bpf_->read_stats().for_each([&](std::string_view name, std::uint64_t v) { out.groups["xdp"][std::string(name)] = v; });
    bpf_->read_fast_path_stats().for_each(
        [&](std::string_view name, std::uint64_t v) { out.groups["fastpath"][std::string(name)] = v; });
    const PoolCounters c = pool_->counters();
    auto& dataplane = out.groups["dataplane"];
    c.pipeline.for_each([&](const char* name, std::uint64_t v) { dataplane[name] = v; });
    // The engine's counters (a NAT gateway only), then the workers' NAT stage: where translated
    // packets went and why the stage itself dropped some.
    auto& n = out.groups["nat"];
    if (nat_) {
        nat_->counters().for_each([&](std::string_view name, std::uint64_t v) { n[std::string(name)] = v; });
        n["flows"] = nat_->flow_count();
        n["mappings"] = nat_->mapping_count();
    }
    c.nat_stage.for_each([&](std::string_view name, std::uint64_t v) { n["stage_" + std::string(name)] = v; });
    // The kernel's NAT flows: installs, removals, full-map refusals, syncs (nat_offload.hpp).
    if (nat_offload_) {
        auto& o = out.groups["nat_offload"];
        nat_offload_->counters().for_each([&](std::string_view name, std::uint64_t v) { o[std::string(name)] = v; });
    }
    // The security groups' kernel flows: installs, removals, syncs (policy_offload.hpp).
    if (policy_offload_) {
        auto& o = out.groups["policy_offload"];
        policy_offload_->counters().for_each([&](std::string_view name, std::uint64_t v) { o[std::string(name)] = v; });
    }
    // The gateway's DHCP server and DNS service (docs/vm-tenants.md).
    auto& dhcp = out.groups["dhcp"];
    const auto put = [](auto& group) {
        return [&group](std::string_view name, std::uint64_t v) { group[std::string(name)] = v; };
    };
    dhcp_->read([&](const gateway::DhcpServer& server) {
        server.counters().for_each(put(dhcp));
        dhcp["leases"] = server.leases().size();
        return 0;
    });
    const DnsServiceStats ds = dns_->stats();
    auto& dns = out.groups["dns"];
    ds.forwarder.for_each(put(dns));
    ds.service.for_each(put(dns));
    dns["in_flight"] = ds.in_flight;
    auto& dns_tcp = out.groups["dns_tcp"];  // the tenants' DNS connections (gateway/dns_tcp.hpp)
    ds.tcp.for_each(put(dns_tcp));
    dns_tcp["connections"] = ds.tcp_connections;
    auto& ra = out.groups["router_advertisements"];  // unsolicited, on dual-stack VPCs' ports (docs/ipv6.md)
    router_advertiser_->counters().for_each(put(ra));
    ra["ports"] = router_advertiser_->ports();
    // Each tenant port's punt bucket (andromeda_punt_limits): "<port>.punted", "<port>.rate_limited".
    auto& punt = out.groups["punt_limit"];
    for (const OwnedPort& port : pool_->ports()) {
        if (port.role != dataplane::PortRole::tenant) continue;
        if (const auto bucket = bpf_->punt_bucket(port.slot); bucket && bucket->ifindex == port.ifindex) {
            punt[port.name + ".punted"] = bucket->punted;
            punt[port.name + ".rate_limited"] = bucket->rate_limited;
        }
    }
    out.groups["io"] = io_group(c);
    auto& daemon = out.groups["daemon"];
    const andromeda_daemon_stats d = daemon_stats(c);
#define ANDROMEDA_DAEMON_GROUP_ENTRY(name) daemon[#name] = d.name;
    ANDROMEDA_DAEMON_STATS(ANDROMEDA_DAEMON_GROUP_ENTRY)
#undef ANDROMEDA_DAEMON_GROUP_ENTRY
    if (etcd_) {
        const EtcdStatus e = etcd_->status();
        out.groups["etcd"] = {{"lists", e.lists},
                              {"watch_batches", e.watch_batches},
                              {"events", e.events},
                              {"compactions", e.compactions},
                              {"disconnects", e.disconnects},
                              {"apply_failures", e.apply_failures},
                              {"applied_incremental", e.applied_incremental},
                              {"applied_full", e.applied_full},
                              {"keys", e.keys},
                              {"rejected_keys", e.rejected.size()},
                              {"revision", static_cast<std::uint64_t>(e.revision)},
                              {"lease_renewals", e.lease_renewals}};
        // Why watched changes were built in full rather than applied in place.
        if (etcd_builder_)
            etcd_builder_->for_each_decline(
                [&](std::string_view name, std::uint64_t v) { out.groups["etcd"][std::string(name)] = v; });
    }
    return out;
}

control::FabricReply Daemon::fabric() const {
    const auto snapshot = store_.current();
    control::FabricReply r{snapshot->generation(), snapshot->source_name(), snapshot->local().name, {}, {}};
    const auto now = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
    const std::vector<dataplane::PeerPathMtu::Entry> learned = peer_path_mtu_->entries(now);
    for (const fabric::Node& n : snapshot->nodes()) {
        control::FabricNode node{n.name, std::nullopt, std::nullopt, n.is_local, std::nullopt, std::nullopt};
        if (n.is_local) {
            node.address = host_.underlay_address.to_string();
            node.mac = host_.underlay.mac.to_string();
        } else {
            const PeerNextHop* hop = n.address ? next_hops_.find(*n.address) : nullptr;
            const auto mac = n.mac ? n.mac : hop != nullptr ? hop->mac : std::nullopt;
            if (n.address) node.address = n.address->to_string();
            if (mac) node.mac = mac->to_string();
            for (const auto& e : learned)
                if (n.address && e.peer == *n.address) {
                    node.path_mtu = e.mtu;
                    node.path_mtu_expires_in_s = (e.expires_ns - now) / 1'000'000'000;
                }
        }
        r.nodes.push_back(std::move(node));
    }
    for (const fabric::Vpc& vpc : snapshot->vpcs()) r.vpcs.push_back(vpc_reply(*snapshot, vpc));
    return r;
}

andromeda_daemon_stats Daemon::daemon_stats(const PoolCounters& pool) const {
    andromeda_daemon_stats s{};
    s.fabric_generation = store_.current()->generation();
    s.reloads_ok = reloads_ok_;
    s.reloads_failed = reloads_failed_;
    s.rx_frames = pool.io.rx_frames;
    s.tx_frames = pool.io.tx_frames;
    s.drops = pool.io.dropped();
    s.uptime_s = uptime_s();
    s.workers = pool_->size();
    s.ports = pool_->ports().size();
    const io::MapWriteCounts maps = sync_->totals().total();
    s.map_writes = maps.writes();
    s.map_writes_skipped = maps.unchanged;
    s.peers_unresolved = next_hops_.unresolved();
    s.next_hops_resolved = next_hops_.resolutions();
    s.next_hop_failures = next_hops_.failures();
    s.pipeline_forwarded = pool.pipeline.forwarded;
    s.pipeline_delivered = pool.pipeline.delivered;
    s.pipeline_replied = pool.pipeline.replied;
    s.pipeline_to_nat = pool.pipeline.to_nat;
    s.pipeline_dropped = pool.pipeline.dropped;
    if (nat_) {
        const nat::NatCounters n = nat_->counters();
        s.nat_translated = n.translated_outbound + n.translated_inbound;
        s.nat_flows = nat_->flow_count();
    }
    s.stats_published = stats_published_;
    return s;
}

void Daemon::publish_stats() {
    andromeda_daemon_stats s = daemon_stats(pool_->counters());
    ++s.stats_published;  // this write included
    bpf_->publish_daemon_stats(s);
    ++stats_published_;
}

// The gateway DHCP server's record of its clients (andromedactl leases).
control::LeasesReply Daemon::leases() const {
    const auto now = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
    return dhcp_->read([now](const gateway::DhcpServer& server) {
        control::LeasesReply r;
        for (const gateway::DhcpLease& l : server.leases().list()) {
            control::DhcpLeaseEntry e;
            e.vni = l.scope;
            e.mac = l.mac.to_string();
            e.address = l.address.to_string();
            const gateway::DhcpLeaseState state = l.state_at(now);
            e.state = std::string(gateway::to_string(state));
            e.expires_in_seconds = l.expires_ns > now && state != gateway::DhcpLeaseState::expired
                                       ? static_cast<double>(l.expires_ns - now) / 1e9
                                       : -1;
            e.last_seen_seconds_ago = now > l.last_seen_ns ? static_cast<double>(now - l.last_seen_ns) / 1e9 : 0;
            e.last_message = std::string(wire::dhcp_message_type_name(l.last_message_type));
            e.naks = l.naks;
            r.leases.push_back(std::move(e));
        }
        const gateway::DhcpCounters& c = server.counters();
        r.discovers = c.discovers;
        r.requests = c.requests;
        r.offers = c.offers;
        r.acks = c.acks;
        r.naks = c.naks;
        r.releases = c.releases;
        r.declines = c.declines;
        r.informs = c.informs;
        r.unknown_client = c.unknown_client;
        r.rate_limited = c.rate_limited;
        r.malformed = c.malformed;
        return r;
    });
}

}  // namespace andromeda::daemon
