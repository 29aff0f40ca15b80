// IANA protocol numbers used in IPv4 "protocol" and IPv6 "next header" fields.
#pragma once

#include <cstdint>

namespace andromeda::wire::ip_protocol {

inline constexpr std::uint8_t kHopByHop = 0;
inline constexpr std::uint8_t kIcmp = 1;
inline constexpr std::uint8_t kTcp = 6;
inline constexpr std::uint8_t kUdp = 17;
inline constexpr std::uint8_t kRouting = 43;
inline constexpr std::uint8_t kFragment = 44;
inline constexpr std::uint8_t kAuthentication = 51;
inline constexpr std::uint8_t kIcmpv6 = 58;
inline constexpr std::uint8_t kNoNextHeader = 59;
inline constexpr std::uint8_t kDestinationOptions = 60;

}  // namespace andromeda::wire::ip_protocol
