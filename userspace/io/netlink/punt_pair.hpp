// A tenant port's punt pair: a veth pair of the daemon's own through which what the kernel fast
// path does not take reaches the AF_XDP pipeline. The tenant port's tc program redirects such
// frames out of the pair's visible end, whose TX checksum offload is off, so the kernel finishes
// their checksums and segments GSO packets on the way (the tenant keeps TSO and checksum offload
// on); the XDP program on the other end, the steering end, puts them on the tenant's AF_XDP
// socket. What the pipeline sends to the tenant leaves on the steering end, arrives on the
// visible end, and its tc program puts it into the tenant.
//
//   tenant ns            this node's namespace
//   eth0 ══ tap-blue-10 ─(tc: fast path | punt)─▶ anp<ifindex> ══ anx<ifindex> ─(XDP)─▶ AF_XDP
//                 ◀──────(tc: return)──────────── anp<ifindex> ◀═ anx<ifindex> ◀─ AF_XDP TX
//
// The pair is named after the tenant port's ifindex and is created in the calling thread's
// network namespace; a pair a crashed instance left behind is replaced.
#pragma once

#include <cstdint>
#include <string>

#include "io/plan/port_table.hpp"

namespace andromeda::io {

class RtnetlinkSocket;

class PuntPair {
public:
    // Creates the pair for the tenant port `tenant_ifindex` with the given MTU (the tenant port's),
    // IPv6 off on both ends (so the kernel sends nothing of its own through them), TX checksum
    // offload off on the visible end, both up. A pair of that name a killed instance left with
    // the same MTU is adopted as it is (adopted()); any other is replaced. Throws IoError.
    PuntPair(std::uint32_t tenant_ifindex, std::uint32_t mtu);
    // The same for a pair named `visible` and `steering` (the IPv6 underlay's segmenting pair:
    // segmenter_entry_name and segmenter_exit_name).
    PuntPair(std::string visible, std::string steering, std::uint32_t mtu);
    // Deletes the pair.
    ~PuntPair();
    PuntPair(const PuntPair&) = delete;
    PuntPair& operator=(const PuntPair&) = delete;

    [[nodiscard]] const PuntDevices& devices() const noexcept { return devices_; }
    [[nodiscard]] bool adopted() const noexcept { return adopted_; }

private:
    void configure(RtnetlinkSocket& rtnl);

    PuntDevices devices_;
    bool adopted_ = false;
};

// Deletes the interface `name` in this namespace; false when there was none.
bool delete_link(const std::string& name);

}  // namespace andromeda::io
