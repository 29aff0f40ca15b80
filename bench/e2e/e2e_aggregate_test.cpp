// The harness's arithmetic over runs (e2e_common.hpp): medians with their range, and the paired
// ratios quoted for figures that drift between runs. No root, no network.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <vector>

#include "e2e_common.hpp"

namespace andromeda::e2e {
namespace {

json row(const std::string& impl, int run, double p50, int streams = 0) {
    json r = {{"impl", impl}, {"run", run}, {"p50_us", p50}};
    if (streams) r["streams"] = streams;
    return r;
}

// Three runs in which the machine's state moves every figure: the median of each side comes
// from a different run, and their ratio (90 / 40) says Andromeda takes twice the kernel's time,
// which no run shows; the paired ratio is the middle run's own, 0.9.
TEST(E2eAggregate, PairedRatioCancelsDriftBetweenRuns) {
    const std::vector<json> rows = {row("andromeda", 0, 30), row("kernel-vxlan", 0, 40),   //
                                    row("kernel-vxlan", 1, 100), row("andromeda", 1, 90),  //
                                    row("andromeda", 2, 95), row("kernel-vxlan", 2, 35)};
    const json medians = aggregate(rows, {"impl"}, {"p50_us"});
    ASSERT_EQ(medians.size(), 2U);
    EXPECT_DOUBLE_EQ(medians[0]["p50_us"].get<double>() / medians[1]["p50_us"].get<double>(), 90.0 / 40.0);
    EXPECT_FALSE(medians[0].contains("run")) << "the run number is not a figure to take the median of";

    const json paired = paired_ratio(rows, "andromeda", "kernel-vxlan", "p50_us");
    ASSERT_FALSE(paired.is_null());
    EXPECT_DOUBLE_EQ(paired["median"].get<double>(), 0.9);
    EXPECT_DOUBLE_EQ(paired["min"].get<double>(), 0.75);
    EXPECT_DOUBLE_EQ(paired["max"].get<double>(), 95.0 / 35.0);
    EXPECT_EQ(paired["runs"].get<int>(), 3);
}

TEST(E2eAggregate, PairedRatioMatchesOneFigureAndSkipsRunsWithoutTheBaseline) {
    const std::vector<json> rows = {row("andromeda", 0, 10, 1), row("andromeda", 0, 40, 4),    //
                                    row("kernel-vxlan", 0, 8, 1), row("kernel-vxlan", 0, 20, 4),  //
                                    row("andromeda", 1, 12, 1),  // its kernel run failed: no pair
                                    row("ceiling", 0, 50, 4)};
    const json one = paired_ratio(rows, "andromeda", "kernel-vxlan", "p50_us", {"streams", 1});
    ASSERT_FALSE(one.is_null());
    EXPECT_DOUBLE_EQ(one["median"].get<double>(), 10.0 / 8.0);
    EXPECT_EQ(one["runs"].get<int>(), 1);
    const json four = paired_ratio(rows, "andromeda", "kernel-vxlan", "p50_us", {"streams", 4});
    EXPECT_DOUBLE_EQ(four["median"].get<double>(), 2.0);
    EXPECT_TRUE(paired_ratio(rows, "andromeda-slow", "kernel-vxlan", "p50_us").is_null());
    EXPECT_TRUE(paired_ratio(rows, "andromeda", "kernel-vxlan", "gbps").is_null());
}

}  // namespace
}  // namespace andromeda::e2e
