// Every reason Andromeda drops a packet, in every layer, as one table: built from the X-macros of
// shared/andromeda_drops.h (where the BPF counter fields and the C++ enums come from too), with
// where `andromedactl stats` counts each one. `andromedactl drops` prints it.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "andromeda_drops.h"

namespace andromeda::util {

enum class DropLayer : std::uint8_t { xdp, fastpath, decap, pipeline, nat, io, nat_stage };

[[nodiscard]] constexpr std::string_view to_string(DropLayer layer) noexcept {
    switch (layer) {
        case DropLayer::xdp: return "xdp";
        case DropLayer::fastpath: return "fastpath";
        case DropLayer::decap: return "decap";
        case DropLayer::pipeline: return "pipeline";
        case DropLayer::nat: return "nat";
        case DropLayer::io: return "io";
        case DropLayer::nat_stage: return "nat_stage";
    }
    return "unknown";
}

struct DropReasonInfo {
    DropLayer layer;
    std::uint16_t id;              // stable: see shared/andromeda_drops.h
    std::string_view name;
    std::string_view description;
    std::string_view stats_group;  // where `andromedactl stats` counts it: <group>.<prefix><name>
    std::string_view counter_prefix;
};

inline constexpr std::array kDropReasons = {
#define ANDROMEDA_REGISTRY_ROW(layer, group, prefix, name, id, description) \
    DropReasonInfo{DropLayer::layer, id, #name, description, group, prefix},
#define ANDROMEDA_REGISTRY_XDP(name, id, description) ANDROMEDA_REGISTRY_ROW(xdp, "xdp", "drop_", name, id, description)
#define ANDROMEDA_REGISTRY_FP(name, id, description) \
    ANDROMEDA_REGISTRY_ROW(fastpath, "fastpath", "drop_", name, id, description)
#define ANDROMEDA_REGISTRY_DECAP(name, id, description) \
    ANDROMEDA_REGISTRY_ROW(decap, "dataplane", "decap_", name, id, description)
#define ANDROMEDA_REGISTRY_PIPELINE(name, id, description) \
    ANDROMEDA_REGISTRY_ROW(pipeline, "dataplane", "drop_", name, id, description)
#define ANDROMEDA_REGISTRY_NAT(name, id, description) ANDROMEDA_REGISTRY_ROW(nat, "nat", "drop_", name, id, description)
#define ANDROMEDA_REGISTRY_IO(name, id, description) ANDROMEDA_REGISTRY_ROW(io, "io", "drop_", name, id, description)
#define ANDROMEDA_REGISTRY_NAT_STAGE(name, id, description) \
    ANDROMEDA_REGISTRY_ROW(nat_stage, "nat", "stage_drop_", name, id, description)
    ANDROMEDA_DROPS_XDP(ANDROMEDA_REGISTRY_XDP)
    ANDROMEDA_DROPS_FASTPATH(ANDROMEDA_REGISTRY_FP)
    ANDROMEDA_DROPS_DECAP(ANDROMEDA_REGISTRY_DECAP)
    ANDROMEDA_DROPS_PIPELINE(ANDROMEDA_REGISTRY_PIPELINE)
    ANDROMEDA_DROPS_NAT(ANDROMEDA_REGISTRY_NAT)
    ANDROMEDA_DROPS_IO(ANDROMEDA_REGISTRY_IO)
    ANDROMEDA_DROPS_NAT_STAGE(ANDROMEDA_REGISTRY_NAT_STAGE)
#undef ANDROMEDA_REGISTRY_NAT_STAGE
#undef ANDROMEDA_REGISTRY_IO
#undef ANDROMEDA_REGISTRY_NAT
#undef ANDROMEDA_REGISTRY_PIPELINE
#undef ANDROMEDA_REGISTRY_DECAP
#undef ANDROMEDA_REGISTRY_FP
#undef ANDROMEDA_REGISTRY_XDP
#undef ANDROMEDA_REGISTRY_ROW
};

// The reason with stable id `id`, or null.
[[nodiscard]] constexpr const DropReasonInfo* find_drop_reason(std::uint16_t id) noexcept {
    for (const auto& r : kDropReasons)
        if (r.id == id) return &r;
    return nullptr;
}

}  // namespace andromeda::util
