// What the control socket returns (the JSON andromedactl renders, see ctl/control_commands.cpp)
// and the daemon's counters published into the andromeda_daemon_stats map.
#include <fmt/format.h>
#include <unistd.h>

#include "daemon/daemon.hpp"
#include "dataplane/counters.hpp"
#include "nat/conntrack_render.hpp"

namespace andromeda::daemon {

namespace {

using nlohmann::json;

template <class F>
void for_each_pipeline_counter(const dataplane::PipelineCounters& c, F&& f) {
    f("rx_tenant", c.rx_tenant);
    f("rx_underlay", c.rx_underlay);
    f("rx_uplink", c.rx_uplink);
    f("rx_from_nat", c.rx_from_nat);
    f("forwarded", c.forwarded);
    f("delivered", c.delivered);
    f("replied", c.replied);
    f("to_nat", c.to_nat);
    f("dropped", c.dropped);
    f("encapsulated", c.encapsulated);
    f("decapsulated", c.decapsulated);
    f("delivered_local", c.delivered_local);
    f("delivered_from_fabric", c.delivered_from_fabric);
    f("sent_to_nat_gateway", c.sent_to_nat_gateway);
    f("arp_replies", c.arp_replies);
    f("echo_replies", c.echo_replies);
    f("frag_needed_sent", c.frag_needed_sent);
    f("packet_too_big_sent", c.packet_too_big_sent);
    f("packets_fragmented", c.packets_fragmented);
    f("fragments_sent", c.fragments_sent);
    f("in_place_fallback_copies", c.in_place_fallback_copies);
    f("fabric_rebuilds", c.fabric_rebuilds);
#define ANDROMEDA_DAEMON_DROP(name, id, description) f("drop_" #name, c.drops.name);
    ANDROMEDA_DROPS_PIPELINE(ANDROMEDA_DAEMON_DROP)
#undef ANDROMEDA_DAEMON_DROP
#define ANDROMEDA_DAEMON_DECAP(name, id, description) f("decap_" #name, c.decap_errors.name);
    ANDROMEDA_DROPS_DECAP(ANDROMEDA_DAEMON_DECAP)
#undef ANDROMEDA_DAEMON_DECAP
}
// A counter added to PipelineCounters but not above would be missing from `andromedactl stats`.
static_assert(sizeof(dataplane::PipelineCounters) ==
              22 * sizeof(std::uint64_t) + sizeof(dataplane::DropCounters) + sizeof(dataplane::DecapErrorCounters));

json io_group(const PoolCounters& c) {
    json g;
    g["rx_frames"] = c.io.rx_frames;
    g["rx_batches"] = c.io.rx_batches;
    g["tx_frames"] = c.io.tx_frames;
    g["tx_completed"] = c.io.tx_completed;
    g["tx_wakeups"] = c.io.tx_wakeups;
    g["allocated"] = c.io.allocated;
    g["released"] = c.io.released;
    g["alloc_failed"] = c.io.alloc_failed;
    for (std::size_t i = 0; i < io::kDropReasonCount; ++i)
        g[std::string("drop_") + io::to_string(static_cast<io::DropReason>(i))] = c.io.drops[i];
    g["ledger_violations"] = c.io.ledger_violations;
    g["fate_errors"] = c.io.fate_errors;
    for (std::size_t i = 0; i < io::kFrameOwnerCount; ++i)
        g[std::string("frames_") + io::to_string(static_cast<io::FrameOwner>(i))] = c.io.frames_by_owner[i];
    g["xsk_rx_dropped"] = c.sockets.rx_dropped;
    g["xsk_rx_invalid_descs"] = c.sockets.rx_invalid_descs;
    g["xsk_tx_invalid_descs"] = c.sockets.tx_invalid_descs;
    g["xsk_rx_ring_full"] = c.sockets.rx_ring_full;
    g["xsk_rx_fill_ring_empty"] = c.sockets.rx_fill_ring_empty_descs;
    g["xsk_tx_ring_empty"] = c.sockets.tx_ring_empty_descs;
    c.glue.for_each([&](const char* name, std::uint64_t v) { g[std::string("handler_") + name] = v; });
    return g;
}

std::string cidr_text(const fabric::Vpc& vpc) {
    std::string out;
    for (const auto& c : vpc.cidrs) out += (out.empty() ? "" : ",") + c.to_string();
    return out;
}

json vpc_json(const fabric::FabricSnapshot& snapshot, const fabric::Vpc& vpc) {
    json v{{"name", vpc.name},     {"vni", vpc.vni},         {"cidr", cidr_text(vpc)},
           {"gateway", vpc.gateway.to_string()}, {"gateway_mac", vpc.gateway_mac.to_string()}, {"mtu", vpc.mtu}};
    if (vpc.nat) {
        json forwards = json::array();
        for (const auto& f : vpc.nat->forwards)
            forwards.push_back({{"protocol", fabric::to_string(f.protocol)},
                                {"nat_port", f.nat_port},
                                {"to", fmt::format("{}:{}", f.endpoint_ip.to_string(), f.endpoint_port)}});
        v["nat"] = {{"gateway_node", vpc.nat->gateway_node}, {"address", vpc.nat->address.to_string()},
                    {"port_range", {vpc.nat->port_min, vpc.nat->port_max}}, {"forwards", forwards}};
    }
    json endpoints = json::array();
    for (const fabric::Endpoint& e : snapshot.endpoints()) {
        if (e.vni != vpc.vni) continue;
        endpoints.push_back({{"ip", e.ip.to_string()},
                             {"mac", e.mac.to_string()},
                             {"node", e.node},
                             {"port", e.is_local && !e.port.empty() ? json(e.port) : json()}});
    }
    v["endpoints"] = std::move(endpoints);
    return v;
}

std::string tuple_text(const json& t) {
    return fmt::format("{}:{} -> {}:{}", t.value("source", std::string("?")), t.value("source_port", 0),
                       t.value("destination", std::string("?")), t.value("destination_port", 0));
}

}  // namespace

// Which paths a port's packets take: "fast path + pipeline" where the kernel fast path runs
// in front of the AF_XDP pipeline, and why not where it does not.
std::string Daemon::port_paths(const OwnedPort& port, const fabric::FabricSnapshot& snapshot) const {
    const auto& local = snapshot.local();
    const char* node_off = !local.fastpath ? "fast path off: [node] fastpath = false"
                                           : "fast path off: tagged underlay (underlay_vlan)";
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
    return "fast path (tc) + " + punt;
}

json Daemon::port_json(const OwnedPort& port, const fabric::FabricSnapshot& snapshot) const {
    json p{{"name", port.name}, {"ifindex", port.ifindex}, {"role", dataplane::to_string(port.role)}};
    p["xdp_mode"] = nullptr;
    for (const io::AttachReport& a : bpf_->attachments()) {
        if (a.ifname != port.socket_device()) continue;  // a tenant port's XDP is on its punt pair
        p["xdp_mode"] = io::to_string(a.mode);
        p["xdp"] = a.message();
    }
    const std::string tc = bpf_->tc_program_on(port.name);
    p["tc"] = tc.empty() ? json() : json(tc);
    p["socket_device"] = port.socket_device();
    p["paths"] = port_paths(port, snapshot);
    const auto queues = pool_->queues_of(port.ifindex);
    p["bind"] = queues.empty() ? json() : json(io::to_string(pool_->bind_mode()));
    p["queues"] = queues.size();
    p["queue_ids"] = queues;
    switch (port.role) {
        case dataplane::PortRole::underlay: p["endpoint"] = host_.underlay_address.to_string(); break;
        case dataplane::PortRole::uplink:
            p["endpoint"] = host_.uplink_address ? json(host_.uplink_address->to_string()) : json();
            break;
        case dataplane::PortRole::tenant:
            if (const fabric::Endpoint* e = snapshot.find_local_endpoint_by_ifindex(port.ifindex))
                p["endpoint"] = fmt::format("{} vni {}", e->ip.to_string(), e->vni);
            else
                p["endpoint"] = nullptr;
            break;
    }
    return p;
}

json Daemon::worker_cpus_json() const {
    json out = json::array();
    for (std::size_t w = 0; w < pool_->size(); ++w) {
        const auto cpu = pool_->cpu_of(w);
        out.push_back(cpu ? json{{"cpu", *cpu}, {"pinned", pool_->pinned(w)}} : json());
    }
    return out;
}

json Daemon::status_json() const {
    const auto snapshot = store_.current();
    json ports = json::array();
    for (const OwnedPort& port : pool_->ports()) ports.push_back(port_json(port, *snapshot));
    json peers = json::array();
    for (const PeerNextHop& peer : next_hops_.peers())
        peers.push_back({{"node", peer.node},
                         {"address", peer.address.to_string()},
                         {"mac", peer.mac ? json(peer.mac->to_string()) : json()},
                         {"source", to_string(peer.source)},
                         {"problem", peer.problem}});
    return {{"node", snapshot->local().name},
            {"pid", getpid()},
            {"uptime_s", uptime_s()},
            {"fabric_generation", snapshot->generation()},
            {"workers", pool_->size()},
            {"worker_rx_frames", pool_->rx_frames_per_worker()},
            {"worker_cpus", worker_cpus_json()},
            {"config", options_.config_path},
            {"pin_dir", bpf_->config().pin_dir.string()},
            {"control_socket", control_.path()},
            {"underlay", host_.underlay.name},
            {"underlay_address", host_.underlay_address.to_string()},
            {"underlay_vlan", underlay_vlan_},
            {"encap", fabric::to_string(snapshot->local().encap)},
            {"nat_gateway", nat_ != nullptr},
            {"ports", ports},
            {"peers", peers},
            {"worker_failures", pool_->failures()}};
}

json Daemon::stats_json() const {
    json out;
    json xdp;
    const io::XdpStats x = bpf_->read_stats();
    for (const auto& field : io::kXdpCounterFields) xdp[std::string(field.name)] = x.totals().*field.member;
    out["xdp"] = std::move(xdp);
    json fastpath;
    const io::FastPathStats f = bpf_->read_fast_path_stats();
    for (const auto& field : io::kFastPathCounterFields) fastpath[std::string(field.name)] = f.totals().*field.member;
    out["fastpath"] = std::move(fastpath);
    const PoolCounters c = pool_->counters();
    json dataplane;
    for_each_pipeline_counter(c.pipeline, [&](const char* name, std::uint64_t v) { dataplane[name] = v; });
    out["dataplane"] = std::move(dataplane);
    // The engine's counters (a NAT gateway only), then the workers' NAT stage: where translated
    // packets went and why the stage itself dropped some.
    json n = nat_ ? nat::to_json(nat_->counters()) : json::object();
    if (nat_) {
        n["flows"] = nat_->flow_count();
        n["mappings"] = nat_->mapping_count();
    }
    c.nat_stage.for_each([&](std::string_view name, std::uint64_t v) { n["stage_" + std::string(name)] = v; });
    out["nat"] = std::move(n);
    out["io"] = io_group(c);
    const io::MapWriteCounts maps = sync_->totals().total();
    out["daemon"] = {{"fabric_generation", store_.current()->generation()},
                     {"reloads_ok", reloads_ok_},
                     {"reloads_failed", reloads_failed_},
                     {"uptime_s", uptime_s()},
                     {"workers", pool_->size()},
                     {"ports", pool_->ports().size()},
                     {"map_writes", maps.writes()},
                     {"map_writes_skipped", maps.unchanged},
                     {"next_hops_resolved", next_hops_.resolutions()},
                     {"next_hop_failures", next_hops_.failures()},
                     {"peers_unresolved", next_hops_.unresolved()},
                     {"stats_published", stats_published_}};
    return out;
}

json Daemon::fabric_json() const {
    const auto snapshot = store_.current();
    json nodes = json::array();
    for (const fabric::Node& n : snapshot->nodes()) {
        const PeerNextHop* hop = n.address ? next_hops_.find(*n.address) : nullptr;
        const auto mac = n.mac ? n.mac : hop != nullptr ? hop->mac : std::nullopt;
        nodes.push_back({{"name", n.name},
                         {"address", n.is_local ? json(host_.underlay_address.to_string())
                                                : n.address ? json(n.address->to_string()) : json()},
                         {"mac", n.is_local ? json(host_.underlay.mac.to_string()) : mac ? json(mac->to_string()) : json()},
                         {"local", n.is_local}});
    }
    json vpcs = json::array();
    for (const fabric::Vpc& vpc : snapshot->vpcs()) vpcs.push_back(vpc_json(*snapshot, vpc));
    return {{"generation", snapshot->generation()},
            {"source", snapshot->source_name()},
            {"local_node", snapshot->local().name},
            {"nodes", nodes},
            {"vpcs", vpcs}};
}

json Daemon::conntrack_json() const {
    if (!nat_) return {{"flows", json::array()}, {"count", 0}, {"nat_gateway", false}};
    const auto flows = nat_->flows(nat::Clock::now(), 10000);
    json out = nat::conntrack_json(flows);
    // andromedactl's table wants one-line tuples and whole seconds; the structured tuples stay.
    for (json& f : out["flows"]) {
        f["original_tuple"] = f["original"];
        f["translated_tuple"] = f["translated"];
        f["original"] = tuple_text(f["original_tuple"]);
        f["translated"] = tuple_text(f["translated_tuple"]);
        f["age_s"] = static_cast<std::uint64_t>(f.value("age_seconds", 0.0));
        f["expires_in_s"] = static_cast<std::uint64_t>(f.value("expires_in_seconds", 0.0));
    }
    out["nat_gateway"] = true;
    return out;
}

void Daemon::publish_stats() {
    const PoolCounters c = pool_->counters();
    andromeda_daemon_stats s{};
    s.fabric_generation = store_.current()->generation();
    s.reloads_ok = reloads_ok_;
    s.reloads_failed = reloads_failed_;
    s.rx_frames = c.io.rx_frames;
    s.tx_frames = c.io.tx_frames;
    s.drops = c.io.dropped();
    s.uptime_s = uptime_s();
    s.workers = pool_->size();
    s.ports = pool_->ports().size();
    s.map_writes = sync_->totals().total().writes();
    s.peers_unresolved = next_hops_.unresolved();
    s.pipeline_forwarded = c.pipeline.forwarded;
    s.pipeline_delivered = c.pipeline.delivered;
    s.pipeline_replied = c.pipeline.replied;
    s.pipeline_to_nat = c.pipeline.to_nat;
    s.pipeline_dropped = c.pipeline.dropped;
    if (nat_) {
        const nat::NatCounters n = nat_->counters();
        s.nat_translated = n.translated_outbound + n.translated_inbound;
        s.nat_flows = nat_->flow_count();
    }
    bpf_->publish_daemon_stats(s);
    ++stats_published_;
}

}  // namespace andromeda::daemon
