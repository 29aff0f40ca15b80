// The kernel side of every tenant port: its punt pair (io/netlink/punt_pair.hpp), XDP on the
// pair's steering end (into the tenant's AF_XDP sockets, which bind there), tc on the pair's
// visible end (the pipeline's frames into the tenant) and on the port itself (port security,
// fast path, punt). The daemon decides which ports; this holds their plumbing.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "io/bpf/bpf_instance.hpp"
#include "io/netlink/interfaces.hpp"
#include "io/netlink/punt_pair.hpp"
#include "io/netlink/rps.hpp"
#include "io/plan/port_table.hpp"

namespace andromeda::io {

class TenantPlumbing {
public:
    // Borrows `bpf`, which must outlive this. `rps`: the flow steering each port's RX queues get
    // (io/netlink/rps.hpp); one over no CPUs leaves them as they are.
    explicit TenantPlumbing(BpfInstance& bpf, RpsSteering rps = RpsSteering({})) noexcept : bpf_(bpf), rps_(std::move(rps)) {}
    // Unplumbs every port still plumbed (each is left down): after the workers closed their sockets.
    ~TenantPlumbing();
    TenantPlumbing(const TenantPlumbing&) = delete;
    TenantPlumbing& operator=(const TenantPlumbing&) = delete;

    // Plumbs tenant port `name` (`ifindex`) and sets it up once its programs are attached, with
    // RPS on its RX queues where they had none: returns its punt devices and sets `note` to what
    // was attached. Throws, leaving nothing of the port behind and the port down.
    const PuntDevices& plumb(const std::string& name, std::uint32_t ifindex, std::string& note);
    // Sets the port down (it fails closed: docs/operations.md, "What a stopped port does"), then
    // undoes plumb() once no socket binds on the port's steering end, RPS masks it set emptied
    // again; a port not plumbed is only set down. Errors are logged, not thrown.
    void unplumb(const std::string& name, std::uint32_t ifindex) noexcept;

    // `table` with every plumbed port's punt devices added (io::add_punt_ports).
    [[nodiscard]] PortTable with_punt_devices(PortTable table) const;
    // Every plumbed tenant port's ifindex -> its punt pair's steering end (what is sent there goes
    // into the tenant: the gateway's DNS answers).
    [[nodiscard]] std::map<std::uint32_t, std::uint32_t> steering_ifindexes() const;

    // Sets a tenant port down (it fails closed), by ifindex; an error is logged, not thrown.
    static void set_down(const std::string& name, std::uint32_t ifindex) noexcept;

private:
    // Steers the port's flows (RPS) and says so in `note`; never fails the port.
    void steer_flows(const InterfaceInfo& link, std::string& note) const;
    // Empties the RPS masks steer_flows set on the port (as it is now, by ifindex).
    void release_flows(std::uint32_t ifindex) const noexcept;

    BpfInstance& bpf_;
    RpsSteering rps_;
    std::map<std::uint32_t, std::pair<std::string, std::unique_ptr<PuntPair>>> ports_;  // by tenant ifindex
};

}  // namespace andromeda::io
