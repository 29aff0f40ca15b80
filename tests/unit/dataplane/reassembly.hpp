// IPv4 reassembly for tests (RFC 815 style, simplified): checks that a set of fragments tiles the
// original datagram exactly, and rebuilds it so it can be compared byte for byte.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "unit/dataplane/test_frames.hpp"

namespace andromeda::testing {

// `frames` are Ethernet frames carrying fragments of one datagram, in any order. Returns the
// reassembled IP packet (first fragment's header, MF and offset cleared, lengths and checksum
// fixed), or nullopt with `error` set.
inline std::optional<Bytes> reassemble_ipv4(const std::vector<Bytes>& frames, std::string& error) {
    struct Piece {
        std::size_t offset;
        Bytes header;
        Bytes data;
        bool more;
    };
    std::vector<Piece> pieces;
    for (const Bytes& f : frames) {
        const auto eth = wire::EthernetView::parse(f);
        const auto ip = eth ? wire::Ipv4View::parse(eth->payload()) : wire::Parsed<wire::Ipv4View>(wire::ParseError::Truncated);
        if (!ip) {
            error = "a fragment does not parse";
            return std::nullopt;
        }
        pieces.push_back({std::size_t{ip->fragment_offset()} * 8, Bytes(ip->header_bytes().begin(), ip->header_bytes().end()),
                          Bytes(ip->payload().begin(), ip->payload().end()), ip->more_fragments()});
        const auto first = wire::Ipv4View::parse(eth->payload());
        if (first->identification() != wire::Ipv4View::parse(wire::EthernetView::parse(frames[0])->payload())->identification()) {
            error = "identification differs";
            return std::nullopt;
        }
    }
    std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.offset < b.offset; });
    std::size_t expected_offset = pieces.front().offset;
    Bytes data;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
        if (pieces[i].offset != expected_offset) {
            error = "gap or overlap at offset " + std::to_string(pieces[i].offset);
            return std::nullopt;
        }
        if (pieces[i].more != (i + 1 < pieces.size()) && i + 1 < pieces.size()) {
            error = "MF clear before the last fragment";
            return std::nullopt;
        }
        data.insert(data.end(), pieces[i].data.begin(), pieces[i].data.end());
        expected_offset += pieces[i].data.size();
    }
    Bytes packet = pieces.front().header;
    packet.insert(packet.end(), data.begin(), data.end());
    wire::store_be16(&packet[2], static_cast<std::uint16_t>(packet.size()));
    wire::store_be16(&packet[6], static_cast<std::uint16_t>(wire::load_be16(&packet[6]) & 0xc000));
    wire::MutableIpv4View::parse(packet)->update_checksum();
    return packet;
}

}  // namespace andromeda::testing
