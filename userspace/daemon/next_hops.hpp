// The underlay MAC of each peer node's next hop, which every outer Ethernet header needs: a
// [[nodes]] mac pins it; otherwise it comes from the kernel's neighbour table, the kernel being
// asked to resolve it when it is missing. A peer that cannot be resolved yet (it is down, its
// host not yet up) does not stop the daemon: its traffic is dropped as no_next_hop and the
// periodic refresh retries it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dataplane/pipeline_config.hpp"
#include "fabric/snapshot.hpp"
#include "wire/addresses.hpp"

namespace andromeda::daemon {

enum class NextHopSource : std::uint8_t { pinned, neighbour, unresolved };
[[nodiscard]] const char* to_string(NextHopSource source) noexcept;

struct PeerNextHop {
    std::string node;
    wire::IpAddress address;  // its underlay address, of the underlay's family
    std::optional<wire::MacAddress> mac;  // the MAC in use (kept when a refresh fails)
    NextHopSource source = NextHopSource::unresolved;
    std::string problem;  // the last resolution failure, empty when fine
};

class NextHopTable {
public:
    // Makes the table hold the snapshot's peers: keeps what is known of unchanged ones, resolves
    // new ones (waiting up to `timeout` each). Returns the MACs the pipelines must learn.
    std::vector<dataplane::NextHop> update(const fabric::FabricSnapshot& snapshot, std::chrono::milliseconds timeout);
    // Re-reads the neighbour entries of resolved peers (a MAC may change) and retries the
    // unresolved ones, for at most about `budget` (the rest next time, in turn). Returns the changes.
    std::vector<dataplane::NextHop> refresh(std::chrono::milliseconds timeout, std::chrono::milliseconds budget);

    [[nodiscard]] const std::vector<PeerNextHop>& peers() const noexcept { return peers_; }
    [[nodiscard]] const PeerNextHop* find(const wire::IpAddress& address) const noexcept;
    [[nodiscard]] std::size_t unresolved() const noexcept;
    [[nodiscard]] std::uint64_t resolutions() const noexcept { return resolutions_; }
    [[nodiscard]] std::uint64_t failures() const noexcept { return failures_; }

private:
    // Returns whether the MAC in use changed.
    bool resolve(PeerNextHop& peer, std::chrono::milliseconds timeout);

    std::vector<PeerNextHop> peers_;
    std::uint64_t resolutions_ = 0;
    std::uint64_t failures_ = 0;
    std::size_t next_refresh_ = 0;  // where the last refresh stopped
};

}  // namespace andromeda::daemon
