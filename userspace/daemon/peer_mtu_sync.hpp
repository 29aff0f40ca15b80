// The fast path's andromeda_peer_mtu kept equal to the path MTUs the workers learned
// (dataplane::PeerPathMtu): written on every tick, only what differs, so the kernel's encap sizes
// packets towards a narrower peer path as the pipeline does within a second of the report.
#pragma once

#include <cstddef>
#include <vector>

#include "dataplane/underlay_pmtu.hpp"
#include "io/plan/map_sync.hpp"

namespace andromeda::daemon {

struct PeerMtuSyncCounts {
    std::vector<dataplane::PeerPathMtu::Entry> written;  // new or refreshed in the map
    std::size_t erased = 0;
};

// Makes the map hold exactly `learned` (peer address -> MTU and expiry): entries the table no
// longer has (expired, or a predecessor's) are erased. Throws io::IoError as the writer does.
PeerMtuSyncCounts sync_peer_mtu(io::MapWriter& writer, const std::vector<dataplane::PeerPathMtu::Entry>& learned);

}  // namespace andromeda::daemon
