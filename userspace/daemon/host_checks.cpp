#include "daemon/host_checks.hpp"

#include <fmt/format.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "andromeda_kern_user.h"
#include "io/plan/config.hpp"

namespace andromeda::daemon {

namespace {

// The largest frame one AF_XDP chunk takes without multi-buffer (io::UmemConfig defaults).
std::uint32_t max_afxdp_frame() { return io::UmemConfig{}.max_frame_length(); }
constexpr std::uint32_t kEthernetAndTag = 18;
const char* const kNamespaceHint =
    "check the name in the config, or start andromedad in the network namespace that holds it "
    "(nsenter --net=/run/netns/<ns> andromedad ...)";

template <typename Address>
std::string join_addresses(const std::vector<Address>& addresses) {
    std::string out;
    for (const auto& a : addresses) out += (out.empty() ? "" : ", ") + a.to_string();
    return out.empty() ? "none" : out;
}

std::optional<io::InterfaceInfo> find_or_report(const std::string& key, const std::string& name, HostCheck& check) {
    auto link = io::find_interface(name);
    if (!link) check.errors.push_back(fmt::format("{}: interface {} does not exist; {}", key, name, kNamespaceHint));
    else if (!link->up)
        check.warnings.push_back(fmt::format("{}: interface {} is down; bring it up (ip link set {} up)", key, name, name));
    return link;
}

// The configured address, else the interface's primary one.
std::optional<wire::Ipv4Address> address_of(const std::string& key, const io::InterfaceInfo& link,
                                            const std::optional<wire::Ipv4Address>& configured, HostCheck& check) {
    const auto present = io::interface_ipv4_addresses(link.ifindex);
    if (configured) {
        if (std::find(present.begin(), present.end(), *configured) == present.end())
            check.warnings.push_back(fmt::format(
                "{}: {} is not an address of {} (it has: {}); the kernel will not answer ARP for it, so peers may "
                "not reach this node; add it (ip addr add {}/24 dev {}) or fix the config",
                key, configured->to_string(), link.name, join_addresses(present), configured->to_string(), link.name));
        return configured;
    }
    if (present.empty()) {
        check.errors.push_back(fmt::format("{}: {} has no IPv4 address and the config sets none; add one "
                                           "(ip addr add <address>/<prefix> dev {}) or set address = \"...\"",
                                           key, link.name, link.name));
        return std::nullopt;
    }
    return present.front();
}

// An IPv6 underlay address must be the interface's, or the kernel answers no Neighbor
// Solicitation for it (with underlay_vlan it lives on a VLAN the kernel has no device for).
void ipv6_address_present(const wire::Ipv6Address& configured, const io::InterfaceInfo& link, std::uint16_t vlan,
                          HostCheck& check) {
    if (vlan != 0) return;
    const auto present = io::interface_ipv6_addresses(link.ifindex);
    if (std::find(present.begin(), present.end(), configured) != present.end()) return;
    check.warnings.push_back(fmt::format(
        "[node] address: {} is not an address of {} (it has: {}); the kernel will not answer Neighbor Solicitations "
        "for it, so peers may not reach this node; add it (ip -6 addr add {}/64 dev {} nodad) or fix the config",
        configured.to_string(), link.name, join_addresses(present), configured.to_string(), link.name));
}

void check_underlay_mtu(const fabric::LocalNodeSettings& local, const io::InterfaceInfo& link, bool ipv6,
                        HostCheck& check) {
    const std::uint32_t overhead = fabric::overlay_overhead(ipv6);
    if (link.mtu < local.underlay_mtu)
        check.errors.push_back(fmt::format(
            "[node] underlay_mtu: {} has MTU {} but underlay_mtu is {}: full-size overlay packets would not fit; "
            "set underlay_mtu = {} (VPC MTUs at most {}) or raise the interface MTU (ip link set {} mtu {})",
            link.name, link.mtu, local.underlay_mtu, link.mtu, link.mtu - overhead, link.name, local.underlay_mtu));
    if (local.underlay_mtu + kEthernetAndTag > max_afxdp_frame())
        check.errors.push_back(fmt::format(
            "[node] underlay_mtu: {} is too large for AF_XDP without multi-buffer (frames of at most {} bytes); "
            "use underlay_mtu = {} or less",
            local.underlay_mtu, max_afxdp_frame(), max_afxdp_frame() - kEthernetAndTag));
}

void check_tenant_ports(const fabric::FabricSnapshot& snapshot, HostCheck& check) {
    for (const std::uint32_t p : snapshot.local_positions()) {
        const fabric::Endpoint& e = snapshot.endpoints()[p];
        if (e.port.empty()) continue;
        const auto link = io::find_interface(e.port);
        if (!link) {
            check.missing_tenant_ports.push_back(e.port);
            check.warnings.push_back(fmt::format(
                "endpoint {} (vni {}): tenant port {} does not exist; the endpoint is unreachable until it does and "
                "andromedad is reloaded ({})",
                e.ip.to_string(), e.vni, e.port, kNamespaceHint));
            continue;
        }
        if (link->mtu + kEthernetAndTag > max_afxdp_frame())
            check.warnings.push_back(fmt::format(
                "tenant port {}: MTU {} allows frames larger than AF_XDP takes ({} bytes); lower it to the VPC MTU "
                "({})",
                e.port, link->mtu, max_afxdp_frame(), snapshot.vpc_of(e).mtu));
    }
}

bool memlock_unlimited() {
    rlimit limit{};
    return getrlimit(RLIMIT_MEMLOCK, &limit) == 0 && limit.rlim_cur == RLIM_INFINITY;
}

bool has_capability(unsigned cap) {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3]{};
    if (syscall(SYS_capget, &header, data) != 0) return false;
    return cap / 32 < _LINUX_CAPABILITY_U32S_3 && (data[cap / 32].effective & (1u << (cap % 32))) != 0;
}

// Every CPU in [node] worker_cpus must be one this process may run on (its affinity mask, which
// taskset, cgroups' cpusets or systemd's CPUAffinity= narrow).
void check_worker_cpus(const fabric::LocalNodeSettings& local, HostCheck& check) {
    if (local.worker_cpus.empty()) return;
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
        check.warnings.push_back(fmt::format("[node] worker_cpus: cannot read this process's CPU affinity ({}); "
                                             "workers will try to pin anyway", std::strerror(errno)));
        return;
    }
    std::string usable;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &allowed)) usable += (usable.empty() ? "" : ",") + std::to_string(cpu);
    for (const std::uint32_t cpu : local.worker_cpus)
        if (cpu >= CPU_SETSIZE || !CPU_ISSET(static_cast<int>(cpu), &allowed))
            check.errors.push_back(fmt::format("[node] worker_cpus: CPU {} is not available to andromedad (it may run on "
                                               "CPUs {}); list only those, or widen its affinity (taskset, CPUAffinity=)",
                                               cpu, usable));
}

// [node] workers beyond the CPUs andromedad may run on take turns on them: they still keep one
// tenant's punts away from the underlay's worker, but add no capacity.
void check_workers(const fabric::LocalNodeSettings& local, HostCheck& check) {
    if (local.workers <= 1) return;
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
    const int cpus = CPU_COUNT(&allowed);
    if (static_cast<int>(local.workers) > cpus)
        check.warnings.push_back(fmt::format("[node] workers = {}: andromedad may run on {} CPU{}, so its workers take "
                                             "turns on them (each worker is a thread and 32 MB of UMEM)",
                                             local.workers, cpus, cpus == 1 ? "" : "s"));
}

}  // namespace

HostCheck check_host(const fabric::FabricSnapshot& snapshot) {
    HostCheck check;
    const fabric::LocalNodeSettings& local = snapshot.local();
    HostFacts facts;
    const auto underlay = find_or_report("[node] underlay", local.underlay, check);
    std::optional<wire::IpAddress> address;
    if (underlay) {
        facts.underlay = *underlay;
        check_underlay_mtu(local, *underlay, fabric::ipv6_underlay(snapshot.nodes()), check);
    }
    // An IPv6 address may come from this node's [[nodes]] entry (the fabric's local node), one
    // peer list fitting every host; an IPv4 one, when [node] has none, from the interface.
    const std::optional<wire::IpAddress>& listed = snapshot.local_node().address;
    if (underlay && listed && listed->is_ipv6()) {
        address = listed;
        ipv6_address_present(*listed->ipv6(), *underlay, local.underlay_vlan, check);
    } else if (underlay) {
        const std::optional<wire::Ipv4Address> v4 = local.address ? local.address->ipv4() : std::nullopt;
        // With underlay_vlan the address lives on VLAN underlay_vlan, where the kernel has no
        // device: it is not the interface's, and peers reach it through their pinned MACs.
        if (local.underlay_vlan != 0 && v4)
            address = *v4;
        else if (const auto found = address_of("[node] address", *underlay, v4, check))
            address = *found;
    }
    if (local.uplink) {
        facts.uplink = find_or_report("[node.uplink] interface", local.uplink->interface, check);
        if (facts.uplink)
            facts.uplink_address = address_of("[node.uplink] address", *facts.uplink, local.uplink->address, check);
    }
    check_tenant_ports(snapshot, check);
    check_worker_cpus(local, check);
    check_workers(local, check);
    if (check.errors.empty() && address) {
        facts.underlay_address = *address;
        check.facts = std::move(facts);
    }
    return check;
}

std::string privilege_problem() {
    std::vector<std::string> missing;
    for (const RequiredCapability& c : required_capabilities()) {
        // Locked memory matters only under a finite RLIMIT_MEMLOCK (systemd's LimitMEMLOCK=infinity lifts it).
        if (c.capability == CAP_IPC_LOCK && memlock_unlimited()) continue;
        if (!has_capability(c.capability)) missing.push_back(fmt::format("{} ({})", c.name, c.needed_for));
    }
    if (missing.empty()) return {};
    std::string lines;
    for (const auto& m : missing) lines += "\n  missing " + m;
    return "andromedad needs root's capabilities, and lacks:" + lines +
           "\nrun it as root with its full capability set, or grant these (systemd: CapabilityBoundingSet= and "
           "AmbientCapabilities=, as configs/andromedad@.service does)";
}

const std::vector<RequiredCapability>& required_capabilities() {
    static const std::vector<RequiredCapability> kRequired = {
        {CAP_SYS_ADMIN, "CAP_SYS_ADMIN",
         "loading BPF (it includes CAP_BPF), libxdp's reading of attached programs and their BTF by id, adopting "
         "a killed predecessor's programs, mounting bpffs when it is missing"},
        {CAP_NET_ADMIN, "CAP_NET_ADMIN", "attaching XDP and tc programs, creating the punt veth pairs, setting links up"},
        {CAP_NET_RAW, "CAP_NET_RAW", "opening AF_XDP and AF_PACKET sockets"},
        {CAP_IPC_LOCK, "CAP_IPC_LOCK",
         "the AF_XDP UMEMs are locked memory, beyond RLIMIT_MEMLOCK unless the limit is lifted (LimitMEMLOCK=infinity)"},
    };
    return kRequired;
}

}  // namespace andromeda::daemon
