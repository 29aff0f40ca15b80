// The port map's desired contents: which interfaces Andromeda owns, in which role, and which
// range of XSKMAP keys (slot * ANDROMEDA_MAX_QUEUES + queue) their sockets occupy. Slots stay
// with a port across reloads, so a reload never moves a live socket.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "andromeda_kern_user.h"
#include "fabric/snapshot.hpp"
#include "wire/addresses.hpp"

namespace andromeda::io {

using PortTable = std::map<std::uint32_t, andromeda_port>;  // ifindex -> port

// A tenant port's punt pair as the port table names it (io/netlink/punt_pair.hpp makes the pair).
struct PuntDevices {
    std::string visible;   // where the tenant's tc program redirects punted frames
    std::uint32_t visible_ifindex = 0;
    std::string steering;  // carries the XDP program; the tenant's AF_XDP sockets bind here
    std::uint32_t steering_ifindex = 0;
};
// "anp<tenant ifindex>" and "anx<tenant ifindex>".
[[nodiscard]] std::string punt_visible_name(std::uint32_t tenant_ifindex);
[[nodiscard]] std::string punt_steering_name(std::uint32_t tenant_ifindex);
// The IPv6 underlay's segmenting pair (bpf/tc_reseg.bpf.c): "ans<underlay ifindex>", where the
// fast path sends what the kernel is to cut, and "anr<underlay ifindex>", whose tc program sends
// the segments on.
[[nodiscard]] std::string segmenter_entry_name(std::uint32_t underlay_ifindex);
[[nodiscard]] std::string segmenter_exit_name(std::uint32_t underlay_ifindex);

// A stable slot per port name, lowest free first. Tenant ports come and go with reloads;
// the underlay and uplink stay for the daemon's lifetime.
class PortSlots {
public:
    // The port's slot, allocating one on first use. Throws IoError when all
    // ANDROMEDA_MAX_PORTS slots are taken.
    std::uint32_t slot_for(std::string_view port_name) { return allocate(port_name, false); }
    std::uint32_t tenant_slot_for(std::string_view port_name) { return allocate(port_name, true); }
    [[nodiscard]] std::optional<std::uint32_t> find(std::string_view port_name) const;
    // Frees the slot of every tenant port not named in `in_use` (a set or map keyed by name).
    template <class Names>
    void retain_tenants(const Names& in_use) {
        for (auto it = slots_.begin(); it != slots_.end();)
            it = !it->second.tenant || in_use.count(it->first) != 0 ? std::next(it) : slots_.erase(it);
    }
    [[nodiscard]] std::size_t size() const noexcept { return slots_.size(); }

private:
    struct Entry {
        std::uint32_t slot;
        bool tenant;
    };
    std::uint32_t allocate(std::string_view port_name, bool tenant);

    std::map<std::string, Entry, std::less<>> slots_;
};

[[nodiscard]] andromeda_port make_port(andromeda_port_role role, std::uint32_t slot, std::uint32_t vni = 0,
                                       wire::Ipv4Address ip = {}, wire::MacAddress mac = {});
// A tenant port's entry for endpoint `e`: its VNI, MAC and addresses (IPv6 when it has one).
[[nodiscard]] andromeda_port make_tenant_port(std::uint32_t slot, const fabric::Endpoint& e);

// Tenant ports of the snapshot's local endpoints whose port resolved to an interface
// (port_ifindex != 0); slots come from `slots`, which first forgets tenant ports no longer present.
// A port's ANDROMEDA_PORT_F_FASTPATH is set when both [node] and its VPC have fastpath on.
// `unresolved` (optional) receives the local ports without an interface (name -> VNI).
[[nodiscard]] PortTable tenant_ports(const fabric::FabricSnapshot& snapshot, PortSlots& slots,
                                     std::map<std::string, std::uint32_t>* unresolved = nullptr);

// Adds each tenant port's punt devices (io/netlink/punt_pair.hpp) to `table`: the visible end as a PUNT port
// whose link is the tenant port, the steering end as a copy of the tenant port's entry (its XDP
// program steers into the tenant's sockets), and sets the tenant entry's link to the visible end.
// A tenant port without punt devices is taken out of the table: it cannot be served.
void add_punt_ports(PortTable& table, const std::map<std::uint32_t, PuntDevices>& punts);

// The port map a killed predecessor left (adopted) put right for `tenants` (tenant_ports() of the
// new configuration; their slots are not used), before anything else of the start: the kernel
// programs go on steering with it while next hops are resolved and the workers start. A tenant
// port the configuration no longer has (its endpoint removed or moved away) loses its entry,
// its punt device's and its steering copy's (the copy with its slot), so the fast path forwards
// nothing of it from then on (tc: no_port); a port it still has keeps its slot and punt device
// and takes the configuration's VNI, address, MAC and fast-path flag. Every other entry (the
// underlay, the uplink, their punt pairs) is kept as it is.
[[nodiscard]] PortTable reconcile_adopted_ports(const PortTable& adopted, const PortTable& tenants);

// XSKMAP key of (port slot, RX queue), as the XDP program computes it.
[[nodiscard]] constexpr std::uint32_t xsk_key(std::uint32_t slot, std::uint32_t queue) noexcept {
    return slot * ANDROMEDA_MAX_QUEUES + queue;
}

}  // namespace andromeda::io
