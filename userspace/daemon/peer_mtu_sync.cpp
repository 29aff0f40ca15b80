#include "daemon/peer_mtu_sync.hpp"

#include <arpa/inet.h>

#include <cstring>
#include <map>
#include <span>
#include <string>

#include "andromeda_kern_user.h"
#include "io/plan/map_plan.hpp"

namespace andromeda::daemon {

namespace {

template <class T>
std::span<const std::byte> bytes_of(const T& value) {
    return std::as_bytes(std::span<const T, 1>(&value, 1));
}

}  // namespace

PeerMtuSyncCounts sync_peer_mtu(io::MapWriter& writer, const std::vector<dataplane::PeerPathMtu::Entry>& learned) {
    std::map<std::string, std::pair<andromeda_peer_mtu, const dataplane::PeerPathMtu::Entry*>> wanted;
    for (const auto& e : learned) {
        // Keyed by the peer's peer key (its IPv4 address, or over an IPv6 underlay the key of its
        // IPv6 one), as the fast path names nodes.
        const __be32 key = htonl(io::peer_key(e.peer));
        andromeda_peer_mtu value{};
        value.mtu = e.mtu;
        value.expires_ns = e.expires_ns;
        wanted[std::string(reinterpret_cast<const char*>(&key), sizeof key)] = {value, &e};
    }
    PeerMtuSyncCounts counts;
    for (const auto& [key, value] : writer.entries(io::MapId::peer_mtu)) {
        const auto it = wanted.find(key);
        if (it == wanted.end()) {
            writer.erase(io::MapId::peer_mtu, std::as_bytes(std::span(key.data(), key.size())));
            ++counts.erased;
        } else if (value.size() == sizeof(andromeda_peer_mtu) &&
                   std::memcmp(value.data(), &it->second.first, sizeof(andromeda_peer_mtu)) == 0) {
            wanted.erase(it);  // the map holds it already
        }
    }
    for (const auto& [key, value] : wanted) {
        writer.upsert(io::MapId::peer_mtu, std::as_bytes(std::span(key.data(), key.size())), bytes_of(value.first));
        counts.written.push_back(*value.second);
    }
    return counts;
}

}  // namespace andromeda::daemon
