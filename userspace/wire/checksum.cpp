#include "wire/checksum.hpp"

#include <cstring>

namespace andromeda::wire {

namespace {

// Sums in native byte order: the one's-complement sum is byte-order independent (RFC 1071
// section 2(B)), so we add 32-bit native words into a 64-bit accumulator and swap once at the
// end. Four independent accumulators keep the adds off one dependency chain.
std::uint64_t add_native(const std::uint8_t* p, std::size_t n) noexcept {
    std::uint64_t a = 0, b = 0, c = 0, d = 0;
    while (n >= 32) {
        std::uint32_t w[8];
        std::memcpy(w, p, sizeof w);
        a += static_cast<std::uint64_t>(w[0]) + w[4];
        b += static_cast<std::uint64_t>(w[1]) + w[5];
        c += static_cast<std::uint64_t>(w[2]) + w[6];
        d += static_cast<std::uint64_t>(w[3]) + w[7];
        p += 32;
        n -= 32;
    }
    std::uint64_t sum = a + b + c + d;
    while (n >= 4) {
        std::uint32_t w;
        std::memcpy(&w, p, sizeof w);
        sum += w;
        p += 4;
        n -= 4;
    }
    if (n >= 2) {
        std::uint16_t w;
        std::memcpy(&w, p, sizeof w);
        sum += w;
        p += 2;
        n -= 2;
    }
    if (n == 1) {
        // The odd trailing byte is padded with a zero byte on the right (in wire order).
        const std::uint8_t pad[2] = {p[0], 0};
        std::uint16_t w;
        std::memcpy(&w, pad, sizeof w);
        sum += w;
    }
    return sum;
}

}  // namespace

// Partial sums are kept in wire order (big-endian numeric value) so that callers can add
// pseudo-header words computed as plain numbers.
std::uint64_t checksum_add(ByteSpan data, std::uint64_t sum) noexcept {
    const std::uint16_t native = checksum_fold(add_native(data.data(), data.size()));
    return sum + __builtin_bswap16(native);
}

std::uint16_t checksum_fold(std::uint64_t sum) noexcept {
    sum = (sum & 0xffffffffULL) + (sum >> 32);
    sum = (sum & 0xffffffffULL) + (sum >> 32);
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<std::uint16_t>(sum);
}

std::uint16_t checksum_finish(std::uint64_t sum) noexcept {
    return static_cast<std::uint16_t>(~checksum_fold(sum));
}

std::uint64_t pseudo_header_sum(Ipv4Address src, Ipv4Address dst, std::uint8_t protocol,
                                std::uint32_t length) noexcept {
    const std::uint32_t s = src.value(), d = dst.value();
    return static_cast<std::uint64_t>(s >> 16) + (s & 0xffff) + (d >> 16) + (d & 0xffff) + protocol + length;
}

std::uint64_t pseudo_header_sum(const Ipv6Address& src, const Ipv6Address& dst, std::uint8_t next_header,
                                std::uint32_t length) noexcept {
    std::uint64_t sum = checksum_add(ByteSpan(src.bytes()));
    sum = checksum_add(ByteSpan(dst.bytes()), sum);
    return sum + (length >> 16) + (length & 0xffff) + next_header;
}

namespace {

// Finishes the checksum of `l4` (TCP 6 or UDP 17) when it holds exactly the fold of `pseudo` and
// does not verify; see finish_offloaded_checksum.
bool finish_l4_checksum(MutableByteSpan l4, std::uint8_t protocol, std::uint64_t pseudo) noexcept {
    const std::size_t field = protocol == 6 ? 16 : protocol == 17 ? 6 : 0;
    if (field == 0 || l4.size() < (protocol == 6 ? 20u : 8u)) return false;
    const std::uint16_t stored = load_be16(l4.data() + field);
    if (protocol == 17 && stored == 0) return false;
    if (stored != checksum_fold(pseudo) || checksum_verifies(l4, pseudo)) return false;
    store_be16(l4.data() + field, 0);
    std::uint16_t c = checksum_finish(checksum_add(l4, pseudo));
    if (protocol == 17 && c == 0) c = 0xffff;
    store_be16(l4.data() + field, c);
    return true;
}

}  // namespace

bool finish_offloaded_checksum(MutableByteSpan ip) noexcept {
    if (ip.size() >= 40 && (ip[0] >> 4) == 6) {
        // IPv6 without extension headers: the upper layer right after the fixed header.
        const std::size_t payload = load_be16(ip.data() + 4);
        if (40 + payload > ip.size()) return false;
        const std::uint8_t protocol = ip[6];
        const std::uint64_t pseudo = pseudo_header_sum(Ipv6Address::from_bytes(ip.data() + 8),
                                                       Ipv6Address::from_bytes(ip.data() + 24), protocol,
                                                       static_cast<std::uint32_t>(payload));
        return finish_l4_checksum(ip.subspan(40, payload), protocol, pseudo);
    }
    if (ip.size() < 20 || (ip[0] >> 4) != 4) return false;
    const std::size_t ihl = static_cast<std::size_t>(ip[0] & 0x0f) * 4;
    const std::size_t total = load_be16(ip.data() + 2);
    if (ihl < 20 || total < ihl || total > ip.size() || (load_be16(ip.data() + 6) & 0x3fff) != 0) return false;
    const std::uint8_t protocol = ip[9];
    const auto l4_length = static_cast<std::uint32_t>(total - ihl);
    const std::uint64_t pseudo =
        pseudo_header_sum(Ipv4Address(load_be32(ip.data() + 12)), Ipv4Address(load_be32(ip.data() + 16)), protocol, l4_length);
    return finish_l4_checksum(ip.subspan(ihl, l4_length), protocol, pseudo);
}

}  // namespace andromeda::wire
