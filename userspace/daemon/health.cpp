#include "daemon/health.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <net/if.h>

#include "io/bpf/tc_attach.hpp"

namespace andromeda::daemon {

control::HealthReply evaluate_health(const HealthFacts& facts) {
    control::HealthReply reply;
    auto add = [&](const char* check, std::string detail) { reply.problems.push_back({check, std::move(detail)}); };
    if (facts.etcd_configured && !facts.etcd_connected)
        add("etcd", "etcd unreachable, forwarding with the last fabric it gave" +
                        (facts.etcd_error.empty() ? std::string() : ": " + facts.etcd_error));
    for (const auto& d : facts.detached_programs) add("port", d);
    for (const auto& p : facts.unserved_tenant_ports) add("port", p);
    if (facts.last_reload_error)
        add("reload",
            "the last reload was refused, the running fabric is the one before it: " + *facts.last_reload_error);
    for (const auto& w : facts.worker_failures) add("worker", w);
    reply.healthy = reply.problems.empty();
    return reply;
}

namespace {

bool interface_exists(std::uint32_t ifindex) {
    char name[IF_NAMESIZE] = {};
    return if_indextoname(ifindex, name) != nullptr;
}

}  // namespace

std::optional<bool> xdp_attached_now(std::uint32_t ifindex) {
    // The query answers "nothing attached" for an index no interface has: ask that first.
    if (!interface_exists(ifindex)) return std::nullopt;
    LIBBPF_OPTS(bpf_xdp_query_opts, opts);
    if (bpf_xdp_query(static_cast<int>(ifindex), 0, &opts) != 0) return false;
    return opts.prog_id != 0 || opts.drv_prog_id != 0 || opts.skb_prog_id != 0 || opts.hw_prog_id != 0;
}

std::optional<bool> tc_ingress_attached_now(std::uint32_t ifindex) {
    if (!interface_exists(ifindex)) return std::nullopt;
    return !io::tc_ingress_programs(ifindex).empty();
}

}  // namespace andromeda::daemon
