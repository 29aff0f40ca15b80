// The daemon's side of `andromedactl health`: the facts health.hpp judges, gathered from the
// kernel (is every program the daemon attached still there?), the fabric, etcd, the last reload
// and the workers; and the liveness the systemd watchdog is pinged on.
#include <fmt/format.h>

#include "daemon/daemon.hpp"
#include "daemon/health.hpp"

namespace andromeda::daemon {

namespace {

// "<what> on <device>" is missing, or the device itself is gone.
void check_program(std::optional<bool> attached, const std::string& port, const std::string& device, const char* what,
                   std::vector<std::string>& problems) {
    const std::string where = device == port ? port : fmt::format("{} (via {})", port, device);
    if (!attached)
        problems.push_back(fmt::format("{}: the interface {} is gone", where, device));
    else if (!*attached)
        problems.push_back(
            fmt::format("{}: {} is no longer attached to {}; restart andromedad (or reload after "
                        "removing what replaced it)",
                        where, what, device));
}

}  // namespace

std::vector<std::string> Daemon::detached_programs() const {
    std::vector<std::string> problems;
    for (const OwnedPort& port : pool_->ports())
        for (const io::AttachReport& a : bpf_->attachments())
            if (a.ifname == port.socket_device())
                check_program(xdp_attached_now(a.ifindex), port.name, a.ifname, "its XDP program", problems);
    // Every tc program the daemon attached: tenant ports and their punt devices, the underlay,
    // a NAT gateway's uplink and its punt device.
    for (const auto& [device, ifindex] : bpf_->tc_devices())
        check_program(tc_ingress_attached_now(ifindex), device, device, "its tc program", problems);
    return problems;
}

control::HealthReply Daemon::health() const {
    HealthFacts facts;
    if (etcd_) {
        const EtcdStatus e = etcd_->status();
        facts.etcd_configured = true;
        facts.etcd_connected = e.connected;
        facts.etcd_error = e.last_error;
    }
    facts.detached_programs = detached_programs();
    const auto snapshot = store_.current();
    for (const std::uint32_t p : snapshot->local_positions()) {
        const fabric::Endpoint& e = snapshot->endpoints()[p];
        if (e.port.empty()) continue;
        bool served = false;
        for (const OwnedPort& port : pool_->ports()) served = served || port.name == e.port;
        if (!served)
            facts.unserved_tenant_ports.push_back(fmt::format(
                "endpoint {} (vni {}): its tenant port {} is not served (the interface is missing, or setting it up "
                "failed: see the log); create it, then reload",
                e.ip.to_string(), e.vni, e.port));
    }
    facts.last_reload_error = last_reload_error_;
    facts.worker_failures = pool_->failures();
    return evaluate_health(facts);
}

std::string Daemon::liveness_problem() const {
    std::lock_guard lock(mutex_);
    const auto failures = pool_->failures();
    return failures.empty() ? std::string() : failures.front();
}

}  // namespace andromeda::daemon
