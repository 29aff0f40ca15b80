#include "nat/nat_packet.hpp"

#include "wire/icmp.hpp"
#include "wire/ipv4.hpp"
#include "wire/tcp.hpp"
#include "wire/udp.hpp"

namespace andromeda::nat {
namespace {

using wire::load_be16;
using wire::load_be32;
using wire::store_be16;
using wire::store_be32;

constexpr std::size_t kIpSource = 12;
constexpr std::size_t kIpDestination = 16;
constexpr std::size_t kIpChecksum = 10;
constexpr std::size_t kTcpChecksum = 16;
constexpr std::size_t kUdpChecksum = 6;
constexpr std::size_t kIcmpChecksum = 2;
constexpr std::size_t kEchoIdentifier = 4;
constexpr std::size_t kQuotedTransportNeeded = 8;  // RFC 792: header + 64 bits of the datagram

// The RFC 1624 eqn. 3 difference of several 16-bit replacements, applied to any checksum that
// covers them: HC' = ~(~HC + sum(~m + m')). Words must sit at even offsets of the covered data.
struct ChecksumDelta {
    std::uint32_t sum = 0;

    void replace16(std::uint16_t old_word, std::uint16_t new_word) noexcept {
        sum += static_cast<std::uint16_t>(~old_word);
        sum += new_word;
    }
    void replace32(std::uint32_t old_value, std::uint32_t new_value) noexcept {
        replace16(static_cast<std::uint16_t>(old_value >> 16), static_cast<std::uint16_t>(new_value >> 16));
        replace16(static_cast<std::uint16_t>(old_value), static_cast<std::uint16_t>(new_value));
    }
    ChecksumDelta operator+(const ChecksumDelta& o) const noexcept { return {sum + o.sum}; }

    [[nodiscard]] std::uint16_t apply(std::uint16_t checksum) const noexcept {
        std::uint32_t s = static_cast<std::uint16_t>(~checksum);
        s += sum & 0xffff;
        s += sum >> 16;
        s = (s & 0xffff) + (s >> 16);
        s = (s & 0xffff) + (s >> 16);
        return static_cast<std::uint16_t>(~s);
    }
    // UDP over IPv4: 0 means "no checksum" and stays so; a computed 0 is sent as 0xffff.
    [[nodiscard]] std::uint16_t apply_udp(std::uint16_t checksum) const noexcept {
        if (checksum == 0) return 0;
        const std::uint16_t c = apply(checksum);
        return c == 0 ? 0xffff : c;
    }
};

// Patches the checksum field at `at` with `delta`; returns the delta of that field's own change
// (for a checksum covering it, such as ICMP over a quoted header).
[[gnu::always_inline]] inline ChecksumDelta patch_checksum(std::uint8_t* at, const ChecksumDelta& delta, bool udp) noexcept {
    const std::uint16_t old_value = load_be16(at);
    const std::uint16_t new_value = udp ? delta.apply_udp(old_value) : delta.apply(old_value);
    store_be16(at, new_value);
    ChecksumDelta own;
    own.replace16(old_value, new_value);
    return own;
}

[[gnu::always_inline]] inline ChecksumDelta set_address(std::uint8_t* at, std::uint32_t address) noexcept {
    ChecksumDelta d;
    d.replace32(load_be32(at), address);
    store_be32(at, address);
    return d;
}

[[gnu::always_inline]] inline ChecksumDelta set_port(std::uint8_t* at, std::uint16_t port) noexcept {
    ChecksumDelta d;
    d.replace16(load_be16(at), port);
    store_be16(at, port);
    return d;
}

DropReason classify_icmp(const wire::MutableIpv4View& ip, NatPacket& out) noexcept {
    const auto icmp = wire::MutableIcmpv4View::parse(ip.payload());
    if (!icmp) return DropReason::malformed;
    switch (icmp->type()) {
        case wire::icmpv4_type::kEchoRequest:
        case wire::icmpv4_type::kEchoReply:
            out.kind = icmp->type() == wire::icmpv4_type::kEchoRequest ? PacketKind::icmp_echo_request
                                                                        : PacketKind::icmp_echo_reply;
            out.source_port = out.destination_port = icmp->identifier();
            return DropReason::none;
        case wire::icmpv4_type::kDestinationUnreachable:
        case wire::icmpv4_type::kTimeExceeded:
        case wire::icmpv4_type::kParameterProblem: break;
        default: return DropReason::unsupported_icmp;  // redirects, source quench, timestamps...
    }
    const auto inner = wire::MutableIpv4View::parse_quoted(icmp->body());
    if (!inner || inner->payload().size() < kQuotedTransportNeeded) return DropReason::malformed;
    if (inner->fragment_offset() != 0) return DropReason::unsupported_icmp;  // quotes no ports
    const std::uint8_t* l4 = inner->payload().data();
    out.kind = PacketKind::icmp_error;
    out.source_port = out.destination_port = 0;
    out.inner_is_echo = false;
    out.inner_offset = static_cast<std::size_t>(inner->packet().data() - out.ip);
    out.inner_l4_offset = static_cast<std::size_t>(l4 - out.ip);
    out.inner_l4_length = inner->payload().size();
    out.inner_source = inner->source().value();
    out.inner_destination = inner->destination().value();
    switch (inner->protocol()) {
        case wire::ip_protocol::kTcp:
        case wire::ip_protocol::kUdp:
            out.inner_protocol = static_cast<Protocol>(inner->protocol());
            out.inner_source_port = load_be16(l4);
            out.inner_destination_port = load_be16(l4 + 2);
            return DropReason::none;
        case wire::ip_protocol::kIcmp:
            if (l4[0] != wire::icmpv4_type::kEchoRequest && l4[0] != wire::icmpv4_type::kEchoReply)
                return DropReason::unsupported_icmp;  // never an error about an error (RFC 1122)
            out.inner_protocol = Protocol::icmp;
            out.inner_is_echo = true;
            out.inner_source_port = out.inner_destination_port = load_be16(l4 + kEchoIdentifier);
            return DropReason::none;
        default: return DropReason::unsupported_icmp;
    }
}

}  // namespace

DropReason classify(wire::MutableByteSpan ipv4, NatPacket& out) noexcept {
    const auto ip = wire::MutableIpv4View::parse(ipv4);
    if (!ip) return DropReason::malformed;
    if (ip->is_fragment()) return DropReason::fragment;
    // Field by field: zeroing the whole struct (rep stos) cost more than the rest of classify.
    // The inner_* fields are only read for ICMP errors, which set them all.
    out.ip = ipv4.data();
    out.length = ip->packet().size();
    out.l4_offset = ip->header_length();
    out.kind = PacketKind::transport;
    out.source = ip->source().value();
    out.destination = ip->destination().value();
    out.tcp_flags = 0;
    switch (ip->protocol()) {
        case wire::ip_protocol::kTcp: {
            const auto tcp = wire::MutableTcpView::parse(ip->payload());
            if (!tcp) return DropReason::malformed;
            out.protocol = Protocol::tcp;
            out.source_port = tcp->source_port();
            out.destination_port = tcp->destination_port();
            out.tcp_flags = tcp->flags();
            return DropReason::none;
        }
        case wire::ip_protocol::kUdp: {
            const auto udp = wire::MutableUdpView::parse(ip->payload());
            if (!udp) return DropReason::malformed;
            out.protocol = Protocol::udp;
            out.source_port = udp->source_port();
            out.destination_port = udp->destination_port();
            return DropReason::none;
        }
        case wire::ip_protocol::kIcmp: out.protocol = Protocol::icmp; return classify_icmp(*ip, out);
        default: return DropReason::unsupported_protocol;
    }
}

namespace {

// Rewrites one endpoint (address at `address_offset`, port/identifier in the transport) of a
// transport or echo packet.
[[gnu::always_inline]] inline void rewrite_endpoint(const NatPacket& p, std::size_t address_offset, std::size_t port_offset, std::uint32_t address,
                      std::uint16_t port) noexcept {
    std::uint8_t* l4 = p.ip + p.l4_offset;
    const ChecksumDelta address_delta = set_address(p.ip + address_offset, address);
    patch_checksum(p.ip + kIpChecksum, address_delta, false);
    switch (p.protocol) {
        case Protocol::tcp:
            patch_checksum(l4 + kTcpChecksum, address_delta + set_port(l4 + port_offset, port), false);
            break;
        case Protocol::udp:
            patch_checksum(l4 + kUdpChecksum, address_delta + set_port(l4 + port_offset, port), true);
            break;
        case Protocol::icmp:  // no pseudo-header: only the identifier is covered
            patch_checksum(l4 + kIcmpChecksum, set_port(l4 + kEchoIdentifier, port), false);
            break;
    }
}

// The quoted packet's transport after its address changed by `address_delta`: port (or echo
// identifier) at port_offset set to `port`, its own checksum patched when it was quoted.
// Returns the delta of every changed byte, for the enclosing ICMP checksum.
ChecksumDelta rewrite_quoted_transport(const NatPacket& p, std::size_t port_offset, const ChecksumDelta& address_delta,
                                       std::uint16_t port) noexcept {
    std::uint8_t* l4 = p.ip + p.inner_l4_offset;
    if (p.inner_protocol == Protocol::icmp) {
        const ChecksumDelta id_delta = set_port(l4 + kEchoIdentifier, port);
        return id_delta + patch_checksum(l4 + kIcmpChecksum, id_delta, false);
    }
    const ChecksumDelta port_delta = set_port(l4 + port_offset, port);
    ChecksumDelta changed = port_delta;
    if (p.inner_protocol == Protocol::udp) {
        changed = changed + patch_checksum(l4 + kUdpChecksum, address_delta + port_delta, true);
    } else if (p.inner_l4_length >= kTcpChecksum + 2) {  // TCP's checksum only when quoted
        changed = changed + patch_checksum(l4 + kTcpChecksum, address_delta + port_delta, false);
    }
    return changed;
}

void rewrite_icmp_error(const NatPacket& p, std::size_t outer_field, std::size_t inner_field,
                        std::size_t inner_port_offset, std::uint32_t address, std::uint16_t port) noexcept {
    patch_checksum(p.ip + kIpChecksum, set_address(p.ip + outer_field, address), false);
    std::uint8_t* inner = p.ip + p.inner_offset;
    const ChecksumDelta inner_address = set_address(inner + inner_field, address);
    ChecksumDelta icmp_delta = inner_address + patch_checksum(inner + kIpChecksum, inner_address, false);
    icmp_delta = icmp_delta + rewrite_quoted_transport(p, inner_port_offset, inner_address, port);
    patch_checksum(p.ip + p.l4_offset + kIcmpChecksum, icmp_delta, false);
}

}  // namespace

void rewrite_source(const NatPacket& p, std::uint32_t address, std::uint16_t port) noexcept {
    rewrite_endpoint(p, kIpSource, 0, address, port);
}

void rewrite_destination(const NatPacket& p, std::uint32_t address, std::uint16_t port) noexcept {
    rewrite_endpoint(p, kIpDestination, 2, address, port);
}

void rewrite_icmp_error_inbound(const NatPacket& p, std::uint32_t address, std::uint16_t port) noexcept {
    rewrite_icmp_error(p, kIpDestination, kIpSource, 0, address, port);
}

void rewrite_icmp_error_outbound(const NatPacket& p, std::uint32_t address, std::uint16_t port) noexcept {
    rewrite_icmp_error(p, kIpSource, kIpDestination, 2, address, port);
}

}  // namespace andromeda::nat
