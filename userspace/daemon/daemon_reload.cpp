// Reload: the fabric store validates and publishes (or changes nothing), then the diff drives
// the rest — BPF map entries that changed, tenant ports that came or went, next hops of new
// peers, NAT rules and the flows of removed endpoints.
//
// Ports are re-plumbed so that no frame of a port that stays is lost: removed ports stop being
// steered (port map) before their sockets go; added ports are steered only once their sockets
// are in the XSKMAP; the workers are paused (joined between batches, frames waiting on their
// rings) only while sockets are bound or unbound.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <set>

#include "daemon/daemon.hpp"
#include "daemon/daemon_support.hpp"
#include "io/netlink/interfaces.hpp"
#include "io/plan/map_capacity.hpp"
#include "daemon/service_manager.hpp"

namespace andromeda::daemon {

namespace {

using namespace std::chrono_literals;

constexpr auto kReloadResolveTimeout = 1000ms;

}  // namespace

ReloadOutcome Daemon::reload(const std::optional<std::string>& file) {
    std::lock_guard lock(mutex_);
    service::notify_reloading();
    ReloadOutcome outcome;
    try {
        outcome = reload_locked(file);
    } catch (const std::exception& e) {  // nothing a reload meets may stop the daemon
        outcome = {false, store_.current()->generation(), std::string("reload failed: ") + e.what() + "\n"};
    }
    (outcome.applied ? reloads_ok_ : reloads_failed_)++;
    if (outcome.applied) {
        last_reload_error_.reset();
    } else {
        last_reload_error_ = outcome.message;
        // Whoever asked (SIGHUP, andromedactl, systemctl reload), the journal has it at err.
        spdlog::error("reload of {} refused:\n{}", file.value_or(options_.config_path), outcome.message);
    }
    try {
        publish_stats();
    } catch (const std::exception& e) {
        spdlog::warn("after the reload: {}", e.what());
    }
    service::notify_ready(outcome.applied ? fmt::format("fabric generation {}", outcome.generation)
                                          : "reload refused, running the previous fabric");
    return outcome;
}

fabric::ValidationErrors Daemon::fits_maps(const fabric::FabricSnapshot& next, const fabric::FabricDiff&) {
    return io::capacity_errors(next);
}

// The maps are written before the snapshot is published, so a write the kernel refuses leaves
// the running fabric as it was: FabricMapSync has undone the writes made before it.
fabric::BeforePublish Daemon::write_maps_first(io::SyncCounts& written) {
    return [this, &written](const fabric::FabricSnapshot& next, const fabric::FabricDiff& diff) {
        fabric::ValidationErrors errors = fits_maps(next, diff);
        if (!errors.empty()) return errors;
        // After an undo the kernel refused, the maps hold part of a change given up: only a
        // whole reconcile puts them right.
        written = sync_->diverged() ? sync_->reconcile(io::plan_full(next, local_))
                                    : sync_->apply(io::plan_diff(next, diff, local_));
        return errors;
    };
}

ReloadOutcome Daemon::reload_locked(const std::optional<std::string>& file) {
    const std::string path = file.value_or(options_.config_path);
    const std::uint64_t running = store_.current()->generation();
    fabric::ReloadResult result;
    io::SyncCounts written;
    try {
        if (etcd_) {  // node.toml holds this node's part; the fabric is etcd's, as last seen
            auto text = fabric::read_text_file(path);
            if (!text) return {false, running, "cannot read " + path + "\n"};
            result = load_etcd_fabric(*text, etcd_->keys(), nullptr, write_maps_first(written));
            if (result.applied) etcd_config_text_ = std::move(*text);
        } else {
            result = store_.load_file(path, write_maps_first(written));
        }
    } catch (const io::MapSyncError& e) {
        return {false, running, std::string("writing the BPF maps failed: ") + e.what() + "\nfabric not changed\n"};
    }
    if (!result.applied) return {false, running, result.message()};
    if (file) options_.config_path = absolute_path(*file);  // later reloads (SIGHUP) read the new file
    const std::uint64_t generation = result.snapshot->generation();
    try {
        const std::string message = finish_reload(result, written);
        spdlog::info("reloaded {}: {}", path, message);
        return {true, generation, message};
    } catch (const std::exception& e) {
        return {false, generation, unfinished_reload(generation, e)};
    }
}

std::string Daemon::unfinished_reload(std::uint64_t generation, const std::exception& e) {
    return fmt::format("fabric generation {} runs and its map entries are written, but setting up what follows from it "
                       "failed: {}\nfix the cause and reload\n",
                       generation, e.what());
}

std::string Daemon::finish_reload(const fabric::ReloadResult& result, io::SyncCounts written,
                                  const io::SyncCounts& written_ahead) {
    const fabric::FabricSnapshot& snapshot = *result.snapshot;
    std::vector<std::string> notes;
    if (result.diff.local_settings_changed)
        notes.push_back("! [node] settings changed: they take effect when andromedad restarts");
    // What was written ahead now counts as unchanged here: it was written, once.
    for (std::size_t m = 0; m < written.maps.size(); ++m) {
        const std::uint64_t ahead = written_ahead.maps[m].writes();
        written.maps[m].unchanged -= std::min(written.maps[m].unchanged, ahead);
    }
    written += written_ahead;
    notes.push_back("maps: " + (written.total().writes() == 0 && written.total().unchanged == 0 ? std::string("no change")
                                                                                               : written.summary()));
    update_nat(snapshot, result.diff, notes);
    const bool nodes_changed =
        !result.diff.nodes_added.empty() || !result.diff.nodes_removed.empty() || !result.diff.nodes_changed.empty();
    reconcile_ports(snapshot, nodes_changed, notes);
    dns_->set_fabric(snapshot);
    dns_->set_reply_ports(tenants_->steering_ifindexes());
    router_advertiser_->set_ports(snapshot, tenants_->steering_ifindexes());
    std::string message = result.diff.summary();
    if (!message.empty() && message.back() != '\n') message += '\n';
    for (const auto& note : notes) message += note + '\n';
    return message;
}

fabric::ReloadResult Daemon::load_etcd_fabric(const std::string& config_text, const std::map<std::string, std::string>& kvs,
                                              std::vector<fabric::RejectedKey>* rejected,
                                              const fabric::BeforePublish& before_publish) {
    etcd_builder_->update(kvs);
    return build_etcd_fabric(config_text, rejected, before_publish);
}

fabric::ReloadResult Daemon::build_etcd_fabric(const std::string& config_text,
                                               std::vector<fabric::RejectedKey>* rejected,
                                               const fabric::BeforePublish& before_publish) {
    return store_.load_with(
        [&](const fabric::LoadOptions& o) {
            fabric::EtcdFabric built = etcd_builder_->build(config_text, options_.config_path, o);
            if (rejected != nullptr) *rejected = std::move(built.rejected);
            return std::move(built.loaded);
        },
        before_publish);
}

void Daemon::start_etcd(const fabric::FabricSnapshot& snapshot) {
    const auto& settings = *snapshot.local().etcd;
    if (!etcd_builder_) etcd_builder_ = std::make_unique<fabric::EtcdFabricBuilder>(fabric::EtcdLayout(settings.prefix));
    const nlohmann::json self{{"name", snapshot.local().name},
                              {"address", host_.underlay_address.to_string()},
                              {"underlay_mac", host_.underlay.mac.to_string()},
                              {"encap", std::string(fabric::to_string(snapshot.local().encap))}};
    std::unique_ptr<EtcdSync> sync;
    try {
        sync = std::make_unique<EtcdSync>(settings, snapshot.local().name, self.dump(),
                                          EtcdSync::default_cache_path(snapshot.local().name),
                                          [this](const EtcdUpdate& update) { return apply_etcd(update); });
    } catch (const std::exception& e) {
        throw StartupError(std::string("[etcd]: ") + e.what());
    }
    // The control socket already serves (status and health read etcd_ under the lock); the sync's
    // own thread takes the lock to apply, so it is built outside it.
    std::lock_guard lock(mutex_);
    etcd_ = std::move(sync);
    spdlog::info("fabric source: etcd {} under {}", fmt::join(settings.endpoints, ","), etcd_->layout().root());
}

void Daemon::start_from_etcd_cache(fabric::ReloadResult& loaded) {
    // node.toml's text, read once: this start's builds and every etcd build until a reload use it.
    auto text = fabric::read_text_file(options_.config_path);
    if (!text) throw StartupError("cannot read " + options_.config_path);
    etcd_config_text_ = std::move(*text);
    const auto& local = loaded.snapshot->local();
    const fabric::EtcdLayout layout(local.etcd->prefix);
    const std::string path = EtcdSync::default_cache_path(local.name);
    const auto cache = EtcdSync::read_cache(path, layout);
    if (!cache) return;
    etcd_builder_ = std::make_unique<fabric::EtcdFabricBuilder>(layout);
    etcd_builder_->update(cache->kvs);
    fabric::ReloadResult cached = build_etcd_fabric(etcd_config_text_, nullptr, fits_maps);
    if (!cached.applied) {
        spdlog::warn("etcd: the cached fabric {} does not build; starting without it:\n{}", path, cached.message());
        return;
    }
    spdlog::info("etcd: starting with the cached fabric of revision {} ({} keys, {}) until etcd is listed", cache->revision,
                 cache->kvs.size(), path);
    loaded = std::move(cached);
}

EtcdApplied Daemon::apply_etcd(const EtcdUpdate& update) {
    std::lock_guard lock(mutex_);
    EtcdApplied applied;
    std::optional<fabric::ReloadResult> result;
    io::SyncCounts ahead;  // map entries written before the snapshot (the in-place path)
    io::SyncCounts written;
    const auto start = std::chrono::steady_clock::now();
    // The entries written ahead and the snapshot's are one change: undone together if refused.
    sync_->begin();
    try {
        result = build_etcd_change(update, applied, ahead, write_maps_first(written));
        if (!result->applied) throw std::runtime_error(result->message());
    } catch (const std::exception& e) {
        const io::RollbackResult undone = sync_->rollback();
        ++reloads_failed_;
        std::string why = e.what();
        if (undone.undone + undone.failed > 0) why += "\nthe change's map entries written ahead: " + undone.describe();
        last_reload_error_ = "etcd: " + why;
        throw std::runtime_error(why);
    }
    sync_->commit();
    const auto built = std::chrono::steady_clock::now();
    std::string message;
    try {
        message = finish_reload(*result, written, ahead);
    } catch (const std::exception& e) {
        ++reloads_failed_;
        last_reload_error_ = "etcd: " + unfinished_reload(result->snapshot->generation(), e);
        throw std::runtime_error(*last_reload_error_);
    }
    ++reloads_ok_;
    last_reload_error_.reset();
    const auto ms = [](auto d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); };
    if (update.full)
        spdlog::info("etcd: {} keys built in {} ms, maps and ports in {} ms", update.kvs.size(), ms(built - start),
                     ms(std::chrono::steady_clock::now() - built));
    if (!result->diff.empty()) spdlog::info("etcd: fabric generation {}: {}", result->snapshot->generation(), message);
    publish_stats();
    return applied;
}

// The fabric of a watch's changes (node.toml as last loaded, at start or by a reload, not as it
// may have been edited since), published through `before_publish`.
fabric::ReloadResult Daemon::build_etcd_change(const EtcdUpdate& update, EtcdApplied& applied, io::SyncCounts& ahead,
                                               const fabric::BeforePublish& before_publish) {
    if (update.full) return load_etcd_fabric(etcd_config_text_, update.kvs, &applied.rejected, before_publish);
    etcd_builder_->update(update.changes);
    const auto running = store_.current();
    fabric::PlannedChange planned =
        etcd_builder_->plan_change(*running, update.changes, etcd_config_text_, options_.config_path);
    std::optional<fabric::EtcdChangePlan>& plan = planned.plan;
    std::optional<fabric::ReloadResult> result;
    if (!plan)
        spdlog::debug("etcd: {} change(s) built in full, not in place: {} ({})", update.changes.size(),
                      fabric::describe(planned.declined), fabric::to_string(planned.declined));
    if (plan) {
        // Endpoints only: the fast path's entries first, valued from the change itself, so
        // the kernel forwards by it (and a removed endpoint is no longer forwarded) while the
        // workers' snapshot is built; before_publish then finds them written. Not when they would
        // overfill andromeda_fabric: the snapshot's capacity check refuses the change instead.
        const fabric::FabricDiff& d = plan->diff;
        const std::size_t endpoints =
            running->endpoints().size() + d.endpoints_added.size() -
            std::min(running->endpoints().size(), d.endpoints_removed.size());
        if (d.nodes_added.empty() && d.nodes_changed.empty() && endpoints <= io::kMapCapacities.fabric)
            ahead = sync_->apply(io::plan_endpoint_changes(plan->nodes, d, local_));
        const auto derive = [&](const fabric::FabricSnapshot& now,
                                const fabric::LoadOptions& o) -> std::optional<fabric::DerivedFabric> {
            // The store changes only under mutex_, held here: `now` is what the plan was made
            // against. Checked all the same; a mismatch builds in full instead.
            if (now.generation() != plan->base_generation) return std::nullopt;
            return etcd_builder_->apply_change(now, std::move(*plan), o);
        };
        result = store_.derive(derive, before_publish);
    }
    applied.incremental = result.has_value();
    if (!result) result = build_etcd_fabric(etcd_config_text_, &applied.rejected, before_publish);
    return std::move(*result);
}

void Daemon::update_nat(const fabric::FabricSnapshot& snapshot, const fabric::FabricDiff& diff,
                        std::vector<std::string>& notes) {
    if (!nat_) {
        if (snapshot.serves_nat())
            notes.push_back("! this node became a VPC's NAT gateway: restart andromedad to start translating");
        return;
    }
    // The workers' NAT stage installs the new rules too when it sees the new generation; here
    // they go in at once, so the flows they no longer allow end now (remove_stale), and leave
    // the kernel before the reload reports success.
    const nat::TimePoint now = nat::Clock::now();
    nat_->set_rules(dataplane::nat_rules_for(snapshot));
    if (const nat::TenantFlowLimit limit = tenant_flow_limit_of(snapshot.local()); limit != nat_->tenant_flow_limit()) {
        nat_->set_tenant_flow_limit(limit);
        notes.push_back(limit.rate == 0 ? std::string("nat: new flows per tenant no longer limited")
                                        : fmt::format("nat: new flows per tenant limited to {}/s, {} at once",
                                                      limit.rate, limit.burst));
    }
    std::size_t expired = nat_->remove_stale(now);
    for (const fabric::Endpoint& e : diff.endpoints_removed) expired += nat_->expire_endpoint(e.vni, e.ip);
    if (nat_offload_) nat_offload_->flush(now);
    if (expired > 0)
        notes.push_back(fmt::format("nat: ended {} flow(s) of removed rules, forwards or endpoints", expired));
}

// Tenant ports the snapshot no longer has (by ifindex: a recreated interface is a new port), and
// those it adds.
PortChanges Daemon::port_changes(const fabric::FabricSnapshot& snapshot, const io::PortTable& desired) const {
    PortChanges changes;
    for (const OwnedPort& p : pool_->ports())
        if (p.role == dataplane::PortRole::tenant && desired.count(p.ifindex) == 0) changes.removed.push_back(p);
    for (const auto& [ifindex, port] : desired) {
        if (port.role != ANDROMEDA_PORT_TENANT || pool_->find_port(ifindex) != nullptr) continue;
        if (const fabric::Endpoint* e = snapshot.find_local_endpoint_by_ifindex(ifindex))
            changes.added.push_back({e->port, ifindex, dataplane::PortRole::tenant, port.slot, 1, {}});
    }
    return changes;
}

void Daemon::reconcile_ports(const fabric::FabricSnapshot& snapshot, bool nodes_changed, std::vector<std::string>& notes) {
    std::map<std::string, std::uint32_t> unresolved;
    io::PortTable desired = desired_ports(snapshot, &unresolved);
    for (const auto& [name, vni] : unresolved)
        notes.push_back(fmt::format("! tenant port {} (vni {}) does not exist: its endpoint stays unreachable until a "
                                    "reload finds it",
                                    name, vni));
    PortChanges changes = port_changes(snapshot, desired);

    // 1. Removed ports are no longer steered (their tc program drops what they send).
    io::PortTable steered = desired;
    for (const auto& a : changes.added) steered.erase(a.ifindex);
    sync_->sync_ports(tenants_->with_punt_devices(steered));
    // 2. New ports get their punt pair and programs (the tc program drops their frames until the
    //    port map names them).
    for (auto& a : changes.added) {
        try {
            a = plumb_tenant(a.name, a.ifindex, a.slot, notes);
        } catch (const std::exception& e) {
            notes.push_back("! port " + a.name + " left out: " + e.what());
            changes.failed.insert(a.ifindex);
        }
    }
    // 3. Next hops (the fast path's peer entries first), then sockets, with the workers paused
    //    between two batches. Only when the nodes changed: a peer the kernel cannot resolve would
    //    otherwise cost every endpoint change its timeout (the periodic refresh retries it).
    const std::vector<dataplane::NextHop> hops =
        nodes_changed ? next_hops_.update(snapshot, kReloadResolveTimeout) : std::vector<dataplane::NextHop>{};
    for (const auto& hop : hops) local_.learn_next_hop(hop.node_address, hop.mac);
    if (!hops.empty()) sync_->apply(io::plan_peers(snapshot, local_));
    replumb_workers(changes, hops, notes);
    // 4. Removed ports are set down and lose their programs and punt pair (no socket binds there
    //    any more), and added ports are steered now that their sockets are in the XSKMAP.
    for (const auto& r : changes.removed) {
        tenants_->unplumb(r.name, r.ifindex);
        notes.push_back("- port " + r.name + " detached and set down");
    }
    for (const std::uint32_t ifindex : changes.failed) desired.erase(ifindex);
    bpf_->set_punt_limits(desired, punt_limit_of(snapshot.local()));
    sync_->sync_ports(tenants_->with_punt_devices(std::move(desired)));
}

void Daemon::replumb_workers(PortChanges& changes, const std::vector<dataplane::NextHop>& hops,
                             std::vector<std::string>& notes) {
    if (changes.removed.empty() && changes.added.empty() && hops.empty()) return;
    const PausedWorkers paused(*pool_);
    for (const auto& r : changes.removed) pool_->remove_port(r.ifindex);
    for (const auto& a : changes.added) {
        if (changes.failed.count(a.ifindex) != 0) continue;
        try {
            pool_->add_port(a);
        } catch (const std::exception& e) {
            notes.push_back("! port " + a.name + " left out: " + e.what());
            changes.failed.insert(a.ifindex);
            tenants_->unplumb(a.name, a.ifindex);
        }
    }
    for (const auto& hop : hops) pool_->set_next_hop(hop.node_address, hop.mac);
}

}  // namespace andromeda::daemon
