// The NAT differential test's packets: a crafted battery for an open flow (every shape of its
// packets, both ways, each with the outcome the kernel must reach), and random flows and packets.
#pragma once

#include <cstdint>
#include <vector>

#include "nat_flows.hpp"
#include "random_frames.hpp"

namespace andromeda::fast_path_test {

// The flow's packets of every shape, both ways: translated (any size up to the path's MTU, no
// payload, TTL 0/1, TOS, DF clear, TCP options and flags but SYN/FIN/RST, UDP checksum 0, short
// UDP lengths) or punted (IP options, bad header checksums, padding, fragments, truncated or
// malformed transport headers, SYN, other ICMP, ICMP errors, too big for the overlay) or of no
// flow (another port or address). No FIN or RST: the flow stays installed.
std::vector<Case> flow_cases(Encap kind, const NatFlow& f);

// Transport checksums at their edges, in both directions: a translation whose checksum comes out
// as zero (UDP sends 0xffff, TCP 0), UDP without a checksum, and the checksum the translated
// packet must carry at `checksum_at` (its offset in the frame the pipeline emits), worked out
// here from the packet alone.
struct ChecksumCase {
    Case c;
    std::size_t checksum_at;
    std::uint16_t expected;
};
std::vector<ChecksumCase> checksum_cases(Encap kind, const NatFlow& f);

// The segments the kernel's GSO makes of a TCP or UDP packet whose IPv4 header (no options) is at
// `ip` in `frame`, `gso_size` bytes of payload each (tcp_gso_segment, __udp_gso_segment): each
// with its share of the payload, its IPv4 total length and an ID one past the last, its checksums
// computed afresh; TCP's sequence number advanced, CWR on the first segment only, FIN and PSH on
// the last; UDP's length. Outer headers in front (an overlay packet's) are kept, their lengths
// fitted.
std::vector<Bytes> gso_segments(const Bytes& frame, std::size_t ip, std::uint16_t gso_size);
// Whether the IPv4 header checksum and the transport checksum of the packet at `ip` hold over all
// of it (a GSO packet's too: its total length is its whole).
bool checksums_hold(const Bytes& frame, std::size_t ip);

// A random flow of orange or purple: any protocol, any of their endpoints (here, on node2 or on
// node3), sometimes through one of orange's port forwards.
NatFlow random_flow(Gen& g);
// A random packet of one of `flows`, going out or coming in: mostly plain, often of another size,
// TCP flags, ICMP type, an IPv4 oddity, a damaged header, or the tuple of no flow.
Case random_nat_packet(Gen& g, Encap kind, const std::vector<NatFlow>& flows);

}  // namespace andromeda::fast_path_test
