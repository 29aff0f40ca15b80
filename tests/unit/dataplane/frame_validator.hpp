// An independent checker for frames the pipeline emits: every header parses, every length field
// agrees with the bytes present (no trailing padding: the pipeline trims it), every IPv4 header
// checksum verifies, and transport checksums (UDP, TCP, ICMP, ICMPv6) verify. Overlay packets, over
// an IPv4 or an IPv6 underlay, are checked layer by layer down into their inner frame. Returns the
// problems found, none = valid.
#pragma once

#include <string>
#include <vector>

#include "overlay/andromeda_header.hpp"
#include "overlay/encap_kind.hpp"
#include "wire/arp.hpp"
#include "wire/checksum.hpp"
#include "wire/ethernet.hpp"
#include "wire/icmp.hpp"
#include "wire/ip_protocol.hpp"
#include "wire/ipv4.hpp"
#include "wire/ipv6.hpp"
#include "wire/udp.hpp"

namespace andromeda::testing {

struct ValidatorOptions {
    // What only the original sender answers for: transport checksums (UDP, TCP, ICMP), the
    // datagram an ICMP error quotes, a non-zero TTL (the pipeline never
    // rewrites it: the overlay is one hop), 8-byte alignment of a sender's own fragments. A forwarded
    // frame carries these untouched, so they are checked only when the input had them right;
    // headers and lengths, and everything in frames the pipeline builds, are always checked.
    bool sender_content = true;
    std::uint16_t andromeda_port = overlay::kAndromedaUdpPort;
    std::uint16_t vxlan_port = overlay::kVxlanUdpPort;
};

class FrameValidator {
public:
    explicit FrameValidator(ValidatorOptions options = {}) : options_(options) {}

    std::vector<std::string> problems(wire::ByteSpan frame) {
        problems_.clear();
        check_frame(frame, "");
        return problems_;
    }

private:
    void fail(const std::string& where, const std::string& what) { problems_.push_back(where + what); }

    void check_frame(wire::ByteSpan frame, const std::string& where) {
        const auto eth = wire::EthernetView::parse(frame);
        if (!eth) return fail(where, "ethernet does not parse");
        if (eth->source().is_multicast()) fail(where, "multicast source MAC");
        if (eth->destination().is_zero()) fail(where, "zero destination MAC");
        switch (eth->ethertype()) {
            case wire::ethertype::kArp: return check_arp(eth->payload(), where + "arp: ");
            case wire::ethertype::kIpv4: return check_ipv4(eth->payload(), where + "ipv4: ");
            case wire::ethertype::kIpv6: return check_ipv6(eth->payload(), where + "ipv6: ");
            default: return fail(where, "unexpected ethertype " + std::to_string(eth->ethertype()));
        }
    }

    void check_arp(wire::ByteSpan payload, const std::string& where) {
        if (payload.size() != wire::kArpLength) fail(where, "length " + std::to_string(payload.size()) + " != 28");
        if (!wire::ArpView::parse(payload)) fail(where, "does not parse");
    }

    void check_ipv4(wire::ByteSpan payload, const std::string& where) {
        const auto ip = wire::Ipv4View::parse(payload);
        if (!ip) return fail(where, std::string("does not parse: ") + std::string(wire::to_string(ip.error())));
        if (ip->total_length() != payload.size())
            fail(where, "total length " + std::to_string(ip->total_length()) + " != " + std::to_string(payload.size()));
        if (!ip->checksum_valid()) fail(where, "header checksum");
        if (options_.sender_content && ip->ttl() == 0) fail(where, "TTL 0");
        if (ip->is_fragment()) {
            if (options_.sender_content && ip->more_fragments() && ip->payload().size() % 8 != 0)
                fail(where, "non-last fragment not 8-aligned");
            if (ip->fragment_offset() != 0) return;  // no transport header to check
            if (ip->more_fragments()) return;        // transport checksum covers the whole datagram
        }
        const auto l4 = ip->payload();
        switch (ip->protocol()) {
            case wire::ip_protocol::kUdp: return check_udp4(*ip, where + "udp: ");
            case wire::ip_protocol::kTcp:
                if (options_.sender_content && !wire::checksum_verifies(l4, ip->pseudo_header_sum()))
                    fail(where, "tcp checksum");
                return;
            case wire::ip_protocol::kIcmp: {
                const auto icmp = wire::Icmpv4View::parse(l4);
                if (!icmp) return fail(where, "icmp truncated");
                if (options_.sender_content && !icmp->checksum_valid()) fail(where, "icmp checksum");
                if (options_.sender_content && icmp->is_error()) check_quote(icmp->original_datagram(), where + "icmp quote: ");
                return;
            }
            default: return;
        }
    }

    void check_quote(wire::ByteSpan quote, const std::string& where) {
        const auto quoted = wire::Ipv4View::parse_quoted(quote);
        if (!quoted) return fail(where, "does not parse");
        if (quote.size() < quoted->header_length() + 8 && quote.size() < quoted->total_length())
            fail(where, "quotes less than the header + 8 bytes");
    }

    void check_udp4(const wire::Ipv4View& ip, const std::string& where) {
        const auto l4 = ip.payload();
        // An outer header is the pipeline's own work; a tenant's UDP is the tenant's.
        const bool is_overlay = is_overlay_port(l4);
        if (!is_overlay && !options_.sender_content) return;
        const auto udp = wire::UdpView::parse(l4);
        if (!udp) return fail(where, "does not parse");
        if (udp->length() != l4.size()) fail(where, "length disagrees with IP");
        // The outer checksum is the pipeline's own, so it is always checked (0 = none is legal).
        if ((options_.sender_content || is_overlay) && !udp->checksum_valid(ip.source(), ip.destination()))
            fail(where, "checksum");
        if (is_overlay) check_overlay(ip, *udp, where + "overlay: ");
    }

    void check_overlay(const wire::Ipv4View& ip, const wire::UdpView& udp, const std::string& where) {
        if (!ip.dont_fragment()) fail(where, "outer DF clear");
        if (ip.is_fragment()) fail(where, "outer packet fragmented");
        check_overlay_payload(udp, where);
    }

    // What an overlay packet carries after its outer IP header, over either family.
    void check_overlay_payload(const wire::UdpView& udp, const std::string& where) {
        if (depth_ > 0) return fail(where, "overlay inside overlay");
        if (udp.source_port() < 0xC000) fail(where, "UDP source port outside 49152-65535");
        const auto payload = udp.payload();
        if (payload.size() < overlay::kOverlayHeaderSize + wire::kEthernetHeaderLength)
            return fail(where, "too short for overlay header + inner Ethernet");
        if (udp.destination_port() == options_.andromeda_port) {
            const auto header = overlay::AndromedaHeader::decode(payload);
            if (!header) return fail(where, "bad Andromeda version");
            if (header->hop_limit == 0) fail(where, "hop limit 0");
        } else if ((payload[0] & 0x08) == 0) {
            fail(where, "VXLAN I flag clear");
        }
        ++depth_;
        check_frame(payload.subspan(overlay::kOverlayHeaderSize), where + "inner ");
        --depth_;
    }

    void check_ipv6(wire::ByteSpan payload, const std::string& where) {
        const auto ip = wire::Ipv6View::parse(payload);
        if (!ip) return fail(where, std::string("does not parse: ") + std::string(wire::to_string(ip.error())));
        if (ip->packet().size() != payload.size()) fail(where, "payload length disagrees with the frame");
        if (ip->is_fragment()) return;
        const auto l4 = ip->upper_layer_payload();
        if (ip->upper_layer_protocol() == wire::ip_protocol::kIcmpv6) {
            const auto icmp = wire::Icmpv6View::parse(l4);
            if (!icmp) return fail(where, "icmpv6 truncated");
            // The sender's, like ICMPv4's: a flooded or routed frame carries it untouched.
            if (options_.sender_content && !icmp->checksum_valid(ip->source(), ip->final_destination()))
                fail(where, "icmpv6 checksum");
        } else if (ip->upper_layer_protocol() == wire::ip_protocol::kUdp) {
            if (is_overlay_port(l4)) return check_udp6_overlay(*ip, where + "udp: ");
            if (!options_.sender_content) return;
            const auto udp = wire::UdpView::parse(l4);
            if (!udp || !udp->checksum_valid(ip->source(), ip->final_destination())) fail(where, "udp checksum");
        }
    }

    // UDP to an overlay port in an outermost frame: an outer header, the pipeline's own work.
    bool is_overlay_port(wire::ByteSpan l4) const {
        const std::uint16_t port = l4.size() >= 4 ? wire::load_be16(&l4[2]) : 0;
        return depth_ == 0 && (port == options_.andromeda_port || port == options_.vxlan_port);
    }

    // An overlay packet over an IPv6 underlay (docs/wire-format.md, "IPv6 underlay"): UDP right
    // after the fixed header, its length the payload length, its checksum mandatory (never 0)
    // and verifying over the IPv6 pseudo-header, whatever the sender's content.
    void check_udp6_overlay(const wire::Ipv6View& ip, const std::string& where) {
        if (ip.extension_header_count() != 0) fail(where, "extension header before the outer UDP");
        const auto l4 = ip.upper_layer_payload();
        const auto udp = wire::UdpView::parse(l4);
        if (!udp) return fail(where, "does not parse");
        if (udp->length() != l4.size()) fail(where, "length disagrees with IP");
        if (udp->checksum() == 0) fail(where, "checksum 0 over IPv6");
        else if (!udp->checksum_valid(ip.source(), ip.destination())) fail(where, "checksum");
        check_overlay_payload(*udp, where + "overlay: ");
    }

    ValidatorOptions options_;
    std::vector<std::string> problems_;
    int depth_ = 0;
};

inline std::vector<std::string> frame_problems(wire::ByteSpan frame, ValidatorOptions options = {}) {
    return FrameValidator(options).problems(frame);
}

}  // namespace andromeda::testing
