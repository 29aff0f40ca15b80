#include "wire/ipv6.hpp"

#include <algorithm>

namespace andromeda::wire {

namespace detail {

Ipv6Walk walk_ipv6_extension_headers(ByteSpan packet) noexcept {
    Ipv6Walk walk;
    std::uint8_t type = packet[6];
    std::size_t offset = kIpv6HeaderLength;
    while (is_ipv6_extension_header(type)) {
        if (walk.extension_count == kMaxIpv6ExtensionHeaders) {
            walk.error = ParseError::TooManyExtensionHeaders;
            return walk;
        }
        if (packet.size() < offset + 2) {
            walk.error = ParseError::Truncated;
            return walk;
        }
        const std::size_t length = Ipv6View::extension_length(type, &packet[offset]);
        if (packet.size() < offset + length) {
            walk.error = ParseError::Truncated;
            return walk;
        }
        ++walk.extension_count;
        const std::uint8_t next = packet[offset];
        if (type == ip_protocol::kRouting && walk.routing_header_offset == 0)
            walk.routing_header_offset = static_cast<std::uint32_t>(offset);
        if (type == ip_protocol::kFragment) {
            walk.fragment_header_offset = static_cast<std::uint32_t>(offset);
            // A non-first fragment carries no upper-layer header: stop at the fragment data.
            if ((load_be16(&packet[offset + 2]) >> 3) != 0) {
                type = next;
                offset += length;
                break;
            }
        }
        type = next;
        offset += length;
    }
    walk.upper_layer_protocol = type;
    walk.upper_layer_offset = static_cast<std::uint32_t>(offset);
    return walk;
}

}  // namespace detail

std::size_t write_ipv6_header(MutableByteSpan out, const Ipv6Header& header) noexcept {
    if (out.size() < kIpv6HeaderLength) return 0;
    store_be32(&out[0], 0x60000000u | static_cast<std::uint32_t>(header.traffic_class) << 20 |
                            (header.flow_label & 0xfffff));
    store_be16(&out[4], header.payload_length);
    out[6] = header.next_header;
    out[7] = header.hop_limit;
    header.source.copy_to(&out[8]);
    header.destination.copy_to(&out[24]);
    return kIpv6HeaderLength;
}

std::size_t write_ipv6_options_header(MutableByteSpan out, std::uint8_t next_header, ByteSpan options) noexcept {
    const std::size_t length = (2 + options.size() + 7) / 8 * 8;
    if (length > 2048 || out.size() < length) return 0;
    out[0] = next_header;
    out[1] = static_cast<std::uint8_t>(length / 8 - 1);
    std::copy(options.begin(), options.end(), out.begin() + 2);
    // Pad with a single Pad1 or one PadN option (RFC 8200 4.2) so the padding is itself valid.
    const std::size_t pad = length - 2 - options.size();
    std::uint8_t* p = &out[2 + options.size()];
    if (pad == 1) {
        p[0] = 0;
    } else if (pad >= 2) {
        p[0] = 1;
        p[1] = static_cast<std::uint8_t>(pad - 2);
        std::fill(p + 2, p + pad, std::uint8_t{0});
    }
    return length;
}

std::size_t write_ipv6_routing_header(MutableByteSpan out, std::uint8_t next_header, std::uint8_t routing_type,
                                      std::uint8_t segments_left, ByteSpan type_data) noexcept {
    const std::size_t length = 4 + type_data.size();
    if (length % 8 != 0 || length > 2048 || out.size() < length) return 0;
    out[0] = next_header;
    out[1] = static_cast<std::uint8_t>(length / 8 - 1);
    out[2] = routing_type;
    out[3] = segments_left;
    std::copy(type_data.begin(), type_data.end(), out.begin() + 4);
    return length;
}

std::size_t write_ipv6_fragment_header(MutableByteSpan out, std::uint8_t next_header, std::uint16_t offset,
                                       bool more_fragments, std::uint32_t identification) noexcept {
    if (out.size() < kIpv6FragmentHeaderLength) return 0;
    out[0] = next_header;
    out[1] = 0;
    store_be16(&out[2], static_cast<std::uint16_t>((offset & 0x1fff) << 3 | (more_fragments ? 1 : 0)));
    store_be32(&out[4], identification);
    return kIpv6FragmentHeaderLength;
}

}  // namespace andromeda::wire
