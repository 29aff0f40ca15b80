#include "wire/tcp.hpp"

#include <algorithm>

namespace andromeda::wire {

std::size_t write_tcp_header(MutableByteSpan out, const TcpHeader& header) noexcept {
    const std::size_t length = header.header_length();
    if (header.options.size() % 4 != 0 || length > kTcpMaxHeaderLength || out.size() < length) return 0;
    store_be16(&out[0], header.source_port);
    store_be16(&out[2], header.destination_port);
    store_be32(&out[4], header.sequence);
    store_be32(&out[8], header.acknowledgment);
    out[12] = static_cast<std::uint8_t>(length / 4 << 4);
    out[13] = header.flags;
    store_be16(&out[14], header.window);
    store_be16(&out[16], header.checksum);
    store_be16(&out[18], header.urgent_pointer);
    std::copy(header.options.begin(), header.options.end(), out.begin() + kTcpMinHeaderLength);
    return length;
}

}  // namespace andromeda::wire
