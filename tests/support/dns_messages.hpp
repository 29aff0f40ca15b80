// DNS messages the tests send as a tenant's stub would: a recursive A query, and the 2-byte
// length prefix DNS over TCP puts in front of every message (RFC 1035 4.2.2).
#pragma once

#include <cstdint>
#include <vector>

#include "wire/dns.hpp"

namespace andromeda::testing {

// A recursive (RD) query for the records of `type` (A by default) of `name`, with ID `id`.
inline std::vector<std::uint8_t> dns_a_query(std::uint16_t id, const char* name,
                                             std::uint16_t type = wire::dns_type::kA) {
    std::vector<std::uint8_t> m(512);
    wire::DnsHeader h;
    h.id = id;
    h.recursion_desired = true;
    wire::DnsBuilder b(m, h);
    b.add_question(*wire::DnsName::from_text(name), type, wire::dns_class::kIn);
    m.resize(b.finish());
    return m;
}

// `message` as DNS over TCP carries it: its length, big-endian, then its bytes.
inline std::vector<std::uint8_t> dns_tcp_framed(const std::vector<std::uint8_t>& message) {
    std::vector<std::uint8_t> out{static_cast<std::uint8_t>(message.size() >> 8),
                                  static_cast<std::uint8_t>(message.size())};
    out.insert(out.end(), message.begin(), message.end());
    return out;
}

}  // namespace andromeda::testing
