// The drop-reason registry (shared/andromeda_drops.h, util/drop_registry.hpp): one entry per
// reason of every layer's vocabulary, stable ids unique and inside their layer's range, and
// `andromedactl drops` shows each with the counter that counts it.
#include "ctl/drops_command.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "andromeda_kern_user.h"
#include "dataplane/nat_pipeline.hpp"
#include "dataplane/verdict.hpp"
#include "io/xsk/frame.hpp"
#include "nat/counters.hpp"
#include "overlay/decap.hpp"
#include "util/drop_registry.hpp"

namespace andromeda::ctl {
namespace {

using util::DropLayer;
using util::kDropReasons;

std::size_t count(DropLayer layer) {
    std::size_t n = 0;
    for (const auto& r : kDropReasons) n += r.layer == layer;
    return n;
}

TEST(DropRegistry, EveryLayersVocabularyIsInItOnce) {
    EXPECT_EQ(count(DropLayer::pipeline), dataplane::kDropReasonCount);
    EXPECT_EQ(count(DropLayer::nat), nat::kDropReasonCount);
    EXPECT_EQ(count(DropLayer::io), io::kDropReasonCount);
    EXPECT_EQ(count(DropLayer::decap), overlay::kDecapErrorCount);
    EXPECT_EQ(count(DropLayer::nat_stage), dataplane::kNatStageDropCount);
    // The BPF counter structs: every drop_ field is a registry entry of its layer.
    std::size_t xdp_drop_fields = 0, fp_drop_fields = 0;
#define COUNT_FIELD(name)
#define COUNT_XDP_DROP(name, id, description) ++xdp_drop_fields;
#define COUNT_FP_DROP(name, id, description) ++fp_drop_fields;
    ANDROMEDA_XDP_STATS(COUNT_FIELD, COUNT_XDP_DROP)
    ANDROMEDA_FP_STATS(COUNT_FIELD, COUNT_FP_DROP)
#undef COUNT_FP_DROP
#undef COUNT_XDP_DROP
#undef COUNT_FIELD
    EXPECT_EQ(count(DropLayer::xdp), xdp_drop_fields);
    EXPECT_EQ(count(DropLayer::fastpath), fp_drop_fields);
    // Names as the enums spell them.
    EXPECT_TRUE(util::find_drop_reason(401) != nullptr);
    EXPECT_EQ(util::find_drop_reason(401)->name, dataplane::to_string(static_cast<dataplane::DropReason>(1)));
    EXPECT_EQ(util::find_drop_reason(501)->name, nat::to_string(nat::DropReason::malformed));
    EXPECT_EQ(util::find_drop_reason(301)->name, overlay::to_string(overlay::DecapError::truncated_ethernet));
    EXPECT_EQ(util::find_drop_reason(603)->name, io::to_string(io::DropReason::tx_ring_full));
    EXPECT_EQ(util::find_drop_reason(701)->name, dataplane::to_string(dataplane::NatStageDrop::no_nat_engine));
}

// Every layer's enum (util/drop_reasons.hpp) in the same shape: 0 is "not dropped", then each
// registry entry of the layer in order, with its name, description and stable id.
template <class Reason>
void expect_enum_matches_registry(DropLayer layer, std::size_t count_of_reasons) {
    EXPECT_EQ(stable_id(static_cast<Reason>(0)), 0u);
    std::size_t slot = 0;
    for (const auto& r : kDropReasons) {
        if (r.layer != layer) continue;
        const Reason reason = util::drop_of_slot<Reason>(slot++);
        SCOPED_TRACE(std::string(r.name));
        EXPECT_EQ(util::drop_slot(reason), slot - 1);
        EXPECT_EQ(to_string(reason), r.name);
        EXPECT_EQ(describe(reason), r.description);
        EXPECT_EQ(stable_id(reason), r.id);
    }
    EXPECT_EQ(slot, count_of_reasons);
    EXPECT_EQ(to_string(util::drop_of_slot<Reason>(count_of_reasons)), "unknown");
}

TEST(DropRegistry, EveryLayersEnumHasTheSameShape) {
    expect_enum_matches_registry<dataplane::DropReason>(DropLayer::pipeline, dataplane::kDropReasonCount);
    expect_enum_matches_registry<dataplane::NatStageDrop>(DropLayer::nat_stage, dataplane::kNatStageDropCount);
    expect_enum_matches_registry<nat::DropReason>(DropLayer::nat, nat::kDropReasonCount);
    expect_enum_matches_registry<io::DropReason>(DropLayer::io, io::kDropReasonCount);
    expect_enum_matches_registry<overlay::DecapError>(DropLayer::decap, overlay::kDecapErrorCount);
    EXPECT_EQ(to_string(dataplane::DropReason::none), "none");
    EXPECT_EQ(to_string(overlay::DecapError::ok), "ok");
}

TEST(DropRegistry, IdsAreUniqueAndInTheirLayersRange) {
    std::set<std::uint16_t> ids;
    std::set<std::pair<DropLayer, std::string_view>> names;
    for (const auto& r : kDropReasons) {
        SCOPED_TRACE(std::string(r.name));
        EXPECT_TRUE(ids.insert(r.id).second) << "id " << r.id << " twice";
        EXPECT_TRUE(names.insert({r.layer, r.name}).second);
        const unsigned base = 100 * (static_cast<unsigned>(r.layer) + 1);
        EXPECT_GT(r.id, base);
        EXPECT_LT(r.id, base + 100);
        EXPECT_FALSE(r.description.empty());
    }
    EXPECT_EQ(util::find_drop_reason(999), nullptr);
}

TEST(DropRegistry, AndromedactlDropsListsEveryReasonWithItsCounter) {
    std::ostringstream text, json_out;
    EXPECT_EQ(run_drops(false, text), 0);
    EXPECT_NE(text.str().find("401  pipeline  unknown_port"), std::string::npos) << text.str();
    EXPECT_NE(text.str().find("dataplane.decap_bad_udp_checksum"), std::string::npos);
    EXPECT_NE(text.str().find("fastpath.drop_spoofed_ip"), std::string::npos);
    EXPECT_NE(text.str().find("nat.stage_drop_no_uplink_next_hop"), std::string::npos);
    EXPECT_EQ(run_drops(true, json_out), 0);
    const auto rows = nlohmann::json::parse(json_out.str());
    ASSERT_EQ(rows.size(), kDropReasons.size());
    EXPECT_EQ(rows[0]["counter"], "xdp.drop_truncated");
    EXPECT_EQ(rows[0]["id"], 101);
}

}  // namespace
}  // namespace andromeda::ctl
