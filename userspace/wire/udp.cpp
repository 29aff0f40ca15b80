#include "wire/udp.hpp"

namespace andromeda::wire {

std::size_t write_udp_header(MutableByteSpan out, const UdpHeader& header) noexcept {
    if (out.size() < kUdpHeaderLength || header.length < kUdpHeaderLength) return 0;
    store_be16(&out[0], header.source_port);
    store_be16(&out[2], header.destination_port);
    store_be16(&out[4], header.length);
    store_be16(&out[6], header.checksum);
    return kUdpHeaderLength;
}

}  // namespace andromeda::wire
