// What the pipeline decided for one frame, and every reason it may drop one. Each drop reason is
// also a named counter field (counters.hpp), so `andromedactl stats` can say exactly why traffic
// vanished. The reasons are an X-macro in shared/andromeda_drops.h (the registry of every layer's
// drops), expanded by util/drop_reasons.hpp, so the enum, its names, descriptions and counter
// fields cannot drift apart.
#pragma once

#include <cstdint>
#include <string_view>

#include "util/drop_reasons.hpp"

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

ANDROMEDA_DEFINE_DROP_REASONS(DropReason, kDropReasonCount, none, "not dropped", ANDROMEDA_DROPS_PIPELINE)

}  // namespace andromeda::dataplane
