#include "wire/icmp.hpp"

namespace andromeda::wire {

std::size_t write_icmp_header(MutableByteSpan out, const IcmpHeader& header) noexcept {
    if (out.size() < kIcmpHeaderLength) return 0;
    out[0] = header.type;
    out[1] = header.code;
    store_be16(&out[2], header.checksum);
    store_be32(&out[4], header.rest_of_header);
    return kIcmpHeaderLength;
}

}  // namespace andromeda::wire
