#include "wire/ipv4.hpp"

#include <algorithm>

namespace andromeda::wire {

std::size_t write_ipv4_header(MutableByteSpan out, const Ipv4Header& header) noexcept {
    const std::size_t length = header.header_length();
    if (header.options.size() % 4 != 0 || length > kIpv4MaxHeaderLength) return 0;
    if (header.total_length < length || out.size() < length) return 0;
    out[0] = static_cast<std::uint8_t>(0x40 | length / 4);
    out[1] = static_cast<std::uint8_t>((header.dscp & 0x3f) << 2 | (header.ecn & 0x03));
    store_be16(&out[2], header.total_length);
    store_be16(&out[4], header.identification);
    store_be16(&out[6], static_cast<std::uint16_t>((header.dont_fragment ? 0x4000 : 0) |
                                                   (header.more_fragments ? 0x2000 : 0) |
                                                   (header.fragment_offset & 0x1fff)));
    out[8] = header.ttl;
    out[9] = header.protocol;
    store_be16(&out[10], 0);
    header.source.copy_to(&out[12]);
    header.destination.copy_to(&out[16]);
    std::copy(header.options.begin(), header.options.end(), out.begin() + kIpv4MinHeaderLength);
    store_be16(&out[10], internet_checksum(out.first(length)));
    return length;
}

}  // namespace andromeda::wire
