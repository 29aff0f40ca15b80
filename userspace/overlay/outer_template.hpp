// Outer-header templates: the 42 bytes of outer Ethernet/IPv4/UDP towards one destination (46
// with an 802.1Q tag, when the config names a VLAN) are built once, and each packet only patches
// what changes (IPv4 total length, ID and checksum, UDP source port and length, the 8-byte
// overlay header). The IPv4 checksum comes from a partial sum
// of the constant header words precomputed here, so per-packet cost is two adds and a fold.
//
// Over an IPv6 underlay (config.ipv6) the outer IP header is IPv6's fixed 40 bytes, written out of
// line per packet (flow label from the flow hash, payload length), with the UDP checksum always
// computed (docs/wire-format.md, "IPv6 underlay"). The inline express-lane writers below are
// IPv4-only: the pipeline keeps its express lanes off over an IPv6 underlay, as with a VLAN tag.
//
// Nothing on the per-packet path allocates. A template is not thread-safe (the IP ID counter is
// per template): each worker keeps its own.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstring>
#include <cstdint>
#include <span>

#include "overlay/andromeda_header.hpp"
#include "overlay/encap_kind.hpp"
#include "overlay/flow_hash.hpp"
#include "overlay/vxlan_header.hpp"
#include "util/bit_cast.hpp"
#include "wire/addresses.hpp"
#include "wire/bytes.hpp"

namespace andromeda::overlay {

// The largest inner frame whose outer IPv4 total length still fits in 16 bits. An IPv6 template
// keeps the same bound (its payload length, the UDP length, would allow 20 bytes more).
inline constexpr std::size_t kMaxInnerFrameSize = 0xffff - kOuterIpv4Size - kOuterUdpSize - kOverlayHeaderSize;

// What is constant towards one destination.
struct OuterTemplateConfig {
    EncapKind kind = EncapKind::andromeda;
    wire::MacAddress src_mac;
    wire::MacAddress dst_mac;  // the next hop's MAC on the underlay
    wire::Ipv4Address src_ip;
    wire::Ipv4Address dst_ip;
    std::uint16_t udp_port = 0;  // outer UDP destination port; 0 = default_udp_port(kind)
    std::uint8_t ttl = 64;
    std::uint8_t tos = 0;
    bool dont_fragment = true;  // the outer packet is never fragmented (section 3)
    // Outer UDP checksum 0 is legal for IPv4 tunnels and saves summing the whole inner frame;
    // computing it is for underlays that insist.
    bool udp_checksum = false;
    // 802.1Q VID (1-4094) of the underlay: an 0x8100 tag (PCP 0, DEI 0) between the MACs and the
    // IP ethertype, outer headers of kTaggedOuterHeadersSize bytes. 0: untagged, 50 bytes.
    std::uint16_t vlan_id = 0;
    // An IPv6 underlay: the outer header is IPv6 (kOuterHeadersSize6, 70 bytes; 74 tagged) from
    // src_ip6 to dst_ip6, and src_ip/dst_ip are unused. `ttl` is the hop limit and `tos` the
    // traffic class; dont_fragment does not apply (IPv6 routers never fragment) and udp_checksum
    // is ignored: the UDP checksum is always computed (RFC 8200 section 8.1; Linux drops
    // zero-checksum UDP over IPv6 unless told otherwise).
    bool ipv6 = false;
    wire::Ipv6Address src_ip6;
    wire::Ipv6Address dst_ip6;
};

// What each packet carries in its overlay header. VXLAN has no field for the flow hash (it only
// lands in the UDP source port), the hop limit or the flags.
struct OverlayFields {
    std::uint32_t vni = 0;
    std::uint16_t flow_hash = 0;
    std::uint8_t hop_limit = kDefaultHopLimit;
    std::uint8_t flags = 0;  // Andromeda low-nibble flags (control, OAM)
};

// One frame of a burst encapsulated in place: `data` points at the inner Ethernet frame inside
// a buffer (an AF_XDP UMEM chunk) with `headroom` writable bytes in front of it. On success the
// fields are moved to describe the outer packet.
struct InPlaceFrame {
    std::uint8_t* data = nullptr;
    std::uint32_t length = 0;
    std::uint32_t headroom = 0;
};

class OuterTemplate {
public:
    explicit OuterTemplate(const OuterTemplateConfig& config) noexcept;

    [[nodiscard]] const OuterTemplateConfig& config() const noexcept { return config_; }
    [[nodiscard]] EncapKind kind() const noexcept { return config_.kind; }
    [[nodiscard]] std::uint16_t udp_port() const noexcept { return udp_port_; }
    [[nodiscard]] bool tagged() const noexcept { return config_.vlan_id != 0; }
    [[nodiscard]] bool ipv6() const noexcept { return config_.ipv6; }
    // What goes in front of the inner frame: outer_headers_size(ipv6(), tagged()), i.e. 50 (54
    // tagged) over IPv4, 70 (74) over IPv6.
    [[nodiscard]] std::size_t header_size() const noexcept { return header_size_; }

    // The IPv4 ID the next packet gets; it increments per packet and wraps. Starts at 1, as the
    // reference does. An IPv6 template sends no ID and leaves it alone.
    [[nodiscard]] std::uint16_t next_ip_id() const noexcept { return next_ip_id_; }
    void set_next_ip_id(std::uint16_t id) noexcept { next_ip_id_ = id; }

    // Copy: writes outer headers plus `inner` to the front of `out` and returns the number of
    // bytes written (inner.size() + header_size()); 0, writing nothing, when `out` is too small or
    // `inner` exceeds kMaxInnerFrameSize. `inner` and `out` must not overlap.
    std::size_t encapsulate(wire::ByteSpan inner, wire::MutableByteSpan out, const OverlayFields& fields) noexcept {
        if (general_) [[unlikely]]
            return encapsulate_general(inner, out, fields);
        return encapsulate_untagged(inner, out, fields);
    }

    // encapsulate() for an untagged IPv4 template (!tagged() && !ipv6()): the express lanes' copy,
    // without the tests (the pipeline keeps its express lanes off when the underlay is tagged or
    // IPv6). Precondition, not checked: called on any other template it writes an untagged IPv4
    // outer packet all the same.
    [[gnu::always_inline]] std::size_t encapsulate_untagged(wire::ByteSpan inner, wire::MutableByteSpan out,
                                                            const OverlayFields& fields) noexcept {
        if (inner.size() > kMaxInnerFrameSize || out.size() < inner.size() + kOuterHeadersSize) return 0;
        // The inner frame is copied first so that the UDP checksum, if enabled, can read it in place.
        wire::copy_frame(out.data() + kOuterHeadersSize, inner.data(), inner.size());
        write_outer(out.data(), inner.size(), overlay_header_word(fields), fields.flow_hash);
        return inner.size() + kOuterHeadersSize;
    }

    // In place: the inner frame is buffer[inner_offset, inner_offset + inner_length); the
    // header_size() outer bytes go in front of it. Returns the outer packet, or an empty span
    // (buffer untouched) when the headroom is under header_size(), the frame does not fit in
    // `buffer` or is larger than kMaxInnerFrameSize.
    wire::MutableByteSpan encapsulate_in_place(wire::MutableByteSpan buffer, std::size_t inner_offset,
                                               std::size_t inner_length, const OverlayFields& fields) noexcept;

    // Encapsulates a burst of fresh tenant frames in place, all with `vni`, the default hop limit
    // and no flags, each with flow_hash_of_frame() of its own inner frame. Returns how many were
    // encapsulated; a frame that cannot be (headroom < header_size(), too large) is left
    // untouched except that its length is set to 0, so the caller drops it.
    std::size_t encapsulate_burst_in_place(std::span<InPlaceFrame> frames, std::uint32_t vni) noexcept;

    // The express lanes' in-place encapsulation, with what encapsulate_in_place checks already
    // known to hold: an untagged IPv4 template (!tagged() && !ipv6(); the pipeline keeps its
    // express lanes off when the underlay is tagged or IPv6), 50 bytes of headroom before `inner`,
    // inner_length <= kMaxInnerFrameSize. Returns the start of the outer packet (inner - 50).
    [[gnu::always_inline]] std::uint8_t* prepend_outer(std::uint8_t* inner, std::size_t inner_length,
                                                       const OverlayFields& fields) noexcept {
        std::uint8_t* outer = inner - kOuterHeadersSize;
        write_outer(outer, inner_length, overlay_header_word(fields), fields.flow_hash);
        return outer;
    }

    // The express lanes' form of the overlay fields for a fresh tenant packet (default hop limit,
    // no flags): most of the header word is precomputed, per template (kind) and per port (VNI).
    // vni_bits(vni) is the VNI as it lies in the header word; fresh_header_word() adds the
    // template's constant part and the flow hash (Andromeda; VXLAN's header has no field for it).
    // vni_word(vni) is the VNI's three bytes as both headers carry them (bytes 4-6), read as one
    // native 32-bit word with the byte after them zero: what the delivering express lane reads.
    [[nodiscard]] static constexpr std::uint32_t vni_word(std::uint32_t vni) noexcept {
        return util::bit_cast<std::uint32_t>(std::array<std::uint8_t, 4>{
            static_cast<std::uint8_t>(vni >> 16), static_cast<std::uint8_t>(vni >> 8), static_cast<std::uint8_t>(vni), 0});
    }
    [[nodiscard]] static constexpr std::uint64_t vni_bits(std::uint32_t vni) noexcept {
        static_assert(std::endian::native == std::endian::little);  // the header word's bytes 4-7
        return std::uint64_t{vni_word(vni)} << 32;
    }
    [[gnu::always_inline]] [[nodiscard]] std::uint64_t fresh_header_word(std::uint64_t vni_bits,
                                                                       std::uint16_t flow_hash) const noexcept {
        return fresh_header_base_ | vni_bits | (std::uint64_t{__builtin_bswap16(flow_hash)} << 16 & fresh_hash_mask_);
    }
    // prepend_outer and encapsulate_untagged with a header word from fresh_header_word(); the same
    // precondition (an untagged IPv4 template).
    [[gnu::always_inline]] std::uint8_t* prepend_outer(std::uint8_t* inner, std::size_t inner_length,
                                                       std::uint64_t header_word, std::uint16_t flow_hash) noexcept {
        std::uint8_t* outer = inner - kOuterHeadersSize;
        write_outer(outer, inner_length, header_word, flow_hash);
        return outer;
    }
    [[gnu::always_inline]] std::size_t encapsulate_untagged(wire::ByteSpan inner, wire::MutableByteSpan out,
                                                            std::uint64_t header_word, std::uint16_t flow_hash) noexcept {
        if (inner.size() > kMaxInnerFrameSize || out.size() < inner.size() + kOuterHeadersSize) return 0;
        wire::copy_frame(out.data() + kOuterHeadersSize, inner.data(), inner.size());
        write_outer(out.data(), inner.size(), header_word, flow_hash);
        return inner.size() + kOuterHeadersSize;
    }

private:
    // encapsulate() and its in-place forms for a tagged or an IPv6 template, out of line: the
    // untagged IPv4 50-byte case stays the inlined hot path.
    std::size_t encapsulate_general(wire::ByteSpan inner, wire::MutableByteSpan out,
                                    const OverlayFields& fields) noexcept;
    // Writes the header_size() outer bytes of a tagged or IPv6 template at `out`, the inner frame
    // following them.
    void write_general_outer(std::uint8_t* out, std::size_t inner_length, const OverlayFields& fields) noexcept;
    // Writes the kTaggedOuterHeadersSize outer bytes at `out`: the untagged headers 4 bytes on,
    // then the MACs and the tag over the front (the IPv4/UDP/overlay part is the same).
    void write_tagged_outer(std::uint8_t* out, std::size_t inner_length, const OverlayFields& fields) noexcept;
    // Writes the 70 (74 tagged) outer bytes of an IPv6 template at `out`, UDP checksum included.
    void write_ipv6_outer(std::uint8_t* out, std::size_t inner_length, const OverlayFields& fields) noexcept;

    // Writes the 50 outer bytes at `out` for an inner frame of `inner_length` bytes that follows
    // them contiguously (the UDP checksum, when enabled, reads it), with `header_word` as the
    // overlay header (overlay_header_word() or fresh_header_word()). Inline, so the pipeline's express
    // lanes get it without two calls. The per-packet fields are computed in network byte order:
    // the IPv4 checksum sums the words as they lie in memory (a one's-complement sum commutes
    // with swapping bytes, RFC 1071), so only the values that count need a swap.
    [[gnu::always_inline]] void write_outer(std::uint8_t* out, std::size_t inner_length, std::uint64_t header_word,
                                            std::uint16_t flow_hash) noexcept {
        copy_template(out);
        const auto udp_length = static_cast<std::uint16_t>(inner_length + kOuterUdpSize + kOverlayHeaderSize);
        const std::uint16_t total_length = __builtin_bswap16(static_cast<std::uint16_t>(udp_length + kOuterIpv4Size));
        const std::uint16_t id = __builtin_bswap16(next_ip_id_++);
        std::uint8_t* ip = out + kOuterEthernetSize;
        std::memcpy(ip + 2, &total_length, sizeof total_length);
        std::memcpy(ip + 4, &id, sizeof id);
        const std::uint32_t sum = ip_constant_sum_ + total_length + id;
        // Fold and complement in one step: the high half of ~sum - rotr(sum, 16) is the
        // one's-complement of the end-around-carry sum of the two halves.
        const auto checksum = static_cast<std::uint16_t>((~sum - std::rotr(sum, 16)) >> 16);
        std::memcpy(ip + 10, &checksum, sizeof checksum);
        std::uint8_t* udp = ip + kOuterIpv4Size;
        // flow_source_port() in memory order: the port's high byte is the first.
        const std::uint16_t source_port = static_cast<std::uint16_t>(__builtin_bswap16(flow_hash) | 0x00c0);
        std::memcpy(udp, &source_port, sizeof source_port);
        const std::uint16_t udp_length_be = __builtin_bswap16(udp_length);
        std::memcpy(udp + 4, &udp_length_be, sizeof udp_length_be);
        std::memcpy(udp + kOuterUdpSize, &header_word, sizeof header_word);
        if (config_.udp_checksum) write_udp_checksum(udp, udp_length);
    }

    // The template as three 16-byte copies: its 42 bytes and 6 of padding, which land where the
    // overlay header goes and are overwritten by it. (A plain 42-byte memcpy became `rep movsb`,
    // whose start-up cost was a fifth of an express-lane encapsulation.)
    [[gnu::always_inline]] void copy_template(std::uint8_t* out) const noexcept {
        static_assert(sizeof bytes_ == 48 && kOuterHeadersSize >= 48);
        const std::uint8_t* in = bytes_.data();
        const auto copy16 = [in, out](std::size_t i) noexcept {
            std::uint8_t block[16];
            std::memcpy(block, in + i, sizeof block);
            std::memcpy(out + i, block, sizeof block);
        };
        copy16(0);
        copy16(16);
        copy16(32);
    }

    // The 8 overlay header bytes as they lie in memory, read as a little-endian word: the Andromeda
    // header (version and flags, inner protocol, flow hash, VNI, hop limit) or VXLAN's (I flag,
    // VNI), as AndromedaHeader::encode and VxlanHeader::encode write them.
    [[gnu::always_inline]] [[nodiscard]] std::uint64_t overlay_header_word(const OverlayFields& fields) const noexcept {
        static_assert(std::endian::native == std::endian::little);
        const std::uint64_t vni = __builtin_bswap32(fields.vni & 0xffffff) >> 8;  // its 3 bytes, in order
        if (config_.kind != EncapKind::andromeda) return kVxlanFlagVniValid | vni << 32;
        return std::uint64_t{static_cast<std::uint8_t>(kAndromedaVersion << 4 | (fields.flags & 0x0f))} |
               std::uint64_t{kInnerProtocolEthernet} << 8 | std::uint64_t{__builtin_bswap16(fields.flow_hash)} << 16 |
               vni << 32 | std::uint64_t{fields.hop_limit} << 56;
    }

    // The outer UDP checksum over the datagram as it stands (its checksum field still 0), with
    // the IPv4 or (ipv6()) the IPv6 pseudo-header.
    void write_udp_checksum(std::uint8_t* udp, std::uint16_t udp_length) const noexcept;

    // What the IPv4 writers read per packet lies together in the first 110 bytes (the last of it
    // config_.udp_checksum); the config's IPv6 addresses, read only out of line, lie past it.
    //
    // Outer Ethernet, IPv4 and UDP with the per-packet fields zeroed, and 6 bytes of padding so
    // that copy_template() copies whole 16-byte blocks.
    alignas(16) std::array<std::uint8_t, kOuterEthernetSize + kOuterIpv4Size + kOuterUdpSize + 6> bytes_{};
    // fresh_header_word()'s constant part (version, protocol, default hop limit; or VXLAN's flag)
    // and where the flow hash goes (nowhere for VXLAN).
    std::uint64_t fresh_header_base_ = 0;
    std::uint64_t fresh_hash_mask_ = 0;
    // One's-complement sum of the IPv4 header words that never change (all but total length,
    // ID and the checksum itself) as 16-bit words in memory order, not folded.
    std::uint32_t ip_constant_sum_ = 0;
    // The UDP pseudo-header's constant part: addresses and protocol (IPv4's, or IPv6's).
    std::uint32_t udp_pseudo_sum_ = 0;
    std::uint16_t udp_port_ = 0;
    std::uint16_t next_ip_id_ = 1;
    std::uint8_t header_size_ = kOuterHeadersSize;  // header_size()
    bool general_ = false;  // tagged() || ipv6(): encapsulate() takes the out-of-line writer
    OuterTemplateConfig config_;
};

}  // namespace andromeda::overlay
