// What the pipeline decided for one frame, and every reason it may drop one. Each drop reason is
// also a named counter field (counters.hpp), so `andromedactl stats` can say exactly why traffic
// vanished. The reasons are an X-macro in shared/andromeda_drops.h (the registry of every layer's
// drops), so the enum, its names, descriptions and counter fields cannot drift apart.
#pragma once

#include <cstdint>
#include <string_view>

#include "andromeda_drops.h"

namespace andromeda::dataplane {

enum class Verdict : std::uint8_t {
    forward,  // encapsulated towards another node (one outer packet, or one per fragment)
    deliver,  // to a local tenant port (from the fabric, or from another tenant port of this host)
    reply,    // the gateway answered on the ingress port (ARP, echo, Fragmentation Needed, Packet Too Big)
    to_nat,   // handed to the NAT stage (see NatRequest); nothing was emitted
    drop,     // see DropReason
};

[[nodiscard]] constexpr std::string_view to_string(Verdict v) noexcept {
    switch (v) {
        case Verdict::forward: return "forward";
        case Verdict::deliver: return "deliver";
        case Verdict::reply: return "reply";
        case Verdict::to_nat: return "to_nat";
        case Verdict::drop: return "drop";
    }
    return "unknown";
}

enum class DropReason : std::uint8_t {
    none,
#define ANDROMEDA_DROP_ENUM(name, id, description) name,
    ANDROMEDA_DROPS_PIPELINE(ANDROMEDA_DROP_ENUM)
#undef ANDROMEDA_DROP_ENUM
};

inline constexpr std::size_t kDropReasonCount = 0
#define ANDROMEDA_DROP_COUNT(name, id, description) +1
    ANDROMEDA_DROPS_PIPELINE(ANDROMEDA_DROP_COUNT)
#undef ANDROMEDA_DROP_COUNT
    ;

[[nodiscard]] constexpr std::string_view to_string(DropReason r) noexcept {
    switch (r) {
        case DropReason::none: return "none";
#define ANDROMEDA_DROP_NAME(name, id, description) \
    case DropReason::name: return #name;
        ANDROMEDA_DROPS_PIPELINE(ANDROMEDA_DROP_NAME)
#undef ANDROMEDA_DROP_NAME
    }
    return "unknown";
}

[[nodiscard]] constexpr std::string_view describe(DropReason r) noexcept {
    switch (r) {
        case DropReason::none: return "not dropped";
#define ANDROMEDA_DROP_DESCRIPTION(name, id, description) \
    case DropReason::name: return description;
        ANDROMEDA_DROPS_PIPELINE(ANDROMEDA_DROP_DESCRIPTION)
#undef ANDROMEDA_DROP_DESCRIPTION
    }
    return "unknown";
}

}  // namespace andromeda::dataplane
