// andromedad's core: the glue that starts the fabric store, the BPF instance, the map sync, the
// NAT engine, the packet workers and the control socket, in that order, and stops them in
// reverse (so a stop leaves nothing behind: workers gone, XDP detached, pins and socket removed).
//
// Threads: the main thread waits for signals and runs a 1 s tick (stats export, NAT expiry,
// next-hop refresh); the control socket's thread answers requests; one thread per underlay RX
// queue moves packets. Everything but the packet threads takes `mutex_`, so a reload, a tick
// and a control request never interleave; the packet threads take no lock (RCU snapshots, and
// reconfiguration pauses them between batches).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "control/messages.hpp"
#include "control/protocol.hpp"
#include "daemon/control_server.hpp"
#include "daemon/etcd_sync.hpp"
#include "daemon/gateway_dns.hpp"
#include "daemon/host_checks.hpp"
#include "daemon/next_hops.hpp"
#include "daemon/peer_mtu_sync.hpp"
#include "daemon/nat_offload.hpp"
#include "daemon/policy_offload.hpp"
#include "daemon/router_advertiser.hpp"
#include "daemon/worker_pool.hpp"
#include "fabric/store.hpp"
#include "io/bpf/bpf_instance.hpp"
#include "io/bpf/nat_gateway_plumbing.hpp"
#include "io/bpf/tenant_plumbing.hpp"
#include "io/plan/map_sync.hpp"
#include "io/plan/port_table.hpp"
#include "nat/nat_engine.hpp"
#include "policy/firewall.hpp"

namespace andromeda::daemon {

struct DaemonOptions {
    std::string config_path;
    std::string control_socket;  // empty: /run/andromeda/<node>.sock
};

// Tenant ports a reload adds and removes, and the added ones that could not be set up.
struct PortChanges {
    std::vector<OwnedPort> added;
    std::vector<OwnedPort> removed;
    std::set<std::uint32_t> failed;  // ifindexes
};

// What a reload did, for the requester.
struct ReloadOutcome {
    bool applied = false;
    std::uint64_t generation = 0;
    std::string message;  // the diff summary and what followed from it, or the errors
};

class Daemon {
public:
    // Starts everything; throws StartupError (or io::IoError) saying what failed and how to fix it,
    // having undone whatever it had started.
    explicit Daemon(DaemonOptions options);
    ~Daemon();
    Daemon(const Daemon&) = delete;
    Daemon& operator=(const Daemon&) = delete;

    // Waits for signals until SIGTERM or SIGINT: SIGHUP reloads, and every second the tick
    // runs. The caller blocks those signals in every thread before constructing the Daemon.
    void run();

    ReloadOutcome reload(const std::optional<std::string>& file);
    // One control request; the full response line.
    std::string handle(const control::ControlRequest& request);

private:
    void start_bpf(const fabric::FabricSnapshot& snapshot);
    // Maps adopted from a killed predecessor put right for this configuration at once.
    void reconcile_adopted(const fabric::FabricSnapshot& snapshot);
    void set_down_ports_left_behind(const io::PortTable& adopted, const io::PortTable& tenants);
    void start_policy_offload();
    void start_nat(const fabric::FabricSnapshot& snapshot);
    void start_uplink_route();
    void start_workers(const fabric::FabricSnapshot& snapshot);
    void start_gateway_dns(const fabric::FabricSnapshot& snapshot);
    void start_control();
    [[nodiscard]] io::PortTable desired_ports(const fabric::FabricSnapshot& snapshot,
                                              std::map<std::string, std::uint32_t>* unresolved);
    // A tenant port plumbed (io::TenantPlumbing), as the workers own it (sockets on the punt
    // pair's steering end). Throws, leaving nothing of the port behind.
    OwnedPort plumb_tenant(const std::string& name, std::uint32_t ifindex, std::uint32_t slot,
                           std::vector<std::string>& notes);
    // The fast path's view of this node, written into andromeda_fp_config (again whenever the
    // uplink or its next hop changes).
    void configure_fast_path(const fabric::FabricSnapshot& snapshot);
    [[nodiscard]] std::string fast_path_off_reason(const fabric::FabricSnapshot& snapshot) const;
    void write_fast_path_config();
    // A NAT gateway's uplink: its punt pair and tc program; the pipeline's uplink port.
    void start_gateway_ports(std::vector<OwnedPort>& owned, io::PortTable& ports);
    void start_segmenter();
    static std::uint32_t random_handoff_cookie();
    [[nodiscard]] PortChanges port_changes(const fabric::FabricSnapshot& snapshot, const io::PortTable& desired) const;
    void reconcile_ports(const fabric::FabricSnapshot& snapshot, bool nodes_changed, std::vector<std::string>& notes);
    void replumb_workers(PortChanges& changes, const std::vector<dataplane::NextHop>& hops,
                         std::vector<std::string>& notes);
    void update_nat(const fabric::FabricSnapshot& snapshot, const fabric::FabricDiff& diff,
                    std::vector<std::string>& notes);
    void apply_next_hops(const std::vector<dataplane::NextHop>& hops);
    ReloadOutcome reload_locked(const std::optional<std::string>& file);
    // Whether a fabric fits the BPF maps (io/plan/map_capacity.hpp): every load checks it.
    static fabric::ValidationErrors fits_maps(const fabric::FabricSnapshot& next, const fabric::FabricDiff& diff);
    // A reload's fabric fits the maps and is written into them before it is published (into
    // `written`, what was written): a write the kernel refuses throws io::MapSyncError having
    // put the maps back, and nothing is published.
    fabric::BeforePublish write_maps_first(io::SyncCounts& written);
    // What follows a fabric the store applied, whatever its source: NAT, ports. `written`: its
    // map writes; `written_ahead`: those of this change written earlier (etcd's in-place path).
    std::string finish_reload(const fabric::ReloadResult& result, io::SyncCounts written,
                              const io::SyncCounts& written_ahead = {});
    // What a reload whose finish_reload() threw reports: the fabric runs, what follows lags.
    static std::string unfinished_reload(std::uint64_t generation, const std::exception& e);
    // The fabric in etcd (etcd_sync.hpp): node.toml's own part and the keys, applied as a reload.
    void start_etcd(const fabric::FabricSnapshot& snapshot);
    // [etcd] at start: node.toml's text kept for the etcd builds, and the fabric a previous run
    // cached, so a start while etcd is away forwards as before.
    void start_from_etcd_cache(fabric::ReloadResult& loaded);
    // A watch's changes: endpoint changes applied to the running fabric where that is exactly
    // what a build gives (fabric::EtcdFabricBuilder::derive), the whole fabric built otherwise.
    // A change refused (or whose map writes failed) leaves the running fabric and the maps as
    // they were, and throws.
    EtcdApplied apply_etcd(const EtcdUpdate& update);
    fabric::ReloadResult build_etcd_change(const EtcdUpdate& update, EtcdApplied& applied, io::SyncCounts& ahead,
                                           const fabric::BeforePublish& before_publish);
    fabric::ReloadResult load_etcd_fabric(const std::string& config_text, const std::map<std::string, std::string>& kvs,
                                          std::vector<fabric::RejectedKey>* rejected,
                                          const fabric::BeforePublish& before_publish);
    // The fabric built from node.toml's part and the keys the builder holds, applied as a reload.
    fabric::ReloadResult build_etcd_fabric(const std::string& config_text, std::vector<fabric::RejectedKey>* rejected,
                                           const fabric::BeforePublish& before_publish);
    void tick();
    void sync_peer_path_mtu();
    void publish_stats();

    // Control-socket results (daemon_reports.cpp).
    [[nodiscard]] control::StatusReply status() const;
    [[nodiscard]] control::StatsReply stats() const;
    // The daemon's own counters: the daemon group of stats() and what publish_stats() writes.
    [[nodiscard]] andromeda_daemon_stats daemon_stats(const PoolCounters& pool) const;
    [[nodiscard]] control::FabricReply fabric() const;
    // daemon_conntrack.cpp: the flows the query selects (or what is wrong with the query).
    [[nodiscard]] std::variant<control::ConntrackReply, std::string> conntrack(const control::ConntrackQuery& query) const;
    // daemon_policy.cpp: the security groups' rules with their hit counts, and the firewall's flows.
    [[nodiscard]] control::PolicyReply policy() const;
    [[nodiscard]] control::LeasesReply leases() const;
    [[nodiscard]] std::vector<control::FirewallFlow> firewall_flows(std::size_t limit) const;
    // daemon_health.cpp: whether the daemon does all it was asked to, and why not.
    [[nodiscard]] control::HealthReply health() const;
    [[nodiscard]] std::vector<std::string> detached_programs() const;
    // Empty while the daemon is alive enough to be pinged by the systemd watchdog (takes mutex_).
    [[nodiscard]] std::string liveness_problem() const;
    [[nodiscard]] control::PortStatus port_status(const OwnedPort& port, const fabric::FabricSnapshot& snapshot) const;
    [[nodiscard]] std::string port_paths(const OwnedPort& port, const fabric::FabricSnapshot& snapshot) const;
    [[nodiscard]] std::uint64_t uptime_s() const;

    DaemonOptions options_;
    std::chrono::steady_clock::time_point started_;
    mutable std::mutex mutex_;

    // Declaration order is start order; destruction undoes it in reverse.
    fabric::FabricStore store_;
    HostFacts host_;
    std::uint16_t underlay_vlan_ = 0;  // the VID the workers tag with, as started (0: untagged)
    io::LocalContext local_;
    std::unique_ptr<io::BpfInstance> bpf_;
    std::unique_ptr<io::FabricMapSync> sync_;
    io::PortSlots slots_;
    NextHopTable next_hops_;
    // Path MTUs towards peers learned by the workers from ICMP about our outer packets; mirrored
    // into andromeda_peer_mtu by tick() (daemon/peer_mtu_sync.hpp).
    std::shared_ptr<dataplane::PeerPathMtu> peer_path_mtu_ = std::make_shared<dataplane::PeerPathMtu>();
    // The learned path MTUs as last logged (sync_peer_path_mtu logs each new or refreshed one).
    std::vector<dataplane::PeerPathMtu::Entry> told_path_mtus_;
    // Security groups and their connection tracking, shared by every worker's pipeline.
    std::shared_ptr<policy::Firewall> firewall_ = std::make_shared<policy::Firewall>();
    std::unique_ptr<nat::NatEngine> nat_;
    dataplane::UplinkConfig uplink_;
    // A NAT gateway's uplink (and, with the kernel NAT, underlay) punt pairs and programs: undone
    // after the workers, like the tenants'.
    std::unique_ptr<io::NatGatewayPlumbing> gateway_;
    // The kernel's NAT flows, kept by their own thread (nat_offload.hpp); with the kernel NAT only.
    std::unique_ptr<NatOffloadLoop> nat_offload_;
    // The security groups' kernel flows, kept by their own thread (policy_offload.hpp); with the fast path only.
    std::unique_ptr<PolicyOffloadLoop> policy_offload_;
    // Tenant ports' punt pairs and programs: undone after the workers (their sockets bind there).
    std::unique_ptr<io::TenantPlumbing> tenants_;
    // Over an IPv6 underlay with the fast path, the segmenting pair (bpf/tc_reseg.bpf.c); null
    // otherwise, or when it could not be made (such packets then go to the pipeline).
    std::unique_ptr<io::PuntPair> segmenter_;
    bool fast_path_ = false;  // andromeda_fp_config.enabled as written
    bool kernel_nat_ = false;  // the fast path translates this node's NAT flows (andromeda_nat_flows)
    // andromeda_fp_config.handoff_cookie: random, nonzero, this instance's (shared/andromeda_kern_user.h, andromeda_fp_handoff).
    std::uint32_t handoff_cookie_ = random_handoff_cookie();
    // The gateway's DHCP server and DNS service, shared by every worker's pipeline (docs/vm-tenants.md).
    std::shared_ptr<dataplane::GatewayDhcp> dhcp_ = std::make_shared<dataplane::GatewayDhcp>();
    std::shared_ptr<GatewayDns> dns_;
    std::unique_ptr<RouterAdvertiser> router_advertiser_;  // the unsolicited RAs of dual-stack VPCs
    std::unique_ptr<WorkerPool> pool_;
    ControlServer control_;
    std::unique_ptr<fabric::EtcdFabricBuilder> etcd_builder_;
    std::string etcd_config_text_;  // node.toml as last loaded: its [node] part of every etcd build
    std::unique_ptr<EtcdSync> etcd_;  // [etcd] only; stopped first

    std::optional<std::string> last_reload_error_;  // set by a refused reload or etcd change, cleared by an applied one
    std::uint64_t reloads_ok_ = 0;
    std::uint64_t reloads_failed_ = 0;
    std::uint64_t stats_published_ = 0;
    std::uint64_t ticks_ = 0;
    std::size_t failures_logged_ = 0;
};

}  // namespace andromeda::daemon
